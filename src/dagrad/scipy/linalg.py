"""`dagrad.scipy.linalg`: SciPy's triangular, Cholesky, Sylvester and banded solvers and the matrix
exponential and square root, differentiable (SciPy computes the values; it is the optional extra
`dagrad[scipy]`).

`solve_triangular`, `solve_sylvester`, `expm` and `sqrtm` are ops whose rules are written with each
other, so every order works in both modes: the derivative of `expm` is the upper-right block of the
exponential of a block matrix (Mathias' theorem), that of `sqrtm` and of `solve_sylvester` a Sylvester
equation. `cho_factor`, `cho_solve` and `solve_banded` are compositions. The inputs are single
matrices (no stacks), as SciPy's.

>>> import numpy as np
>>> import dagrad as dg
>>> from dagrad.scipy import linalg
>>> a = np.array([[2.0, 0.0], [1.0, 4.0]])
>>> linalg.solve_triangular(a, np.array([2.0, 9.0]), lower=True)
array([1., 2.])
>>> float(dg.grad(lambda s: linalg.expm(s * a)[0, 0])(0.0))  # d/ds exp(s a)[0, 0] at 0 is a[0, 0]
2.0
"""

from __future__ import annotations

import numpy as np

from .._core.dtypes import floating
from .._core.errors import user_error
from .._core.op import apply, defop, public
from .._core.shapes import dtype_of as _dtype
from .._core.shapes import shape_of as _shape
from ..ops.elementwise import conj, real, where
from ..ops.linalg import cholesky, matmul, solve
from ..ops.shape import concatenate, expand_dims, getitem, squeeze, swapaxes

try:  # the values come from SciPy, an optional extra
    import scipy.linalg as _sl
except ImportError:  # pragma: no cover  (the suite runs with SciPy)
    _sl = None

__all__ = ["cho_factor", "cho_solve", "expm", "solve_banded", "solve_sylvester", "solve_triangular", "sqrtm"]


def _needs_scipy(name):
    if _sl is None:
        raise user_error(ImportError, f"dagrad.scipy.linalg.{name}", "needs SciPy, an optional extra: pip install "
                         "'dagrad[scipy]' (or pip install scipy)")


def _where(name):
    return f"dagrad.scipy.linalg.{name}"


def _matrix(name, what, x, square=True):
    shape = _shape(x)
    if len(shape) != 2 or (square and None not in shape and shape[0] != shape[1]):
        kind = "a square matrix (n, n)" if square else "a matrix"
        raise user_error(ValueError, _where(name), f"{what} must be {kind}, got shape {tuple(shape)}", x)
    return shape


def _check_rhs(name, a, b):
    """b is (n,) or (n, k) for an (n, n) a, as SciPy's solvers take it."""
    n, sb = _size(a), _shape(b)
    if len(sb) not in (1, 2) or (None not in (n, sb[0]) and sb[0] != n):
        raise user_error(ValueError, _where(name), f"b of shape {tuple(sb)} does not fit a of shape "
                         f"{tuple(_shape(a))}: b must be ({n},) or ({n}, k)", a, b)


def _size(a):
    """n of a square (n, n) matrix (known from either axis in a static graph of unknown sizes)."""
    shape = _shape(a)
    return shape[1] if shape[1] is not None else shape[0]


def _result_dtype(*arrays):
    """np.linalg's result dtype (the `floating` rule the ops declare): float64 (complex128) as soon as one
    input is an integer or a bool, else the inputs' promoted type; complex stays complex (the rules of
    these functions use plain transposes, so they hold for complex matrices in dagrad's convention)."""
    dtypes = [np.result_type(x) for x in arrays]  # no table: the forwards that call this are exported standalone
    if all(d.kind in "fc" for d in dtypes):
        return np.result_type(*dtypes)
    return np.dtype(np.complex128 if any(d.kind == "c" for d in dtypes) else np.float64)


def _conj(x):
    """conj(x) for complex values, x itself for real ones (the Hermitian transpose is then the transpose)."""
    return conj(x) if _dtype(x).kind == "c" else x


