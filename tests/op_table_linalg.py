"""Op-table rows for linear algebra (appended to op_table.CASES).

Matrices that get inverted or factored are made well conditioned inside the row (a
diagonal shift, or a symmetric positive-definite construction for `cholesky`), so that
central differences and the comparison with PyTorch are meaningful. The shifts are
float32 so that float32 rows stay float32.
"""

from __future__ import annotations

import numpy as np

from dagrad import imag as dg_imag
from dagrad import linalg as dla
from dagrad import real as dg_real
from dagrad.ops import linalg as dla_ops
from dagrad.ops.linalg import diag, diagonal, dot, einsum, inner, outer, tensordot, trace, vdot
from op_table import case


def _torch():
    import torch

    return torch


def _shift(a, k=3.0):
    """a + k*I (float32 I, so a float32 `a` stays float32): diagonally dominant for |a| <= 1."""
    return a + k * np.eye(a.shape[-1], dtype=np.float32)


def _tshift(a, k=3.0):
    return a + k * _torch().eye(a.shape[-1], dtype=a.dtype)


def _spd(a):
    """A symmetric positive-definite matrix (stack) from any square `a` with |a| <= 1."""
    return (a + a.swapaxes(-1, -2)) * 0.5 + 4 * np.eye(a.shape[-1], dtype=np.float32)


def _tspd(a):
    return (a + a.transpose(-1, -2)) * 0.5 + 4 * _torch().eye(a.shape[-1], dtype=a.dtype)


_FLIP = np.array([-1.0, 1.0, 1.0], dtype=np.float32)  # negates a column: a negative determinant

# -- products: dot, vdot, inner, outer, tensordot are composites of matmul / multiply
for _a, _b, _tref in [
    ((3,), (3,), lambda a, b: _torch().dot(a, b)),
    ((2, 3), (3,), lambda a, b: a @ b),
    ((3,), (3, 4), lambda a, b: a @ b),
    ((2, 3), (3, 4), lambda a, b: a @ b),
    ((2, 2, 3), (3,), lambda a, b: a @ b),
    ((3,), (2, 3, 4), lambda a, b: a @ b),
    ((2, 3), (4, 3, 2), lambda a, b: _torch().tensordot(a, b, dims=([-1], [-2]))),
    ((2, 2, 3), (2, 3, 2), lambda a, b: _torch().tensordot(a, b, dims=([-1], [-2]))),
    ((), (2, 3), lambda a, b: a * b),
]:
    case("matmul" if _a and _b else "multiply", dot, np.dot, _a, _b, torch_ref=_tref, name=f"dot{_a}{_b}")

for _a, _b in [((4,), (4,)), ((2, 3), (3, 2))]:
    case("matmul", vdot, np.vdot, _a, _b, name=f"vdot{_a}{_b}",
         torch_ref=lambda a, b: _torch().vdot(a.reshape(-1), b.reshape(-1)))

for _a, _b in [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (4, 3)), ((), (3,))]:
    case("matmul" if _a else "multiply", inner, np.inner, _a, _b, name=f"inner{_a}{_b}",
         torch_ref=lambda a, b: _torch().inner(a, b))

for _a, _b in [((3,), (4,)), ((2, 2), (3,))]:
    case("multiply", outer, np.outer, _a, _b, name=f"outer{_a}{_b}",
         torch_ref=lambda a, b: _torch().outer(a.reshape(-1), b.reshape(-1)))

for _a, _b, _axes in [((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])),
                      ((2,), (3,), 0), ((2, 3), (3, 4), 1), ((3, 2), (2, 3), ([0, 1], [1, 0]))]:
    case("matmul", lambda a, b, ax=_axes: tensordot(a, b, ax), lambda a, b, ax=_axes: np.tensordot(a, b, ax),
         _a, _b, name=f"tensordot{_a}{_b} axes={_axes}",
         torch_ref=lambda a, b, ax=_axes: _torch().tensordot(a, b, dims=ax))

