"""JAX's and HIPS autograd's names (issue 14, item 3): `jacrev`, `elementwise_grad`, `check_grads`;
`gradcheck` with a tuple of arguments; `jacobian`/`jacfwd`/`hessian` over pytrees of inputs."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp

X = np.array([0.3, -1.2, 2.0])


# ---------------------------------------------------------------- jacrev, elementwise_grad


def test_jacrev_is_jacobian():
    assert dg.jacrev is dg.jacobian
    f = lambda x: dg.tanh(x) * dg.sum(x ** 2)  # noqa: E731
    np.testing.assert_allclose(dg.jacrev(f)(X), dg.jacfwd(f)(X))
    expected = np.diag(1 - np.tanh(X) ** 2) * np.sum(X ** 2) + np.outer(np.tanh(X), 2 * X)
    np.testing.assert_allclose(dg.jacrev(f)(X), expected)


@pytest.mark.parametrize("f, derivative", [
    (dg.sin, np.cos),
    (lambda x: x ** 3, lambda x: 3 * x ** 2),
    (lambda x: dg.exp(-x) * x, lambda x: np.exp(-x) * (1 - x)),
])
def test_elementwise_grad_is_the_derivative_of_each_element(f, derivative):
    for x in (X, np.linspace(-2, 2, 12).reshape(3, 4)):
        got = dg.elementwise_grad(f)(x)
        assert got.shape == x.shape
        np.testing.assert_allclose(got, derivative(x))
        np.testing.assert_allclose(got, np.diag(dg.jacobian(f)(x.ravel())).reshape(x.shape))


def test_elementwise_grad_argnum_and_nesting():
    f = lambda x, y: x * y ** 2  # noqa: E731
    np.testing.assert_allclose(dg.elementwise_grad(f, 1)(X, X + 1), 2 * X * (X + 1))
    # second derivative of an elementwise function, elementwise
    np.testing.assert_allclose(dg.elementwise_grad(dg.elementwise_grad(dg.sin))(X), -np.sin(X))
    t = dg.tensor(X)
    assert type(dg.elementwise_grad(dg.sin)(t)) is dg.Tensor


# ---------------------------------------------------------------- check_grads


class Cube(dg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x ** 2 * g  # deliberately wrong


class FirstOrderOnlyCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * dg.stop_gradient(x) ** 2 * g  # right value, but its own derivative in x is lost


@pytest.mark.parametrize("f, args", [
    (lambda x: dg.sin(x) * x ** 2, (X,)),
    (lambda x, y: dg.tanh(x) * y + dg.sum(x * y), (X, X + 1)),
    (lambda x: Cube.apply(x), (X,)),
    (lambda p: {"a": dg.exp(p["w"]) * p["b"], "b": (dg.sum(p["w"] ** 2),)}, ({"w": X, "b": 2.0},)),
    (lambda x: dnp.vstack([x, x ** 2]), (X,)),
    (lambda x: dg.log_softmax(x), [X]),
])
def test_check_grads_passes_on_correct_functions(f, args):
    assert dg.check_grads(f, args, order=2) is None
    assert dg.check_grads(f, args, 1, modes=("rev",)) is None
    assert dg.check_grads(f, args, 1, modes=["fwd"]) is None


def test_check_grads_in_float32_uses_float32_tolerances():
    x = X.astype(np.float32)
    dg.check_grads(lambda x: dg.sin(x) * x ** 2, (x,), order=1)
    with pytest.raises(AssertionError):
        dg.check_grads(lambda x: dg.sin(x) * x ** 2, (x,), order=1, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("modes, part", [(("fwd",), "JVP tangent"), (("rev",), "VJP cotangent projection"),
                                         (("fwd", "rev"), "JVP tangent")])
def test_check_grads_fails_on_a_wrong_custom_gradient(modes, part):
    with pytest.raises(AssertionError, match=part) as info:
        dg.check_grads(lambda x: WrongCube.apply(x), (X,), order=1, modes=modes)
    assert "check_grads of <lambda>" in str(info.value)


@pytest.mark.parametrize("modes, part", [(("fwd",), "JVP of JVP"), (("rev",), "VJP of VJP")])
def test_check_grads_order_2_catches_a_wrong_second_derivative(modes, part):
    f = lambda x: FirstOrderOnlyCube.apply(x)  # noqa: E731
    dg.check_grads(f, (X,), order=1, modes=modes)  # the first derivative is right
    assert dg.gradcheck(f, X)
    with pytest.raises(AssertionError, match=part):
        dg.check_grads(f, (X,), order=2, modes=modes)


def test_check_grads_eps_and_tolerances():
    f = lambda x: dg.exp(x)  # noqa: E731
    with pytest.raises(AssertionError):  # a huge step makes central differences wrong
        dg.check_grads(f, (X,), order=1, eps=0.5)
    dg.check_grads(f, (X,), order=1, eps=0.5, atol=10.0, rtol=10.0)
    dg.check_grads(f, (X,), order=1, eps=0.5, atol={np.float64: 10.0}, rtol={"float64": 10.0})


@pytest.mark.parametrize("call, kind, pattern", [
    (lambda: dg.check_grads(dg.sin, X, order=1), TypeError, r"check_grads: args must be the tuple of arguments"),
    (lambda: dg.check_grads(dg.sin, (X,), order=1, modes=("lin",)), ValueError, r"check_grads: unknown mode 'lin'"),
    (lambda: dg.check_grads(dg.sin, (X,), order=0), ValueError, r"check_grads: order must be an integer >= 1"),
    (lambda: dg.check_grads(dg.sin, (np.array([1, 2]),), order=1), TypeError, r"floating-point or complex inputs"),
])
def test_check_grads_bad_arguments(call, kind, pattern):
    with pytest.raises(kind, match=pattern):
        call()


# ---------------------------------------------------------------- gradcheck with a tuple of arguments


def test_gradcheck_with_a_tuple_of_differently_shaped_arguments():
    seen = []

    def f(a, b):
        seen.append((np.shape(a), np.shape(b)))
        return dg.tanh(a @ b)

    a, b = np.random.default_rng(0).standard_normal((2, 3)), np.random.default_rng(1).standard_normal(3)
    assert dg.gradcheck(f, (a, b), order=2)
    assert set(seen) == {((2, 3), (3,))}
    assert dg.gradcheck(f, [a, b])  # PyTorch's list of inputs, too
    assert dg.gradcheck(f, (dg.tensor(a), dg.tensor(b)))


def test_gradcheck_with_a_tuple_of_same_shaped_arguments_does_not_stack_them():
    seen = []

    def f(a, b):
        seen.append((np.shape(a), np.shape(b)))
        return a * b ** 2

    assert dg.gradcheck(f, (X, X + 1.0))
    assert set(seen) == {((3,), (3,))}  # two arguments, never one (2, 3) array


def test_gradcheck_with_a_tuple_finds_a_wrong_gradient_of_the_second_argument():
    def f(a, b):
        return a * WrongCube.apply(b)

    with pytest.raises(dg.GradcheckError, match=r"d out\[\d\] / d arg1\[\d\]"):
        dg.gradcheck(f, (X, X + 1.0), modes=("rev",))


def test_gradcheck_over_pytrees_names_the_leaf():
    params = {"w": X, "b": np.array([0.5])}
    assert dg.gradcheck(lambda p: {"y": dg.tanh(p["w"] + p["b"]), "s": (dg.sum(p["w"]),)}, params, order=2)
    with pytest.raises(dg.GradcheckError, match=r"d arg0\['w'\]\[\d\]"):
        dg.gradcheck(lambda p: WrongCube.apply(p["w"]) + p["b"], params)
    assert dg.gradcheck(lambda x: x ** 2, [1.0, 2.0])  # a list of numbers is one array, as before


# ---------------------------------------------------------------- jacobians over pytrees of inputs


def _dict_function(p):
    return {"u": p["a"] * p["b"], "v": (dg.sum(p["a"] ** 2), p["b"][0] * 3.0)}


def _dict_jacobian(a, b):
    """The Jacobian of _dict_function by hand, in JAX's layout: outputs' tree of inputs' tree."""
    return {"u": {"a": np.diag(b), "b": np.diag(a)},
            "v": ({"a": 2 * a, "b": np.zeros_like(b)}, {"a": np.zeros_like(a), "b": np.array([3.0, 0.0])})}


