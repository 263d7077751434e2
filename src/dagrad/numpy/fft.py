"""`dagrad.numpy.fft`: NumPy's discrete Fourier transforms, differentiable in both modes to any order.

The names, signatures, values and dtypes are NumPy's (`numpy.fft`, which computes the values).
Three ops do the work, each over a tuple of distinct axes: `fftn` (complex to complex, forward or
inverse), `rfftn` (real to half-spectrum) and `irfftn` (half-spectrum to real); the other functions
are thin wrappers (`hfft` is `irfft` of the conjugate, `fftshift` a `roll`). Repeated axes, which
NumPy allows, become a chain of one-axis ops in NumPy's order, so the values stay NumPy's bit for bit.

Derivatives follow JAX's and HIPS autograd's convention (a cotangent ct of z pairs with a tangent t
as Re(ct * t), without conjugation). The transforms are linear over the reals, so each jvp is the op
applied to the tangent. The DFT matrix is symmetric, so the vjp of the complex transform is the same
transform of the cotangent (the plain transpose, not the adjoint), cropped or zero-padded back to the
input's length where `n` padded or cropped it. rfftn's vjp is the real part of the full transform of
the half-spectrum cotangent zero-padded to length n; irfftn's is the inverse transform of the real
cotangent, kept on the half-spectrum and doubled except at bin 0 and (for even n) bin n/2, the bins
whose imaginary parts irfft ignores (they get none of the gradient's imaginary part, exactly as the
values ignore them). Unlike autograd, odd lengths need nothing special.

>>> import numpy as np
>>> import dagrad as dg
>>> from dagrad.numpy import fft
>>> fft.rfft(np.array([1.0, 2.0, 3.0, 4.0]))
array([10.+0.j, -2.+2.j, -2.+0.j])
>>> dg.grad(lambda x: fft.rfft(x)[1].real)(np.zeros(4))       # Re X[1] = x0 - x2
array([ 1.,  0., -1.,  0.])
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.fft import fftfreq, rfftfreq

from .._core.dtypes import real_part
from .._core.errors import op_error, user_error
from .._core.op import apply, defop
from .._core.shapes import as_index, is_sequence, normalize_axis_index
from .._core.shapes import dtype_of as _dtype
from .._core.shapes import shape_of as _shape
from .._core.structural import real
from .._core.tensor import Tensor
from ..numpy_more import roll
from ..ops.elementwise import conj
from ..ops.shape import getitem, index_add

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "fftshift", "ifftshift", "fftfreq", "rfftfreq"]

_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


# -- the three ops. `sizes` holds the transform length along each axis; None (a static graph's
# unknown size) is the default of the one-axis transform, taken from the input when it runs
def _length(n, size, halved=False):
    """A transform's length: `n`, else the input's `size` (for irfft's last axis, 2 (size - 1))."""
    if n is not None or size is None:
        return n
    return 2 * (size - 1) if halved else size


def _lengths(shape, axes, sizes, halved=False):
    return [_length(n, shape[a], halved and k == len(axes) - 1) for k, (a, n) in enumerate(zip(axes, sizes))]


def _fftn_forward(x, axes, sizes, norm, inverse):
    transform = np.fft.ifftn if inverse else np.fft.fftn
    return transform(x, _lengths(np.shape(x), axes, sizes), axes, norm)


def _rfftn_forward(x, axes, sizes, norm):
    return np.fft.rfftn(x, _lengths(np.shape(x), axes, sizes), axes, norm)


def _irfftn_forward(x, axes, sizes, norm):
    return np.fft.irfftn(x, _lengths(np.shape(x), axes, sizes, halved=True), axes, norm)


def _out_shape(shape, axes, sizes, kind):
    out = list(shape)
    for a, n in zip(axes, _lengths(shape, axes, sizes, halved=kind == "c2r")):
        out[a] = n
    if kind == "r2c" and out[axes[-1]] is not None:
        out[axes[-1]] = out[axes[-1]] // 2 + 1  # the half-spectrum
    return tuple(out)


def _complex_dtype(dtype, /, **attrs):
    return np.result_type(np.dtype(dtype), 1j)  # NumPy 2: complex64 for float16/float32/complex64


def _real_input_dtype(dtype, /, **attrs):
    if np.dtype(dtype).kind == "c":
        raise TypeError(f"rfftn needs real input, got dtype {np.dtype(dtype)}")
    return _complex_dtype(dtype)


def _real_output_dtype(dtype, /, axes, **attrs):
    if len(axes) > 1:  # the axes before the last are inverse-transformed to complex first
        return real_part(_complex_dtype(dtype))
    return np.result_type(real_part(dtype), 1.0)  # NumPy 2: float16 stays float16


def _like_input(ct, x):
    """A real input's cotangent is the real part (a unary op's rule takes it: the engine does not)."""
    return ct if _dtype(x).kind == "c" else real(ct)


def _fit(ct, axes, x, where):
    """`ct` cropped or zero-padded along `axes` to the sizes of `x`: the adjoint of the input's cropping
    or padding to the transform's length."""
    have, shape = _shape(ct), _shape(x)
    crop = [slice(None)] * len(have)
    padded = False
    for a in axes:
        if have[a] == shape[a]:
            continue
        if None in (have[a], shape[a]):
            raise user_error(ValueError, where, f"the gradient needs the length of axis {a}, unknown in this static "
                             f"graph (shapes {tuple(have)} and {tuple(shape)}): give it a known size", ct)
        if have[a] > shape[a]:
            crop[a] = slice(0, shape[a])
        else:
            padded = True
    if any(s != slice(None) for s in crop):
        ct = getitem(ct, tuple(crop))
    if padded:  # into zeros of x's shape (a static graph's unknown sizes are x's when it runs)
        ct = index_add(ct, tuple(slice(0, n) for n in _shape(ct)), shape)
    return ct


def _fftn_vjp(g, out, x, axes, sizes, norm, inverse):
    # the DFT matrix is symmetric: the transpose of each axis' transform is the same transform
    ct = apply(_FFTN, (g,), {"axes": axes, "sizes": (None,) * len(axes), "norm": norm, "inverse": inverse})
    return _like_input(_fit(ct, axes, x, "fft.fftn"), x)


def _rfftn_vjp(g, out, x, axes, sizes, norm):
    # the half-spectrum's rows of the DFT matrix, transposed: the full transform of g zero-padded to n
    n = _length(sizes[-1], _shape(x)[axes[-1]])
    if n is None:
        raise user_error(ValueError, "fft.rfftn", "the gradient needs the transform's length, unknown in this static "
                         "graph: give n or the size of the last transformed axis", x)
    full = (None,) * (len(axes) - 1) + (n,)
    ct = apply(_FFTN, (g,), {"axes": axes, "sizes": full, "norm": norm, "inverse": False})
    return real(_fit(ct, axes, x, "fft.rfftn"))


def _irfftn_vjp(g, out, x, axes, sizes, norm):
    # out = sum over the half-spectrum of c_k Re(X_k e^{+ijk}) / n: the gradient in X_k is c_k times the
    # inverse transform of g, with c_k = 1 at bin 0 and the Nyquist bin n/2 (whose imaginary parts
    # irfft ignores: sin vanishes there) and 2 at every other bin
    axis = axes[-1]
    n = _shape(out)[axis]
    if n is None:
        raise user_error(ValueError, "fft.irfftn", "the gradient needs the output's length, unknown in this static "
                         "graph: give n or the size of the last transformed axis", x)
    ct = apply(_FFTN, (g,), {"axes": axes, "sizes": (None,) * len(axes), "norm": norm, "inverse": True})
    half = n // 2 + 1
    ct = getitem(ct, (slice(None),) * axis + (slice(0, half),))
    weights = np.full(half, 2, dtype=real_part(_dtype(ct)))
    weights[0] = 1
    if n % 2 == 0:
        weights[-1] = 1
    ct = ct * weights.reshape((half,) + (1,) * (len(_shape(ct)) - axis - 1))
    return _like_input(_fit(ct, axes, x, "fft.irfftn"), x)


def _batch(op, values, batched, attrs):
    """The transformed axes move one to the right of vmap's batch axis."""
    return apply(op, tuple(values), {**attrs, "axes": tuple(a + 1 for a in attrs["axes"])}), True


_FFTN = defop(
    "fftn", _fftn_forward,
    vjp=(_fftn_vjp,),
    jvp=(lambda t, out, x, **attrs: apply(_FFTN, (t,), attrs),),
    shape=lambda shape, axes, sizes, norm, inverse: _out_shape(shape, axes, sizes, "c2c"),
    dtype=_complex_dtype, batch=_batch, fresh=True,
    saves=(),
)
_RFFTN = defop(
    "rfftn", _rfftn_forward,
    vjp=(_rfftn_vjp,),
    jvp=(lambda t, out, x, **attrs: apply(_RFFTN, (t,), attrs),),
    shape=lambda shape, axes, sizes, norm: _out_shape(shape, axes, sizes, "r2c"),
    dtype=_real_input_dtype, batch=_batch, fresh=True,
    saves=(),
)
_IRFFTN = defop(
    "irfftn", _irfftn_forward,
    vjp=(_irfftn_vjp,),
    jvp=(lambda t, out, x, **attrs: apply(_IRFFTN, (t,), attrs),),
    shape=lambda shape, axes, sizes, norm: _out_shape(shape, axes, sizes, "c2r"),
    dtype=_real_output_dtype, batch=_batch, fresh=True,
    saves=(),
)


# -- arguments, checked as NumPy checks them, at the user's line
def _input(a, where):
    if isinstance(a, Tensor):
        return a
    try:
        return np.asarray(a)
    except (TypeError, ValueError) as err:
        raise op_error(where, (), err) from None


def _norm(norm, where, x):
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in _NORMS:
        raise user_error(ValueError, where, f'invalid norm value {norm!r}; should be "backward", "ortho" or '
                         '"forward"', x)
    return norm


def _one_axis(a, n, axis, where):
    axis = normalize_axis_index(axis, len(_shape(a)), where, a)
    return (axis,), (None if n is None else as_index(n, where, "n", a),)


def _axes_and_sizes(a, s, axes, where):
    """NumPy's reading of (s, axes): axes None is every axis, or the last len(s) ones; -1 in s is the
    input's size along that axis, None the one-axis transform's default."""
    ndim = len(_shape(a))
    if s is not None and not is_sequence(s):
        raise user_error(TypeError, where, f"s must be a sequence of integers, got {s!r}", a)
    if axes is not None and not is_sequence(axes):
        raise user_error(TypeError, where, f"axes must be a sequence of integers, got {axes!r}", a)
    if axes is None:
        if s is not None:
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0): pass the "
                          "axes explicitly", DeprecationWarning, stacklevel=3)
        count = ndim if s is None else len(s)
        axes = range(ndim - count, ndim) if count <= ndim else range(-count, 0)
    axes = tuple(normalize_axis_index(ax, ndim, where, a, name="axes") for ax in axes)
    if s is None:
        return axes, (None,) * len(axes)
    if len(s) != len(axes):
        raise user_error(ValueError, where, f"s {tuple(s)!r} and axes {axes!r} have different lengths", a)
    if None in s:
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in NumPy 2.0: pass the "
                      "default length of the one-axis transform", DeprecationWarning, stacklevel=3)
    sizes = tuple(None if n is None else as_index(n, where, "s", a, within=s) for n in s)
    return axes, tuple(_shape(a)[ax] if n == -1 else n for ax, n in zip(axes, sizes))