# -- einsum: its own primitive (explicit, implicit, '...', diagonals, broadcasting, 3 operands)
for _spec, _shapes in [
    ("ij,jk->ik", ((2, 3), (3, 4))),
    ("ij,jk", ((2, 3), (3, 4))),
    ("i,i->", ((3,), (3,))),
    ("i,j->ij", ((3,), (2,))),
    ("ij->ji", ((2, 3),)),
    ("ij->i", ((2, 3),)),
    ("ij->", ((2, 3),)),
    ("ii->", ((3, 3),)),
    ("ii->i", ((3, 3),)),
    ("ii", ((3, 3),)),
    ("iij->j", ((2, 2, 3),)),
    ("ii,i->i", ((3, 3), (3,))),
    ("ijk,ik->j", ((2, 3, 4), (2, 4))),
    ("bij,bjk->bik", ((2, 2, 3), (2, 3, 2))),
    ("...ij,...jk->...ik", ((2, 2, 3), (3, 2))),
    ("...i,i->...", ((2, 3, 3), (3,))),
    ("i...", ((2, 3),)),
    ("ij,ij->ij", ((1, 3), (2, 3))),
    (",i->i", ((), (3,))),
    ("ij,jk,kl->il", ((2, 3), (3, 2), (2, 2))),
    ("i,i,i->i", ((3,), (3,), (3,))),
    ("iJ,Jk->ki", ((2, 3), (3, 2))),
]:
    case("einsum", lambda *xs, s=_spec: einsum(s, *xs), lambda *xs, s=_spec: np.einsum(s, *xs), *_shapes,
         name=f"einsum({_spec!r}){_shapes}", torch_ref=lambda *xs, s=_spec: _torch().einsum(s, *xs))
case("einsum", lambda a, b: einsum("ij,jk->ik", a, b, optimize=True),
     lambda a, b: np.einsum("ij,jk->ik", a, b, optimize=True), (2, 3), (3, 2), name="einsum optimize=True")

# -- diagonals: composites of getitem (extraction) and index_add (construction)
for _shape, _kw in [((3, 3), {}), ((3, 4), {"offset": 1}), ((3, 3), {"offset": -1}),
                    ((2, 3, 3), {"axis1": 1, "axis2": 2}), ((3, 4, 2), {"offset": 1, "axis1": 2, "axis2": 0})]:
    case("getitem", lambda x, kw=_kw: trace(x, **kw), lambda x, kw=_kw: np.trace(x, **kw), _shape,
         name=f"trace{_shape} {_kw}",
         torch_ref=lambda x, kw=_kw: _torch().diagonal(x, kw.get("offset", 0), kw.get("axis1", 0),
                                                       kw.get("axis2", 1)).sum(-1))
    case("getitem", lambda x, kw=_kw: diagonal(x, **kw), lambda x, kw=_kw: np.diagonal(x, **kw), _shape,
         name=f"diagonal{_shape} {_kw}",
         torch_ref=lambda x, kw=_kw: _torch().diagonal(x, kw.get("offset", 0), kw.get("axis1", 0),
                                                       kw.get("axis2", 1)))
case("getitem", trace, np.trace, (3, 3), name="trace", torch_ref=lambda x: _torch().trace(x))
for _shape, _k in [((3,), 0), ((3,), 1), ((2,), -2), ((3, 4), 0), ((3, 4), -1), ((3, 4), 2)]:
    case("index_add" if len(_shape) == 1 else "getitem", lambda x, k=_k: diag(x, k), lambda x, k=_k: np.diag(x, k),
         _shape, name=f"diag{_shape} k={_k}", torch_ref=lambda x, k=_k: _torch().diag(x, k))

# -- numpy.linalg
for _shape in [(3, 3), (2, 3, 3), (1, 1)]:
    case("inv", lambda a: dla.inv(_shift(a)), lambda a: np.linalg.inv(_shift(a)), _shape, low=-1.0, high=1.0,
         name=f"inv{_shape}", torch_ref=lambda a: _torch().linalg.inv(_tshift(a)))
for _shape in [(3, 3), (2, 3, 3), (2, 2)]:
    case("det", lambda a: dla.det(_shift(a)), lambda a: np.linalg.det(_shift(a)), _shape, low=-1.0, high=1.0,
         name=f"det{_shape}", torch_ref=lambda a: _torch().linalg.det(_tshift(a)))
case("det", lambda a: dla.det(_shift(a) * _FLIP), lambda a: np.linalg.det(_shift(a) * _FLIP), (3, 3),
     low=-1.0, high=1.0, name="det < 0",
     torch_ref=lambda a: _torch().linalg.det(_tshift(a) * _torch().tensor(_FLIP, dtype=a.dtype)))
for _shape in [(3, 3), (2, 3, 3)]:
    case("logabsdet", lambda a: dla.slogdet(_shift(a))[1], lambda a: np.linalg.slogdet(_shift(a))[1], _shape,
         low=-1.0, high=1.0, name=f"slogdet{_shape}.logabsdet",
         torch_ref=lambda a: _torch().linalg.slogdet(_tshift(a))[1])
