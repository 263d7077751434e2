"""What custom rules return is checked where they return (SPEC "Every path gives the same answer"),
the same for the four styles (`dg.Function`, autograd's `defvjp`/`defjvp`, JAX's `custom_vjp`/
`custom_jvp`): a gradient of its input's shape or a shape the input was broadcast to (then summed), a
tangent of exactly its output's shape, None for a zero, the dtype cast back (a complex value for a real
one refused), anything else an error naming the rule, the argument, both shapes or types and the user's
line. Then: constant (non-Tensor) arguments reach the user's code as they are on every path, a custom op
agrees with the same computation in built-in ops on every path, vmap runs a Function's forward once per
example with a ctx of its own, and export refuses a custom op."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import traceback

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp
from dagrad.compile.export import ExportError
from dagrad.misc import const_graph

X = np.array([0.5, -1.5, 2.0])
M = np.array([[1.5, -0.5, 0.7], [0.2, 0.1, -2.0]])


@contextlib.contextmanager
def _raises(kind, *parts):
    """pytest.raises(kind) whose message holds `parts` in order (plain text), then the user's line: the line
    of this file that led to the error (the innermost of this file in the traceback)."""
    with pytest.raises(kind) as info:
        yield info
    message = str(info.value)
    line = [frame.lineno for frame in traceback.extract_tb(info.tb) if frame.filename == __file__][-1]
    pattern = ".*".join(re.escape(p) for p in (*parts, f"at {__file__}:{line}"))
    assert re.search(pattern + r"\b", message, re.S), message


def _line(offset=0):
    """'test_custom_checks.py:N' for the caller's line plus `offset`."""
    return f"test_custom_checks.py:{inspect.currentframe().f_back.f_lineno + offset}"


# ---------------------------------------------------------------- the four styles, from one vjp or jvp rule


