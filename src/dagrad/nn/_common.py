"""What the functions and layers of `dg.nn` share: argument checks that name the caller, shapes, and the parameter
factories of the layers. Below `functional.py`, `conv.py`, `pooling.py`, `norm.py` and `layers.py`, which all use it.
"""

from __future__ import annotations

import operator

import numpy as np

from .._core.dtypes import default_float
from .._core.errors import user_error
from .._core.ir import number_needed
from .._core.shapes import shape_of
from .._core.tensor import Tensor
from .module import Parameter

__all__ = []


def _shape(x):
    return tuple(shape_of(x))


def _values(x):  # x must be concrete (not symbolic)
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _raw(x):  # x must be concrete (not symbolic): its array, of its own type (a Dask array not computed)
    return x._raw() if isinstance(x, Tensor) else x


def shape_error(where, expected, actual, *operands):
    """A ValueError naming the layer or function, the expected and actual input shape, at the user's line."""
    return user_error(ValueError, where, f"expected input of shape {expected}, got {tuple(actual)}", *operands)


def _fits(shape, expected):
    """Whether `shape` is `expected`, where a size a static graph does not know yet (None) fits any."""
    return shape == expected or (len(shape) == len(expected)
                                 and all(a == b or a is None or b is None for a, b in zip(shape, expected)))


def _int(v, name, where):
    """v as an int, refusing floats (2.5 would be truncated) and bools, as PyTorch's size arguments."""
    if isinstance(v, (bool, np.bool_)):
        raise user_error(TypeError, where, f"{name} must be an integer, got {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise user_error(TypeError, where, f"{name} must be an integer, got {v!r}") from None


_COUNT_WORDS = {1: "an int or a 1-tuple", 2: "an int or a pair"}


def _tuple(v, n, name, where):
    """v as a tuple of `n` ints: an int repeated, or a tuple/list of n ints (PyTorch's `_single`, `_pair`)."""
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise user_error(ValueError, where, f"{name} must be {_COUNT_WORDS.get(n, f'an int or {n} ints')}, got "
                             f"{v!r}")
        return tuple(_int(a, name, where) for a in v)
    v = _int(v, name, where)
    return (v,) * n


def _pair(v, name, where="conv2d"):
    return _tuple(v, 2, name, where)


def _is_real(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _number(value, name, where, *operands):
    """Refuses a value that has none yet (a traced Python float: static_argnames makes it a constant)."""
    if isinstance(value, Tensor):
        raise number_needed(value, name, where, *operands)


def _positive_number(value, name, where, *operands):
    _number(value, name, where, *operands)
    if not _is_real(value) or not value > 0:
        raise user_error(ValueError, where, f"{name} must be a positive number, got {value!r}", *operands)
    return value


def _non_negative(value, name, where, *operands):
    _number(value, name, where, *operands)
    if not _is_real(value) or not value >= 0:
        raise user_error(ValueError, where, f"{name} must be a non-negative number, got {value!r}", *operands)
    return value


def _probability(p, name, where, *operands):
    """p, a real number in [0, 1], or a ValueError naming `where` (a string or None is refused too)."""
    _number(p, name, where, *operands)
    if not _is_real(p) or not 0 <= p <= 1:
        raise user_error(ValueError, where, f"{name} must be in [0, 1], got {p!r}", *operands)
    return p


def _size(value, name, layer, minimum=0):
    """A size option as an int of at least `minimum` (a float, a bool or a smaller value is refused)."""
    value = _int(value, name, layer)
    if value < minimum:
        raise user_error(ValueError, layer, f"{name} must be {'non-negative' if minimum == 0 else 'positive'}, got "
                         f"{value}")
    return value


def _empty(shape, dtype):
    return Parameter(np.zeros(shape, dtype=dtype or default_float()))


def _affine(shape, dtype, affine):
    """(weight, bias) of a normalisation layer: ones and zeros, or (None, None) without `affine`."""
    if not affine:
        return None, None
    dtype = dtype or default_float()
    return Parameter(np.ones(shape, dtype)), Parameter(np.zeros(shape, dtype))


def _padding_mode(mode, layer):
    """PyTorch's `padding_mode`: only 'zeros' is implemented (the others are refused, not ignored)."""
    if mode != "zeros":
        if mode in ("reflect", "replicate", "circular"):
            raise user_error(NotImplementedError, layer, f"padding_mode={mode!r} is not implemented; only 'zeros' is")
        raise user_error(ValueError, layer, f"padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got "
                         f"{mode!r}")
    return mode
