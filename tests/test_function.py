"""dg.Function: custom differentiable operations in eager mode, under transforms, in static
graphs and in dg.compile."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg

X = np.array([0.5, -1.5, 2.0])


class Cube(dg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g


class ScaledSinCos(dg.Function):
    """Two outputs and a non-tensor argument."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return np.sin(x) * scale, np.cos(x)

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        return g_sin * dg.cos(x) * ctx.scale - g_cos * dg.sin(x), None


class CubeWithJvp(Cube):
    calls = 0

    @staticmethod
    def jvp(ctx, t):
        CubeWithJvp.calls += 1
        (x,) = ctx.saved_tensors
        return 3 * x**2 * t


def test_eager_backward_and_grad():
    t = dg.tensor(X, requires_grad=True)
    Cube.apply(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 3 * X**2)
    np.testing.assert_allclose(dg.grad(lambda x: Cube.apply(x).sum())(X), 3 * X**2)
    np.testing.assert_allclose(Cube.apply(X), X**3)  # plain arrays: just the forward


def test_backward_is_differentiated_again_for_higher_orders():
    np.testing.assert_allclose(dg.grad(dg.grad(lambda x: Cube.apply(x)))(2.0), 12.0)
    np.testing.assert_allclose(dg.hessian(lambda x: Cube.apply(x).sum())(X), np.diag(6 * X))
    t = dg.tensor(X, requires_grad=True)
    y = Cube.apply(t).sum()
    y.backward(create_graph=True)
    g = t.grad
    t.grad = None
    g.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 6 * X)
    assert dg.gradcheck(lambda x: Cube.apply(x), X, order=2)


def test_forward_mode_is_derived_from_backward():
    out, tangent = dg.jvp(lambda x: Cube.apply(x), (X,), (np.array([1.0, 2.0, 3.0]),))
    np.testing.assert_allclose(out, X**3)
    np.testing.assert_allclose(tangent, 3 * X**2 * [1.0, 2.0, 3.0])
    np.testing.assert_allclose(dg.jacfwd(lambda x: Cube.apply(x))(X), np.diag(3 * X**2))


def test_a_jvp_staticmethod_is_used_when_given():
    CubeWithJvp.calls = 0
    _, tangent = dg.jvp(lambda x: CubeWithJvp.apply(x), (X,), (np.ones(3),))
    np.testing.assert_allclose(tangent, 3 * X**2)
    assert CubeWithJvp.calls == 1


def test_several_outputs_and_a_non_tensor_argument():
    def f(x):
        s, c = ScaledSinCos.apply(x, 2.0)
        return dg.sum(s + c**2)

    expected = 2 * np.cos(X) - 2 * np.cos(X) * np.sin(X)
    np.testing.assert_allclose(dg.grad(f)(X), expected)
    s, c = ScaledSinCos.apply(X, 3)
    np.testing.assert_allclose(s, 3 * np.sin(X))
    np.testing.assert_allclose(c, np.cos(X))
    assert dg.gradcheck(lambda x: ScaledSinCos.apply(x, 3)[0] * ScaledSinCos.apply(x, 3)[1], X, order=2)
    # only one output used: the other's gradient is zero
    np.testing.assert_allclose(dg.grad(lambda x: dg.sum(ScaledSinCos.apply(x, 1.0)[1]))(X), -np.sin(X))


def test_in_a_static_graph_with_unknown_sizes():
    with dg.Graph() as g:
        x = dg.placeholder((None,), name="x")
        y = Cube.apply(x).sum()
        (gx,) = dg.gradients(y, [x])
        (hx,) = dg.gradients(gx.sum(), [x])
    assert Cube.apply(x).shape == (None,)
    value, grad, second = dg.Session(g).run([y, gx, hx], {x: X})
    np.testing.assert_allclose(value, np.sum(X**3))
    np.testing.assert_allclose(grad, 3 * X**2)
    np.testing.assert_allclose(second, 6 * X)
    assert "Cube(%x" in str(g)


def test_under_compile():
    fast = dg.compile(dg.value_and_grad(lambda x: dg.sum(ScaledSinCos.apply(x, 2.0)[0] * Cube.apply(x))))
    value, grad = fast(X)
    eager_value, eager_grad = dg.value_and_grad(lambda x: dg.sum(ScaledSinCos.apply(x, 2.0)[0] * Cube.apply(x)))(X)
    np.testing.assert_allclose(value, eager_value)
    np.testing.assert_allclose(grad, eager_grad)
    assert "Cube(" in fast.source(X)