def _assert_same_tree(got, expected):
    if isinstance(expected, dict):
        assert isinstance(got, dict) and list(got) == list(expected)
        for key in expected:
            _assert_same_tree(got[key], expected[key])
    elif isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same_tree(g, e)
    else:
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_allclose(got, expected)


@pytest.mark.parametrize("transform", [dg.jacobian, dg.jacrev, dg.jacfwd])
def test_jacobian_over_dicts_matches_the_hand_computed_one(transform):
    a, b = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    _assert_same_tree(transform(_dict_function)({"a": a, "b": b}), _dict_jacobian(a, b))


@pytest.mark.parametrize("transform", [dg.jacobian, dg.jacfwd])
def test_jacobian_over_pytrees_with_tuple_argnums(transform):
    def f(p, x, scale):
        return dg.sum(p["w"] * x) * scale + p["c"][0] * x

    p = {"w": np.array([1.0, 2.0]), "c": (np.array(0.5),)}
    x, scale = np.array([3.0, -1.0]), 2.0
    jp, jx = transform(f, argnums=(0, 1))(p, x, scale)
    _assert_same_tree(jp, {"w": np.outer(np.ones(2), x * scale), "c": (x,)})
    np.testing.assert_allclose(jx, np.outer(np.ones(2), p["w"] * scale) + 0.5 * np.eye(2))


def test_hessian_over_a_dict():
    def f(p):
        return dg.sum(p["a"] ** 2 * p["b"])

    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    h = dg.hessian(f)({"a": a, "b": b})
    _assert_same_tree(h, {"a": {"a": np.diag(2 * b), "b": np.diag(2 * a)},
                          "b": {"a": np.diag(2 * a), "b": np.zeros((2, 2))}})


def test_jacobian_of_a_dict_with_integer_leaves_is_refused():
    for transform in (dg.jacobian, dg.jacfwd):
        with pytest.raises(TypeError, match="floating-point or complex inputs"):
            transform(lambda p: p["a"] * 2.0)({"a": np.array([1, 2])})