def _apply(op, x, axes, sizes, norm, where, inverse=None):
    """One op over distinct `axes`, each None size made the default length where the input's is known."""
    shape = _shape(x)
    halved = op is _IRFFTN
    lengths = tuple(_lengths(shape, axes, sizes, halved))
    for a, n in zip(axes, lengths):
        if n is not None and n < 1:
            raise user_error(ValueError, where, f"invalid number of FFT data points ({n}) specified along axis {a}",
                             x)
    attrs = {"axes": axes, "sizes": lengths, "norm": norm}
    return apply(op, (x,), attrs if inverse is None else {**attrs, "inverse": inverse})


def _distinct(axes):
    return len(set(axes)) == len(axes)


def _c2c(x, axes, sizes, norm, inverse, where):
    if _distinct(axes):
        return _apply(_FFTN, x, axes, sizes, norm, where, inverse) if axes else x  # no axes: NumPy returns x
    for a, n in reversed(tuple(zip(axes, sizes))):  # numpy.fft's order over repeated axes: last first
        x = _apply(_FFTN, x, (a,), (n,), norm, where, inverse)
    return x


def _r2c(x, axes, sizes, norm, where):
    if _dtype(x).kind == "c":
        raise user_error(TypeError, where, "needs real input, as NumPy's (use fft for complex input)", x)
    if not axes:
        raise user_error(IndexError, where, "needs at least one axis to transform", x)
    if _distinct(axes):
        return _apply(_RFFTN, x, axes, sizes, norm, where)
    x = _apply(_RFFTN, x, axes[-1:], sizes[-1:], norm, where)
    return _c2c(x, axes[:-1], sizes[:-1], norm, False, where)


