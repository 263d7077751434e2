"""Workload (h) of the benchmark suite (issue 17): gradients over Dask arrays.

Called by run.py (which passes its own helpers), or alone: ``python benchmarks/bench_dask.py [--quick]``
prints the tables. Needs the [dask] extra; without it the tables say so.

The data is examples/out_of_core.py's: float64 inputs with 16 features and 0/1 labels, made chunk by
chunk (64 MB each) from a seed, never whole. The loss is dask-glm's logistic log-likelihood; the
parameters are NumPy arrays.

  * out of core: dagrad's gradient over 4 GB (64 chunks), Dask's threaded scheduler (2 threads), in a
    fresh subprocess: time, peak RSS (VmHWM) and whether it equals NumPy's gradient over the same data
    computed one chunk at a time.
  * overhead against hand-written Dask: ``dg.value_and_grad(loss)``, eager and under ``dg.compile``,
    against the same loss and gradient written by hand with ``dask.array`` as dask-glm writes them
    (``X.T.dot(sigmoid(X.dot(beta)) - y)``), all computed by one ``dask.compute`` with the same scheduler
    and chunks, interleaved rounds; on 1 GB held in memory (``persist``: the graph's own cost) and on the
    4 GB made chunk by chunk.
  * scaling: the 4 GB gradient on a ``dask.distributed.LocalCluster`` of 1 and of 2 worker processes
    (1 thread each), interleaved; only the parameters and the partial gradients travel.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DASK = {"gigabytes": 4.0, "chunk_mb": 64.0, "in_memory_gigabytes": 1.0, "max_rss_mb": 1024.0}
ROUNDS = {"full": (3, 5, 2), "quick": (1, 2, 1)}  # generated-data rounds, in-memory rounds, cluster rounds


def _example():
    """examples/out_of_core.py, imported by name from a path worker processes inherit (multiprocessing
    hands them sys.path), so they can load its chunk maker as a user's cluster imports the user's code."""
    if str(ROOT / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "examples"))
    return importlib.import_module("out_of_core")


def _hand_written(w, x, y):
    """dask-glm's Logistic family: loglike and gradient written by hand with dask.array."""
    z = x.dot(w)
    value = (z + np.log1p(np.exp(-z))).sum() - y.dot(z)
    return value, x.T.dot(1 / (1 + np.exp(-z)) - y)


def _status_mb(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(gigabytes, chunk_mb):
    """In a fresh process: dagrad's gradient over the data, its time, peak RSS and the check in pieces."""
    import dask

    import dagrad as dg

    example = _example()
    x, y = example.make_data(gigabytes, chunk_mb)
    w = 0.1 * example.truth()
    before = _status_mb("VmRSS")
    start = time.perf_counter()
    value, grad = dask.compute(*dg.value_and_grad(example.loss)(w, x, y), scheduler="threads", num_workers=2)
    seconds = time.perf_counter() - start
    peak = _status_mb("VmHWM")
    ref_value, ref_grad = example.gradient_in_pieces(w, gigabytes, chunk_mb)
    error = float(np.max(np.abs(grad - ref_grad) / np.abs(ref_grad)))
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "start_mb": before, "chunks": x.numblocks[0],
                      "rel_error": error, "value_error": abs(value - ref_value) / abs(ref_value)}))


def bench_out_of_core():
    cmd = [sys.executable, str(Path(__file__)), "--child", str(DASK["gigabytes"]), str(DASK["chunk_mb"])]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _interleaved(contenders, rounds):
    """name -> seconds per call, each contender once per round, in an order that rotates."""
    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            start = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - start)
    return times


def bench_overhead(mode):
    import dask

    import dagrad as dg

    example = _example()
    generated_rounds, memory_rounds, _ = ROUNDS[mode]
    w = 0.1 * example.truth()
    results = {}
    for label, gigabytes, rounds, persist in (
        ("in memory", DASK["in_memory_gigabytes"], memory_rounds, True),
        ("made chunk by chunk", DASK["gigabytes"], generated_rounds, False),
    ):
        x, y = example.make_data(gigabytes, DASK["chunk_mb"])
        if persist:
            x, y = dask.persist(x, y, scheduler="threads")
        run = {"scheduler": "threads", "num_workers": 2}
        compiled = dg.compile(dg.value_and_grad(example.loss))
        hand_value, hand_grad = dask.compute(*_hand_written(w, x, y), **run)
        for ours in (dg.value_and_grad(example.loss), compiled):  # the same gradient before any timing
            dg_value, dg_grad = dask.compute(*ours(w, x, y), **run)
            np.testing.assert_allclose(dg_grad, hand_grad, rtol=1e-10)
            np.testing.assert_allclose(dg_value, hand_value, rtol=1e-10)
        times = _interleaved({
            "dagrad": lambda x=x, y=y: dask.compute(*dg.value_and_grad(example.loss)(w, x, y), **run),
            "dagrad compiled": lambda x=x, y=y: dask.compute(*compiled(w, x, y), **run),
            "hand-written dask.array": lambda x=x, y=y: dask.compute(*_hand_written(w, x, y), **run),
        }, rounds)
        results[label] = (gigabytes, x.numblocks[0], times)
    return results


