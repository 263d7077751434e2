"""svd, eigh, qr, pinv, matrix_power and det beyond the op table: singular and degenerate
inputs (what is finite, what is documented as inf/nan), full_matrices, and bad input."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg
from dagrad import linalg as dla


def _here(offset=1):
    return f"test_linalg_decompositions.py:{sys._getframe(1).f_lineno + offset}"


def _central(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _cofactors(a):
    """adj(a)^T by its definition: signed minors, in plain loops."""
    n = a.shape[0]
    c = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=0), j, axis=1)
            c[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return c


SINGULAR = [
    np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]]),  # rank 2
    np.outer([1.0, -2.0, 0.5], [3.0, 1.0, 2.0]),  # rank 1: the cofactors are all zero
    np.zeros((2, 2)),
    np.array([[0.0, 1.0], [0.0, 0.0]]),  # nilpotent
]


# -- det at singular matrices: the cofactor matrix, through the SVD
@pytest.mark.parametrize("a", SINGULAR)
def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(a):
    expected = _cofactors(a)
    np.testing.assert_allclose(dg.grad(dla.det)(a), expected, atol=1e-12)
    np.testing.assert_allclose(dg.grad(dla.det)(a), _central(np.linalg.det, a), atol=1e-8)
    np.testing.assert_allclose(dg.jacfwd(dla.det)(a), expected, atol=1e-12)  # forward mode


def test_det_gradient_of_a_stack_with_a_singular_member():
    rng = np.random.default_rng(0)
    stack = np.stack([SINGULAR[0], rng.standard_normal((3, 3)), SINGULAR[1]])
    grad = dg.grad(lambda x: dla.det(x).sum())(stack)
    for member, g in zip(stack, grad):
        np.testing.assert_allclose(g, _cofactors(member), atol=1e-12)
    x = dg.tensor(stack, requires_grad=True)
    dla.det(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), grad, atol=1e-14)


def test_det_second_derivative_where_invertible_and_its_error_where_singular():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3))
    hess = dg.hessian(dla.det)(a)
    for i in range(3):
        for j in range(3):
            e = np.zeros((3, 3))
            e[i, j] = 1e-6
            column = (_cofactors(a + e) - _cofactors(a - e)) / 2e-6
            np.testing.assert_allclose(hess[:, :, i, j], column, atol=1e-7)
    with pytest.raises(np.linalg.LinAlgError, match="inv"):
        dg.hessian(dla.det)(SINGULAR[0])


# -- svd: S is differentiable everywhere; U and Vh not at repeated singular values
def test_singular_values_gradient_at_repeated_values_is_finite():
    a = np.diag([2.0, 2.0, 1.0])
    # d(sum s)/dA = U Vh, here the identity; the nuclear norm is the same function
    np.testing.assert_allclose(dg.grad(lambda x: dla.svd(x, compute_uv=False).sum())(a), np.eye(3), atol=1e-12)
    np.testing.assert_allclose(dg.grad(lambda x: dla.norm(x, "nuc"))(a), np.eye(3), atol=1e-12)
    np.testing.assert_allclose(dg.jacfwd(lambda x: dla.norm(x, "nuc"))(a), np.eye(3), atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's divide-by-zero warning: the documented inf
def test_singular_vectors_gradient_at_repeated_values_is_not_finite_as_jax():
    grad = dg.grad(lambda x: dla.svd(x).U[0, 0])(np.eye(2))
    assert not np.all(np.isfinite(grad))


def test_spectral_norm_gradient_is_the_top_singular_pair():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(dg.grad(lambda x: dla.norm(x, 2))(a), np.outer(u[:, 0], vh[0]), atol=1e-12)
    np.testing.assert_allclose(dg.grad(lambda x: dla.norm(x, -2))(a), np.outer(u[:, -1], vh[-1]), atol=1e-12)
    assert float(dla.norm(a, 2)) == pytest.approx(s[0]) and float(dla.norm(a, -2)) == pytest.approx(s[-1])


def test_full_matrices_values_and_the_error_of_their_gradient():
    a = np.random.default_rng(3).standard_normal((4, 2))
    u, s, vh = dla.svd(a)
    assert u.shape == (4, 4) and vh.shape == (2, 2)
    np.testing.assert_allclose(np.asarray(u)[:, :2] * s @ vh, a, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(u)), np.abs(np.linalg.svd(a)[0]), atol=1e-12)
    line = _here()
    with pytest.raises(NotImplementedError, match=r"linalg.svd: no derivative .*full_matrices=True.*\(4, 2\)") as info: dg.grad(lambda x: dla.svd(x).U.sum())(a)  # noqa: E501,E701
    assert line in str(info.value), str(info.value)
    # square: full and reduced are the same, and differentiable
    b = a[:2]
    np.testing.assert_allclose(dg.grad(lambda x: (dla.svd(x).U * dla.svd(x).Vh.T).sum())(b),
                               _central(lambda y: (np.linalg.svd(y)[0] * np.linalg.svd(y)[2].T).sum(), b), atol=1e-7)


# -- eigh
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_eigenvalue_gradient_at_degenerate_eigenvalues_is_finite_and_eigenvectors_are_not():
    a = np.diag([1.0, 1.0, 3.0])
    weights = np.array([1.0, 2.0, 5.0])
    grad = dg.grad(lambda x: (dla.eigh(x).eigenvalues * weights).sum())(a)
    assert np.all(np.isfinite(grad))
    # the sum of the eigenvalues is the trace, whatever the basis of the repeated eigenspace
    np.testing.assert_allclose(dg.grad(lambda x: dla.eigh(x).eigenvalues.sum())(a), np.eye(3), atol=1e-12)
    assert not np.all(np.isfinite(dg.grad(lambda x: dla.eigh(x).eigenvectors[0, 0])(a)))


def test_eigh_gradient_lies_in_the_triangle_it_reads():
    # eigh reads one triangle, so its derivative is that function's (HIPS autograd's), not the symmetric one
    rng = np.random.default_rng(4)
    m = rng.standard_normal((3, 3))
    sym = m + m.T
    v = np.linalg.eigh(sym)[1][:, -1]
    outer = np.outer(v, v)
    for uplo, triangle in (("L", np.tril), ("U", np.triu)):
        grad = dg.grad(lambda x, u=uplo: dla.eigh(x, u).eigenvalues[-1])(sym)
        np.testing.assert_allclose(grad, triangle(2 * outer) - np.diag(np.diag(outer)), atol=1e-12)
    upper = np.triu(sym) + np.tril(np.full((3, 3), 9.0), -1)  # garbage below: UPLO='U' never reads it
    np.testing.assert_allclose(dla.eigh(upper, UPLO="U").eigenvalues, np.linalg.eigvalsh(sym), atol=1e-12)
    assert dg.gradcheck(lambda x: dla.eigh(x, "U").eigenvalues, upper, order=2)


def test_eigh_modes_agree_on_an_unsymmetric_input():
    # both read the symmetric part of the tangent: the reverse- and forward-mode Jacobians agree
    a = np.random.default_rng(6).standard_normal((3, 3))
    for part in ("eigenvalues", "eigenvectors"):
        def f(x, part=part):
            return getattr(dla.eigh(x), part)

        np.testing.assert_allclose(dg.jacobian(f)(a), dg.jacfwd(f)(a), atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_logabsdet_gradient_at_a_singular_matrix_is_inf_or_nan_as_jax():
    # log|det| is -inf there; its gradient adj(A)^T / det(A) is inf where a cofactor is not 0, nan where it
    # is (JAX's LU solve gives the same; PyTorch the same up to the sign of the zero determinant)
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert dla.slogdet(a)[1] == -np.inf
    np.testing.assert_array_equal(dg.grad(lambda x: dla.slogdet(x)[1])(a), [[np.inf, -np.inf], [-np.inf, np.inf]])
    assert np.all(np.isnan(dg.grad(lambda x: dla.slogdet(x)[1])(np.zeros((2, 2)))))
    for m in SINGULAR:
        g = dg.grad(lambda x: dla.slogdet(x)[1])(m)
        assert not np.any(np.isfinite(g)), g
    _, tangent = dg.jvp(lambda x: dla.slogdet(x)[1], (a,), (np.eye(2),))
    assert not np.isfinite(tangent)  # tr(A^-1 t) with A^-1 inf/nan: JAX gives inf, we nan (inf * 0 off the diagonal)
    # a stack with one singular matrix: the others keep their finite gradients
    stack = np.stack([a, np.eye(2) * 2])
    g = dg.grad(lambda x: dla.slogdet(x)[1].sum())(stack)
    np.testing.assert_allclose(g[1], np.eye(2) / 2)


# -- pinv
def test_pinv_gradient_at_repeated_singular_values_is_finite():
    # an SVD composite would give nan here; Golub and Pereyra's rule does not
    a = np.eye(3)[:, :2] * 2.0
    grad = dg.grad(lambda x: (dla.pinv(x) ** 2).sum())(a)
    np.testing.assert_allclose(grad, _central(lambda y: (np.linalg.pinv(y) ** 2).sum(), a), atol=1e-7)


# -- matrix_power
def test_matrix_power_matches_a_loop():
    a = np.random.default_rng(5).standard_normal((2, 3, 3))
    for n in range(0, 7):
        expected = np.broadcast_to(np.eye(3), a.shape).copy()
        for _ in range(n):
            expected = expected @ a
        np.testing.assert_allclose(dla.matrix_power(a, n), expected, rtol=1e-12, atol=1e-12)


# -- bad input
@pytest.mark.parametrize("f, args, error, match", [
    (dla.svd, (np.ones(3),), ValueError, r"linalg.svd: expected a matrix .*\(3,\)"),
    (dla.eigh, (np.ones((2, 3)),), ValueError, r"linalg.eigh: expected a square matrix .*\(2, 3\)"),
    (dla.eigh, (np.eye(2), "X"), ValueError, r"linalg.eigh: UPLO must be 'L' or 'U', got 'X'"),
    (dla.qr, (np.ones(4),), ValueError, r"linalg.qr: expected a matrix .*\(4,\)"),
    (dla.qr, (np.eye(2), "complete"), NotImplementedError, r"linalg.qr: mode 'complete' is not supported"),
    (dla.qr, (np.eye(2), "economic"), ValueError, r"linalg.qr: mode 'economic'"),
    (dla.pinv, (np.ones(()),), ValueError, r"linalg.pinv: expected a matrix .*\(\)"),
    (dla.pinv, (np.eye(2), "big"), TypeError, r"linalg.pinv: rcond must be a number, got str"),
    (dla.matrix_power, (np.ones((2, 3)), 2), ValueError, r"linalg.matrix_power: expected a square .*\(2, 3\)"),
    (dla.matrix_power, (np.eye(2), 1.5), TypeError, r"linalg.matrix_power: exponent must be an integer, got 1.5"),
    (dla.norm, (np.ones((2, 2, 2)), "nuc"), ValueError, r"linalg.norm: .*1-D or 2-D"),
])
def test_bad_input_names_the_function_and_the_line(f, args, error, match):
    line = _here()
    with pytest.raises(error, match=match) as info: f(*args)  # noqa: E701
    assert line in str(info.value), str(info.value)
