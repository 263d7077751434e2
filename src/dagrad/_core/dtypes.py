"""Dtype rules: each op declares one beside its shape rule (defop's `dtype=`), so a graph node's
dtype is known without running anything.

A rule is called with one entry per input: a NumPy dtype, or for a Python scalar its type (int,
float, complex), because NumPy 2 types those weakly (float32 + 2.0 is float32); None stays None
(an absent optional input). Keyword arguments are the op's attrs. tests/test_dtypes.py checks
every rule against what the op's forward really returns, for every dtype.
"""

from __future__ import annotations

import numpy as np

_default_float = [np.dtype(np.float64)]  # dg.set_default_dtype's: process-wide, as torch's


def default_float():
    """The dtype of tensors made from Python floats and of the factories' floats (`dg.set_default_dtype`)."""
    return _default_float[0]


def set_default_float(dtype):
    _default_float[0] = np.dtype(dtype)


def default_complex():
    """The complex dtype that goes with `default_float()` (complex64 for float32 and float16), as torch's."""
    return np.dtype(np.complex128) if _default_float[0] == np.float64 else np.dtype(np.complex64)


_WEAK = {int: 0, float: 0.0, complex: 0j}  # a Python type stands for a weakly typed value of it
_INT = np.dtype(np.int_)
_UINT = np.dtype(np.uint)


def _values(dtypes):
    return [_WEAK.get(d, d) for d in dtypes if d is not None]


def of_ufunc(ufunc, *extra):
    """The dtype NumPy's `ufunc` returns for these inputs (plus `extra` ones), found by NumPy's own
    type resolution without running it; an input it has no loop for raises as the call would."""

    def rule(*dtypes, **attrs):
        return ufunc.resolve_dtypes((*dtypes, *extra, None))[-1]

    return rule


def first(dtype, /, *others, **attrs):
    """The first input's dtype (views, selections, extrema, reorderings)."""
    return np.dtype(dtype)


def promoted(*dtypes, **attrs):
    """NumPy's promotion of all the inputs (concatenation, einsum, where's branches)."""
    return np.result_type(*_values(dtypes))


def floating(*dtypes, **attrs):
    """np.linalg's rule (erf's too): float64 (complex128 with a complex input) as soon as one input is
    a bool or an integer, else the promoted type (float32 with int8 is float64 there, not float32 as
    promotion says)."""
    values = _values(dtypes)
    kinds = {np.result_type(v).kind for v in values}
    if kinds <= {"f", "c"}:
        return np.result_type(*values)
    return np.dtype(np.complex128 if "c" in kinds else np.float64)


def accumulated(dtype, /, *others, **attrs):
    """np.sum, np.prod and np.cumsum: bools and small integers accumulate in the platform's integer."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < _INT.itemsize):
        return _INT
    if dtype.kind == "u" and dtype.itemsize < _UINT.itemsize:
        return _UINT
    return dtype


def index(*dtypes, **attrs):
    """Positions (argmax, argmin): NumPy's index type."""
    return np.dtype(np.intp)


def attr(name):
    """The dtype the op's attr `name` holds, else the first input's (astype, full_like)."""

    def rule(dtype, /, *others, **attrs):
        return np.dtype(dtype) if attrs.get(name) is None else np.dtype(attrs[name])

    return rule


def real_part(dtype, /, *others, **attrs):
    """The real dtype of a complex one (np.real, np.abs, np.angle); a real dtype as it is."""
    dtype = np.result_type(_WEAK.get(dtype, dtype))  # a Python type alone: its NumPy default (float64, ...)
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype
