"""More of NumPy's functions for `dagrad.numpy` (issue 16), differentiable where NumPy's are.

Each is NumPy's own function when no argument is a Tensor (so plain arrays get NumPy's exact result),
and otherwise a composition of dagrad's ops, whose derivatives follow; `dagrad/numpy.py` exports them.
"""

from __future__ import annotations

import builtins
import inspect
import math

import numpy as np

from ._core.errors import op_error, user_error
from ._core.ir import number_needed
from ._core.shapes import normalize_axis, normalize_axis_index
from ._core.shapes import shape_of as _shape
from ._core.tensor import Batched, Tensor, is_symbolic
from .ops.elementwise import abs as abs_
from .ops.elementwise import (
    astype,
    ceil,
    clip,
    conj,
    equal,
    floor,
    greater,
    imag,
    isfinite,
    isnan,
    less,
    logical_and,
    logical_not,
    logical_or,
    mod,
    not_equal,
    ones_like,
    real,
    sin,
    sqrt,
    stop_gradient,
)
from .ops.elementwise import cbrt as _cbrt
from .ops.elementwise import float_power as _float_power
from .ops.elementwise import round as round_
from .ops.elementwise import where as _where
from .ops.linalg import diag, diagonal, matmul
from .ops.reduce import argmax, argmin, cumsum, mean, prod
from .ops.reduce import max as max_
from .ops.reduce import min as min_
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
    sort,
    stack,
    swapaxes,
    take,
    take_along_axis,
    transpose,
)

__all__ = ["all", "any", "append", "around", "array_split", "average", "block", "broadcast_arrays", "c_",
           "cbrt", "convolve", "corrcoef", "correlate", "cov", "cross", "cumprod", "cumulative_prod",
           "cumulative_sum", "deg2rad", "degrees", "delete", "diagflat", "diff", "divmod", "dsplit",
           "ediff1d", "fabs", "fix", "fliplr", "flipud", "float_power", "floor_divide", "fmod", "gradient",
           "heaviside", "hsplit", "insert", "interp", "isinf", "isneginf", "isposinf", "kron", "linspace",
           "logical_xor", "make_diagonal", "matrix_transpose", "matvec", "median", "meshgrid", "modf",
           "nan_to_num", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean",
           "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar",
           "percentile", "polyval", "ptp", "quantile", "r_", "rad2deg", "radians", "real_if_close", "rint",
           "roll", "rollaxis", "rot90", "select", "sinc", "trapezoid", "tri", "trunc", "unstack", "unwrap",
           "vander", "vecdot", "vecmat", "vsplit", "where"]


def _traced(*values):
    """Whether any value (or any item of a list/tuple value) is a Tensor: then dagrad computes."""
    return builtins.any(isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _traced(*v)) for v in values)


def _parameter(name, k):
    """The name of NumPy's function `name`'s parameter number `k` (or the keyword `k`), for messages."""
    if type(k) is str:
        return k
    try:
        return list(inspect.signature(getattr(np, name)).parameters)[k]
    except (TypeError, ValueError, IndexError):  # a function without a signature
        return f"argument {k}"


def _numpy(name, *args, **kwargs):
    """NumPy's `name`, for arguments dagrad does not compute on (the first is no Tensor). Another one that is
    a Tensor without a value (a traced Python float: quantile's q) is refused: NumPy would hand it back here
    (__array_function__) without end; an eager one gives its values."""
    if _traced(*args, *kwargs.values()):
        for k, v in [*enumerate(args), *kwargs.items()]:
            if isinstance(v, Tensor) and (is_symbolic(v) or v._level or v._requires_grad):
                raise number_needed(v, _parameter(name, k), name)
        args = [v.numpy() if isinstance(v, Tensor) else v for v in args]
        kwargs = {k: v.numpy() if isinstance(v, Tensor) else v for k, v in kwargs.items()}
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
    """`np.real_if_close`: the real part of a complex `a` whose imaginary parts are all within `tol`
    (times the machine epsilon when `tol > 1`) of zero, else `a`. The choice depends on the values:
    in a static graph or `dg.compile`, where they are not known while tracing, a complex `a` stays
    complex.

    >>> real_if_close(np.array([1.0 + 1e-15j, 2.0]))
    array([1., 2.])
    """
    if not _traced(a):
        return _numpy("real_if_close", a, tol=tol)
    if a.dtype.kind != "c":
        return a
    if is_symbolic(a):  # a static graph's node: its values are not known while tracing
        return a
    value = a
    while isinstance(value, Tensor):
        value = value._value
    if not isinstance(value, (np.ndarray, np.generic)):  # a Dask array: deciding would compute it
        return a
    limit = tol * np.finfo(a.dtype).eps if tol > 1 else tol
    return real(a) if np.all(np.abs(np.imag(value)) < limit) else a


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
        size, extra = builtins.divmod(n, sections)
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


# -- shared by the functions below
def _dtype(x):
    return x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype


def _stand_in(x, keep_core=0):
    """A small NumPy array of `x`'s dtype and number of dimensions (each size 0 or 1, the last `keep_core`
    sizes kept) for NumPy to check arguments and tell the result's dtype; other values pass as they are."""
    if not isinstance(x, Tensor):
        return x
    dims = tuple(_shape(x))
    lead = builtins.max(len(dims) - keep_core, 0)
    small = tuple(1 if d is None else builtins.min(d, 1) for d in dims[:lead])
    core = tuple(1 if d is None else d for d in dims[lead:])
    return np.broadcast_to(np.zeros((), x.dtype), small + core)


def _probe(name, *args, keep_core=0, **kwargs):
    """NumPy's `name` on stand-ins for the Tensors among `args`: raises NumPy's error for bad arguments
    (naming `name` and the user's line) and returns NumPy's result (its dtype is the one to give)."""
    stand = [[_stand_in(v, keep_core) for v in a] if isinstance(a, (list, tuple)) else _stand_in(a, keep_core)
             for a in args]
    try:
        with np.errstate(all="ignore"):
            return getattr(np, name)(*stand, **{k: _stand_in(v, keep_core) for k, v in kwargs.items()})
    except (TypeError, ValueError, IndexError) as err:  # described by the real arguments, not the stand-ins
        if str(err).startswith(f"{name}: "):  # a gufunc's message names itself
            try:
                err = type(err)(str(err)[len(name) + 2:])
            except TypeError:
                pass
        raise op_error(name, _tensors(*args, *kwargs.values()), err) from None


def _tensors(*values):
    return [v for a in values for v in (a if isinstance(a, (list, tuple)) else (a,)) if isinstance(v, Tensor)]


def _elementwise_probe(name, *args):
    """NumPy's result dtype of the elementwise function `name`, after checking that the shapes broadcast."""
    try:
        np.broadcast_shapes(*(_known(a) for a in args))
    except ValueError as err:
        raise user_error(ValueError, name, str(err), *[a for a in args if isinstance(a, Tensor)]) from None
    result = _probe(name, *args)
    return (result[0] if isinstance(result, tuple) else result).dtype  # divmod and modf: two of one dtype


def _known(x):
    """x's shape, a size known only when a static graph runs taken as 1 (which broadcasts with any)."""
    return tuple(1 if n is None else n for n in _shape(x)) if isinstance(x, Tensor) else np.shape(x)


def _as(x, dtype):
    return x if _dtype(x) == dtype else astype(x, dtype)


def _concrete(*values):
    """Whether every Tensor among `values` holds its numbers now: not a static graph's or a trace's node,
    nor a box of `vmap` (whose value holds every example)."""
    return not builtins.any(is_symbolic(v) or _mapped(v) for v in values)


def _mapped(value):
    while isinstance(value, Tensor):
        if isinstance(value, Batched):
            return True
        value = value._value
    return False