def test_a_wrong_number_of_gradients_names_the_function():
    class TwoForOne(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    with pytest.raises(ValueError, match=r"TwoForOne.backward: returned 2 gradient\(s\) for 1 input"):
        dg.grad(lambda x: TwoForOne.apply(x).sum())(X)


def test_a_gradient_of_the_wrong_shape_names_the_function_and_shapes():
    class Short(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g[:1]

    with pytest.raises(ValueError, match=r"Short.backward: returned the gradient for argument 0 with shape \(1,\), "
                       r"but argument 0 has shape \(3,\)"):
        dg.grad(lambda x: Short.apply(x).sum())(X)


def test_errors_inside_forward_and_backward_name_the_function_and_the_line():
    class Fails(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ArithmeticError("no gradient today")

    t = dg.tensor(X, requires_grad=True)
    y = Fails.apply(t).sum()  # the line the error names
    with pytest.raises(ArithmeticError, match=r"Fails.backward failed: no gradient today .*test_function.py:\d+"):
        y.backward()

    class Broken(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x @ np.ones((7, 2))

    with pytest.raises(ValueError, match=r"Broken.forward failed: .*test_function.py"):
        Broken.apply(dg.tensor(X, requires_grad=True))


def test_gradcheck_of_a_wrong_backward_reports_its_worst_entry():
    class WrongCube(Cube):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g + dg.where(x > 1.0, 1.0, 0.0) * g  # wrong where x > 1 (entry 2)

    with pytest.raises(dg.GradcheckError, match=r"d out\[2\] / d arg0\[2\]"):
        dg.gradcheck(lambda x: WrongCube.apply(x), X)


def test_saving_an_intermediate_works_eagerly_but_not_in_a_graph():
    class SquareViaTemp(dg.Function):
        @staticmethod
        def forward(ctx, x):
            doubled = 2 * x
            ctx.save_for_backward(doubled)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (doubled,) = ctx.saved_tensors
            return doubled * g

    np.testing.assert_allclose(dg.grad(lambda x: SquareViaTemp.apply(x).sum())(X), 2 * X)
    with dg.Graph():
        x = dg.placeholder((3,))
        with pytest.raises(TypeError, match="save only forward's inputs and outputs"):
            dg.gradients(SquareViaTemp.apply(x).sum(), [x])


def test_several_outputs_in_a_static_graph_need_known_sizes():
    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        s, c = ScaledSinCos.apply(x, 2.0)
        (gx,) = dg.gradients(dg.sum(s * c), [x])
        unknown = dg.placeholder((None,), name="unknown")
        with pytest.raises(TypeError, match="ScaledSinCos: a Function with several outputs needs known sizes"):
            ScaledSinCos.apply(unknown, 2.0)
    got_s, got_c, got_gx = dg.Session(g).run([s, c, gx], {x: X})
    np.testing.assert_allclose(got_s, 2 * np.sin(X))
    np.testing.assert_allclose(got_c, np.cos(X))
    np.testing.assert_allclose(got_gx, 2 * np.cos(2 * X))  # d/dx sin(x) cos(x) * 2 = 2 cos(2x)


def test_a_saved_input_written_in_place_before_backward_is_refused_as_pytorch_does():
    # PyTorch: "one of the variables needed for gradient computation has been modified by an inplace operation"
    class Square(dg.Function):
        @staticmethod
        def forward(ctx, h):
            ctx.save_for_backward(h)
            return h * h

        @staticmethod
        def backward(ctx, g):
            (h,) = ctx.saved_tensors
            return 2 * h * g

    class SquareByAttribute(dg.Function):
        @staticmethod
        def forward(ctx, h):
            ctx.h = h  # found again as a saved input
            return h * h

        @staticmethod
        def backward(ctx, g):
            return 2 * ctx.h * g

    for square in (Square, SquareByAttribute):
        x = dg.tensor(X, requires_grad=True)
        h = x * 2
        y = square.apply(h)
        h += 1
        with pytest.raises(RuntimeError, match=rf"that {square.__name__} saved for its gradient .* was modified in "
                           r"place .*test_function.py:\d+"):
            dg.sum(y).backward()
        x = dg.tensor(X, requires_grad=True)
        h = x * 2
        y = square.apply(h)
        dg.sum(y).backward()  # without the write: 8 x
        np.testing.assert_allclose(x.grad, 8 * X)


def test_a_saved_output_written_in_place_keeps_its_gradient():
    # PyTorch refuses this; dagrad's in-place write makes a new node and the Function's backward sees the output
    # as it was, so the gradient is right
    class Exp(dg.Function):
        @staticmethod
        def forward(ctx, h):
            y = np.exp(h)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return y * g

    x = dg.tensor(X, requires_grad=True)
    y = Exp.apply(x * 2)
    z = y * 1.0
    y += 1
    dg.sum(z).backward()
    np.testing.assert_allclose(x.grad, 2 * np.exp(2 * X))
