"""Workload (k): what a recorded node copies (issue 24 item 8).

An op recorded for backward copies the caller's NumPy operands that its vjp reads (`Op.saves`), so a write
into the caller's array after the forward cannot change the gradient (PyTorch converts NumPy operands to
its own tensors, a copy too). This workload times the forward and backward of one recorded op with a NumPy
operand `a`, against the same op with `a` already a Tensor (nothing copied) and against `t + a` (add reads
neither operand: nothing copied), for a 16-element and a 1,000,000-element float64 `a`; and the eager MLP
training step of (e), whose operands are all Tensors (nothing copied), is in (e).

`python benchmarks/bench_saved.py` runs it alone.
"""

from __future__ import annotations

import sys

import numpy as np

SIZES = (16, 1_000_000)
REPEATS = {"full": 30, "quick": 5}


def contenders(n):
    import dagrad as dg

    rng = np.random.default_rng(0)
    a = rng.standard_normal(n)
    a_tensor = dg.tensor(a)
    t = dg.tensor(rng.standard_normal(n), requires_grad=True)
    inner = 2000 if n < 1000 else 5

    def run(op, operand):
        def step():
            for _ in range(inner):
                op(t, operand).sum().backward()
                t.grad = None
        return step, inner

    return {
        "t * a (a NumPy array: copied)": run(lambda x, y: x * y, a),
        "t * a (a already a Tensor: nothing copied)": run(lambda x, y: x * y, a_tensor),
        "t + a (a NumPy array: add reads neither)": run(lambda x, y: x + y, a),
    }


def tables(run_interleaved, mode, median):
    rows = ["| operation, forward + backward | a of 16 elements | a of 1,000,000 elements |", "|---|---|---|"]
    results = {}
    for n in SIZES:
        times = run_interleaved(contenders(n), REPEATS[mode], 1)
        for name, ts in times.items():
            results.setdefault(name, {})[n] = median(ts)
    for name, by_size in results.items():
        rows.append(f"| {name} | {by_size[SIZES[0]]:.2f} µs | {by_size[SIZES[1]] / 1000:.3f} ms |")
    return "\n".join(rows)


if __name__ == "__main__":
    import run

    print(tables(run.run_interleaved, "quick" if "--quick" in sys.argv else "full", run.median))