case("logabsdet", lambda a: dla.slogdet(_shift(a) * _FLIP).logabsdet,
     lambda a: np.linalg.slogdet(_shift(a) * _FLIP).logabsdet, (3, 3), low=-1.0, high=1.0,
     name="slogdet det < 0",
     torch_ref=lambda a: _torch().linalg.slogdet(_tshift(a) * _torch().tensor(_FLIP, dtype=a.dtype))[1])
case("slogdet_sign", lambda a: dla.slogdet(a).sign, lambda a: np.linalg.slogdet(a).sign, (4, 3, 3),
     differentiable=False, name="slogdet.sign")

for _a, _b in [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 2)),
               ((2, 3, 3), (3, 2)), ((3, 3), (2, 3, 2)), ((1, 3, 3), (2, 3, 1))]:
    case("solve", lambda a, b: dla.solve(_shift(a), b), lambda a, b: np.linalg.solve(_shift(a), b), _a, _b,
         low=-1.0, high=1.0, name=f"solve{_a}{_b}", torch_ref=lambda a, b: _torch().linalg.solve(_tshift(a), b))

for _shape, _upper in [((3, 3), False), ((2, 3, 3), False), ((3, 3), True), ((1, 1), False)]:
    case("cholesky", lambda a, u=_upper: dla.cholesky(_spd(a), upper=u),
         lambda a, u=_upper: np.linalg.cholesky(_spd(a), upper=u), _shape, low=-1.0, high=1.0,
         name=f"cholesky{_shape} upper={_upper}",
         torch_ref=lambda a, u=_upper: _torch().linalg.cholesky(_tspd(a), upper=u))

# norm: the 2-norm / Frobenius norm is the l2_norm primitive; other orders are composites
for _shape, _kw in [((4,), {}), ((2, 3), {}), ((2, 3, 4), {}), ((2, 3), {"axis": 1, "keepdims": True}),
                    ((2, 3), {"ord": 2, "axis": 0}), ((2, 3, 4), {"axis": (0, 2)}), ((3, 4), {"ord": "fro"}),
                    ((2, 3), {"axis": (-1, 0), "keepdims": True}), ((), {})]:
    _tkw = {{"axis": "dim", "keepdims": "keepdim"}.get(k, k): v for k, v in _kw.items()}
    case("l2_norm", lambda x, kw=_kw: dla.norm(x, **kw), lambda x, kw=_kw: np.linalg.norm(x, **kw), _shape,
         name=f"norm{_shape} {_kw}", torch_ref=lambda x, kw=_tkw: _torch().linalg.norm(x, **kw))
for _shape, _kw in [((4,), {"ord": 1}), ((4,), {"ord": np.inf}), ((4,), {"ord": -np.inf}), ((4,), {"ord": 3}),
                    ((2, 4), {"ord": 0.5, "axis": 1}), ((3, 4), {"ord": 1}), ((3, 4), {"ord": -1}),
                    ((3, 4), {"ord": np.inf}), ((3, 4), {"ord": -np.inf}),
                    ((2, 3, 4), {"ord": 1, "axis": (2, 0), "keepdims": True})]:
    _tkw = {{"axis": "dim", "keepdims": "keepdim"}.get(k, k): v for k, v in _kw.items()}
    case("abs", lambda x, kw=_kw: dla.norm(x, **kw), lambda x, kw=_kw: np.linalg.norm(x, **kw), _shape,
         name=f"norm{_shape} {_kw}", torch_ref=lambda x, kw=_tkw: _torch().linalg.norm(x, **kw))

# NumPy integers as axes, offsets and counts: accepted, the same values and derivatives as Python ints
_I = np.int64
case("getitem", lambda x: trace(x, _I(1), _I(2), _I(-3)), lambda x: np.trace(x, 1, 2, 0), (3, 4, 2),
     name="trace(np.int64 offset and axes)")
case("index_add", lambda x: diag(x, np.int32(-1)), lambda x: np.diag(x, -1), (3,), name="diag(x, np.int32(-1))")
case("matmul", lambda a, b: tensordot(a, b, _I(1)), lambda a, b: np.tensordot(a, b, 1), (2, 3), (3, 2),
     name="tensordot(axes=np.int64(1))")
