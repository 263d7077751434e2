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
  (c) static graphs: the chain of (a) and a softmax-regression step, eagerly and through a dg.Session.
  (d) compiled code (dg.compile): ``dg.compile(dg.grad(chain))`` is a contender in (a); a 64-128-128-10
      tanh MLP training step (forward, backward and SGD update in one function) at full batch (1797)
      and batch 64 against dagrad eager, hand-written NumPy (the floor), JAX jit and eager, and
      PyTorch eager; ``dg.compile(dg.hessian(f))`` against torch.func.hessian, eager dg.hessian and
      JAX jit(hessian); the time to compile a 10,000-node graph; the tracemalloc peak of one step.
      JAX (CPU, `pip install jax`) is optional: without it the JAX rows are skipped with a note.
  (e) training with dg.nn + dg.optim (issue 7): the 64-128-128-10 tanh MLP on the real digits,
      written the idiomatic way (nn.Sequential, F.cross_entropy, backward, optim.SGD), float64 and
      float32, batch 1797 and 64, against hand-written NumPy (the step of (d)), PyTorch, HIPS
      autograd, mygrad, JAX eager and jit; micrograd's scalar MLP demo (2-16-16-1 on 100 two-moons
      points) for dagrad on 0-d tensors, micrograd and PyTorch on 0-d tensors; RSS and tracemalloc
      over 1,000 (full run: 3,000) training steps in a fresh subprocess, dagrad and PyTorch.
  (f) long loops over input shapes (issue 12): one Session fed 1,000 batch sizes and one compiled
      gradient called on 1,000 vector lengths, each in a fresh subprocess: tracemalloc's current
      memory once the caches are full (after 100 shapes) and at the end, and the linecache entries
      of generated code still alive. Bounded caches keep both flat.
  (g) transforms (issue 15, benchmarks/bench_transforms.py): per-example gradients with vmap against
      JAX and torch.func, scan compile and run times, checkpoint memory; see that module.
  (h) Dask arrays as values (issue 17, benchmarks/bench_dask.py): a logistic-regression gradient over
      4 GB made chunk by chunk (peak RSS, equality with NumPy in pieces), against the same gradient
      written by hand with dask.array (dask-glm's), and on a LocalCluster of 1 and 2 worker processes.
      Dask's schedulers use both cores here (its threads, or two worker processes); BLAS stays at one
      thread per worker.
  (i) layers and data loading (issue 29, benchmarks/bench_nn_layers.py): a training step of the digits CNN with
      BatchNorm2d against PyTorch (float64 and float32), and DataLoader's time per batch against PyTorch's
      (num_workers=0) and the same batches cut by hand in NumPy; see that module.
  (j) sequence layers (issue 29, benchmarks/bench_nn.py): an LSTM (2 layers, hidden 128, 64 steps, batch
      32) and a TransformerEncoderLayer (d_model 128, 4 heads, 32 x 64 tokens) training step, float64 and
      float32, PyTorch against dagrad eager and compiled; see that module.
  (k) what a recorded node copies (issue 24 item 8, benchmarks/bench_saved.py): forward and backward of t * a with
      a NumPy operand a (copied when recorded: its rule reads it), with a already a Tensor (nothing copied), and
      t + a (add reads neither operand), for a of 16 and 1,000,000 elements.

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
  * (c) and the timings of (d) use the same interleaved rounds as (a). The compile times of (d) are
    first calls of a fresh dg.compile (trace + optimise + codegen + one run), median of a few
    runs, with an untimed full collection before each so that no run pays for another's garbage.
  * Every contender runs on one thread. This script sets OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
    MKL_NUM_THREADS to 1 before NumPy (and so its BLAS) is first imported, and XLA_FLAGS to
    single-threaded Eigen for JAX; PyTorch is pinned with torch.set_num_threads(1). The machine
    has 2 cores, the matrices of (c) and (d) are small (at most 1797 x 128), a second thread would
    help some contenders more than others, and for 16-element or scalar tensors threads only add
    overhead.
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
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

# One thread for every contender (see the methodology); set before NumPy loads its BLAS.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
for _var in THREAD_VARS:
    os.environ[_var] = "1"
if XLA_ONE_THREAD not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {XLA_ONE_THREAD}".strip()

import numpy as np  # noqa: E402  (after the thread settings)

import bench_dask  # noqa: E402  (workload (h), beside this file)
import bench_nn  # noqa: E402  (workload (j), beside this file)
import bench_nn_layers  # noqa: E402  (workload (i), beside this file)
import bench_saved  # noqa: E402  (workload (k), beside this file)
import bench_transforms  # noqa: E402  (workload (g), beside this file)

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


def make_grad_compiled(reps=VECTOR_REPS):
    """dg.compile(dg.grad(...)) of the chain: traced, optimised and code-generated on its first call."""
    import dagrad as dg

    def chain_sum(x):
        return chain(x, dg.sin, dg.tanh, dg.exp, reps).sum()

    return dg.compile(dg.grad(chain_sum))


def run_interleaved(contenders, repeats, warmup, inner=INNER_CALLS):
    """contenders: name -> (function of no arguments, units per call). Returns name -> µs per unit.

    Every round runs each contender in turn, in an order that rotates from round to round; on its
    turn a contender makes one untimed call (re-warming the caches) and then INNER_CALLS timed calls.
    """
    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(warmup + repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn, units = contenders[name]
            fn()  # untimed: re-warms the caches after the previous contender
            for _ in range(inner):
                start = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - start
                if r >= warmup:
                    times[name].append(elapsed / units * 1e6)
    return times


def bench_overhead(repeats, warmup):
    import torch

    torch.set_num_threads(1)
    x0 = np.random.default_rng(0).standard_normal(16)
    grad_autograd = make_grad_autograd()
    grad_compiled = make_grad_compiled()
    contenders = {
        "dagrad eager": grad_dagrad,
        "dagrad compiled": grad_compiled,
        "PyTorch": grad_torch,
        "autograd": grad_autograd,
        "NumPy": grad_numpy,
    }

    reference = grad_numpy(x0)
    for name, fn in contenders.items():
        g = fn(x0)  # for "dagrad compiled", this first call also compiles
        # The gradient is ~1e-16 (200 contracting factors), so an absolute tolerance would pass anything.
        if not np.allclose(g, reference, rtol=1e-9, atol=0.0):
            raise SystemExit(f"gradient mismatch in workload (a): {name}\n{g}\nvs NumPy\n{reference}")

    ops = VECTOR_REPS * PATTERN_OPS
    return run_interleaved({name: (lambda fn=fn: fn(x0), ops) for name, fn in contenders.items()}, repeats, warmup)


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
            p.value -= LOGREG["lr"] * p.grad.numpy()  # in place: the same leaf keeps training
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
    return run_interleaved(make_static_contenders(), repeats, warmup)


def static_table(times):
    rows = ["| workload | eager | Session | Session / eager |", "|---|---:|---:|---:|"]
    for workload, unit in (("chain", "µs/op"), ("logreg step", "µs/step")):
        e, s = median(times[f"{workload}, eager"]), median(times[f"{workload}, Session"])
        rows.append(f"| {workload} ({unit}) | {e:.2f} | {s:.2f} | {s / e:.2f} |")
    return "\n".join(rows)


# ---------------------------------------------------------------- (d) compiled code


MLP = {"n": 1797, "sizes": (64, 128, 128, 10), "lr": 0.1, "batches": (1797, 64)}
HESSIAN_N = 50
COMPILE_OPS = 10_000  # elementwise ops in the graph whose compile time (d) measures
COMPILE_RUNS = {"full": (5, 3), "quick": (1, 1)}  # fresh compiles of the forward chain and of its gradient
# The same loss, parameters and updates must come out of every contender before anything is timed.
MLP_RTOL, MLP_ATOL = 1e-7, 1e-10


def load_jax():
    """(jax, jax.numpy) with float64 enabled, or (None, reason) when JAX cannot be imported."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception as err:  # ImportError, or a broken jaxlib
        return None, f"{type(err).__name__}: {err}"
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def mlp_data():
    """Digits-shaped synthetic data (fixed seed): 1797 x 64 float64 inputs with the 17 grey levels of
    the 8 x 8 digits images scaled to [0, 1], labels in 0..9 as one-hot rows, and the parameters."""
    rng = np.random.default_rng(2)
    sizes = MLP["sizes"]
    x = rng.integers(0, 17, (MLP["n"], sizes[0])).astype(np.float64) / 16
    onehot = np.eye(sizes[-1])[rng.integers(0, sizes[-1], MLP["n"])]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params += [rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in), np.zeros(fan_out)]
    return tuple(params), x, onehot


def make_mlp_loss(tanh, log_softmax):
    """Mean softmax cross-entropy of the 64-128-128-10 tanh MLP, for any array library."""

    def mlp_loss(params, x, onehot):
        w1, b1, w2, b2, w3, b3 = params
        h = tanh(x @ w1 + b1)
        h = tanh(h @ w2 + b2)
        return -(onehot * log_softmax(h @ w3 + b3)).sum() / x.shape[0]

    return mlp_loss


def make_sgd_step(value_and_grad):
    def step(params, x, onehot):
        loss, grads = value_and_grad(params, x, onehot)
        return tuple(p - MLP["lr"] * g for p, g in zip(params, grads)), loss

    return step


def numpy_mlp_step(params, x, onehot):
    """The floor: forward, backward by hand (softmax - onehot for the cross-entropy) and update."""
    w1, b1, w2, b2, w3, b3 = params
    n = x.shape[0]
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    z = h2 @ w3 + b3
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = -(onehot * (z - np.log(s))).sum() / n
    dz = (e / s - onehot) / n  # every row of onehot sums to 1
    d2 = (dz @ w3.T) * (1 - h2 * h2)
    d1 = (d2 @ w2.T) * (1 - h1 * h1)
    grads = (x.T @ d1, d1.sum(axis=0), h1.T @ d2, d2.sum(axis=0), h2.T @ dz, dz.sum(axis=0))
    return tuple(p - MLP["lr"] * g for p, g in zip(params, grads)), loss


def make_mlp_steps():
    """name -> step(batch) running one training step on the first `batch` rows, returning NumPy
    (new_params, loss); and the JAX note (None when JAX ran)."""
    import torch

    import dagrad as dg

    torch.set_num_threads(1)
    params, x, onehot = mlp_data()
    data = {b: (np.ascontiguousarray(x[:b]), np.ascontiguousarray(onehot[:b])) for b in MLP["batches"]}

    dg_step = make_sgd_step(dg.value_and_grad(make_mlp_loss(dg.tanh, lambda z: dg.log_softmax(z, axis=1))))
    dg_compiled = dg.compile(dg_step)

    t_params = tuple(torch.tensor(p, requires_grad=True) for p in params)
    t_data = {b: tuple(torch.from_numpy(a) for a in data[b]) for b in data}
    t_loss = make_mlp_loss(torch.tanh, lambda z: torch.log_softmax(z, dim=1))

    def torch_step(b):
        loss = t_loss(t_params, *t_data[b])
        grads = torch.autograd.grad(loss, t_params)
        with torch.no_grad():
            return tuple(p - MLP["lr"] * g for p, g in zip(t_params, grads)), loss.detach()

    steps = {
        "NumPy (by hand)": lambda b: numpy_mlp_step(params, *data[b]),
        "dagrad compiled": lambda b: dg_compiled(params, *data[b]),
        "dagrad eager": lambda b: dg_step(params, *data[b]),
        "PyTorch eager": torch_step,
    }
    jax, jnp = load_jax()
    if jax is not None:
        j_params = tuple(jnp.asarray(p) for p in params)
        j_data = {b: tuple(jnp.asarray(a) for a in data[b]) for b in data}
        j_step = make_sgd_step(jax.value_and_grad(make_mlp_loss(jnp.tanh, lambda z: jax.nn.log_softmax(z, axis=1))))
        j_jit = jax.jit(j_step)
        steps["JAX jit"] = lambda b: jax.block_until_ready(j_jit(j_params, *j_data[b]))
        steps["JAX eager"] = lambda b: jax.block_until_ready(j_step(j_params, *j_data[b]))
    return steps, (None if jax is not None else jnp)


def check_mlp_steps(steps):
    for b in MLP["batches"]:
        ref_params, ref_loss = steps["NumPy (by hand)"](b)
        for name, step in steps.items():
            new_params, loss = step(b)  # the first call also compiles (dagrad compiled, JAX jit)
            got = [np.asarray(p) for p in new_params] + [np.asarray(loss)]
            want = list(ref_params) + [np.asarray(ref_loss)]
            if not all(g.shape == w.shape and np.allclose(g, w, MLP_RTOL, MLP_ATOL) for g, w in zip(got, want)):
                raise SystemExit(f"MLP step mismatch in workload (d), batch {b}: {name} (loss {loss} vs {ref_loss})")


def bench_mlp(repeats, warmup):
    steps, jax_note = make_mlp_steps()
    check_mlp_steps(steps)
    times = {}
    for b in MLP["batches"]:
        times[b] = run_interleaved({name: (lambda s=s: s(b), 1) for name, s in steps.items()}, repeats, warmup)
    return times, jax_note


def bench_mlp_memory(runs=3):
    """tracemalloc peak (bytes above what was allocated before the call) of one full-batch step,
    after warm-up, and the bytes the step's results hold. NumPy reports its buffers to tracemalloc."""
    import tracemalloc

    import dagrad as dg

    params, x, onehot = mlp_data()
    dg_step = make_sgd_step(dg.value_and_grad(make_mlp_loss(dg.tanh, lambda z: dg.log_softmax(z, axis=1))))
    steps = {
        "dagrad eager": dg_step,
        "dagrad compiled": dg.compile(dg_step),
        "NumPy (by hand)": numpy_mlp_step,
    }
    result = {}
    for name, step in steps.items():
        peaks, kept = [], []
        step(params, x, onehot)  # warm-up (and compilation)
        for _ in range(runs):
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            out = step(params, x, onehot)
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            peaks.append(peak - base)
            kept.append(current - base)
            del out
        result[name] = (median(peaks), median(kept))
    return result


def hessian_inputs():
    rng = np.random.default_rng(3)
    return rng.standard_normal((HESSIAN_N, HESSIAN_N)) / np.sqrt(HESSIAN_N), rng.standard_normal(HESSIAN_N)


def bench_hessian(repeats, warmup):
    """f(x) = sum(tanh(A @ x) ** 2), n = 50: the full 50 x 50 Hessian per call."""
    import torch

    import dagrad as dg

    torch.set_num_threads(1)
    a, x0 = hessian_inputs()
    dg_hessian = dg.hessian(lambda x: (dg.tanh(a @ x) ** 2).sum())
    dg_compiled = dg.compile(dg_hessian)
    a_t, x_t = torch.from_numpy(a), torch.from_numpy(x0)
    torch_hessian = torch.func.hessian(lambda x: (torch.tanh(a_t @ x) ** 2).sum())
    contenders = {
        "dagrad compiled": lambda: dg_compiled(x0),
        "dagrad eager": lambda: dg_hessian(x0),
        "torch.func.hessian": lambda: torch_hessian(x_t),
    }
    jax, jnp = load_jax()
    if jax is not None:
        a_j, x_j = jnp.asarray(a), jnp.asarray(x0)
        jax_hessian = jax.jit(jax.hessian(lambda x: (jnp.tanh(a_j @ x) ** 2).sum()))
        contenders["JAX jit(hessian)"] = lambda: jax.block_until_ready(jax_hessian(x_j))

    # the exact Hessian: 2 A^T diag((1 - t^2)(1 - 3 t^2)) A with t = tanh(A x)
    t = np.tanh(a @ x0)
    reference = 2 * a.T @ (((1 - t * t) * (1 - 3 * t * t))[:, None] * a)
    for name, fn in contenders.items():
        got = np.asarray(fn())  # the first call also compiles
        if not np.allclose(got, reference, rtol=1e-9, atol=1e-12):
            raise SystemExit(f"Hessian mismatch in workload (d): {name}")
    return run_interleaved({name: (fn, 1) for name, fn in contenders.items()}, repeats, warmup)


def bench_compile_time(mode):
    """First-call times of fresh dg.compile's of the 10,000-op chain (forward) and of its gradient."""
    import dagrad as dg

    reps = COMPILE_OPS // PATTERN_OPS
    x0 = np.random.default_rng(0).standard_normal(16)

    def forward(x):
        return chain(x, dg.sin, dg.tanh, dg.exp, reps)

    def chain_sum(x):
        return forward(x).sum()

    results = {}
    for (label, f), runs in zip(
        ((f"{COMPILE_OPS:,} ops forward", forward), (f"gradient of the {COMPILE_OPS:,} ops", dg.grad(chain_sum))),
        COMPILE_RUNS[mode],
    ):
        firsts = []
        for _ in range(runs):
            fast = dg.compile(f)
            gc.collect()
            start = time.perf_counter()
            fast(x0)
            firsts.append(time.perf_counter() - start)
        report = fast.report(x0)
        later = []
        for _ in range(5):
            start = time.perf_counter()
            fast(x0)
            later.append(time.perf_counter() - start)
        del fast
        gc.collect()
        results[label] = (firsts, median(later), report.traced, report.optimised)
    return results


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


def child_json(*args):
    """Runs this script in a fresh process with `args`; returns the JSON line it printed last."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *map(str, args)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_child(lib, n_ops):
    return child_json("--child", lib, n_ops)


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


# ---------------------------------------------------------------- (e) training


TRAIN = {"sizes": (64, 128, 128, 10), "lr": 0.1, "batches": (1797, 64), "dtypes": ("float64", "float32")}
TRAIN_TOL = {"float64": (1e-7, 1e-10), "float32": (2e-3, 2e-5)}  # (rtol, atol) of the agreement check
MEMORY_STEPS = 1000
MEMORY_MARKS = (10, 100, 250, 500, 750, 1000, 2000, 3000)  # runs on to 3,000 to show caches fill, then stop


def train_data(dtype):
    """The real digits (1797 x 8 x 8, scaled to [0, 1]) flattened to 64, integer labels and one-hot
    rows, and the initial parameters (fixed seed) as NumPy (in, out) matrices and biases."""
    from dagrad.data import load_digits

    images, labels = load_digits()
    x = images.reshape(len(images), -1).astype(dtype)
    onehot = np.eye(TRAIN["sizes"][-1], dtype=dtype)[labels]
    rng = np.random.default_rng(5)
    params = []
    for fan_in, fan_out in zip(TRAIN["sizes"][:-1], TRAIN["sizes"][1:]):
        bound = 1 / np.sqrt(fan_in)
        params += [rng.uniform(-bound, bound, (fan_in, fan_out)), rng.uniform(-bound, bound, fan_out)]
    return tuple(p.astype(dtype) for p in params), x, labels, onehot


def make_train_steps(dtype):
    """name -> (step(batch) -> loss, params() -> the six NumPy arrays as (in, out) and biases).

    Each contender owns its parameters and trains them in place (or rebinds them), as a training
    loop does: every call is one step on the first `batch` rows."""
    import torch

    import dagrad as dg

    torch.set_num_threads(1)
    init, x, labels, onehot = train_data(dtype)
    data = {
        b: (np.ascontiguousarray(x[:b]), np.ascontiguousarray(labels[:b]), np.ascontiguousarray(onehot[:b]))
        for b in TRAIN["batches"]
    }
    lr = TRAIN["lr"]
    steps = {}

    # hand-written NumPy: the step of (d), rebinding the parameters
    np_state = [tuple(p.copy() for p in init)]

    def numpy_step(b):
        xb, _, ob = data[b]
        np_state[0], loss = numpy_mlp_step(np_state[0], xb, ob)
        return loss

    steps["NumPy (by hand)"] = (numpy_step, lambda: np_state[0])

    # dagrad eager, the idiomatic way: nn.Sequential, F.cross_entropy, backward, optim.SGD
    nn = dg.nn

    def digits_mlp():
        model = nn.Sequential(
            nn.Linear(64, 128, dtype=dtype),
            nn.Tanh(),
            nn.Linear(128, 128, dtype=dtype),
            nn.Tanh(),
            nn.Linear(128, 10, dtype=dtype),
        )
        linears = [model[0], model[2], model[4]]
        for layer, w, bias in zip(linears, init[0::2], init[1::2]):
            layer.weight.value[...] = w.T
            layer.bias.value[...] = bias
        return model, linears

    model, linears = digits_mlp()
    opt = dg.optim.SGD(model.parameters(), lr=lr)
    dg_data = {b: (dg.tensor(xb), lb) for b, (xb, lb, _) in data.items()}

    def dagrad_step(b):
        xb, lb = dg_data[b]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), lb)
        loss.backward()
        opt.step()
        return loss.item()

    steps["dagrad eager (nn + optim)"] = (
        dagrad_step,
        lambda: sum(((lin.weight.value.T, lin.bias.value) for lin in linears), ()),
    )

    # dagrad compiled: the same PyTorch-style step under dg.compile, as torch.compile users write it (issue 14)
    cmodel, clinears = digits_mlp()
    copt = dg.optim.SGD(cmodel.parameters(), lr=lr)

    @dg.compile
    def compiled_step(xb, lb):
        copt.zero_grad()
        loss = nn.functional.cross_entropy(cmodel(xb), lb)
        loss.backward()
        copt.step()
        return loss

    def dagrad_compiled_step(b):
        xb, lb, _ = data[b]
        return float(compiled_step(xb, lb))

    steps["dagrad compiled (nn + optim step)"] = (
        dagrad_compiled_step,
        lambda: sum(((lin.weight.value.T, lin.bias.value) for lin in clinears), ()),
    )

    # PyTorch eager, idiomatic
    tdtype = getattr(torch, dtype)
    tmodel = torch.nn.Sequential(
        torch.nn.Linear(64, 128),
        torch.nn.Tanh(),
        torch.nn.Linear(128, 128),
        torch.nn.Tanh(),
        torch.nn.Linear(128, 10),
    ).to(tdtype)
    tlinears = [tmodel[0], tmodel[2], tmodel[4]]
    with torch.no_grad():
        for layer, w, bias in zip(tlinears, init[0::2], init[1::2]):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(bias))
    topt = torch.optim.SGD(tmodel.parameters(), lr=lr)
    t_data = {b: (torch.from_numpy(xb), torch.from_numpy(lb)) for b, (xb, lb, _) in data.items()}

    def torch_step(b):
        xb, lb = t_data[b]
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tmodel(xb), lb)
        loss.backward()
        topt.step()
        return loss.item()

    steps["PyTorch eager"] = (
        torch_step,
        lambda: sum(((lin.weight.detach().numpy().T, lin.bias.detach().numpy()) for lin in tlinears), ()),
    )

    # HIPS autograd: grad of the functional loss, update by rebinding
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    ag_loss = make_mlp_loss(anp.tanh, lambda z: z - logsumexp(z, axis=1, keepdims=True))
    ag_vg = autograd.value_and_grad(ag_loss)
    ag_state = [tuple(p.copy() for p in init)]

    def autograd_step(b):
        xb, _, ob = data[b]
        loss, grads = ag_vg(ag_state[0], xb, ob)
        ag_state[0] = tuple(p - lr * g for p, g in zip(ag_state[0], grads))
        return loss

    steps["autograd"] = (autograd_step, lambda: ag_state[0])

    # mygrad: tensors, its softmax cross-entropy, backward, update of .data in place
    try:
        import mygrad as mg
        from mygrad.nnet.losses import softmax_crossentropy
    except ImportError:
        pass
    else:
        mg_params = [mg.tensor(p.copy()) for p in init]

        def mygrad_step(b):
            xb, lb, _ = data[b]
            w1, b1, w2, b2, w3, b3 = mg_params
            h = mg.tanh(mg.matmul(xb, w1) + b1)
            h = mg.tanh(mg.matmul(h, w2) + b2)
            loss = softmax_crossentropy(mg.matmul(h, w3) + b3, lb)
            loss.backward()
            for p in mg_params:
                p.data -= lr * p.grad
            return loss.item()

        steps["mygrad"] = (mygrad_step, lambda: tuple(p.data for p in mg_params))

    jax, jnp = load_jax()
    if jax is not None:
        j_step = make_sgd_step(jax.value_and_grad(make_mlp_loss(jnp.tanh, lambda z: jax.nn.log_softmax(z, axis=1))))
        j_jit = jax.jit(j_step)
        j_data = {b: (jnp.asarray(xb), jnp.asarray(ob)) for b, (xb, _, ob) in data.items()}
        for name, fn in (("JAX jit", j_jit), ("JAX eager", j_step)):
            state = [tuple(jnp.asarray(p) for p in init)]

            def jax_step(b, fn=fn, state=state):
                state[0], loss = fn(state[0], *j_data[b])
                jax.block_until_ready(state[0])
                return loss

            steps[name] = (jax_step, lambda state=state: tuple(np.asarray(p) for p in state[0]))
    return steps


def check_train_steps(steps, dtype, batch):
    """One step of every contender from the same initial weights: same loss, same new parameters."""
    rtol, atol = TRAIN_TOL[dtype]
    ref_loss = float(steps["NumPy (by hand)"][0](batch))
    ref_params = [np.asarray(p, dtype=np.float64) for p in steps["NumPy (by hand)"][1]()]
    for name, (step, params) in steps.items():
        if name == "NumPy (by hand)":
            continue
        loss = float(step(batch))
        got = [np.asarray(p) for p in params()]
        if not np.isclose(loss, ref_loss, rtol, atol):
            raise SystemExit(f"training step loss mismatch in (e), {dtype} batch {batch}: {name} {loss} vs {ref_loss}")
        for g, w in zip(got, ref_params):
            if g.shape != w.shape or str(g.dtype) != dtype or not np.allclose(g, w, rtol, atol):
                raise SystemExit(f"training step parameters mismatch in (e), {dtype} batch {batch}: {name}")


def bench_train(repeats, warmup):
    """(dtype, batch) -> name -> µs per step."""
    times = {}
    for dtype in TRAIN["dtypes"]:
        for b in TRAIN["batches"]:
            steps = make_train_steps(dtype)  # fresh contenders: every one starts from the same weights
            check_train_steps(steps, dtype, b)
            times[(dtype, b)] = run_interleaved(
                {n: (lambda s=s: s(b), 1) for n, (s, _) in steps.items()}, repeats, warmup
            )
    return times


def train_table(times):
    keys = list(times)
    names = list(times[keys[0]])
    head = " | ".join(f"{dtype}, batch {b}: µs/step | IQR | × NumPy" for dtype, b in keys)
    rows = [f"| contender | {head} |", "|---|" + "---:|" * (3 * len(keys))]
    for name in names:
        cells = []
        for key in keys:
            ts, floor = times[key][name], median(times[key]["NumPy (by hand)"])
            lo, hi = iqr(ts)
            cells.append(f"{median(ts):.0f} | {lo:.0f}–{hi:.0f} | {median(ts) / floor:.2f}")
        rows.append(f"| {name} | {' | '.join(cells)} |")
    missing = [n for n in ("mygrad", "JAX jit") if n not in names]
    if missing:
        rows += ["", f"Rows skipped (not importable): {', '.join(missing)}."]
    return "\n".join(rows)


# scalar MLP (micrograd's demo): 2-16-16-1, ReLU hidden, linear output, SVM hinge loss + L2 (alpha 1e-4)

SCALAR = {"n": 100, "sizes": (2, 16, 16, 1), "lr": 0.1, "alpha": 1e-4}
SCALAR_ROUNDS = {"full": (6, 3), "quick": (1, 1)}  # (rounds, timed calls per turn): a step takes ~0.5-1.5 s


def make_moons(n, noise=0.1, seed=0):
    """Two interleaving half circles (as sklearn.datasets.make_moons), labels -1 / +1."""
    rng = np.random.default_rng(seed)
    n_out = n // 2
    t_out, t_in = np.linspace(0, np.pi, n_out), np.linspace(0, np.pi, n - n_out)
    x = np.concatenate(
        [np.stack([np.cos(t_out), np.sin(t_out)], 1), np.stack([1 - np.cos(t_in), 0.5 - np.sin(t_in)], 1)]
    )
    y = np.concatenate([-np.ones(n_out), np.ones(n - n_out)])
    return x + rng.normal(scale=noise, size=x.shape), y


def scalar_init():
    """micrograd's MLP(2, [16, 16, 1]) weights, seeded: per layer a list of (weights, bias) per neuron."""
    rng = np.random.default_rng(6)
    sizes = SCALAR["sizes"]
    return [
        [([float(v) for v in rng.uniform(-1, 1, fan_in)], 0.0) for _ in range(fan_out)]
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:])
    ]