# -- rounding and tests (piecewise constant: zero gradient)
def trunc(x):
    """`np.trunc`: rounded towards zero; the gradient is zero.

    >>> trunc(np.array([-1.7, 1.7]))
    array([-1.,  1.])
    """
    if not _traced(x):
        return _numpy("trunc", x)
    dtype = _elementwise_probe("trunc", x)
    return _as(_where(x < 0, ceil(x), floor(x)), dtype)


def fix(x):
    """`np.fix`: rounded towards zero (as `trunc`); the gradient is zero.

    >>> fix(np.array([-2.5, 2.5]))
    array([-2.,  2.])
    """
    if not _traced(x):
        return _numpy("fix", x)
    dtype = _probe("fix", x).dtype
    return _as(_where(x < 0, ceil(x), floor(x)), dtype)


def rint(x):
    """`np.rint`: rounded to the nearest integer, halves to even (complex: each part); zero gradient.

    >>> rint(np.array([0.5, 1.5, -2.7]))
    array([ 0.,  2., -3.])
    """
    if not _traced(x):
        return _numpy("rint", x)
    return round_(_as(x, _elementwise_probe("rint", x)))


def around(a, decimals=0, out=None):
    """`np.around` (= `np.round`): rounded to `decimals` places, halves to even; zero gradient.

    >>> around(np.array([1.25, 2.5]), 1)
    array([1.2, 2.5])
    """
    if not _traced(a):
        return _numpy("around", a, decimals, out)
    if out is not None:
        raise user_error(TypeError, "around", "out= is not supported for Tensors", a)
    return round_(a, decimals)


def isinf(x):
    """`np.isinf`: whether each value is infinite (a complex one: either part); no gradient.

    >>> isinf(np.array([1.0, -np.inf, np.nan]))
    array([False,  True, False])
    """
    if not _traced(x):
        return _numpy("isinf", x)
    _elementwise_probe("isinf", x)
    if x.dtype.kind == "c":
        return logical_or(isinf(real(x)), isinf(imag(x)))
    return logical_not(logical_or(isfinite(x), isnan(x)))


def isposinf(x):
    """`np.isposinf`: whether each value is +inf (complex values are a TypeError, as NumPy's).

    >>> isposinf(np.array([np.inf, -np.inf]))
    array([ True, False])
    """
    return _signed_inf("isposinf", x, greater)


def isneginf(x):
    """`np.isneginf`: whether each value is -inf (complex values are a TypeError, as NumPy's).

    >>> isneginf(np.array([np.inf, -np.inf]))
    array([False,  True])
    """
    return _signed_inf("isneginf", x, less)


def _signed_inf(name, x, side):
    if not _traced(x):
        return _numpy(name, x)
    _probe(name, x)
    return logical_and(isinf(x), side(x, 0))


def logical_xor(x1, x2):
    """`np.logical_xor`: whether exactly one of the two is true (non-zero); no gradient.

    >>> logical_xor(np.array([0, 1, 2]), 1)
    array([ True, False, False])
    """
    if not _traced(x1, x2):
        return _numpy("logical_xor", x1, x2)
    _elementwise_probe("logical_xor", x1, x2)
    return not_equal(not_equal(x1, 0), not_equal(x2, 0))


def heaviside(x1, x2):
    """`np.heaviside`: 0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0 (NaN for NaN); the gradient
    goes to x2 where x1 == 0.

    >>> heaviside(np.array([-1.0, 0.0, 2.0]), 0.5)
    array([0. , 0.5, 1. ])
    """
    if not _traced(x1, x2):
        return _numpy("heaviside", x1, x2)
    dtype = _elementwise_probe("heaviside", x1, x2)
    at_zero = _where(isnan(x1), np.nan, x2)
    return _as(_where(x1 < 0, 0.0, _where(x1 > 0, 1.0, at_zero)), dtype)


def fmod(x1, x2):
    """`np.fmod`: the remainder of x1 / x2 with x1's sign (C's fmod; `mod` takes x2's); its derivative
    is 1 in x1 and -trunc(x1 / x2) in x2.

    >>> fmod(np.array([-7.0, 7.0]), 3.0)
    array([-1.,  1.])
    """
    if not _traced(x1, x2):
        return _numpy("fmod", x1, x2)
    dtype = _elementwise_probe("fmod", x1, x2)
    # mod of magnitudes is exact and already fmod's (same signs); mod(x1, x2) - x2 would round
    magnitude = mod(abs_(x1), abs_(x2))
    return _as(_where(x1 < 0, -magnitude, magnitude), dtype)


def floor_divide(x1, x2):
    """`np.floor_divide` (`//`): floor(x1 / x2) computed as NumPy does (from fmod, so `1 // 0.1` is 9);
    the gradient is zero. Integers go through float64 (exact below 2**53 in magnitude).

    >>> floor_divide(np.array([7.0, -7.0]), 2.0)
    array([ 3., -4.])
    """
    if not _traced(x1, x2):
        return _numpy("floor_divide", x1, x2)
    dtype = _elementwise_probe("floor_divide", x1, x2)
    a, b = stop_gradient(_as(x1, np.float64) if dtype.kind in "iub" else x1), \
        stop_gradient(_as(x2, np.float64) if dtype.kind in "iub" else x2)
    remainder = fmod(a, b)
    div = (a - remainder) / _where(b == 0, 1.0, b)  # NumPy's npy_divmod
    div = div - astype(logical_and(remainder != 0, (b < 0) != (remainder < 0)), div.dtype)
    floored = floor(div)
    floored = floored + astype(div - floored > 0.5, div.dtype)
    if dtype.kind in "iub":
        return astype(_where(b == 0, 0.0, floored), dtype)  # NumPy's integer // 0 is 0 (with a warning)
    return _as(_where(b == 0, a / b, floored), dtype)


def float_power(x1, x2):
    """`np.float_power`: x1 ** x2 in float64 (complex128 for complex arguments), differentiable in both.

    >>> float_power(np.array([2, 3]), 2)
    array([4., 9.])
    """
    if not _traced(x1, x2):
        return _numpy("float_power", x1, x2)
    dtype = _elementwise_probe("float_power", x1, x2)
    # cast first, so that the derivatives are computed in float64 (complex128) as the value is; a Python
    # number stays one (np.float_power casts it), so it meets a CuPy array without a host array
    return _float_power(*(_as(x, dtype) if isinstance(x, Tensor) else x if isinstance(x, (int, float, complex))
                          else np.asarray(x, dtype) for x in (x1, x2)))


def cbrt(x):
    """`np.cbrt`: the real cube root, NumPy's own (its derivative 1 / (3 cbrt(x)**2) is infinite at 0).

    >>> float(cbrt(np.float64(-8.0)))
    -2.0
    """
    if not _traced(x):
        return _numpy("cbrt", x)
    dtype = _elementwise_probe("cbrt", x)
    return _cbrt(_as(x, dtype))


# -- reductions and statistics
def _no_out(name, out, x):
    if out is not None:
        raise user_error(TypeError, name, "out= is not supported for Tensors", x)


def cumprod(a, axis=None, dtype=None, out=None):
    """`np.cumprod`: the running product along `axis` (of the flattened array when None). Each output is
    a `prod` over a masked copy, so zeros differentiate right; memory grows as n**2 along the axis.

    >>> cumprod(np.array([1.0, 2.0, 3.0]))
    array([1., 2., 6.])
    """
    if not _traced(a):
        return _numpy("cumprod", a, axis, dtype, out)
    _no_out("cumprod", out, a)
    want = _probe("cumprod", a, axis, dtype).dtype
    a = _as(a, want)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis_index(axis, len(_shape(a)), "cumprod", a)
    n = _shape(a)[axis]
    last = moveaxis(a, axis, -1)
    upto = np.tril(np.ones((n, n), dtype=bool))  # row i keeps elements 0..i
    return moveaxis(prod(_where(upto, expand_dims(last, -2), 1), axis=-1), -1, axis)