def bench_scaling(mode):
    from dask.distributed import Client, LocalCluster

    import dagrad as dg

    example = _example()
    w = 0.1 * example.truth()
    rounds = ROUNDS[mode][2]
    clusters = {n: LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                memory_limit="4GiB") for n in (1, 2)}
    clients = {n: Client(cluster) for n, cluster in clusters.items()}
    try:
        def run(n):
            x, y = example.make_data(DASK["gigabytes"], DASK["chunk_mb"])
            return clients[n].compute(list(dg.value_and_grad(example.loss)(w, x, y)), sync=True)

        grads = {n: run(n)[1] for n in (1, 2)}
        np.testing.assert_allclose(grads[1], grads[2], rtol=1e-10)
        return _interleaved({f"{n} worker{'s' if n > 1 else ''}": (lambda n=n: run(n)) for n in (1, 2)}, rounds)
    finally:
        for client in clients.values():
            client.close()
        for cluster in clusters.values():
            cluster.close()


def tables(mode, median):
    try:
        import dask  # noqa: F401
        import dask.array  # noqa: F401
    except ImportError:
        return "(skipped: Dask is not installed; `pip install 'dagrad[dask]'`)"
    print("(h) Dask: out of core ...", file=sys.stderr)
    core = bench_out_of_core()
    print("(h) Dask: against hand-written dask.array ...", file=sys.stderr)
    overhead = bench_overhead(mode)
    try:
        import distributed  # noqa: F401

        print("(h) Dask: LocalCluster of 1 and 2 workers ...", file=sys.stderr)
        scaling = bench_scaling(mode)
    except ImportError:
        scaling = None
    gb, mb = DASK["gigabytes"], DASK["chunk_mb"]
    within = core["peak_mb"] < DASK["max_rss_mb"] and core["rel_error"] < 1e-10
    rows = [
        f"#### Out of core: the gradient over {gb:g} GB ({core['chunks']} chunks of {mb:g} MB), threads scheduler",
        "",
        "| figure | value | target |",
        "|---|---|---|",
        f"| time (dg.value_and_grad + one dask.compute) | {core['seconds']:.1f} s | |",
        f"| peak RSS (VmHWM) of the process | {core['peak_mb']:.0f} MB (after imports: {core['start_mb']:.0f} MB) "
        f"| < {DASK['max_rss_mb']:.0f} MB |",
        f"| largest relative difference from NumPy's gradient computed in pieces | {core['rel_error']:.1e} "
        f"(loss: {core['value_error']:.1e}) | equal to rounding |",
        f"| met | {'yes' if within else 'NO'} | |",
        "",
        "#### Overhead against hand-written Dask (dask-glm's logistic gradient), same scheduler and chunks",
        "",
        "| data | rounds | dagrad eager (s) | dagrad compiled (s) | hand-written (s) | eager / hand-written "
        "(target <= 1.2) | compiled / hand-written |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, (gigabytes, chunks, times) in overhead.items():
        ours, built, theirs = (median(times[k]) for k in ("dagrad", "dagrad compiled", "hand-written dask.array"))
        rows.append(f"| {gigabytes:g} GB {label}, {chunks} chunks | {len(times['dagrad'])} | {ours:.2f} | "
                    f"{built:.2f} | {theirs:.2f} | {ours / theirs:.2f} | {built / theirs:.2f} |")
    rows.append("")
    if scaling is None:
        rows.append("(LocalCluster rows skipped: dask.distributed is not installed)")
    else:
        one, two = median(scaling["1 worker"]), median(scaling["2 workers"])
        rows += [
            f"#### Scaling: the {gb:g} GB gradient on a LocalCluster (worker processes, 1 thread each, "
            f"{os.cpu_count()} cores)",
            "",
            "| workers | rounds | time (s) | speed-up |",
            "|---|---|---|---|",
            f"| 1 | {len(scaling['1 worker'])} | {one:.1f} | 1.00 |",
            f"| 2 | {len(scaling['2 workers'])} | {two:.1f} | {one / two:.2f} |",
        ]
    return "\n".join(rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(float(sys.argv[2]), float(sys.argv[3]))
    else:
        import statistics

        print(tables("quick" if "--quick" in sys.argv else "full", statistics.median))
