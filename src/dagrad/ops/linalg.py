"""Linear algebra: products, einsum, diagonals and `numpy.linalg`.

Primitives with their own rules: matmul, einsum, inv, det (and its derivative, cofactor),
logabsdet and slogdet's sign (real: without a gradient; complex: slogdet_phase), solve, cholesky,
l2_norm (the 2-norm / Frobenius norm), one op per output of svd (svd_u, svd_s, svd_vt), eigh
(eigh_w, eigh_v), eig (eig_w, eig_v) and qr (qr_q, qr_r), pinv, and inv_inf (the inverse, inf/nan
at a singular matrix: logabsdet's derivative).
Everything else here is a composite of primitives and is differentiated through them.

Complex matrices follow the convention of ops/elementwise.py (JAX's and HIPS autograd's): a
cotangent ct pairs with a tangent t as Re(sum(ct * t)), no conjugation. So a complex-linear map's
vjp is its plain transpose (matmul, inv, solve, det are unchanged), while the rules that are not
holomorphic (a Hermitian eigenproblem, the SVD, cholesky, pinv, norms) are the usual ones for the
Hermitian inner product Re tr(X^H Y), applied as ct_in = conj(rule(conj(ct_out))) (`_conj`,
which is nothing for real values, so real matrices take exactly the real rules).
"""

from __future__ import annotations

import builtins
import string
from collections import Counter, namedtuple

import numpy as np

from .._core.dtypes import floating, of_ufunc, promoted, real_part
from .._core.errors import user_error
from .._core import batching
from .._core.op import apply, defop, public
from .._core.shapes import SymbolicShape, as_index, broadcast_shapes, is_sequence, normalize_axis
from .._core.shapes import normalize_axis_index, reduced_shape
from .._core.shapes import dtype_of as _dtype
from .._core.shapes import ndim_of as _ndim
from .._core.shapes import shape_of as _shape
from .elementwise import abs, astype, conj, equal, imag, isnan, logical_and, logical_not, maximum, multiply
from .elementwise import not_equal, power, real, stop_gradient, where
from .reduce import max, min, sum
from .shape import as_array, broadcast_to, concatenate, expand_dims, getitem, index_add, reshape, squeeze, swapaxes
from .shape import transpose


def _matmul_shape(a, b):
    if not a or not b:
        raise ValueError("matmul: inputs must have at least one dimension, got a 0-d input")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    k1, k2 = a2[-1], b2[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"matmul: inner dimensions differ: {tuple(a)} @ {tuple(b)}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul_vjp_a(g, out, a, b):
    if _ndim(b) == 1:
        return g * b if _ndim(a) == 1 else expand_dims(g, -1) * b
    if _ndim(a) == 1:
        if _ndim(b) == 2:
            return matmul(b, g)  # vector @ matrix: the gradient is matrix @ vector
        return squeeze(matmul(b, expand_dims(g, -1)), -1)  # batch axes are summed by the engine
    return matmul(g, swapaxes(b, -1, -2))


def _matmul_vjp_b(g, out, a, b):
    if _ndim(a) == 1:
        return g * a if _ndim(b) == 1 else expand_dims(a, -1) * expand_dims(g, -2)
    if _ndim(b) == 1:
        if _ndim(a) == 2:
            return matmul(g, a)  # matrix @ vector: the gradient is vector @ matrix
        return squeeze(matmul(expand_dims(g, -2), a), -2)
    return matmul(swapaxes(a, -1, -2), g)


matmul = defop(
    "matmul",
    np.matmul,
    vjp=(_matmul_vjp_a, _matmul_vjp_b),
    jvp=(lambda t, out, a, b: matmul(t, b), lambda t, out, a, b: matmul(a, t)),
    shape=_matmul_shape,
    dtype=of_ufunc(np.matmul),
    nargs=2,
    batch=batching.matmul,
    saves=((1,), (0,)),
).function


# ---------------------------------------------------------------- products
#
# Which products are primitives: `matmul` and `einsum` have their own rules. `dot`, `vdot`,
# `inner`, `outer` and `tensordot` are composites of matmul / reshape / transpose / multiply,
# which is exactly how NumPy computes them (np.tensordot is transpose + reshape + dot), so
# their values agree with NumPy and their derivatives come from those primitives for free.
# `einsum` gets its own rule because writing a general contraction as transposes, diagonals
# and matmuls would take many nodes per call and lose the readable one-line listing.


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _size_or_unknown(dims):
    dims = tuple(dims)
    return -1 if None in dims else _size(dims)


def _is_complex(x):
    return _dtype(x).kind == "c"


def _conj(x):
    """conj(x) for complex x; x itself (no node) for real x."""
    return conj(x) if _is_complex(x) else x


def _real(x):
    return real(x) if _is_complex(x) else x


def dot(a, b):
    """Dot product of two arrays, as `np.dot`.

    1-D with 1-D is the inner product, 2-D with 2-D the matrix product, a 0-d operand
    multiplies, N-D with 1-D sums over the last axis, N-D with M-D sums over the last
    axis of `a` and the second-to-last of `b`.

    >>> dot(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    np.float64(11.0)
    """
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return multiply(a, b)
    k = sb[-2] if len(sb) >= 2 else sb[0]
    if sa[-1] is not None and k is not None and sa[-1] != k:
        raise user_error(ValueError, "dot", f"shapes {tuple(sa)} and {tuple(sb)} not aligned: {sa[-1]} != {k}", a, b)
    if len(sa) == 1 or len(sb) <= 2:
        return matmul(a, b)  # the same contraction and result shape as np.dot in these cases
    return tensordot(a, b, ((len(sa) - 1,), (len(sb) - 2,)))


def vdot(a, b):
    """Dot product of the flattened arrays, as `np.vdot`: a complex `a` is conjugated first.

    >>> vdot(np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 2)))
    np.float64(10.0)
    >>> vdot(np.array([1j]), np.array([1j]))
    np.complex128(1+0j)
    """
    sa, sb = _shape(a), _shape(b)
    na, nb = _size_or_unknown(sa), _size_or_unknown(sb)
    if na != nb and na != -1 and nb != -1:
        raise user_error(ValueError, "vdot", f"arrays of shapes {tuple(sa)} and {tuple(sb)} have different sizes "
                         f"({na} and {nb})", a, b)
    a = _conj(a)
    return matmul(a if len(sa) == 1 else reshape(a, (na,)), b if len(sb) == 1 else reshape(b, (nb,)))


def inner(a, b):
    """Inner product over the last axes, as `np.inner`: shape a.shape[:-1] + b.shape[:-1].

    >>> inner(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
    array([3., 7.])
    """
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return multiply(a, b)
    if sa[-1] is not None and sb[-1] is not None and sa[-1] != sb[-1]:
        raise user_error(ValueError, "inner", f"shapes {tuple(sa)} and {tuple(sb)} not aligned: last dimensions "
                         f"{sa[-1]} != {sb[-1]}", a, b)
    if len(sb) == 1:
        return matmul(a, b)
    return tensordot(a, b, ((len(sa) - 1,), (len(sb) - 1,)))


def outer(a, b):
    """Outer product of the flattened arrays, as `np.outer`.

    >>> outer(np.array([1.0, 2.0]), np.array([1.0, 10.0, 100.0]))
    array([[  1.,  10., 100.],
           [  2.,  20., 200.]])
    """
    na, nb = _size_or_unknown(_shape(a)), _size_or_unknown(_shape(b))
    return multiply(reshape(a, (na, 1)), reshape(b, (nb,)))


def _tensordot_axes(axes, a, b):
    """`axes` as two equally long tuples of non-negative axes of `a` and `b`, paired in order."""
    na, nb = _ndim(a), _ndim(b)
    if not is_sequence(axes):
        n = as_index(axes, "tensordot", "axes", a, b)
        if n < 0 or n > na or n > nb:
            raise user_error(ValueError, "tensordot", f"axes={n} must be between 0 and the dimensions {na} and {nb} of "
                             "the arrays", a, b)
        return tuple(range(na - n, na)), tuple(range(n))
    if len(axes) != 2:
        raise user_error(ValueError, "tensordot", f"axes must be an integer or a pair of axis sequences, got {axes!r}",
                         a, b)
    axes_a = normalize_axis(axes[0], na, "tensordot", a, b, ordered=True, name="axes[0]")
    axes_b = normalize_axis(axes[1], nb, "tensordot", a, b, ordered=True, name="axes[1]")
    if len(axes_a) != len(axes_b):
        raise user_error(ValueError, "tensordot", f"axes {axes_a} and {axes_b} have different lengths", a, b)
    return axes_a, axes_b


def tensordot(a, b, axes=2):
    """Sum of products over the given axes, as `np.tensordot`.

    `axes` is an int N (the last N axes of `a` with the first N of `b`) or a pair of axis
    sequences. Computed as NumPy does: transpose, reshape to matrices, matmul, reshape.

    >>> tensordot(np.ones((2, 3, 4)), np.ones((3, 4, 5)), axes=2).shape
    (2, 5)
    """
    sa, sb = tuple(_shape(a)), tuple(_shape(b))
    axes_a, axes_b = _tensordot_axes(axes, a, b)
    for i, j in zip(axes_a, axes_b):
        if sa[i] != sb[j] and sa[i] is not None and sb[j] is not None:
            raise user_error(ValueError, "tensordot", f"shape mismatch for sum: axis {i} of a has size {sa[i]} but "
                             f"axis {j} of b has {sb[j]}", a, b)
    free_a = [i for i in range(len(sa)) if i not in axes_a]
    free_b = [j for j in range(len(sb)) if j not in axes_b]
    order_a, order_b = free_a + list(axes_a), list(axes_b) + free_b
    if order_a != sorted(order_a):
        a = transpose(a, order_a)
    if order_b != sorted(order_b):
        b = transpose(b, order_b)
    # an unknown (None) size of a static graph becomes -1: each reshape may have one
    m, k, n = (_size_or_unknown(sa[i] for i in free_a), _size_or_unknown(sa[i] for i in axes_a),
               _size_or_unknown(sb[j] for j in free_b))
    if k == -1:
        k = _size_or_unknown(sb[j] for j in axes_b)
    a2 = a if len(sa) == 2 and len(free_a) == 1 else reshape(a, (m, k))
    b2 = b if len(sb) == 2 and len(free_b) == 1 else reshape(b, (k, n))
    out = matmul(a2, b2)
    out_shape = tuple(sa[i] for i in free_a) + tuple(sb[j] for j in free_b)
    return out if _shape(out) == out_shape else reshape(out, out_shape)


# -- einsum: its own primitive. Attrs hold the subscripts in a canonical explicit form
# ("ij,jk->ik", '...' replaced by unused letters), so the rules never parse ellipses.
_LETTERS = string.ascii_letters
_MAX_OPERANDS = 64  # NumPy's limit on array arguments (NPY_MAXARGS)


def _canonical_subscripts(subscripts, operands):
    """`subscripts` for `operands`, explicit and without '...'."""
    ndims = [_ndim(x) for x in operands]

    def fail(message):
        return user_error(ValueError, "einsum", message, *operands)

    if not isinstance(subscripts, str):
        raise user_error(TypeError, "einsum", f"subscripts must be a string, got {type(subscripts).__name__}",
                         *operands)
    spec = subscripts.replace(" ", "")
    for c in spec:
        if c not in _LETTERS and c not in ".,->":
            raise fail(f"invalid character {c!r} in subscripts {subscripts!r}")
    if spec.count("->") > 1 or spec.count("-") != spec.count(">") or spec.count("-") != spec.count("->"):
        raise fail(f"subscripts {subscripts!r} must contain at most one '->'")
    lhs, explicit, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise fail(f"subscripts {subscripts!r} name {len(terms)} operand(s) but {len(ndims)} were given")
    parsed = []
    for i, (term, nd) in enumerate(zip(terms, ndims)):
        head, ellipsis, tail = term.partition("...")
        if "." in head or "." in tail:
            raise fail(f"subscripts {subscripts!r}: '.' must come as one '...' per operand")
        k = nd - len(head) - len(tail)
        if (k < 0) if ellipsis else (k != 0):
            raise fail(
                f"operand {i} has {nd} dimension(s) but its subscripts {term!r} name {len(head) + len(tail)}"
            )
        parsed.append((head, k, tail))
    n_ell = builtins.max((k for _, k, _ in parsed), default=0)
    free = [c for c in _LETTERS if c not in spec]
    if n_ell > len(free):
        raise fail(f"too many dimensions for subscripts {subscripts!r}")
    ell = "".join(free[:n_ell])
    canonical = [head + ell[n_ell - k:] + tail for head, k, tail in parsed]
    if explicit:
        head, ellipsis, tail = out.partition("...")
        if "." in head or "." in tail:
            raise fail(f"subscripts {subscripts!r}: '.' must come as one '...' in the output")
        if not ellipsis and n_ell:
            raise fail(
                f"the operands of {subscripts!r} have broadcast ('...') dimensions "
                "but the output has no '...' to hold them"
            )
        out = head + ell + tail
        letters = "".join(canonical)
        for c in out:
            if out.count(c) > 1:
                raise fail(f"output subscript {c!r} appears more than once in {subscripts!r}")
            if c not in letters:
                raise fail(f"output subscript {c!r} never appears in an input of {subscripts!r}")
    else:
        # NumPy's implicit output: the broadcast dimensions, then the letters used once, sorted
        counts = Counter("".join(head + tail for head, _, tail in parsed))
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return ",".join(canonical) + "->" + out


def _sublist_subscripts(args):
    """NumPy's interleaved form `(op0, sublist0, op1, sublist1, ..., [output sublist])` as the subscripts
    string and the operands. Integer s becomes the letter NumPy gives it ('A' + s, then 'a' + s - 26), so
    the implicit output keeps NumPy's order."""
    output = args[-1] if len(args) % 2 else None  # an odd count: the last item is the output's sublist
    pairs = args[:-1] if len(args) % 2 else args
    operands, sublists = pairs[0::2], pairs[1::2]

    def letters(sublist, what):
        if not isinstance(sublist, (list, tuple)):
            raise user_error(TypeError, "einsum", f"the {what} must be a list of integers (0 to 51) and Ellipsis, "
                             f"got {type(sublist).__name__}", *operands)
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) and 0 <= s < 52:
                out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
            else:
                raise user_error(ValueError, "einsum", f"the {what} {list(sublist)!r} holds {s!r}: a subscript must "
                                 "be an integer from 0 to 51 or Ellipsis", *operands)
        return "".join(out)

    terms = [letters(sub, f"sublist of operand {i}") for i, sub in enumerate(sublists)]
    spec = ",".join(terms) + ("" if output is None else "->" + letters(output, "output sublist"))
    return spec, tuple(operands)


