"""Threads: independent eager, compiled and Session work in 8 threads gives exactly the results
of the same work done alone (grad mode, default graphs and caches are per thread or locked)."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F

THREADS = 8
STEPS = 30


def _eager_training(seed):
    """A few SGD steps of a small model in eager mode; returns the losses."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((16, 5)), rng.integers(0, 3, 16)
    w = dg.tensor(rng.standard_normal((5, 3)) * 0.1, requires_grad=True)
    b = dg.tensor(np.zeros(3), requires_grad=True)
    opt = dg.optim.SGD([w, b], lr=0.5)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(dg.tensor(x) @ w + b, y)
        if seed % 2:  # half of the threads also switch grad mode on and off
            with dg.no_grad():
                assert not dg.is_grad_enabled()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _loss(w, x):
    return dg.sum(dg.tanh(x @ w) ** 2)


_SHARED = dg.compile(dg.grad(_loss))  # one compiled function called from every thread, many shapes


def _compiled(seed):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(STEPS):
        n = 1 + (seed + k) % 7  # shapes shared with other threads, so cache entries are raced for
        w, x = rng.standard_normal((4, 2)), rng.standard_normal((n, 4))
        out.append(_SHARED(w, x))
    return out


def _session(seed):
    rng = np.random.default_rng(seed)
    with dg.Graph() as g:  # each thread its own graph (the default graph is per thread)
        x = dg.placeholder((None, 3), name="x")
        w = dg.Variable(np.ones(3), name="w")
        loss = dg.mean((x @ w - 1.0) ** 2)
        (gw,) = dg.gradients(loss, [w])
        step = w.assign(w - 0.1 * gw)
    sess = dg.Session(g)
    out = []
    for k in range(STEPS):
        out.append(sess.run([loss, step], {x: rng.standard_normal((1 + k % 5, 3))})[0])
    return out


def _all(seed):
    return _eager_training(seed), _compiled(seed), _session(seed)


@pytest.fixture
def tiny_switch_interval():
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    yield
    sys.setswitchinterval(previous)


def test_threads_give_exactly_the_results_of_the_same_work_alone(tiny_switch_interval):
    expected = [_all(seed) for seed in range(THREADS)]
    results = [None] * THREADS
    errors = []

    def work(seed):
        try:
            results[seed] = _all(seed)
        except BaseException as err:  # reported below, with the thread's seed
            errors.append((seed, err))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for seed in range(THREADS):
        eager, compiled, session = results[seed]
        assert eager == expected[seed][0]
        for got, want in zip(compiled, expected[seed][1]):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(session, expected[seed][2])
