"""Shape arithmetic shared by the ops' shape rules (None stands for an unknown size)."""

from __future__ import annotations

import numpy as np


class SymbolicShape(tuple):
    """A shape with unknown (None) sizes that remembers whose shape it is.

    Derivative rules restore shapes with `reshape(g, x.shape)` and the like; when a static
    graph's `x.shape` has unknown sizes, the op takes them from `ref` when the graph runs.
    """

    def __new__(cls, dims, ref):
        shape = super().__new__(cls, dims)
        shape.ref = ref
        return shape

    def derive(self, dims):
        """A shape of the same rank whose unknown sizes are still `ref`'s."""
        return SymbolicShape(dims, self.ref) if len(dims) == len(self) else tuple(dims)


def runtime_shape(shape, ref):
    """`shape` with its unknown sizes taken from the runtime array `ref` (given when shape has None)."""
    if not ref:
        return shape
    return tuple(actual if n is None else n for n, actual in zip(shape, np.shape(ref[0])))


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


def normalize_axis(axis, ndim, op_name="op") -> tuple | None:
    """`axis` (None, int or tuple) as a sorted tuple of non-negative axes, or None for all."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{op_name}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op_name}: repeated axis in {axis}")
    return tuple(sorted(out))


def reduced_shape(shape, axis, keepdims) -> tuple:
    axes = range(len(shape)) if axis is None else axis
    if keepdims:
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        return shape.derive(kept) if isinstance(shape, SymbolicShape) else kept
    return tuple(n for i, n in enumerate(shape) if i not in axes)