def _function(vjp):
    """A dg.Function computing x * y whose backward returns `vjp(g, x, y)` (a pair)."""

    class Mul(dg.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            return vjp(g, *ctx.saved_tensors)

    return Mul.apply


def _defvjp(vjp):
    mul = dg.primitive(lambda x, y: x * y)
    dg.defvjp(mul, lambda ans, x, y: lambda g: vjp(g, x, y)[0], lambda ans, x, y: lambda g: vjp(g, x, y)[1])
    return mul


def _custom_vjp(vjp):
    @dg.custom_vjp
    def mul(x, y):
        return x * y

    mul.defvjp(lambda x, y: (mul(x, y), (x, y)), lambda res, g: vjp(g, *res))
    return mul


def _defjvp(jvp):
    mul = dg.primitive(lambda x, y: x * y)
    dg.defjvp(mul, lambda t, ans, x, y: jvp(x, y, t, 0 * y), lambda t, ans, x, y: jvp(x, y, 0 * x, t))
    return mul


def _custom_jvp(jvp):
    @dg.custom_jvp
    def mul(x, y):
        return x * y

    mul.defjvp(lambda primals, tangents: (mul(*primals), jvp(*primals, *tangents)))
    return mul


def _right_vjp(g, x, y):
    return g * y, g * x


def _right_jvp(x, y, tx, ty):
    return tx * y + x * ty


VJP_STYLES = {"Function": _function, "defvjp": _defvjp, "custom_vjp": _custom_vjp}
JVP_STYLES = {"defjvp": _defjvp, "custom_jvp": _custom_jvp}
RULE_NAMES = {"Function": "Mul.backward", "defvjp": "<lambda> vjp (dg.defvjp)", "custom_vjp": "mul bwd (custom_vjp)",
              "defjvp": "<lambda> jvp (dg.defjvp)", "custom_jvp": "mul jvp rule (custom_jvp)"}
ALL = [(name, make, _right_vjp) for name, make in VJP_STYLES.items()] + [
    (name, make, _right_jvp) for name, make in JVP_STYLES.items()]


def _loss(mul):
    return lambda x, y: dnp.sum(dnp.sin(mul(x, y)) * mul(x, x))


_BUILTIN = _loss(lambda a, b: a * b)


def _paths(f, x, y):
    """f's value and gradients on every path: {path: result}."""

    def eager():
        tx, ty = dg.tensor(x, requires_grad=True), dg.tensor(y, requires_grad=True)
        f(tx, ty).backward()
        return tx.grad.numpy(), ty.grad.numpy()

    def create_graph():
        tx, ty = dg.tensor(x, requires_grad=True), dg.tensor(y, requires_grad=True)
        (gx,) = dg.autograd.grad(f(tx, ty), [tx], create_graph=True)
        dnp.sum(gx * gx).backward()
        return tx.grad.numpy()

    def session():
        with dg.Graph() as graph:
            px = dg.placeholder(np.shape(x), dtype=np.asarray(x).dtype)
            py = dg.placeholder(np.shape(y), dtype=np.asarray(y).dtype)
            out = f(px, py)
            gx, gy = dg.gradients(out, [px, py])
        return tuple(dg.Session(graph).run([out, gx, gy], {px: x, py: y}))

    ones = (np.ones_like(np.asarray(x)), np.ones_like(np.asarray(y)))
    stacked = (np.stack([x, 2 * np.asarray(x)]), np.stack([y, -np.asarray(y)]))
    both = (0, 1)
    return {
        "value": f(x, y),
        "grad": dg.grad(f, argnums=both)(x, y),
        "backward": eager(),
        "jvp": dg.jvp(f, (x, y), ones)[1],
        "hessian": dg.hessian(f)(x, y),
        "jacfwd(grad)": dg.jacfwd(dg.grad(f, argnums=1))(x, y),
        "create_graph": create_graph(),
        "compile(grad)": dg.compile(dg.grad(f, argnums=both))(x, y),
        "session": session(),
        "vmap(grad)": dg.vmap(dg.grad(f, argnums=both))(*stacked),
        "grad(vmap)": dg.grad(lambda a, b: dnp.sum(dg.vmap(f)(a, b)), argnums=both)(*stacked),
    }


def _assert_same(got, expected, tol):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e, tol)
        return
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("style, make, rule", ALL, ids=[a[0] for a in ALL])
def test_a_broadcast_gradient_is_summed_and_every_path_agrees_with_builtin_ops(style, make, rule, dtype):
    # x (3,) is broadcast against y (2, 3): a vjp rule returns g * y of shape (2, 3) for x, summed as PyTorch
    # does (refused before); every path gives the built-in ops' values and dtypes
    x, y = X.astype(dtype), M.astype(dtype)
    got, expected = _paths(_loss(make(rule)), x, y), _paths(_BUILTIN, x, y)
    for path, value in expected.items():
        _assert_same(got[path], value, 1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("style, make, rule", ALL, ids=[a[0] for a in ALL])
def test_python_numbers_and_0d_arrays_agree_with_builtin_ops(style, make, rule):
    f, ref = _loss(make(rule)), _BUILTIN
    for x, y in ((0.7, 1.3), (np.array(0.7), np.array([1.3, -0.2]))):
        np.testing.assert_allclose(f(x, y), ref(x, y))
        for got, expected in zip(dg.grad(f, argnums=(0, 1))(x, y), dg.grad(ref, argnums=(0, 1))(x, y)):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        np.testing.assert_allclose(dg.compile(dg.grad(f))(x, y), dg.grad(ref)(x, y), rtol=1e-12)
        np.testing.assert_allclose(dg.jvp(f, (x, y), (1.0, np.ones(np.shape(y))))[1],
                                   dg.jvp(ref, (x, y), (1.0, np.ones(np.shape(y))))[1], rtol=1e-12)


# ---------------------------------------------------------------- errors: shape


def _scalar_vjp(g, x, y):
    return dnp.sum(g * y), g * x  # a scalar for x


def _wrong_jvp(x, y, tx, ty):
    return dnp.sum(tx * y + x * ty)  # a scalar for a (3,) output


@pytest.mark.parametrize("style", VJP_STYLES)
def test_a_gradient_of_another_shape_names_the_rule_argument_shapes_and_line(style):
    mul = VJP_STYLES[style](_scalar_vjp)
    f = lambda x: dnp.sum(mul(x, X))  # noqa: E731
    applied = _line(-1)  # the line of the call of mul
    with _raises(ValueError, RULE_NAMES[style], "the gradient for argument 0 with shape (), but argument 0 has "
                 "shape (3,)", f"applied at {__file__.rsplit('/', 1)[0]}/{applied}", "rule defined at",
                 "test_custom_checks.py:"):
        dg.grad(f)(X)
    t = dg.tensor(X, requires_grad=True)
    with _raises(ValueError, RULE_NAMES[style], "argument 0 with shape ()", "(3,)"):
        dnp.sum(mul(t, X)).backward()
    assert t.grad is None  # nothing half-updated
    with _raises(ValueError, RULE_NAMES[style], "argument 0 with shape ()", "(3,)"):
        dg.jvp(f, (X,), (np.ones(3),))  # forward mode derived from the vjp rule checks it too
    with _raises(ValueError, RULE_NAMES[style], "argument 0 with shape ()", "(3,)"):
        dg.compile(dg.grad(f))(X)


def test_a_gradient_the_input_does_not_broadcast_to_is_refused():
    class Cut(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g[:1]  # (1, 3) for (2, 3): a shape (2, 3) does not broadcast to (PyTorch refuses it too)

    with _raises(ValueError, "Cut.backward", "argument 0 with shape (1, 3), but argument 0 has shape (2, 3)"):
        dg.grad(lambda m: dnp.sum(Cut.apply(m)))(M)


@pytest.mark.parametrize("style", JVP_STYLES)
def test_a_tangent_of_another_shape_names_the_rule_output_shapes_and_line(style):
    mul = JVP_STYLES[style](_wrong_jvp)
    name = RULE_NAMES[style] + (" for argument 0" if style == "defjvp" else "")
    with _raises(ValueError, name, "the tangent of the output with shape (), but the output has shape (3,)",
                 "applied at", _line(1)):
        dg.jvp(lambda x: mul(x, X), (X,), (np.ones(3),))
    with _raises(ValueError, name, "with shape (), but the output has shape (3,)"):
        dg.grad(lambda x: dnp.sum(mul(x, X)))(X)  # reverse mode derived from the jvp rule checks it too


def test_a_function_jvp_of_another_shape_or_structure_is_refused():
    class Cube(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x**3

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return dnp.sum(t)

    with _raises(ValueError, "Cube.jvp", "the tangent of the output with shape (), but the output has shape (3,)"):
        dg.jvp(Cube.apply, (X,), (np.ones(3),))

    class Two(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x, 2 * x

        @staticmethod
        def backward(ctx, a, b):
            return a + 2 * b

        @staticmethod
        def jvp(ctx, t):
            return t

    with _raises(ValueError, "Two.jvp", "returned a ndarray for 2 outputs"):
        dg.jvp(lambda x: Two.apply(x)[0], (X,), (np.ones(3),))

    class TwoWrong(Two):
        @staticmethod
        def jvp(ctx, t):
            return t, t[:2]

    with _raises(ValueError, "TwoWrong.jvp", "the tangent of output 1 with shape (2,), but output 1 has shape (3,)"):
        dg.jvp(lambda x: TwoWrong.apply(x)[1], (X,), (np.ones(3),))


def test_wrong_counts_and_structures_are_named():
    class Pair(dg.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return [g, g]  # a list is one gradient (PyTorch reads it so): several go in a tuple

    with _raises(ValueError, "Pair.backward", "returned 1 gradient(s) (a list) for 2 input(s)"):
        dg.grad(lambda x: dnp.sum(Pair.apply(x, X)))(X)

    @dg.custom_vjp
    def scaled(p):
        return p["a"] * p["b"]

    scaled.defvjp(lambda p: (scaled(p), p), lambda p, g: ({"a": g * p["b"]},))
    with _raises(ValueError, "scaled bwd (custom_vjp)", "the cotangent for argument 0 has 1 leaves, but the argument "
                 "has 2"):
        dg.grad(lambda a: dnp.sum(scaled({"a": a, "b": X})))(X)

    @dg.custom_jvp
    def both(x):
        return {"sin": np.sin(x), "cos": np.cos(x)}

    both.defjvp(lambda primals, tangents: (both(*primals), {"sin": tangents[0] * dnp.cos(primals[0])}))
    with _raises(ValueError, "both jvp rule (custom_jvp)", "returned a tangent with 1 leaves for the output, which "
                 "has 2"):
        dg.jvp(lambda x: both(x)["sin"], (X,), (np.ones(3),))
    both.defjvp(lambda primals, tangents: (both(*primals), {"cos": tangents[0], "sin": tangents[0][:1]}))
    with _raises(ValueError, "both jvp rule (custom_jvp)", "the tangent of leaf 1 of the output with shape (1,), but "
                 "leaf 1 of the output has shape (3,)"):
        dg.jvp(lambda x: both(x)["sin"], (X,), (np.ones(3),))
    both.defjvp(lambda primals, tangents: tangents[0])
    with _raises(TypeError, "both jvp rule (custom_jvp)", "returns a pair (primal_out, tangent_out), not a ndarray"):
        dg.jvp(lambda x: both(x)["sin"], (X,), (np.ones(3),))


def test_a_custom_jvp_rules_primal_output_is_checked_against_the_functions():
    # JAX checks it; it was ignored: a rule whose primal differs from the function is wrong (its tangent too)
    @dg.custom_jvp
    def doubled(x):
        return x * 2

    x = X.astype(np.float32)
    ones = np.ones(3, np.float32)
    for primal in (lambda x: doubled(x), lambda x: x * 2):
        doubled.defjvp(lambda primals, tangents: (primal(primals[0]), tangents[0] * 2))  # noqa: B023
        np.testing.assert_array_equal(dg.jvp(doubled, (x,), (ones,))[1], 2 * ones)
        np.testing.assert_array_equal(dg.grad(lambda x: dnp.sum(doubled(x)))(x), 2 * ones)
        np.testing.assert_array_equal(dg.compile(dg.grad(lambda x: dnp.sum(doubled(x))))(x), 2 * ones)
    cases = [
        (lambda x: dnp.sum(x), ValueError, "returned the primal output for the output with shape (), but the output "
         "has shape (3,)"),
        (lambda x: x.astype(np.float64) * 2, TypeError, "returned the primal output for the output of dtype float64, "
         "but the output has dtype float32"),
        (lambda x: None, TypeError, "returned None as the primal output for the output (the output is of shape (3,) "
         "and dtype float32)"),
        (lambda x: [x, x], TypeError, "returned a list as the primal output, but the function returns one array"),
    ]
    for primal, kind, message in cases:
        doubled.defjvp(lambda primals, tangents: (primal(primals[0]), tangents[0] * 2))  # noqa: B023
        with _raises(kind, "doubled jvp rule (custom_jvp): ", message, "(the op was applied at", "the rule defined at"):
            dg.jvp(doubled, (x,), (ones,))
        with _raises(kind, "doubled jvp rule (custom_jvp): ", message):
            dg.grad(lambda x: dnp.sum(doubled(x)))(x)
        with _raises(kind, "doubled jvp rule (custom_jvp): ", message):
            dg.compile(dg.grad(lambda x: dnp.sum(doubled(x))))(x)

    @dg.custom_jvp
    def both(x):
        return {"sin": np.sin(x), "cos": np.cos(x)}

    both.defjvp(lambda primals, tangents: ({"sin": np.sin(primals[0])}, {"sin": tangents[0], "cos": tangents[0]}))
    with _raises(ValueError, "both jvp rule (custom_jvp): returned a primal output of another structure (1 leaves) "
                 "than the function's output (2 leaves)"):
        dg.jvp(lambda x: both(x)["sin"], (X,), (np.ones(3),))
    both.defjvp(lambda primals, tangents: ({"sin": np.sin(primals[0]), "cos": np.cos(primals[0])[:2]},
                                           {"sin": tangents[0], "cos": tangents[0]}))
    with _raises(ValueError, "the primal output for leaf 1 of the output with shape (2,), but leaf 1 of the output "
                 "has shape (3,)"):
        dg.jvp(lambda x: both(x)["sin"], (X,), (np.ones(3),))

    @dg.custom_jvp
    def total(x):
        return np.sum(x)

    total.defjvp(lambda primals, tangents: (float(np.sum(primals[0])), dnp.sum(tangents[0])))  # a Python number
    assert dg.jvp(total, (X,), (np.ones(3),))[1] == 3.0


# ---------------------------------------------------------------- errors: type and dtype


@pytest.mark.parametrize("style", VJP_STYLES)
@pytest.mark.parametrize("bad, text", [([1.0, 2.0, 3.0], "a list"), ("abc", "a str"),
                                       (np.array([None] * 3), "an array of dtype object")],
                         ids=["list", "str", "object"])
def test_a_list_string_or_object_gradient_names_its_type(style, bad, text):
    mul = VJP_STYLES[style](lambda g, x, y: (bad, g * x))
    with _raises(TypeError, RULE_NAMES[style], f"returned {text} as the gradient for argument 0",
                 "(argument 0 is of shape (3,) and dtype float64)"):
        dg.grad(lambda x: dnp.sum(mul(x, X)))(X)


@pytest.mark.parametrize("style", JVP_STYLES)
def test_a_list_tangent_names_its_type(style):
    mul = JVP_STYLES[style](lambda x, y, tx, ty: [1.0, 2.0, 3.0])
    with _raises(TypeError, RULE_NAMES[style], "returned a list as the tangent of the output (the output is of "
                 "shape (3,) and dtype float64)"):
        dg.jvp(lambda x: mul(x, X), (X,), (np.ones(3),))


@pytest.mark.parametrize("style", VJP_STYLES)
def test_a_complex_gradient_for_a_real_input_is_refused(style):
    mul = VJP_STYLES[style](lambda g, x, y: (g * y * (1 + 1j), g * x))
    with _raises(TypeError, RULE_NAMES[style], "the gradient for argument 0 of complex dtype complex128, but argument "
                 "0 is real (float64)"):
        dg.grad(lambda x: dnp.sum(mul(x, X)))(X)
    t = dg.tensor(X, requires_grad=True)
    with _raises(TypeError, RULE_NAMES[style], "complex dtype complex128"):
        dnp.sum(mul(t, X)).backward()  # dropped the imaginary part silently before


@pytest.mark.parametrize("style", JVP_STYLES)
def test_a_complex_tangent_for_a_real_output_is_refused(style):
    mul = JVP_STYLES[style](lambda x, y, tx, ty: (tx * y + x * ty) * (1 + 1j))
    with _raises(TypeError, RULE_NAMES[style], "the tangent of the output of complex dtype complex128, but the output "
                 "is real (float64)"):
        dg.jvp(lambda x: mul(x, X), (X,), (np.ones(3),))


def test_a_function_returning_a_complex_gradient_for_a_complex_output_of_a_real_input_is_refused():
    # PyTorch refuses it too: the rule must return the real part itself
    class ToComplex(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * (1 + 1j)

        @staticmethod
        def backward(ctx, g):
            return g * (1 + 1j)

    with _raises(TypeError, "ToComplex.backward", "complex dtype complex128, but argument 0 is real (float64)"):
        dg.grad(lambda x: dnp.sum(dnp.abs(ToComplex.apply(x)) ** 2))(X)


def test_a_real_gradient_for_a_complex_input_becomes_complex():
    double = dg.primitive(lambda z: 2 * z)
    dg.defvjp(double, lambda ans, z: lambda g: np.real(2 * g))  # deliberately real
    z = np.array([1 + 1j, 2j])
    got = dg.grad(lambda z: dnp.sum(dnp.real(double(z))))(z)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, [2, 2])


@pytest.mark.parametrize("where", ["forward", "backward"])
def test_a_float32_function_gives_a_float64_input_a_float64_gradient(where):
    class Half(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2).astype(np.float32) if where == "forward" else x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).astype(np.float32) if where == "backward" else g * 2

    f = lambda x: dnp.sum(Half.apply(x))  # noqa: E731
    for got in (dg.grad(f)(X), dg.compile(dg.grad(f))(X), dg.vmap(dg.grad(f))(np.stack([X, X]))):
        assert got.dtype == np.float64  # as PyTorch casts a gradient to its input's dtype
        np.testing.assert_allclose(got, 2.0)
    t = dg.tensor(X, requires_grad=True)
    f(t).backward()
    assert t.grad.dtype == np.float64


# ---------------------------------------------------------------- None is a zero


@pytest.mark.parametrize("style", VJP_STYLES)
def test_a_none_gradient_is_a_zero_on_every_path(style):
    mul = VJP_STYLES[style](lambda g, x, y: (None, g * x))
    f = lambda x, y: dnp.sum(mul(x, y))  # noqa: E731
    for gx, gy in (dg.grad(f, argnums=(0, 1))(X, X), dg.compile(dg.grad(f, argnums=(0, 1)))(X, X)):
        np.testing.assert_array_equal(gx, np.zeros(3))
        np.testing.assert_array_equal(gy, X)
    np.testing.assert_array_equal(dg.jvp(f, (X, X), (np.ones(3), np.ones(3)))[1], np.sum(X))
    t = dg.tensor(X, requires_grad=True)
    f(t, X).backward()  # raised AttributeError: 'NoneType' object has no attribute 'shape'
    assert t.grad is None or np.all(t.grad.numpy() == 0)


@pytest.mark.parametrize("style", JVP_STYLES)
def test_a_none_tangent_is_a_zero(style):
    mul = JVP_STYLES[style](lambda x, y, tx, ty: None)
    np.testing.assert_array_equal(dg.jvp(lambda x: mul(x, X), (X,), (np.ones(3),))[1], np.zeros(3))
    np.testing.assert_array_equal(dg.grad(lambda x: dnp.sum(mul(x, X)))(X), np.zeros(3))


def test_a_gradient_for_an_integer_input_is_ignored():
    class Scale(dg.Function):
        @staticmethod
        def forward(ctx, x, n):
            ctx.save_for_backward(n)
            return x * n

        @staticmethod
        def backward(ctx, g):
            (n,) = ctx.saved_tensors
            return g * n, "no gradient for an integer input: whatever this is, it is not looked at"

    n = dg.tensor(np.array([2, 3, 4]))
    np.testing.assert_array_equal(dg.grad(lambda x: dnp.sum(Scale.apply(x, n)))(X), [2.0, 3.0, 4.0])
    got = dg.compile(dg.grad(lambda x, n: dnp.sum(Scale.apply(x, n))))(X, np.array([2, 3, 4]))
    np.testing.assert_array_equal(got, [2.0, 3.0, 4.0])


# ---------------------------------------------------------------- errors: the rest


def test_a_maker_that_returns_no_function_is_named():
    ident = dg.primitive(lambda x: x)
    dg.defvjp(ident, lambda ans, x: 3.0)
    with _raises(TypeError, "<lambda> vjp (dg.defvjp)", "the maker for argument 0 returned a float, not a function"):
        dg.grad(lambda x: dnp.sum(ident(x)))(X)


def test_a_tensor_inside_a_container_or_keyword_argument_is_refused():
    mul = dg.primitive(lambda x, y=1.0: x * y)

    class Scale(dg.Function):
        @staticmethod
        def forward(ctx, x, factors):
            return x * factors[0]

    t = dg.tensor(X, requires_grad=True)
    with _raises(TypeError, "<lambda>: argument 0 is a list holding Tensors"):
        mul([t], 2.0)
    with _raises(TypeError, "Scale: argument 1 is a tuple holding Tensors"):
        Scale.apply(t, (t,))
    with _raises(TypeError, "<lambda>: keyword argument 'y' is a Tensor", "(3,) float64"):
        mul(X, y=t)


# ---------------------------------------------------------------- constant arguments reach the user's code


def _body(x, mode, fn, shape, axis, index, nothing):
    # every constant as the caller gave it, never a stand-in array of ones
    assert (mode, fn, shape, axis, nothing) == ("twice", np.sin, (2, 3), 0, None), (mode, fn, shape, axis, nothing)
    assert index.dtype.kind == "i"
    return np.sum(np.reshape(fn(x) * (2.0 if mode == "twice" else 1.0), shape), axis=axis)[index]


def _body_vjp(g, x, index):
    full = dnp.zeros(3)
    for k, i in enumerate(index):
        full = full + g[k] * dnp.asarray(np.eye(3)[i])
    return dnp.reshape(dnp.broadcast_to(full, (2, 3)), (6,)) * 2.0 * dnp.cos(x)


CONSTANTS = ("twice", np.sin, (2, 3), 0, np.array([2, 0]), None)


def _constant_styles():
    prim = dg.primitive(_body)
    dg.defvjp(prim, lambda ans, x, mode, fn, shape, axis, index, nothing: lambda g: _body_vjp(g, x, index))

    class Body(dg.Function):
        @staticmethod
        def forward(ctx, x, *constants):
            ctx.save_for_backward(x)
            ctx.index = constants[4]  # a constant argument: allowed on a ctx in a static graph too
            return _body(x, *constants)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (_body_vjp(g, x, ctx.index),) + (None,) * 6

    vjp = dg.custom_vjp(_body, nondiff_argnums=(2, 3))  # the others are constant leaves of the arguments
    vjp.defvjp(lambda x, *constants: (vjp(x, *constants), x),
               lambda fn, shape, x, g: (_body_vjp(g, x, CONSTANTS[4]), None, None, None, None))
    jvp = dg.custom_jvp(_body)

    @jvp.defjvp
    def _(primals, tangents):
        # J t, one entry per output element k: <J^T e_k, t>
        x, index = primals[0], primals[5]
        return jvp(*primals), dnp.stack([dnp.sum(_body_vjp(np.eye(2)[k], x, index) * tangents[0]) for k in range(2)])

    return {"primitive": prim, "Function": Body.apply, "custom_vjp": vjp, "custom_jvp": jvp}


@pytest.mark.parametrize("style", ["primitive", "Function", "custom_vjp", "custom_jvp"])
def test_constant_arguments_reach_the_function_as_they_are_on_every_path(style):
    op = _constant_styles()[style]
    x = np.linspace(0.1, 0.6, 6)
    f = lambda x: op(x, *CONSTANTS)  # noqa: E731
    loss = lambda x: dnp.sum(f(x) ** 2)  # noqa: E731
    expected = np.sum(np.reshape(2 * np.sin(x), (2, 3)), axis=0)[[2, 0]]
    expected_grad = dg.grad(lambda v: dnp.sum((dnp.sum(dnp.reshape(2 * dnp.sin(v), (2, 3)), axis=0)[
        np.array([2, 0])]) ** 2))(x)
    np.testing.assert_allclose(f(x), expected)
    np.testing.assert_allclose(dg.grad(loss)(x), expected_grad)
    np.testing.assert_allclose(dg.compile(f)(x), expected)  # the trace called the body with array(1.) for "twice"
    np.testing.assert_allclose(dg.compile(dg.grad(loss))(x), expected_grad)
    np.testing.assert_allclose(dg.vmap(dg.grad(loss))(np.stack([x, x])), [expected_grad] * 2)
    with dg.Graph() as graph:
        p = dg.placeholder((6,))
        (gp,) = dg.gradients(loss(p), [p])
    np.testing.assert_allclose(dg.Session(graph).run(gp, {p: x}), expected_grad)


def test_a_constant_string_argument_is_passed_as_it_is_as_autograds_const_graph_args():
    seen = []

    @dg.primitive
    def process(var, varname):
        seen.append(varname)
        return var

    def foo(x, y, z):
        return process(x, "x") + 2 * process(y, "y") + 3 * process(z, "z")

    replay = const_graph(foo, 1.0, z=3.0)
    assert replay(2.0) == foo(1.0, 2.0, 3.0)
    assert set(seen) == {"x", "y", "z"}  # strings, never a stand-in array
    seen.clear()
    assert replay(2.0) == foo(1.0, 2.0, 3.0)
    assert seen == ["y", "x", "y", "z"]  # the replay runs only y's op: x and z are constants of the trace


# ---------------------------------------------------------------- an exception inside the user's code


def _boom(*args, **kwargs):
    raise ArithmeticError("boom")


def _failing(where):
    """A custom op x * 2 whose user code `where` raises ArithmeticError: (the op, the name errors give it)."""
    if where.startswith("Function"):
        part = where.split(".")[1]

        class Doubled(dg.Function):
            @staticmethod
            def forward(ctx, x):
                return _boom() if part == "forward" else x * 2

            @staticmethod
            def backward(ctx, g):
                return _boom() if part == "backward" else g * 2

            @staticmethod
            def jvp(ctx, t):
                return _boom() if part == "jvp" else t * 2

        return Doubled.apply, f"Doubled.{part}"
    if where in ("defvjp maker", "defvjp vjp", "defjvp", "primitive"):
        doubled = dg.primitive(_boom if where == "primitive" else lambda x: x * 2)
        if where == "defjvp":
            dg.defjvp(doubled, _boom)
        else:
            dg.defvjp(doubled, _boom if where == "defvjp maker" else lambda ans, x: _boom)
        name = {"defvjp maker": "vjp maker (dg.defvjp)", "defvjp vjp": "vjp (dg.defvjp)",
                "defjvp": "jvp (dg.defjvp) for argument 0", "primitive": ""}[where]
        return doubled, f"{'_boom' if where == 'primitive' else '<lambda>'} {name}".strip()
    style = dg.custom_vjp if where.startswith("custom_vjp") else dg.custom_jvp
    doubled = style(_boom if where.endswith("function") else lambda x: x * 2)
    if where == "custom_vjp fwd":
        doubled.defvjp(_boom, lambda res, g: (g * 2,))
    elif where == "custom_vjp bwd":
        doubled.defvjp(lambda x: (x * 2, None), _boom)
    elif where == "custom_jvp rule":
        doubled.defjvp(_boom)
    name = {"custom_vjp fwd": "<lambda> fwd (custom_vjp)", "custom_vjp bwd": "<lambda> bwd (custom_vjp)",
            "custom_jvp rule": "<lambda> jvp rule (custom_jvp)"}.get(where, "_boom")
    return doubled, name


_FAILING = ["Function.forward", "Function.backward", "Function.jvp", "primitive", "defvjp maker", "defvjp vjp",
            "defjvp", "custom_vjp function", "custom_vjp fwd", "custom_vjp bwd", "custom_jvp function",
            "custom_jvp rule"]


@pytest.mark.parametrize("where", _FAILING)
def test_an_exception_in_the_users_code_names_it_and_the_lines_in_every_style(where):
    # a dg.Function's did; a primitive's maker and rules, custom_vjp's fwd and bwd and custom_jvp's rule let it
    # through bare ("boom"), and an exception of a custom op's function became a ValueError
    op, name = _failing(where)
    applied = ()  # the line applying the op, when it is not the user's line the error ends with
    if where in ("Function.jvp", "defjvp", "custom_jvp rule"):
        run = lambda x: dg.jvp(lambda x: dnp.sum(op(x)), (x,), (np.ones(3),))[1]  # noqa: E731
    elif where in ("Function.forward", "primitive") or where.endswith("function"):
        run = op
    else:
        run = dg.grad(lambda x: dnp.sum(op(x)))
        applied = (f"the op was applied at {__file__.rsplit('/', 1)[0]}/{_line(-1)}",)
    with _raises(ArithmeticError, f"{name} failed: boom", *applied, f"defined at {__file__}:"):
        run(X)
    if not where.startswith("Function") and run is not op:  # under dg.compile too (a Function's is refused)
        with _raises(ArithmeticError, f"{name} failed: boom"):
            dg.compile(run)(X)


# ---------------------------------------------------------------- dg.Function under vmap and in static graphs


class Relu(dg.Function):
    """Leaves its mask on the ctx (PyTorch code does) and saves an intermediate."""

    @staticmethod
    def forward(ctx, x):
        ctx.mask = x > 0
        doubled = 2 * x
        ctx.save_for_backward(doubled)
        return x * ctx.mask

    @staticmethod
    def backward(ctx, g):
        (doubled,) = ctx.saved_tensors
        return g * ctx.mask * (1 + 0 * doubled)


def test_vmap_runs_a_functions_forward_once_per_example_with_its_own_ctx():
    xs = np.array([[1.0, -1.0], [-1.0, 1.0], [2.0, 3.0]])
    f = lambda x: dnp.sum(Relu.apply(x) * x)  # noqa: E731
    loop = np.stack([dg.grad(f)(x) for x in xs])
    np.testing.assert_array_equal(loop, [[2, 0], [0, 2], [4, 6]])
    # every example had the last example's mask before
    np.testing.assert_array_equal(dg.vmap(dg.grad(f))(xs), loop)
    np.testing.assert_array_equal(dg.grad(lambda x: dnp.sum(dg.vmap(f)(x)))(xs), loop)
    np.testing.assert_array_equal(dg.vmap(lambda x: dg.jvp(f, (x,), (np.ones(2),))[1])(xs), loop.sum(axis=1))


def test_vmap_refuses_a_ctx_attribute_that_differs_between_examples_and_is_no_array():
    class Tagged(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.tag = "positive" if x.sum() > 0 else "negative"
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    xs = np.array([[1.0, 2.0], [-1.0, -2.0]])
    with _raises(TypeError, "Tagged.forward: under dg.vmap left ctx.tag of type str different in each example"):
        dg.vmap(dg.grad(lambda x: dnp.sum(Tagged.apply(x))))(xs)


def test_vmap_refuses_saving_different_things_in_different_examples():
    class Either(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x if x.sum() > 0 else 2 * x)  # an input in one example, an intermediate in another
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    xs = np.array([[1.0, 2.0], [-1.0, -2.0]])
    with _raises(TypeError, "Either.save_for_backward: under dg.vmap saved different things as value 0"):
        dg.vmap(dg.grad(lambda x: dnp.sum(Either.apply(x))))(xs)


def test_a_static_graph_refuses_an_array_left_on_the_ctx():
    # forward runs on stand-ins there: the mask of ones gave the gradient [1, 1, 1] instead of [1, 0, 1]
    f = lambda x: dnp.sum(Relu.apply(x))  # noqa: E731
    x = np.array([1.0, -1.0, 2.0])
    np.testing.assert_array_equal(dg.grad(f)(x), [1, 0, 1])
    with _raises(TypeError, "Relu.forward: set ctx.mask to an array", "(3,) bool"):
        dg.compile(dg.grad(f))(x)
    with dg.Graph():
        p = dg.placeholder((3,))
        with _raises(TypeError, "Relu.forward: set ctx.mask to an array"):
            dg.gradients(f(p), [p])


class Scale(dg.Function):
    """Leaves a number computed from its input's values on the ctx."""

    @staticmethod
    def forward(ctx, x):
        ctx.m = float(x.max())
        return x * ctx.m

    @staticmethod
    def backward(ctx, g):
        return g * ctx.m


def test_a_static_graph_refuses_a_number_computed_from_the_values():
    # forward ran on stand-ins of ones: the gradient was [1, 1] instead of [3, 3], without an error
    f = lambda x: dnp.sum(Scale.apply(x))  # noqa: E731
    x = np.array([1.0, 3.0])
    np.testing.assert_array_equal(dg.grad(f)(x), [3, 3])
    np.testing.assert_array_equal(dg.vmap(dg.grad(f))(np.stack([x, 2 * x])), [[3, 3], [6, 6]])
    assert dg.compile(f)(x) == 12.0  # no gradient built under the trace: nothing is baked in
    message = ("Scale.forward: set ctx.m to a value of type float that depends on the inputs (their values, or a "
               "size unknown until the graph runs)", "recompute it in backward")
    with _raises(TypeError, *message):
        dg.compile(dg.grad(f))(x)
    with _raises(TypeError, *message):
        dg.compile(dg.vmap(dg.grad(f)))(np.stack([x, 2 * x]))
    with _raises(TypeError, *message):
        dg.compile(lambda x: dg.jvp(f, (x,), (x,))[1])(x)
    with dg.Graph():
        p = dg.placeholder((2,))
        with _raises(TypeError, *message):
            dg.gradients(f(p), [p])


def test_constants_on_the_ctx_are_allowed_in_a_static_graph():
    class Constants(dg.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.eps, ctx.shape, ctx.dtype, ctx.half = 1e-5, x.shape, x.dtype, np.float64(0.5)
            ctx.nan, ctx.k, ctx.options = float("nan"), k, {"scale": 2.0}
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            assert ctx.shape == (3,) and ctx.dtype == np.float64 and ctx.nan != ctx.nan
            return g * (ctx.half * 4.0) * ctx.options["scale"] / 2 + ctx.eps * 0, None

    f = lambda x: dnp.sum(Constants.apply(x, 3))  # noqa: E731
    np.testing.assert_array_equal(dg.compile(dg.grad(f))(X), [2, 2, 2])
    with dg.Graph() as graph:
        p = dg.placeholder((3,))
        (gp,) = dg.gradients(f(p), [p])
    np.testing.assert_array_equal(dg.Session(graph).run(gp, {p: X}), [2, 2, 2])


def test_a_number_that_follows_an_unknown_size_is_refused():
    class Count(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.n = x.shape[0]
            return x / ctx.n

        @staticmethod
        def backward(ctx, g):
            return g / ctx.n

    with dg.Graph() as graph:
        known = dg.placeholder((3,))
        (g_known,) = dg.gradients(dnp.sum(Count.apply(known)), [known])
        unknown = dg.placeholder((None,))
        with _raises(TypeError, "Count.forward: set ctx.n to a value of type int that depends on the inputs"):
            dg.gradients(dnp.sum(Count.apply(unknown)), [unknown])
    np.testing.assert_allclose(dg.Session(graph).run(g_known, {known: X}), np.full(3, 1 / 3))


def _picky(allowed, why):
    class Picky(dg.Function):
        @staticmethod
        def forward(ctx, x):
            if not np.all(allowed(x)):
                raise ValueError(why)
            ctx.m = float(x.max())
            return x * ctx.m

        @staticmethod
        def backward(ctx, g):
            return g * ctx.m

    return lambda x: dnp.sum(Picky.apply(x))


def test_a_forward_refusing_some_stand_ins_is_checked_on_others():
    f = _picky(lambda x: (x >= 0) & (x <= 1), "x is a probability")
    x = np.array([1.0, 0.5])
    np.testing.assert_array_equal(dg.grad(f)(x), [1, 1])
    with _raises(TypeError, "Picky.forward: set ctx.m to a value of type float that depends on the inputs"):
        dg.compile(dg.grad(f))(x)


def test_a_forward_refusing_every_other_stand_in_leaves_nothing_trusted_on_the_ctx():
    f = _picky(lambda x: x == np.round(x), "x holds counts")
    x = np.array([1.0, 3.0])
    np.testing.assert_array_equal(dg.grad(f)(x), [3, 3])
    with _raises(TypeError, "Picky.forward: set ctx.m, and raised on a second set of stand-in values (ValueError:",
                 "x holds counts", "cannot be told"):
        dg.compile(dg.grad(f))(x)


def test_primitive_and_custom_vjp_rules_see_the_values_on_every_path():
    # autograd's maker gets `ans` and the arguments, JAX's bwd the residuals of fwd: under dg.compile they are
    # traced values (fwd runs again in the backward pass), never the stand-ins the shape was found with, so a
    # rule computing from them with NumPy (routed to dagrad's) is right there too
    scaled = dg.primitive(lambda x: x * np.max(x))
    dg.defvjp(scaled, lambda ans, x: lambda g: g * ans / x)  # d/dx_i treating max as a constant: max

    @dg.custom_vjp
    def scaled_vjp(x):
        return x * np.max(x)

    scaled_vjp.defvjp(lambda x: (x * np.max(x), np.max(x)), lambda m, g: (g * m,))
    x = np.array([1.0, 3.0])
    for f in (scaled, scaled_vjp):
        loss = lambda x: dnp.sum(f(x))  # noqa: E731, B023
        np.testing.assert_array_equal(dg.grad(loss)(x), [3, 3])
        np.testing.assert_array_equal(dg.compile(dg.grad(loss))(x), [3, 3])
        with dg.Graph() as graph:
            p = dg.placeholder((2,))
            (gp,) = dg.gradients(loss(p), [p])
        np.testing.assert_array_equal(dg.Session(graph).run(gp, {p: x}), [3, 3])


# ---------------------------------------------------------------- export


@pytest.mark.parametrize("style, make, rule", ALL, ids=[a[0] for a in ALL])
def test_export_refuses_a_custom_op_naming_it(style, make, rule, tmp_path):
    mul = make(rule)
    kind = {"Function": "a dg.Function", "defvjp": "a dg.primitive", "defjvp": "a dg.primitive",
            "custom_vjp": "a dg.custom_vjp", "custom_jvp": "a dg.custom_jvp"}[style]
    with pytest.raises(ExportError, match=re.escape(f"{kind}: its forward is your own Python code")):
        dg.compile(lambda x: mul(x, X)).export(str(tmp_path / "m.py"), X)


def test_nondiff_argnums_and_constant_leaves_of_custom_vjp():
    @functools.partial(dg.custom_vjp, nondiff_argnums=(1,))
    def power(x, k, options):
        assert options == {"scale": 2.0}, options  # a dict of constants: leaves that are no Tensors
        return options["scale"] * x**k

    power.defvjp(lambda x, k, options: (power(x, k, options), x),
                 lambda k, x, g: (2.0 * k * x ** (k - 1) * g, {"scale": None}))
    f = lambda x: dnp.sum(power(x, 3, {"scale": 2.0}))  # noqa: E731
    np.testing.assert_allclose(dg.grad(f)(X), 6 * X**2)
    np.testing.assert_allclose(dg.compile(dg.grad(f))(X), 6 * X**2)
    np.testing.assert_allclose(dg.jvp(f, (X,), (np.ones(3),))[1], np.sum(6 * X**2))
    np.testing.assert_allclose(dg.hessian(f)(X), np.diag(12 * X))


def test_a_ctx_attribute_holding_an_input_is_seen_as_a_saved_input():
    # `ctx.x = x` (PyTorch code does it): backward sees the input as a saved one, so it is differentiated again
    # (the hessian was silently zero: the array forward got was a constant) and has a value in a static graph
    class Cube(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x**3

        @staticmethod
        def backward(ctx, g):
            return 3 * ctx.x**2 * g

    f = lambda x: dnp.sum(Cube.apply(x))  # noqa: E731
    np.testing.assert_allclose(dg.hessian(f)(X), np.diag(6 * X))
    np.testing.assert_allclose(dg.compile(dg.grad(f))(X), 3 * X**2)
    np.testing.assert_allclose(dg.vmap(dg.hessian(f))(np.stack([X, 2 * X])), [np.diag(6 * X), np.diag(12 * X)])
    t = dg.tensor(X, requires_grad=True)
    (g,) = dg.autograd.grad(f(t), [t], create_graph=True)
    dnp.sum(g).backward()
    np.testing.assert_allclose(t.grad.numpy(), 6 * X)


class SinCos(dg.Function):
    """Two outputs, the second float32."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x), np.cos(x).astype(np.float32)

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        return g_sin * dnp.cos(x) - g_cos * dnp.sin(x)


@dg.custom_vjp
def _polar(p):
    return {"r": np.hypot(p["x"], p["y"]), "theta": np.arctan2(p["y"], p["x"])}


def _polar_bwd(p, g):
    r2 = p["x"] ** 2 + p["y"] ** 2
    return ({"x": g["r"] * p["x"] / dnp.sqrt(r2) - g["theta"] * p["y"] / r2,
             "y": g["r"] * p["y"] / dnp.sqrt(r2) + g["theta"] * p["x"] / r2},)


_polar.defvjp(lambda p: (_polar(p), p), _polar_bwd)


@pytest.mark.parametrize("f, ref", [
    (lambda x, y: dnp.sum(SinCos.apply(x * y)[0] * SinCos.apply(x)[1]),
     lambda x, y: dnp.sum(dnp.sin(x * y) * dnp.astype(dnp.cos(x), np.float32))),
    (lambda x, y: dnp.sum(_polar({"x": x, "y": y})["r"] * 2 + _polar({"x": x, "y": y})["theta"]),
     lambda x, y: dnp.sum(dnp.hypot(x, y) * 2 + dnp.arctan2(y, x))),
], ids=["Function", "custom_vjp"])
def test_several_outputs_agree_with_builtin_ops_on_every_path(f, ref):
    x, y = X + 3.0, M[0] + 3.0  # away from the origin of polar
    got, expected = _paths(f, x, y), _paths(ref, x, y)
    for path, value in expected.items():
        _assert_same(got[path], value, 1e-6)


class _ScaledBy(dg.Function):
    """x * a for a constant array a, which backward reads from the ctx."""

    @staticmethod
    def forward(ctx, x, a):
        ctx.a = a
        return x * a

    @staticmethod
    def backward(ctx, g):
        return g * ctx.a, None


_scaled_by = dg.primitive(lambda x, a: x * a)
dg.defvjp(_scaled_by, lambda ans, x, a: lambda g: g * a)


@pytest.mark.parametrize("apply", [_ScaledBy.apply, _scaled_by], ids=["Function", "primitive"])
def test_a_constant_array_written_after_the_forward_does_not_change_the_gradient(apply):
    # issue 24 item 8 for custom ops: a constant argument is copied, as the engine copies what rules save
    a = np.array([1.0, 2.0, 3.0])
    x = dg.tensor(X, requires_grad=True)
    y = dg.sum(apply(x, a))
    a[:] = 0.0
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])
