"""An RNN written with `dg.scan`, trained compiled: next-value prediction on noisy sine waves.

    python examples/rnn_scan.py [steps]

The recurrence is ONE `dg.scan` node in the compiled graph (its body is the cell, traced once), so
the training step, `dg.compile(dg.value_and_grad(loss))`, compiles in the same time for sequences of
50 or 5,000 steps, and its generated code is a Python `for` loop around the cell's lines (and a
reverse loop for the gradient). The script trains a 1-16-1 tanh RNN with Adam written by hand (the
parameters are a pytree, as in JAX), shows that the loss falls well below the trivial predictor's,
and prints the graph sizes for two sequence lengths.
"""

from __future__ import annotations

import sys

import numpy as np

import dagrad as dg

HIDDEN = 16
LENGTH = 50  # time steps per sequence
BATCH = 32


def init(seed=0):
    rng = np.random.default_rng(seed)
    return {"w_in": rng.normal(size=(1, HIDDEN)) * 0.5, "w_h": rng.normal(size=(HIDDEN, HIDDEN)) / np.sqrt(HIDDEN),
            "b": np.zeros(HIDDEN), "w_out": rng.normal(size=(HIDDEN, 1)) / np.sqrt(HIDDEN), "b_out": np.zeros(1)}


def predict(params, xs):
    """xs: (time, batch, 1) -> the prediction of the next value at every step, (time, batch, 1)."""

    def cell(h, x):
        h = dg.tanh(x @ params["w_in"] + h @ params["w_h"] + params["b"])
        return h, h @ params["w_out"] + params["b_out"]

    h0 = np.zeros((xs.shape[1], HIDDEN))
    _, ys = dg.scan(cell, h0, xs)
    return ys


def loss(params, xs, targets):
    return dg.mean((predict(params, xs) - targets) ** 2)


step = dg.compile(dg.value_and_grad(loss))


def batch(rng, length=LENGTH):
    """Sine waves of random frequency and phase, with noise: inputs and the next values."""
    t = np.arange(length + 1)[:, None, None]
    freq = rng.uniform(0.1, 0.3, size=(1, BATCH, 1))
    phase = rng.uniform(0, 2 * np.pi, size=(1, BATCH, 1))
    wave = np.sin(freq * t + phase) + rng.normal(scale=0.05, size=(length + 1, BATCH, 1))
    return wave[:-1], wave[1:]


def main(steps=300, seed=0):
    rng = np.random.default_rng(seed)
    params = init(seed)
    moments = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in params.items()}
    lr, beta1, beta2 = 0.01, 0.9, 0.999
    for k in range(1, steps + 1):
        xs, targets = batch(rng)
        value, grads = step(params, xs, targets)
        for name, g in grads.items():  # Adam, by hand
            m, v = moments[name]
            m[...] = beta1 * m + (1 - beta1) * g
            v[...] = beta2 * v + (1 - beta2) * g * g
            params[name] = params[name] - lr * (m / (1 - beta1 ** k)) / (np.sqrt(v / (1 - beta2 ** k)) + 1e-8)
        if k == 1 or k % 100 == 0:
            print(f"step {k}: loss {float(value):.4f}")
    xs, targets = batch(np.random.default_rng(seed + 1))
    final = float(loss(params, xs, targets))
    trivial = float(np.mean((xs - targets) ** 2))  # predicting "the same as now"
    print(f"held-out loss {final:.4f}; predicting the current value instead: {trivial:.4f}")
    sizes = {}
    for length in (LENGTH, 100 * LENGTH):
        xs, targets = batch(rng, length)
        sizes[length] = len(step.graph(params, xs, targets).nodes)
        print(f"compiled training step for {length:,} time steps: {sizes[length]} nodes")
    return {"loss": final, "trivial": trivial, "nodes": sizes, "source": step.source(params, xs, targets)}


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
