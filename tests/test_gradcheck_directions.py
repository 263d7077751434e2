"""dg.gradcheck along random directions (issue 16, item 7): a 0.05% error caught in both modes and at
order 2, nested containers of arguments and outputs, complex refused, large inputs at order 2."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dagrad as dg

X = np.array([0.5, -1.5, 2.0, 0.8])
BIG = np.random.default_rng(0).uniform(-1.5, 1.5, size=(10, 11, 7))
OFF = 1.0005  # a 0.05% error


class SlightlyWrongCube(dg.Function):
    """x**3 whose backward and jvp rules are both 0.05% too large."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return OFF * 3 * x**2 * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return OFF * 3 * x**2 * t


class SlightlyWrongTripleSquare(dg.Function):
    """3 x**2, whose own derivative rules are 0.05% too large."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 3 * x**2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return OFF * 6 * x * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return OFF * 6 * x * t


class CubeWithWrongSecondDerivative(dg.Function):
    """x**3 with right first derivatives (3 x**2) whose derivatives are 0.05% off."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return SlightlyWrongTripleSquare.apply(x) * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return SlightlyWrongTripleSquare.apply(x) * t


def wrong_cube(x):
    return SlightlyWrongCube.apply(x)


def wrong_second(x):
    return CubeWithWrongSecondDerivative.apply(x)


def _line_of(marker):
    """The line of this file holding `marker` (what an error must name)."""
    lines = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    return f"test_gradcheck_directions.py:{1 + next(i for i, t in enumerate(lines) if t.endswith(marker))}"