def _c2r(x, axes, sizes, norm, where):
    if not axes:
        raise user_error(IndexError, where, "needs at least one axis to transform", x)
    if _distinct(axes):
        return _apply(_IRFFTN, x, axes, sizes, norm, where)
    for a, n in zip(axes[:-1], sizes[:-1]):  # numpy.fft's order: the complex axes first, in order
        x = _apply(_FFTN, x, (a,), (n,), norm, where, True)
    return _apply(_IRFFTN, x, axes[-1:], sizes[-1:], norm, where)


def _numpy_out(name, a, out, *args):
    """`out=`: NumPy's own call for plain arrays; a traced value cannot be written into an array."""
    if isinstance(a, Tensor) or isinstance(out, Tensor):
        raise user_error(TypeError, f"fft.{name}", "out= is not supported for Tensors (a traced or recorded value "
                         "cannot be written into an array); use the returned value", a)
    try:
        return getattr(np.fft, name)(a, *args, out=out)
    except (TypeError, ValueError, IndexError) as err:
        raise op_error(f"fft.{name}", (a,), err) from None


# -- the public functions: numpy.fft's signatures
def _transform(name, kind, inverse, a, n, axis, norm, out, find_axes):
    """One call of a public function: NumPy's own with `out=`, else the op of `kind` over the axes
    and sizes `find_axes(a, n, axis, where)` gives (one axis, or several)."""
    if out is not None:
        return _numpy_out(name, a, out, n, axis, norm)
    where = f"fft.{name}"
    a = _input(a, where)
    norm = _norm(norm, where, a)
    axes, sizes = find_axes(a, n, axis, where)
    if kind == "c2c":
        return _c2c(a, axes, sizes, norm, inverse, where)
    return (_r2c if kind == "r2c" else _c2r)(a, axes, sizes, norm, where)


