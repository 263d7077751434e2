"""Workload (i) of the benchmark suite (issue 29): sequence layers against PyTorch, one thread each.

Called by run.py (which sets the thread limits first and passes its own timing helpers), or alone:
``python benchmarks/bench_nn.py [--quick]`` prints the tables.

  * ``nn.LSTM(128, 128, num_layers=2)`` on a sequence of 64 steps, batch 32 (inputs 128): forward, loss
    ``out.sum()`` and backward to every parameter, with the weights loaded from the PyTorch model;
  * ``nn.TransformerEncoderLayer(d_model=128, nhead=4, batch_first=True)`` (feed-forward 2048, dropout 0.1,
    training mode) on batch 32 x 64 tokens: the same step;

each as PyTorch eager, dagrad eager and dagrad compiled (``dg.compile`` of the step: zero_grad, forward,
backward), at float64 and float32. Gradients are checked against PyTorch's before anything is timed (the
Transformer's without dropout, which draws different masks in the two libraries).
"""

from __future__ import annotations

import os
import sys

import numpy as np

LSTM = {"input": 128, "hidden": 128, "layers": 2, "steps": 64, "batch": 32}
ENCODER = {"d_model": 128, "heads": 4, "steps": 64, "batch": 32}
DTYPES = ("float64", "float32")
TARGETS = {"LSTM": (1.5, 1.0), "TransformerEncoderLayer": (1.3, 1.0)}  # (eager, compiled) / PyTorch, at most


def _models(kind, dtype, dropout):
    import torch

    import dagrad as dg

    torch_dtype = getattr(torch, dtype)
    if kind == "LSTM":
        theirs = torch.nn.LSTM(LSTM["input"], LSTM["hidden"], num_layers=LSTM["layers"]).to(torch_dtype)
        ours = dg.nn.LSTM(LSTM["input"], LSTM["hidden"], num_layers=LSTM["layers"], dtype=dtype)
        shape = (LSTM["steps"], LSTM["batch"], LSTM["input"])
    else:
        theirs = torch.nn.TransformerEncoderLayer(ENCODER["d_model"], ENCODER["heads"], dropout=dropout,
                                                  batch_first=True).to(torch_dtype)
        ours = dg.nn.TransformerEncoderLayer(ENCODER["d_model"], ENCODER["heads"], dropout=dropout, batch_first=True,
                                             dtype=dtype)
        shape = (ENCODER["batch"], ENCODER["steps"], ENCODER["d_model"])
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(29).standard_normal(shape).astype(dtype)
    return theirs, ours, x


def _steps(kind, theirs, ours, x):
    import torch

    import dagrad as dg

    tx = torch.from_numpy(x)

    def output(model, x):
        out = model(x)
        return out[0] if kind == "LSTM" else out

    def torch_step():
        theirs.zero_grad()
        output(theirs, tx).sum().backward()

    def dagrad_step(x):
        ours.zero_grad()
        loss = output(ours, x).sum()
        loss.backward()
        return loss

    compiled = dg.compile(dagrad_step)
    return {"PyTorch": (torch_step, 1), "dagrad eager": (lambda: dagrad_step(x), 1),
            "dagrad compiled": (lambda: compiled(x), 1)}


def _check(kind, dtype):
    """Both dagrad steps give PyTorch's gradients (without dropout) before anything is timed."""
    theirs, ours, x = _models(kind, dtype, 0.0)
    steps = _steps(kind, theirs, ours, x)
    steps["PyTorch"][0]()
    want = {name: p.grad.numpy().copy() for name, p in theirs.named_parameters()}
    tol = dict(rtol=1e-9, atol=1e-9) if dtype == "float64" else dict(rtol=2e-3, atol=2e-3)
    for contender in ("dagrad eager", "dagrad compiled"):
        steps[contender][0]()
        for name, p in ours.named_parameters():
            if not np.allclose(p.grad.numpy(), want[name], **tol):
                raise SystemExit(f"workload (i): {contender} {kind} {dtype} gradient of {name} differs from PyTorch's")


def bench_sequence(run_interleaved, repeats, warmup):
    """{(kind, dtype): {contender: µs per step}}."""
    import torch

    torch.set_num_threads(1)
    times = {}
    for kind in ("LSTM", "TransformerEncoderLayer"):
        for dtype in DTYPES:
            _check(kind, dtype)
            theirs, ours, x = _models(kind, dtype, 0.1)
            times[kind, dtype] = run_interleaved(_steps(kind, theirs, ours, x), repeats, warmup, inner=1)
    return times


def tables(times, median, iqr):
    """The markdown of workload (i) and its targets."""
    rows = ["| layer | dtype | contender | ms/step (median) | IQR | × PyTorch |", "|---|---|---|---:|---:|---:|"]
    checks = []
    for (kind, dtype), by in times.items():
        ref = median(by["PyTorch"])
        for name, ts in by.items():
            lo, hi = iqr(ts)
            rows.append(f"| {kind} | {dtype} | {name} | {median(ts) / 1e3:.1f} | {lo / 1e3:.1f}–{hi / 1e3:.1f} | "
                        f"{median(ts) / ref:.2f} |")
        eager, compiled = TARGETS[kind]
        checks.append((f"{kind} {dtype}: dagrad eager / PyTorch", median(by["dagrad eager"]) / ref, eager))
        checks.append((f"{kind} {dtype}: dagrad compiled / PyTorch", median(by["dagrad compiled"]) / ref, compiled))
    lstm = ", ".join(f"{k} {v}" for k, v in LSTM.items())
    encoder = ", ".join(f"{k} {v}" for k, v in ENCODER.items())
    out = [f"#### Training step (forward, backward), LSTM ({lstm}) and TransformerEncoderLayer ({encoder}, "
           f"feed-forward 2048, dropout 0.1, training mode)\n\n" + "\n".join(rows)]
    rows = ["| figure | measured | target | met |", "|---|---:|---:|---|"]
    for label, value, limit in checks:
        rows.append(f"| {label} | {value:.2f} | ≤ {limit} | {'yes' if value <= limit else 'no'} |")
    out.append("#### Targets of issue 29, from this run\n\n" + "\n".join(rows))
    return "\n\n".join(out)


def main():
    import statistics
    import time

    quick = "--quick" in sys.argv

    def run_interleaved(contenders, repeats, warmup, inner=1):
        names = list(contenders)
        out = {name: [] for name in names}
        for r in range(warmup + repeats):
            for name in names[r % len(names):] + names[: r % len(names)]:
                fn, units = contenders[name]
                fn()
                for _ in range(inner):
                    start = time.perf_counter()
                    fn()
                    if r >= warmup:
                        out[name].append((time.perf_counter() - start) / units * 1e6)
        return out

    def iqr(ts):
        q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0], ts[0], ts[0]]
        return q[0], q[2]

    print(tables(bench_sequence(run_interleaved, 2 if quick else 10, 1), statistics.median, iqr))


if __name__ == "__main__":
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    main()