def _nan_filled(a, fill):
    return _where(isnan(a), fill, a) if a.dtype.kind in "fc" else a


def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    """`np.nansum`: the sum with NaNs counted as zero (their gradient is zero).

    >>> nansum(np.array([1.0, np.nan, 2.0]))
    np.float64(3.0)
    """
    if not _traced(a):
        return _numpy("nansum", a, axis, dtype, out, keepdims)
    _no_out("nansum", out, a)
    want = _probe("nansum", a, axis, dtype, keepdims=keepdims).dtype
    return sum_(_as(_nan_filled(a, 0), want), axis=axis, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False):
    """`np.nanprod`: the product with NaNs counted as one (their gradient is zero).

    >>> nanprod(np.array([2.0, np.nan, 3.0]))
    np.float64(6.0)
    """
    if not _traced(a):
        return _numpy("nanprod", a, axis, dtype, out, keepdims)
    _no_out("nanprod", out, a)
    want = _probe("nanprod", a, axis, dtype, keepdims=keepdims).dtype
    return prod(_as(_nan_filled(a, 1), want), axis=axis, keepdims=keepdims)


def _nan_count(a, axis, keepdims):
    return sum_(astype(logical_not(isnan(a)), np.float64), axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """`np.nanmean`: the mean of the values that are not NaN (NaN where all are, as NumPy, with its warning).

    >>> nanmean(np.array([1.0, np.nan, 3.0]))
    np.float64(2.0)
    """
    if not _traced(a):
        return _numpy("nanmean", a, axis, dtype, out, keepdims)
    _no_out("nanmean", out, a)
    want = _probe("nanmean", a, axis, dtype, keepdims=keepdims).dtype
    a = _as(a, want)
    return _as(sum_(_nan_filled(a, 0), axis=axis, keepdims=keepdims) / _nan_count(a, axis, keepdims), want)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """`np.nanvar`: the variance of the values that are not NaN, dividing by (count - ddof); real for complex.

    >>> nanvar(np.array([1.0, np.nan, 3.0]))
    np.float64(1.0)
    """
    if not _traced(a):
        return _numpy("nanvar", a, axis, dtype, out, ddof, keepdims)
    _no_out("nanvar", out, a)
    want = _probe("nanvar", a, axis, dtype, keepdims=keepdims).dtype  # ddof=0: the stand-in has one value
    a = _as(a, np.result_type(want, a.dtype))
    count = _nan_count(a, axis, True)
    centred = _nan_filled(a - sum_(_nan_filled(a, 0), axis=axis, keepdims=True) / count, 0)
    squares = real(centred * conj(centred)) if a.dtype.kind == "c" else centred * centred
    dof = _nan_count(a, axis, keepdims) - ddof
    out = sum_(squares, axis=axis, keepdims=keepdims) / _where(dof > 0, dof, 1.0)
    out = _where(dof > 0, out, np.nan)  # NumPy's NaN (and warning) for no degrees of freedom
    return _as(out, want)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """`np.nanstd`: the square root of `nanvar`.

    >>> nanstd(np.array([1.0, np.nan, 3.0]))
    np.float64(1.0)
    """
    if not _traced(a):
        return _numpy("nanstd", a, axis, dtype, out, ddof, keepdims)
    _no_out("nanstd", out, a)
    return sqrt(nanvar(a, axis, dtype, None, ddof, keepdims))


def _nan_extremum(name, reduce, fill, a, axis, out, keepdims):
    if not _traced(a):
        return _numpy(name, a, axis, out, keepdims)
    _no_out(name, out, a)
    _probe(name, a, axis, keepdims=keepdims)
    if a.dtype.kind not in "fc":
        return reduce(a, axis=axis, keepdims=keepdims)
    found = reduce(_nan_filled(a, fill), axis=axis, keepdims=keepdims)
    all_nan = sum_(astype(logical_not(isnan(a)), np.int64), axis=axis, keepdims=keepdims) == 0
    return _where(all_nan, np.nan, found)


def nanmax(a, axis=None, out=None, keepdims=False):
    """`np.nanmax`: the maximum ignoring NaNs (NaN where all are); ties share the gradient.

    >>> nanmax(np.array([1.0, np.nan, 3.0]))
    np.float64(3.0)
    """
    return _nan_extremum("nanmax", max_, -np.inf, a, axis, out, keepdims)


def nanmin(a, axis=None, out=None, keepdims=False):
    """`np.nanmin`: the minimum ignoring NaNs (NaN where all are); ties share the gradient.

    >>> nanmin(np.array([1.0, np.nan, 3.0]))
    np.float64(1.0)
    """
    return _nan_extremum("nanmin", min_, np.inf, a, axis, out, keepdims)


def _nan_arg(name, reduce, fill, a, axis, out, keepdims):
    if not _traced(a):
        return _numpy(name, a, axis, out, keepdims=keepdims)
    _no_out(name, out, a)
    _probe(name, a, axis, keepdims=keepdims)
    if a.dtype.kind not in "fc":
        return reduce(a, axis=axis, keepdims=keepdims)
    if _concrete(a) and np.isnan(a.numpy()).all(axis=axis).any():
        raise user_error(ValueError, name, "All-NaN slice encountered", a)
    return reduce(_nan_filled(a, fill), axis=axis, keepdims=keepdims)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """`np.nanargmax`: the index of the maximum ignoring NaNs; an all-NaN slice is a ValueError (checked
    when the values are known: a traced all-NaN slice gives the index of its first element).

    >>> int(nanargmax(np.array([1.0, np.nan, 3.0])))
    2
    """
    return _nan_arg("nanargmax", argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """`np.nanargmin`: the index of the minimum ignoring NaNs; an all-NaN slice is a ValueError (checked
    when the values are known: a traced all-NaN slice gives the index of its first element).

    >>> int(nanargmin(np.array([1.0, np.nan, 3.0])))
    0
    """
    return _nan_arg("nanargmin", argmin, np.inf, a, axis, out, keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    """`np.ptp`: the range, max - min (ties share each one's gradient).

    >>> float(ptp(np.array([4.0, 1.0, 3.0])))
    3.0
    """
    if not _traced(a):
        return _numpy("ptp", a, axis, out, keepdims)
    _no_out("ptp", out, a)
    _probe("ptp", a, axis, keepdims=keepdims)
    return max_(a, axis=axis, keepdims=keepdims) - min_(a, axis=axis, keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """`np.average`: the mean, or sum(a * w) / sum(w) along `axis`, differentiable in `a` and `weights`;
    with `returned`, also the sum of the weights. Weights summing to zero are a ZeroDivisionError (when
    the values are known).

    >>> float(average(np.array([1.0, 3.0]), weights=np.array([3.0, 1.0])))
    1.5
    """
    if not _traced(a, weights):
        return _numpy("average", a, axis, weights, returned, keepdims=keepdims)
    a = as_array(a, "average")
    ndim = len(_shape(a))
    axes = normalize_axis(axis, ndim, "average", a, ordered=True)  # weights' axes follow the order given
    if weights is None:
        avg = mean(a, axis=axes, keepdims=keepdims)
        count = np.prod([_shape(a)[k] for k in (axes if axes is not None else range(ndim))])
        scale = broadcast_to(np.asarray(count, _dtype(avg)), tuple(_shape(avg)))
        return (avg, scale) if returned else avg
    weights = as_array(weights, "average")
    w_shape, a_shape = tuple(_shape(weights)), tuple(_shape(a))
    if w_shape != a_shape:
        if axes is None:
            raise user_error(TypeError, "average", "Axis must be specified when shapes of a and weights differ.",
                             a, weights)
        if w_shape != tuple(a_shape[k] for k in axes):
            raise user_error(ValueError, "average", "Shape of weights must be consistent with shape of a along "
                             "specified axis.", a, weights)
        # the weights' axes in a's order, the others of size 1
        weights = transpose(weights, tuple(int(k) for k in np.argsort(axes))) if len(axes) > 1 else weights
        weights = reshape(weights, tuple(a_shape[k] if k in axes else 1 for k in range(ndim)))
    dtype = np.result_type(_dtype(a), _dtype(weights), *(() if _dtype(a).kind in "fc" else (np.float64,)))
    a, weights = _as(a, dtype), _as(weights, dtype)
    scale = sum_(ones_like(a) * weights, axis=axes, keepdims=keepdims)  # ones_like: a's sizes may be unknown
    if _concrete(scale) and np.any(np.asarray(scale.numpy() if isinstance(scale, Tensor) else scale) == 0):
        raise user_error(ZeroDivisionError, "average", "Weights sum to zero, can't be normalized", a, weights)
    avg = sum_(a * weights, axis=axes, keepdims=keepdims) / scale
    return (avg, scale) if returned else avg


def _along_last(a, axis, name):
    """`a` with the reduced axes (None: all) moved to the end and merged into one, whose size must be known."""
    ndim = len(_shape(a))
    axes = normalize_axis(axis, ndim, name, a)
    axes = tuple(range(ndim)) if axes is None else axes
    if builtins.any(_shape(a)[k] is None for k in axes):
        raise user_error(ValueError, name, "the sizes of the reduced axes must be known when the graph is built", a)
    if len(axes) == 1:  # no merging: the other axes' sizes may be unknown until the graph runs
        return moveaxis(a, axes[0], -1), axes
    rest = [k for k in range(ndim) if k not in axes]
    moved = transpose(a, rest + list(axes)) if rest + list(axes) != list(range(ndim)) else a
    kept = tuple(_shape(a)[k] for k in rest)
    return reshape(moved, kept + (-1,)), axes


def _keep_dims(out, a_shape, axes, q_ndim):
    """`out` (q's axes, then the kept axes) with the reduced axes back as size 1, as NumPy's keepdims."""
    shape = tuple(_shape(out))
    return reshape(out, shape[:q_ndim] + tuple(1 if k in axes else n for k, n in enumerate(a_shape)))


def _quantile(name, a, q, axis, keepdims, method, dtype, skip_nan=False):
    """Linear interpolation between the sorted values at (n - 1) * q, as NumPy's method='linear' (n: the
    slice's size, or with `skip_nan` its count of values that are not NaN, which sort last)."""
    if method != "linear":
        raise user_error(NotImplementedError, name, f"only method='linear' is supported for Tensors, got "
                         f"{method!r}", a)
    if isinstance(q, Tensor):
        raise user_error(NotImplementedError, name, "q must be plain numbers for Tensors (the positions "
                         "interpolated between depend on it)", a, q)
    a = as_array(a, name)
    if a.dtype.kind == "c":
        raise user_error(TypeError, name, "a must be an array of real numbers", a)
    q = np.asarray(q, dtype=np.float64)
    flat, axes = _along_last(a, axis, name)
    n = _shape(flat)[-1]
    if n == 0:
        raise user_error(IndexError, name, "cannot compute a quantile of an empty slice", a)
    if a.dtype.kind not in "f":
        flat = astype(flat, np.float64)
    ordered = sort(flat, axis=-1)
    if skip_nan:  # the positions differ from slice to slice: gathered along the last axis
        count = sum_(astype(logical_not(isnan(flat)), np.float64), axis=-1, keepdims=True)
        position = (count - 1) * q.reshape(-1)
        lo = floor(position)
        t = position - lo
        hi = _where(lo + 1 > count - 1, count - 1, lo + 1)
        below, above = (take_along_axis(ordered, astype(clip(k, 0, n - 1), np.int64), -1) for k in (lo, hi))
    else:
        position = (n - 1) * q.reshape(-1)
        lo = np.floor(position).astype(np.int64)
        t = position - lo
        below, above = take(ordered, lo, axis=-1), take(ordered, np.minimum(lo + 1, n - 1), axis=-1)
    step = above - below
    out = _where(t >= 0.5, above - step * (1 - t), below + step * t)  # NumPy's _lerp, rounding alike
    if skip_nan:
        out = _where(count == 0, np.nan, out)  # an all-NaN slice: NaN, as NumPy (which warns)
    else:
        out = _where(sum_(astype(isnan(flat), np.int64), axis=-1, keepdims=True) > 0, np.nan, out)  # as NumPy
    out = moveaxis(out, -1, 0)
    out = _as(reshape(out, q.shape + tuple(_shape(out))[1:]), dtype)
    return _keep_dims(out, tuple(_shape(a)), axes, q.ndim) if keepdims else out


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    """`np.quantile` with method='linear': interpolated between sorted values, differentiable in `a`
    (the gradient goes to the values interpolated between); q's axes come first, as NumPy's.

    >>> quantile(np.array([1.0, 2.0, 4.0, 8.0]), [0.5, 1.0])
    array([3., 8.])
    """
    if not _traced(a):
        return _numpy("quantile", a, q, axis, out, overwrite_input, method, keepdims, weights=weights)
    _no_out("quantile", out, a)
    if weights is not None:
        raise user_error(NotImplementedError, "quantile", "weights= is not supported for Tensors", a)
    want = _probe("quantile", a, q, axis, method="linear", keepdims=keepdims).dtype
    return _quantile("quantile", a, q, axis, keepdims, method, want)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               weights=None):
    """`np.percentile`: `quantile` at q / 100.

    >>> percentile(np.array([1.0, 2.0, 4.0, 8.0]), 50)
    np.float64(3.0)
    """
    if not _traced(a):
        return _numpy("percentile", a, q, axis, out, overwrite_input, method, keepdims, weights=weights)
    _no_out("percentile", out, a)
    if weights is not None:
        raise user_error(NotImplementedError, "percentile", "weights= is not supported for Tensors", a)
    want = _probe("percentile", a, q, axis, method="linear", keepdims=keepdims).dtype
    return _quantile("percentile", a, np.true_divide(q, 100), axis, keepdims, method, want)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`np.median`: the middle value, or the mean of the two middle ones, of the sorted values along
    `axis`; NaN where a slice holds a NaN. The gradient goes to the middle value(s).

    >>> float(median(np.array([3.0, 1.0, 4.0, 2.0])))
    2.5
    """
    if not _traced(a):
        return _numpy("median", a, axis, out, overwrite_input, keepdims)
    _no_out("median", out, a)
    a = as_array(a, "median")
    _probe("median", a, axis, keepdims=keepdims)
    flat, axes = _along_last(a, axis, "median")
    n = _shape(flat)[-1]
    if a.dtype.kind in "iub":
        flat = astype(flat, np.float64)
    if n == 0:  # NumPy's NaN, with its warnings
        return mean(a, axis=axis, keepdims=keepdims)
    ordered = sort(flat, axis=-1)
    middle = getitem(ordered, (Ellipsis, n // 2))
    out = middle if n % 2 else (getitem(ordered, (Ellipsis, n // 2 - 1)) + middle) / 2
    if flat.dtype.kind in "fc":
        out = _where(sum_(astype(isnan(flat), np.int64), axis=-1) > 0, np.nan, out)
    return _keep_dims(out, tuple(_shape(a)), axes, 0) if keepdims else out


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """`np.cov`: the covariance matrix of the variables (rows, or columns when not `rowvar`), with NumPy's
    `bias`, `ddof` and frequency/observation weights; differentiable in `m`, `y` and the weights.

    >>> cov(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    if not _traced(m, y, fweights, aweights):
        return _numpy("cov", m, y, rowvar, bias, ddof, fweights, aweights, dtype=dtype)
    if isinstance(fweights, Tensor):
        raise user_error(TypeError, "cov", "fweights must be integer (plain numbers, not a Tensor)", fweights)
    m = as_array(m, "cov")
    if len(_shape(m)) > 2:
        raise user_error(ValueError, "cov", "m has more than 2 dimensions", m)
    dtype = np.result_type(_dtype(m), np.float64) if dtype is None else np.dtype(dtype)
    if y is not None:
        y = as_array(y, "cov")
        if len(_shape(y)) > 2:
            raise user_error(ValueError, "cov", "y has more than 2 dimensions", y)
        dtype = np.result_type(dtype, _dtype(y))

    def rows(v):
        v = reshape(v, (1, -1)) if len(_shape(v)) < 2 else v
        return transpose(v) if not rowvar and _shape(v)[0] != 1 else v

    x = _as(rows(m), dtype)
    if y is not None:
        x = concatenate([x, _as(rows(y), dtype)], axis=0)
    n = _shape(x)[1]
    # NumPy's own checks of the weights, on a stand-in of one variable
    stand_in = np.ones(tuple(_shape(aweights))) if isinstance(aweights, Tensor) else aweights
    _numpy("cov", np.zeros((1, n)), None, True, bias, ddof, fweights, stand_in)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None if fweights is None else np.asarray(fweights, np.float64)
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = mean(x, axis=1, keepdims=True)
        fact = n - ddof
    else:
        w_sum = sum_(w)
        avg = sum_(x * w, axis=1, keepdims=True) / w_sum
        fact = w_sum - (ddof if aweights is None else ddof * sum_(w * aweights) / w_sum)
    centred = x - avg
    weighted = centred if w is None else centred * w
    c = matmul(centred, transpose(conj(weighted) if dtype.kind == "c" else weighted))
    c = c / _where(fact > 0, fact, 0.0)  # NumPy: no degrees of freedom divides by 0 (with a warning)
    return reshape(c, ()) if _shape(c) == (1, 1) else c


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """`np.corrcoef`: `cov` scaled to correlations, the real parts clipped to [-1, 1] as NumPy's.

    >>> corrcoef(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.5]])).round(3)
    array([[ 1.   , -0.982],
           [-0.982,  1.   ]])
    """
    if not _traced(x, y):
        return _numpy("corrcoef", x, y, rowvar, dtype=dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if len(_shape(c)) == 0:
        return c / c
    d = real(diagonal(c)) if c.dtype.kind == "c" else diagonal(c)
    scale = sqrt(d)
    c = c / expand_dims(scale, 1) / expand_dims(scale, 0)
    if c.dtype.kind == "c":
        return clip(real(c), -1, 1) + imag(c) * 1j
    return clip(c, -1, 1)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """`np.trapezoid`: the integral of `y` along `axis` by the trapezoidal rule, at points `x` (a 1-D
    array, or one shaped as `y`) or spacing `dx`; differentiable in `y`, `x` and `dx`.

    >>> float(trapezoid(np.array([1.0, 2.0, 3.0]), dx=0.5))
    2.0
    """
    if not _traced(y, x, dx):
        return _numpy("trapezoid", y, x, dx, axis)
    y = as_array(y, "trapezoid")
    ndim = len(_shape(y))
    axis = normalize_axis_index(axis, ndim, "trapezoid", y)
    if x is None:
        d = dx
    else:
        x = as_array(x, "trapezoid")
        if len(_shape(x)) == 1:
            d = reshape(diff(x), tuple(-1 if k == axis else 1 for k in range(ndim)))
        else:
            d = diff(x, axis=axis)
    lead = (slice(None),) * axis
    pairs = getitem(y, lead + (slice(1, None),)) + getitem(y, lead + (slice(None, -1),))
    return sum_(d * pairs / 2.0, axis=axis)


def ediff1d(ary, to_end=None, to_begin=None):
    """`np.ediff1d`: the differences of the flattened array, with `to_begin` and `to_end` around them.

    >>> ediff1d(np.array([1.0, 4.0, 9.0]), to_begin=0.0)
    array([0., 3., 5.])
    """
    if not _traced(ary, to_end, to_begin):
        return _numpy("ediff1d", ary, to_end, to_begin)
    ary = reshape(as_array(ary, "ediff1d"), (-1,))
    middle = getitem(ary, slice(1, None)) - getitem(ary, slice(None, -1))
    begin, end = (_ediff_edge(v, which, ary) for v, which in ((to_begin, "to_begin"), (to_end, "to_end")))
    parts = [p for p in (begin, middle, end) if p is not None]
    return concatenate(parts) if len(parts) > 1 else parts[0]


def _ediff_edge(value, which, ary):
    if value is None:
        return None
    value = as_array(value, "ediff1d")
    if not np.can_cast(_dtype(value), ary.dtype, casting="same_kind"):
        raise user_error(TypeError, "ediff1d", f"dtype of `{which}` must be compatible with input `ary` under the "
                         "`same_kind` rule.", ary, value)
    value = _as(value, ary.dtype) if isinstance(value, Tensor) else np.asarray(value, ary.dtype)
    return reshape(value, (-1,))


# -- shapes and products
def broadcast_arrays(*args, subok=False):
    """`np.broadcast_arrays`: the arrays broadcast to their common shape (a tuple, as NumPy 2's).

    >>> [x.shape for x in broadcast_arrays(np.ones((2, 1)), np.ones(3))]
    [(2, 3), (2, 3)]
    """
    if not _traced(*args):
        return _numpy("broadcast_arrays", *args, subok=subok)
    args = [as_array(a, "broadcast_arrays") for a in args]
    if builtins.any(None in tuple(_shape(a)) for a in args):
        raise user_error(ValueError, "broadcast_arrays", "the shapes must be known when the graph is built", *args)
    try:
        shape = np.broadcast_shapes(*(tuple(_shape(a)) for a in args))
    except ValueError as err:
        raise user_error(ValueError, "broadcast_arrays", str(err), *args) from None
    return tuple(a if tuple(_shape(a)) == shape else broadcast_to(a, shape) for a in args)


def diagflat(v, k=0):
    """`np.diagflat`: a 2-D array with the flattened `v` on its k-th diagonal.

    >>> diagflat(np.array([[1.0, 2.0]]))
    array([[1., 0.],
           [0., 2.]])
    """
    if not _traced(v):
        return _numpy("diagflat", v, k)
    return diag(reshape(as_array(v, "diagflat"), (-1,)), k)


def tri(N, M=None, k=0, dtype=float, *, like=None):
    """`np.tri` (ones at and below the k-th diagonal): NumPy's, with errors naming it at your line.

    >>> tri(2)
    array([[1., 0.],
           [1., 1.]])
    """
    return _numpy("tri", N, M, k, dtype, like=like)


def unstack(x, /, *, axis=0):
    """`np.unstack`: the slices of `x` along `axis`, as a tuple.

    >>> unstack(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    (array([1., 3.]), array([2., 4.]))
    """
    if not _traced(x):
        return _numpy("unstack", x, axis=axis)
    if not _shape(x):
        raise user_error(ValueError, "unstack", "Input array must be at least 1-d.", x)
    axis = normalize_axis_index(axis, len(_shape(x)), "unstack", x)
    lead = (slice(None),) * axis
    return tuple(getitem(x, lead + (i,)) for i in range(_shape(x)[axis]))


def matrix_transpose(x, /):
    """`np.matrix_transpose`: the last two axes swapped.

    >>> matrix_transpose(np.ones((2, 3, 4))).shape
    (2, 4, 3)
    """
    if not _traced(x):
        return _numpy("matrix_transpose", x)
    if len(_shape(x)) < 2:
        raise user_error(ValueError, "matrix_transpose", "Input array must be at least 2-dimensional", x)
    return swapaxes(x, -1, -2)


def _gufunc(name, x1, x2, core1, core2):
    """Arguments checked as NumPy's gufunc `name` checks them (the core sizes kept, the others small)."""
    x1, x2 = as_array(x1, name), as_array(x2, name)
    for x, core in ((x1, core1), (x2, core2)):
        if len(_shape(x)) < core:
            raise user_error(ValueError, name, f"the input must have at least {core} dimension(s)", x1, x2)
    try:
        np.broadcast_shapes(_known(x1)[:len(_shape(x1)) - core1], _known(x2)[:len(_shape(x2)) - core2])
    except ValueError as err:
        raise user_error(ValueError, name, str(err), x1, x2) from None
    return x1, x2, _probe(name, x1, x2, keep_core=builtins.max(core1, core2)).dtype


def vecdot(x1, x2, /, *, axis=-1):
    """`np.vecdot`: the dot product of vectors along `axis`, the first conjugated (sum(conj(x1) * x2)).

    >>> vecdot(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
    array([3., 7.])
    """
    if not _traced(x1, x2):
        return _numpy("vecdot", x1, x2, axis=axis)
    x1, x2 = as_array(x1, "vecdot"), as_array(x2, "vecdot")
    n1, n2 = len(_shape(x1)), len(_shape(x2))
    if not n1 or not n2:
        raise user_error(ValueError, "vecdot", "the inputs must have at least 1 dimension", x1, x2)
    x1 = moveaxis(x1, normalize_axis_index(axis, n1, "vecdot", x1), -1)
    x2 = moveaxis(x2, normalize_axis_index(axis, n2, "vecdot", x2), -1)
    x1, x2, dtype = _gufunc("vecdot", x1, x2, 1, 1)
    return _as(sum_((conj(x1) if x1.dtype.kind == "c" else x1) * x2, axis=-1), dtype)


def matvec(x1, x2, /):
    """`np.matvec`: matrix (last two axes of x1) times vector (last axis of x2), batched with broadcasting.

    >>> matvec(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
    array([3., 7.])
    """
    if not _traced(x1, x2):
        return _numpy("matvec", x1, x2)
    x1, x2, dtype = _gufunc("matvec", x1, x2, 2, 1)
    return _as(getitem(matmul(x1, expand_dims(x2, -1)), (Ellipsis, 0)), dtype)


def vecmat(x1, x2, /):
    """`np.vecmat`: vector (last axis of x1, conjugated) times matrix (last two axes of x2), batched.

    >>> vecmat(np.array([1.0, 1.0]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([4., 6.])
    """
    if not _traced(x1, x2):
        return _numpy("vecmat", x1, x2)
    x1, x2, dtype = _gufunc("vecmat", x1, x2, 1, 2)
    row = expand_dims(conj(x1) if x1.dtype.kind == "c" else x1, -2)
    return _as(getitem(matmul(row, x2), (Ellipsis, 0, slice(None))), dtype)


def block(arrays):
    """`np.block`: an array assembled from nested lists of blocks (the innermost lists joined along the
    last axis, the next ones along the axis before, ...).

    >>> block([[np.ones((1, 2)), np.zeros((1, 1))], [np.zeros((1, 2)), np.ones((1, 1))]])
    array([[1., 1., 0.],
           [0., 0., 1.]])
    """
    if not _traced(arrays):
        return _numpy("block", arrays)
    leaves = []

    def depth_of(x, at):
        if isinstance(x, tuple):
            raise user_error(TypeError, "block", "arrays is a tuple. Only lists can be used to arrange blocks, "
                             "and np.block does not allow implicit conversion from tuple to ndarray.")
        if not isinstance(x, list):
            leaves.append((at, x))
            return
        if not x:
            raise user_error(ValueError, "block", "Lists cannot be empty")
        for item in x:
            depth_of(item, at + 1)

    depth_of(arrays, 0)
    depth = leaves[0][0]
    if builtins.any(d != depth for d, _ in leaves):
        raise user_error(ValueError, "block", "List depths are mismatched")
    ndim = builtins.max([depth] + [len(_shape(x)) if isinstance(x, Tensor) else np.ndim(x) for _, x in leaves])

    def join(x, level):
        if not isinstance(x, list):
            x = x if isinstance(x, Tensor) else np.asarray(x)
            return reshape(x, (1,) * (ndim - len(_shape(x))) + tuple(_shape(x)))
        return concatenate([join(item, level + 1) for item in x], axis=level - depth)

    return join(arrays, 0)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """`np.meshgrid`: coordinate arrays from coordinate vectors ('xy': the first two axes swapped; 'ij':
    matrix indexing), each broadcast to the full grid unless `sparse`.

    >>> [g.tolist() for g in meshgrid(np.array([1.0, 2.0]), np.array([3.0]))]
    [[[1.0, 2.0]], [[3.0, 3.0]]]
    """
    if not _traced(*xi):
        return _numpy("meshgrid", *xi, copy=copy, sparse=sparse, indexing=indexing)
    if indexing not in ("xy", "ij"):
        raise user_error(ValueError, "meshgrid", "Valid values for `indexing` are 'xy' and 'ij'.")
    n = len(xi)
    grids = []
    for i, x in enumerate(xi):
        shape = [1] * n
        shape[i] = -1
        if indexing == "xy" and n > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        grids.append(reshape(as_array(x, "meshgrid"), tuple(shape)))
    return tuple(grids) if sparse else broadcast_arrays(*grids)


def delete(arr, obj, axis=None):
    """`np.delete`: `arr` without the elements (sub-arrays along `axis`) that `obj` (an index, slice,
    list of indices or boolean mask) selects; the flattened array when `axis` is None.

    >>> delete(np.array([1.0, 2.0, 3.0]), 1)
    array([1., 3.])
    """
    if not _traced(arr):
        return _numpy("delete", arr, obj, axis)
    if isinstance(obj, Tensor):
        raise user_error(TypeError, "delete", "obj must be plain indices, not a Tensor", arr)
    if axis is None:
        arr, axis = reshape(arr, (-1,)), 0
    axis = normalize_axis_index(axis, len(_shape(arr)), "delete", arr)
    keep = _numpy("delete", np.arange(_shape(arr)[axis]), obj)  # NumPy's own checks of obj
    return take(arr, keep, axis=axis)


def insert(arr, obj, values, axis=None):
    """`np.insert`: `values` inserted before the index or indices `obj` along `axis` (the flattened array
    when None), cast to arr's dtype; differentiable in `arr` and `values`.

    >>> insert(np.array([1.0, 2.0]), 1, 9.0)
    array([1., 9., 2.])
    """
    if not _traced(arr, values):
        return _numpy("insert", arr, obj, values, axis)
    if isinstance(obj, Tensor):
        raise user_error(TypeError, "insert", "obj must be plain indices, not a Tensor", arr)
    arr = as_array(arr, "insert")
    if axis is None:
        arr, axis = reshape(arr, (-1,)), 0
    ndim = len(_shape(arr))
    axis = normalize_axis_index(axis, ndim, "insert", arr)
    n = _shape(arr)[axis]
    values = as_array(values, "insert")
    if isinstance(obj, slice):
        obj = np.arange(*obj.indices(n))
    scalar = np.ndim(obj) == 0
    if scalar:
        # NumPy: values get at least arr's dimensions (leading ones), their first axis moved to `axis`
        values = reshape(values, (1,) * (ndim - len(_shape(values))) + tuple(_shape(values)))
        values = moveaxis(values, 0, axis)
        count = _shape(values)[axis]
    else:
        count = len(np.asarray(obj).reshape(-1))
    target = list(_shape(arr))
    target[axis] = count
    try:
        values = broadcast_to(values, tuple(target))
    except ValueError:
        raise user_error(ValueError, "insert", f"values of shape {tuple(_shape(values))} cannot be broadcast to "
                         f"{tuple(target)}", arr, values) from None
    # where each output slice comes from: i >= 0 is arr's slice i, -1 - j the j-th inserted one
    source = _numpy("insert", np.arange(n), obj, -1 - np.arange(count))
    source = np.where(source >= 0, source, n + (-1 - source))
    return take(concatenate([arr, _as(values, arr.dtype)], axis=axis), source, axis=axis)


# -- interpolation and polynomials
def interp(x, xp, fp, left=None, right=None, period=None):
    """`np.interp`: piecewise-linear interpolation of the points (xp, fp) at x (xp increasing; `left`/`right`
    beyond the ends, fp's end values by default); differentiable in x, xp and fp. Each x is compared
    with every xp (memory len(x) * len(xp)).

    >>> interp(np.array([0.5, 3.0]), np.array([0.0, 1.0, 2.0]), np.array([0.0, 10.0, 0.0]))
    array([5., 0.])
    """
    if not _traced(x, xp, fp, left, right, period):
        return _numpy("interp", x, xp, fp, left, right, period)
    if period is not None:
        raise user_error(NotImplementedError, "interp", "period= is not supported for Tensors", x)
    x, xp, fp = (as_array(v, "interp") for v in (x, xp, fp))
    if len(_shape(xp)) != 1 or len(_shape(fp)) != 1:
        raise user_error(ValueError, "interp", "object too deep for desired array", xp, fp)
    if _shape(xp)[0] != _shape(fp)[0]:
        raise user_error(ValueError, "interp", "fp and xp are not of the same length.", xp, fp)
    if _shape(xp)[0] == 0:
        raise user_error(ValueError, "interp", "array of sample points is empty", xp)
    if _dtype(x).kind == "c" or _dtype(xp).kind == "c":
        raise user_error(TypeError, "interp", "x and xp must be real", x, xp)
    dtype = np.complex128 if _dtype(fp).kind == "c" else np.float64
    x, xp, fp = _as(x, np.float64), _as(xp, np.float64), _as(fp, dtype)
    m = _shape(xp)[0]
    # j: the last knot at or below x (clamped to a segment), as a count of knots at or below x
    j = sum_(astype(expand_dims(x, -1) >= xp, np.int64), axis=-1) - 1
    j = clip(j, 0, builtins.max(m - 2, 0))
    after = j + 1 if m > 1 else j
    x0, x1, f0, f1 = getitem(xp, j), getitem(xp, after), getitem(fp, j), getitem(fp, after)
    gap = x1 - x0
    slope = (f1 - f0) / _where(gap == 0, 1.0, gap)
    inside = f0 + slope * (x - x0)
    inside = _where(x == x1, f1, inside)  # the right end of a segment is its knot's value, as NumPy
    first, last = getitem(fp, 0), getitem(fp, -1)
    out = _where(x < getitem(xp, 0), first if left is None else left, inside)
    return _where(x > getitem(xp, -1), last if right is None else right, out)


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    """`np.unwrap`: jumps of more than `discont` (period / 2 by default) between neighbours along `axis`
    taken out by adding multiples of `period`; the derivative is the identity.

    >>> unwrap(np.array([0.0, 3.0, 6.5])).round(3)
    array([0.   , 3.   , 0.217])
    """
    if not _traced(p, discont, period):
        return _numpy("unwrap", p, discont, axis, period=period)
    p = as_array(p, "unwrap")
    ndim = len(_shape(p))
    axis = normalize_axis_index(axis, ndim, "unwrap", p)
    if p.dtype.kind in "iub":
        raise user_error(NotImplementedError, "unwrap", "integer phases are not supported for Tensors", p)
    if p.dtype.kind == "c":
        raise user_error(TypeError, "unwrap", "the phases must be real", p)
    dd = diff(p, axis=axis)
    discont = period / 2 if discont is None else discont
    high = period / 2
    low = -high
    # NumPy's steps, its rounding included: the correction is a multiple of period, constant piecewise
    ddmod = mod(dd - low, period) + low
    ddmod = _where(logical_and(ddmod == low, dd > 0), high, ddmod)
    correct = stop_gradient(_where(abs_(dd) < discont, 0.0, ddmod - dd))
    lead = (slice(None),) * axis
    head, tail = getitem(p, lead + (slice(None, 1),)), getitem(p, lead + (slice(1, None),))
    return concatenate([head, tail + cumsum(correct, axis=axis)], axis=axis)


def polyval(p, x):
    """`np.polyval`: the polynomial with coefficients `p` (highest power first) at `x`, by Horner's rule as
    NumPy; differentiable in both.

    >>> polyval(np.array([1.0, 0.0, -1.0]), np.array([2.0, 3.0]))
    array([3., 8.])
    """
    if not _traced(p, x):
        return _numpy("polyval", p, x)
    p, x = as_array(p, "polyval"), as_array(x, "polyval")
    if not isinstance(x, Tensor):
        x = np.asarray(x)
    y = x * 0
    for k in range(_shape(p)[0] if _shape(p) else 0):
        y = y * x + getitem(p, k)
    return y


def vander(x, N=None, increasing=False):
    """`np.vander`: the Vandermonde matrix of a 1-D `x`, powers N - 1 down to 0 (up with `increasing`),
    each power by repeated multiplication as NumPy's.

    >>> vander(np.array([2.0, 3.0]), 3)
    array([[4., 2., 1.],
           [9., 3., 1.]])
    """
    if not _traced(x):
        return _numpy("vander", x, N, increasing)
    if len(_shape(x)) != 1:
        raise user_error(ValueError, "vander", "x must be a one-dimensional array or sequence.", x)
    x = _as(x, np.promote_types(x.dtype, np.int64))  # NumPy's result dtype
    n = _shape(x)[0] if N is None else N
    if n < 0:
        raise user_error(ValueError, "vander", f"negative dimensions are not allowed, got N={n}", x)
    columns, power = [], None
    for k in range(n):
        power = ones_like(x) if k == 0 else x if k == 1 else power * x
        columns.append(power)
    if not columns:
        return reshape(x * 0, (-1, 1))[:, :0]
    return stack(columns if increasing else columns[::-1], axis=1)


# -- more running totals and pairs of results
def _cumulative(name, x, axis, dtype, out, include_initial, running, initial):
    if not _traced(x):
        return _numpy(name, x, axis=axis, dtype=dtype, out=out, include_initial=include_initial)
    _no_out(name, out, x)
    want = _probe(name, x, axis=axis, dtype=dtype).dtype
    if not _shape(x):
        raise user_error(ValueError, name, "the input must have at least one dimension", x)
    axis = 0 if axis is None and len(_shape(x)) == 1 else axis  # NumPy's own check refused None for more
    axis = normalize_axis_index(axis, len(_shape(x)), name, x)
    total = running(_as(x, want), axis=axis)
    if not include_initial:
        return total
    shape = list(_shape(x))
    shape[axis] = 1
    return concatenate([np.full(shape, initial, want), total], axis=axis)


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """`np.cumulative_sum` (NumPy 2's `cumsum`): the running sum along `axis` (required beyond 1-D), with
    a leading 0 when `include_initial`.

    >>> cumulative_sum(np.array([1.0, 2.0, 3.0]), include_initial=True)
    array([0., 1., 3., 6.])
    """
    return _cumulative("cumulative_sum", x, axis, dtype, out, include_initial, cumsum, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """`np.cumulative_prod` (NumPy 2's `cumprod`): the running product along `axis` (required beyond 1-D),
    with a leading 1 when `include_initial`.

    >>> cumulative_prod(np.array([1.0, 2.0, 3.0]), include_initial=True)
    array([1., 1., 2., 6.])
    """
    return _cumulative("cumulative_prod", x, axis, dtype, out, include_initial, cumprod, 1)


def nancumsum(a, axis=None, dtype=None, out=None):
    """`np.nancumsum`: the running sum with NaNs counted as zero.

    >>> nancumsum(np.array([1.0, np.nan, 2.0]))
    array([1., 1., 3.])
    """
    if not _traced(a):
        return _numpy("nancumsum", a, axis, dtype, out)
    _no_out("nancumsum", out, a)
    want = _probe("nancumsum", a, axis, dtype).dtype
    return cumsum(_as(_nan_filled(a, 0), want), axis=axis)


def nancumprod(a, axis=None, dtype=None, out=None):
    """`np.nancumprod`: the running product with NaNs counted as one.

    >>> nancumprod(np.array([2.0, np.nan, 2.0]))
    array([2., 2., 4.])
    """
    if not _traced(a):
        return _numpy("nancumprod", a, axis, dtype, out)
    _no_out("nancumprod", out, a)
    want = _probe("nancumprod", a, axis, dtype).dtype
    return cumprod(_as(_nan_filled(a, 1), want), axis=axis)


def divmod(x1, x2):  # noqa: A001  (NumPy's name)
    """`np.divmod`: (floor_divide(x1, x2), mod(x1, x2)); the remainder is differentiable as `mod`.

    >>> divmod(np.array([7.0, -7.0]), 2.0)
    (array([ 3., -4.]), array([1., 1.]))
    """
    if not _traced(x1, x2):
        return _numpy("divmod", x1, x2)
    dtype = _elementwise_probe("divmod", x1, x2)
    return floor_divide(x1, x2), _as(mod(x1, x2), dtype)


def modf(x):
    """`np.modf`: (the fractional part, the integral part), both with x's sign; the fractional part's
    derivative is 1 (0 at infinities, whose fractional part is 0).

    >>> modf(np.array([-2.5, 3.25]))
    (array([-0.5 ,  0.25]), array([-2.,  3.]))
    """
    if not _traced(x):
        return _numpy("modf", x)
    dtype = _elementwise_probe("modf", x)
    x = _as(x, dtype)
    whole = trunc(x)
    return _where(isinf(x), 0.0, x - whole), whole


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None):
    """`np.nanquantile` with method='linear': `quantile` of the values that are not NaN (NaN for a slice
    of NaNs only); NaNs take no gradient.

    >>> nanquantile(np.array([1.0, np.nan, 2.0, 4.0]), 0.5)
    np.float64(2.0)
    """
    if not _traced(a):
        return _numpy("nanquantile", a, q, axis, out, overwrite_input, method, keepdims, weights=weights)
    _no_out("nanquantile", out, a)
    if weights is not None:
        raise user_error(NotImplementedError, "nanquantile", "weights= is not supported for Tensors", a)
    want = _probe("nanquantile", a, q, axis, method="linear", keepdims=keepdims).dtype
    return _quantile("nanquantile", a, q, axis, keepdims, method, want, skip_nan=True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  weights=None):
    """`np.nanpercentile`: `nanquantile` at q / 100.

    >>> nanpercentile(np.array([1.0, np.nan, 2.0, 4.0]), 50)
    np.float64(2.0)
    """
    if not _traced(a):
        return _numpy("nanpercentile", a, q, axis, out, overwrite_input, method, keepdims, weights=weights)
    _no_out("nanpercentile", out, a)
    if weights is not None:
        raise user_error(NotImplementedError, "nanpercentile", "weights= is not supported for Tensors", a)
    want = _probe("nanpercentile", a, q, axis, method="linear", keepdims=keepdims).dtype
    return _quantile("nanpercentile", a, np.true_divide(q, 100), axis, keepdims, method, want, skip_nan=True)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`np.nanmedian`: the median of the values that are not NaN (the mean of the two middle ones for an
    even count; NaN for a slice of NaNs only); NaNs take no gradient.

    >>> float(nanmedian(np.array([3.0, np.nan, 1.0, 4.0, 2.0])))
    2.5
    """
    if not _traced(a):
        return _numpy("nanmedian", a, axis, out, overwrite_input, keepdims)
    _no_out("nanmedian", out, a)
    a = as_array(a, "nanmedian")
    want = _probe("nanmedian", a, axis, keepdims=keepdims).dtype
    if a.dtype.kind not in "fc":
        return median(a, axis, keepdims=keepdims)
    flat, axes = _along_last(a, axis, "nanmedian")
    n = _shape(flat)[-1]
    if n == 0:
        return mean(a, axis=axis, keepdims=keepdims)
    ordered = sort(flat, axis=-1)
    count = sum_(astype(logical_not(isnan(flat)), np.int64), axis=-1, keepdims=True)
    middle = (floor_divide(count - 1, 2), floor_divide(count, 2))
    low, high = (take_along_axis(ordered, clip(k, 0, n - 1), -1) for k in middle)
    out = _where(count == 0, np.nan, _where(mod(count, 2) == 1, high, (low + high) / 2))
    out = _as(getitem(out, (Ellipsis, 0)), want)
    return _keep_dims(out, tuple(_shape(a)), axes, 0) if keepdims else out


# -- 1-D convolution and correlation
def _correlation(name, a, v, mode, conjugate, reverse):
    """The full correlation c[j] = sum_n a[n + j - (M - 1)] * v[n] (zeros outside a; v conjugated and/or
    reversed first), cut to NumPy's `mode` as NumPy cuts it."""
    if mode not in ("full", "same", "valid"):
        raise user_error(ValueError, name, f"mode must be one of 'full', 'same' or 'valid', got {mode!r}", a, v)
    a, v = (as_array(x, name) for x in (a, v))
    a, v = (reshape(x, (1,)) if not _shape(x) else x for x in (a, v))
    if len(_shape(a)) != 1 or len(_shape(v)) != 1:
        raise user_error(ValueError, name, "object too deep for desired array", a, v)
    n, m = _shape(a)[0], _shape(v)[0]
    if n == 0 or m == 0:
        raise user_error(ValueError, name, f"{'a' if n == 0 else 'v'} cannot be empty", a, v)
    dtype = _probe(name, a, v).dtype  # NumPy's result dtype (its own check on one-element stand-ins)
    a, v = _as(a, dtype), _as(v, dtype)
    if conjugate and dtype.kind == "c":
        v = conj(v)
    if reverse:
        v = flip(v, 0)
    zeros = np.zeros(m - 1, dtype)
    padded = concatenate([zeros, a, zeros]) if m > 1 else a
    windows = take(padded, np.arange(n + m - 1)[:, None] + np.arange(m))  # row j: padded[j : j + m]
    full = matmul(windows, v)
    short, long = builtins.min(n, m), builtins.max(n, m)
    if mode == "full":
        return full
    if mode == "valid":
        return getitem(full, slice(short - 1, long))
    start = (short - 1) // 2 if reverse or n >= m else short - 1 - (short - 1) // 2
    return getitem(full, slice(start, start + long))


def convolve(a, v, mode="full"):
    """`np.convolve`: the discrete convolution of two 1-D arrays ('full', 'same' or 'valid'), differentiable
    in both.

    >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
    array([0. , 1. , 2.5, 4. , 1.5])
    """
    if not _traced(a, v):
        return _numpy("convolve", a, v, mode)
    return _correlation("convolve", a, v, mode, conjugate=False, reverse=True)


def correlate(a, v, mode="valid"):
    """`np.correlate`: the cross-correlation sum_n a[n + k] * conj(v[n]) of two 1-D arrays ('valid',
    'same' or 'full'), differentiable in both.

    >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
    array([3.5])
    """
    if not _traced(a, v):
        return _numpy("correlate", a, v, mode)
    return _correlation("correlate", a, v, mode, conjugate=True, reverse=False)