case("matmul", lambda a, b: tensordot(a, b, ([_I(0)], np.array([1]))), lambda a, b: np.tensordot(a, b, ([0], [1])),
     (3, 2), (2, 3), name="tensordot(np.int64 axis pairs)")
case("l2_norm", lambda x: dla.norm(x, axis=_I(-1)), lambda x: np.linalg.norm(x, axis=-1), (2, 3),
     name="norm(axis=np.int64(-1))")
case("abs", lambda x: dla.norm(x, ord=1, axis=(_I(1), np.intp(0))), lambda x: np.linalg.norm(x, ord=1, axis=(1, 0)),
     (2, 3), name="norm(ord=1, np.int64 axis pair)")

# -- decompositions: outputs that are unique although singular vectors' signs are not
# (s, |U|, rank-one terms u_i v_i^T, U @ diag(s) @ Vh, projections, eigenvalues, Q @ R)
_L = np.linalg


def _rank1(u, vh, i=0):
    return u[..., :, i:i + 1] * vh[..., i:i + 1, :]


def _tsvd(a):
    return _torch().linalg.svd(a, full_matrices=False)


for _shape in [(3, 3), (4, 3), (3, 4), (2, 4, 3), (2, 1, 3, 2)]:
    case("svd_s", lambda a: dla.svd(a, compute_uv=False), lambda a: _L.svd(a, compute_uv=False), _shape,
         name=f"svd{_shape}.S", torch_ref=lambda a: _torch().linalg.svdvals(a))
    case("svd_u", lambda a: abs(dla.svd(a, full_matrices=False).U), lambda a: abs(_L.svd(a, full_matrices=False).U),
         _shape, name=f"svd{_shape} |U|", torch_ref=lambda a: _tsvd(a).U.abs())
    case("svd_vt", lambda a: abs(dla.svd(a, full_matrices=False).Vh),
         lambda a: abs(_L.svd(a, full_matrices=False).Vh), _shape, name=f"svd{_shape} |Vh|",
         torch_ref=lambda a: _tsvd(a).Vh.abs())
    case("svd_u", lambda a: _rank1(*dla.svd(a, full_matrices=False)[::2], 1),
         lambda a: _rank1(*_L.svd(a, full_matrices=False)[::2], 1), _shape, name=f"svd{_shape} u_1 v_1^T",
         torch_ref=lambda a: _rank1(_tsvd(a).U, _tsvd(a).Vh, 1))
case("svd_u", lambda a: (lambda r: r.U @ (r.S[..., None] * r.Vh))(dla.svd(a)),
     lambda a: (lambda r: r.U @ (r.S[..., None] * r.Vh))(_L.svd(a)), (2, 3, 3), name="svd U @ diag(S) @ Vh")
case("svd_u", lambda a: (lambda u: u @ u.swapaxes(-1, -2))(dla.svd(a, full_matrices=False).U),
     lambda a: (lambda u: u @ u.swapaxes(-1, -2))(_L.svd(a, full_matrices=False).U), (4, 2), name="svd U U^T")

for _shape, _uplo in [((3, 3), "L"), ((2, 3, 3), "L"), ((3, 3), "U"), ((1, 1), "L")]:
    case("eigh_w", lambda a, u=_uplo: dla.eigh(_spd(a), u).eigenvalues,
         lambda a, u=_uplo: _L.eigh(_spd(a), u).eigenvalues, _shape, low=-1.0, high=1.0,
         name=f"eigh{_shape} UPLO={_uplo} eigenvalues",
         torch_ref=lambda a: _torch().linalg.eigvalsh(_tspd(a)))
    case("eigh_v", lambda a, u=_uplo: abs(dla.eigh(_spd(a), u).eigenvectors),
         lambda a, u=_uplo: abs(_L.eigh(_spd(a), u).eigenvectors), _shape, low=-1.0, high=1.0,
         name=f"eigh{_shape} UPLO={_uplo} |eigenvectors|",
         torch_ref=lambda a: _torch().linalg.eigh(_tspd(a)).eigenvectors.abs())

for _shape in [(3, 3), (4, 3), (2, 4, 2), (3, 5)]:
    case("qr_q", lambda a: dla.qr(a).Q, lambda a: _L.qr(a).Q, _shape, name=f"qr{_shape}.Q",
         torch_ref=lambda a: _torch().linalg.qr(a).Q)
    case("qr_r", lambda a: dla.qr(a).R, lambda a: _L.qr(a).R, _shape, name=f"qr{_shape}.R",
         torch_ref=lambda a: _torch().linalg.qr(a).R)
