"""Workload (i) of the benchmark suite (issue 29): convolutional layers and data loading, against PyTorch.

Called by run.py, which sets the thread limits first and passes its own timing helpers; also runs alone
(`python benchmarks/bench_nn_layers.py [--quick]`), printing its tables.

  * the digits CNN with BatchNorm2d: Conv2d(1, 16, 3, padding 1), BatchNorm2d, ReLU, MaxPool2d(2),
    Conv2d(16, 32, 3, padding 1), BatchNorm2d, ReLU, MaxPool2d(2), Flatten, Linear(128, 64), ReLU, Linear(64, 10);
    one training step (forward, cross-entropy, zero_grad, backward, SGD step) on a batch of 64 digits, float64 and
    float32, dagrad eager against PyTorch eager from the same weights (PyTorch's state_dict loaded as it is). The
    losses and every gradient of a first step are checked to agree before anything is timed.
  * DataLoader: one pass over the 1,797 digits (1, 8, 8) and their labels in batches of 64, shuffled and in order,
    dagrad's DataLoader over a TensorDataset of NumPy arrays against PyTorch's (num_workers=0) over tensors of the
    same values, and the floor: a permutation and one fancy index per array and batch, written by hand. Reported
    per batch; the in-order batches are checked to be the same arrays.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __name__ == "__main__":  # alone: one thread for every contender, before NumPy loads its BLAS
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

CNN = {"batch": 64, "lr": 0.01}
LOADER = {"batch": 64}


def _cnn(m):
    """The digits CNN with BatchNorm2d, from dg.nn or torch.nn (the same layers, the same state_dict keys)."""
    return m.Sequential(
        m.Conv2d(1, 16, 3, padding=1), m.BatchNorm2d(16), m.ReLU(), m.MaxPool2d(2),
        m.Conv2d(16, 32, 3, padding=1), m.BatchNorm2d(32), m.ReLU(), m.MaxPool2d(2),
        m.Flatten(), m.Linear(128, 64), m.ReLU(), m.Linear(64, 10),
    )


def _digits():
    from dagrad.data import load_digits

    images, labels = load_digits()
    return images.reshape(-1, 1, 8, 8), labels


def _cnn_steps(dtype):
    """(dagrad step, PyTorch step) from the same weights, checked to agree on a first step."""
    import torch

    import dagrad as dg
    import dagrad.nn.functional as F

    torch.set_num_threads(1)
    images, labels = _digits()
    x, y = images[:CNN["batch"]].astype(dtype), labels[:CNN["batch"]]
    torch.manual_seed(0)
    theirs = _cnn(torch.nn).to(torch.float64 if dtype == np.float64 else torch.float32)
    ours = _cnn(dg.nn).to(dtype)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    opt_d = dg.optim.SGD(ours.parameters(), lr=CNN["lr"])
    opt_t = torch.optim.SGD(theirs.parameters(), lr=CNN["lr"])
    xt, yt = torch.tensor(x), torch.tensor(y)

    def ours_step():
        loss = F.cross_entropy(ours(dg.tensor(x)), y)
        opt_d.zero_grad()
        loss.backward()
        opt_d.step()
        return loss

    def theirs_step():
        loss = torch.nn.functional.cross_entropy(theirs(xt), yt)
        opt_t.zero_grad()
        loss.backward()
        opt_t.step()
        return loss

    tol = dict(rtol=1e-9, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-4, atol=1e-5)
    a, b = ours_step(), theirs_step()
    np.testing.assert_allclose(a.item(), b.item(), **tol, err_msg="CNN loss")
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[name].grad.numpy(), **tol, err_msg=f"CNN gradient {name}")
    return ours_step, theirs_step


def bench_cnn(run_interleaved, repeats, warmup):
    """µs per training step: {dtype name: {contender: [times]}}."""
    out = {}
    for dtype in (np.float64, np.float32):
        ours, theirs = _cnn_steps(dtype)
        out[np.dtype(dtype).name] = run_interleaved({"dagrad eager": (ours, 1), "PyTorch eager": (theirs, 1)},
                                                    repeats, warmup)
    return out


def _loaders(shuffle):
    """{contender: function making one pass}, and the number of batches of a pass."""
    import torch
    import torch.utils.data as tud

    from dagrad.utils.data import DataLoader, TensorDataset

    images, labels = _digits()
    size = LOADER["batch"]
    ours = DataLoader(TensorDataset(images, labels), batch_size=size, shuffle=shuffle,
                      generator=np.random.default_rng(0))
    theirs = tud.DataLoader(tud.TensorDataset(torch.tensor(images), torch.tensor(labels)), batch_size=size,
                            shuffle=shuffle, generator=torch.Generator().manual_seed(0), num_workers=0)
    rng = np.random.default_rng(0)

    def by_hand():
        order = rng.permutation(len(labels)) if shuffle else np.arange(len(labels))
        for start in range(0, len(labels), size):
            index = order[start:start + size]
            images[index], labels[index]

    def run(loader):
        def one_pass():
            for _ in loader:
                pass
        return one_pass

    if not shuffle:
        for (a, b), (c, d) in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, c.numpy())
            np.testing.assert_array_equal(b, d.numpy())
    contenders = {"dagrad DataLoader": run(ours), "PyTorch DataLoader": run(theirs), "NumPy by hand": by_hand}
    return contenders, len(ours)


def bench_loader(run_interleaved, repeats, warmup):
    """µs per batch: {"shuffled"/"in order": {contender: [times]}}."""
    out = {}
    for shuffle in (True, False):
        contenders, batches = _loaders(shuffle)
        out["shuffled" if shuffle else "in order"] = run_interleaved(
            {name: (fn, batches) for name, fn in contenders.items()}, repeats, warmup)
    return out


def tables(cnn, loader, median, iqr):
    """The markdown of workload (i) and its targets."""
    out, checks = [], []
    rows = ["| dtype | contender | µs/step (median) | IQR | × PyTorch |", "|---|---|---:|---:|---:|"]
    for dtype, times in cnn.items():
        ref = median(times["PyTorch eager"])
        for name, ts in times.items():
            lo, hi = iqr(ts)
            rows.append(f"| {dtype} | {name} | {median(ts):.0f} | {lo:.0f}–{hi:.0f} | {median(ts) / ref:.2f} |")
        checks.append((f"CNN with BatchNorm2d, training step ({dtype}): dagrad / PyTorch",
                       median(times["dagrad eager"]) / ref, "≤ 1.3", 1.3))
    out.append(f"#### Digits CNN with BatchNorm2d, one SGD training step, batch {CNN['batch']}\n\n" + "\n".join(rows))
    rows = ["| order | contender | µs/batch (median) | IQR | × PyTorch |", "|---|---|---:|---:|---:|"]
    for order, times in loader.items():
        ref = median(times["PyTorch DataLoader"])
        for name, ts in times.items():
            lo, hi = iqr(ts)
            rows.append(f"| {order} | {name} | {median(ts):.1f} | {lo:.1f}–{hi:.1f} | {median(ts) / ref:.3f} |")
        checks.append((f"DataLoader, {order}: dagrad / PyTorch per batch", median(times["dagrad DataLoader"]) / ref,
                       "≤ 1", 1.0))
    out.append(f"#### DataLoader: one pass over the digits (1797 x 1 x 8 x 8 and labels), batch {LOADER['batch']}, "
               f"num_workers=0\n\n" + "\n".join(rows))
    rows = ["| figure | measured | target | met |", "|---|---:|---:|---|"]
    for label, value, text, limit in checks:
        rows.append(f"| {label} | {value:.3f} | {text} | {'yes' if value <= limit else 'no'} |")
    out.append("#### Targets of issue 29 (layers and data), from this run\n\n" + "\n".join(rows))
    return "\n\n".join(out)


def main(argv=None):
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import iqr, median, run_interleaved

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args(argv)
    repeats, warmup = (5, 1) if args.quick else (30, 3)
    print(tables(bench_cnn(run_interleaved, repeats, warmup), bench_loader(run_interleaved, repeats, warmup), median,
                 iqr))


if __name__ == "__main__":
    main()
