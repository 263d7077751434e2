"""More of NumPy's functions for `dagrad.numpy` (issue 16), differentiable where NumPy's are.

Each is NumPy's own function when no argument is a Tensor (so plain arrays get NumPy's exact result),
and otherwise a composition of dagrad's ops, whose derivatives follow; `dagrad/numpy.py` exports them.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ._core.errors import op_error, user_error
from ._core.shapes import normalize_axis_index
from ._core.shapes import shape_of as _shape
from ._core.tensor import Tensor
from .ops.elementwise import abs as abs_
from .ops.elementwise import (
    astype,
    equal,
    isfinite,
    isnan,
    logical_or,
    not_equal,
    sin,
)
from .ops.elementwise import where as _where
from .ops.reduce import sum as sum_
from .ops.shape import (
    as_array,
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    getitem,
    moveaxis,
    reshape,
    stack,
    swapaxes,
    take,
    transpose,
)

__all__ = ["all", "any", "append", "array_split", "c_", "cross", "deg2rad", "degrees", "diff", "dsplit", "fabs",
           "fliplr", "flipud", "gradient", "hsplit", "kron", "linspace", "make_diagonal",
           "nan_to_num", "r_", "rad2deg", "radians", "real_if_close", "roll", "rollaxis", "rot90", "select", "sinc",
           "vsplit", "where"]


def _traced(*values):
    """Whether any value (or any item of a list/tuple value) is a Tensor: then dagrad computes."""
    return builtins.any(isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _traced(*v)) for v in values)


def _numpy(name, *args, **kwargs):
    try:
        return getattr(np, name)(*args, **kwargs)
    except (TypeError, ValueError, IndexError) as err:
        raise op_error(name, args, err) from None


# -- elementwise
def fabs(x):
    """`np.fabs`: the absolute value, as floats.

    >>> fabs(np.array([-1, 2]))
    array([1., 2.])
    """
    if not _traced(x):
        return _numpy("fabs", x)
    return abs_(x if x.dtype.kind == "f" else astype(x, np.float64))


def deg2rad(x):
    """`np.deg2rad` (= `np.radians`): degrees to radians."""
    return _numpy("deg2rad", x) if not _traced(x) else x * (math.pi / 180)


def rad2deg(x):
    """`np.rad2deg` (= `np.degrees`): radians to degrees."""
    return _numpy("rad2deg", x) if not _traced(x) else x * (180 / math.pi)


radians, degrees = deg2rad, rad2deg


def sinc(x):
    """`np.sinc`: sin(pi x) / (pi x), 1 at 0 (and its derivative there 0).

    >>> sinc(np.array([0.0, 0.5]))
    array([1.        , 0.63661977])
    """
    if not _traced(x):
        return _numpy("sinc", x)
    zero = equal(x, 0)
    safe = _where(zero, 1.0, x) * math.pi
    return _where(zero, 1.0, sin(safe) / safe)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """`np.nan_to_num`: NaN and infinities replaced by finite numbers (the largest float by default);
    the gradient passes where the value was finite."""
    if not _traced(x):
        return _numpy("nan_to_num", x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    if x.dtype.kind != "f":
        return x
    big = np.finfo(x.dtype).max
    filled = _where(isnan(x), nan, x)
    infinite = _where(x > 0, big if posinf is None else posinf, -big if neginf is None else neginf)
    return _where(logical_or(isfinite(x), isnan(x)), filled, infinite)


def real_if_close(a, tol=100):
    """`np.real_if_close`: a real array is returned as it is (dagrad's values are real)."""
    return a if _traced(a) else _numpy("real_if_close", a, tol=tol)


# -- logic (no gradient)
def all(a, axis=None, keepdims=False):  # noqa: A001  (NumPy's name)
    """`np.all`: whether every element (along `axis`) is true (non-zero)."""
    if not _traced(a):
        return _numpy("all", a, axis=axis, keepdims=keepdims)
    return sum_(astype(equal(a, 0), np.int64), axis=axis, keepdims=keepdims) == 0


def any(a, axis=None, keepdims=False):  # noqa: A001  (NumPy's name)
    """`np.any`: whether some element (along `axis`) is true (non-zero)."""
    if not _traced(a):
        return _numpy("any", a, axis=axis, keepdims=keepdims)
    return sum_(astype(not_equal(a, 0), np.int64), axis=axis, keepdims=keepdims) > 0


def select(condlist, choicelist, default=0):
    """`np.select`: from each position, the choice of the first condition that holds, else `default`.

    >>> select([np.array([True, False]), np.array([True, True])], [np.ones(2), np.full(2, 2.0)], 0.0)
    array([1., 2.])
    """
    if not _traced(condlist, choicelist, default):
        return _numpy("select", condlist, choicelist, default)
    if len(condlist) != len(choicelist):
        raise user_error(ValueError, "select", f"list of cases must be same length as list of conditions, got "
                         f"{len(condlist)} conditions and {len(choicelist)} choices")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = _where(cond, choice, out)
    return out


# -- shape
def fliplr(m):
    """`np.fliplr`: the columns in reverse order."""
    return _numpy("fliplr", m) if not _traced(m) else flip(m, 1)


def flipud(m):
    """`np.flipud`: the rows in reverse order."""
    return _numpy("flipud", m) if not _traced(m) else flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    """`np.rot90`: rotated by 90 degrees k times in the plane of `axes` (NumPy's construction)."""
    if not _traced(m):
        return _numpy("rot90", m, k, axes)
    a, b = (normalize_axis_index(x, len(_shape(m)), "rot90", m) for x in axes)
    if a == b:
        raise user_error(ValueError, "rot90", "axes must be different", m)
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a), b)
    perm = list(range(len(_shape(m))))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(flip(m, b), perm) if k == 1 else flip(transpose(m, perm), b)