def scalar_forward(layers, x, relu):
    """micrograd's MLP.__call__: each neuron is sum((wi*xi for wi, xi in zip(w, x)), b), then ReLU
    except in the last layer."""
    for i, layer in enumerate(layers):
        last = i == len(layers) - 1
        out = []
        for w, b in layer:
            act = sum((wi * xi for wi, xi in zip(w, x)), b)
            out.append(act if last else relu(act))
        x = out
    return x[0]


def scalar_loss(layers, params, inputs, ys, relu, scale):
    """micrograd's demo loss: mean SVM max-margin loss plus alpha * sum of squared parameters."""
    scores = [scalar_forward(layers, x, relu) for x in inputs]
    losses = [relu(1 + -yi * si) for yi, si in zip(ys, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = SCALAR["alpha"] * sum(p * p for p in params)
    return data_loss + reg_loss


def make_scalar_steps():
    """name -> step() (one full training step over the 100 points, returns the loss as a float)."""
    import torch

    import dagrad as dg

    torch.set_num_threads(1)
    x, y = make_moons(SCALAR["n"])
    init = scalar_init()
    lr = SCALAR["lr"]
    steps = {}

    def build(wrap):
        layers = [[([wrap(v) for v in w], wrap(b)) for w, b in layer] for layer in init]
        params = [p for layer in layers for w, b in layer for p in (*w, b)]
        return layers, params

    try:
        from micrograd.engine import Value
        from micrograd.nn import MLP as MicroMLP
    except ImportError:
        pass
    else:
        mlp = MicroMLP(2, [16, 16, 1])
        for layer, init_layer in zip(mlp.layers, init):
            for neuron, (w, b) in zip(layer.neurons, init_layer):
                for v, w0 in zip(neuron.w, w):
                    v.data = w0
                neuron.b.data = b
        m_inputs = [list(map(Value, row)) for row in x.tolist()]
        m_ys = y.tolist()

        def micrograd_step():
            scores = list(map(mlp, m_inputs))
            losses = [(1 + -yi * si).relu() for yi, si in zip(m_ys, scores)]
            data_loss = sum(losses) * (1.0 / len(losses))
            reg_loss = SCALAR["alpha"] * sum(p * p for p in mlp.parameters())
            loss = data_loss + reg_loss
            mlp.zero_grad()
            loss.backward()
            for p in mlp.parameters():
                p.data -= lr * p.grad
            return loss.data

        steps["micrograd"] = micrograd_step

    d_layers, d_params = build(lambda v: dg.tensor(v, requires_grad=True))
    d_inputs = [[dg.tensor(v) for v in row] for row in x.tolist()]
    d_ys = y.tolist()

    def dagrad_step():
        loss = scalar_loss(d_layers, d_params, d_inputs, d_ys, dg.relu, None)
        for p in d_params:
            p.grad = None
        loss.backward()
        for p in d_params:
            p.value -= lr * p.grad.numpy()
        return loss.item()

    steps["dagrad eager (0-d tensors)"] = dagrad_step

    t_layers, t_params = build(lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True))
    t_inputs = [[torch.tensor(v, dtype=torch.float64) for v in row] for row in x.tolist()]
    t_ys = y.tolist()

    def torch_step():
        loss = scalar_loss(t_layers, t_params, t_inputs, t_ys, torch.relu, None)
        for p in t_params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in t_params:
                p -= lr * p.grad
        return loss.item()

    steps["PyTorch (0-d tensors)"] = torch_step
    return steps


def bench_scalar(repeats, warmup, inner):
    steps = make_scalar_steps()
    # the same weights go in: the first step's loss, then the second's (after one update), must agree
    for k in range(2):
        losses = {name: step() for name, step in steps.items()}
        ref = losses["dagrad eager (0-d tensors)"]
        for name, loss in losses.items():
            if not np.isclose(loss, ref, rtol=1e-10, atol=0.0):
                raise SystemExit(f"scalar MLP loss mismatch in (e), step {k + 1}: {name} {loss} vs dagrad {ref}")
    return run_interleaved({name: (s, 1) for name, s in steps.items()}, repeats, warmup, inner), losses


def scalar_table(times):
    ref = median(times["micrograd"]) if "micrograd" in times else None
    rows = ["| contender | ms/step (median) | IQR | × micrograd |", "|---|---:|---:|---:|"]
    for name, ts in times.items():
        lo, hi = iqr(ts)
        ratio = f"{median(ts) / ref:.2f}" if ref else "n/a"
        rows.append(f"| {name} | {median(ts) / 1e3:.1f} | {lo / 1e3:.1f}–{hi / 1e3:.1f} | {ratio} |")
    if ref is None:
        rows += ["", "micrograd row skipped: micrograd is not importable."]
    return "\n".join(rows)


# memory over 1,000 eager training steps (fresh subprocess each)


def train_child(lib, last_step):
    """1,000 steps (batch 64, float64, cycling through the digits) of the nn/optim MLP; print JSON
    with VmRSS and tracemalloc's current memory after the marked steps."""
    import tracemalloc

    _, x, labels, _ = train_data("float64")
    n_batches = len(x) // 64
    if lib == "dagrad":
        import dagrad as dg

        nn = dg.nn
        model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10))
        opt = dg.optim.SGD(model.parameters(), lr=TRAIN["lr"])
        batches = [(dg.tensor(x[i * 64 : (i + 1) * 64]), labels[i * 64 : (i + 1) * 64]) for i in range(n_batches)]
        loss_fn = nn.functional.cross_entropy
    else:
        import torch

        torch.set_num_threads(1)
        nn = torch.nn
        model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10))
        model = model.double()
        opt = torch.optim.SGD(model.parameters(), lr=TRAIN["lr"])
        batches = [
            (torch.from_numpy(x[i * 64 : (i + 1) * 64]), torch.from_numpy(labels[i * 64 : (i + 1) * 64]))
            for i in range(n_batches)
        ]
        loss_fn = nn.functional.cross_entropy
    tracemalloc.start()
    marks = []
    start = time.perf_counter()
    for step in range(1, last_step + 1):
        xb, lb = batches[step % n_batches]
        opt.zero_grad()
        loss = loss_fn(model(xb), lb)
        loss.backward()
        opt.step()
        if step in MEMORY_MARKS:
            marks.append({"step": step, "rss": status_kb("VmRSS") * 1024, "traced": tracemalloc.get_traced_memory()[0]})
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    print(
        json.dumps(
            {
                "marks": marks,
                "traced_peak": peak,
                "hwm": status_kb("VmHWM") * 1024,
                "seconds": elapsed,
                "loss": loss.item(),
            }
        )
    )


