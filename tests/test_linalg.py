"""Linear algebra beyond the op table: slogdet's sign, einsum's string forms, norms at zero,
cholesky's symmetric gradient, shape rules with unknown sizes, and errors."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg
from dagrad import linalg as dla
from dagrad.ops import linalg as ops

torch = pytest.importorskip("torch")


def _here(offset=1):
    return f"test_linalg.py:{sys._getframe(1).f_lineno + offset}"


# -- slogdet
def test_slogdet_sign_and_logabsdet():
    a = np.array([[[2.0, 0.0], [0.0, 3.0]], [[0.0, 2.0], [3.0, 0.0]], [[1.0, 2.0], [2.0, 4.0]]])
    sign, logabsdet = dla.slogdet(dg.tensor(a, requires_grad=True))
    np.testing.assert_array_equal(sign.numpy(), [1.0, -1.0, 0.0])
    np.testing.assert_allclose(logabsdet.numpy()[:2], np.log([6.0, 6.0]))
    assert logabsdet.numpy()[2] == -np.inf
    assert not sign.requires_grad and logabsdet.requires_grad
    assert sign.dtype == np.float64
    expected = np.linalg.slogdet(a)
    assert isinstance(dla.slogdet(a), tuple) and dla.slogdet(a).sign.shape == expected.sign.shape


def test_logabsdet_gradient_with_negative_determinant_matches_torch():
    a = np.array([[0.5, 2.0, 0.1], [3.0, 0.2, 0.0], [0.3, 0.1, 1.5]])
    assert np.linalg.det(a) < 0
    x = dg.tensor(a, requires_grad=True)
    dla.slogdet(x).logabsdet.backward()
    t = torch.tensor(a, requires_grad=True)
    torch.linalg.slogdet(t)[1].backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


# -- einsum string forms
@pytest.mark.parametrize("spec, shapes", [
    ("bA", [(2, 3)]),  # implicit output sorts letters: uppercase before lowercase, as NumPy
    (" ij , jk -> ik ", [(2, 3), (3, 4)]),
    ("i...j->j...i", [(2, 3, 4, 5)]),
    ("...ij->...", [(2, 3, 4)]),
    ("...", [(2, 3)]),
    ("i...,i...->...", [(3, 2), (3, 1)]),
    ("iii->i", [(3, 3, 3)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 4)]),
    ("ij,ij,ij->", [(2, 3), (2, 3), (2, 3)]),
    ("i,j,k->ijk", [(2,), (3,), (2,)]),
    ("ij,jk,kl,lm->im", [(2, 3), (3, 2), (2, 3), (3, 2)]),
])
def test_einsum_forms_values_and_derivatives(spec, shapes):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s) for s in shapes]
    np.testing.assert_allclose(ops.einsum(spec, *xs), np.einsum(spec, *xs), rtol=1e-12, atol=1e-12)
    assert dg.gradcheck(lambda *a: ops.einsum(spec, *a), *xs, order=2)
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    torch.einsum(spec.replace(" ", ""), *ts).sum().backward()
    ds = [dg.tensor(x, requires_grad=True) for x in xs]
    dg.sum(ops.einsum(spec, *ds)).backward()
    for d, t in zip(ds, ts):
        np.testing.assert_allclose(d.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_einsum_attrs_hold_the_canonical_explicit_subscripts():
    x = dg.tensor(np.ones((2, 3, 4)), requires_grad=True)
    out = ops.einsum("...ij", x)
    assert out.op.name == "einsum"
    lhs, rhs = out.attrs["subscripts"].split("->")
    assert "." not in lhs and len(lhs) == 3 and rhs == lhs[0] + "ij"


def test_einsum_gives_no_gradient_to_constant_operands():
    w = dg.tensor(np.ones((3, 2)), requires_grad=True)
    out = ops.einsum("ij,jk->ik", np.ones((4, 3)), w)
    out.backward(np.ones((4, 2)))
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 4.0))


def test_einsum_explicit_path_optimize():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s) for s in [(2, 3), (3, 4), (4, 2)]]
    path = np.einsum_path("ij,jk,kl->il", *xs, optimize="optimal")[0]
    np.testing.assert_allclose(ops.einsum("ij,jk,kl->il", *xs, optimize=path), np.einsum("ij,jk,kl->il", *xs),
                               rtol=1e-12)


@pytest.mark.parametrize("spec, shapes, match", [
    ("ij,jk", [(2, 3)], "name 2 operand"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript 'j' has size 3"),
    ("ii", [(2, 3)], "repeats subscript 'i'"),
    ("ij->k", [(2, 3)], "'k' never appears"),
    ("ij->ii", [(2, 3)], "more than once"),
    ("...i->i", [(2, 3)], "no '...'"),
    ("ij", [(2, 3, 4)], "operand 0 has 3 dimension"),
    ("i$", [(2, 3)], "invalid character"),
    ("i->i->i", [(2,)], "at most one '->'"),
])
def test_einsum_errors_name_the_op_and_the_line(spec, shapes, match):
    xs = [np.ones(s) for s in shapes]
    line = _here()
    with pytest.raises(ValueError, match=match) as info: ops.einsum(spec, *xs)  # noqa: E701
    assert "einsum" in str(info.value) and line in str(info.value)


def test_einsum_sublist_form_is_numpys():  # more in tests/test_autograd_conveniences.py
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    assert ops.einsum(a, [0], b, [0]) == np.einsum(a, [0], b, [0])
    with pytest.raises(TypeError, match=r"einsum: the sublist of operand 0 must be a list .*got float"):
        ops.einsum(a, 1.5, b, [0])


# -- norms at zero: gradient 0, as PyTorch
@pytest.mark.parametrize("shape, kw", [
    ((3,), {}), ((2, 3), {}), ((2, 3), {"axis": 1}), ((2, 3), {"ord": "fro"}), ((3,), {"ord": 1}),
    ((3,), {"ord": np.inf}), ((3,), {"ord": 3}), ((2, 3), {"ord": 1}), ((2, 3), {"ord": np.inf}),
])
def test_norm_gradient_at_zero_is_zero_as_torch(shape, kw):
    x = dg.tensor(np.zeros(shape), requires_grad=True)
    out = dla.norm(x, **kw)
    dg.sum(out).backward()
    tkw = {{"axis": "dim"}.get(k, k): v for k, v in kw.items()}
    t = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    torch.linalg.norm(t, **tkw).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(shape))
    _, tangent = dg.jvp(lambda a: dla.norm(a, **kw), (np.zeros(shape),), (np.ones(shape),))
    assert np.all(np.isfinite(tangent))


def test_norm_second_derivative_at_zero_is_finite():
    hess = dg.hessian(lambda a: dla.norm(a))(np.zeros(3))
    np.testing.assert_array_equal(hess, np.zeros((3, 3)))
    x = dg.tensor(np.array([0.0, 0.0]), requires_grad=True)
    dla.norm(x).backward(create_graph=True)
    assert not np.any(np.isnan(x.grad.numpy()))


def test_norm_of_a_partly_zero_batch():
    x = np.array([[0.0, 0.0], [3.0, 4.0]])
    g = dg.grad(lambda a: dg.sum(dla.norm(a, axis=1)))(x)
    np.testing.assert_allclose(g, [[0.0, 0.0], [0.6, 0.8]])


def test_norm_ord_zero_counts_and_has_no_gradient():
    x = dg.tensor([0.0, 2.0, -1.0], requires_grad=True)
    out = dla.norm(x, ord=0)
    assert out.item() == 2.0 and not out.requires_grad


def test_norm_of_integers_is_float():
    assert dla.norm(np.array([3, 4])) == 5.0
    assert dla.norm(np.array([3, 4])).dtype == np.float64


def test_norm_float32_at_zero_stays_float32():
    x = dg.tensor(np.zeros(3, np.float32), requires_grad=True)
    dla.norm(x).backward()
    assert x.grad.dtype == np.float32


@pytest.mark.parametrize("x, kw, match", [
    (np.ones(3), {"ord": "fro"}, "invalid norm order 'fro' for vectors"),
    (np.ones((2, 2)), {"ord": 3}, "invalid norm order 3 for matrices"),
    (np.ones((2, 2, 2)), {"ord": 1}, "1-D or 2-D"),
    (np.ones((2, 2)), {"axis": (0, 0)}, "repeated axis 0"),
    (np.ones((2, 2)), {"axis": 2}, "out of bounds"),
])
def test_norm_errors(x, kw, match):
    with pytest.raises(ValueError, match=match):
        dla.norm(x, **kw)


# -- cholesky
def test_cholesky_gradient_is_symmetric_as_torch():
    rng = np.random.default_rng(2)
    m = rng.standard_normal((3, 3))
    a = m @ m.T + 3 * np.eye(3)
    u = rng.standard_normal((3, 3))
    x = dg.tensor(a, requires_grad=True)
    dla.cholesky(x).backward(u)
    t = torch.tensor(a, requires_grad=True)
    torch.linalg.cholesky(t).backward(torch.tensor(u))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), x.grad.numpy().T, rtol=1e-12)
    # the two modes agree on the raw (unsymmetrised) input
    np.testing.assert_allclose(dg.jacobian(dla.cholesky)(a), dg.jacfwd(dla.cholesky)(a), rtol=1e-10, atol=1e-12)


def test_cholesky_of_an_indefinite_matrix_is_a_clear_error():
    with pytest.raises(np.linalg.LinAlgError, match="cholesky.*positive definite"):
        dla.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))


# -- errors
@pytest.mark.parametrize("f, args, match", [
    (dla.inv, (np.ones((2, 3)),), r"linalg.inv: expected a square matrix.*\(2, 3\)"),
    (dla.det, (np.ones(3),), r"linalg.det: expected a square matrix.*\(3,\)"),
    (dla.slogdet, (np.ones((2, 3)),), r"linalg.slogdet: expected a square"),
    (dla.cholesky, (np.ones((3, 2)),), r"linalg.cholesky: expected a square"),
    (dla.solve, (np.eye(3), np.ones(2)), r"linalg.solve: b of shape \(2,\) does not fit a of shape \(3, 3\)"),
    (dla.solve, (np.eye(3), np.ones((2, 3))), r"linalg.solve: b of shape \(2, 3\)"),
    (dla.solve, (np.ones((2, 3, 3)), np.ones((4, 3, 1))), r"linalg.solve: the batch dimensions"),
    (ops.dot, (np.ones((2, 3)), np.ones((2, 3))), r"dot: shapes \(2, 3\) and \(2, 3\) not aligned"),
    (ops.inner, (np.ones((2, 3)), np.ones((2, 2))), r"inner: shapes \(2, 3\) and \(2, 2\) not aligned"),
    (ops.vdot, (np.ones(3), np.ones(4)), r"vdot: arrays of shapes \(3,\) and \(4,\)"),
    (ops.tensordot, (np.ones((2, 3)), np.ones((3, 2))), r"tensordot: shape mismatch for sum"),
    (ops.diag, (np.ones((2, 2, 2)),), r"diag: input must be 1-D or 2-D"),
    (ops.diagonal, (np.ones((2, 2)), 0, 1, -1), r"diagonal: axis1 and axis2 cannot be the same"),
])
def test_bad_shapes_name_the_op_shapes_and_line(f, args, match):
    line = _here()
    with pytest.raises(ValueError, match=match) as info: f(*args)  # noqa: E701
    assert line in str(info.value), str(info.value)


def test_singular_matrix_names_inv():
    with pytest.raises(np.linalg.LinAlgError, match=r"inv: Singular matrix.*\(2, 2\)"):
        dla.inv(dg.tensor(np.zeros((2, 2))))


# -- shape rules with unknown sizes (static graphs)
def test_shape_rules_with_unknown_sizes():
    reg = dg.REGISTRY
    assert reg["einsum"].shape((None, 3), (3, None), subscripts="ij,jk->ik") == (None, None)
    assert reg["einsum"].shape((None, 3), (4, 3), subscripts="ij,ij->ij") == (4, 3)
    assert reg["einsum"].shape((1, 3), (4, 3), subscripts="ij,ij->i") == (4,)
    assert reg["inv"].shape((None, 3, 3)) == (None, 3, 3)
    assert reg["det"].shape((None, 3, 3)) == (None,)
    assert reg["solve"].shape((None, 3, 3), (3,)) == (None, 3)
    assert reg["solve"].shape((3, 3), (None, 3, 2)) == (None, 3, 2)
    assert reg["l2_norm"].shape((None, 3), axis=(1,), keepdims=True) == (None, 1)
    with pytest.raises(ValueError, match="einsum: subscript 'j'"):
        reg["einsum"].shape((2, 3), (4, 5), subscripts="ij,jk->ik")