def _einsum_shape(*shapes, subscripts, optimize=False):
    lhs, out = subscripts.split("->")
    sizes = {}
    for i, (term, shape) in enumerate(zip(lhs.split(","), shapes)):
        if len(term) != len(shape):
            raise ValueError(f"einsum: operand {i} has shape {tuple(shape)} but subscripts {term!r}")
        mine = {}
        for c, n in zip(term, shape):
            if c in mine and n is not None and mine[c] is not None and n != mine[c]:
                raise ValueError(
                    f"einsum: operand {i} of shape {tuple(shape)} repeats subscript {c!r} "
                    f"over dimensions of different sizes ({mine[c]} and {n})"
                )
            mine[c] = n
            if c not in sizes or sizes[c] == 1:
                sizes[c] = n
            elif n is None or n == 1:
                continue
            elif sizes[c] is None:
                sizes[c] = n
            elif sizes[c] != n:
                raise ValueError(
                    f"einsum: subscript {c!r} has size {sizes[c]} in one operand and {n} in operand {i} "
                    f"(shapes {', '.join(str(tuple(s)) for s in shapes)}, subscripts {subscripts!r})"
                )
    return tuple(sizes[c] for c in out)


def _einsum_forward(*operands, subscripts, optimize=False):
    if isinstance(optimize, tuple):
        optimize = list(optimize)  # an explicit contraction path, stored as a tuple in the attrs
    for operand, letters in zip(operands, subscripts.split("->")[0].split(",")):
        letters = letters.replace("...", "").strip()
        # a Dask operand with a diagonal: Dask's einsum builds a graph that fails only when it is computed
        if hasattr(operand, "map_blocks") and len(set(letters)) < len(letters):
            raise ValueError(f"a letter repeated in one operand ({letters!r}, a diagonal) is not supported on a "
                             f"{type(operand).__module__.partition('.')[0]} array by Dask's einsum")
    return np.einsum(subscripts, *operands, optimize=optimize)


def _auto_optimize(subscripts, shapes):
    """NumPy's greedy contraction path for three or more operands whose direct loop would be
    long (its cost is the product of all subscript sizes: 65 ms instead of 0.15 ms for three
    100 x 100 matrices); the direct C loop otherwise, which has no path-search overhead."""
    if len(shapes) < 3:
        return False
    sizes = {}
    for term, shape in zip(subscripts.split("->")[0].split(","), shapes):
        for c, n in zip(term, shape):
            sizes[c] = None if n is None or sizes.get(c, 1) is None else builtins.max(n, sizes.get(c, 1))
    if None in sizes.values():
        return "greedy"
    return "greedy" if _size(sizes.values()) > 4096 else False


def _einsum_of(subscripts, operands):
    operands = tuple(operands)
    optimize = _auto_optimize(subscripts, [_shape(x) for x in operands])
    return apply(_einsum, operands, {"subscripts": subscripts, "optimize": optimize})


def _einsum_vjp_rule(i):
    def rule(g, out, *operands, subscripts, optimize):
        # cotangent of operand i: contract g with the other operands into operand i's subscripts;
        # a subscript repeated within operand i (a diagonal) gets a fresh letter tied to it by an
        # identity matrix, and one that appears nowhere else is broadcast back at the end
        lhs, out_sub = subscripts.split("->")
        terms = lhs.split(",")
        term, shape = terms[i], _shape(operands[i])
        fresh = (c for c in _LETTERS if c not in subscripts)
        in_terms = [out_sub] + [t for j, t in enumerate(terms) if j != i]
        in_ops = [g] + [x for j, x in enumerate(operands) if j != i]
        target = []
        for pos, c in enumerate(term):
            if c in target:
                f = next(fresh)
                in_terms.append(c + f)
                in_ops.append(np.eye(shape[pos], dtype=_dtype(g)))
                target.append(f)
            else:
                target.append(c)
        present = set("".join(in_terms))
        missing = tuple(p for p, c in enumerate(target) if c not in present)
        ct = _einsum_of(",".join(in_terms) + "->" + "".join(c for c in target if c in present), in_ops)
        if missing:
            ct = expand_dims(ct, missing)
            ct_shape = _shape(ct)
            dims = tuple(shape[p] if p in missing else ct_shape[p] for p in range(len(target)))
            # with unknown sizes in a static graph, operand i's shape supplies them when it runs
            ct = broadcast_to(ct, shape.derive(dims) if isinstance(shape, SymbolicShape) else dims)
        return ct

    return rule