def _mT(x):
    return swapaxes(x, -1, -2)


def _column(v, vector):
    return expand_dims(v, -1) if vector else v


def _uncolumn(v, vector):
    return squeeze(v, -1) if vector else v


# -- solve_triangular: x with op(A) x = b, A the lower (or upper) triangle of a, its diagonal taken as
# ones when unit_diagonal; op is the identity (trans=0) or the transpose (trans=1)
def _triangle_mask(n, lower, unit_diagonal, dtype):
    """The entries of `a` that A is made of: 1 where they are read, 0 elsewhere."""
    mask = np.tril(np.ones((n, n))) if lower else np.triu(np.ones((n, n)))
    if unit_diagonal:
        mask -= np.eye(n)
    return mask.astype(dtype)


def _solve_triangular_forward(a, b, trans, lower, unit_diagonal):
    out = _sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    return out.astype(_result_dtype(a, b), copy=False)


def _solve_triangular_shape(a, b, trans, lower, unit_diagonal):
    return tuple(b)


def _solve_triangular_vjp(g, out, a, b, trans, lower, unit_diagonal):
    vector = len(_shape(b)) == 1
    gb = _solve_triangular(a, g, 1 - trans, lower, unit_diagonal)  # op(A)^-T g
    gbc, xc = _column(gb, vector), _column(out, vector)
    ga = -matmul(gbc, _mT(xc)) if trans == 0 else -matmul(xc, _mT(gbc))
    return ga * _triangle_mask(_size(a), lower, unit_diagonal, _dtype(ga)), gb


def _solve_triangular_jvp(tangents, out, a, b, trans, lower, unit_diagonal):
    ta, tb = tangents
    vector = len(_shape(b)) == 1
    rhs = tb
    if ta is not None:  # d op(A) x moves to the right-hand side
        dm = ta * _triangle_mask(_size(a), lower, unit_diagonal, _dtype(ta))
        da_x = _uncolumn(matmul(dm if trans == 0 else _mT(dm), _column(out, vector)), vector)
        rhs = -da_x if rhs is None else rhs - da_x
    return _solve_triangular(a, rhs, trans, lower, unit_diagonal)


_solve_triangular_op = defop("solve_triangular", _solve_triangular_forward, vjp=_solve_triangular_vjp,
                             jvp=_solve_triangular_jvp, shape=_solve_triangular_shape, dtype=floating, numpy_only=True,
                             validates=True)  # a singular matrix raises LinAlgError


def _solve_triangular(a, b, trans, lower, unit_diagonal):
    return apply(_solve_triangular_op, (a, b), {"trans": trans, "lower": lower, "unit_diagonal": unit_diagonal})


_TRANS = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}  # 'C' (2) is 'T' of conj(a)


@public(_solve_triangular_op)
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    """`scipy.linalg.solve_triangular`: x with `a @ x = b` (`trans=1` or 'T': `a.T @ x = b`), `a` read as
    its lower triangle (`lower=True`) or its upper one, with ones on the diagonal if `unit_diagonal`.
    The entries of `a` that are not read get no gradient.

    >>> solve_triangular(np.array([[2.0, 1.0], [0.0, 4.0]]), np.array([4.0, 8.0]))
    array([1., 2.])
    """
    _needs_scipy("solve_triangular")
    _matrix("solve_triangular", "a", a)
    _check_rhs("solve_triangular", a, b)
    if not isinstance(trans, (int, str)) or isinstance(trans, bool) or trans not in _TRANS:
        raise user_error(ValueError, _where("solve_triangular"), f"trans must be 0, 1, 2, 'N', 'T' or 'C', got "
                         f"{trans!r}")
    if trans in (2, "C"):
        a = _conj(a)
    return _solve_triangular(a, b, _TRANS[trans], bool(lower), bool(unit_diagonal))


