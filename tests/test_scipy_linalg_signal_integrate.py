"""dagrad.scipy.linalg, .signal and .integrate: the compositions (cho_factor/cho_solve, solve_banded) and
odeint against SciPy and central differences, the adjoint against a plain-Python Euler loop's gradient, and
bad input. (The ops themselves are tested by registration: rows of tests/op_table.py.)"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

sl = pytest.importorskip("scipy.linalg", reason="dagrad.scipy needs SciPy (the [scipy] extra)")
import scipy.integrate as si  # noqa: E402
import scipy.signal as ss  # noqa: E402

import dagrad as dg  # noqa: E402
from dagrad.scipy import integrate, linalg, signal  # noqa: E402

RNG = np.random.default_rng(0)
A = RNG.uniform(-1, 1, (3, 3))
SPD = A @ A.T + np.eye(3)
B = RNG.uniform(-1, 1, (3, 2))


def _here():
    """This file's name and the line after the call: where the next statement's error must point."""
    return rf"test_scipy_linalg_signal_integrate\.py:{inspect.currentframe().f_back.f_lineno + 1}"


@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_and_cho_solve_match_scipy_and_differentiate(lower):
    c, low = linalg.cho_factor(SPD, lower=lower)
    ref = sl.cholesky(SPD, lower=lower)
    np.testing.assert_allclose(c, ref, rtol=1e-12, atol=1e-12)  # zeros in the other triangle, as JAX's
    assert low is lower
    np.testing.assert_allclose(linalg.cho_solve((c, low), B), sl.cho_solve(sl.cho_factor(SPD, lower=lower), B),
                               rtol=1e-12)
    dg.check_grads(lambda m, b: linalg.cho_solve(linalg.cho_factor(m @ m.T + np.eye(3), lower=lower), b), (A, B),
                   order=2, modes=("fwd", "rev"))


def test_solve_banded_matches_scipy_and_differentiates():
    ab = RNG.uniform(-1, 1, (4, 5))
    ab[2] += 4.0  # (l, u) = (1, 2): the main diagonal is row u
    b = RNG.uniform(-1, 1, (5, 2))
    np.testing.assert_allclose(linalg.solve_banded((1, 2), ab, b), sl.solve_banded((1, 2), ab, b), rtol=1e-12)
    dg.check_grads(lambda ab, b: linalg.solve_banded((1, 2), ab, b), (ab, b), order=2, modes=("fwd", "rev"))
    # entries of ab outside the band (SciPy never reads them) get no gradient
    g = dg.grad(lambda ab: linalg.solve_banded((1, 2), ab, b).sum())(ab)
    assert g[0, 0] == g[0, 1] == g[1, 0] == g[3, 4] == 0.0


def test_solve_triangular_ignores_the_other_triangle():
    upper_noise = np.triu(RNG.uniform(-1, 1, (3, 3)), 1)
    low = np.tril(A) + 3 * np.eye(3)
    np.testing.assert_allclose(linalg.solve_triangular(low + upper_noise, B, lower=True),
                               np.linalg.solve(low, B), rtol=1e-12)
    g = dg.grad(lambda a: linalg.solve_triangular(a, B, lower=True, unit_diagonal=True).sum())(low)
    assert (np.triu(g) == 0).all()  # the diagonal is taken as ones: not read either


def test_sqrtm_squares_back_and_expm_of_a_sum_of_commuting_matrices():
    root = linalg.sqrtm(SPD)
    np.testing.assert_allclose(root @ root, SPD, rtol=1e-10)
    np.testing.assert_allclose(linalg.expm(2 * SPD), linalg.expm(SPD) @ linalg.expm(SPD), rtol=1e-10)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve_three_dimensional(mode):
    x, k = RNG.uniform(-1, 1, (3, 4, 3)), RNG.uniform(-1, 1, (2, 3, 2))
    np.testing.assert_allclose(signal.convolve(x, k, mode), ss.convolve(x, k, mode), rtol=1e-10, atol=1e-12)
    dg.check_grads(lambda x, k: signal.convolve(x, k, mode), (x, k), order=2, modes=("fwd", "rev"))


def _lotka(y, t, a, b):
    return dg.stack([a * y[0] - b * y[0] * y[1], b * y[0] * y[1] - y[1]])


T = np.array([0.0, 0.3, 0.8, 1.0])
Y0 = np.array([1.0, 0.7])


def test_odeint_values_match_scipy():
    ours = integrate.odeint(_lotka, Y0, T, 1.1, 0.6)
    ref = si.odeint(lambda y, t: [1.1 * y[0] - 0.6 * y[0] * y[1], 0.6 * y[0] * y[1] - y[1]], Y0, T,
                    rtol=1.4e-8, atol=1.4e-8)
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    assert ours.shape == (4, 2)


def test_odeint_derivatives_in_y0_t_and_args_both_modes():
    def f(y0, t, a, b):
        return integrate.odeint(_lotka, y0, t, a, b, rtol=1e-11, atol=1e-11)

    dg.check_grads(f, (Y0, T, 1.1, 0.6), order=1, modes=("fwd", "rev"), eps=1e-5, rtol=1e-5, atol=1e-7)


def test_odeint_second_order_both_modes():
    def f(y0, a):
        return integrate.odeint(_lotka, y0, np.array([0.0, 0.5]), a, 0.6, rtol=1e-11, atol=1e-11)

    dg.check_grads(f, (Y0, 1.1), order=2, modes=("fwd", "rev"), eps=1e-4, rtol=1e-4, atol=1e-6)


def test_odeint_adjoint_matches_a_plain_python_solution():
    # y' = -k y has y(t) = y0 exp(-k t): d y(1) / dk = -y0 exp(-k), d y(1) / dy0 = exp(-k), d y(1) / dt1 = -k y(1)
    k, y0 = 0.8, 2.0
    grads = dg.grad(lambda y0, t, k: integrate.odeint(lambda y, t, k: -k * y, y0, t, k, rtol=1e-12,
                                                       atol=1e-12)[1], argnums=(0, 1, 2))(y0, np.array([0.0, 1.0]), k)
    expected = [np.exp(-k), np.array([k * y0 * np.exp(-k), -k * y0 * np.exp(-k)]), -y0 * np.exp(-k)]
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-8)


def test_odeint_under_vmap():
    ks = np.array([0.5, 1.0, 2.0])
    ys = dg.vmap(lambda k: integrate.odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0]), k)[1])(ks)
    np.testing.assert_allclose(ys, np.exp(-ks), rtol=1e-6)


def test_bad_input_names_the_function_and_the_line():
    with pytest.raises(TypeError, match=r"odeint: func must be a callable func\(y, t, \*args\), got str .*" + _here()):
        integrate.odeint("y", Y0, T)
    with pytest.raises(ValueError, match=r"odeint: the integration failed .*diverges.*" + _here()):
        integrate.odeint(lambda y, t: y * y, np.array([1.0]), np.array([0.0, 2.0]))
    with pytest.raises(ValueError, match=r"odeint: t must be a 1-D array of times.*" + _here()):
        integrate.odeint(_lotka, Y0, 1.0, 1.0, 0.6)
    with pytest.raises(TypeError, match=r"odeint: .*odeint integrates real states.*" + _here()):
        integrate.odeint(lambda y, t: -y, np.array([1.0 + 1j]), T)
    with pytest.raises(ValueError, match=r"solve_triangular: b of shape \(4,\) does not fit a of shape \(3, 3\).*"
                       + _here()):
        linalg.solve_triangular(A, np.ones(4))
    with pytest.raises(ValueError, match=r"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got 'X'.*"
                       + _here()):
        linalg.solve_triangular(A, B, trans="X")
    with pytest.raises(ValueError, match=r"expm: a must be a square matrix \(n, n\), got shape \(2, 3\).*" + _here()):
        linalg.expm(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"solve_sylvester: q must have shape \(3, 2\).*" + _here()):
        linalg.solve_sylvester(A, np.eye(2), np.ones((2, 3)))
    with pytest.raises(TypeError, match=r"cho_solve: the first argument must be the pair \(c, lower\).*" + _here()):
        linalg.cho_solve(SPD, B)
    with pytest.raises(ValueError, match=r"solve_banded: ab must have shape \(4, n\).*" + _here()):
        linalg.solve_banded((1, 2), np.ones((3, 5)), np.ones(5))
    with pytest.raises(ValueError, match=r"convolve: mode must be one of full, valid, same; got 'circular'.*"
                       + _here()):
        signal.convolve(np.ones(3), np.ones(2), "circular")
    with pytest.raises(ValueError, match=r"convolve: in1 and in2 must have the same number of dimensions.*" + _here()):
        signal.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"convolve: mode 'valid' needs one input at least as large.*" + _here()):
        signal.convolve(np.ones((2, 3)), np.ones((3, 2)), "valid")


@pytest.mark.parametrize("module, name, call", [
    (linalg, "_sl", lambda: linalg.expm(np.eye(2))),
    (signal, "_ss", lambda: signal.convolve(np.ones(2), np.ones(2))),
    (integrate, "_si", lambda: integrate.odeint(lambda y, t: y, 1.0, np.array([0.0, 1.0]))),
])
def test_without_scipy_the_error_names_the_extra(monkeypatch, module, name, call):
    monkeypatch.setattr(module, name, None)
    with pytest.raises(ImportError, match=r"needs SciPy, an optional extra: pip install 'dagrad\[scipy\]'.*"
                                          r"test_scipy_linalg_signal_integrate\.py"):
        call()


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve_over_chosen_axes_with_dot_axes_matches_loops_of_scipy(mode):
    a, b = RNG.normal(size=(2, 5, 4, 3)), RNG.normal(size=(2, 4, 2, 3, 2))
    ours = signal.convolve(a, b, axes=([1, 2], [2, 4]), dot_axes=([0, 3], [0, 3]), mode=mode)
    # the kept axes are a's others (none), then b's others (axis 1), then the convolved ones
    for k in range(4):
        ref = sum(ss.convolve(a[i, :, :, j], b[i, k, :, j, :], mode) for i in range(2) for j in range(3))
        np.testing.assert_allclose(ours[k], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(signal.convolve(a[0, :, 0, 0], b[0, 0, :, 0, 0], mode, axes=([0], [0])),
                               ss.convolve(a[0, :, 0, 0], b[0, 0, :, 0, 0], mode), rtol=1e-12)
    dg.check_grads(lambda x, y: signal.convolve(x, y, axes=([1], [1]), dot_axes=([0], [2]), mode=mode),
                   (RNG.normal(size=(3, 3, 2)), RNG.normal(size=(3, 2, 3))), order=2)


def test_convolve_axes_bad_input_names_the_function_and_the_line():
    with pytest.raises(ValueError, match=r"convolve: dot_axes pair axis 0 of in1 \(size 3\) with axis 0 of in2 "
                                         r"\(size 2\).*" + _here()):
        signal.convolve(np.ones((3, 2)), np.ones((2, 2)), axes=([1], [1]), dot_axes=([0], [0]))
    with pytest.raises(ValueError, match=r"convolve: axes must pair as many axes of in1 as of in2.*" + _here()):
        signal.convolve(np.ones((3, 2)), np.ones((2, 2)), axes=([0, 1], [1]))


def test_odeint_takes_scipys_args_tuple():
    ours = integrate.odeint(_lotka, Y0, T, (1.1, 0.6))
    np.testing.assert_array_equal(ours, integrate.odeint(_lotka, Y0, T, 1.1, 0.6))
    grads = dg.grad(lambda ab: integrate.odeint(_lotka, Y0, T, ab)[-1, 0])((1.1, 0.6))
    np.testing.assert_allclose(grads, dg.grad(lambda a, b: integrate.odeint(_lotka, Y0, T, a, b)[-1, 0],
                                              argnums=(0, 1))(1.1, 0.6), rtol=1e-12)


# ---------------------------------------------------------------- odeint: clear errors, t of one time (issue 24)


def test_a_parameter_func_closes_over_is_refused_with_the_advice_to_pass_it_in_args():
    t = np.array([0.0, 1.0])
    for transform in (dg.grad, dg.vmap):
        with pytest.raises(TypeError, match=r"odeint: func returned a value that depends on a differentiated or "
                                            r"traced value it closes over .*Pass that value in args: odeint\(func, "
                                            r"y0, t, k\) with func\(y, t, k\).*" + _here()) as info:
            transform(lambda k: integrate.odeint(lambda y, s: -k * y, 1.0, t)[1])(np.array([2.0]))
        assert "_odepack" not in str(info.value)  # the user's line, not one in SciPy
    k = dg.tensor(2.0, requires_grad=True)  # an eager parameter: its gradient would be lost, silently
    with pytest.raises(TypeError, match=r"odeint: func returned a value that depends on .*" + _here()):
        integrate.odeint(lambda y, s: -k * y, 1.0, t)
    # as the message says: the same function with k in args differentiates
    np.testing.assert_allclose(dg.grad(lambda k: integrate.odeint(lambda y, s, k: -k * y, 1.0, t, k)[1])(2.0),
                               -np.exp(-2.0), rtol=1e-6)


def test_a_func_returning_nan_names_the_time_and_state():
    def f(y, t):
        return np.where(t > 0.5, np.nan, -y)

    with pytest.raises(ValueError, match=r"odeint: the integration failed: func returned NaN or inf at t=0\.5\d* "
                                         r"\(y=\[0\.[56]\d*\]\).*" + _here()) as info:
        integrate.odeint(f, np.array([1.0]), np.array([0.0, 1.0]))
    assert "Integration successful" not in str(info.value)


def test_one_time_gives_y0_as_scipy_and_jax_with_its_derivatives():
    y0, t = np.array([1.0, 2.0]), np.array([0.5])
    ys = integrate.odeint(_lotka, y0, t, 1.1, 0.6)
    np.testing.assert_array_equal(ys, si.odeint(lambda y, t: -y, y0, t))  # [[1., 2.]]: y0, shape (1, 2)
    assert ys.shape == (1, 2) and ys.dtype == np.float64
    assert integrate.odeint(lambda y, t: -y, np.float32(3.0), t).dtype == np.float32
    g = dg.grad(lambda y0, t, a: (integrate.odeint(_lotka, y0, t, a, 0.6) * np.array([3.0, 4.0])).sum(),
                argnums=(0, 1, 2))(y0, t, 1.1)
    np.testing.assert_array_equal(g[0], [3.0, 4.0])  # y(t0) is y0: its own gradient, nothing from t or args
    assert g[1].tolist() == [0.0] and g[2] == 0.0
    _, tangent = dg.jvp(lambda y0: integrate.odeint(_lotka, y0, t, 1.1, 0.6), (y0,), (np.array([1.0, -1.0]),))
    np.testing.assert_array_equal(tangent, [[1.0, -1.0]])
