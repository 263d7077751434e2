"""dagrad benchmark suite: one command, every figure measured in the same run.

    python benchmarks/run.py            # full run, writes docs/benchmarks.md
    python benchmarks/run.py --quick    # smoke run: fewer repeats, shorter deep chain

Workloads
  (a) per-op overhead: 200 repeats of ``sin, *1.1, tanh, +0.5, exp`` (1,000 elementwise ops) on a
      16-element float64 vector, then ``sum``; forward plus backward. Contenders: dagrad eager,
      PyTorch eager, HIPS autograd and hand-written NumPy forward + backward (the floor: no graph,
      no dispatch, only the arithmetic every contender has to do).
  (b) deep chain: ``exp, log, *1.0000001, +1e-7`` on a 0-d float64 scalar for 1,000,000 sequential
      ops, forward plus backward, dagrad against PyTorch: time per op and peak memory. The pattern's
      derivative stays near 1, so the gradient (about 1.025) is a real cross-check. dagrad also
      runs at 1/4 and 1/2 of the length to show that memory grows linearly.

Methodology
  * All contenders must agree on the gradient before anything is timed; the run aborts otherwise.
  * (a) runs the contenders interleaved: every repeat round runs each contender in turn, in an
    order that rotates from round to round, so drift (thermal, frequency, noisy neighbours)
    falls on all of them alike. On its turn a contender makes one untimed call (to warm the
    caches the previous contender evicted, as a training loop would have them warm) and then
    INNER_CALLS timed calls. A few untimed warm-up rounds come first. We report the median over
    all timed calls of total time / 1000 ops, the interquartile range, and ratios of medians.
  * (b) runs every measurement in a fresh subprocess, so that the peak RSS (VmHWM) is that
    contender's own; memory is VmHWM at the end minus VmRSS after imports and warm-up. Rounds
    alternate contenders; we report medians.
  * PyTorch is pinned to one thread (torch.set_num_threads(1)): the others are single-threaded,
    and for 16-element or scalar tensors threads only add overhead.
  * The garbage collector stays on (it is part of what users pay). We do not force collections
    between calls: a full collection walks every live object (tens of thousands once torch is
    imported) and leaves the next call with cold caches, which measures the collector rather
    than the libraries. None of the contenders leaves cyclic garbage behind (their graphs are
    freed by reference counting), so no contender pays for another's garbage.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# Benchmark the working tree, not whatever copy of dagrad happens to be installed.
sys.path.insert(0, str(ROOT / "src"))

PATTERN_OPS = 5  # sin, *1.1, tanh, +0.5, exp
VECTOR_REPS = 200  # 1,000 ops in workload (a)
DEEP_OPS = {"full": 1_000_000, "quick": 100_000}
INNER_CALLS = 5  # timed calls per contender per round in (a)


DEEP_PATTERN_OPS = 4  # exp, log, *1.0000001, +1e-7


def deep_chain(x, exp, log, reps):
    for _ in range(reps):
        x = exp(x)
        x = log(x)
        x = x * 1.0000001
        x = x + 1e-7
    return x


def chain(x, sin, tanh, exp, reps):
    for _ in range(reps):
        x = sin(x)
        x = x * 1.1
        x = tanh(x)
        x = x + 0.5
        x = exp(x)
    return x


# ---------------------------------------------------------------- (a) per-op overhead


def grad_dagrad(x0, reps=VECTOR_REPS):
    import dagrad as dg

    x = dg.tensor(x0, requires_grad=True)
    y = chain(x, dg.sin, dg.tanh, dg.exp, reps).sum()
    y.backward()
    return x.grad.numpy()


def grad_torch(x0, reps=VECTOR_REPS):
    import torch

    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    y = chain(x, torch.sin, torch.tanh, torch.exp, reps).sum()
    y.backward()
    return x.grad.numpy()


def make_grad_autograd(reps=VECTOR_REPS):
    import autograd
    import autograd.numpy as anp

    return autograd.grad(lambda x: anp.sum(chain(x, anp.sin, anp.tanh, anp.exp, reps)))


def grad_numpy(x0, reps=VECTOR_REPS):
    saved = []
    x = x0
    for _ in range(reps):
        t = np.tanh(np.sin(x) * 1.1)
        e = np.exp(t + 0.5)
        saved.append((x, t, e))
        x = e
    g = np.ones_like(x0)  # d sum / d x
    for x, t, e in reversed(saved):
        g = g * e  # exp
        g = g * (1.0 - t * t)  # tanh
        g = g * 1.1  # * 1.1
        g = g * np.cos(x)  # sin
    return g


def bench_overhead(repeats, warmup):
    import torch

    torch.set_num_threads(1)
    x0 = np.random.default_rng(0).standard_normal(16)
    grad_autograd = make_grad_autograd()
    contenders = {"dagrad": grad_dagrad, "PyTorch": grad_torch, "autograd": grad_autograd, "NumPy": grad_numpy}

    reference = grad_numpy(x0)
    for name, fn in contenders.items():
        g = fn(x0)
        # The gradient is ~1e-16 (200 contracting factors), so an absolute tolerance would pass anything.
        if not np.allclose(g, reference, rtol=1e-9, atol=0.0):
            raise SystemExit(f"gradient mismatch in workload (a): {name}\n{g}\nvs NumPy\n{reference}")

    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(warmup + repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            contenders[name](x0)  # untimed: re-warms the caches after the previous contender
            for _ in range(INNER_CALLS):
                start = time.perf_counter()
                contenders[name](x0)
                elapsed = time.perf_counter() - start
                if r >= warmup:
                    times[name].append(elapsed / (VECTOR_REPS * PATTERN_OPS) * 1e6)
    return times


# ---------------------------------------------------------------- (c) static graphs


LOGREG = {"n": 500, "features": 64, "classes": 10, "lr": 0.1}


def logreg_data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((LOGREG["n"], LOGREG["features"]))
    labels = rng.integers(0, LOGREG["classes"], LOGREG["n"])
    return x, np.eye(LOGREG["classes"])[labels]


def logreg_loss(dg, x, onehot, w, b):
    return -dg.mean(dg.sum(onehot * dg.log_softmax(x @ w + b, axis=1), axis=1))


def make_static_contenders():
    """The chain of (a) and a softmax-regression step, eagerly and through a dg.Session."""
    import dagrad as dg

    x0 = np.random.default_rng(0).standard_normal(16)
    with dg.Graph() as chain_graph:
        xs = dg.placeholder((16,), name="x")
        ys = chain(xs, dg.sin, dg.tanh, dg.exp, VECTOR_REPS).sum()
        (gs,) = dg.gradients(ys, [xs])
    chain_session = dg.Session(chain_graph)

    data, onehot = logreg_data()
    shape_w, shape_b = (LOGREG["features"], LOGREG["classes"]), (LOGREG["classes"],)
    with dg.Graph() as logreg_graph:
        xp = dg.placeholder((None, LOGREG["features"]), name="x")
        yp = dg.placeholder((None, LOGREG["classes"]), name="y")
        w = dg.Variable(np.zeros(shape_w), name="w")
        b = dg.Variable(np.zeros(shape_b), name="b")
        loss = logreg_loss(dg, xp, yp, w, b)
        gw, gb = dg.gradients(loss, [w, b])
        train = dg.group(w.assign(w - LOGREG["lr"] * gw), b.assign(b - LOGREG["lr"] * gb))
    logreg_session = dg.Session(logreg_graph)
    feed = {xp: data, yp: onehot}
    eager_w = dg.tensor(np.zeros(shape_w), requires_grad=True)
    eager_b = dg.tensor(np.zeros(shape_b), requires_grad=True)

    def eager_step():
        loss_value = logreg_loss(dg, dg.tensor(data), dg.tensor(onehot), eager_w, eager_b)
        loss_value.backward()
        for p in (eager_w, eager_b):
            p.numpy()[...] -= LOGREG["lr"] * p.grad.numpy()  # in place: the same leaf keeps training
            p.grad = None
        return loss_value.item()

    def session_step():
        logreg_session.run(train, feed)

    contenders = {
        "chain, eager": (lambda: grad_dagrad(x0), VECTOR_REPS * PATTERN_OPS),
        "chain, Session": (lambda: chain_session.run([ys, gs], {xs: x0}), VECTOR_REPS * PATTERN_OPS),
        "logreg step, eager": (eager_step, 1),
        "logreg step, Session": (session_step, 1),
    }
    # the two forms must agree before they are timed
    if not np.allclose(chain_session.run(gs, {xs: x0}), grad_dagrad(x0), rtol=1e-9, atol=0.0):
        raise SystemExit("static chain gradient differs from eager")
    for _ in range(3):
        eager_step()
        session_step()
    if not (np.allclose(eager_w.numpy(), w.value) and np.allclose(eager_b.numpy(), b.value)):
        raise SystemExit("static logistic regression diverged from eager")
    return contenders


def bench_static(repeats, warmup):
    contenders = make_static_contenders()
    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(warmup + repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn, ops = contenders[name]
            fn()
            for _ in range(INNER_CALLS):
                start = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - start
                if r >= warmup:
                    times[name].append(elapsed / ops * 1e6)
    return times


def static_table(times):
    rows = ["| workload | eager | Session | Session / eager |", "|---|---:|---:|---:|"]
    for workload, unit in (("chain", "µs/op"), ("logreg step", "µs/step")):
        e, s = median(times[f"{workload}, eager"]), median(times[f"{workload}, Session"])
        rows.append(f"| {workload} ({unit}) | {e:.2f} | {s:.2f} | {s / e:.2f} |")
    return "\n".join(rows)


# ---------------------------------------------------------------- (b) deep chain


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def child(lib, n_ops):
    """Run one deep chain in this (fresh) process; print a JSON line with time, memory, result."""
    if lib == "dagrad":
        import dagrad as mod

        make = lambda: mod.tensor(0.3, requires_grad=True)
    else:
        import torch as mod

        mod.set_num_threads(1)
        make = lambda: mod.tensor(0.3, dtype=mod.float64, requires_grad=True)
    # Warm up so one-time dispatch and allocator setup count neither as time nor as memory.
    x = make()
    deep_chain(x, mod.exp, mod.log, 100).backward()
    del x
    gc.collect()
    try:  # reset VmHWM to the current RSS, so import-time transients do not count (Linux >= 4.0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    baseline_kb = status_kb("VmRSS")

    start = time.perf_counter()
    x = make()
    y = deep_chain(x, mod.exp, mod.log, n_ops // DEEP_PATTERN_OPS)
    y.backward()
    elapsed = time.perf_counter() - start
    peak_bytes = (status_kb("VmHWM") - baseline_kb) * 1024
    print(json.dumps({"seconds": elapsed, "peak_bytes": peak_bytes, "value": y.item(), "grad": x.grad.item()}))


def run_child(lib, n_ops):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", lib, str(n_ops)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_deep(n_ops, rounds):
    jobs = [("dagrad", n_ops), ("PyTorch", n_ops), ("dagrad", n_ops // 4), ("dagrad", n_ops // 2)]
    results = {job: [] for job in jobs}
    for r in range(rounds):
        for job in jobs[r % len(jobs) :] + jobs[: r % len(jobs)]:
            lib, n = job
            results[job].append(run_child("dagrad" if lib == "dagrad" else "torch", n))

    d, t = results[("dagrad", n_ops)][0], results[("PyTorch", n_ops)][0]
    for key in ("value", "grad"):
        if not np.isclose(d[key], t[key], rtol=1e-6, atol=0.0):
            raise SystemExit(f"deep chain {key} mismatch: dagrad {d[key]!r} vs PyTorch {t[key]!r}")
    return results


# ---------------------------------------------------------------- report


def median(xs):
    return statistics.median(xs)


def iqr(xs):
    if len(xs) < 2:
        return xs[0], xs[0]
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def overhead_table(times):
    floor = median(times["NumPy"])
    rows = ["| contender | µs/op (median) | IQR | × NumPy floor |", "|---|---:|---:|---:|"]
    for name, ts in times.items():
        lo, hi = iqr(ts)
        rows.append(f"| {name} | {median(ts):.3f} | {lo:.3f}–{hi:.3f} | {median(ts) / floor:.1f} |")
    d = median(times["dagrad"])
    rows += [
        "",
        "| ratio of medians | value |",
        "|---|---:|",
        f"| dagrad / PyTorch | {d / median(times['PyTorch']):.2f} |",
        f"| dagrad / autograd | {d / median(times['autograd']):.2f} |",
        f"| dagrad / NumPy | {d / floor:.2f} |",
    ]
    return "\n".join(rows)


def deep_tables(results, n_ops):
    def stats(job):
        runs = results[job]
        us = median([r["seconds"] for r in runs]) / job[1] * 1e6
        peak = median([r["peak_bytes"] for r in runs])
        return us, peak, peak / job[1]

    d_us, d_peak, d_bpo = stats(("dagrad", n_ops))
    t_us, t_peak, t_bpo = stats(("PyTorch", n_ops))
    d, t = results[("dagrad", n_ops)][0], results[("PyTorch", n_ops)][0]
    rows = [
        f"| contender ({n_ops:,} ops) | µs/op (median) | peak MB | bytes/op | result | gradient |",
        "|---|---:|---:|---:|---:|---:|",
        f"| dagrad | {d_us:.2f} | {d_peak / 1e6:.0f} | {d_bpo:.0f} | {d['value']:.12g} | {d['grad']:.6g} |",
        f"| PyTorch | {t_us:.2f} | {t_peak / 1e6:.0f} | {t_bpo:.0f} | {t['value']:.12g} | {t['grad']:.6g} |",
        f"| dagrad / PyTorch | {d_us / t_us:.2f} | {d_peak / t_peak:.2f} | | | |",
        "",
        "| dagrad ops | µs/op (median) | peak MB | bytes/op |",
        "|---:|---:|---:|---:|",
    ]
    for n in (n_ops // 4, n_ops // 2, n_ops):
        us, peak, bpo = stats(("dagrad", n))
        rows.append(f"| {n:,} | {us:.2f} | {peak / 1e6:.0f} | {bpo:.0f} |")
    return "\n".join(rows)


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = "unknown"
    import torch

    return "\n".join(
        [
            f"- cores: {os.cpu_count()} (usable by this process: {len(os.sched_getaffinity(0))})",
            f"- CPU: {model}",
            f"- OS: {platform.platform()}",
            f"- Python {platform.python_version()} ({sys.executable})",
            f"- NumPy {np.__version__}, torch {torch.__version__} (1 thread), autograd {version('autograd')}",
            f"- dagrad at git {commit or 'unknown'}",
        ]
    )


WORKLOADS = """\
- **(a) per-op overhead.** `x0 = np.random.default_rng(0).standard_normal(16)` (float64); the
  pattern `sin, * 1.1, tanh, + 0.5, exp` repeated 200 times (1,000 elementwise ops), then `sum`;
  forward plus backward, gradient with respect to `x0`. With 16 elements the arithmetic is
  negligible, so this measures what each library spends per op on dispatch and graph bookkeeping.
  Contenders: dagrad eager (`dg.tensor` + `backward`), PyTorch eager (`torch.tensor(...,
  dtype=float64, requires_grad=True)` + `backward`, one thread), HIPS autograd (`autograd.grad` of
  the same function in `autograd.numpy`), and hand-written NumPy (forward saves what the backward
  needs, backward applies the chain rule by hand): the floor. Time per op is total time / 1000.
