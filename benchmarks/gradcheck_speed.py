"""How long an order-2, both-modes gradient check takes: `dg.gradcheck` (random directions, the
default), `dg.check_grads` (JAX's signature) and HIPS autograd's `autograd.test_util.check_grads`,
on the same functions at the same points (issue 16, item 7: within 2x of autograd).

    PYTHONPATH=src python benchmarks/gradcheck_speed.py [repeats]

Each row is the median of `repeats` interleaved runs (one run of every checker in turn, so drift in
the machine's speed hits all alike). `dg.gradcheck(full=True)` (whole Jacobians, PyTorch's method)
is timed only on the small input: on the 10x11x7 one its order-2 forward check builds a 770x770
Jacobian of a function of 1540 inputs, column by column.
"""

from __future__ import annotations

import statistics
import sys
import time

import autograd.numpy as anp
import numpy as np
from autograd.test_util import check_grads as autograd_check_grads

import dagrad as dg

RNG = np.random.default_rng(0)
BIG = RNG.uniform(-1.5, 1.5, size=(10, 11, 7))
SMALL = RNG.uniform(-1.5, 1.5, size=(4, 3))
MAT = RNG.standard_normal((30, 20)) / 5
PARAMS = (RNG.standard_normal((16, 8)) / 4, np.zeros(8), RNG.standard_normal((8, 3)) / 3)
BATCH = RNG.standard_normal((32, 16))


def _mlp(np_, params):
    w1, b1, w2 = params
    h = np_.tanh(BATCH @ w1 + b1)
    z = h @ w2
    return np_.sum(z - np_.log(np_.sum(np_.exp(z), axis=1, keepdims=True)))


# name, x, dagrad function, autograd function (both of one argument: an array or a tuple of arrays)
FUNCTIONS = [
    ("tanh(x)*sin(x), 4x3", SMALL, lambda x: dg.tanh(x) * dg.sin(x), lambda x: anp.tanh(x) * anp.sin(x)),
    ("tanh(x)*sin(x), 10x11x7", BIG, lambda x: dg.tanh(x) * dg.sin(x), lambda x: anp.tanh(x) * anp.sin(x)),
    ("sum(exp(x)/sum), 10x11x7", BIG, lambda x: dg.exp(x) / dg.sum(dg.exp(x), axis=-1, keepdims=True),
     lambda x: anp.exp(x) / anp.sum(anp.exp(x), axis=-1, keepdims=True)),
    ("x @ x.T, 30x20", MAT, lambda x: x @ x.T, lambda x: anp.dot(x, x.T)),
    ("MLP log-softmax loss, 3 params", PARAMS, lambda p: _mlp(dg, p), lambda p: _mlp(anp, p)),
]


def _checkers(x, ours, theirs):
    # gradcheck(f, (x,)) is f(x) also when x is a tuple of parameters (a lone tuple is the arguments)
    checkers = {
        "dg.gradcheck": lambda: dg.gradcheck(ours, (x,), order=2, modes=("fwd", "rev")),
        "dg.gradcheck(directions=1)": lambda: dg.gradcheck(ours, (x,), order=2, modes=("fwd", "rev"), directions=1),
        "dg.check_grads": lambda: dg.check_grads(ours, (x,), order=2, modes=("fwd", "rev")),
        "autograd": lambda: autograd_check_grads(theirs, modes=["fwd", "rev"], order=2)(x),
    }
    if sum(np.size(leaf) for leaf in (x if isinstance(x, tuple) else (x,))) <= 100:
        checkers["dg.gradcheck(full=True)"] = lambda: dg.gradcheck(ours, (x,), order=2, modes=("fwd", "rev"),
                                                                   full=True)
    return checkers


def main(repeats=7):
    columns = ["dg.gradcheck", "dg.gradcheck(directions=1)", "dg.check_grads", "dg.gradcheck(full=True)", "autograd"]
    print(f"order-2 check in both modes, median of {repeats} (ms); ratio = dg.gradcheck / autograd")
    print(f"{'function':32}" + "".join(f"{c:>28}" for c in columns) + f"{'ratio':>8}")
    for name, x, ours, theirs in FUNCTIONS:
        checkers = _checkers(x, ours, theirs)
        times = {key: [] for key in checkers}
        for check in checkers.values():  # warm up (and fail loudly before timing)
            check()
        for _ in range(repeats):
            for key, check in checkers.items():
                start = time.perf_counter()
                check()
                times[key].append(time.perf_counter() - start)
        median = {key: statistics.median(t) * 1e3 for key, t in times.items()}
        cells = "".join(f"{median[c]:28.2f}" if c in median else f"{'-':>28}" for c in columns)
        print(f"{name:32}{cells}{median['dg.gradcheck'] / median['autograd']:8.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