# ---------------------------------------------------------------- a 0.05% error is caught


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_first_derivative_wrong_by_0_05_percent_is_caught_in_each_mode(mode):
    pattern = rf"gradcheck of wrong_cube \({mode} mode\).*d out\[\d\] / d arg0\[\d\]"
    with pytest.raises(dg.GradcheckError, match=pattern):
        dg.gradcheck(wrong_cube, X, modes=(mode,))
    assert dg.gradcheck(lambda x: x**3, X, modes=(mode,), order=2)  # the same function with right rules passes
    # the old default tolerance let it pass
    assert dg.gradcheck(wrong_cube, X, modes=(mode,), atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_the_fwd_message_names_the_direction_and_the_rev_message_the_inner_products(mode):
    with pytest.raises(dg.GradcheckError) as info:
        dg.gradcheck(wrong_cube, X, modes=(mode,))
    text = str(info.value)
    assert ("the jvp along random tangent 0" if mode == "fwd" else "<vjp(c), t> along random tangent 0") in text
    assert "the worst entry: d out[" in text
    assert "atol=1e-06, rtol=0.0001" in text


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_second_derivative_wrong_by_0_05_percent_is_caught_at_order_2(mode):
    assert dg.gradcheck(wrong_second, X, modes=(mode,), order=1)  # the first derivative is right
    np.testing.assert_allclose(dg.grad(lambda x: dg.sum(wrong_second(x)))(X), 3 * X**2)
    with pytest.raises(dg.GradcheckError, match=r"gradcheck of (jvp|vjp) of wrong_second"):
        dg.gradcheck(wrong_second, X, modes=(mode,), order=2)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_0_05_percent_error_is_caught_with_full_jacobians_too(mode):
    with pytest.raises(dg.GradcheckError, match=r"d out\[\d\] / d arg0\[\d\]"):
        dg.gradcheck(wrong_cube, X, modes=(mode,), full=True)
    with pytest.raises(dg.GradcheckError, match=r"gradcheck of dwrong_second\["):
        dg.gradcheck(wrong_second, X, modes=(mode,), order=2, full=True)


def test_an_error_in_one_entry_names_that_entry():
    def f(x):  # the rule is wrong only for the third element
        return dg.where(np.arange(4) == 2, wrong_cube(x), x**3)

    with pytest.raises(dg.GradcheckError, match=r"d out\[2\] / d arg0\[2\]"):
        dg.gradcheck(f, X)


# ---------------------------------------------------------------- large inputs at order 2


def test_order_2_both_modes_on_a_10x11x7_input():
    assert dg.gradcheck(lambda x: dg.tanh(x) * dg.sin(x) + dg.sum(x**2), BIG, order=2)
    assert dg.gradcheck(lambda x: dg.matmul(x, x.transpose(0, 2, 1)), BIG, order=2)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_0_05_percent_error_in_a_10x11x7_input_is_caught(mode):
    with pytest.raises(dg.GradcheckError, match=rf"gradcheck of wrong_cube \({mode} mode\)"):
        dg.gradcheck(wrong_cube, BIG, modes=(mode,))
    with pytest.raises(dg.GradcheckError, match=r"gradcheck of (jvp|vjp) of wrong_second"):
        dg.gradcheck(wrong_second, BIG, modes=(mode,), order=2)


def test_directions_against_the_jacobian_by_hand():
    # f(x) = A x: every direction sees A, so an A' off by 0.05% in one row is seen in the fwd entries
    A = np.random.default_rng(1).standard_normal((5, 4))

    class WrongRowMatvec(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return A @ x

        @staticmethod
        def backward(ctx, g):
            return (A * np.array([1, 1, OFF, 1, 1])[:, None]).T @ g

        @staticmethod
        def jvp(ctx, t):
            return (A * np.array([1, 1, OFF, 1, 1])[:, None]) @ t

    with pytest.raises(dg.GradcheckError, match=r"out0\[2\]"):
        dg.gradcheck(WrongRowMatvec.apply, X, modes=("fwd",))
    assert dg.gradcheck(lambda x: dg.matmul(A, x), X, order=2)


# ---------------------------------------------------------------- nested containers


def test_nested_containers_of_arguments_and_outputs():
    params = {"w": [X, (X[:2] + 1.0,)], "b": np.array(0.25)}

    def model(p, scale):
        h = dg.tanh(p["w"][0] * scale[0] + p["b"])
        return {"h": h, "pair": (dg.sum(p["w"][1][0] ** 2), [h * scale[1]])}

    assert dg.gradcheck(model, (params, [np.array(2.0), np.ones(4)]), order=2)
    assert dg.gradcheck(model, params, [np.array(2.0), np.ones(4)], full=True)
    # the value a nested function gives matches NumPy's (so the checked function is the one we mean)
    out = model(params, [np.array(2.0), np.ones(4)])
    np.testing.assert_allclose(out["h"], np.tanh(X * 2.0 + 0.25))
    np.testing.assert_allclose(out["pair"][0], np.sum((X[:2] + 1.0) ** 2))


def test_a_wrong_rule_in_a_nested_argument_names_the_leaf():
    params = {"w": [X, (X[:2] + 1.0,)], "b": np.array(0.25)}

    def model(p):
        return {"y": wrong_cube(p["w"][1][0]) + p["b"], "z": [p["w"][0] * 2.0]}

    for mode in ("fwd", "rev"):
        with pytest.raises(dg.GradcheckError, match=r"d arg0\['w'\]\[1\]\[0\]\[\d\]"):
            dg.gradcheck(model, params, modes=(mode,))


def test_a_wrong_rule_in_a_nested_output_is_caught():
    with pytest.raises(dg.GradcheckError, match="fwd mode"):
        dg.gradcheck(lambda x: {"ok": [x * 2.0], "bad": (dg.sin(x), wrong_cube(x))}, X, modes=("fwd",))
    with pytest.raises(dg.GradcheckError, match="rev mode"):
        dg.gradcheck(lambda x: {"ok": [x * 2.0], "bad": (dg.sin(x), wrong_cube(x))}, X, modes=("rev",))


# ---------------------------------------------------------------- complex refused


def test_complex_inputs_and_outputs_are_checked_along_complex_directions():
    assert dg.gradcheck(lambda z: dg.abs(z * 2.0) ** 3, X + 1j, order=2)
    assert dg.gradcheck(lambda x: dg.exp(x * (1 + 2j)), X, order=2)  # real input, complex output
    assert dg.gradcheck(lambda p: dg.real(p["z"] * p["z"]) + p["x"], {"z": X + 0.5j, "x": X})
    # a rule that is right on real numbers but misses a conjugation fails on complex ones
    wrong = dg.primitive(lambda z: np.abs(z) ** 2)
    dg.defvjp(wrong, lambda ans, z: lambda g: 2 * g * z)  # the true cotangent is 2 g conj(z)
    assert dg.gradcheck(wrong, X, modes=("rev",))
    with pytest.raises(dg.GradcheckError, match="rev mode"):
        dg.gradcheck(wrong, X + 1j, modes=("rev",))


def test_full_jacobians_are_for_real_functions():
    line = _line_of("# full complex here")
    with pytest.raises(TypeError, match="gradcheck: full=True compares real Jacobians") as info:
        dg.gradcheck(lambda p: p["z"] * 2.0, {"z": X.astype(np.complex128)}, full=True)  # full complex here
    assert line in str(info.value)


def test_check_grads_checks_complex_too():
    dg.check_grads(lambda z: z * 2.0 + dg.conj(z) ** 2, (X + 1j,), order=2)
    dg.check_grads(lambda x: dg.numpy.fft.fft(x), (X,), order=2)


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize("kwargs, pattern", [
    ({"order": 0}, r"gradcheck: order must be an integer >= 1, got 0"),
    ({"directions": 0}, r"gradcheck: directions must be an integer >= 1, got 0"),
    ({"modes": ("lin",)}, r"gradcheck: unknown mode 'lin'"),
])
def test_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        dg.gradcheck(dg.sin, X, **kwargs)
    assert "test_gradcheck_directions.py:" in str(info.value)


def test_a_single_mode_string_and_several_directions():
    assert dg.gradcheck(dg.sin, X, modes="fwd", directions=5, seed=3, order=2)
    for seed in range(3):  # any seed catches the error
        with pytest.raises(dg.GradcheckError):
            dg.gradcheck(wrong_cube, X, modes="rev", seed=seed)


# -- a derivative in the wrong space: HIPS autograd's "Type mismatch" (issue 24, item 6)
@pytest.fixture
def spurious_ops():
    """Two test-local ops y = 2 x whose rules give the right real part but leave the input's space: one a
    complex gradient (and tangent) for a real input (output), one a float32 gradient for a float64 input.
    Their real parts pass every check by values (which pairs Re(<c, t>)); only the type check sees them."""
    declared = []

    def declare(name, rule):
        op = dg.defop(name, lambda x: 2 * x, vjp=(lambda g, out, x: rule(g),), jvp=(lambda t, out, x: rule(t),),
                      shape=lambda s: s, nargs=1, dtype=lambda d: np.dtype(d))
        declared.append(name)
        return op.function

    yield {"complex": declare("test_spurious_complex", lambda g: g * (2 + 0.5j)),
           "float32": declare("test_spurious_float32", lambda g: dg.astype(g * 2, np.float32))}
    for name in declared:
        dg.REGISTRY.pop(name, None)


@pytest.mark.parametrize("kind", ["complex", "float32"])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_a_derivative_of_the_wrong_dtype_fails_gradcheck_in_each_mode(spurious_ops, kind, mode):
    f = spurious_ops[kind]
    with pytest.raises(dg.GradcheckError, match=rf"\({mode} mode\): Type mismatch: the (gradient|tangent) .*"
                                                r"has dtype (complex128|float32)") as info:
        dg.gradcheck(f, X, modes=mode)
    assert info.value.mode == mode
    with pytest.raises(AssertionError, match=r"Type mismatch"):
        dg.check_grads(f, (X,), order=1, modes=(mode,))
    with pytest.raises(AssertionError, match=rf"(?s)Derivative \({'VJP' if mode == 'rev' else 'JVP'}\) check .*"
                                             r"Type mismatch"):
        dg.test_util.check_grads(f, modes=[mode], order=1)(X)


def test_a_complex_jacobian_of_a_real_function_fails_gradcheck_full(spurious_ops):
    with pytest.raises(dg.GradcheckError, match=r"Type mismatch: the Jacobian with respect to arg0 is complex"):
        dg.gradcheck(spurious_ops["complex"], X, full=True, modes="rev")


def test_sqrtm_of_a_real_matrix_with_a_complex_root_has_a_real_gradient():
    linalg = pytest.importorskip("dagrad.scipy.linalg")
    a = np.array([[1.0, 2.0], [3.0, -4.0]])  # eigenvalues 1.53 and -4.53: the principal root is complex
    assert np.iscomplexobj(linalg.sqrtm(a))
    grad = dg.grad(lambda a: dg.sum(dg.real(linalg.sqrtm(a))))(a)
    assert grad.dtype == np.float64
    assert dg.gradcheck(lambda a: dg.real(linalg.sqrtm(a)), a, order=2)
    assert dg.gradcheck(lambda a: dg.imag(linalg.sqrtm(a)), a, full=True)
    assert dg.gradcheck(linalg.sqrtm, a, order=2)
