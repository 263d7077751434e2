"""Table-driven checks of every registered op: values, shape rules, derivatives, dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
from op_table import CASES, COMPOSITES

ALL = CASES + COMPOSITES
DIFFERENTIABLE = [c for c in ALL if c.differentiable]


def _ids(cases):
    return [str(c) for c in cases]


def _graph_nodes(root):
    """Every recorded node behind `root`, each once (iteratively)."""
    seen, stack, nodes = {}, [root], []
    while stack:
        t = stack.pop()
        if not isinstance(t, dg.Tensor) or t in seen:
            continue
        seen[t] = True
        if t.op is not None:
            nodes.append(t)
            stack.extend(t.inputs)
    return nodes


def test_every_registered_op_is_in_the_table():
    covered = {c.op for c in CASES}
    missing = [name for name in dg.REGISTRY if name not in covered]
    assert not missing, f"ops without test rows: {missing}"


@pytest.mark.parametrize("c", ALL, ids=_ids(ALL))
def test_values_match_numpy(c):
    xs = c.inputs()
    expected = c.ref(*xs)
    np.testing.assert_allclose(c.f(*xs), expected, rtol=1e-12, atol=1e-12)  # plain arrays in, arrays out
    out = c.f(*[dg.tensor(x) for x in xs])
    assert isinstance(out, dg.Tensor)
    assert out.shape == np.shape(expected)
    assert out.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_shape_rules_match_actual_shapes(c):
    out = c.f(*[dg.tensor(x, requires_grad=True) for x in c.inputs()])
    nodes = _graph_nodes(out)
    assert nodes, "the call recorded no node"
    for node in nodes:
        in_shapes = [np.shape(a.numpy() if isinstance(a, dg.Tensor) else a) for a in node.inputs]
        assert node.op.shape(*in_shapes, **(node.attrs or {})) == node.shape, node.op.name


NON_DIFFERENTIABLE = [c for c in CASES if not c.differentiable]


@pytest.mark.parametrize("c", NON_DIFFERENTIABLE, ids=_ids(NON_DIFFERENTIABLE))
def test_non_differentiable_ops_give_no_gradient(c):
    ts = [dg.tensor(x, requires_grad=True) for x in c.inputs()]
    out = c.f(*ts)
    assert not out.requires_grad
    op = dg.REGISTRY[c.op]
    assert op.shape(*[t.shape for t in ts], **c.attrs) == out.shape


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_first_and_second_derivatives_reverse_and_forward(c):
    # whole Jacobians, jacobian (rev) and jacfwd (fwd), against central differences, then the same
    # for each of those derivatives: rev-over-rev, fwd-over-rev, rev-over-fwd, fwd-over-fwd
    assert dg.gradcheck(c.f, *c.inputs(seed=1), order=2, eps=c.eps, full=True, **c.tol)
    # and gradcheck's default, random directions, passes every correct op with its default tolerances
    assert dg.gradcheck(c.f, *c.inputs(seed=1), order=2, eps=c.eps, **c.tol)


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_eager_backward_matches_vjp_transform(c):
    xs = c.inputs(seed=2)
    ts = [dg.tensor(x, requires_grad=True) for x in xs]
    out = c.f(*ts)
    cotangent = np.random.default_rng(3).standard_normal(out.shape)
    out.backward(cotangent)
    _, f_vjp = dg.vjp(c.f, *xs)
    for t, expected in zip(ts, f_vjp(cotangent)):
        got = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
        assert got.shape == t.shape


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_float32_stays_float32(c):
    xs = c.inputs(seed=4, dtype=np.float32)
    ts = [dg.tensor(x, requires_grad=True) for x in xs]
    out = c.f(*ts)
    assert out.dtype == np.float32, f"forward gave {out.dtype}"
    out.backward(np.ones(out.shape, np.float32))
    for t in ts:
        if t.grad is not None:
            assert t.grad.dtype == np.float32, f"gradient is {t.grad.dtype}"
    _, tangent = dg.jvp(c.f, tuple(xs), tuple(np.ones_like(x) for x in xs))
    assert np.asarray(tangent).dtype == np.float32, f"tangent is {np.asarray(tangent).dtype}"


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_create_graph_second_order_matches_transform(c):
    # eager double backward (create_graph) agrees with the functional hessian-vector product
    xs = c.inputs(seed=5)
    rng = np.random.default_rng(6)
    out_shape = np.shape(c.ref(*xs))
    u = rng.standard_normal(out_shape)

    def scalar(*args):
        return dg.sum(c.f(*args) * u)

    ts = [dg.tensor(x, requires_grad=True) for x in xs]
    scalar(*ts).backward(create_graph=True)
    grads = [t.grad if t.grad is not None else dg.tensor(np.zeros(t.shape)) for t in ts]
    vs = [rng.standard_normal(x.shape) for x in xs]
    if not any(g.requires_grad for g in grads):
        return  # linear in its inputs: no second derivative to compare
    for t in ts:
        t.grad = None
    sum(dg.sum(g * v) for g, v in zip(grads, vs)).backward()
    for i, t in enumerate(ts):
        expected = dg.jvp(lambda *a, i=i: dg.grad(scalar, argnums=i)(*a), tuple(xs), tuple(vs))[1]
        got = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)
