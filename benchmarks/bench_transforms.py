"""Workload (g) of the benchmark suite (issue 15): vmap, control flow, checkpoint.

Called by run.py, which sets the thread limits first and passes its own timing helpers.

  * per-example gradients of the 64-128-128-10 tanh MLP at batch 64 (digits-shaped data, the loss
    of ONE example, mapped): ``dg.compile(dg.vmap(dg.grad(loss), in_axes=(None, 0, 0)))`` against
    ``jax.jit(jax.vmap(jax.grad(loss)))`` and ``torch.func.vmap(torch.func.grad(loss))``; eager
    ``dg.vmap(dg.grad(loss))`` against a Python loop of 64 ``dg.grad`` calls. All are checked
    against the loop before anything is timed.
  * ``dg.scan``: an RNN cell ``h = tanh(h @ W + x @ U)`` over T steps (hidden 32, inputs 16):
    the time to compile (trace, optimise, generate) for T = 100 and T = 10,000, and the run time
    of the compiled scan against the same loop written by hand in NumPy.
  * ``dg.checkpoint``: the tracemalloc peak of a training step (loss and all gradients) of a
    20-layer tanh MLP with and without each layer checkpointed, eager and compiled, and whether
    the gradients are equal bit for bit.
"""

from __future__ import annotations

import gc
import time

import numpy as np

PER_EXAMPLE = {"sizes": (64, 128, 128, 10), "batch": 64}
SCAN = {"hidden": 32, "inputs": 16, "short": 100, "long": 10_000, "run": 1_000}


def _mlp_params(rng, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in), np.zeros(fan_out)]
    return tuple(params)


def _example_loss(tanh, log_softmax):
    def loss(params, x, onehot):  # ONE example: x (64,), onehot (10,)
        w1, b1, w2, b2, w3, b3 = params
        h = tanh(x @ w1 + b1)
        h = tanh(h @ w2 + b2)
        return -(onehot * log_softmax(h @ w3 + b3)).sum()

    return loss


def bench_per_example(run_interleaved, load_jax, repeats, warmup):
    import torch

    import dagrad as dg

    torch.set_num_threads(1)
    rng = np.random.default_rng(2)
    sizes, batch = PER_EXAMPLE["sizes"], PER_EXAMPLE["batch"]
    x = rng.integers(0, 17, (batch, sizes[0])).astype(np.float64) / 16
    onehot = np.eye(sizes[-1])[rng.integers(0, sizes[-1], batch)]
    params = _mlp_params(rng, sizes)

    loss = _example_loss(dg.tanh, lambda z: dg.log_softmax(z, axis=-1))
    eager = dg.vmap(dg.grad(loss), in_axes=(None, 0, 0))
    compiled = dg.compile(eager)
    grad = dg.grad(loss)

    def loop():
        return [grad(params, x[i], onehot[i]) for i in range(batch)]

    t_loss = _example_loss(torch.tanh, lambda z: torch.log_softmax(z, dim=-1))
    t_fn = torch.func.vmap(torch.func.grad(t_loss), in_dims=(None, 0, 0))
    t_args = (tuple(torch.from_numpy(p) for p in params), torch.from_numpy(x), torch.from_numpy(onehot))
    contenders = {
        "dagrad compiled vmap(grad)": (lambda: compiled(params, x, onehot), 1),
        "dagrad eager vmap(grad)": (lambda: eager(params, x, onehot), 1),
        f"dagrad eager, loop of {batch} grad calls": (loop, 1),
        "torch.func vmap(grad)": (lambda: t_fn(*t_args), 1),
    }
    jax, jnp = load_jax()
    if jax is not None:
        j_loss = _example_loss(jnp.tanh, lambda z: jax.nn.log_softmax(z, axis=-1))
        j_fn = jax.jit(jax.vmap(jax.grad(j_loss), in_axes=(None, 0, 0)))
        j_args = (tuple(jnp.asarray(p) for p in params), jnp.asarray(x), jnp.asarray(onehot))
        contenders["JAX jit(vmap(grad))"] = (lambda: jax.block_until_ready(j_fn(*j_args)), 1)

    reference = loop()
    for name, (fn, _) in contenders.items():
        got = fn()
        got = [np.stack([g[k] for g in got]) for k in range(6)] if "loop" in name else [np.asarray(g) for g in got]
        for k in range(6):
            want = np.stack([g[k] for g in reference])
            if not np.allclose(got[k], want, rtol=1e-9, atol=1e-12):
                raise SystemExit(f"per-example gradient mismatch in workload (g): {name}")
    return run_interleaved(contenders, repeats, warmup, inner=2)


def _rnn(rng):
    hidden, inputs = SCAN["hidden"], SCAN["inputs"]
    w = rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)
    u = rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)
    return w, u


