"""Property tests of broadcasting and reduction shapes (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dagrad as dg
from dagrad._core.shapes import broadcast_shapes

BINARY = [dg.add, dg.subtract, dg.multiply, dg.maximum]


@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3), op=st.sampled_from(BINARY))
def test_broadcast_gradients_reduce_to_input_shapes(shapes, op):
    (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
    rng = np.random.default_rng(0)
    a = dg.tensor(rng.standard_normal(sa), requires_grad=True)
    b = dg.tensor(rng.standard_normal(sb), requires_grad=True)
    out = op(a, b)
    assert out.shape == out_shape == broadcast_shapes(sa, sb)
    out.sum().backward()
    assert a.grad.shape == sa and b.grad.shape == sb
    if op is dg.add:  # each input element is used once per broadcast copy
        np.testing.assert_array_equal(a.grad.numpy(), np.full(sa, np.prod(out_shape) / max(np.prod(sa), 1)))


@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
def test_broadcast_tangents_have_output_shape(shapes):
    (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
    _, tangent = dg.jvp(lambda a, b: a * b, (np.ones(sa), np.ones(sb)), (np.ones(sa), np.zeros(sb)))
    assert np.shape(tangent) == out_shape


@st.composite
def shape_and_axis(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=3))
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                          st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1).map(tuple)))
    return shape, axis, draw(st.booleans())


@settings(max_examples=80, deadline=None)
@given(case=shape_and_axis(), name=st.sampled_from(["sum", "mean", "max", "min", "prod", "var", "std"]))
def test_reduction_shapes_and_gradient_shapes(case, name):
    shape, axis, keepdims = case
    x = np.random.default_rng(1).standard_normal(shape)
    t = dg.tensor(x, requires_grad=True)
    out = getattr(dg, name)(t, axis=axis, keepdims=keepdims)
    expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    out.sum().backward()
    assert t.grad.shape == shape
    if name == "sum":
        np.testing.assert_array_equal(t.grad.numpy(), np.ones(shape))


@settings(max_examples=40, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), data=st.data())
def test_cumsum_and_arg_reductions_follow_numpy(shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    x = np.random.default_rng(2).standard_normal(shape)
    t = dg.tensor(x, requires_grad=True)
    out = dg.cumsum(t, axis=axis)
    np.testing.assert_allclose(out.numpy(), np.cumsum(x, axis=axis), rtol=1e-12)
    out.sum().backward()
    assert t.grad.shape == shape
    np.testing.assert_array_equal(dg.argmax(t, axis=axis).numpy(), np.argmax(x, axis=axis))
