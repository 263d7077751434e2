"""Array backends: which array type a value has, found without importing any backend.

A Tensor's value keeps its array type: NumPy by default, a `dask.array.Array` stays lazy, a
`cupy.ndarray` stays on its GPU (the ops' forwards are NumPy's functions, which hand a Dask or CuPy
array to its library through `__array_function__` and `__array_ufunc__`). No backend is imported here: a
value can only be a Dask (CuPy) array if the user's code imported `dask.array` (`cupy`), so `sys.modules`
tells without a dependency. The helpers are on hot paths: a NumPy array is recognised first, by its type.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .errors import user_error

_ndarray = np.ndarray


def is_dask(value) -> bool:
    """Whether `value` is a `dask.array.Array` (False when Dask was never imported).

    >>> is_dask(np.ones(3))
    False
    """
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(value, module.Array)


def is_cupy(value) -> bool:
    """Whether `value` is a `cupy.ndarray`, an array in GPU memory (False when CuPy was never imported).

    >>> is_cupy(np.ones(3))
    False
    """
    module = sys.modules.get("cupy")
    return module is not None and isinstance(value, module.ndarray)


def is_foreign(value) -> bool:
    """Whether `value` is an array of another backend than NumPy (Dask's or CuPy's): one that NumPy's own
    `np.array(value)` would compute or copy to the host, so dagrad keeps it in its own type.

    >>> is_foreign(np.ones(3)), is_foreign(2.0)
    (False, False)
    """
    return type(value) is not _ndarray and (is_dask(value) or is_cupy(value))


def array_type_name(value) -> str:
    """What error messages call the array type of `value`: "numpy ndarray", "dask Array", "cupy ndarray"
    (a Dask array of CuPy chunks is "dask Array of cupy chunks").

    >>> array_type_name(np.ones(2)), array_type_name(np.float32(1)), array_type_name(2.0)
    ('numpy ndarray', 'numpy float32', 'float')
    """
    if isinstance(value, _ndarray):
        return "numpy ndarray"
    if is_dask(value):
        return "dask Array of cupy chunks" if is_cupy(getattr(value, "_meta", None)) else "dask Array"
    kind = type(value)
    module = kind.__module__.partition(".")[0]
    return kind.__name__ if module == "builtins" else f"{module} {kind.__name__}"


def _on_gpu(value):
    """True for a CuPy array (or a Dask array of CuPy chunks), False for a NumPy or Dask array of NumPy
    chunks, None for what is no array (a Python or NumPy scalar, which CuPy accepts beside its arrays)."""
    if isinstance(value, _ndarray):
        return False
    if is_cupy(value):
        return True
    if is_dask(value):
        return is_cupy(getattr(value, "_meta", None))
    return None


def mixing_error(where, values):
    """The TypeError for `values` (an op's operands) that mix arrays in GPU memory (CuPy) with arrays in
    host memory (NumPy, Dask of NumPy chunks), or None when they do not. dagrad never copies between the
    two implicitly (a silent transfer per op would be slow and hide the mistake); the message says how to.

    >>> mixing_error("add", (np.ones(2), 1.0)) is None
    True
    """
    if "cupy" not in sys.modules:
        return None
    gpu = host = None
    for v in values:
        side = _on_gpu(v)
        if side is True and gpu is None:
            gpu = v
        elif side is False and host is None:
            host = v
    if gpu is None or host is None:
        return None
    return user_error(TypeError, where, f"mixes a {array_type_name(gpu)} (GPU memory) with a "
                      f"{array_type_name(host)} (host memory); dagrad copies between them only when asked: move "
                      f"the host array to the GPU with cupy.asarray(x), or the CuPy array to the host with x.get()",
                      *values)


def check_dask_mixing(where, out, values):
    """Raises the mixing error when `out` is a Dask array computed from `values` that mix CuPy and NumPy
    arrays: Dask accepts both kinds of chunks lazily, so CuPy's refusal would come only at compute time,
    far from the user's line. Called only for outputs that are not NumPy arrays (free on NumPy's path)."""
    if is_dask(out):
        err = mixing_error(where, values)
        if err is not None:
            raise err


def to_numpy(value):
    """`value` as a NumPy array: a CuPy array is copied to the host (`.get()`), the one explicit copy;
    a Dask array is computed.

    >>> to_numpy(np.ones(2))
    array([1., 1.])
    """
    if type(value) is _ndarray:
        return value
    if is_cupy(value):
        return value.get()
    return np.asarray(value)


def ones(shape, dtype, like):
    """`np.ones(shape, dtype)` of the array type of `like` (a Dask array's ones are a Dask array, a CuPy
    array's are on its GPU).

    >>> ones((2,), np.float32, np.zeros(3))
    array([1., 1.], dtype=float32)
    """
    return np.ones(shape, dtype, like=like) if is_foreign(like) else np.ones(shape, dtype)


def zeros(shape, dtype, like):
    """`np.zeros(shape, dtype)` of the array type of `like`.

    >>> zeros((), np.float64, np.ones(2))
    array(0.)
    """
    return np.zeros(shape, dtype, like=like) if is_foreign(like) else np.zeros(shape, dtype)


def as_dtype(value, dtype):
    """A Dask or CuPy array cast to `dtype` (itself when it has that dtype already). Dask arrays are not
    written in place by dagrad, so sharing one needs no copy.

    >>> as_dtype(np.ones(2), np.float32).dtype
    dtype('float32')
    """
    return value if dtype is None or value.dtype == dtype else value.astype(dtype)


def copy_as(value, dtype):
    """A copy of a Dask or CuPy array `value` with `dtype`, in its own array type, which dagrad may keep
    (a `.grad`): a CuPy array is copied on its device (it is written in place like a NumPy array), a Dask
    array is only cast (it is lazy and never written in place). Never a copy to or from the host.

    >>> copy_as(np.ones(2), np.float32)
    array([1., 1.], dtype=float32)
    """
    if is_dask(value):
        return as_dtype(value, dtype)
    return value.astype(dtype)  # NumPy's and CuPy's astype copy by default


def has_unknown_size(shape) -> bool:
    """Whether a shape has a size Dask does not know yet (nan: chunks of unknown length, as after a
    boolean mask).

    >>> has_unknown_size((2, 3)), has_unknown_size((float("nan"), 3))
    (False, True)
    """
    return any(isinstance(n, float) and math.isnan(n) for n in shape)


def same_unknown(a, b) -> bool:
    """Whether two shapes with unknown (nan) sizes count as the same: unknown sizes on the same axes, the
    others equal. Dask pairs the blocks of two such arrays in an elementwise op, as equal sizes, so a rule's
    cotangent or tangent of this shape for a value of that one (x[mask] and what is computed from it
    elementwise) is taken as it is, with nothing to sum or broadcast.

    >>> nan = float("nan")
    >>> same_unknown((nan, 3), (nan, 3)), same_unknown((nan, 3), (nan, 1)), same_unknown((2,), (2,))
    (True, False, False)
    """
    return has_unknown_size(b) and len(a) == len(b) and all(m == n or (m != m and n != n) for m, n in zip(a, b))


def unknown_size_error(where, shape):
    """The error for an operation (`where`) that needs a Dask array's `shape`, whose chunk sizes are unknown."""
    return user_error(ValueError, where, f"needs the shape of a Dask array whose chunk sizes are unknown "
                      f"(shape {tuple(shape)}); call .compute_chunk_sizes() on it first")


def compute_together(values):
    """`values` with every Dask array among them computed by ONE `dask.compute` (the chunks they share are
    read once; on a cluster, one round trip), each result a NumPy array (a 0-d one for a scalar); the other
    values as they are. Dask is not imported here: a Dask value means the user's code imported it.

    >>> compute_together([np.ones(2), 3.0])
    [array([1., 1.]), 3.0]
    """
    lazy = [i for i, v in enumerate(values) if is_dask(v)]
    if not lazy:
        return list(values)
    computed = sys.modules["dask"].compute(*(values[i] for i in lazy))
    out = list(values)
    for i, value in zip(lazy, computed):
        out[i] = np.asarray(value)
    return out