def _einsum_jvp_rule(i):
    def rule(t, out, *operands, subscripts, optimize):
        return _einsum_of(subscripts, operands[:i] + (t,) + operands[i + 1:])

    return rule


# einsum takes any number of operands: its rule tuples hold one rule per operand position up
# to NumPy's limit, and the engine looks up only the positions a call has
def _einsum_batch(op, values, batched, attrs):
    """A new letter for the batch axis, in front of the batched operands' subscripts and the output's."""
    lhs, out = attrs["subscripts"].split("->")
    letter = next(c for c in _LETTERS if c not in attrs["subscripts"])
    terms = [letter + t if b else t for t, b in zip(lhs.split(","), batched)]
    return apply(op, values, {**attrs, "subscripts": f"{','.join(terms)}->{letter}{out}"}), True


_einsum = defop(
    "einsum",
    _einsum_forward,
    vjp=tuple(_einsum_vjp_rule(i) for i in range(_MAX_OPERANDS)),
    jvp=tuple(_einsum_jvp_rule(i) for i in range(_MAX_OPERANDS)),
    shape=_einsum_shape,
    dtype=promoted,
    batch=_einsum_batch,
)


@public(_einsum)
def einsum(subscripts, *operands, optimize=None):
    """Einstein summation, as `np.einsum`: explicit ('ij,jk->ik') and implicit ('ij,jk')
    output, '...' broadcasting, repeated subscripts (diagonals, traces).

    `optimize` is passed to `np.einsum`. Its default differs from NumPy's (False): None
    chooses NumPy's greedy contraction path for three or more operands when the direct
    loop would be long, and the direct loop otherwise; the values agree up to rounding.
    The derivatives' contractions choose the same way.

    >>> einsum("ij,jk->ik", np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[1., 2.],
           [3., 4.]])
    >>> einsum("ii", np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.float64(5.0)

    NumPy's sublist form, `einsum(a, [0, 1], b, [1, 2], [0, 2])` (integers 0 to 51 for
    subscripts, `Ellipsis` for '...', an optional output sublist last), is the same call:

    >>> einsum(np.array([[1.0, 2.0], [3.0, 4.0]]), [0, 1], [1, 0])
    array([[1., 3.],
           [2., 4.]])
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _sublist_subscripts((subscripts, *operands))
    if not operands:
        raise user_error(ValueError, "einsum", "needs at least one operand")
    if len(operands) > _MAX_OPERANDS:
        raise user_error(ValueError, "einsum", f"at most {_MAX_OPERANDS} operands, got {len(operands)}")
    shapes = [tuple(_shape(x)) for x in operands]
    canonical = _canonical_subscripts(subscripts, operands)
    try:
        _einsum_shape(*shapes, subscripts=canonical)
    except ValueError as err:
        message = str(err).removeprefix("einsum: ").replace(repr(canonical), repr(subscripts))
        raise user_error(ValueError, "einsum", message, *operands) from None
    if optimize is None:
        optimize = _auto_optimize(canonical, shapes)
    elif isinstance(optimize, list):
        optimize = tuple(tuple(p) if isinstance(p, list) else p for p in optimize)
    return apply(_einsum, operands, {"subscripts": canonical, "optimize": optimize})


# ---------------------------------------------------------------- diagonals
# Composites of getitem / index_add with integer-array indices (each element is picked at
# most once), so the diagonal's gradient is index_add and index_add's is getitem.
def _diagonal_indices(n1, n2, offset):
    if offset >= 0:
        k = builtins.max(0, builtins.min(n1, n2 - offset))
        return np.arange(k), np.arange(k) + offset
    k = builtins.max(0, builtins.min(n1 + offset, n2))
    return np.arange(k) - offset, np.arange(k)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of `a` over `axis1` and `axis2`, as the last axis, as `np.diagonal`.

    >>> diagonal(np.arange(9.0).reshape(3, 3), offset=1)
    array([1., 5.])
    """
    return _diagonal(a, offset, axis1, axis2, "diagonal")


def _diagonal(a, offset, axis1, axis2, op_name):
    shape = _shape(a)
    offset = as_index(offset, op_name, "offset", a)
    if len(shape) < 2:
        raise user_error(ValueError, op_name, f"needs at least 2 dimensions, got shape {tuple(shape)}", a)
    ax1 = normalize_axis_index(axis1, len(shape), op_name, a, name="axis1")
    ax2 = normalize_axis_index(axis2, len(shape), op_name, a, name="axis2")
    if ax1 == ax2:
        raise user_error(ValueError, op_name, f"axis1 and axis2 cannot be the same axis ({axis1} and {axis2})", a)
    if shape[ax1] is None or shape[ax2] is None:
        raise user_error(ValueError, op_name, f"the two axes need known sizes (a static graph has shape "
                         f"{tuple(shape)})", a)
    order = [i for i in range(len(shape)) if i not in (ax1, ax2)] + [ax1, ax2]
    if order != list(range(len(shape))):
        a = transpose(a, order)
    rows, cols = _diagonal_indices(shape[ax1], shape[ax2], offset)
    return getitem(a, (Ellipsis, rows, cols))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """Sum along a diagonal, as `np.trace`.

    >>> trace(np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.float64(5.0)
    """
    d = _diagonal(a, offset, axis1, axis2, "trace")
    if dtype is not None:
        d = astype(d, dtype)
    return sum(d, axis=-1)


def diag(v, k=0):
    """The k-th diagonal of a 2-D array, or a 2-D array with 1-D `v` on its k-th diagonal,
    as `np.diag`.

    >>> diag(np.array([1.0, 2.0]))
    array([[1., 0.],
           [0., 2.]])
    """
    shape = _shape(v)
    k = as_index(k, "diag", "k", v)
    if len(shape) == 2:
        return _diagonal(v, k, 0, 1, "diag")
    if len(shape) != 1:
        raise user_error(ValueError, "diag", f"input must be 1-D or 2-D, got shape {tuple(shape)}", v)
    if shape[0] is None:
        raise user_error(ValueError, "diag", "a vector's size must be known (a static graph has shape (None,))", v)
    n = shape[0] + (k if k >= 0 else -k)
    rows, cols = _diagonal_indices(n, n, k)
    return index_add(v, (rows, cols), (n, n))


# ---------------------------------------------------------------- numpy.linalg
def _square(name, x):
    shape = _shape(x)
    if len(shape) < 2 or (shape[-1] is not None and shape[-2] is not None and shape[-1] != shape[-2]):
        raise user_error(ValueError, f"linalg.{name}", "expected a square matrix or a stack of square matrices "
                         f"(..., n, n), got shape {tuple(shape)}", x)
    return shape


def _mT(x):
    return swapaxes(x, -1, -2)


def _batch_shape(shape):
    if len(shape) < 2:
        raise ValueError(f"expected a square matrix or a stack of them (..., n, n), got shape {tuple(shape)}")
    return tuple(shape[:-2])


def _same_shape(shape):
    _batch_shape(shape)
    return tuple(shape)


def _eigenvalues_shape(shape):
    """(..., n) of a square (..., n, n), n from whichever of the two sizes a static graph knows."""
    return (*_batch_shape(shape), shape[-1] if shape[-1] is not None else shape[-2])


def _as_matrix_scale(s):
    """A per-matrix value (shape (...)) as shape (..., 1, 1), to scale a stack of matrices."""
    return expand_dims(s, (-2, -1))


def _trace_last2(m):
    return sum(m, axis=(-2, -1))


def _H(x):
    """The conjugate transpose of a matrix (stack)."""
    return _conj(_mT(x))


def _linalg_dtype(*dtypes, **attrs):
    """NumPy's linalg computes in floating point (integers and bools give float64) and keeps complex
    values complex (complex64 stays complex64)."""
    out = floating(*(real_part(d) for d in dtypes if d is not None))
    if any(np.dtype(complex if d is complex else d).kind == "c" for d in dtypes if d is not None):
        return np.result_type(out, np.complex64)
    return out


def _real_linalg_dtype(*dtypes, **attrs):
    """The real dtype of _linalg_dtype's: singular values, Hermitian eigenvalues, log|det|, norms."""
    return real_part(_linalg_dtype(*dtypes))


def _complex_linalg_dtype(*dtypes, **attrs):
    """Always complex (eig: NumPy's result is real when every eigenvalue is, which a graph cannot know)."""
    return np.result_type(_linalg_dtype(*dtypes), np.complex64)


_inv = defop(
    "inv",
    np.linalg.inv,
    vjp=(lambda g, out, a: -matmul(_mT(out), matmul(g, _mT(out))),),  # -A^-T g A^-T
    jvp=(lambda t, out, a: -matmul(out, matmul(t, out)),),  # -A^-1 t A^-1
    shape=_same_shape,
    dtype=_linalg_dtype,
    batch=batching.stacked,
    validates=True,  # a singular matrix raises LinAlgError
)


