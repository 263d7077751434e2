"""dagrad.numpy: NumPy's names and signatures, differentiable.

`import dagrad.numpy as np` can stand in for `import numpy as np` in numerical code, which
then differentiates unchanged with `dg.grad` (the style of HIPS autograd):

>>> import dagrad as dg
>>> import dagrad.numpy as dnp
>>> def f(x):
...     return dnp.sum(dnp.tanh(x) ** 2) + dnp.linalg.norm(x)
>>> g = dg.grad(f)(dnp.array([0.5, -1.0]))

Functions return NumPy arrays for NumPy inputs and Tensors for Tensor inputs. Constants,
dtypes and non-differentiable helpers (`pi`, `newaxis`, `float64`, `arange`, `eye`,
`linspace`, `random`, ...) are NumPy's own; `full`, `zeros`, `ones` and `empty` are NumPy's
for plain values and differentiable when given a Tensor (`full(x.shape, g)` with `g` a
Tensor is `g` broadcast to that shape).
"""

from __future__ import annotations

import builtins as _builtins
import math as _math

import numpy as _np
from numpy import (  # noqa: F401  (constants, dtypes and helpers pass through)
    __version__,  # NumPy's, as autograd.numpy's: this module stands in for numpy
    allclose,
    arange,
    array_equal,
    bool_,
    clongdouble,
    complex128,
    dtype,
    e,
    euler_gamma,
    eye,
    finfo,
    float16,
    float32,
    float64,
    identity,
    iinfo,
    inf,
    isclose,
    logspace,
    longdouble,
    nan,
    ndarray,
    newaxis,
    pi,
)

from .._core.errors import op_error, user_error
from .._core.shapes import as_index, is_sequence, normalize_axis
from .._core.shapes import dtype_of as _dtype_of
from .._core.shapes import shape_of as _shape_of
from .._core.structural import real, shape_source
from .._core.tensor import Tensor, _leaf
from ..ops.elementwise import (
    abs,
    absolute,
    add,
    angle,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    astype,
    ceil,
    clip,
    conj,
    conjugate,
    cos,
    cosh,
    divide,
    equal,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    fmax,
    fmin,
    full_like,
    greater,
    greater_equal,
    hypot,
    imag,
    iscomplex,
    isfinite,
    isnan,
    isreal,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    ones_like,
    positive,
    power,
    reciprocal,
    relu,
    round,
    sigmoid,
    sign,
    sin,
    sinh,
    softplus,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    zeros_like,
)
from ..ops.linalg import diag, diagonal, dot, einsum, inner, matmul, outer, tensordot, trace, vdot
from ..ops.nn import log_softmax, logsumexp, softmax
from ..ops.reduce import amax, amin, argmax, argmin, cumsum, max, mean, min, prod, std, sum, var
from ..ops.shape import (
    argpartition,
    argsort,
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    pad,
    partition,
    ravel,
    repeat,
    reshape,
    sort,
    split,
    squeeze,
    stack,
    swapaxes,
    take,
    take_along_axis,
    tile,
    transpose,
    tril,
    triu,
)
from . import fft, linalg, random

remainder = mod


def iscomplexobj(x):
    """Whether `x` has a complex dtype, as `np.iscomplexobj` (also of a Tensor)."""
    return _dtype_of(x).kind == "c"


def isrealobj(x):
    """Whether `x` has a non-complex dtype, as `np.isrealobj` (also of a Tensor)."""
    return not iscomplexobj(x)
norm = linalg.norm


