"""A gradient over an array larger than the memory this process may use.

The data (float64, `--gigabytes` of it) is a Dask array made chunk by chunk (`--chunk-mb` each) from a
seed, so it never exists whole: not on disk, not in memory. dagrad's gradient of a logistic-regression
loss over it, with NumPy parameters, is a Dask graph: each chunk is generated, used for the forward
(X @ w) and for its part of the gradient (X.T @ ct), and freed; the partial gradients are summed by a
tree reduction. The same gradient is then computed in pieces with NumPy alone (one chunk at a time)
and compared, and the peak resident memory of this process is checked against `--max-rss-mb`.

    python examples/out_of_core.py                         # 4 GB of data, peak RSS below 1 GB
    python examples/out_of_core.py --gigabytes 0.25        # a quick run
    python examples/out_of_core.py --scheduler tcp://...   # on a dask.distributed cluster

Needs the optional extra `dagrad[dask]`. The loss is dask-glm's logistic log-likelihood (the
anchor of the overhead figure in docs/benchmarks.md); the gradient is dagrad's, not written by hand.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

import dagrad as dg

FEATURES = 16
SEED = 2026


def truth(features=FEATURES):
    """The weights the labels are drawn from."""
    return np.linspace(-1.0, 1.0, features)


def make_block(index, rows, features=FEATURES, seed=SEED):
    """Chunk `index` of the data: `rows` x `features` inputs and their 0/1 labels, a pure function of
    (seed, index), so Dask can make any chunk anywhere and NumPy can make the same one again."""
    rng = np.random.default_rng([seed, index])
    x = rng.standard_normal((rows, features))
    noise = rng.standard_normal(rows)
    y = (x @ truth(features) + 0.5 * noise > 0).astype(np.float64)
    return x, y


def block_rows(gigabytes, chunk_mb, features=FEATURES):
    """The rows of every chunk: chunks of `chunk_mb` MB (the last one shorter) adding up to `gigabytes`."""
    total = int(gigabytes * 2**30) // (8 * features)
    per_chunk = max(1, int(chunk_mb * 2**20) // (8 * features))
    sizes = [per_chunk] * (total // per_chunk)
    if total % per_chunk:
        sizes.append(total % per_chunk)
    return sizes


def make_data(gigabytes, chunk_mb=64, features=FEATURES, seed=SEED):
    """(x, y) as Dask arrays of the sizes `block_rows` gives, every chunk made lazily by `make_block`."""
    import dask
    import dask.array as da

    xs, ys = [], []
    for index, rows in enumerate(block_rows(gigabytes, chunk_mb, features)):
        pair = dask.delayed(make_block, nout=2, pure=True)(index, rows, features, seed)
        xs.append(da.from_delayed(pair[0], (rows, features), np.float64))
        ys.append(da.from_delayed(pair[1], (rows,), np.float64))
    return da.concatenate(xs), da.concatenate(ys)


def loss(w, x, y):
    """dask-glm's logistic negative log-likelihood, summed: sum(z + log1p(exp(-z))) - y . z, z = x @ w."""
    z = x @ w
    return dg.sum(z + dg.log1p(dg.exp(-z))) - dg.dot(y, z)


def gradient_in_pieces(w, gigabytes, chunk_mb=64, features=FEATURES, seed=SEED):
    """The same loss and gradient with NumPy alone, one chunk at a time (the reference)."""
    value, grad = 0.0, np.zeros_like(w)
    for index, rows in enumerate(block_rows(gigabytes, chunk_mb, features)):
        x, y = make_block(index, rows, features, seed)
        z = x @ w
        value += float(np.sum(z + np.log1p(np.exp(-z))) - y @ z)
        grad += x.T @ (1.0 / (1.0 + np.exp(-z)) - y)
    return value, grad


def peak_rss_mb():
    """This process's peak resident memory so far, in MB (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gigabytes", type=float, default=4.0, help="size of the data (default 4)")
    parser.add_argument("--chunk-mb", type=float, default=64.0, help="size of a chunk (default 64)")
    parser.add_argument("--max-rss-mb", type=float, default=1024.0, help="the memory allowed (default 1024)")
    parser.add_argument("--scheduler", default="threads", help="'threads', 'synchronous', or a cluster's address")
    parser.add_argument("--no-check", action="store_true", help="skip the NumPy reference computed in pieces")
    args = parser.parse_args(argv)
    import dask

    client = None
    if "://" in args.scheduler:
        from dask.distributed import Client

        client = Client(args.scheduler)
        scheduler = {}
    else:
        scheduler = {"scheduler": args.scheduler}
    try:
        x, y = make_data(args.gigabytes, args.chunk_mb)
        w = 0.1 * truth()
        start = time.perf_counter()
        value, grad = dg.value_and_grad(loss)(w, x, y)  # lazy: a Dask graph, nothing computed yet
        value, grad = dask.compute(value, grad, **scheduler)  # one pass over the chunks
        seconds = time.perf_counter() - start
    finally:
        if client is not None:
            client.close()
    rss = peak_rss_mb()
    print(f"data: {x.nbytes / 2**30:.2f} GB float64 in {x.numblocks[0]} chunks of {args.chunk_mb:g} MB")
    print(f"loss {float(value):.6f}, |gradient| {np.linalg.norm(grad):.6f}, {seconds:.1f} s")
    print(f"peak RSS of this process: {rss:.0f} MB (allowed: {args.max_rss_mb:.0f} MB)")
    ok = rss < args.max_rss_mb or client is not None  # on a cluster the workers hold the chunks
    if not args.no_check:
        ref_value, ref_grad = gradient_in_pieces(w, args.gigabytes, args.chunk_mb)
        same = np.allclose(grad, ref_grad, rtol=1e-10, atol=0) and np.isclose(value, ref_value, rtol=1e-10)
        print(f"equals NumPy's, computed in pieces: {same} (largest relative difference "
              f"{np.max(np.abs(grad - ref_grad) / np.abs(ref_grad)):.1e})")
        ok = ok and same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