# -- Cholesky: JAX's convention, the factor with zeros in its other triangle (SciPy leaves whatever `a`
# held there; cho_solve reads only the factor's triangle either way)
def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """`scipy.linalg.cho_factor`: `(c, lower)` with c the Cholesky factor of the symmetric positive-definite
    `a` (upper-triangular unless `lower`), zeros in its other triangle; the argument of `cho_solve`.

    >>> c, low = cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]), lower=True)
    >>> c
    array([[2., 0.],
           [1., 2.]])
    """
    _needs_scipy("cho_factor")
    _matrix("cho_factor", "a", a)
    factor = cholesky(a)
    return (factor if lower else _conj(_mT(factor))), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """`scipy.linalg.cho_solve`: x with `a @ x = b`, given `(c, lower) = cho_factor(a)`.

    >>> cho_solve(cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]])), np.array([6.0, 7.0]))
    array([1., 1.])
    """
    _needs_scipy("cho_solve")
    if not isinstance(c_and_lower, (tuple, list)) or len(c_and_lower) != 2:
        raise user_error(TypeError, _where("cho_solve"), "the first argument must be the pair (c, lower) that "
                         f"cho_factor returns, got {type(c_and_lower).__name__}")
    c, lower = c_and_lower
    _matrix("cho_solve", "c", c)
    _check_rhs("cho_solve", c, b)
    lower = bool(lower)
    # a = L L^H: solve L y = b, then L^H x = y (with c = U = L^H: U^H y = b, U x = y); X^H is conj(X)^T
    y = _solve_triangular(c if lower else _conj(c), b, 0 if lower else 1, lower, False)
    return _solve_triangular(_conj(c) if lower else c, y, 1 if lower else 0, lower, False)


# -- solve_sylvester: X with A X + X B = Q. Differentiating it gives another Sylvester equation with the
# same A and B: A dX + dX B = dQ - dA X - X dB
def _sylvester_forward(a, b, q):
    return _sl.solve_sylvester(a, b, q).astype(_result_dtype(a, b, q), copy=False)


def _sylvester_vjp(g, out, a, b, q):
    gq = solve_sylvester(_mT(a), _mT(b), g)
    return -matmul(gq, _mT(out)), -matmul(_mT(out), gq), gq


def _sylvester_jvp(tangents, out, a, b, q):
    ta, tb, tq = tangents
    rhs = tq if tq is not None else 0 * out
    if ta is not None:
        rhs = rhs - matmul(ta, out)
    if tb is not None:
        rhs = rhs - matmul(out, tb)
    return solve_sylvester(a, b, rhs)


_sylvester = defop("solve_sylvester", _sylvester_forward, vjp=_sylvester_vjp, jvp=_sylvester_jvp,
                   shape=lambda a, b, q: tuple(q), dtype=floating, numpy_only=True)


@public(_sylvester)
def solve_sylvester(a, b, q):
    """`scipy.linalg.solve_sylvester`: X with `a @ X + X @ b = q` (a (m, m), b (n, n), q (m, n)).

    >>> solve_sylvester(np.array([[1.0]]), np.array([[2.0]]), np.array([[6.0]]))
    array([[2.]])
    """
    _needs_scipy("solve_sylvester")
    (m, _), (n, _) = _matrix("solve_sylvester", "a", a), _matrix("solve_sylvester", "b", b)
    if any(None not in (got, want) and got != want for got, want in zip(_shape(q), (m, n))) or len(_shape(q)) != 2:
        raise user_error(ValueError, _where("solve_sylvester"), f"q must have shape ({m}, {n}) for a of shape "
                         f"({m}, {m}) and b of shape ({n}, {n}), got {tuple(_shape(q))}", a, b, q)
    return apply(_sylvester, (a, b, q))


# -- expm: the Frechet derivative L(A, E) is the upper-right block of expm([[A, E], [0, A]]); the vjp
# is L(A^T, G)
def _frechet(a, e):
    n = _size(a)
    top = concatenate([a, e], axis=1)
    bottom = concatenate([0 * a, a], axis=1)
    return getitem(expm(concatenate([top, bottom], axis=0)), (slice(0, n), slice(n, 2 * n)))


def _expm_forward(a):
    return _sl.expm(a).astype(_result_dtype(a), copy=False)