class _IntegerType(type):
    """The metaclass of the integer types below: their instances and subclasses are NumPy's type's."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.numpy_type)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, cls.numpy_type)


def _integer_type(numpy_type):
    """NumPy's integer scalar type (a dtype, a scalar constructor) whose call on a Tensor casts it, as
    autograd's: `np.int64(x[:, -1])` inside `dg.grad` gives integer indices (no gradient) instead of
    refusing to turn a traced value into a NumPy scalar."""

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):
            return astype(args[0], numpy_type)
        return numpy_type(*args, **kwargs)

    return _IntegerType(numpy_type.__name__, (numpy_type,), {"__new__": __new__, "numpy_type": numpy_type,
                                                            "__module__": __name__})


int8, int16, int32, int64, uint8 = (_integer_type(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64, _np.uint8))


def _has_tensor(obj):
    return isinstance(obj, Tensor) or (isinstance(obj, (list, tuple))
                                       and _builtins.any(_has_tensor(item) for item in obj))


def array(obj, dtype=None):
    """`np.array`, differentiable: nested lists holding Tensors are stacked into one.

    >>> import dagrad as dg
    >>> dg.grad(lambda x: sum(array([x * 2.0, x ** 2])))(3.0)
    np.float64(8.0)
    """
    if isinstance(obj, (list, tuple)) and _has_tensor(obj):
        obj = stack([array(item) for item in obj])
    if isinstance(obj, Tensor):
        return obj if dtype is None else astype(obj, dtype)
    return _np.array(obj, dtype=dtype)


def asarray(obj, dtype=None):
    """`np.asarray`: Tensors pass through (no copy), lists holding Tensors are stacked."""
    if isinstance(obj, Tensor) or (isinstance(obj, (list, tuple)) and _has_tensor(obj)):
        return array(obj, dtype)
    return _np.asarray(obj, dtype=dtype)


def copy(x):
    """A copy of `x`; on Tensors a new node whose gradient passes through."""
    return positive(x) if isinstance(x, Tensor) else _np.copy(x)


def shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) else _np.shape(x)


def ndim(x):
    return x.ndim if isinstance(x, Tensor) else _np.ndim(x)


def size(x, axis=None):
    """The number of elements (along `axis`, an integer or a tuple of them), as `np.size`.

    >>> size(_np.ones((2, 3, 4)), axis=(0, 2))
    8
    """
    if axis is None:
        return x.size if isinstance(x, Tensor) else _np.size(x)
    dims = shape(x)
    return _math.prod(dims[a] for a in normalize_axis(axis, len(dims), "size", x))


# -- arrays of one value: NumPy's own for plain values, differentiable for a Tensor fill value
def _checked_shape(shape, op, source):
    """`shape` as a tuple of ints (None for a size a static graph knows only when it runs, when `source`
    has it), checked as dagrad checks sizes: floats and bools are a TypeError, negative sizes a ValueError."""
    dims = tuple(shape) if is_sequence(shape) else (shape,)
    out = []
    for n in dims:
        if n is None and source is not None:
            out.append(None)
            continue
        n = as_index(n, op, "size", within=dims)
        if n < 0:
            raise user_error(ValueError, op, f"negative size {n} in shape {dims!r}")
        out.append(n)
    return tuple(out)


def _filled(shape, fill_value, dtype, order, device, like, op, numpy_function, *fill):
    """`numpy_function(shape, *fill, ...)`, or for a Tensor fill value (or a static graph's shape with
    unknown sizes) a Tensor: the fill value broadcast to `shape` (and cast to `dtype` when given)."""
    source = shape_source(shape)
    checked = _checked_shape(shape, op, source)
    if not isinstance(fill_value, Tensor) and source is None:
        try:
            value = numpy_function(checked, *fill, dtype=dtype, order=order, device=device)
        except (TypeError, ValueError) as err:
            raise op_error(op, (), err) from None
        return _leaf(value, False) if isinstance(like, Tensor) else value  # np.zeros(..., like=t)
    if not isinstance(fill_value, Tensor):
        try:
            fill_value = _np.asarray(fill_value, dtype=dtype)
        except (TypeError, ValueError) as err:
            raise op_error(op, (), err) from None
    fill_shape = _shape_of(fill_value)
    if len(fill_shape) > len(checked) or _builtins.any(
            n not in (1, m) and None not in (n, m) for n, m in zip(fill_shape[::-1], checked[::-1])):
        raise user_error(ValueError, op, f"the fill value of shape {tuple(fill_shape)} cannot be broadcast to "
                         f"shape {tuple(checked)}", fill_value)
    out = broadcast_to(fill_value, shape if source is not None else checked)
    return out if dtype is None or _np.dtype(dtype) == _dtype_of(out) else astype(out, dtype)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """`np.full`; differentiable when `fill_value` is a Tensor (a recorded or traced value): then `fill_value`
    broadcast to `shape`, so `full(x.shape, g)` in a custom Function's backward differentiates again.

    >>> import dagrad as dg
    >>> full((2,), 1.5)
    array([1.5, 1.5])
    >>> float(dg.grad(lambda g: sum(full((3,), g) * _np.array([1.0, 2.0, 3.0])))(2.0))
    6.0
    """
    return _filled(shape, fill_value, dtype, order, device, like, "full", _np.full, fill_value)


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    """`np.zeros`; a static graph's shape with unknown sizes (`x.shape` of a placeholder) gives a graph node.

    >>> zeros((2, 3)).shape
    (2, 3)
    """
    return _filled(shape, 0, dtype, order, device, like, "zeros", _np.zeros)


def ones(shape, dtype=float, order="C", *, device=None, like=None):
    """`np.ones`; a static graph's shape with unknown sizes (`x.shape` of a placeholder) gives a graph node.

    >>> ones(2, dtype=int)
    array([1, 1])
    """
    return _filled(shape, 1, dtype, order, device, like, "ones", _np.ones)


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """`np.empty`; a static graph's shape with unknown sizes gives a graph node (of zeros).

    >>> empty((2, 0)).shape
    (2, 0)
    """
    return _filled(shape, 0, dtype, order, device, like, "empty", _np.empty)


# -- joining and at-least-n-d: NumPy's own for plain values, composed from reshape and concatenate for Tensors
def _at_least(x, ndim, op):
    """One array with at least `ndim` dimensions, placed as `np.atleast_{ndim}d` places the existing ones."""
    if not isinstance(x, Tensor):
        return getattr(_np, op)(x)
    have = x.ndim
    if have >= ndim:
        return x
    if have == 0:
        return reshape(x, (1,) * ndim)
    if ndim == 2:
        return expand_dims(x, 0)
    return expand_dims(x, (0, 2)) if have == 1 else expand_dims(x, 2)  # atleast_3d: (N,) -> (1, N, 1)


def _at_least_all(arys, ndim, op):
    out = tuple(_at_least(x, ndim, op) for x in arys)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """`np.atleast_1d`, differentiable: a 0-d Tensor becomes shape (1,).

    >>> atleast_1d(_np.float64(2.0))
    array([2.])
    """
    return _at_least_all(arys, 1, "atleast_1d")


def atleast_2d(*arys):
    """`np.atleast_2d`, differentiable: a Tensor of shape (N,) becomes (1, N).

    >>> atleast_2d(_np.ones(3)).shape
    (1, 3)
    """
    return _at_least_all(arys, 2, "atleast_2d")


def atleast_3d(*arys):
    """`np.atleast_3d`, differentiable: (N,) becomes (1, N, 1) and (M, N) becomes (M, N, 1).

    >>> atleast_3d(_np.ones((2, 3))).shape
    (2, 3, 1)
    """
    return _at_least_all(arys, 3, "atleast_3d")


def _joined(op, tup, dtype, casting, ndim, axis_of):
    """np.<op>(tup) for plain arrays; for Tensors, concatenate of the at-least-`ndim`-d arrays along
    `axis_of(arrays)`, cast to `dtype` under NumPy's `casting` rule."""
    if isinstance(tup, Tensor):
        tup = list(tup)
    if not isinstance(tup, (list, tuple)) or not _has_tensor(tup):
        options = {} if dtype is None and casting == "same_kind" else {"dtype": dtype, "casting": casting}
        try:
            return getattr(_np, op)(tup, **options)
        except (TypeError, ValueError) as err:
            raise op_error(op, (), err) from None
    if not tup:
        raise user_error(ValueError, op, "need at least one array to concatenate")
    arrays = [x if isinstance(x, Tensor) else _np.asarray(x) for x in tup]
    arrays = [_at_least(x, ndim, f"atleast_{ndim}d") for x in arrays]
    out = concatenate(arrays, axis=axis_of(arrays))
    if dtype is None:
        return out
    if not _np.can_cast(_dtype_of(out), dtype, casting):
        raise user_error(TypeError, op, f"cannot cast array data from dtype {_dtype_of(out)} to "
                         f"{_np.dtype(dtype)} according to the rule {casting!r}", *arrays)
    return astype(out, dtype)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """`np.vstack`, differentiable: joins arrays row-wise (1-D ones as rows).

    >>> vstack([_np.ones(2), _np.zeros(2)])
    array([[1., 1.],
           [0., 0.]])
    """
    return _joined("vstack", tup, dtype, casting, 2, lambda arrays: 0)