case("qr_r", lambda a: dla.qr(a, mode="r"), lambda a: _L.qr(a, mode="r"), (4, 3), name="qr mode='r'")

for _shape, _kw in [((3, 3), {}), ((4, 3), {}), ((2, 3, 4), {}), ((3, 2), {"rcond": 1e-3})]:
    case("pinv", lambda a, kw=_kw: dla.pinv(a, **kw), lambda a, kw=_kw: _L.pinv(a, **kw), _shape,
         name=f"pinv{_shape} {_kw}", torch_ref=lambda a: _torch().linalg.pinv(a))

for _shape, _n in [((3, 3), 1), ((3, 3), 2), ((2, 3, 3), 5), ((3, 3), -2), ((3, 3), 0)]:
    case("matmul" if _n > 0 else "inv" if _n < 0 else "add",
         lambda a, n=_n: dla.matrix_power(_shift(a), n), lambda a, n=_n: _L.matrix_power(_shift(a), n), _shape,
         low=-1.0, high=1.0, name=f"matrix_power{_shape} n={_n}",
         torch_ref=lambda a, n=_n: _torch().linalg.matrix_power(_tshift(a), n))

for _shape, _kw in [((3, 4), {"ord": 2}), ((3, 4), {"ord": -2}), ((4, 3), {"ord": "nuc"}),
                    ((2, 3, 4), {"ord": 2, "axis": (2, 0), "keepdims": True}),
                    ((2, 3, 4), {"ord": "nuc", "axis": (1, 2)})]:
    _tkw = {{"axis": "dim", "keepdims": "keepdim"}.get(k, k): v for k, v in _kw.items()}
    case("svd_s", lambda x, kw=_kw: dla.norm(x, **kw), lambda x, kw=_kw: _L.norm(x, **kw), _shape,
         name=f"norm{_shape} {_kw}", torch_ref=lambda x, kw=_tkw: _torch().linalg.norm(x, **kw))

# det's derivative, the cofactor matrix adj(A)^T, is an op of its own (computed through the SVD)
case("cofactor", lambda a: dla_ops._cofactor.function(_shift(a)),
     lambda a: _L.det(_shift(a))[..., None, None] * _L.inv(_shift(a)).swapaxes(-1, -2), (2, 3, 3), low=-1.0,
     high=1.0, name="cofactor(2, 3, 3)")

# logabsdet's derivative A^-T comes from inv_inf, the inverse with inf/nan (not LinAlgError) at a singular matrix
case("inv_inf", lambda a: dla_ops._inv_inf.function(_shift(a)), lambda a: _L.inv(_shift(a)), (2, 3, 3), low=-1.0,
     high=1.0, name="inv_inf(2, 3, 3)")

# complex matrices: rows take real arguments, so a + 1j b is the matrix; real outputs of it are compared
_j = np.complex64(1j)  # complex64 times float32 stays complex64


def _cplx(a, b):
    return a + _j * b


def _re_im(z, re=np.real, im=np.imag):
    return re(z) + 0.5 * im(z)


case("slogdet_phase", lambda a, b: _re_im(dla.slogdet(_shift(_cplx(a, b))).sign, dg_real, dg_imag),
     lambda a, b: _re_im(_L.slogdet(_shift(_cplx(a, b))).sign), (2, 3, 3), (2, 3, 3), low=-1.0, high=1.0,
     name="slogdet(complex).sign")
# eig: eigenvalues in LAPACK's order (both sides call it), eigenvectors up to their phase: |v|
for _shape in [(3, 3), (2, 3, 3)]:
    case("eig_w", lambda a: _re_im(dla.eig(_shift(a, 1.0)).eigenvalues, dg_real, dg_imag),
         lambda a: _re_im(_L.eig(_shift(a, 1.0)).eigenvalues.astype(complex)), _shape, low=-1.0, high=1.0,
         name=f"eig{_shape} eigenvalues")
    case("eig_v", lambda a: abs(dla.eig(_shift(a, 1.0)).eigenvectors), lambda a: abs(_L.eig(_shift(a, 1.0))[1]),
         _shape, low=-1.0, high=1.0, name=f"eig{_shape} |eigenvectors|")
case("eig_w", lambda a, b: _re_im(dla.eigvals(_cplx(a, b)), dg_real, dg_imag),
     lambda a, b: _re_im(_L.eigvals(_cplx(a, b))), (3, 3), (3, 3), name="eigvals(complex)")
