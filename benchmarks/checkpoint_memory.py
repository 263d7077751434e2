"""Peak memory of a training step with and without `dg.checkpoint` (issue 15, item 3).

    python benchmarks/checkpoint_memory.py            # the figures of docs/checkpoint.md
    python benchmarks/checkpoint_memory.py --quick    # a smaller instance

A training step is the loss and the gradients of every parameter (`loss.backward()`, eagerly and as
a compiled PyTorch-style step under `dg.compile`), of a 20-layer tanh MLP, each layer one
`dg.checkpoint` in the checkpointed step. Two kinds of layer:

- `Linear(d, d) + tanh`, the plain MLP;
- an MLP block `Linear(d, 4d) + tanh + Linear(4d, d)` (the feed-forward block of a transformer).

Memory is tracemalloc's peak (NumPy reports its allocations to it) over one step, counted from the
step's start after a first, untraced step (which also traces the compiled one): what the step
allocates beyond the parameters and the data, including the gradients it returns. Each checkpointed
step's gradients are compared with the plain step's, bit for bit, before anything is reported.
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc

import numpy as np

import dagrad as dg
import dagrad.nn.functional as F

DEPTH = 20


def model(width, block, seed=0):
    """DEPTH layers and a 10-class head; `block`: 'linear' (Linear + tanh) or 'mlp' (Linear(d, 4d) + tanh
    + Linear(4d, d))."""
    dg.manual_seed(seed)
    if block == "linear":
        layers = [dg.nn.Sequential(dg.nn.Linear(width, width), dg.nn.Tanh()) for _ in range(DEPTH)]
    else:
        layers = [dg.nn.Sequential(dg.nn.Linear(width, 4 * width), dg.nn.Tanh(), dg.nn.Linear(4 * width, width))
                  for _ in range(DEPTH)]
    return dg.nn.ModuleList(layers), dg.nn.Linear(width, 10)


def step_function(layers, head, checkpointed):
    """The training step, PyTorch's way: every parameter's .grad is set by loss.backward()."""
    run = [dg.checkpoint(layer) if checkpointed else layer for layer in layers]
    params = [*layers.parameters(), *head.parameters()]

    def step(x, y):
        for p in params:
            p.grad = None
        h = x
        for layer in run:
            h = layer(h)
        loss = F.cross_entropy(head(h), y)
        loss.backward()
        return loss

    return step, params


def measure(width, batch, block, mode, checkpointed):
    """(peak bytes of one step, the parameters' gradients)."""
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((batch, width)), rng.integers(0, 10, batch)
    layers, head = model(width, block)
    step, params = step_function(layers, head, checkpointed)
    if mode == "compiled":
        step = dg.compile(step)
        x = X
    else:
        x = dg.tensor(X)
    step(x, Y)  # untraced: compiles, and warms NumPy
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    step(x, Y)
    peak = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
    return peak, [p.grad.numpy().copy() for p in params]


def compare(width, batch, block, mode):
    """Peaks without and with checkpoints; raises if the gradients differ in any bit."""
    plain, grads = measure(width, batch, block, mode, False)
    checked, grads_checked = measure(width, batch, block, mode, True)
    if not all(np.array_equal(a, b) for a, b in zip(grads, grads_checked)):
        raise AssertionError(f"{block} {mode}: the checkpointed gradients differ from the plain ones")
    return plain, checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller instance")
    quick = parser.parse_args().quick
    configs = ([("linear", 128, 64), ("mlp", 64, 256)] if quick else
               [("linear", 512, 256), ("linear", 256, 2048), ("mlp", 512, 256), ("mlp", 256, 2048)])
    print(f"Training step of a {DEPTH}-layer tanh MLP (loss + every parameter's gradient), float64: "
          "tracemalloc peak of one step, MB")
    print()
    print("| layer | width | batch | mode | plain | checkpoint each layer | ratio | gradients |")
    print("|---|---:|---:|---|---:|---:|---:|---|")
    for block, width, batch in configs:
        kind = f"Linear({width}, {width}) + tanh" if block == "linear" else \
            f"Linear({width}, {4 * width}) + tanh + Linear({4 * width}, {width})"
        for mode in ("eager", "compiled"):
            plain, checked = compare(width, batch, block, mode)
            print(f"| {kind} | {width} | {batch} | {mode} | {plain / 1e6:.1f} | {checked / 1e6:.1f} | "
                  f"{checked / plain:.2f} | bit for bit |")


if __name__ == "__main__":
    main()