- **(b) deep chain.** The pattern `exp, log, * 1.0000001, + 1e-7` on a 0-d float64 scalar starting
  from 0.3, repeated until {n_ops:,} sequential ops, forward plus backward, dagrad against PyTorch. This measures scalar
  overhead and, above all, memory per recorded op and that a graph this deep runs at all (no
  recursion limit). Each run is a fresh subprocess; peak MB is VmHWM at the end minus VmRSS after
  imports and warm-up (MB = 10^6 bytes). dagrad also runs at {quarter:,} and {half:,} ops: bytes/op
  should stay roughly constant. dagrad's result and gradient are checked against PyTorch's
  (relative tolerance 1e-6); the pattern's derivative is about 1.0000001 per repeat, so the
  gradient stays near 1 and the check is meaningful at any length.
- **(c) static graphs.** The chain of (a) built once as a static graph (a placeholder, the
  1,000 ops, `sum`, and `dg.gradients`) and run through a `dg.Session` (forward and gradient),
  against dagrad eager forward plus backward; and one step of softmax regression (500 x 64
  inputs, 10 classes, float64, cross-entropy by `log_softmax`, SGD with lr 0.1): eagerly with
  `backward` and an in-place update, and as a static graph trained with `assign` through a
  Session. Both forms are checked to give the same gradient and the same weights first.
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer repeats, 100k-op deep chain")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"), help="markdown report path")
    parser.add_argument("--child", nargs=2, metavar=("LIB", "N_OPS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child[0], int(args.child[1]))

    mode = "quick" if args.quick else "full"
    repeats, warmup, rounds = (5, 1, 1) if args.quick else (30, 3, 5)
    n_ops = DEEP_OPS[mode]
    command = " ".join(["python", "benchmarks/run.py", *sys.argv[1:]])

    print(f"(a) per-op overhead: {warmup} warm-up + {repeats} interleaved rounds ...", file=sys.stderr)
    table_a = overhead_table(bench_overhead(repeats, warmup))
    print("(c) static graphs ...", file=sys.stderr)
    table_c = static_table(bench_static(repeats, warmup))
    print(f"(b) deep chain: {rounds} rounds of {n_ops:,} ops in subprocesses ...", file=sys.stderr)
    table_b = deep_tables(bench_deep(n_ops, rounds), n_ops)

    tables = (
        f"### (a) per-op overhead, 1,000 ops on 16 float64\n\n{table_a}\n\n### (b) deep chain\n\n{table_b}\n\n"
        f"### (c) static graphs: a Session against eager mode\n\n{table_c}\n"
    )
    print(tables)
    report = "\n".join(
        [
            "# Benchmarks",
            "",
            f"Measured {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} with:",
            "",
            "```bash",
            command,
            "```",
            "",
            f"({mode} mode: (a) {warmup} warm-up + {repeats} interleaved rounds; (b) {rounds} round(s) "
            "of subprocesses.) Methodology is in the docstring of `benchmarks/run.py`.",
            "",
            "## Machine",
            "",
            machine(),
            "",
            "## Results",
            "",
            tables,
            "## Workloads",
            "",
            WORKLOADS.format(n_ops=n_ops, quarter=n_ops // 4, half=n_ops // 2),
        ]
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
