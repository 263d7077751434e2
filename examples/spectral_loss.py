"""Denoising a signal with a loss on its power spectrum, by gradient descent through `dagrad.numpy.fft`.

    python examples/spectral_loss.py

A signal of two tones is observed with white noise. The estimate x minimises

    sum((x - y)^2) + lam * sum(w_k |X_k|^2),    X = rfft(x, norm="ortho"),  w_k = (f_k / f_max)^2

the misfit to the observation y plus a penalty on the power at high frequencies (`rfftfreq` gives
f_k). Plain gradient descent with `dg.grad` (compiled once with `dg.compile`) brings the loss down; the
minimiser is also known in closed form (each frequency bin of y shrunk by 1 / (1 + lam v_k), v_k being
w_k split between the two bins k and n - k of the full spectrum that share it), and the descent reaches it.
"""

from __future__ import annotations

import numpy

import dagrad as dg
import dagrad.numpy as np

N, LAM = 128, 10.0


def signal(n=N):
    t = numpy.arange(n) / n
    return numpy.sin(2 * numpy.pi * 3 * t) + 0.5 * numpy.sin(2 * numpy.pi * 7 * t)


WEIGHTS = (numpy.fft.rfftfreq(N) / numpy.fft.rfftfreq(N).max()) ** 2


def loss(x, y):
    power = np.abs(np.fft.rfft(x, norm="ortho")) ** 2
    return np.sum((x - y) ** 2) + LAM * np.sum(WEIGHTS * power)


def closed_form(y):
    # the half-spectrum holds bins 1 .. n/2 - 1 once for two bins of the full, unitary spectrum
    split = numpy.where((numpy.arange(len(WEIGHTS)) % (N // 2)) == 0, 1.0, 0.5) * WEIGHTS
    return numpy.fft.irfft(numpy.fft.rfft(y) / (1 + LAM * split), N)


def main(steps=300, seed=0):
    rng = numpy.random.default_rng(seed)
    clean = signal()
    y = clean + 0.4 * rng.standard_normal(N)
    step = dg.compile(dg.grad(loss))
    rate = 1 / (2 * (1 + LAM))  # the loss' Hessian has eigenvalues between 2 and 2 (1 + lam)
    x = y.copy()
    losses = []
    for k in range(steps + 1):
        if k % 50 == 0:
            losses.append(float(loss(x, y)))
            print(f"step {k:4d}  loss {losses[-1]:10.6f}")
        x = x - rate * step(x, y)
    exact = closed_form(y)
    print(f"distance to the closed-form minimiser: {numpy.max(numpy.abs(x - exact)):.2e}")
    print(f"RMS error to the clean signal: observed {numpy.sqrt(numpy.mean((y - clean) ** 2)):.3f}, "
          f"denoised {numpy.sqrt(numpy.mean((x - clean) ** 2)):.3f}")
    return {"losses": losses, "x": x, "exact": exact, "y": y, "clean": clean}


if __name__ == "__main__":
    main()
