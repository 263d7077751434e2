"""Peak memory of a training step with and without `dg.checkpoint` (issue 15, item 3).

    python benchmarks/checkpoint_memory.py            # the figures of docs/checkpoint.md
    python benchmarks/checkpoint_memory.py --quick    # a smaller instance

benchmarks/run.py reports `measure()`'s rows (workload (g), bench_transforms.py).

A training step is the loss and the gradients of every parameter (`loss.backward()`, eagerly and as
a compiled PyTorch-style step under `dg.compile`), of a 20-layer tanh MLP, each layer, or each
segment of 5 consecutive layers, one `dg.checkpoint` in the checkpointed step. Two kinds of layer:

- `Linear(d, d) + tanh`, the plain MLP;
- an MLP block `Linear(d, 4d) + tanh + Linear(4d, d)` (the feed-forward block of a transformer).

Memory is tracemalloc's peak (NumPy reports its allocations to it) over one step, counted from the
step's start after a first, untraced step (which also traces the compiled one): what the step
allocates beyond the parameters and the data, including the gradients it returns. The time ratio
(checkpointed over plain, medians of a few steps) shows what the recomputation costs. Each
checkpointed step's gradients are compared with the plain step's, bit for bit, before anything is
reported.
"""

from __future__ import annotations

import argparse
import gc
import time
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


def step_function(layers, head, checkpointed, segment=1):
    """The training step, PyTorch's way: every parameter's .grad is set by loss.backward(). Checkpointed,
    each run of `segment` consecutive layers is one dg.checkpoint (5 of 20: the classic sqrt(n) choice,
    keeping only the segments' inputs and one segment's insides at a time)."""
    if checkpointed:
        run = [dg.checkpoint(dg.nn.Sequential(*layers[k:k + segment])) for k in range(0, len(layers), segment)]
    else:
        run = list(layers)
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


def _measure(width, batch, block, mode, checkpointed, repeats=0, segment=1):
    """(peak bytes of one step, the parameters' gradients, median seconds of `repeats` more steps or None)."""
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((batch, width)), rng.integers(0, 10, batch)
    layers, head = model(width, block)
    step, params = step_function(layers, head, checkpointed, segment)
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
    grads = [p.grad.numpy().copy() for p in params]
    times = []
    for _ in range(repeats):  # untraced: tracemalloc slows allocation down
        began = time.perf_counter()
        step(x, Y)
        times.append(time.perf_counter() - began)
    return peak, grads, float(np.median(times)) if times else None


def compare(width, batch, block, mode, repeats, segment=1):
    """(peak, time) without and with checkpoints; raises if the gradients differ in any bit."""
    plain, grads, plain_time = _measure(width, batch, block, mode, False, repeats)
    checked, grads_checked, checked_time = _measure(width, batch, block, mode, True, repeats, segment)
    if not all(np.array_equal(a, b) for a, b in zip(grads, grads_checked)):
        raise AssertionError(f"{block} {mode}: the checkpointed gradients differ from the plain ones")
    return plain, checked, plain_time, checked_time


def _layer(block, width):
    return f"Linear({width}, {width}) + tanh" if block == "linear" else \
        f"Linear({width}, {4 * width}) + tanh + Linear({4 * width}, {width})"


# the rows benchmarks/run.py reports in workload (g): a 20-layer MLP whose activations are most of a step's
# memory (batch larger than width), checkpointed in segments of 5 layers (the target row) and layer by
# layer; MLP blocks layer by layer; and a width-512, batch-256 MLP, where the parameters' gradients are
# most of the peak, so no checkpointing can halve it
HEADLINE = [("linear", 256, 2048, 5), ("linear", 256, 2048, 1), ("mlp", 256, 2048, 1), ("linear", 512, 256, 5)]


def measure():
    """For benchmarks/run.py (bench_transforms.bench_checkpoint): {row label: (peak bytes without
    checkpoints, with them, whether the gradients are equal bit for bit)}."""
    rows = {}
    for block, width, batch, segment in HEADLINE:
        for mode in ("eager", "compiled"):
            plain, grads, _ = _measure(width, batch, block, mode, False)
            checked, grads_checked, _ = _measure(width, batch, block, mode, True, segment=segment)
            equal = all(np.array_equal(a, b) for a, b in zip(grads, grads_checked))
            what = "each layer" if segment == 1 else f"segments of {segment} layers"
            rows[f"{mode}: {DEPTH} x {_layer(block, width)}, batch {batch}, {what}"] = (plain, checked, equal)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller instance")
    quick = parser.parse_args().quick
    configs = ([("linear", 128, 64, 1), ("linear", 64, 512, 5), ("mlp", 64, 256, 1)] if quick else
               [(block, width, batch, segment) for block, width, batch in
                (("linear", 512, 256), ("linear", 256, 2048), ("mlp", 256, 2048)) for segment in (1, 5)])
    repeats = 3 if quick else 7
    print(f"Training step of a {DEPTH}-layer tanh MLP (loss + every parameter's gradient), float64: "
          f"tracemalloc peak of one step (MB), and the median time of {repeats} steps")
    print()
    print("| layer | width | batch | checkpoint | mode | plain MB | checkpointed MB | ratio | time ratio | gradients |")
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---|")
    for block, width, batch, segment in configs:
        kind = _layer(block, width)
        what = "each layer" if segment == 1 else f"segments of {segment}"
        for mode in ("eager", "compiled"):
            plain, checked, plain_time, checked_time = compare(width, batch, block, mode, repeats, segment)
            print(f"| {kind} | {width} | {batch} | {what} | {mode} | {plain / 1e6:.1f} | {checked / 1e6:.1f} | "
                  f"{checked / plain:.2f} | {checked_time / plain_time:.2f} | bit for bit |")


if __name__ == "__main__":
    main()
