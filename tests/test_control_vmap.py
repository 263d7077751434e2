"""vmap through control flow: dg.scan, dg.fori_loop, dg.cond and dg.while_loop, eagerly (Python loops
on mapped values) and as graph nodes (their batching rules), against a loop over the examples."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg

RNG = np.random.default_rng(7)
W = RNG.normal(size=(3, 3)) / 2
XS = RNG.normal(size=(4, 5, 3))  # 4 examples, 5 steps, 3 features
H0 = RNG.normal(size=(4, 3))


def rnn(h, xs, w=W):
    def cell(h, x):
        h = dg.tanh(h @ w + x)
        return h, h.sum()

    return dg.scan(cell, h, xs)


def loop(f, *args):
    """f over the examples (axis 0 of every argument), stacked as vmap stacks."""
    outs = [f(*[a[k] for a in args]) for k in range(len(args[0]))]
    leaves = [dg._core.pytree.tree_flatten(o)[0] for o in outs]
    tree = dg._core.pytree.tree_flatten(outs[0])[1]
    return dg._core.pytree.tree_unflatten(tree, [np.stack([np.asarray(x) for x in col]) for col in zip(*leaves)])


def same(a, b):
    for x, y in zip(dg._core.pytree.tree_flatten(a)[0], dg._core.pytree.tree_flatten(b)[0]):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_scan_with_mapped_carry_xs_or_weights(compiled):
    wrap = dg.compile if compiled else (lambda f: f)
    same(wrap(dg.vmap(rnn))(H0, XS), loop(rnn, H0, XS))
    same(wrap(dg.vmap(rnn, in_axes=(None, 0)))(H0[0], XS), loop(lambda xs: rnn(H0[0], xs), XS))
    ws = RNG.normal(size=(4, 3, 3)) / 2  # an ensemble: the weights the body closes over are mapped
    same(wrap(dg.vmap(lambda w: rnn(H0[0], XS[0], w)))(ws), loop(lambda w: rnn(H0[0], XS[0], w), ws))


def test_compiled_vmap_of_scan_is_one_loop_whatever_the_batch():
    sizes = []
    for batch in (2, 16):
        h0, xs = RNG.normal(size=(batch, 3)), RNG.normal(size=(batch, 5, 3))
        fast = dg.compile(dg.vmap(rnn))
        same(fast(h0, xs), loop(rnn, h0, xs))
        sizes.append(len(fast.graph(h0, xs).nodes))
        assert fast.source(h0, xs).count("for ") == 1
    assert sizes[0] == sizes[1]  # no copy of the scan per example


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_per_example_gradients_through_scan_and_fori_loop(compiled):
    wrap = dg.compile if compiled else (lambda f: f)

    def loss(w, h, xs):
        carry, ys = rnn(h, xs, w)
        return (carry ** 2).sum() + ys.sum()

    per_example = wrap(dg.vmap(dg.grad(loss), in_axes=(None, 0, 0)))(W, H0, XS)
    same(per_example, loop(lambda h, xs: dg.grad(loss)(W, h, xs), H0, XS))

    def power(x):
        return dg.fori_loop(0, 3, lambda i, v: dg.sin(v) * x + i, x).sum()

    xs = RNG.normal(size=(4, 2))
    same(wrap(dg.vmap(dg.grad(power)))(xs), loop(dg.grad(power), xs))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_cond_with_a_mapped_or_a_shared_predicate(compiled):
    wrap = dg.compile if compiled else (lambda f: f)

    def f(x):
        return dg.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: dg.sin(v), x)

    xs = np.array([[1.0, 2.0], [-3.0, 1.0], [0.5, -0.1]])
    same(wrap(dg.vmap(f))(xs), loop(f, xs))
    same(wrap(dg.vmap(dg.grad(lambda x: f(x).sum())))(xs), loop(dg.grad(lambda x: f(x).sum()), xs))

    def shared(flag, x):  # the predicate is the same for every example
        return dg.cond(flag > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)

    same(wrap(dg.vmap(shared, in_axes=(None, 0)))(np.float64(1.0), xs), xs * 2.0)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_while_loop_runs_until_every_example_is_done(compiled):
    wrap = dg.compile if compiled else (lambda f: f)

    def doubling(x):  # a different number of steps per example
        return dg.while_loop(lambda v: v.sum() < 10.0, lambda v: v * 2.0, x)

    xs = np.array([[1.0, 1.0], [4.0, 4.0], [20.0, 0.0]])
    same(wrap(dg.vmap(doubling))(xs), loop(doubling, xs))
    t = np.ones_like(xs)  # forward mode through the mapped loop
    same(wrap(dg.vmap(lambda x, t: dg.jvp(doubling, (x,), (t,))))(xs, t),
         loop(lambda x, t: dg.jvp(doubling, (x,), (t,)), xs, t))


def test_hessian_through_scan_uses_the_batching_rule():
    def loss(h):
        return (rnn(h, XS[0])[0] ** 2).sum()

    h = H0[0]
    compiled = dg.compile(dg.hessian(loss))
    same(compiled(h), dg.hessian(loss)(h))
    assert compiled.source(h).count("for ") <= 3  # the forward scan, its reverse, and the tangents' scans
