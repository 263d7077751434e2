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
from ..ops.shape import flip, getitem, pad, reshape, transpose

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
                     vjp=_convolve_vjp, jvp=_convolve_jvp, shape=_convolve_shape, dtype=promoted, numpy_only=True)


def _convolve(a, b, mode, method):
    return apply(_convolve_op, (a, b), {"mode": mode, "method": method})


def _axis_list(pair, n1, n2, name, where):
    """`pair` = (axes of in1, axes of in2) as two lists of non-negative ints of the same length."""
    try:
        first, second = ([int(a) for a in part] for part in pair)
    except (TypeError, ValueError):
        raise user_error(TypeError, where, f"{name} must be a pair of lists of axes, got {pair!r}") from None
    if len(first) != len(second):
        raise user_error(ValueError, where, f"{name} must pair as many axes of in1 as of in2, got {pair!r}")
    for axes, n in ((first, n1), (second, n2)):
        if any(not -n <= a < n for a in axes):
            raise user_error(ValueError, where, f"{name} {pair!r} holds an axis out of range for {n} dimensions")
    return [a % n1 for a in first], [a % n2 for a in second]


def _generalized(in1, in2, axes, dot_axes, mode, method, where):
    """autograd's convolve over the paired `axes`, summed over the paired `dot_axes`, every other axis
    kept (the result's axes: in1's others, in2's others, then the convolved ones). Written as one 'full'
    convolution of the two inputs laid out as (in1's others, in2's others, dot axes, convolved axes), in2
    reversed along the dot axes and size 1 where the other input's axes are: a 'full' convolution with a
    size-1 axis is an outer product, and its middle entry along a reversed dot axis the sum of products;
    the result is then sliced as SciPy slices 'valid' and 'same' out of 'full'."""
    s1, s2 = tuple(_shape(in1)), tuple(_shape(in2))
    conv1, conv2 = _axis_list(([*range(len(s1))], [*range(len(s1))]) if axes is None else axes, len(s1), len(s2),
                              "axes", where)
    dot1, dot2 = _axis_list(dot_axes, len(s1), len(s2), "dot_axes", where)
    for a, b in zip(dot1, dot2):
        if s1[a] != s2[b]:
            raise user_error(ValueError, where, f"dot_axes pair axis {a} of in1 (size {s1[a]}) with axis {b} of in2 "
                             f"(size {s2[b]}): sizes must be equal", in1, in2)
    pairs = [(s1[a], s2[b]) for a, b in zip(conv1, conv2)]
    if mode == "valid" and not (all(a >= b for a, b in pairs) or all(a <= b for a, b in pairs)):
        raise user_error(ValueError, where, f"mode 'valid' needs one input at least as large as the other along "
                         f"every convolved axis, got shapes {s1} and {s2} over axes {axes!r}", in1, in2)
    other1 = [a for a in range(len(s1)) if a not in conv1 + dot1]
    other2 = [b for b in range(len(s2)) if b not in conv2 + dot2]
    dots, convs = [s1[a] for a in dot1], [s1[a] for a in conv1]
    a = reshape(transpose(in1, other1 + dot1 + conv1),
                tuple(s1[i] for i in other1) + (1,) * len(other2) + tuple(dots) + tuple(convs))
    b = reshape(transpose(in2, other2 + dot2 + conv2),
                (1,) * len(other1) + tuple(s2[i] for i in other2) + tuple(dots) + tuple(s2[i] for i in conv2))
    first_dot = len(other1) + len(other2)
    if dots:
        b = flip(b, axis=tuple(range(first_dot, first_dot + len(dots))))
    full = _convolve(a, b, "full", method)
    index = [slice(None)] * first_dot + [n - 1 for n in dots]
    for n1, n2 in pairs:
        size = {"full": n1 + n2 - 1, "valid": abs(n1 - n2) + 1, "same": n1}[mode]
        start = (n1 + n2 - 1 - size) // 2
        index.append(slice(start, start + size))
    return getitem(full, tuple(index))


@public(_convolve_op)
def convolve(in1, in2, mode="full", method="auto", *, axes=None, dot_axes=None):
    """`scipy.signal.convolve`: the n-dimensional convolution of `in1` and `in2` (of the same number of
    dimensions), `mode` 'full' (every overlap), 'valid' (full overlaps only: one input must be at least as
    large as the other along every axis) or 'same' (the size of `in1`, centred).

    autograd's generalisation: `axes=(axes1, axes2)` convolves only those paired axes, `dot_axes=(axes1,
    axes2)` sums products over those paired axes (equal sizes), and every other axis is kept, the result's
    axes being in1's others, in2's others, then the convolved ones.

    >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0]), mode="same")
    array([1., 3., 5.])
    >>> convolve(np.ones((2, 3)), np.ones((2, 2)), mode="valid", axes=([1], [1]), dot_axes=([0], [0]))
    array([4., 4.])
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
    if 0 in s1 or 0 in s2:
        raise user_error(ValueError, where, f"an input is empty (shapes {s1} and {s2})", in1, in2)
    if axes is not None or dot_axes is not None:
        if None in s1 + s2:
            raise user_error(ValueError, where, f"axes and dot_axes need known sizes, got shapes {s1} and {s2}",
                             in1, in2)
        return _generalized(in1, in2, axes, ((), ()) if dot_axes is None else dot_axes, mode, method, where)
    if len(s1) != len(s2):
        raise user_error(ValueError, where, f"in1 and in2 must have the same number of dimensions, got shapes {s1} "
                         f"and {s2}", in1, in2)
    known = [(a, b) for a, b in zip(s1, s2) if None not in (a, b)]  # a static graph's unknown sizes: SciPy checks
    if mode == "valid" and not (all(a >= b for a, b in known) or all(a <= b for a, b in known)):
        raise user_error(ValueError, where, f"mode 'valid' needs one input at least as large as the other along "
                         f"every axis, got shapes {s1} and {s2}", in1, in2)
    return _convolve(in1, in2, mode, method)