@public(_inv)
def inv(a):
    """Inverse of a square matrix or of each in a stack (..., n, n), as `np.linalg.inv`.

    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    _square("inv", a)
    return apply(_inv, (a,))


# det's derivative is the cofactor matrix adj(A)^T, its own op computed through the SVD
# (PyTorch's method): adj(A)^T = det(U) det(Vh) conj(U diag(prod_{j != i} s_j) Vh) holds for
# singular matrices too, where det A^-T cannot be formed. The cofactor's own derivative uses A^-1,
# so a second derivative of det at a singular matrix raises LinAlgError. logabsdet's gradient A^-T
# does not exist at a singular matrix (log|det| = -inf there): it comes from inv_inf, which gives
# inf/nan there (as JAX's LU solve and PyTorch do) instead of raising.
def _cofactor_forward(a):
    u, s, vt = np.linalg.svd(a)
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)  # prod_{j < i} s_j
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]  # prod_{j > i} s_j
    sign = np.linalg.det(u) * np.linalg.det(vt)  # of unit modulus
    c = (u * (before * after)[..., None, :]) @ vt
    return sign[..., None, None] * (np.conj(c) if np.iscomplexobj(c) else c)


def _cofactor_vjp(g, out, a):
    # C = det(A) A^-T; dC = tr(A^-1 dA) C - C dA^T A^-T (holomorphic: the same for complex A)
    a_inv_t = _mT(inv(a))
    return _as_matrix_scale(_trace_last2(g * out)) * a_inv_t - matmul(a_inv_t, matmul(_mT(g), out))


def _cofactor_jvp(t, out, a):
    a_inv = inv(a)
    return _as_matrix_scale(_trace_last2(_mT(a_inv) * t)) * out - matmul(out, matmul(_mT(t), _mT(a_inv)))


_cofactor = defop("cofactor", _cofactor_forward, vjp=(_cofactor_vjp,), jvp=(_cofactor_jvp,), shape=_same_shape,
                  dtype=_linalg_dtype, batch=batching.stacked, numpy_only=True)


_det = defop(
    "det",
    np.linalg.det,
    vjp=(lambda g, out, a: _as_matrix_scale(g) * apply(_cofactor, (a,)),),  # g adj(A)^T
    jvp=(lambda t, out, a: _trace_last2(apply(_cofactor, (a,)) * t),),  # tr(adj(A) t)
    shape=_batch_shape,
    dtype=_linalg_dtype,
    batch=batching.stacked, numpy_only=True,
)


@public(_det)
def det(a):
    """Determinant of a square matrix or of each in a stack (..., n, n), as `np.linalg.det`.

    >>> det(np.array([[1.0, 2.0], [3.0, 4.0]])).round(12)
    np.float64(-2.0)
    """
    _square("det", a)
    return apply(_det, (a,))


def _inv_inf_forward(a):
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:  # a singular matrix in the stack: adj(A) / det(A), inf or nan where det is 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.swapaxes(_cofactor_forward(a), -1, -2) / np.linalg.det(a)[..., None, None]


_inv_inf = defop(
    "inv_inf",
    _inv_inf_forward,
    vjp=(lambda g, out, a: -matmul(_mT(out), matmul(g, _mT(out))),),  # inv's rules
    jvp=(lambda t, out, a: -matmul(out, matmul(t, out)),),
    shape=_same_shape,
    dtype=_linalg_dtype,
    batch=batching.stacked,
)


def _inv_t(a):
    """A^-T, inf/nan at a singular matrix."""
    return _mT(apply(_inv_inf, (a,)))


# slogdet has two outputs and the IR single-output ops: log|det| = Re log det A is a differentiable
# op, d log|det| = Re tr(A^-1 dA). The sign of a real matrix is piecewise constant (an op without a
# gradient); that of a complex one, det/|det|, moves: d sign = i Im(tr(A^-1 dA)) sign (slogdet_phase).
# Each runs LAPACK's slogdet.
_logabsdet = defop(
    "logabsdet",
    lambda a: np.linalg.slogdet(a)[1],
    vjp=(lambda g, out, a: _as_matrix_scale(g) * _inv_t(a),),  # g A^-T
    jvp=(lambda t, out, a: _real(_trace_last2(_inv_t(a) * t)),),  # Re tr(A^-1 t)
    shape=_batch_shape,
    dtype=_real_linalg_dtype,
    batch=batching.stacked, numpy_only=True,
)
_slogdet_sign = defop("slogdet_sign", lambda a: np.linalg.slogdet(a)[0], shape=_batch_shape, dtype=_linalg_dtype,
                      batch=batching.stacked, numpy_only=True)


def _phase_vjp(g, out, a):
    # Re(g d sign) = Re(i Im(g sign) tr(A^-1 dA)); zero for a real sign
    return _as_matrix_scale(imag(g * out) * 1j) * _inv_t(a) if _is_complex(out) else g * 0


def _phase_jvp(t, out, a):
    turn = imag(_trace_last2(_inv_t(a) * t))
    return out * (turn * 1j) if _is_complex(out) else turn * 0


_slogdet_phase = defop("slogdet_phase", lambda a: np.linalg.slogdet(a)[0], vjp=(_phase_vjp,), jvp=(_phase_jvp,),
                       shape=_batch_shape, dtype=_linalg_dtype, batch=batching.stacked, numpy_only=True)

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])


def slogdet(a):
    """Sign and natural log of the absolute value of the determinant, as `np.linalg.slogdet`.

    Returns `(sign, logabsdet)`. The sign of a real matrix has no gradient (it is piecewise
    constant); that of a complex one (det/|det|, of modulus 1) has. At a singular matrix
    logabsdet is -inf and its gradient inf/nan, as in PyTorch and JAX.

    >>> sign, logabsdet = slogdet(np.array([[0.0, 2.0], [3.0, 0.0]]))
    >>> float(sign), round(float(np.exp(logabsdet)), 12)
    (-1.0, 6.0)
    """
    _square("slogdet", a)
    sign = _slogdet_phase if _is_complex(a) else _slogdet_sign
    return SlogdetResult(apply(sign, (a,)), apply(_logabsdet, (a,)))


# -- solve(a, b): NumPy 2 semantics, b is a vector (M,) only when 1-D, else a stack (..., M, K)
def _solve_shape(a, b):
    if len(b) == 1:
        return _batch_shape(a) + (a[-1],)
    return broadcast_shapes(_batch_shape(a), tuple(b[:-2])) + (a[-1], b[-1])


def _as_column(v, vector):
    return expand_dims(v, -1) if vector else v


def _from_column(v, vector):
    return squeeze(v, -1) if vector else v


def _solve_vjp_b(g, out, a, b):
    vector = len(_shape(b)) == 1
    return _from_column(solve(_mT(a), _as_column(g, vector)), vector)  # A^-T g


def _solve_vjp_a(g, out, a, b):
    vector = len(_shape(b)) == 1
    gb = _as_column(_solve_vjp_b(g, out, a, b), vector)
    return -matmul(gb, _mT(_as_column(out, vector)))  # -(A^-T g) x^T


def _solve_jvp_a(t, out, a, b):
    vector = len(_shape(b)) == 1
    return _from_column(-solve(a, matmul(t, _as_column(out, vector))), vector)  # -A^-1 t x


def _solve_batch(a, b, a_batched, b_batched):
    """np.linalg.solve maps over stacks; a vector b is made a column first, since with a batch axis it
    would read as a stack of matrices."""
    vector = _ndim(b) - b_batched == 1
    if vector:
        b = expand_dims(b, -1)
    out, _ = batching.stacked(_solve, (a, b), (a_batched, b_batched), {})
    return (squeeze(out, -1) if vector else out), True


_solve = defop(
    "solve",
    np.linalg.solve,
    vjp=(_solve_vjp_a, _solve_vjp_b),
    jvp=(_solve_jvp_a, lambda t, out, a, b: solve(a, t)),
    shape=_solve_shape,
    dtype=_linalg_dtype,
    batch=lambda op, values, batched, attrs: _solve_batch(*values, *batched),
    validates=True,  # a singular matrix raises LinAlgError
)


@public(_solve)
def solve(a, b):
    """The solution x of `a @ x = b`, as `np.linalg.solve` (NumPy 2: `b` is a vector only when
    1-D, else a stack of matrices (..., M, K); batch dimensions broadcast).

    >>> solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0]))
    array([1. , 0.5])
    """
    sa, sb = _square("solve", a), _shape(b)
    m = sa[-1]
    rows = sb[0] if len(sb) == 1 else (sb[-2] if len(sb) >= 2 else None)
    if not sb or (m is not None and rows is not None and rows != m):
        raise user_error(ValueError, "linalg.solve", f"b of shape {tuple(sb)} does not fit a of shape {tuple(sa)}: b "
                         f"must be (M,) or (..., M, K) with M = {m}", a, b)
    try:
        _solve_shape(tuple(sa), tuple(sb))
    except ValueError:
        raise user_error(ValueError, "linalg.solve", f"the batch dimensions of a {tuple(sa)} and b {tuple(sb)} do not "
                         "broadcast", a, b) from None
    return apply(_solve, (a, b))


# -- cholesky: PyTorch's rules (Iain Murray, arXiv:1602.07527). The input is taken as Hermitian
# (LAPACK reads its lower triangle only), so the vjp is the Hermitian gradient and the jvp uses the
# Hermitian part of the tangent, which keeps the two modes consistent.
def _phi_weights(n, dtype):
    """1 below the diagonal, 1/2 on it, 0 above: X * W is X's lower triangle with half its diagonal."""
    return (np.tril(np.ones((n, n)), -1) + np.eye(n) * 0.5).astype(dtype)


def _cholesky_vjp(g, out, a):
    # the Hermitian-product rule L^-H herm(phi(L^H G)) L^-1, with G = conj(g), conjugated back
    n = _shape(out)[-1]
    l_inv = inv(out)
    p = matmul(_mT(out), g) * _phi_weights(n, _dtype(out))
    s = (p + _H(p)) * 0.5
    return matmul(_mT(l_inv), matmul(s, _conj(l_inv)))


def _cholesky_jvp(t, out, a):
    n = _shape(out)[-1]
    l_inv = inv(out)
    s = (t + _H(t)) * 0.5
    return matmul(out, matmul(l_inv, matmul(s, _H(l_inv))) * _phi_weights(n, _dtype(out)))  # L phi(L^-1 S L^-H)