_expm = defop("expm", _expm_forward,
              vjp=(lambda g, out, a: _frechet(_mT(a), g),), jvp=(lambda t, out, a: _frechet(a, t),),
              shape=lambda a: tuple(a), dtype=floating, numpy_only=True)


@public(_expm)
def expm(a):
    """`scipy.linalg.expm`: the matrix exponential of a square matrix.

    >>> expm(np.zeros((2, 2)))
    array([[1., 0.],
           [0., 1.]])
    """
    _needs_scipy("expm")
    _matrix("expm", "a", a)
    return apply(_expm, (a,))


# -- sqrtm: X X = A gives X dX + dX X = dA, a Sylvester equation
def _sqrtm_forward(a):
    out = _sl.sqrtm(a)
    # a real matrix with a negative real eigenvalue has a complex principal root, returned as SciPy does;
    # otherwise SciPy's negligible imaginary round-off is dropped
    if np.iscomplexobj(out) and not np.iscomplexobj(a) and \
            np.abs(out.imag).max(initial=0.0) <= 1e-10 * max(np.abs(out).max(initial=0.0), 1.0):
        out = out.real
    return out.astype(np.result_type(out, _result_dtype(a)), copy=False)


def _sqrtm_vjp(g, out, a):
    ct = solve_sylvester(_mT(out), _mT(out), g)
    # a real matrix with a complex root: the gradient with respect to the real a is the real part (as the
    # engine takes it for ops of several inputs; a one-input op takes it in its rule)
    return real(ct) if _dtype(a).kind != "c" and _dtype(ct).kind == "c" else ct


_sqrtm = defop("sqrtm", _sqrtm_forward, vjp=(_sqrtm_vjp,),
               jvp=(lambda t, out, a: solve_sylvester(out, out, t),), shape=lambda a: tuple(a), dtype=floating,
               numpy_only=True)


@public(_sqrtm)
def sqrtm(a, disp=True, blocksize=64):
    """`scipy.linalg.sqrtm`: the principal square root X (X @ X = a); complex, as SciPy's, for a real
    matrix with a negative real eigenvalue.

    >>> sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]]))
    array([[2., 0.],
           [0., 3.]])
    """
    _needs_scipy("sqrtm")
    _matrix("sqrtm", "a", a)
    return apply(_sqrtm, (a,))


# -- solve_banded: the band is spread into the full matrix (a differentiable gather), then solved
def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """`scipy.linalg.solve_banded`: x with `A @ x = b`, A banded with `l` sub- and `u` super-diagonals given
    in SciPy's band storage `ab` (`ab[u + i - j, j] == A[i, j]`). Solved as the full matrix (O(n^3)).

    >>> solve_banded((1, 0), np.array([[2.0, 4.0], [1.0, 0.0]]), np.array([2.0, 9.0]))
    array([1., 2.])
    """
    _needs_scipy("solve_banded")
    if (not isinstance(l_and_u, (tuple, list)) or len(l_and_u) != 2
            or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0 for k in l_and_u)):
        raise user_error(ValueError, _where("solve_banded"), f"(l, u) must be two integers >= 0, got {l_and_u!r}")
    low, up = int(l_and_u[0]), int(l_and_u[1])
    sab = _shape(ab)
    if len(sab) != 2 or sab[0] != low + up + 1:
        raise user_error(ValueError, _where("solve_banded"), f"ab must have shape ({low + up + 1}, n) for (l, u) = "
                         f"({low}, {up}), got {tuple(sab)}", ab)
    n = sab[1]
    if len(_shape(b)) not in (1, 2) or _shape(b)[0] != n:
        raise user_error(ValueError, _where("solve_banded"), f"b of shape {tuple(_shape(b))} does not fit ab of "
                         f"shape {tuple(sab)}: b must be ({n},) or ({n}, k)", ab, b)
    i, j = np.indices((n, n))
    row = up + i - j
    inside = (row >= 0) & (row <= low + up)
    full = where(inside, getitem(ab, (np.clip(row, 0, low + up), j)), 0)
    return solve(full, b)
