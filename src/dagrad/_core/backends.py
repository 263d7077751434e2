"""Array backends: which array type a value has, found without importing any backend.

A Tensor's value keeps its array type: NumPy by default, a `dask.array.Array` stays lazy (the ops'
forwards are NumPy's functions, which hand a Dask array to Dask through `__array_function__` and
`__array_ufunc__`). Dask is never imported here: a value can only be a Dask array if the user's code
imported `dask.array`, so `sys.modules` tells without a dependency and without a cost on NumPy arrays.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .errors import user_error


def is_dask(value) -> bool:
    """Whether `value` is a `dask.array.Array` (False when Dask was never imported).

    >>> is_dask(np.ones(3))
    False
    """
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(value, module.Array)


def ones(shape, dtype, like):
    """`np.ones(shape, dtype)` of the array type of `like` (a Dask array's ones are a Dask array).

    >>> ones((2,), np.float32, np.zeros(3))
    array([1., 1.], dtype=float32)
    """
    return np.ones(shape, dtype, like=like) if is_dask(like) else np.ones(shape, dtype)


def zeros(shape, dtype, like):
    """`np.zeros(shape, dtype)` of the array type of `like`.

    >>> zeros((), np.float64, np.ones(2))
    array(0.)
    """
    return np.zeros(shape, dtype, like=like) if is_dask(like) else np.zeros(shape, dtype)


def as_dtype(value, dtype):
    """A Dask array cast to `dtype` (lazily; itself when it has that dtype already). Dask arrays are not
    written in place by dagrad, so sharing one needs no copy.

    >>> as_dtype(np.ones(2), np.float32).dtype
    dtype('float32')
    """
    return value if dtype is None or value.dtype == dtype else value.astype(dtype)


def has_unknown_size(shape) -> bool:
    """Whether a shape has a size Dask does not know yet (nan: chunks of unknown length, as after a
    boolean mask).

    >>> has_unknown_size((2, 3)), has_unknown_size((float("nan"), 3))
    (False, True)
    """
    return any(isinstance(n, float) and math.isnan(n) for n in shape)


def unknown_size_error(where, shape):
    """The error for an operation (`where`) that needs a Dask array's `shape`, whose chunk sizes are unknown."""
    return user_error(ValueError, where, f"needs the shape of a Dask array whose chunk sizes are unknown "
                      f"(shape {tuple(shape)}); call .compute_chunk_sizes() on it first")


def compute_together(values):
    """`values` with their Dask arrays computed by one `dask.compute` (chunks they share are read once);
    other values as they are. Dask is in `sys.modules` whenever a value is a Dask array.

    >>> compute_together([np.ones(2), 3.0])
    [array([1., 1.]), 3.0]
    """
    values = list(values)
    lazy = [k for k, v in enumerate(values) if is_dask(v)]
    if lazy:
        computed = sys.modules["dask"].compute(*[values[k] for k in lazy])
        for k, v in zip(lazy, computed):
            values[k] = v
    return values