def bench_train_memory(mode):
    out = {}
    for lib, name in (("dagrad", "dagrad eager (nn + optim)"), ("torch", "PyTorch eager")):
        last = MEMORY_STEPS if mode == "quick" else MEMORY_MARKS[-1]
        out[name] = child_json("--train-child", lib, last)
    return out


def train_memory_table(memory):
    marks = [s for s in MEMORY_MARKS if s <= max(m["step"] for res in memory.values() for m in res["marks"])]
    head = " | ".join(f"step {s}" for s in marks)
    rows = [
        f"| contender | measure | {head} | growth 100 → {MEMORY_STEPS} | growth {MEMORY_STEPS} → {marks[-1]} |",
        "|---|---|" + "---:|" * (len(marks) + 2),
    ]
    for name, res in memory.items():
        by_step = {m["step"]: m for m in res["marks"]}
        for key, label in (("rss", "VmRSS, MB"), ("traced", "tracemalloc current, MB")):
            cells = " | ".join(f"{by_step[s][key] / 1e6:.2f}" for s in marks)
            growth = (by_step[MEMORY_STEPS][key] - by_step[100][key]) / 1e6
            later = (by_step[marks[-1]][key] - by_step[MEMORY_STEPS][key]) / 1e6
            rows.append(f"| {name} | {label} | {cells} | {growth:+.3f} | {later:+.3f} |")
    rows += [
        "",
        f"| contender | tracemalloc peak, MB | VmHWM, MB | {marks[-1]:,} steps, s (tracemalloc on) | last loss |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, res in memory.items():
        rows.append(
            f"| {name} | {res['traced_peak'] / 1e6:.2f} | {res['hwm'] / 1e6:.1f} | {res['seconds']:.2f} | "
            f"{res['loss']:.4f} |"
        )
    return "\n".join(rows)


# (f) long loops over input shapes: bounded caches (issue 12), fresh subprocess each

SHAPE_LOOPS = {"full": 1000, "quick": 200}
SHAPE_MARK = 100  # the caches (64 entries) are full by then: later growth would be a leak


def cache_child(kind, n):
    """`n` distinct input shapes through one Session ("session": batch sizes 1..n fed to a placeholder
    of unknown batch size, loss and gradient fetched) or one compiled gradient ("compile": vectors
    of length 1..n); print JSON with tracemalloc's current memory after SHAPE_MARK and after n
    shapes, and how many linecache entries of generated code are alive at the end."""
    import linecache
    import tracemalloc

    import dagrad as dg

    w0 = np.random.default_rng(0).standard_normal((8, 4))
    if kind == "session":
        with dg.Graph() as g:
            x = dg.placeholder((None, 8), name="x")
            w = dg.Variable(w0, name="w")
            loss = dg.tanh(x @ w).sum()
            (dw,) = dg.gradients(loss, [w])
        sess = dg.Session(g)

        def call(i):
            return sess.run([loss, dw], {x: np.ones((i, 8))})
    else:
        f = dg.compile(dg.grad(lambda v: dg.tanh(v).sum()))

        def call(i):
            return f(np.ones(i))

    tracemalloc.start()
    marks = {}
    for i in range(1, n + 1):
        call(i)
        if i in (SHAPE_MARK, n):
            gc.collect()
            marks[i] = tracemalloc.get_traced_memory()[0]
    generated = sum(1 for name in list(linecache.cache) if name.startswith("<dagrad.compile "))
    print(json.dumps({"mark": marks[SHAPE_MARK], "end": marks[n], "n": n, "linecache": generated}))


def bench_cache_memory(mode):
    out = {}
    loops = (("session", "Session.run, batch sizes 1..N"), ("compile", "dg.compile(dg.grad(f)), lengths 1..N"))
    for kind, name in loops:
        out[name] = child_json("--cache-child", kind, SHAPE_LOOPS[mode])
    return out


def cache_memory_table(memory):
    rows = [
        f"| loop | N | tracemalloc after {SHAPE_MARK} shapes, MB | after N, MB | growth, MB | generated-code "
        "linecache entries alive |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, res in memory.items():
        rows.append(
            f"| {name} | {res['n']:,} | {res['mark'] / 1e6:.2f} | {res['end'] / 1e6:.2f} | "
            f"{(res['end'] - res['mark']) / 1e6:+.2f} | {res['linecache']} |"
        )
    return "\n".join(rows)


def targets_table_training(train, scalar, memory):
    """The targets of issue 7 against this run's figures."""
    dg_name, floor = "dagrad eager (nn + optim)", "NumPy (by hand)"
    checks = []
    for dtype in TRAIN["dtypes"]:
        for b, limit in zip(TRAIN["batches"], (1.25, 1.8)):
            ratio = median(train[(dtype, b)][dg_name]) / median(train[(dtype, b)][floor])
            checks.append(
                (
                    f"MLP step (e), {dtype}, batch {b}: dagrad eager / NumPy",
                    f"{ratio:.2f}",
                    f"≤ {limit}",
                    ratio <= limit,
                )
            )
    for dtype in ("float64",):  # issue 14: the PyTorch-style step under dg.compile, in (d)'s float64
        for b, limit in zip(TRAIN["batches"], (1.1, 1.35)):
            ratio = median(train[(dtype, b)]["dagrad compiled (nn + optim step)"]) / median(train[(dtype, b)][floor])
            checks.append((f"MLP step (e), {dtype}, batch {b}: dagrad compiled PyTorch-style step / NumPy",
                           f"{ratio:.2f}", f"≤ {limit}", ratio <= limit))
    if "micrograd" in scalar:
        ratio = median(scalar["dagrad eager (0-d tensors)"]) / median(scalar["micrograd"])
        checks.append(("scalar MLP: dagrad eager / micrograd", f"{ratio:.2f}", "≤ 1", ratio <= 1))
    name = "dagrad eager (nn + optim)"
    rss = memory_growth(memory, name, "rss")
    checks.append((f"memory growth, steps 100 → {MEMORY_STEPS:,}: VmRSS, MB", f"{rss:+.2f}", "flat (< 1 MB)", rss < 1))
    # tracemalloc counts Python's own free lists too: they fill during the first ~1,000 steps (about
    # 64 bytes a step, traced to 3-tuples) and then stop, so flatness is judged after that when the run
    # goes on (the full run does; --quick stops at 1,000)
    last = max(m["step"] for m in memory[name]["marks"])
    start = MEMORY_STEPS if last > MEMORY_STEPS else 100
    traced = memory_growth(memory, name, "traced", start, last)
    checks.append(
        (
            f"memory growth, steps {start:,} → {last:,}: tracemalloc, MB",
            f"{traced:+.3f}",
            "flat (< 0.1 MB)",
            traced < 0.1,
        )
    )
    rows = ["| figure | measured | target | met |", "|---|---:|---:|---|"]
    rows += [f"| {label} | {value} | {text} | {'yes' if met else 'no'} |" for label, value, text, met in checks]
    return "\n".join(rows)


def memory_growth(memory, name, key, start=100, end=MEMORY_STEPS):
    by_step = {m["step"]: m[key] for m in memory[name]["marks"]}
    return (by_step[end] - by_step[start]) / 1e6


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
        rows.append(f"| {name} | {median(ts):.3f} | {lo:.3f}–{hi:.3f} | {median(ts) / floor:.2f} |")
    d, c, t = median(times["dagrad eager"]), median(times["dagrad compiled"]), median(times["PyTorch"])
    rows += [
        "",
        "| ratio of medians | value |",
        "|---|---:|",
        f"| dagrad eager / PyTorch | {d / t:.2f} |",
        f"| dagrad eager / autograd | {d / median(times['autograd']):.2f} |",
        f"| dagrad eager / NumPy | {d / floor:.2f} |",
        f"| dagrad compiled / NumPy | {c / floor:.2f} |",
        f"| dagrad compiled / dagrad eager | {c / d:.2f} |",
        f"| PyTorch / dagrad compiled (speed-up) | {t / c:.2f} |",
    ]
    return "\n".join(rows)


def mlp_table(times, jax_note):
    batches = MLP["batches"]
    floors = {b: median(times[b]["NumPy (by hand)"]) for b in batches}
    head = " | ".join(f"batch {b}: µs/step (median) | IQR | × NumPy" for b in batches)
    rows = [f"| contender | {head} |", "|---|" + "---:|" * (3 * len(batches))]
    for name in times[batches[0]]:
        cells = []
        for b in batches:
            ts = times[b][name]
            lo, hi = iqr(ts)
            cells.append(f"{median(ts):.0f} | {lo:.0f}–{hi:.0f} | {median(ts) / floors[b]:.2f}")
        rows.append(f"| {name} | {' | '.join(cells)} |")
    ratio = lambda b, a, c: median(times[b][a]) / median(times[b][c])
    rows += ["", "| ratio of medians | " + " | ".join(f"batch {b}" for b in batches) + " |"]
    rows.append("|---|" + "---:|" * len(batches))
    others = ["dagrad eager", "PyTorch eager"] + (["JAX jit", "JAX eager"] if jax_note is None else [])
    for other in ["NumPy (by hand)"] + others:
        rows.append(
            f"| dagrad compiled / {other} | "
            + " | ".join(f"{ratio(b, 'dagrad compiled', other):.2f}" for b in batches)
            + " |"
        )
    if jax_note is not None:
        rows += ["", f"JAX rows skipped: JAX is not importable ({jax_note})."]
    return "\n".join(rows)


def hessian_table(times):
    ref = median(times["torch.func.hessian"])
    rows = ["| contender | µs/call (median) | IQR | × torch.func.hessian |", "|---|---:|---:|---:|"]
    for name, ts in times.items():
        lo, hi = iqr(ts)
        rows.append(f"| {name} | {median(ts):.0f} | {lo:.0f}–{hi:.0f} | {median(ts) / ref:.2f} |")
    if "JAX jit(hessian)" not in times:
        rows += ["", "JAX row skipped: JAX is not importable."]
    return "\n".join(rows)


def compile_table(results):
    rows = [
        "| graph (16 float64) | nodes traced → optimised | runs | first call, s (median) | min–max | later calls, ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, (firsts, later, traced, optimised) in results.items():
        rows.append(
            f"| {label} | {traced:,} → {optimised:,} | {len(firsts)} | {median(firsts):.2f} | "
            f"{min(firsts):.2f}–{max(firsts):.2f} | {later * 1e3:.1f} |"
        )
    return "\n".join(rows)


def memory_table(memory):
    eager = memory["dagrad eager"][0]
    rows = [
        f"| contender (batch {MLP['n']}) | tracemalloc peak, MB | held by the results, MB | × dagrad eager |",
        "|---|---:|---:|---:|",
    ]
    for name, (peak, kept) in memory.items():
        rows.append(f"| {name} | {peak / 1e6:.2f} | {kept / 1e6:.2f} | {peak / eager:.2f} |")
    return "\n".join(rows)


def targets_table(overhead, mlp, hessian, compile_times, memory):
    """The targets of the issue against this run's figures."""
    o = lambda name: median(overhead[name])
    m = lambda b, name: median(mlp[b][name])
    first = median(next(iter(compile_times.values()))[0])
    checks = [
        ("per-op overhead (a): dagrad compiled / NumPy floor", o("dagrad compiled") / o("NumPy"), "≤ 1.6", 1.6, True),
        ("per-op overhead (a): PyTorch / dagrad compiled", o("PyTorch") / o("dagrad compiled"), "≥ 3", 3.0, False),
    ]
    for b, limit in zip(MLP["batches"], (1.1, 1.35)):
        ratio = m(b, "dagrad compiled") / m(b, "NumPy (by hand)")
        checks.append((f"MLP step, batch {b}: dagrad compiled / NumPy", ratio, f"≤ {limit}", limit, True))
    checks += [
        (
            "Hessian: dagrad compiled / torch.func.hessian",
            median(hessian["dagrad compiled"]) / median(hessian["torch.func.hessian"]),
            "≤ 1",
            1.0,
            True,
        ),
        (f"compile a {COMPILE_OPS:,}-node graph, s", first, "< 2", 2.0, True),
        (
            "peak memory of a step: dagrad compiled / eager",
            memory["dagrad compiled"][0] / memory["dagrad eager"][0],
            "≤ 1",
            1.0,
            True,
        ),
    ]
    rows = ["| figure | measured | target | met |", "|---|---:|---:|---|"]
    for label, value, text, limit, upper in checks:
        met = value <= limit if upper else value >= limit
        rows.append(f"| {label} | {value:.2f} | {text} | {'yes' if met else 'no'} |")
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
        git = lambda *args: subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout
        commit = git("describe", "--always").strip()
        # only what is measured counts (a previous run's docs/benchmarks.md does not)
        if commit and git("status", "--porcelain", "--", "src", "benchmarks").strip():
            commit += " plus uncommitted changes in src/ or benchmarks/"
    except OSError:
        commit = "unknown"
    import torch

    try:
        jax_version = f"jax {version('jax')}, jaxlib {version('jaxlib')} (CPU, float64 enabled)"
    except PackageNotFoundError:
        jax_version = "jax not installed"
    return "\n".join(
        [
            f"- cores: {os.cpu_count()} (usable by this process: {len(os.sched_getaffinity(0))})",
            f"- CPU: {model}",
            f"- OS: {platform.platform()}",
            f"- Python {platform.python_version()} ({sys.executable})",
            f"- NumPy {np.__version__}, torch {torch.__version__} (1 thread), autograd {version('autograd')}, "
            f"{jax_version}",
            f"- threads: {threads()}",
            f"- dagrad at git {commit or 'unknown'}",
        ]
    )


def threads():
    """How BLAS and the other libraries were pinned to one thread, and what NumPy's BLAS reports."""
    pinned = ", ".join(f"{var}={os.environ[var]}" for var in THREAD_VARS)
    text = f"{pinned} set before NumPy is imported; XLA_FLAGS={os.environ['XLA_FLAGS']}; torch.set_num_threads(1)"
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return text + " (threadpoolctl is not installed, so the BLAS thread count is not read back)"
    counts = ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info())
    return text + f" (threadpoolctl reports: {counts or 'no thread pools'})"


WORKLOADS = """\
- **(a) per-op overhead.** `x0 = np.random.default_rng(0).standard_normal(16)` (float64); the
  pattern `sin, * 1.1, tanh, + 0.5, exp` repeated 200 times (1,000 elementwise ops), then `sum`;
  forward plus backward, gradient with respect to `x0`. With 16 elements the arithmetic is
  negligible, so this measures what each library spends per op on dispatch and graph bookkeeping.
  Contenders: dagrad eager (`dg.tensor` + `backward`), PyTorch eager (`torch.tensor(...,
  dtype=float64, requires_grad=True)` + `backward`, one thread), HIPS autograd (`autograd.grad` of
  the same function in `autograd.numpy`), hand-written NumPy (forward saves what the backward
  needs, backward applies the chain rule by hand): the floor, and dagrad compiled
  (`dg.compile(dg.grad(chain_sum))`, see (d)). Time per op is total time / 1000.
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
- **(d) compiled code.** `dg.compile` traces a function once per input signature, optimises the
  graph and generates Python/NumPy source; the first call pays for that, later calls run the
  generated function. All timings below are of later calls, except the compile times.
  - *Per-op overhead*: `dg.compile(dg.grad(chain_sum))`, with `chain_sum` the 1,000-op chain of (a)
    followed by `sum`, is the "dagrad compiled" contender of (a), in the same interleaved rounds,
    so its µs/op and its ratios to the NumPy floor and to PyTorch come from the same run.
  - *MLP training step*: digits-shaped synthetic data from a fixed seed: 1797 x 64 float64 inputs
    (the 17 grey levels of 8 x 8 images, scaled to [0, 1]) and 10 classes as one-hot rows. The
    digits data set itself ships with a later issue; the timings do not depend on the values. The
    network is 64-128-128-10 with tanh, the loss the mean softmax cross-entropy
    `-sum(onehot * log_softmax(logits, axis=1)) / n`, float64, and one step is forward, backward and
    the SGD update (lr 0.1) in one function `step(params, x, onehot) -> (new_params, loss)`, params
    a tuple of the six weights and biases. Contenders: hand-written NumPy forward, backward (by
    the chain rule, using softmax - onehot for the loss) and update, the floor; `dg.compile(step)`
    with `step` built on `dg.value_and_grad`; the same `step` eagerly; PyTorch eager
    (`torch.autograd.grad`, update under `no_grad`, one thread); the same `step` on
    `jax.value_and_grad`, under `jax.jit` and eagerly (inputs already JAX arrays, timed up to
    `block_until_ready`). Full batch (1797 rows) and batch 64 (the first 64 rows). The same
    parameters go in on every call, so every call does the same work. Every contender's loss and
    new parameters are checked against NumPy's (`allclose`, rtol {mlp_rtol:g}, atol {mlp_atol:g})
    at both batch sizes first.
  - *Hessian*: `f(x) = sum(tanh(A @ x) ** 2)` with n = 50, `A` a fixed random 50 x 50 matrix
    (scaled by 1/sqrt(50)): the full Hessian by `dg.compile(dg.hessian(f))`, eager `dg.hessian(f)`,
    `torch.func.hessian(f)` (eager, one thread) and `jax.jit(jax.hessian(f))`. All are checked
    against the closed form `2 A^T diag((1 - t^2)(1 - 3 t^2)) A`, `t = tanh(A x)`, first.
  - *Compile time*: the first call of a fresh `dg.compile` (trace + optimise + codegen, plus one
    run of the generated code) of the pattern of (a) repeated to {compile_ops:,} elementwise ops on
    a 16-element vector (a {compile_nodes:,}-node graph with its placeholder), and of the gradient
    of that chain's sum; median of a few fresh compiles, with a full collection before each.
    "Later calls" is the median of 5 calls of the compiled function afterwards.
  - *Peak memory*: the tracemalloc peak during one full-batch training step, after warm-up (and
    compilation), minus what was allocated when the step began, median of 3 (NumPy reports its
    array buffers to tracemalloc; Python objects, such as eager mode's graph nodes, count too).
    The new parameters and the loss the step returns are included in the peak (and shown apart).
- **(e) training with `dg.nn` and `dg.optim`.**
  - *MLP training step*: the real digits (`dagrad.data.load_digits`, 1797 x 8 x 8 scaled to
    [0, 1], flattened to 64), a 64-128-128-10 tanh network, mean softmax cross-entropy, SGD with
    lr 0.1, in float64 and float32, on the first 1797 (full batch) or 64 rows. Each contender owns
    its parameters and trains them: every timed call is one real step (zero_grad, forward, loss,
    backward, update). dagrad eager the idiomatic way: `nn.Sequential(Linear, Tanh, Linear, Tanh,
    Linear)`, `nn.functional.cross_entropy(logits, labels)`, `loss.backward()`,
    `optim.SGD.step()`, `zero_grad()`; PyTorch the same with `torch.nn` and `torch.optim.SGD`
    (one thread); hand-written NumPy: the step of (d) (forward, backward by hand, update), the
    floor; HIPS autograd: `autograd.value_and_grad` of the functional loss (`logsumexp`), update
    by rebinding; mygrad: `mygrad.tanh`, `matmul`, `nnet.losses.softmax_crossentropy`,
    `backward`, `p.data -= lr * p.grad`; JAX: `jax.value_and_grad` of the functional loss, eagerly
    and under `jax.jit` (timed up to `block_until_ready`). All start from the same initial weights
    (uniform ±1/sqrt(fan_in), seed 5); before timing, one step of each is checked against NumPy's:
    loss and all six updated parameters (and their dtype) `allclose` with rtol/atol 1e-7/1e-10 in
    float64 and 2e-3/2e-5 in float32. Every (dtype, batch) gets fresh contenders; same interleaved
    rounds as (a).
  - *Scalar MLP*: micrograd's demo network `MLP(2, [16, 16, 1])` (ReLU hidden layers, linear
    output: micrograd 0.1.0's `Value` has no tanh), its loss (mean SVM max-margin loss
    `relu(1 - y * score)` over the points, plus 1e-4 times the sum of squared parameters), and
    one full-batch SGD step (lr 0.1) over 100 two-moons points (generated with NumPy, noise 0.1,
    seed 0; labels ±1). micrograd runs its own `MLP` and `Value`; dagrad and PyTorch run the same
    code on 0-d tensors (each weight a 0-d tensor requiring a gradient, each neuron
    `sum((wi * xi for wi, xi in zip(w, x)), b)`), with the update `p -= lr * p.grad` in place. All
    start from the same weights (seed 6) and must agree on the loss of the first two steps (rtol
    1e-10). {scalar_rounds} interleaved round(s) of {scalar_inner} timed call(s) each, after one warm-up round.
  - *Memory*: a fresh subprocess trains the nn/optim MLP (batch 64, float64, cycling through the
    28 batches of the digits) with tracemalloc on, recording VmRSS and tracemalloc's current
    memory after the marked steps; dagrad and PyTorch (whose tensor buffers tracemalloc does not
    see: only RSS counts for it). "Flat" means growth from step 100 to step 1,000 below 1 MB of RSS
    and 0.1 MB of traced memory. The full run goes on to step 3,000 to show that what grows at
    first (Python's free lists and caches filling) stops growing.
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer repeats, 100k-op deep chain")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"), help="markdown report path")
    parser.add_argument("--child", nargs=2, metavar=("LIB", "N_OPS"), help=argparse.SUPPRESS)
    parser.add_argument("--train-child", nargs=2, metavar=("LIB", "STEPS"), help=argparse.SUPPRESS)
    parser.add_argument("--cache-child", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child[0], int(args.child[1]))
    if args.train_child:
        return train_child(args.train_child[0], int(args.train_child[1]))
    if args.cache_child:
        return cache_child(args.cache_child[0], int(args.cache_child[1]))

    mode = "quick" if args.quick else "full"
    repeats, warmup, rounds = (5, 1, 1) if args.quick else (30, 3, 5)
    n_ops = DEEP_OPS[mode]
    command = " ".join(["python", "benchmarks/run.py", *sys.argv[1:]])

    print(f"(a) per-op overhead: {warmup} warm-up + {repeats} interleaved rounds ...", file=sys.stderr)
    overhead_times = bench_overhead(repeats, warmup)
    table_a = overhead_table(overhead_times)
    print("(c) static graphs ...", file=sys.stderr)
    table_c = static_table(bench_static(repeats, warmup))
    print("(d) compiled code: MLP step, Hessian, compile time, memory ...", file=sys.stderr)
    mlp_times, jax_note = bench_mlp(repeats, warmup)
    hessian_times = bench_hessian(repeats, warmup)
    compile_times = bench_compile_time(mode)
    memory = bench_mlp_memory()
    table_mlp = mlp_table(mlp_times, jax_note)
    table_hessian = hessian_table(hessian_times)
    table_compile = compile_table(compile_times)
    table_memory = memory_table(memory)
    print("(e) training: nn/optim MLP step, scalar MLP, memory over 1,000 steps ...", file=sys.stderr)
    train_times = bench_train(*((2, 0) if mode == "quick" else (repeats, warmup)))
    scalar_rounds, scalar_inner = SCALAR_ROUNDS[mode]
    scalar_times, _ = bench_scalar(scalar_rounds, 1, scalar_inner)
    train_memory = bench_train_memory(mode)
    table_train = train_table(train_times)
    table_scalar = scalar_table(scalar_times)
    table_train_memory = train_memory_table(train_memory)
    table_targets = targets_table(overhead_times, mlp_times, hessian_times, compile_times, memory)
    table_targets_7 = targets_table_training(train_times, scalar_times, train_memory)
    print("(g) transforms: per-example gradients, scan, checkpoint ...", file=sys.stderr)
    table_g = bench_transforms.tables(
        bench_transforms.bench_per_example(run_interleaved, load_jax, repeats, warmup),
        bench_transforms.bench_scan(run_interleaved, repeats, warmup),
        bench_transforms.bench_checkpoint(),
        hessian_times,
        median,
        iqr,
    )
    print("(f) long loops over input shapes: Session and dg.compile caches ...", file=sys.stderr)
    table_f = cache_memory_table(bench_cache_memory(mode))
    table_h = bench_dask.tables(mode, median)
    print("(i) layers and data loading: CNN with BatchNorm2d, DataLoader ...", file=sys.stderr)
    table_i = bench_nn_layers.tables(bench_nn_layers.bench_cnn(run_interleaved, repeats, warmup),
                                     bench_nn_layers.bench_loader(run_interleaved, repeats, warmup), median, iqr)
    print("(j) sequence layers: LSTM and TransformerEncoderLayer training steps ...", file=sys.stderr)
    print("(k) what a recorded node copies ...", file=sys.stderr)
    table_k = bench_saved.tables(run_interleaved, mode, median)
    table_j = bench_nn.tables(bench_nn.bench_sequence(run_interleaved, 2 if mode == "quick" else 10, 1), median, iqr)
    print(f"(b) deep chain: {rounds} rounds of {n_ops:,} ops in subprocesses ...", file=sys.stderr)
    table_b = deep_tables(bench_deep(n_ops, rounds), n_ops)

    tables = (
        f"### (a) per-op overhead, 1,000 ops on 16 float64\n\n{table_a}\n\n### (b) deep chain\n\n{table_b}\n\n"
        f"### (c) static graphs: a Session against eager mode\n\n{table_c}\n\n"
        "### (d) compiled code (`dg.compile`)\n\n"
        'The per-op overhead of `dg.compile(dg.grad(chain_sum))` is the "dagrad compiled" row of (a).\n\n'
        f"#### MLP training step, 64-128-128-10 tanh, float64\n\n{table_mlp}\n\n"
        f"#### Hessian of sum(tanh(A @ x) ** 2), n = {HESSIAN_N}\n\n{table_hessian}\n\n"
        f"#### Compile time\n\n{table_compile}\n\n"
        f"#### Peak memory of one training step\n\n{table_memory}\n\n"
        f"#### Targets of the issue, from this run\n\n{table_targets}\n\n"
        "### (e) training: `dg.nn` + `dg.optim` in eager mode\n\n"
        f"#### MLP training step, digits, 64-128-128-10 tanh, SGD lr {TRAIN['lr']}\n\n{table_train}\n\n"
        f"#### Scalar MLP (micrograd's demo), 2-16-16-1 on {SCALAR['n']} two-moons points\n\n{table_scalar}\n\n"
        f"#### Memory over {MEMORY_STEPS:,} eager training steps, batch 64, float64\n\n{table_train_memory}\n\n"
        f"#### Targets of issue 7, from this run\n\n{table_targets_7}\n\n"
        "### (f) long loops over input shapes: bounded caches\n\n"
        "Compiled code is cached per input shape, 64 entries at most, each releasing its linecache entry "
        "when evicted; memory after the caches are full stays flat.\n\n"
        f"{table_f}\n\n"
        "### (g) transforms (issue 15): vmap, scan, checkpoint\n\n"
        f"{table_g}\n\n"
        "### (h) Dask arrays as values (issue 17)\n\n"
        f"{table_h}\n\n"
        "### (i) layers and data loading (issue 29)\n\n"
        f"{table_i}\n\n"
        "### (j) sequence layers (issue 29): LSTM and TransformerEncoderLayer against PyTorch\n\n"
        f"{table_j}\n\n"
        "### (k) what a recorded node copies (issue 24 item 8)\n\n"
        f"{table_k}\n"
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
            f"({mode} mode: (a), (c) and (d) {warmup} warm-up + {repeats} interleaved rounds; (b) {rounds} "
            f"round(s) of subprocesses; (d) compile times: median of {' and '.join(map(str, COMPILE_RUNS[mode]))} "
            "fresh compiles.) Methodology is in the docstring of `benchmarks/run.py`. Every contender runs on "
            "one thread (how: see Machine): the machine has 2 cores, and one thread each keeps the comparison "
            "fair between libraries whose thread pools would otherwise differ.",
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
            WORKLOADS.format(
                n_ops=n_ops,
                quarter=n_ops // 4,
                half=n_ops // 2,
                mlp_rtol=MLP_RTOL,
                mlp_atol=MLP_ATOL,
                compile_ops=COMPILE_OPS,
                compile_nodes=COMPILE_OPS + 1,
                scalar_rounds=SCALAR_ROUNDS[mode][0],
                scalar_inner=SCALAR_ROUNDS[mode][1],
            ),
        ]
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