_cholesky = defop(
    "cholesky",
    np.linalg.cholesky,
    vjp=(_cholesky_vjp,),
    jvp=(_cholesky_jvp,),
    shape=_same_shape,
    dtype=_linalg_dtype,
    batch=batching.stacked,
    validates=True,  # a matrix that is not positive definite raises LinAlgError
)


@public(_cholesky)
def cholesky(a, /, *, upper=False):
    """Cholesky factor of a Hermitian (real: symmetric) positive-definite matrix (or stack), as
    `np.linalg.cholesky`: lower-triangular L with `a = L @ L.conj().T` (or upper U = L^H with
    `upper=True`).

    Only the lower triangle of `a` is read; the gradient is the Hermitian one (as PyTorch): a
    function of `cholesky(a)` is differentiated as one of `cholesky((a + a^H) / 2)`.

    >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]]))
    array([[2., 0.],
           [1., 2.]])
    """
    _square("cholesky", a)
    lower = apply(_cholesky, (a,))
    return _H(lower) if upper else lower


# -- norm: the 2-norm (vector 2-norm, Frobenius) is a primitive with its own rule because
# sqrt(sum(x*x)) composed from primitives has the gradient 0/0 = nan at x = 0; this rule
# gives 0 there (PyTorch's subgradient choice). The guard works on the reduced values only,
# so the full-size work is one multiplication. The second derivative at 0 is also taken as 0.
def _safe_reciprocal(out):
    zero = equal(out, 0)
    return where(zero, 0, 1 / where(zero, 1, out))


def _abs2(x):
    """|x|^2 elementwise, real (NumPy's norm sums x.real**2 + x.imag**2 for complex x)."""
    return x.real * x.real + x.imag * x.imag if np.iscomplexobj(x) else x * x


def _l2_norm_vjp(g, out, x, axis, keepdims):
    # d|x| = Re(sum(conj(x) dx)) / |x|
    kept = reduced_shape(_shape(x), axis, True)
    scale = g * _safe_reciprocal(out)
    return _conj(x) * (scale if _shape(scale) == kept else reshape(scale, kept))


def _l2_norm_jvp(t, out, x, axis, keepdims):
    return _real(sum(_conj(x) * t, axis=axis, keepdims=keepdims)) * _safe_reciprocal(out)


_l2_norm = defop(
    "l2_norm",
    lambda x, axis, keepdims: np.sqrt(np.sum(_abs2(x), axis=axis, keepdims=keepdims)),
    vjp=(_l2_norm_vjp,),
    jvp=(_l2_norm_jvp,),
    shape=lambda shape, axis, keepdims: reduced_shape(shape, axis, keepdims),
    dtype=_real_linalg_dtype,
    batch=batching.over_axes,
)


def _l2(x, axis, keepdims):
    return apply(_l2_norm, (x,), {"axis": axis, "keepdims": bool(keepdims)})


def _p_norm(x, p, axis, keepdims):
    # where-guarded at a zero norm, so the gradient there is 0, as for the 2-norm (for p < 1
    # the gradient at zero entries is not finite: |x|**p has an infinite slope there)
    s = sum(power(abs(x), p), axis=axis, keepdims=keepdims)
    zero = equal(s, 0)
    return where(zero, 0, power(where(zero, 1, s), 1.0 / p))


