"""Shape arithmetic shared by the ops' shape rules (None stands for an unknown size)."""

from __future__ import annotations

import operator

import numpy as np
from numpy.exceptions import AxisError

from .errors import user_error


class SymbolicShape(tuple):
    """A shape with unknown (None) sizes that remembers whose shape it is: when a derivative rule restores
    one (`reshape(g, x.shape)`) in a static graph, the op takes the unknown sizes from `ref` when it runs."""

    def __new__(cls, dims, ref):
        shape = super().__new__(cls, dims)
        shape.ref = ref
        return shape

    def derive(self, dims):
        """A shape of the same rank whose unknown sizes are still `ref`'s."""
        return SymbolicShape(dims, self.ref) if len(dims) == len(self) else tuple(dims)


def runtime_shape(shape, ref):
    """`shape` with its unknown sizes taken from the runtime array `ref` (given when shape has None)."""
    return tuple(actual if n is None else n for n, actual in zip(shape, np.shape(ref[0]))) if ref else shape


def shape_of(x) -> tuple:
    """The shape of an array, Tensor or Python number (cheap for arrays: the hot path uses it)."""
    try:
        return x.shape
    except AttributeError:
        return np.shape(x)


def ndim_of(x) -> int:
    return len(shape_of(x))


def dtype_of(x) -> np.dtype:
    """The dtype of an array, Tensor or Python number (a Python float is float64, as NumPy)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return np.asarray(x).dtype
    return dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)


def broadcast_shapes(*shapes) -> tuple:
    """NumPy broadcasting of shapes whose entries may be None (unknown)."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            n = s[j]
            if n == 1:
                continue
            if size == 1:
                size = n
            elif n is None:
                continue
            elif size is None:
                size = n
            elif n != size:
                raise ValueError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together")
        result.append(size)
    return tuple(result)


# -- integer arguments: axes, sizes, counts. NumPy's rules: Python and NumPy integers (and 0-d
# integer arrays) are accepted, floats refused with TypeError rather than truncated, bools refused
# too (NumPy's reductions, transpose and reshape refuse them, as PyTorch does everywhere).
def as_index(value, op_name, what, *operands, within=None):
    """`value` as a Python int, or a TypeError naming `op_name`, `what` the argument is (and the
    sequence it came `within`), the operands' shapes and the user's line."""
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)):
        reason = "a bool is not accepted as an integer"
    else:
        try:
            return operator.index(value)
        except TypeError as err:
            reason = str(err)
    where = "" if within is None else f" in {within!r}"
    raise user_error(TypeError, op_name, f"{what} {value!r}{where}: {reason}", *operands)


def is_sequence(axis):
    """An axis, shape or count argument that is a sequence (not one integer)."""
    return isinstance(axis, (tuple, list, range)) or (isinstance(axis, np.ndarray) and axis.ndim > 0)


def _one_axis(a, ndim, op_name, name, operands, within=None):
    """One axis as a non-negative int below `ndim`; AxisError (a ValueError and an IndexError)
    when out of range, TypeError when not an integer."""
    if type(a) is not int:
        a = as_index(a, op_name, name, *operands, within=within)
    if -ndim <= a < ndim:
        return a + ndim if a < 0 else a
    prefix = "" if name in ("axis", "axes") else f"{name}: "  # axis1: axis 5 is out of bounds ... (as NumPy)
    raise user_error(AxisError, op_name, f"{prefix}axis {a} is out of bounds for an array of dimension {ndim}",
                     *operands)


def normalize_axis(axis, ndim, op_name="op", *operands, ordered=False, name="axis") -> tuple | None:
    """`axis` (None, an integer or a sequence of integers) as a tuple of non-negative axes, sorted
    (in the order given when `ordered`); None for None (all axes). As NumPy: out of range ->
    AxisError, a repeated axis -> ValueError, a float or bool -> TypeError; each error names
    `op_name`, the `operands`' shapes and the user's line. The one axis check of the op library.

    >>> normalize_axis(-1, 3, "sum"), normalize_axis((2, np.int64(0)), 3, "sum")
    ((2,), (0, 2))
    """
    if axis is None:
        return None
    if type(axis) is int and -ndim <= axis < ndim:  # the common case first: it runs on every reduction
        return (axis + ndim if axis < 0 else axis,)
    if type(axis) is tuple:  # a tuple of in-range ints without repeats: the next most common case
        out = []
        for a in axis:
            if type(a) is not int or not -ndim <= a < ndim:
                break
            out.append(a % ndim)
        else:
            if len(set(out)) == len(out):
                if not ordered:
                    out.sort()
                return tuple(out)
    sequence = is_sequence(axis)
    items = tuple(axis) if sequence else (axis,)
    within = axis if sequence else None
    out = tuple(_one_axis(a, ndim, op_name, name, operands, within) for a in items)
    if len(out) > 1:
        if len(set(out)) != len(out):
            repeated = next(a for a in out if out.count(a) > 1)
            raise user_error(ValueError, op_name, f"repeated axis {repeated} in {name}={axis!r}", *operands)
        if not ordered:
            out = tuple(sorted(out))
    return out


def normalize_axis_index(axis, ndim, op_name="op", *operands, name="axis") -> int:
    """One axis (an integer: a sequence is a TypeError, as NumPy's cumsum, argmax, concatenate)
    as a non-negative int, checked as `normalize_axis` checks each axis."""
    if type(axis) is int and -ndim <= axis < ndim:
        return axis + ndim if axis < 0 else axis
    return _one_axis(axis, ndim, op_name, name, operands)


def reduced_shape(shape, axis, keepdims) -> tuple:
    axes = range(len(shape)) if axis is None else axis
    if keepdims:
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        return shape.derive(kept) if isinstance(shape, SymbolicShape) else kept
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def summed_axes(big, small):
    """The axes of `big` to sum to undo a broadcast of `small` to `big` (the leading ones, and those
    where `small` has size 1), or None when `small` has more dimensions (nothing to sum: a broadcast
    up). Unbroadcasting (the sweep, sum_to, its compiled rewrite) rests on this one rule."""
    lead = len(big) - len(small)
    if lead < 0:
        return None
    return tuple(range(lead)) + tuple(lead + i for i, n in enumerate(small) if n == 1 and big[lead + i] != 1)
