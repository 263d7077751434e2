"""Logistic regression trained on a Dask array: the data stays chunked and lazy, the parameters are
NumPy arrays, and each step's gradient is a Dask reduction over the chunks, computed once per step.

    python examples/dask_logistic_regression.py                      # Dask's threads, this machine
    python examples/dask_logistic_regression.py tcp://10.0.0.5:8786  # a dask.distributed cluster
    python examples/dask_logistic_regression.py --optim [address]    # the same with dg.nn and dg.optim

With `--optim` the model is a `dg.nn.Linear` trained by `dg.optim.SGD`: `opt.step(closure)` computes the
loss and every gradient with one `dask.compute` per step, as PyTorch users write a training step.

Needs the optional extra `dagrad[dask]`. The same loss in NumPy gives the same losses, to rounding
(tests/test_examples.py checks it); only the parameters and the gradients travel between the
scheduler and this process.
"""

from __future__ import annotations

import sys

import numpy as np

import dagrad as dg


def loss(w, b, x, y):
    """The mean binary cross-entropy of a linear model's logits."""
    p = dg.sigmoid(x @ w + b)
    return -dg.mean(y * dg.log(p) + (1 - y) * dg.log(1 - p))


def make_data(rows=20_000, features=8, chunk=5_000, seed=0):
    """A synthetic, linearly separable-ish problem as Dask arrays (made chunk by chunk, lazily)."""
    import dask.array as da

    state = da.random.RandomState(seed)
    x = state.standard_normal((rows, features), chunks=(chunk, features))
    truth = np.linspace(-1.0, 1.0, features)
    y = (x @ truth + 0.3 * state.standard_normal(rows, chunks=chunk) > 0).astype(np.float64)
    return x, y


def train_with_optim(x, y, steps, lr):
    """The same training with dg.nn and dg.optim (from zeros, as `main`); returns the losses, one per step."""
    model = dg.nn.Linear(x.shape[1], 1)
    dg.nn.init.zeros_(model.weight)
    dg.nn.init.zeros_(model.bias)
    opt = dg.optim.SGD(model.parameters(), lr=lr)
    loss_fn = dg.nn.BCEWithLogitsLoss()
    xt, yt = dg.tensor(x), dg.tensor(y[:, None])

    def closure():
        opt.zero_grad()
        value = loss_fn(model(xt), yt)  # lazy: a Dask graph over the chunks
        value.backward()
        return value

    # step(closure) computes the loss and the gradients with one dask.compute, then updates the NumPy parameters
    return [opt.step(closure).item() for _ in range(steps)]


def main(steps=30, lr=0.5, address=None, data=None, optim=False):
    """Trains for `steps` gradient-descent steps and returns the loss before each step (`optim`: with
    dg.nn and dg.optim instead of dg.value_and_grad)."""
    import dask

    client = None
    if address is not None:
        from dask.distributed import Client

        client = Client(address)
    x, y = make_data() if data is None else data
    w, b = np.zeros(x.shape[1]), 0.0
    value_and_grad = dg.value_and_grad(loss, argnums=(0, 1))
    losses = []
    try:
        if optim:
            losses = train_with_optim(x, y, steps, lr)
            print(f"{steps} steps  loss {losses[0]:.4f} -> {losses[-1]:.4f}")
        for step in range(0 if optim else steps):
            value, (gw, gb) = value_and_grad(w, b, x, y)  # lazy: a Dask graph over the chunks
            value, gw, gb = dask.compute(value, gw, gb)  # one compute per step
            w, b = w - lr * gw, b - lr * gb
            losses.append(float(value))
            if step % 10 == 0 or step == steps - 1:
                print(f"step {step:3d}  loss {float(value):.4f}")
    finally:
        if client is not None:
            client.close()
    return losses


if __name__ == "__main__":
    addresses = [arg for arg in sys.argv[1:] if arg != "--optim"]
    main(address=addresses[0] if addresses else None, optim="--optim" in sys.argv[1:])