def _vector_norm(x, ord, axis, keepdims):
    if isinstance(ord, str):
        raise user_error(ValueError, "linalg.norm", f"invalid norm order {ord!r} for vectors", x)
    if ord is None or ord == 2:
        return _l2(x, axis, keepdims)
    if ord == np.inf:
        return max(abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return min(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # the count of non-zero entries: no gradient
        return sum(astype(not_equal(x, 0), real_part(_dtype(x))), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    return _p_norm(x, float(ord), axis, keepdims)


def _singular_value_norm(s, ord, size):
    """The largest (ord=2) or smallest (-2) of the singular values s (..., k), or their sum ('nuc').

    Their gradients at non-differentiable points, as SPEC's ties rule: singular values tied with the
    largest (smallest) within NumPy's rank tolerance (max(m, n) * eps * s_max) share the gradient evenly,
    so it is sum_tied u_i v_i^T / count (torch.linalg.matrix_norm's at exact ties, through amax), which
    does not depend on the basis LAPACK picks for the tied subspace; a zero singular value (within that
    tolerance) contributes nothing: |s| has a kink there, where abs'(0) = 0 and norm's gradient at 0 is
    0, and its u_i v_i^T would depend on LAPACK's basis (torch's does)."""
    top = stop_gradient(max(s, axis=-1, keepdims=True))
    tol = top * (size * np.finfo(_dtype(s)).eps)
    nonzero = s > tol
    if ord == "nuc":
        picked, value = nonzero, sum(s, axis=-1)
    elif ord == 2:
        picked, value = logical_and(nonzero, s >= top - tol), getitem(s, (Ellipsis, 0))
    else:
        picked, value = logical_and(nonzero, s <= min(s, axis=-1, keepdims=True) + tol), getitem(s, (Ellipsis, -1))
    weights = astype(picked, _dtype(s))
    if ord != "nuc":
        weights = weights / maximum(sum(weights, axis=-1, keepdims=True), 1)
    # LAPACK's value exactly (value + sum(w * 0)), the gradient through the weights
    return stop_gradient(value) + sum(weights * (s - stop_gradient(s)), axis=-1)


def _matrix_norm(x, ord, row, col, keepdims):
    if ord is None or ord in ("fro", "f"):
        return _l2(x, tuple(sorted((row, col))), keepdims)
    if ord in (2, -2, "nuc"):
        shape = _shape(x)
        rest = [i for i in range(len(shape)) if i not in (row, col)]
        s = apply(_svd_s, (transpose(x, rest + [row, col]),))
        out = _singular_value_norm(s, ord, builtins.max((d for d in (shape[row], shape[col]) if d is not None),
                                                        default=1))
        return expand_dims(out, (row, col)) if keepdims else out
    if ord in (1, -1):
        inner_axis, outer_axis = row, col  # the largest (smallest) column sum
    elif ord in (np.inf, -np.inf):
        inner_axis, outer_axis = col, row  # the largest (smallest) row sum
    else:
        raise user_error(ValueError, "linalg.norm", f"invalid norm order {ord!r} for matrices", x)
    sums = sum(abs(x), axis=inner_axis)
    pick = max if ord in (1, np.inf) else min
    out = pick(sums, axis=outer_axis - (outer_axis > inner_axis))
    if keepdims:
        out = expand_dims(out, (row, col))
    return out


def norm(x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm, as `np.linalg.norm`.

    Vector norms (`axis` an int, or a 1-D `x`): 2 (default), 1, inf, -inf, 0 and any other
    p. Matrix norms (`axis` a pair, or a 2-D `x` with `ord` given): 'fro' (default), 1, -1,
    inf, -inf, and through the singular values 2, -2 (largest, smallest) and 'nuc' (their sum). With `ord=None`
    and `axis=None` it is the 2-norm of the flattened array. The gradient of a norm at
    x == 0 is 0 (PyTorch's choice of subgradient).

    >>> norm(np.array([3.0, 4.0]))
    np.float64(5.0)
    >>> norm(np.array([[1.0, -2.0], [3.0, 4.0]]), ord=1)
    np.float64(6.0)
    """
    x = as_array(x, "linalg.norm")
    if _dtype(x).kind not in "fc":
        x = astype(x, np.float64)  # NumPy computes norms of integer arrays in float
    ndim = len(_shape(x))
    if axis is None:
        if ord is None:
            return _l2(x, None, keepdims)
        if ndim not in (1, 2):
            raise user_error(ValueError, "linalg.norm", f"ord={ord!r} needs a 1-D or 2-D array or an axis, got {ndim} "
                             "dimensions", x)
        axes = tuple(range(ndim))
    else:
        if is_sequence(axis) and len(axis) not in (1, 2):
            raise user_error(ValueError, "linalg.norm", f"axis must be an integer or a pair, got {axis!r}", x)
        axes = normalize_axis(axis, ndim, "linalg.norm", x, ordered=True)  # (row, col): the order matters
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    return _matrix_norm(x, ord, axes[0], axes[1], keepdims)


# ---------------------------------------------------------------- decompositions
# Each output of a decomposition is its own single-output op (the IR's ops have one output, as
# for slogdet); each runs the LAPACK routine again, which costs time, not correctness. A rule
# for one output is the full rule with the other outputs' cotangents (tangents) zero, so a
# function of the singular values alone never meets the 1/(s_j^2 - s_i^2) terms.
#
# Degenerate spectra, as in JAX and PyTorch: the derivatives of U and V (svd) and of the
# eigenvectors (eigh) divide by s_j^2 - s_i^2 (w_j - w_i), so with repeated singular values
# (eigenvalues) they are inf or nan; those of s and w alone stay finite. For a tall or wide
# matrix, U's (V's) derivative also divides by s, so a rank-deficient one gives inf/nan too.
def _known(n, like):
    if n is None:
        raise user_error(ValueError, "linalg", "a decomposition's derivative needs the matrix sizes known (a static "
                         f"graph has shape {tuple(_shape(like))})", like)
    return n


def _eye(n, like):
    return np.eye(_known(n, like), dtype=_dtype(like))


def _diag_mul(m, d):
    """m @ diag(d) for a stack: column j of m scaled by d[..., j]."""
    return m * expand_dims(d, -2)


def _gap_reciprocal(vals, squared):
    """F[i, j] = 1 / (v_j - v_i) (of the squares if `squared`), 0 on the diagonal (JAX's construction:
    equal values off the diagonal give inf, which the caller's products turn into inf or nan)."""
    if squared:
        vals = vals * vals
    eye = _eye(_shape(vals)[-1], vals)
    return 1 / (expand_dims(vals, -2) - expand_dims(vals, -1) + eye) - eye


def _svd_dims(shape, full_matrices):
    m, n = shape[-2], shape[-1]
    k = None if m is None or n is None else builtins.min(m, n)
    return m, n, k, (m if full_matrices else k), (n if full_matrices else k)


def _svd_factors(a):
    return (apply(_svd_u, (a,), {"full_matrices": False}), apply(_svd_s, (a,)),
            apply(_svd_vt, (a,), {"full_matrices": False}))


def _svd_no_full(a, full_matrices):
    m, n = _shape(a)[-2:]
    if full_matrices and m != n:
        raise user_error(NotImplementedError, "linalg.svd", f"no derivative of U and Vh with full_matrices=True for a "
                         f"non-square matrix of shape {tuple(_shape(a))} (their extra columns are not unique); use "
                         "full_matrices=False", a)


def _svd_cotangent(a, g_u=None, g_s=None, g_vh=None):
    """The cotangent of A = U diag(S) Vh from those of U, S and Vh (None: zero). In Hermitian-product
    terms, with G_U = conj(g_u), G_V = g_vh^T, J = U^H G_U, K = V^H G_V, F = 1/(s_j^2 - s_i^2):
    U [diag(g_s) + (F o (J - J^H)) S + i Im(diag J) / S + S (F o (K - K^H))] V^H
    + (I - U U^H) G_U S^-1 V^H + U S^-1 G_V^H (I - V V^H), conjugated back (the last two only for a
    tall or wide matrix). The i Im(diag J) term is the phase of U's columns, fixed with V's; a
    function invariant to those phases gets its true gradient."""
    u, s, vh = _svd_factors(a)
    f = _gap_reciprocal(s, True)
    eye = _eye(_shape(s)[-1], s)
    inner_part = 0
    if g_s is not None:
        inner_part = eye * expand_dims(g_s, -2)
    if g_u is not None:
        gu = _conj(g_u)
        j = matmul(_H(u), gu)
        inner_part = inner_part + _diag_mul(f * (j - _H(j)), s)
        if _is_complex(j):
            inner_part = inner_part + eye * expand_dims(imag(sum(eye * j, axis=-2)) * 1j / s, -2)
    if g_vh is not None:
        gv = _mT(g_vh)
        k = matmul(vh, gv)
        inner_part = inner_part + expand_dims(s, -1) * (f * (k - _H(k)))
    out = matmul(u, matmul(inner_part, vh))
    if g_u is not None and _shape(a)[-2] != _shape(s)[-1]:  # tall: the part of G_U outside U's columns
        out = out + matmul(_diag_mul(gu - matmul(u, j), 1 / s), vh)
    if g_vh is not None and _shape(a)[-1] != _shape(s)[-1]:  # wide: the part of G_V outside V's columns
        out = out + matmul(_diag_mul(u, 1 / s), _H(gv) - matmul(_H(k), vh))
    return _conj(out)


def _svd_u_vjp(g, out, a, full_matrices):
    _svd_no_full(a, full_matrices)
    return _svd_cotangent(a, g_u=g)


def _svd_vt_vjp(g, out, a, full_matrices):
    _svd_no_full(a, full_matrices)
    return _svd_cotangent(a, g_vh=g)


def _svd_dp(t, a):
    u, s, vh = _svd_factors(a)
    tv = matmul(t, _H(vh))
    return u, s, vh, tv, matmul(_H(u), tv)  # U^H dA V


def _svd_u_jvp(t, out, a, full_matrices):
    # dU = U (F o (P S + S P^H) + i Im(diag P) / S) + (I - U U^H) dA V S^-1, P = U^H dA V
    _svd_no_full(a, full_matrices)
    u, s, vh, tv, dp = _svd_dp(t, a)
    dps = _diag_mul(dp, s)
    inner_part = _gap_reciprocal(s, True) * (dps + _H(dps))
    if _is_complex(dp):
        eye = _eye(_shape(s)[-1], s)
        inner_part = inner_part + eye * expand_dims(imag(sum(eye * dp, axis=-2)) * 1j / s, -2)
    du = matmul(u, inner_part)
    if _shape(a)[-2] != _shape(s)[-1]:
        du = du + _diag_mul(tv - matmul(u, dp), 1 / s)
    return du


def _svd_vt_jvp(t, out, a, full_matrices):
    # dV = V (F o (S P + P^H S)) + (I - V V^H) dA^H U S^-1; dVh = dV^H
    _svd_no_full(a, full_matrices)
    u, s, vh, tv, dp = _svd_dp(t, a)
    sdp = expand_dims(s, -1) * dp
    dv = matmul(_H(vh), _gap_reciprocal(s, True) * (sdp + _H(sdp)))
    if _shape(a)[-1] != _shape(s)[-1]:
        tu = matmul(_H(t), u)
        dv = dv + _diag_mul(tu - matmul(_H(vh), _H(dp)), 1 / s)
    return _H(dv)


def _svd_s_vjp(g, out, a):
    u, _, vh = _svd_factors(a)
    return _conj(matmul(_diag_mul(u, g), vh))  # conj(U diag(g) Vh)


def _svd_s_jvp(t, out, a):
    u, _, vh = _svd_factors(a)
    return _real(sum(_conj(u) * matmul(t, _H(vh)), axis=-2))  # Re diag(U^H dA V)


_svd_u = defop(
    "svd_u",
    lambda a, full_matrices: np.linalg.svd(a, full_matrices=full_matrices)[0],
    vjp=(_svd_u_vjp,),
    jvp=(_svd_u_jvp,),
    shape=lambda shape, full_matrices: (*_batch_shape(shape), shape[-2], _svd_dims(shape, full_matrices)[3]),
    dtype=_linalg_dtype,
    batch=batching.stacked,
)
_svd_s = defop(
    "svd_s",
    lambda a: np.linalg.svd(a, compute_uv=False),
    vjp=(_svd_s_vjp,),
    jvp=(_svd_s_jvp,),
    shape=lambda shape: (*_batch_shape(shape), _svd_dims(shape, False)[2]),
    dtype=_real_linalg_dtype,
    batch=batching.stacked,
)
_svd_vt = defop(
    "svd_vt",
    lambda a, full_matrices: np.linalg.svd(a, full_matrices=full_matrices)[2],
    vjp=(_svd_vt_vjp,),
    jvp=(_svd_vt_jvp,),
    shape=lambda shape, full_matrices: (*_batch_shape(shape), _svd_dims(shape, full_matrices)[4], shape[-1]),
    dtype=_linalg_dtype,
    batch=batching.stacked,
)

SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _matrix(name, a):
    a = as_array(a, f"linalg.{name}")
    if len(_shape(a)) < 2:
        raise user_error(ValueError, f"linalg.{name}", "expected a matrix or a stack of matrices (..., m, n), got "
                         f"shape {tuple(_shape(a))}", a)
    return a


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition `a = U @ diag(S) @ Vh` of a real or complex matrix or stack
    (..., m, n), as `np.linalg.svd`: `SVDResult(U, S, Vh)`, or `S` (real) alone with
    `compute_uv=False`.

    S is differentiable everywhere (its derivative is conj(U diag(.) Vh)). U and Vh are
    differentiable with `full_matrices=False` (or a square matrix); with repeated singular values,
    or zero ones for a non-square matrix, their derivatives are inf/nan, as in JAX and PyTorch.
    Column j of U and row j of Vh may be multiplied by any sign (complex: by e^{i phi} and
    e^{-i phi}), so only functions invariant to that (`abs(U)`, `U @ diag(S) @ Vh`, the projectors
    `U @ U^H`) have unique derivatives; those are what the rules give.
    `hermitian` is accepted and the general algorithm used.

    >>> svd(np.array([[3.0, 0.0], [0.0, -2.0]]), compute_uv=False)
    array([3., 2.])
    """
    a = _matrix("svd", a)
    s = apply(_svd_s, (a,))
    if not compute_uv:
        return s
    attrs = {"full_matrices": bool(full_matrices)}
    return SVDResult(apply(_svd_u, (a,), attrs), s, apply(_svd_vt, (a,), attrs))


def svdvals(x):
    """`np.linalg.svdvals`: the singular values of a matrix or stack (..., m, n), largest first.

    >>> svdvals(np.array([[3.0, 0.0], [0.0, -2.0]]))
    array([3., 2.])
    """
    return apply(_svd_s, (_matrix("svdvals", x),))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """`np.linalg.matrix_norm`: `norm` of each matrix of a stack (..., m, n), over the last two axes.

    >>> float(matrix_norm(np.diag([3.0, -4.0]), ord=2))
    4.0
    """
    return norm(_matrix("matrix_norm", x), ord=ord, axis=(-2, -1), keepdims=keepdims)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """`np.linalg.vector_norm`: the vector `ord`-norm along `axis` (None: of all the entries; several axes:
    of the entries along them, as one vector).

    >>> float(vector_norm(np.array([[3.0], [4.0]])))
    5.0
    """
    x = as_array(x, "linalg.vector_norm")
    if _dtype(x).kind not in "fc":
        x = astype(x, np.float64)  # NumPy computes norms of integer arrays in float
    shape = tuple(_shape(x))
    axes = tuple(range(len(shape))) if axis is None else normalize_axis(axis, len(shape), "linalg.vector_norm", x)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    rest = [i for i in range(len(shape)) if i not in axes]  # the kept axes first, the reduced ones as one
    out = _vector_norm(reshape(transpose(x, rest + list(axes)), tuple(shape[i] for i in rest) + (-1,)), ord,
                       (len(rest),), False)
    return reshape(out, tuple(1 if i in axes else n for i, n in enumerate(shape))) if keepdims else out


def cond(x, p=None):
    """`np.linalg.cond`: the condition number of a matrix or stack. `p` None, 2 or -2: the ratio of the
    largest and smallest singular values (their ties share the gradient, as `norm(x, 2)`'s); other `p`
    (1, -1, inf, -inf, 'fro', 'nuc'): norm(x, p) * norm(inv(x), p) of a square matrix, inf for a singular
    one (unless x holds NaN), as NumPy.

    >>> float(cond(np.diag([4.0, 0.5])))
    8.0
    """
    x = _matrix("cond", x)
    if _dtype(x).kind not in "fc":
        x = astype(x, np.float64)
    if p is None or p in (2, -2):
        s = apply(_svd_s, (x,))
        size = builtins.max((d for d in _shape(x)[-2:] if d is not None), default=1)
        largest, smallest = _singular_value_norm(s, 2, size), _singular_value_norm(s, -2, size)
        return smallest / largest if p == -2 else largest / smallest
    _square("cond", x)
    out = norm(x, p, axis=(-2, -1)) * norm(apply(_inv_inf, (x,)), p, axis=(-2, -1))
    # a singular matrix: its inverse holds inf and NaN; the condition number is inf, as NumPy's
    has_nan = sum(where(isnan(x), 1.0, 0.0), axis=(-2, -1)) > 0
    return where(logical_and(isnan(out), logical_not(has_nan)), np.inf, out)


# -- eigh: LAPACK reads one triangle (UPLO) and takes the diagonal as real, so eigh(a) is a function
# of that triangle: the Hermitian matrix M built from it. Its derivatives are those of that function
# (HIPS autograd's): the jvp uses the M built from the tangent's triangle, the vjp is the gradient
# with respect to M, carried back to that triangle. (PyTorch gives the symmetric gradient instead,
# right only for symmetric tangents; a non-symmetric a's central differences disagree with it.)
def _eigh_factors(a, uplo):
    return apply(_eigh_w, (a,), {"UPLO": uplo}), apply(_eigh_v, (a,), {"UPLO": uplo})


def _size_of(a):
    """n of a square matrix (stack) a, from whichever of its last two sizes a static graph knows."""
    shape = _shape(a)
    return _known(shape[-1] if shape[-1] is not None else shape[-2], a)


def _masks(a, like, uplo):
    """The strict UPLO triangle and the identity, of n x n and like's dtype."""
    n = _size_of(a)
    low = np.tril(np.ones((n, n), dtype=_dtype(like)), -1)
    return (low if uplo == "L" else low.T), np.eye(n, dtype=_dtype(like))


def _read_triangle(t, a, uplo):
    """The Hermitian matrix LAPACK sees in t: its UPLO triangle, mirrored, and its diagonal's real part."""
    strict, eye = _masks(a, t, uplo)
    part = t * strict
    return part + _H(part) + _real(t) * eye


def _to_triangle(ct, a, uplo):
    """The adjoint of _read_triangle: a cotangent of the Hermitian matrix onto the triangle read."""
    strict, eye = _masks(a, ct, uplo)
    return (ct + _H(ct)) * strict + _real(ct) * eye


def _eigh_w_vjp(g, out, a, UPLO):
    v = apply(_eigh_v, (a,), {"UPLO": UPLO})
    return _to_triangle(matmul(_diag_mul(_conj(v), g), _mT(v)), a, UPLO)  # conj(V) diag(g) V^T


def _eigh_v_vjp(g, out, a, UPLO):
    w, v = _eigh_factors(a, UPLO)
    return _to_triangle(matmul(_conj(v), matmul(_gap_reciprocal(w, False) * matmul(_mT(v), g), _mT(v))), a, UPLO)


def _eigh_w_jvp(t, out, a, UPLO):
    v = apply(_eigh_v, (a,), {"UPLO": UPLO})
    return _real(sum(_conj(v) * matmul(_read_triangle(t, a, UPLO), v), axis=-2))  # diag(V^H M V)


def _eigh_v_jvp(t, out, a, UPLO):
    w, v = _eigh_factors(a, UPLO)
    return matmul(v, _gap_reciprocal(w, False) * matmul(_H(v), matmul(_read_triangle(t, a, UPLO), v)))


_eigh_w = defop("eigh_w", lambda a, UPLO: np.linalg.eigh(a, UPLO)[0], vjp=(_eigh_w_vjp,), jvp=(_eigh_w_jvp,),
                shape=lambda shape, UPLO: _eigenvalues_shape(shape), dtype=_real_linalg_dtype,
                batch=batching.stacked, numpy_only=True)
_eigh_v = defop("eigh_v", lambda a, UPLO: np.linalg.eigh(a, UPLO)[1], vjp=(_eigh_v_vjp,), jvp=(_eigh_v_jvp,),
                shape=lambda shape, UPLO: _same_shape(shape), dtype=_linalg_dtype, batch=batching.stacked,
                numpy_only=True)

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending, real) and eigenvectors of a Hermitian (real: symmetric) matrix or
    stack, as `np.linalg.eigh`: `EighResult(eigenvalues, eigenvectors)`.

    Only the `UPLO` triangle (and the real part of the diagonal) is read, and the derivatives are
    those of that function, as HIPS autograd's: a gradient lies in that triangle (PyTorch gives the
    symmetric one). Those of the eigenvalues are finite always; those of the eigenvectors are
    inf/nan when eigenvalues repeat (as in JAX and PyTorch). Each eigenvector's sign (complex:
    phase) is arbitrary, so only functions invariant to it (`abs(v)`, `v @ diag(w) @ v^H`, ...)
    have a well-defined derivative.

    >>> eigh(np.array([[2.0, 1.0], [1.0, 2.0]])).eigenvalues
    array([1., 3.])
    """
    a = as_array(a, "linalg.eigh")
    _square("eigh", a)
    if UPLO not in ("L", "U"):
        raise user_error(ValueError, "linalg.eigh", f"UPLO must be 'L' or 'U', got {UPLO!r}", a)
    return EighResult(*_eigh_factors(a, UPLO))


# -- eig: A U = U diag(w) for a general matrix; NumPy scales each eigenvector to norm 1. With
# X = U^-1 dA U and F = 1/(w_j - w_i) off the diagonal: dw = diag(X), dU = U C where C = F o X off
# the diagonal and, on it, what keeps each column's norm (Re(u_j^H du_j) = 0; the phase stays
# arbitrary). The vjp is HIPS autograd's (arXiv:1701.00392 eq. 4.77), the adjoint of that.
# Both outputs are always complex, as JAX's (NumPy's are real when all eigenvalues of a real matrix
# are, which a graph's dtype cannot depend on).
def _eig_forward(a, which):
    out = np.linalg.eig(a)[which]
    return out.astype(np.result_type(out.dtype, np.complex64), copy=False)


def _eig_factors(a):
    return apply(_eig_w, (a,)), apply(_eig_v, (a,))


def _eig_back(m, u):
    """U^-T m U^T: a cotangent of U^-1 dA U carried to dA."""
    ut = _mT(u)
    return solve(ut, matmul(m, ut))


def _real_like(ct, a):
    """The real part of a complex cotangent for a real matrix (eig's rules; the engine's fast path for
    one-input ops leaves this to the rule)."""
    return real(ct) if _dtype(a).kind != "c" else ct


def _eig_w_vjp(g, out, a):
    u = apply(_eig_v, (a,))
    return _real_like(_eig_back(_eye(_size_of(a), u) * expand_dims(g, -2), u), a)


def _eig_v_vjp(g, out, a):
    w, u = _eig_factors(a)
    ut_g = matmul(_mT(u), g)
    eye = _eye(_size_of(a), u)
    norm_part = _diag_mul(matmul(_mT(u), conj(u)), real(sum(ut_g * eye, axis=-2)))
    return _real_like(_eig_back(_gap_reciprocal(w, False) * (ut_g - norm_part), u), a)


def _eig_x(t, u):
    return solve(u, matmul(t, u))  # U^-1 dA U


def _eig_w_jvp(t, out, a):
    u = apply(_eig_v, (a,))
    return sum(_eig_x(t, u) * _eye(_size_of(a), u), axis=-2)


def _eig_v_jvp(t, out, a):
    w, u = _eig_factors(a)
    uc = matmul(u, _gap_reciprocal(w, False) * _eig_x(t, u))
    return uc - _diag_mul(u, real(sum(conj(u) * uc, axis=-2)))


_eig_w = defop("eig_w", lambda a: _eig_forward(a, 0), vjp=(_eig_w_vjp,), jvp=(_eig_w_jvp,),
               shape=_eigenvalues_shape, dtype=_complex_linalg_dtype,
               batch=batching.stacked, numpy_only=True)
_eig_v = defop("eig_v", lambda a: _eig_forward(a, 1), vjp=(_eig_v_vjp,), jvp=(_eig_v_jvp,),
               shape=_same_shape, dtype=_complex_linalg_dtype, batch=batching.stacked, numpy_only=True)

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def eig(a):
    """Eigenvalues and right eigenvectors (columns, each of norm 1) of a general square matrix or
    stack, as `np.linalg.eig`: `EigResult(eigenvalues, eigenvectors)`, always complex (NumPy's are
    real when every eigenvalue of a real matrix is; the values agree).

    Differentiable (HIPS autograd's rule) where the eigenvalues are distinct (repeated ones give
    inf/nan, as in JAX and PyTorch). Each eigenvector's phase is arbitrary, so only functions
    invariant to it (`abs(v)`, the eigenvalues, `v @ diag(w) @ inv(v)`) have a well-defined
    derivative; the rule keeps each column's norm.

    >>> eig(np.array([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
    array([2.+0.j, 3.+0.j])
    """
    a = as_array(a, "linalg.eig")
    _square("eig", a)
    return EigResult(*_eig_factors(a))


def eigvals(a):
    """The eigenvalues of a general square matrix or stack, as `np.linalg.eigvals` (always complex).

    >>> eigvals(np.array([[0.0, -1.0], [1.0, 0.0]]))
    array([0.+1.j, 0.-1.j])
    """
    a = as_array(a, "linalg.eigvals")
    _square("eigvals", a)
    return apply(_eig_w, (a,))


def eigvalsh(a, UPLO="L"):
    """The eigenvalues (ascending, real) of a Hermitian matrix or stack, as `np.linalg.eigvalsh`.

    >>> eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([1., 3.])
    """
    a = as_array(a, "linalg.eigvalsh")
    _square("eigvalsh", a)
    if UPLO not in ("L", "U"):
        raise user_error(ValueError, "linalg.eigvalsh", f"UPLO must be 'L' or 'U', got {UPLO!r}", a)
    return apply(_eigh_w, (a,), {"UPLO": UPLO})


# -- qr (reduced), for m >= n: the rules of Walter & Lehmann (2018) as JAX and PyTorch have
# them. A wide matrix [X | Y] is factored as Q R_X = qr(X), R = [R_X | Q^H Y] (LAPACK's
# Householder steps on the first m columns are those of X's, so the values are NumPy's).
def _tril_mask(like, strict):
    n = _known(_shape(like)[-1], like)
    return np.tril(np.ones((n, n), dtype=_dtype(like)), -1 if strict else 0)


def _syminvadj_triu(m):
    """The Hermitian matrix with m's upper triangle (and the real part of its diagonal)."""
    up = m * _mT(_tril_mask(m, True))
    return up + _H(up) + _real(m) * _eye(_shape(m)[-1], m)


def _qr_factors(a):
    return apply(_qr_q, (a,)), apply(_qr_r, (a,))


def _times_r_inv_t(x, r):
    return _mT(solve(r, _mT(x)))  # x R^-T


# in Hermitian-product terms dA = (G_Q + Q herm_triu(G_R R^H - Q^H G_Q)) R^-H; conjugated back, as below
def _qr_q_vjp(g, out, a):
    q, r = _qr_factors(a)
    return _times_r_inv_t(g + matmul(_conj(q), _syminvadj_triu(-matmul(_mT(q), g))), r)


def _qr_r_vjp(g, out, a):
    q, r = _qr_factors(a)
    return _times_r_inv_t(matmul(_conj(q), _syminvadj_triu(matmul(g, _mT(r)))), r)


def _qr_tangents(t, a):
    # Q^H dA R^-1 = Q^H dQ + dR R^-1: a skew-Hermitian part (its diagonal imaginary, as R's is real)
    # and an upper-triangular one
    q, r = _qr_factors(a)
    t_rinv = _mT(solve(_mT(r), _mT(t)))  # dA R^-1
    qt = matmul(_H(q), t_rinv)
    low = qt * _tril_mask(qt, True)
    skew = low - _H(low)
    if _is_complex(qt):
        skew = skew + (qt - _real(qt)) * _eye(_shape(qt)[-1], qt)
    return q, r, t_rinv, qt, skew


def _qr_q_jvp(t, out, a):
    q, r, t_rinv, qt, skew = _qr_tangents(t, a)
    return matmul(q, skew - qt) + t_rinv


def _qr_r_jvp(t, out, a):
    q, r, t_rinv, qt, skew = _qr_tangents(t, a)
    return matmul(qt - skew, r)


def _qr_shape(shape, which):
    m, n, k, _, _ = _svd_dims(shape, False)
    return (*_batch_shape(shape), *((m, k) if which == "q" else (k, n)))


_qr_q = defop("qr_q", lambda a: np.linalg.qr(a)[0], vjp=(_qr_q_vjp,), jvp=(_qr_q_jvp,),
              shape=lambda shape: _qr_shape(shape, "q"), dtype=_linalg_dtype, batch=batching.stacked,
              numpy_only=True)  # Dask's tall-and-skinny QR has other signs than LAPACK's: refused, not different
_qr_r = defop("qr_r", lambda a: np.linalg.qr(a)[1], vjp=(_qr_r_vjp,), jvp=(_qr_r_jvp,),
              shape=lambda shape: _qr_shape(shape, "r"), dtype=_linalg_dtype, batch=batching.stacked,
              numpy_only=True)

QRResult = namedtuple("QRResult", ["Q", "R"])


def qr(a, mode="reduced"):
    """QR decomposition `a = Q @ R` of a real or complex matrix or stack (..., m, n), as `np.linalg.qr`:
    `QRResult(Q, R)` with mode 'reduced', R alone with mode 'r'; differentiable (where R's
    diagonal has no zero, i.e. the first min(m, n) columns are independent).

    >>> q, r = qr(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> np.allclose(q @ r, [[3.0, 1.0], [4.0, 2.0]])
    True
    """
    a = _matrix("qr", a)
    if mode not in ("reduced", "r"):
        raise user_error(NotImplementedError if mode in ("complete", "raw") else ValueError, "linalg.qr",
                         f"mode {mode!r} is not supported (only 'reduced' and 'r')", a)
    m, n = _shape(a)[-2:]
    if m is None or n is None:  # wide and tall matrices are factored differently
        raise user_error(ValueError, "linalg.qr", f"needs the matrix sizes known (a static graph has shape "
                         f"{tuple(_shape(a))})", a)
    if m < n:
        x, y = getitem(a, (Ellipsis, slice(None), slice(0, m))), getitem(a, (Ellipsis, slice(None), slice(m, None)))
        q, rx = _qr_factors(x)
        r = concatenate([rx, matmul(_H(q), y)], axis=-1)
    else:
        q, r = _qr_factors(a)
    return r if mode == "r" else QRResult(q, r)


# -- pinv: its own op with the derivative of Golub & Pereyra (1973), as JAX's pinv has it, valid
# where the rank is locally constant; an SVD composite would give nan for repeated singular values
def _pinv_forward(a, rcond):
    return np.linalg.pinv(a) if rcond is None else np.linalg.pinv(a, rcond=rcond)


def _pinv_vjp(g, out, a, rcond):
    # the Hermitian-product rule for G = conj(g), conjugated back
    p, gh = out, _mT(g)  # gh = G^H
    ph = _H(p)
    left = matmul(gh, matmul(p, ph))  # G^H P P^H, then (I - A P) of it
    right = matmul(matmul(ph, p), gh)  # P^H P G^H, then it (I - P A)
    return _conj(-matmul(ph, matmul(_conj(g), ph)) + left - matmul(a, matmul(p, left))
                 + right - matmul(matmul(right, p), a))


def _pinv_jvp(t, out, a, rcond):
    p, th = out, _H(t)
    left = matmul(p, matmul(_H(p), th))  # P P^H t^H (I - A P)
    right = matmul(th, matmul(_H(p), p))  # (I - P A) t^H P^H P
    return (-matmul(p, matmul(t, p)) + left - matmul(matmul(left, a), p)
            + right - matmul(p, matmul(a, right)))


_pinv = defop("pinv", _pinv_forward, vjp=(_pinv_vjp,), jvp=(_pinv_jvp,),
              shape=lambda shape, rcond: (*_batch_shape(shape), shape[-1], shape[-2]), dtype=_linalg_dtype,
              batch=batching.stacked, numpy_only=True)


def pinv(a, rcond=None, hermitian=False):
    """Moore-Penrose pseudo-inverse of a real or complex matrix or stack (..., m, n), as `np.linalg.pinv`
    (singular values below `rcond` times the largest are taken as zero). The derivative is
    Golub and Pereyra's, correct where the rank does not change nearby (as JAX's), and
    finite for repeated singular values. `hermitian` is accepted; the general algorithm is used.

    >>> pinv(np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))
    array([[1. , 0. , 0. ],
           [0. , 0.5, 0. ]])
    """
    a = _matrix("pinv", a)
    if rcond is not None:
        if not isinstance(rcond, (int, float, np.floating, np.integer)) or isinstance(rcond, bool):
            raise user_error(TypeError, "linalg.pinv", f"rcond must be a number, got {type(rcond).__name__}", a)
        rcond = float(rcond)
    return apply(_pinv, (a,), {"rcond": rcond})


def matrix_power(a, n):
    """`a` multiplied by itself `n` times (n < 0: of its inverse; n == 0: the identity), for a
    square matrix or stack, as `np.linalg.matrix_power`; by repeated squaring, with matmul's
    derivative.

    >>> matrix_power(np.array([[1.0, 1.0], [0.0, 1.0]]), 3)
    array([[1., 3.],
           [0., 1.]])
    """
    a = as_array(a, "linalg.matrix_power")
    shape = _square("matrix_power", a)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise user_error(TypeError, "linalg.matrix_power", f"exponent must be an integer, got {n!r}", a)
    n = int(n)
    if n == 0:
        if None in shape:
            raise user_error(ValueError, "linalg.matrix_power", f"n=0 needs the matrix sizes known (a static graph "
                             f"has shape {tuple(shape)})", a)
        return broadcast_to(np.eye(shape[-1], dtype=_dtype(a)), tuple(shape)) + 0 * a  # 0 * a: a zero derivative
    if n < 0:
        a, n = inv(a), -n
    result, power_of_a = None, a
    while n:
        if n & 1:
            result = power_of_a if result is None else matmul(result, power_of_a)
        n >>= 1
        if n:
            power_of_a = matmul(power_of_a, power_of_a)
    return result