def roll(a, shift, axis=None):
    """`np.roll`: elements shifted along `axis` (of the flattened array when None), wrapping around.

    >>> roll(np.arange(4.0), 1)
    array([3., 0., 1., 2.])
    """
    if not _traced(a):
        return _numpy("roll", a, shift, axis)
    if axis is None:
        return reshape(roll(reshape(a, (-1,)), shift, 0), _shape(a))
    shifts, axes = (shift, axis) if isinstance(axis, (tuple, list)) else ((shift,), (axis,))
    if isinstance(shift, (tuple, list)) and not isinstance(axis, (tuple, list)):
        shifts, axes = shift, (axis,) * len(shift)
    for s, ax in zip(shifts, axes):
        ax = normalize_axis_index(ax, len(_shape(a)), "roll", a)
        n = _shape(a)[ax]
        if n:
            a = take(a, (np.arange(n) - s) % n, axis=ax)
    return a


def rollaxis(a, axis, start=0):
    """`np.rollaxis`: `axis` moved to before position `start`."""
    if not _traced(a):
        return _numpy("rollaxis", a, axis, start)
    n = len(_shape(a))
    axis = normalize_axis_index(axis, n, "rollaxis", a)
    start = start + n if start < 0 else start
    if not 0 <= start <= n:
        raise user_error(ValueError, "rollaxis", f"start={start} must be in [{-n}, {n}]", a)
    order = [k for k in range(n) if k != axis]
    order.insert(start - (start > axis), axis)
    return transpose(a, order)


def append(arr, values, axis=None):
    """`np.append`: `values` joined after `arr` (both flattened when `axis` is None)."""
    if not _traced(arr, values):
        return _numpy("append", arr, values, axis)
    arr, values = as_array(arr, "append"), as_array(values, "append")
    if axis is None:
        return concatenate([reshape(arr, (-1,)), reshape(values, (-1,))])
    return concatenate([arr, values], axis=axis)


