"""dg.primitive / defvjp / defjvp (autograd's) and dg.custom_vjp / custom_jvp (JAX's): values,
derivatives vs central differences in both modes, second order, vmap, static graphs, compile, errors."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp

RNG = np.random.default_rng(0)


def _line(offset=1):
    """The test file's line `offset` lines below the caller's: where the call in a `with` block is."""
    return f"test_custom_rules.py:{inspect.currentframe().f_back.f_lineno + offset}"


def _central(f, x, eps=1e-6):
    """d f / d x by central differences, f: array -> array (the Jacobian, output axes first)."""
    x = np.asarray(x, dtype=float)
    out = np.asarray(f(x))
    jac = np.zeros(out.shape + x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        jac[(...,) + i] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return jac


def _sin_vjp():
    sin = dg.primitive(np.sin)
    dg.defvjp(sin, lambda ans, x: lambda g: g * dnp.cos(x))
    return sin


def _sin_jvp():
    sin = dg.primitive(np.sin)
    dg.defjvp(sin, lambda g, ans, x: g * dnp.cos(x))
    return sin


def _sin_custom_vjp():
    @dg.custom_vjp
    def sin(x):
        return np.sin(x)

    sin.defvjp(lambda x: (dnp.sin(x), dnp.cos(x)), lambda cos_x, g: (g * cos_x,))
    return sin


def _sin_custom_jvp():
    @dg.custom_jvp
    def sin(x):
        return np.sin(x)

    @sin.defjvp
    def _(primals, tangents):
        return sin(primals[0]), tangents[0] * dnp.cos(primals[0])

    return sin


MAKERS = [_sin_vjp, _sin_jvp, _sin_custom_vjp, _sin_custom_jvp]


@pytest.mark.parametrize("make", MAKERS)
def test_values_and_first_order_both_modes(make):
    sin = make()
    x = RNG.normal(size=(3, 2))
    np.testing.assert_allclose(sin(x), np.sin(x))
    f = lambda x: sin(x) * x  # noqa: E731
    expected = _central(lambda v: np.sin(v) * v, x)
    np.testing.assert_allclose(dg.jacrev(f)(x), expected, atol=1e-6)
    np.testing.assert_allclose(dg.jacfwd(f)(x), expected, atol=1e-6)
    t = RNG.normal(size=x.shape)
    _, tangent = dg.jvp(f, (x,), (t,))
    np.testing.assert_allclose(tangent, np.einsum("ijkl,kl->ij", expected, t), atol=1e-6)
    _, pullback = dg.vjp(f, x)
    np.testing.assert_allclose(pullback(t)[0], np.einsum("ijkl,ij->kl", expected, t), atol=1e-6)


@pytest.mark.parametrize("make", MAKERS)
def test_second_order(make):
    sin = make()
    x = RNG.normal(size=3)
    f = lambda x: dnp.sum(sin(x) ** 2)  # noqa: E731
    expected = _central(lambda v: 2 * np.sin(v) * np.cos(v), x)  # the Jacobian of the gradient
    np.testing.assert_allclose(dg.hessian(f)(x), expected, atol=1e-5)
    np.testing.assert_allclose(dg.jacfwd(dg.grad(f))(x), expected, atol=1e-5)
    np.testing.assert_allclose(dg.grad(dg.grad(lambda v: sin(v)))(0.3), -np.sin(0.3), atol=1e-9)


@pytest.mark.parametrize("make", MAKERS)
def test_vmap_of_grad_matches_a_loop(make):
    sin = make()
    xs = RNG.normal(size=(4, 3))
    got = dg.vmap(dg.grad(lambda x: dnp.sum(sin(x) * x)))(xs)
    for row, x in zip(got, xs):
        np.testing.assert_allclose(row, np.cos(x) * x + np.sin(x))


@pytest.mark.parametrize("make", MAKERS)
def test_compile_value_and_gradient(make):
    sin = make()
    f = dg.compile(lambda x: dg.grad(lambda v: dnp.sum(sin(v) ** 2))(x))
    x = RNG.normal(size=4)
    np.testing.assert_allclose(f(x), 2 * np.sin(x) * np.cos(x))
    np.testing.assert_allclose(dg.compile(lambda x: sin(x) + 1)(x), np.sin(x) + 1)


@pytest.mark.parametrize("make", MAKERS)
def test_static_graph(make):
    sin = make()
    dg.reset_default_graph()
    x = dg.placeholder((None,))
    y = dnp.sum(sin(x) * x)
    (gx,) = dg.gradients(y, [x])
    xv = RNG.normal(size=5)
    with dg.Session() as sess:
        value, grad = sess.run([y, gx], {x: xv})
    np.testing.assert_allclose(value, np.sum(np.sin(xv) * xv))
    np.testing.assert_allclose(grad, np.cos(xv) * xv + np.sin(xv))


@pytest.mark.parametrize("make", MAKERS)
def test_eager_backward(make):
    sin = make()
    x = dg.tensor(np.array([0.1, 0.2]), requires_grad=True)
    dnp.sum(sin(x)).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.1, 0.2]))


def test_defvjp_two_arguments_keywords_and_none():
    scaled = dg.primitive(lambda x, y, scale=1.0: scale * x * y)
    dg.defvjp(scaled, lambda ans, x, y, scale=1.0: lambda g: g * scale * y, None)
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    np.testing.assert_allclose(scaled(x, y, scale=2.0), 2 * x * y)
    np.testing.assert_allclose(dg.grad(lambda x: dnp.sum(scaled(x, y, scale=2.0)))(x), 2 * y)
    # None: explicitly no gradient (autograd's meaning)
    np.testing.assert_allclose(dg.grad(lambda y: dnp.sum(scaled(x, y)), argnums=0)(y), 0 * y)


def test_vjp_and_jvp_rules_for_different_arguments():
    mul = dg.primitive(lambda x, y: x * y)
    dg.defvjp(mul, lambda ans, x, y: lambda g: g * y, argnums=(0,))
    dg.defjvp(mul, lambda g, ans, x, y: g * x, argnums=(1,))
    x, y = RNG.normal(size=2), RNG.normal(size=2)
    for argnums, expected in ((0, y), (1, x)):
        np.testing.assert_allclose(dg.grad(lambda *a: dnp.sum(mul(*a)), argnums=argnums)(x, y), expected)
        np.testing.assert_allclose(np.diagonal(dg.jacfwd(mul, argnums=argnums)(x, y)), expected)


def test_argnum_variants():
    total = dg.primitive(lambda *xs: sum(xs))
    dg.defvjp_argnum(total, lambda k, ans, args, kwargs: lambda g: (k + 1) * g)
    assert dg.grad(total, argnums=2)(1.0, 2.0, 3.0) == 3.0
    prod = dg.primitive(lambda *xs: np.prod(xs))
    dg.defjvp_argnum(prod, lambda k, g, ans, args, kwargs: g * ans / args[k])
    _, tangent = dg.jvp(prod, (2.0, 3.0, 5.0), (1.0, 0.0, 1.0))
    assert float(tangent) == pytest.approx(15.0 + 6.0)
    assert float(dg.grad(prod, argnums=1)(2.0, 3.0, 5.0)) == pytest.approx(10.0)


def test_several_outputs_as_a_pytree():
    @dg.custom_vjp
    def polar(p):
        return {"r": np.hypot(p["x"], p["y"]), "theta": np.arctan2(p["y"], p["x"])}

    def fwd(p):
        return polar(p), p

    def bwd(p, g):
        r2 = p["x"] ** 2 + p["y"] ** 2
        r = dnp.sqrt(r2)
        return ({"x": g["r"] * p["x"] / r - g["theta"] * p["y"] / r2,
                 "y": g["r"] * p["y"] / r + g["theta"] * p["x"] / r2},)

    polar.defvjp(fwd, bwd)
    p = {"x": np.array([1.0, -2.0]), "y": np.array([0.5, 3.0])}
    out = polar(p)
    np.testing.assert_allclose(out["theta"], np.arctan2(p["y"], p["x"]))

    def loss(x, y):
        o = polar({"x": x, "y": y})
        return dnp.sum(o["r"] * 2 + o["theta"])

    numeric = _central(lambda x: np.sum(2 * np.hypot(x, p["y"]) + np.arctan2(p["y"], x)), p["x"])
    np.testing.assert_allclose(dg.grad(loss)(p["x"], p["y"]), numeric, atol=1e-6)
    _, tangent = dg.jvp(loss, (p["x"], p["y"]), (np.ones(2), np.zeros(2)))
    np.testing.assert_allclose(tangent, numeric.sum(), atol=1e-6)


def test_custom_jvp_tuple_output_and_nondiff_argnums():
    @functools.partial(dg.custom_jvp, nondiff_argnums=(0,))
    def powers(n, x):
        return x ** n, np.exp(x)

    @powers.defjvp
    def _(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return powers(n, x), (n * x ** (n - 1) * t, dnp.exp(x) * t)

    x = np.array([0.5, 1.5])
    squares, exps = powers(2, x)
    np.testing.assert_allclose(squares, x ** 2)
    np.testing.assert_allclose(dg.grad(lambda x: dnp.sum(powers(2, x)[0] + powers(2, x)[1]))(x), 2 * x + np.exp(x))
    sq = dg.custom_jvp(lambda n, x: x ** n, nondiff_argnums=(0,))
    sq.defjvp(lambda n, primals, tangents: (sq(n, primals[0]), n * primals[0] ** (n - 1) * tangents[0]))
    assert float(dg.grad(lambda x: sq(3, x))(2.0)) == pytest.approx(12.0)
    assert float(dg.grad(dg.grad(lambda x: sq(3, x)))(2.0)) == pytest.approx(12.0)


def test_custom_vjp_nondiff_argnums():
    @dg.custom_vjp
    def scale(k, x):
        return k * x

    scale = dg.custom_vjp(scale.fun, nondiff_argnums=(0,))
    scale.defvjp(lambda k, x: (k * x, None), lambda k, res, g: (k * g,))
    x = RNG.normal(size=3)
    np.testing.assert_allclose(dg.grad(lambda x: dnp.sum(scale(3.0, x)))(x), 3 * np.ones(3))
    np.testing.assert_allclose(dg.jacfwd(lambda x: scale(3.0, x))(x), 3 * np.eye(3))


def test_missing_rule_names_function_and_line():
    cube = dg.primitive(lambda x: x ** 3)
    assert cube(2.0) == 8.0  # calling needs no rule
    with pytest.raises(NotImplementedError, match=r"<lambda>: is differentiated with respect to argument 0, "
                       r"but has no vjp .*" + _line()):
        dg.grad(cube)(2.0)
    with pytest.raises(NotImplementedError, match="has no jvp .*" + _line()):
        dg.jvp(cube, (2.0,), (1.0,))

    @dg.custom_vjp
    def f(x):
        return x

    with pytest.raises(NotImplementedError, match=r"f: is differentiated, but has no rule \(f.defvjp.*" + _line()):
        dg.grad(f)(1.0)

    @dg.custom_jvp
    def h(x):
        return x

    with pytest.raises(NotImplementedError, match=r"h: .*no rule \(f.defjvp.*" + _line()):
        dg.grad(h)(1.0)


def test_one_argument_without_rule_is_fine_when_not_differentiated():
    mul = dg.primitive(lambda x, y: x * y)
    dg.defvjp(mul, lambda ans, x, y: lambda g: g * y)
    assert float(dg.grad(mul)(2.0, 5.0)) == 5.0
    with pytest.raises(NotImplementedError, match="argument 1.*" + _line()):
        dg.grad(mul, argnums=1)(2.0, 5.0)


def test_bad_input():
    with pytest.raises(TypeError, match="primitive: takes a function, not a int .*" + _line()):
        dg.primitive(3)
    with pytest.raises(TypeError, match="defvjp: takes a function made by dg.primitive.*" + _line()):
        dg.defvjp(np.sin, lambda ans, x: lambda g: g)
    sin = dg.primitive(np.sin)
    with pytest.raises(ValueError, match=r"defvjp: got 2 rule\(s\) for argnums \(0,\).*" + _line()):
        dg.defvjp(sin, None, None, argnums=(0,))
    with pytest.raises(TypeError, match="defjvp: a rule is a function or None.*" + _line()):
        dg.defjvp(sin, 3)
    bad = dg.primitive(lambda x: dg.tensor(x))
    with pytest.raises(TypeError, match="returned a Tensor.*" + _line()):
        bad(1.0)

    @dg.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))  # one cotangent short
    with pytest.raises(ValueError, match=r"f bwd \(custom_vjp\): returns a tuple with one cotangent per "
                       r"differentiable argument \(2\), not 1.*" + _line()):
        dg.grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (np.ones(3), g))
    with pytest.raises(ValueError, match=r"returned the gradient for argument 0 with shape \(3,\), but argument 0 "
                       r"has shape \(2,\).*" + _line()):
        dg.grad(lambda x: dnp.sum(f(x, 2.0)))(np.ones(2))
    with pytest.raises(TypeError, match="positional arguments only.*" + _line()):
        f(1.0, y=2.0)


def test_rules_using_ans_differentiate_again():
    logsumexp = dg.primitive(lambda x: np.log(np.sum(np.exp(x))))
    dg.defvjp(logsumexp, lambda ans, x: lambda g: g * dnp.exp(x - ans))
    x = np.array([0.1, 0.5, -1.0])
    softmax = np.exp(x) / np.exp(x).sum()
    assert float(logsumexp(x)) == pytest.approx(np.log(np.exp(x).sum()))
    np.testing.assert_allclose(dg.grad(logsumexp)(x), softmax)
    np.testing.assert_allclose(dg.jacfwd(logsumexp)(x), softmax)
    np.testing.assert_allclose(dg.hessian(logsumexp)(x), np.diag(softmax) - np.outer(softmax, softmax), atol=1e-12)
    np.testing.assert_allclose(dg.hessian(logsumexp)(x), _central(dg.grad(logsumexp), x), atol=1e-6)