def hstack(tup, *, dtype=None, casting="same_kind"):
    """`np.hstack`, differentiable: joins arrays column-wise (1-D ones end to end).

    >>> hstack([_np.ones(2), _np.zeros(1)])
    array([1., 1., 0.])
    """
    return _joined("hstack", tup, dtype, casting, 1, lambda arrays: 0 if _shape_of(arrays[0]).__len__() == 1 else 1)


def dstack(tup):
    """`np.dstack`, differentiable: joins arrays along the third axis.

    >>> dstack([_np.ones((2, 2)), _np.zeros((2, 2))]).shape
    (2, 2, 2)
    """
    return _joined("dstack", tup, None, "same_kind", 3, lambda arrays: 2)


def _as_column(x):
    if isinstance(x, Tensor) and x.ndim < 2:  # NumPy: a 0-d value is a 1x1 array, a 1-D one a column
        return reshape(x, (-1, 1))
    return x


def column_stack(tup):
    """`np.column_stack`, differentiable: 1-D arrays become columns of a 2-D array.

    >>> column_stack([_np.array([1.0, 2.0]), _np.array([3.0, 4.0])])
    array([[1., 3.],
           [2., 4.]])
    """
    if isinstance(tup, Tensor):  # NumPy iterates over an array's rows (NumPy's own would call back here)
        tup = [tup[i] for i in range(_shape_of(tup)[0])]
    if isinstance(tup, (list, tuple)) and _has_tensor(tup):
        arrays = [_as_column(x if isinstance(x, Tensor) else _np.asarray(x)) for x in tup]
        arrays = [_np.asarray(x).reshape(-1, 1) if not isinstance(x, Tensor) and _np.ndim(x) < 2 else x
                  for x in arrays]
        if not arrays:
            raise user_error(ValueError, "column_stack", "need at least one array to concatenate")
        return concatenate(arrays, axis=1)
    try:
        return _np.column_stack(tup)
    except (TypeError, ValueError) as err:
        raise op_error("column_stack", (), err) from None