def bench_scan(run_interleaved, repeats, warmup):
    """Compile times of a scan of 100 and 10,000 steps, and the run time against NumPy; None
    without dg.scan."""
    import dagrad as dg

    if not hasattr(dg, "scan"):
        return None
    rng = np.random.default_rng(5)
    w, u = _rnn(rng)
    h0 = np.zeros(SCAN["hidden"])

    def rnn(h, xs):
        def cell(h, x):
            h = dg.tanh(h @ w + x @ u)
            return h, h

        return dg.scan(cell, h, xs)

    def numpy_rnn(h, xs):
        ys = np.empty((len(xs), len(h)))
        for t, x in enumerate(xs):
            h = np.tanh(h @ w + x @ u)
            ys[t] = h
        return h, ys

    compile_seconds = {}
    for steps in (SCAN["short"], SCAN["long"]):
        xs = rng.standard_normal((steps, SCAN["inputs"]))
        runs = []
        for _ in range(5):
            gc.collect()
            fast = dg.compile(rnn)
            start = time.perf_counter()
            fast.source(h0, xs)  # trace, optimise and generate, without running
            runs.append(time.perf_counter() - start)
        compile_seconds[steps] = runs
    xs = rng.standard_normal((SCAN["run"], SCAN["inputs"]))
    fast = dg.compile(rnn)
    got, want = fast(h0, xs), numpy_rnn(h0, xs)
    if not all(np.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(got, want)):
        raise SystemExit("scan mismatch in workload (g)")
    times = run_interleaved({"dagrad compiled scan": (lambda: fast(h0, xs), SCAN["run"]),
                             "NumPy loop (by hand)": (lambda: numpy_rnn(h0, xs), SCAN["run"])},
                            repeats, warmup, inner=2)
    return compile_seconds, times


def bench_checkpoint():
    """The checkpoint benchmark's rows (benchmarks/checkpoint_memory.py), or None without it."""
    try:
        import checkpoint_memory
    except ImportError:
        return None
    return checkpoint_memory.measure()


def tables(per_example, scan, checkpoint, hessian, median, iqr):
    """The markdown of workload (g) and its targets."""
    out = []
    rows = ["| contender | µs/call (median) | IQR | × JAX jit(vmap(grad)) |", "|---|---:|---:|---:|"]
    ref = median(per_example["JAX jit(vmap(grad))"]) if "JAX jit(vmap(grad))" in per_example else None
    for name, ts in per_example.items():
        lo, hi = iqr(ts)
        ratio = f"{median(ts) / ref:.2f}" if ref else "–"
        rows.append(f"| {name} | {median(ts):.0f} | {lo:.0f}–{hi:.0f} | {ratio} |")
    title = f"#### Per-example gradients, 64-128-128-10 tanh MLP, batch {PER_EXAMPLE['batch']}"
    out.append(f"{title}\n\n" + "\n".join(rows))
    m = lambda name: median(per_example[name])  # noqa: E731
    checks = []
    if "JAX jit(hessian)" in hessian:
        checks.append(("Hessian n = 50: dagrad compiled / JAX jit(hessian)",
                       median(hessian["dagrad compiled"]) / median(hessian["JAX jit(hessian)"]), "≤ 1", 1.0, True))
    if ref:
        checks.append(("per-example gradients: dagrad compiled / JAX jit(vmap(grad))",
                       m("dagrad compiled vmap(grad)") / ref, "≤ 1", 1.0, True))
    checks += [
        ("per-example gradients: dagrad compiled / torch.func vmap(grad)",
         m("dagrad compiled vmap(grad)") / m("torch.func vmap(grad)"), "< 1", 1.0, True),
        ("per-example gradients: loop of 64 grad calls / eager vmap(grad)",
         m(f"dagrad eager, loop of {PER_EXAMPLE['batch']} grad calls") / m("dagrad eager vmap(grad)"), "≥ 10", 10.0,
         False),
    ]
    if scan is not None:
        compile_seconds, times = scan
        short, long = median(compile_seconds[SCAN["short"]]), median(compile_seconds[SCAN["long"]])
        rows = ["| scan steps | compile, ms (median of 5) | min–max |", "|---:|---:|---:|"]
        for steps, runs in compile_seconds.items():
            rows.append(f"| {steps:,} | {median(runs) * 1e3:.1f} | {min(runs) * 1e3:.1f}–{max(runs) * 1e3:.1f} |")
        rows += ["", "| contender | µs per step (median) | IQR |", "|---|---:|---:|"]
        for name, ts in times.items():
            lo, hi = iqr(ts)
            rows.append(f"| {name} | {median(ts):.2f} | {lo:.2f}–{hi:.2f} |")
        out.append(f"#### dg.scan: an RNN cell (hidden {SCAN['hidden']}, inputs {SCAN['inputs']}), compiled\n\n"
                   + "\n".join(rows))
        checks += [
            (f"scan: compile time, {SCAN['long']:,} steps / {SCAN['short']} steps", long / short, "≤ 2", 2.0, True),
            ("scan: compiled run time / NumPy loop", median(times["dagrad compiled scan"])
             / median(times["NumPy loop (by hand)"]), "≤ 1.5", 1.5, True),
        ]
    else:
        out.append("dg.scan rows skipped: dg.scan is not available in this build.")
    if checkpoint is not None:
        rows = ["| mode | peak without checkpoint, MB | with, MB | ratio | gradients equal |",
                "|---|---:|---:|---:|---|"]
        for mode, (plain, checked, equal) in checkpoint.items():
            rows.append(f"| {mode} | {plain / 1e6:.1f} | {checked / 1e6:.1f} | {checked / plain:.2f} | "
                        f"{'bit for bit' if equal else 'NO'} |")
            checks.append((f"checkpoint, 20-layer MLP step ({mode}): peak with / without", checked / plain,
                           "≤ 0.5", 0.5, True))
        title = "#### dg.checkpoint: peak memory (tracemalloc) of a 20-layer MLP training step"
        out.append(f"{title}\n\n" + "\n".join(rows))
    rows = ["| figure | measured | target | met |", "|---|---:|---:|---|"]
    for label, value, text, limit, upper in checks:
        met = value <= limit if upper else value >= limit
        rows.append(f"| {label} | {value:.2f} | {text} | {'yes' if met else 'no'} |")
    out.append("#### Targets of issue 15, from this run\n\n" + "\n".join(rows))
    return "\n\n".join(out)
