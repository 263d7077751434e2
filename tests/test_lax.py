"""dagrad.lax: jax.lax's control-flow names (switch and map built on cond and scan)."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
from dagrad import lax

BRANCHES = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]


def test_switch_clamps_its_index_eagerly_compiled_and_mapped():
    x = np.array([2.0, -1.0])
    compiled = dg.compile(lambda i, x: lax.switch(i, BRANCHES, x))
    for i in (-3, 0, 1, 2, 7):
        want = BRANCHES[min(max(i, 0), 2)](x)
        assert np.array_equal(lax.switch(i, BRANCHES, x), want)
        assert np.array_equal(compiled(np.int64(i), x), want)
    mapped = dg.vmap(lambda i, v: lax.switch(i, BRANCHES, v))(np.array([0, 1, 2]), np.ones((3, 2)))
    assert np.array_equal(mapped, [[2.0, 2.0], [10.0, 10.0], [-1.0, -1.0]])
    g = dg.grad(lambda v: lax.switch(np.int64(1), BRANCHES, v).sum())(x)
    assert np.array_equal(g, [10.0, 10.0])


def test_map_is_a_scan_over_the_first_axis():
    xs = np.arange(6.0).reshape(3, 2)
    assert np.array_equal(lax.map(lambda v: v.sum(), xs), xs.sum(axis=1))
    fast = dg.compile(lambda xs: lax.map(dg.sin, xs))
    assert np.array_equal(fast(xs), np.sin(xs)) and "for " in fast.source(xs)
    assert np.array_equal(dg.grad(lambda v: lax.map(lambda r: r ** 2, v).sum())(xs), 2 * xs)


def test_names_and_bad_input():
    assert lax.scan is dg.scan and lax.cond is dg.cond and dg.remat is dg.checkpoint
    assert np.array_equal(lax.select(np.array([True, False]), np.ones(2), np.zeros(2)), [1.0, 0.0])
    with pytest.raises(TypeError, match=r"lax.switch: branches must be a non-empty sequence.*test_lax\.py"):
        lax.switch(0, [], np.ones(1))
    with pytest.raises(TypeError, match=r"lax.map: f must be a function.*test_lax\.py"):
        lax.map(3, np.ones(2))