def array_split(ary, indices_or_sections, axis=0):
    """`np.array_split`: like `split`, but the sections may differ in size by one.

    >>> [p.tolist() for p in array_split(np.arange(5.0), 2)]
    [[0.0, 1.0, 2.0], [3.0, 4.0]]
    """
    if not _traced(ary):
        return _numpy("array_split", ary, indices_or_sections, axis)
    axis = normalize_axis_index(axis, len(_shape(ary)), "array_split", ary)
    n = _shape(ary)[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise user_error(ValueError, "array_split", "number sections must be larger than 0", ary)
        size, extra = divmod(n, sections)
        bounds = np.cumsum([0] + [size + 1] * extra + [size] * (sections - extra))
    else:
        bounds = [0, *indices_or_sections, n]
    lead = (slice(None),) * axis
    return [getitem(ary, lead + (slice(int(lo), int(max(lo, hi))),)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def _split_along(name, ary, indices_or_sections, axis, min_ndim):
    if not _traced(ary):
        return _numpy(name, ary, indices_or_sections)
    if len(_shape(ary)) < min_ndim:
        raise user_error(ValueError, name, f"only works on arrays of {min_ndim} or more dimensions", ary)
    if isinstance(indices_or_sections, (int, np.integer)) and _shape(ary)[axis] % int(indices_or_sections):
        raise user_error(ValueError, name, "array split does not result in an equal division", ary)
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """`np.hsplit`: split along the columns (axis 1; axis 0 of a 1-D array)."""
    axis = 1 if isinstance(ary, Tensor) and len(_shape(ary)) > 1 else 0
    return _split_along("hsplit", ary, indices_or_sections, axis, 1)


def vsplit(ary, indices_or_sections):
    """`np.vsplit`: split along the rows (axis 0) of an array of 2 or more dimensions."""
    return _split_along("vsplit", ary, indices_or_sections, 0, 2)


def dsplit(ary, indices_or_sections):
    """`np.dsplit`: split along axis 2 of an array of 3 or more dimensions."""
    return _split_along("dsplit", ary, indices_or_sections, 2, 3)


# -- differences and products
def diff(a, n=1, axis=-1, prepend=None, append=None):  # noqa: A002  (NumPy's argument names)
    """`np.diff`: the n-th discrete difference along `axis`.

    >>> diff(np.array([1.0, 4.0, 9.0, 16.0]), n=2)
    array([2., 2.])
    """
    if not _traced(a, prepend, append):
        kwargs = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
        return _numpy("diff", a, n, axis, **kwargs)
    axis = normalize_axis_index(axis, len(_shape(a)), "diff", a)
    parts = [_edge(prepend, a, axis), a, _edge(append, a, axis)]
    parts = [p for p in parts if p is not None]
    if len(parts) > 1:
        a = concatenate(parts, axis=axis)
    lead = (slice(None),) * axis
    for _ in range(n):
        a = getitem(a, lead + (slice(1, None),)) - getitem(a, lead + (slice(None, -1),))
    return a


def _edge(value, like, axis):
    """np.diff's prepend/append: a scalar is broadcast to one slice of `like` along `axis`."""
    if value is None or np.ndim(value) > 0 or (isinstance(value, Tensor) and value.ndim > 0):
        return value
    shape = list(_shape(like))
    shape[axis] = 1
    return broadcast_to(value if isinstance(value, Tensor) else np.asarray(value, like.dtype), tuple(shape))


def gradient(f, *varargs, axis=None, edge_order=1):
    """`np.gradient` with scalar spacings: central differences inside, one-sided differences of
    `edge_order` 1 at the edges; a list of arrays for several axes, as NumPy."""
    if not _traced(f):
        return _numpy("gradient", f, *varargs, axis=axis, edge_order=edge_order)
    ndim = len(_shape(f))
    axes = list(range(ndim)) if axis is None else [normalize_axis_index(ax, ndim, "gradient", f)
                                                   for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if edge_order != 1:
        raise user_error(NotImplementedError, "gradient", "only edge_order=1 is supported for traced values", f)
    spacing = list(varargs) if len(varargs) > 1 else list(varargs) * len(axes) if varargs else [1.0] * len(axes)
    if len(spacing) != len(axes) or not builtins.all(np.ndim(h) == 0 for h in spacing):
        raise user_error(TypeError, "gradient", "traced values take one scalar spacing per axis", f)
    out = []
    for ax, h in zip(axes, spacing):
        if _shape(f)[ax] < 2:
            raise user_error(ValueError, "gradient", "each dimension must have at least 2 elements", f)
        lead = (slice(None),) * ax
        inner = (getitem(f, lead + (slice(2, None),)) - getitem(f, lead + (slice(None, -2),))) / (2.0 * h)
        first = (getitem(f, lead + (slice(1, 2),)) - getitem(f, lead + (slice(0, 1),))) / h
        last = (getitem(f, lead + (slice(-1, None),)) - getitem(f, lead + (slice(-2, -1),))) / h
        out.append(concatenate([first, inner, last], axis=ax))
    return out[0] if len(out) == 1 else out


def kron(a, b):
    """`np.kron`: the Kronecker product (blocks a[i, j] * b).

    >>> kron(np.eye(2), np.array([[1.0, 2.0]]))
    array([[1., 2., 0., 0.],
           [0., 0., 1., 2.]])
    """
    if not _traced(a, b):
        return _numpy("kron", a, b)
    sa, sb = tuple(_shape(a)), tuple(_shape(b))
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    a = reshape(a, tuple(x for s in sa for x in (s, 1)))
    b = reshape(b, tuple(x for s in sb for x in (1, s)))
    return reshape(a * b, tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """`np.cross` of 3-vectors (or 2-vectors, giving the z component) along the last axes."""
    if not _traced(a, b):
        return _numpy("cross", a, b, axisa, axisb, axisc, axis)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = swapaxes(a, axisa, -1)
    b = swapaxes(b, axisb, -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise user_error(ValueError, "cross", "incompatible dimensions for cross product (dimension must be 2 "
                         "or 3)", a, b)

    def part(x, k, size):
        return getitem(x, (Ellipsis, k)) if k < size else 0.0

    a0, a1, a2 = (part(a, k, na) for k in range(3))
    b0, b1, b2 = (part(b, k, nb) for k in range(3))
    if na == 2 and nb == 2:
        return a0 * b1 - a1 * b0
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return swapaxes(out, -1, axisc) if axisc != -1 else out


# -- index tricks
class _Concatenator:
    """`np.r_` / `np.c_`: slices become ranges, arrays are joined (r_: along axis 0; c_: as columns)."""

    def __init__(self, columns):
        self.columns = columns

    def __getitem__(self, key):
        parts = key if isinstance(key, tuple) else (key,)
        if not _traced(*parts):
            return (np.c_ if self.columns else np.r_)[key]
        arrays = []
        for p in parts:
            if isinstance(p, slice):
                step = 1 if p.step is None else p.step
                p = np.linspace(p.start or 0, p.stop, int(abs(step.imag))) if isinstance(step, complex) \
                    else np.arange(p.start or 0, p.stop, step)
            if isinstance(p, str):
                raise user_error(TypeError, "r_", "string directives are not supported for traced values")
            arrays.append(p if isinstance(p, Tensor) else np.asarray(p))
        if self.columns:
            arrays = [reshape(x, (-1, 1)) if len(_shape(x)) < 2 else x for x in arrays]
            return concatenate(arrays, axis=-1)
        return concatenate([reshape(x, (1,)) if not _shape(x) else x for x in arrays], axis=0)


r_ = _Concatenator(False)
c_ = _Concatenator(True)


# -- NumPy's functions with traced arguments where NumPy takes numbers
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`np.linspace`, differentiable in `start` and `stop` (numbers or arrays): `num` evenly spaced values
    from `start` to `stop` (included when `endpoint`), along a new axis `axis`.

    >>> import dagrad as dg
    >>> float(dg.grad(lambda b: linspace(0.0, b, 5)[1])(2.0))
    0.25
    """
    if not _traced(start, stop):
        return _numpy("linspace", start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
    if isinstance(num, bool) or not isinstance(num, (int, np.integer)) or num < 0:
        raise user_error(ValueError, "linspace", f"num must be a non-negative integer, got {num!r}")
    start, stop = as_array(start, "linspace"), as_array(stop, "linspace")
    shape = np.broadcast_shapes(tuple(_shape(start)), tuple(_shape(stop)))
    fractions = np.linspace(0.0, 1.0, num, endpoint=endpoint).reshape((num,) + (1,) * len(shape))
    out = moveaxis(start + (stop - start) * fractions, 0, axis)
    if dtype is not None:
        out = astype(out, dtype)
    if not retstep:
        return out
    divisions = num - 1 if endpoint else num
    return out, (stop - start) / divisions if divisions > 0 else np.nan


def make_diagonal(D, offset=0, axis1=-1, axis2=-2):
    """autograd's `make_diagonal` (not NumPy's: the inverse of `diagonal`): an array of shape `D.shape +
    (n,)` whose diagonal over the last two axes is `D` (n: D's last size), zeros elsewhere. Only autograd's
    supported case, offset=0, axis1=-1, axis2=-2.

    >>> make_diagonal(np.array([1.0, 2.0]))
    array([[1., 0.],
           [0., 2.]])
    """
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise user_error(NotImplementedError, "make_diagonal", f"supports offset=0, axis1=-1, axis2=-2 only (as "
                         f"autograd's), got offset={offset}, axis1={axis1}, axis2={axis2}")
    n = _shape(D)[-1] if _shape(D) else 1
    return _where(np.eye(n, dtype=bool), expand_dims(D, -1), 0.0)


def where(condition, x=None, y=None):
    """`np.where`: `x` where `condition` holds, else `y` (differentiable in both); with neither given, the
    indices where `condition` holds (`np.nonzero`). The arguments may be passed by keyword (as autograd's).

    >>> where([True, False], np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    array([1., 4.])
    """
    if x is None and y is None:
        return np.nonzero(condition.numpy() if isinstance(condition, Tensor) else condition)
    if x is None or y is None:
        raise user_error(ValueError, "where", "either both or neither of x and y should be given")
    return _where(condition, x, y)