if hasattr(_np, "row_stack"):  # NumPy 2 deprecates it, as an alias of vstack
    row_stack = vstack


def empty_like(prototype, dtype=None):
    """`np.empty_like`: an array of the prototype's shape and dtype whose values are unspecified (dagrad
    gives zeros, so it works on Tensors and static-graph nodes as `zeros_like` does).

    >>> empty_like(_np.ones((2, 3))).shape
    (2, 3)
    """
    return zeros_like(prototype, dtype)


# more of NumPy's functions (issue 16): NumPy's own on plain arrays, dagrad's ops on Tensors
from ..numpy_more import (  # noqa: E402  (after the names numpy_more's functions do not shadow here)
    all,
    any,
    append,
    around,
    array_split,
    average,
    block,
    broadcast_arrays,
    c_,
    cbrt,
    convolve,
    corrcoef,
    correlate,
    cov,
    cross,
    cumprod,
    cumulative_prod,
    cumulative_sum,
    deg2rad,
    degrees,
    delete,
    diagflat,
    diff,
    divmod,
    dsplit,
    ediff1d,
    fabs,
    fix,
    fliplr,
    flipud,
    float_power,
    floor_divide,
    fmod,
    gradient,
    heaviside,
    hsplit,
    insert,
    interp,
    isinf,
    isneginf,
    isposinf,
    kron,
    linspace,
    logical_xor,
    make_diagonal,
    matrix_transpose,
    matvec,
    median,
    meshgrid,
    modf,
    nan_to_num,
    nanargmax,
    nanargmin,
    nancumprod,
    nancumsum,
    nanmax,
    nanmean,
    nanmedian,
    nanmin,
    nanpercentile,
    nanprod,
    nanquantile,
    nanstd,
    nansum,
    nanvar,
    percentile,
    polyval,
    ptp,
    quantile,
    r_,
    rad2deg,
    radians,
    real_if_close,
    rint,
    roll,
    rollaxis,
    rot90,
    select,
    sinc,
    trapezoid,
    tri,
    trunc,
    unstack,
    unwrap,
    vander,
    vecdot,
    vecmat,
    vsplit,
    where,
)
