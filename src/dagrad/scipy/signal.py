"""`dagrad.scipy.signal`: SciPy's `convolve`, differentiable (SciPy computes the values; it is the
optional extra `dagrad[scipy]`).

Convolution is bilinear: its tangent is the sum of the convolutions with one input's tangent, and the
cotangent of each input is the 'valid' convolution of the output's cotangent (zero-padded to the 'full'
output) with the other input reversed. The rules use `convolve` itself, so every order works in both modes.

>>> import numpy as np
>>> import dagrad as dg
>>> from dagrad.scipy import signal
>>> signal.convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
array([0. , 1. , 2.5, 4. , 1.5])
>>> dg.grad(lambda x: signal.convolve(x, np.array([1.0, -1.0]), mode="valid").sum())(np.ones(3))
array([-1.,  0.,  1.])
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (the doctests use it)

from .._core.dtypes import promoted
from .._core.errors import user_error
from .._core.op import apply, defop, public
from .._core.shapes import shape_of as _shape
from ..ops.shape import flip, pad

try:  # the values come from SciPy, an optional extra
    import scipy.signal as _ss
except ImportError:  # pragma: no cover  (the suite runs with SciPy)
    _ss = None

__all__ = ["convolve"]

_MODES = ("full", "valid", "same")
_METHODS = ("auto", "direct", "fft")


def _out_shape(s1, s2, mode):
    if mode == "same":
        return tuple(s1)
    if mode == "full":
        return tuple(None if None in (a, b) else a + b - 1 for a, b in zip(s1, s2))
    return tuple(None if None in (a, b) else abs(a - b) + 1 for a, b in zip(s1, s2))


def _convolve_shape(s1, s2, mode, method):
    return _out_shape(s1, s2, mode)


def _cotangent(g, other, s1, s2, mode, method):
    """The cotangent of the input that `other` is convolved with: g placed back in the 'full' output
    (the other modes are its centred slices, as SciPy takes them), correlated with `other`."""
    full = _out_shape(s1, s2, "full")
    out = _out_shape(s1, s2, mode)
    if mode != "full" and None in full + out:
        raise user_error(ValueError, "dagrad.scipy.signal.convolve", f"the gradient of mode {mode!r} needs the "
                         f"sizes of both inputs, unknown here: shapes {tuple(s1)} and {tuple(s2)}")
    if mode != "full":
        g = pad(g, [((f - o) // 2, f - o - (f - o) // 2) for f, o in zip(full, out)])
    return _convolve(g, flip(other), "valid", method)


def _convolve_vjp(g, out, a, b, mode, method):
    sa, sb = _shape(a), _shape(b)
    return _cotangent(g, b, sa, sb, mode, method), _cotangent(g, a, sa, sb, mode, method)


def _convolve_jvp(tangents, out, a, b, mode, method):
    ta, tb = tangents
    parts = [_convolve(ta, b, mode, method) if ta is not None else None,
             _convolve(a, tb, mode, method) if tb is not None else None]
    parts = [p for p in parts if p is not None]
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


_convolve_op = defop("convolve", lambda a, b, mode, method: _ss.convolve(a, b, mode=mode, method=method),
                     vjp=_convolve_vjp, jvp=_convolve_jvp, shape=_convolve_shape, dtype=promoted)


def _convolve(a, b, mode, method):
    return apply(_convolve_op, (a, b), {"mode": mode, "method": method})


@public(_convolve_op)
def convolve(in1, in2, mode="full", method="auto"):
    """`scipy.signal.convolve`: the n-dimensional convolution of `in1` and `in2` (of the same number of
    dimensions), `mode` 'full' (every overlap), 'valid' (full overlaps only: one input must be at least as
    large as the other along every axis) or 'same' (the size of `in1`, centred).

    >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0]), mode="same")
    array([1., 3., 5.])
    """
    where = "dagrad.scipy.signal.convolve"
    if _ss is None:
        raise user_error(ImportError, where, "needs SciPy, an optional extra: pip install 'dagrad[scipy]' (or pip "
                         "install scipy)")
    if mode not in _MODES:
        raise user_error(ValueError, where, f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
    if method not in _METHODS:
        raise user_error(ValueError, where, f"method must be one of {', '.join(_METHODS)}; got {method!r}")
    s1, s2 = tuple(_shape(in1)), tuple(_shape(in2))
    if len(s1) != len(s2):
        raise user_error(ValueError, where, f"in1 and in2 must have the same number of dimensions, got shapes {s1} "
                         f"and {s2}", in1, in2)
    if 0 in s1 or 0 in s2:
        raise user_error(ValueError, where, f"an input is empty (shapes {s1} and {s2})", in1, in2)
    known = [(a, b) for a, b in zip(s1, s2) if None not in (a, b)]  # a static graph's unknown sizes: SciPy checks
    if mode == "valid" and not (all(a >= b for a, b in known) or all(a <= b for a, b in known)):
        raise user_error(ValueError, where, f"mode 'valid' needs one input at least as large as the other along "
                         f"every axis, got shapes {s1} and {s2}", in1, in2)
    return _convolve(in1, in2, mode, method)