def _one_dimensional(name, kind, inverse=False):
    def function(a, n=None, axis=-1, norm=None, out=None):
        return _transform(name, kind, inverse, a, n, axis, norm, out, _one_axis)

    function.__name__ = function.__qualname__ = name
    return function


def _n_dimensional(name, kind, inverse=False, default_axes=None):
    def function(a, s=None, axes=default_axes, norm=None, out=None):
        return _transform(name, kind, inverse, a, s, axes, norm, out, _axes_and_sizes)

    function.__name__ = function.__qualname__ = name
    return function


fft = _one_dimensional("fft", "c2c")
fft.__doc__ = """`numpy.fft.fft`: the one-dimensional DFT along `axis`, of length `n` (the input cropped or
zero-padded), scaled by `norm` ("backward": none, "ortho": 1/sqrt(n), "forward": 1/n).

>>> fft(np.array([1.0, 0.0, -1.0, 0.0]))
array([0.+0.j, 2.+0.j, 0.+0.j, 2.+0.j])
"""
ifft = _one_dimensional("ifft", "c2c", inverse=True)
ifft.__doc__ = """`numpy.fft.ifft`: the inverse of `fft` (scaled by 1/n with the default `norm`).

>>> ifft(np.array([0, 2, 0, 2])).real
array([ 1.,  0., -1.,  0.])
"""
rfft = _one_dimensional("rfft", "r2c")
rfft.__doc__ = """`numpy.fft.rfft`: the DFT of real input, its n // 2 + 1 non-negative frequency terms.

>>> rfft(np.array([1.0, 1.0, 1.0]))
array([3.+0.j, 0.+0.j])
"""
irfft = _one_dimensional("irfft", "c2r")
irfft.__doc__ = """`numpy.fft.irfft`: the real signal of length `n` (default 2 (m - 1)) whose `rfft` is the
half-spectrum `a` (the imaginary parts of bin 0 and, for even n, bin n/2 are ignored).

>>> irfft(np.array([4.0, 0.0, 0.0]))
array([1., 1., 1., 1.])
"""
fft2 = _n_dimensional("fft2", "c2c", default_axes=(-2, -1))
fft2.__doc__ = """`numpy.fft.fft2`: `fftn` over the last two axes by default.

>>> fft2(np.ones((2, 2))).real
array([[4., 0.],
       [0., 0.]])
"""
ifft2 = _n_dimensional("ifft2", "c2c", inverse=True, default_axes=(-2, -1))
ifft2.__doc__ = """`numpy.fft.ifft2`: `ifftn` over the last two axes by default.

>>> ifft2(np.array([[4.0, 0.0], [0.0, 0.0]])).real
array([[1., 1.],
       [1., 1.]])
"""
fftn = _n_dimensional("fftn", "c2c")
fftn.__doc__ = """`numpy.fft.fftn`: the DFT over `axes` (all by default) with lengths `s`.

>>> fftn(np.ones((2, 2, 2)))[0, 0, 0]
np.complex128(8+0j)
"""
ifftn = _n_dimensional("ifftn", "c2c", inverse=True)
ifftn.__doc__ = """`numpy.fft.ifftn`: the inverse of `fftn`.

>>> ifftn(fftn(np.arange(4.0).reshape(2, 2))).real
array([[0., 1.],
       [2., 3.]])
"""
rfft2 = _n_dimensional("rfft2", "r2c", default_axes=(-2, -1))
rfft2.__doc__ = """`numpy.fft.rfft2`: `rfftn` over the last two axes by default.

>>> rfft2(np.ones((2, 4))).shape
(2, 3)
"""
irfft2 = _n_dimensional("irfft2", "c2r", default_axes=(-2, -1))
irfft2.__doc__ = """`numpy.fft.irfft2`: `irfftn` over the last two axes by default.

>>> irfft2(rfft2(np.ones((2, 4))))
array([[1., 1., 1., 1.],
       [1., 1., 1., 1.]])
"""
rfftn = _n_dimensional("rfftn", "r2c")
rfftn.__doc__ = """`numpy.fft.rfftn`: `rfft` over the last of `axes`, then `fft` over the others.

>>> rfftn(np.ones((2, 2, 4))).shape
(2, 2, 3)
"""
irfftn = _n_dimensional("irfftn", "c2r")
irfftn.__doc__ = """`numpy.fft.irfftn`: the inverse of `rfftn` (`s` gives the output's lengths; the last
defaults to 2 (m - 1)).

>>> irfftn(rfftn(np.ones((2, 3))), s=(2, 3), axes=(0, 1))
array([[1., 1., 1.],
       [1., 1., 1.]])
"""


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.hfft`: the real spectrum of a signal with Hermitian symmetry, `irfft` of the conjugate
    with the opposite `norm`.

    >>> hfft(np.array([1.0, 0.0, 0.0]))
    array([1., 1., 1., 1.])
    """
    if out is not None:
        return _numpy_out("hfft", a, out, n, axis, norm)
    a = _input(a, "fft.hfft")
    return irfft(conj(a), n, axis, _SWAPPED[_norm(norm, "fft.hfft", a)])


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.ihfft`: the inverse of `hfft`, the conjugate of `rfft` with the opposite `norm`.

    >>> ihfft(np.array([1.0, 1.0, 1.0, 1.0]))
    array([1.-0.j, 0.-0.j, 0.-0.j])
    """
    if out is not None:
        return _numpy_out("ihfft", a, out, n, axis, norm)
    a = _input(a, "fft.ihfft")
    return conj(rfft(a, n, axis, _SWAPPED[_norm(norm, "fft.ihfft", a)]))


def _shifted(x, axes, sign, where):
    """numpy.fft's shifts: a roll by half of each axis' length."""
    x = _input(x, where)
    shape = _shape(x)
    if axes is None:
        axes = range(len(shape))
    axes = tuple(normalize_axis_index(a, len(shape), where, x, name="axes")
                 for a in (axes if is_sequence(axes) else (axes,)))
    if not isinstance(x, Tensor):
        return (np.fft.fftshift if sign > 0 else np.fft.ifftshift)(x, axes)
    if any(shape[a] is None for a in axes):
        raise user_error(ValueError, where, f"needs the sizes of the axes it shifts, unknown here: shape {shape}", x)
    return roll(x, tuple(sign * (shape[a] // 2) for a in axes), axes)


def fftshift(x, axes=None):
    """`numpy.fft.fftshift`: the zero-frequency term moved to the centre (a roll by n // 2 per axis).

    >>> fftshift(np.arange(5.0))
    array([3., 4., 0., 1., 2.])
    """
    return _shifted(x, axes, 1, "fft.fftshift")


def ifftshift(x, axes=None):
    """`numpy.fft.ifftshift`: the inverse of `fftshift` (a roll by -(n // 2) per axis).

    >>> ifftshift(np.array([3.0, 4.0, 0.0, 1.0, 2.0]))
    array([0., 1., 2., 3., 4.])
    """
    return _shifted(x, axes, -1, "fft.ifftshift")
