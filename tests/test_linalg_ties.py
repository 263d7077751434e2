"""Gradients at ties (SPEC: max/min ties are shared evenly, as torch.amax): the matrix norms of the
singular values (ord=2, -2, 'nuc', matrix_norm, cond) against PyTorch at exact ties, ties within
rounding whatever basis LAPACK picks, zero singular values, and the reductions and order statistics
whose ties were already settled (max, amax, eigvalsh's extrema, the matrix 1/inf norms, sort, median,
quantile), so they stay so."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp

torch = pytest.importorskip("torch")


def _torch_grad(f, a):
    t = torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)
    f(t).sum().backward()
    return t.grad.numpy()


def _grad(f, a):
    return dg.grad(lambda x: dg.sum(f(x)))(np.asarray(a, dtype=np.float64))


TIES = [  # (name, dagrad, torch, matrix with a tie)
    ("norm ord=2", lambda a: dnp.linalg.norm(a, ord=2), lambda a: torch.linalg.matrix_norm(a, ord=2),
     np.diag([1.0, 1.0, 0.5])),
    ("norm ord=-2", lambda a: dnp.linalg.norm(a, ord=-2), lambda a: torch.linalg.matrix_norm(a, ord=-2),
     np.diag([1.0, 0.5, 0.5])),
    ("matrix_norm ord=2 stack", lambda a: dg.linalg.matrix_norm(a, ord=2),
     lambda a: torch.linalg.matrix_norm(a, ord=2), np.stack([np.diag([2.0, 2.0, 2.0]), np.diag([3.0, 1.0, 3.0])])),
    ("norm ord=-2 axis", lambda a: dnp.linalg.norm(a, ord=-2, axis=(0, 2), keepdims=True),
     lambda a: torch.linalg.matrix_norm(a, ord=-2, dim=(0, 2), keepdim=True),
     np.diag([1.0, 0.5, 0.5])[:, None, :] * np.ones((1, 2, 1))),
    ("matrix ord=inf", lambda a: dnp.linalg.norm(a, ord=np.inf), lambda a: torch.linalg.matrix_norm(a, ord=np.inf),
     np.array([[1.0, 2.0], [2.0, 1.0]])),
    ("matrix ord=1", lambda a: dnp.linalg.norm(a, ord=1), lambda a: torch.linalg.matrix_norm(a, ord=1),
     np.array([[1.0, -2.0], [-1.0, 2.0]])),
    ("vector ord=inf", lambda a: dnp.linalg.norm(a, ord=np.inf), lambda a: torch.linalg.vector_norm(a, ord=np.inf),
     np.array([1.0, -3.0, 3.0])),
    ("max", dnp.max, torch.amax, np.array([1.0, 3.0, 3.0])),
    ("min axis", lambda a: dnp.min(a, axis=1), lambda a: torch.amin(a, dim=1),
     np.array([[2.0, 1.0, 1.0], [0.0, 5.0, 0.0]])),
    ("max of eigvalsh", lambda a: dnp.max(dnp.linalg.eigvalsh(a)), lambda a: torch.linalg.eigvalsh(a).amax(),
     np.diag([1.0, 2.0, 2.0])),
]


@pytest.mark.parametrize("name, f, ref, a", TIES, ids=[t[0] for t in TIES])
def test_tied_extrema_share_the_gradient_evenly_as_torch(name, f, ref, a):
    np.testing.assert_allclose(_grad(f, a), _torch_grad(ref, a), atol=1e-15)


@pytest.mark.parametrize("ord", [2, -2])
def test_a_tie_shares_in_forward_mode_too(ord):
    a = np.diag([1.0, 1.0, 0.5]) if ord == 2 else np.diag([1.0, 0.5, 0.5])
    tangent = np.diag([1.0, 3.0, 5.0])
    out, tangent_out = dg.jvp(lambda a: dnp.linalg.norm(a, ord=ord), (a,), (tangent,))
    assert out == np.linalg.norm(a, ord=ord)
    assert tangent_out == pytest.approx(2.0 if ord == 2 else 4.0)  # the mean of the tied entries' tangents


@pytest.mark.parametrize("ord", [2, -2])
def test_a_tie_within_rounding_shares_whatever_basis_lapack_picks(ord):
    """Q diag(1, 1, 0.5) Q^T: LAPACK's two top singular values differ in the last bits and its vectors
    are any basis of the tied plane; the shared gradient is P / 2, P the projector on that plane."""
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    spectrum = [1.0, 1.0, 0.5] if ord == 2 else [2.0, 1.0, 1.0]
    a = q @ np.diag(spectrum) @ q.T
    tied = q[:, :2] if ord == 2 else q[:, 1:]
    assert dnp.linalg.norm(a, ord=ord) == np.linalg.norm(a, ord=ord)  # NumPy's value, not an average
    np.testing.assert_allclose(_grad(lambda x: dnp.linalg.norm(x, ord=ord), a), tied @ tied.T / 2, atol=1e-12)


def test_zero_singular_values_give_no_gradient():
    """|s| has a kink at 0: as abs'(0) = 0 and norm's gradient 0 at 0, a zero singular value contributes
    nothing (torch's U V^T there depends on the basis LAPACK picks for the null spaces)."""
    nuc = lambda x: dnp.linalg.norm(x, ord="nuc")  # noqa: E731
    np.testing.assert_allclose(_grad(nuc, np.diag([1.0, 0.0, 0.0])), np.diag([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(_grad(nuc, np.ones((2, 2))), np.full((2, 2), 0.5), atol=1e-15)  # U_r V_r^T
    for ord in (2, -2, "nuc"):
        np.testing.assert_array_equal(_grad(lambda x, o=ord: dnp.linalg.norm(x, ord=o), np.zeros((2, 3))), 0.0)
    # the smallest singular value is 0 (a kink), twice here: no gradient, not a LAPACK-dependent one
    np.testing.assert_array_equal(_grad(lambda x: dnp.linalg.norm(x, ord=-2), np.diag([1.0, 0.0, 0.0])), 0.0)


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_without_ties_the_singular_value_norms_match_torch(ord):
    a = np.random.default_rng(1).standard_normal((2, 3, 4))
    np.testing.assert_allclose(dg.linalg.matrix_norm(a, ord=ord), np.linalg.matrix_norm(a, ord=ord), rtol=1e-14)
    np.testing.assert_allclose(_grad(lambda x: dg.linalg.matrix_norm(x, ord=ord), a),
                               _torch_grad(lambda x: torch.linalg.matrix_norm(x, ord=ord), a), rtol=1e-10)
    dg.check_grads(lambda x: dg.linalg.matrix_norm(x, ord=ord), (a,), order=2)


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"])
def test_cond_is_numpys_and_its_gradient_torchs(p):
    a = np.random.default_rng(2).standard_normal((2, 3, 3))
    np.testing.assert_allclose(dg.linalg.cond(a, p), np.linalg.cond(a, p), rtol=1e-12)
    if p in (None, 2, -2):  # (torch 2.13's cond backward fails for the other p: an in-place write of inv's output)
        np.testing.assert_allclose(_grad(lambda x: dg.linalg.cond(x, p), a),
                                   _torch_grad(lambda x: torch.linalg.cond(x, p), a), rtol=1e-8)
    dg.check_grads(lambda x: dg.linalg.cond(x, p), (a,), order=1)
    singular = np.diag([1.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == "nuc":  # the SVD of the NaN inverse fails, as NumPy's
            with pytest.raises(np.linalg.LinAlgError):
                dg.linalg.cond(singular, p)
        else:
            assert dg.linalg.cond(singular, p) == np.linalg.cond(singular, p) == (0.0 if p == -2 else np.inf)
    assert np.isnan(dg.linalg.cond(np.array([[1.0, np.nan], [0.0, 1.0]]), 1))  # NaN in x: NaN, not inf


def test_cond_shares_tied_extreme_singular_values():
    # cond = s_max / s_min with s_min = 1 twice: d/dA = P_max / s_min - s_max P_min / (2 s_min^2)
    a = np.diag([2.0, 1.0, 1.0])
    np.testing.assert_allclose(_grad(dg.linalg.cond, a), np.diag([1.0, -1.0, -1.0]))


def test_vector_norm_and_svdvals_are_numpys():
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    for axis in (None, 0, -1, (0, 2), (1, 2)):
        for ord in (2, 1, np.inf, -np.inf, 0, 3.5):
            for keepdims in (False, True):
                np.testing.assert_allclose(dg.linalg.vector_norm(a, axis=axis, ord=ord, keepdims=keepdims),
                                           np.linalg.vector_norm(a, axis=axis, ord=ord, keepdims=keepdims))
    np.testing.assert_allclose(dg.linalg.svdvals(a), np.linalg.svdvals(a))
    dg.check_grads(lambda x: dg.linalg.vector_norm(x, axis=(0, 2), ord=3.0), (a,), order=2)
    t = dg.tensor(a, requires_grad=True)  # NumPy's own functions dispatch to these
    np.testing.assert_allclose(np.linalg.matrix_norm(t, ord=2).numpy(), np.linalg.matrix_norm(a, ord=2))
    assert isinstance(np.linalg.cond(t), dg.Tensor)


ORDER = [  # order statistics other than max/min follow the sort order (stable), as torch.sort/quantile and JAX
    ("sort", lambda a: dnp.sort(a) * np.array([1.0, 2.0, 3.0, 4.0]),
     lambda a: torch.sort(a, stable=True).values * torch.tensor([1.0, 2.0, 3.0, 4.0]), [1.0, 3.0, 3.0, 0.0]),
    ("median even", dnp.median, lambda a: torch.quantile(a, 0.5), [1.0, 2.0, 2.0, 3.0]),
    ("median odd", dnp.median, lambda a: torch.quantile(a, 0.5), [2.0, 1.0, 2.0]),
    ("quantile 0.3", lambda a: dnp.quantile(a, 0.3), lambda a: torch.quantile(a, 0.3), [1.0, 2.0, 2.0, 3.0]),
]


@pytest.mark.parametrize("name, f, ref, a", ORDER, ids=[o[0] for o in ORDER])
def test_order_statistics_at_ties_follow_the_sort_order_as_torch_quantile(name, f, ref, a):
    np.testing.assert_allclose(np.asarray(_grad(f, a)), _torch_grad(ref, a), atol=1e-15)
