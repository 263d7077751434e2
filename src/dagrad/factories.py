"""Factories, as PyTorch's: `zeros ones full empty arange linspace eye rand randn randint` and their `_like`
forms, each with `dtype=` and `requires_grad=`, returning eager Tensors.

Sizes are given as PyTorch takes them, `dg.zeros(2, 3)` or `dg.zeros((2, 3))`. Default dtypes follow
NumPy, not PyTorch (dagrad's rule is NumPy first): float64 for `zeros`, `rand`, `linspace`, ..., the
fill value's dtype for `full`, int64 for `arange` of integers and for `randint`. `requires_grad=True`
needs a floating-point dtype (a TypeError otherwise, as `dg.tensor`). The random ones draw from
dagrad's default generator (one per thread, the one `dg.nn.init` and the layers use), reseeded by
`dg.manual_seed(n)`, or from `generator=` (an `np.random.Generator`, or an integer seed).

`zeros_like`, `ones_like`, `full_like` and `empty_like` are the ops of `dagrad.numpy` (they work on
static-graph nodes and traced values too, and give a NumPy array for a NumPy array) with a
`requires_grad=` added, which makes an eager leaf.

>>> import dagrad as dg
>>> dg.zeros(2, 3).shape, dg.zeros((2, 3)).dtype
((2, 3), dtype('float64'))
>>> _ = dg.manual_seed(0); a = dg.rand(3)
>>> _ = dg.manual_seed(0); bool((a.numpy() == dg.rand(3).numpy()).all())
True
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ._core.dtypes import default_float, set_default_float
from ._core.errors import user_error
from ._core.ir import number_needed
from ._core.random import as_generator, manual_seed
from ._core.shapes import as_index, is_sequence
from ._core.shapes import dtype_of as _dtype_of
from ._core.shapes import shape_of as _shape_of
from ._core.tensor import Tensor, _check_differentiable_dtype, _leaf, is_symbolic
from .ops import elementwise as _ew

__all__ = [
    "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint",
    "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like", "manual_seed",
    "set_default_dtype", "get_default_dtype", "set_default_device", "get_default_device",
]


# -- arguments
def _device(device, where):
    """PyTorch's `device=`: dagrad computes on the CPU (NumPy) only."""
    if device is not None and str(device).split(":")[0] != "cpu":
        raise user_error(ValueError, where, f"dagrad computes on the CPU only, got device={device!r}")


def set_default_device(device):
    """`torch.set_default_device`: dagrad's factories make NumPy arrays, on the CPU, so "cpu" (or None) is the
    one default they take. "cuda" needs CuPy, an optional extra (an ImportError says how to install it);
    with CuPy, GPU tensors are made from CuPy arrays, `dg.tensor(cupy.asarray(x))` (docs/backends.md), and
    a GPU as the factories' default is refused.

    >>> set_default_device("cpu"); get_default_device()
    'cpu'
    """
    name = "cpu" if device is None else str(device)
    kind = name.split(":")[0]
    if kind == "cuda":
        if importlib.util.find_spec("cupy") is None:
            raise user_error(ImportError, "set_default_device", f"device {name!r} needs CuPy, an optional extra: "
                             "pip install 'dagrad[cupy]'")
        raise user_error(ValueError, "set_default_device", f"dagrad's factories make NumPy arrays, on the CPU, so "
                         f"{name!r} cannot be their default; make GPU tensors from CuPy arrays, "
                         "dg.tensor(cupy.asarray(x)) (docs/backends.md, 'CuPy')")
    _device(name, "set_default_device")


def get_default_device():
    """`torch.get_default_device`: where the factories make tensors, "cpu"."""
    return "cpu"


def set_default_dtype(dtype):
    """`torch.set_default_dtype`: the dtype of the floats the factories make (`dg.zeros`, `dg.rand`, ...,
    `dg.full` and `dg.arange` of Python floats) and of `dg.tensor` of Python floats (complex numbers take
    the matching complex dtype), float64 until changed (NumPy's, where PyTorch's is float32). NumPy arrays
    and the functions of `dagrad.numpy` keep NumPy's dtypes. Process-wide, as PyTorch's.

    >>> import dagrad as dg, numpy as np
    >>> dg.set_default_dtype(dg.float32)
    >>> dg.tensor([1.5]).dtype, dg.zeros(2).dtype, dg.tensor(np.zeros(2)).dtype
    (dtype('float32'), dtype('float32'), dtype('float64'))
    >>> dg.set_default_dtype(dg.float64); dg.get_default_dtype()
    dtype('float64')
    """
    dtype = _dtype(dtype, "set_default_dtype")
    if dtype.kind != "f":
        raise user_error(TypeError, "set_default_dtype", f"only floating-point types are supported as the default "
                         f"type, got {dtype}")
    set_default_float(dtype)


def get_default_dtype():
    """`torch.get_default_dtype`: the dtype `set_default_dtype` set (float64 until then)."""
    return default_float()


def device(name="cpu"):
    """`torch.device`: dagrad has one device, the CPU; any other is an error.

    >>> device("cpu")
    'cpu'
    """
    _device(name, "dg.device")
    return "cpu"


def _dtype(dtype, where, default=None):
    """`dtype` as an np.dtype of bool, integer, float or complex data (`default` when None)."""
    if dtype is None:
        return None if default is None else np.dtype(default)
    try:
        dtype = np.dtype(dtype)
    except TypeError as err:
        raise user_error(TypeError, where, f"{dtype!r} is not a dtype ({err})") from None
    if dtype.kind not in "biufc":
        raise user_error(TypeError, where, f"unsupported dtype {dtype} (dagrad holds bool, integer, "
                         "floating-point and complex data)")
    return dtype


def _size(size, where):
    """A PyTorch size, `(2, 3)` given as `2, 3` or as one sequence, as a tuple of Python ints."""
    if len(size) == 1 and is_sequence(size[0]):
        size = tuple(size[0])
    dims = []
    for n in size:
        n = as_index(n, where, "size", within=tuple(size))
        if n < 0:
            raise user_error(ValueError, where, f"negative size {n} in {tuple(size)!r} (sizes must be >= 0)")
        dims.append(n)
    return tuple(dims)


def _shape(args, where):
    if not args:
        raise user_error(TypeError, where, "missing the size (give it as dg.zeros(2, 3) or dg.zeros((2, 3)); "
                         "() for a 0-d tensor)")
    return _size(args, where)


def _make(value, requires_grad, where):
    """The eager leaf around a freshly made array."""
    if requires_grad:
        _check_differentiable_dtype(value.dtype, where)
    return _leaf(value, bool(requires_grad))


def _real(x, what, where):
    """A NumPy scalar for a start, end, step or fill value (a 0-d eager Tensor or array gives its value)."""
    if isinstance(x, Tensor):
        if is_symbolic(x) or x._level:
            raise number_needed(x, what, where, x)
        x = x.numpy()
    value = np.asarray(x)
    if value.ndim or value.dtype.kind not in "biuf":
        raise user_error(TypeError, where, f"{what} must be a real number, got {x!r}")
    return value[()]


def _generator(generator, where):
    if generator is None or isinstance(generator, (int, np.integer, np.random.Generator)) and not isinstance(
            generator, bool):
        return as_generator(generator)
    raise user_error(TypeError, where, f"generator must be an np.random.Generator or an integer seed, got "
                     f"{type(generator).__name__}")


def _float_dtype(dtype, where, hint="use dg.randint for integers"):
    dtype = _dtype(dtype, where, default_float())
    if dtype.kind != "f":
        raise user_error(TypeError, where, f"dtype {dtype} is not a floating-point dtype ({where} draws "
                         f"floating-point values; {hint})")
    return dtype


# -- constant values
def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros (float64 unless `dtype` says otherwise), as `torch.zeros`.

    >>> zeros(2, 3, requires_grad=True).shape
    (2, 3)
    """
    _device(device, "zeros")
    dtype = _dtype(dtype, "zeros", default_float())
    return _make(np.zeros(_shape(size, "zeros"), dtype), requires_grad, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones (float64 unless `dtype` says otherwise), as `torch.ones`.

    >>> ones(3, dtype="int32")
    tensor([1, 1, 1], dtype=int32)
    """
    _device(device, "ones")
    dtype = _dtype(dtype, "ones", default_float())
    return _make(np.ones(_shape(size, "ones"), dtype), requires_grad, "ones")


def empty(*size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor (its values are whatever memory held), as `torch.empty` and `np.empty`.

    >>> empty(2, 2).shape
    (2, 2)
    """
    _device(device, "empty")
    dtype = _dtype(dtype, "empty", default_float())
    return _make(np.empty(_shape(size, "empty"), dtype), requires_grad, "empty")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of `fill_value` (of the fill value's dtype unless `dtype` says otherwise, as `np.full`).

    `size` is an integer or a sequence of them.

    >>> full((2,), 1.5), full(2, 7).dtype
    (tensor([1.5, 1.5]), dtype('int64'))
    """
    _device(device, "full")
    shape = _size((size,), "full")
    dtype = _dtype(dtype, "full")
    fill = _real(fill_value, "the fill value", "full")
    if dtype is None and isinstance(fill_value, float):  # a Python float: the default dtype, as torch.full
        dtype = default_float()
    return _make(np.full(shape, fill, dtype), requires_grad, "full")


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Evenly spaced values in `[start, end)`, as `torch.arange`; the dtype is NumPy's (int64 for integers,
    float64 if any of start, end, step is a float).

    >>> arange(4), arange(0, 1, 0.25)
    (tensor([0, 1, 2, 3]), tensor([0.  , 0.25, 0.5 , 0.75]))
    """
    _device(device, "arange")
    if end is None:
        start, end = 0, start
    given = (start, end, step)
    start, end, step = (_real(v, what, "arange") for v, what in ((start, "start"), (end, "end"), (step, "step")))
    if step == 0:
        raise user_error(ValueError, "arange", "step must be nonzero")
    for v, what in ((start, "start"), (end, "end"), (step, "step")):
        if not np.isfinite(v):
            raise user_error(ValueError, "arange", f"{what} must be finite, got {v!r}")
    dtype = _dtype(dtype, "arange")
    if dtype is None and any(isinstance(v, float) for v in given):  # Python floats: the default dtype, as torch
        dtype = default_float()
    value = np.arange(start, end, step, dtype=dtype)
    return _make(value, requires_grad, "arange")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """`steps` evenly spaced values from `start` to `end` inclusive, as `torch.linspace` (float64 by default).

    >>> linspace(0, 1, 5)
    tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    _device(device, "linspace")
    start, end = _real(start, "start", "linspace"), _real(end, "end", "linspace")
    steps = as_index(steps, "linspace", "steps")
    if steps < 0:
        raise user_error(ValueError, "linspace", f"steps must be >= 0, got {steps}")
    value = np.linspace(start, end, steps, dtype=_dtype(dtype, "linspace", default_float()))
    return _make(value, requires_grad, "linspace")


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The `n` x `m` identity matrix (`m` = `n` unless given), as `torch.eye` (float64 by default).

    >>> eye(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    _device(device, "eye")
    dims = _size((n,) if m is None else (n, m), "eye")
    value = np.eye(dims[0], dims[-1], dtype=_dtype(dtype, "eye", default_float()))
    return _make(value, requires_grad, "eye")


# -- random values
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform random values in [0, 1), as `torch.rand` (float64 by default).

    >>> rand(2, 3, generator=0).shape
    (2, 3)
    """
    _device(device, "rand")
    shape = _shape(size, "rand")
    dtype = _float_dtype(dtype, "rand")
    draw = _generator(generator, "rand").random(shape, dtype=np.float32 if dtype == np.float32 else np.float64)
    return _make(draw.astype(dtype, copy=False), requires_grad, "rand")


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal random values, as `torch.randn` (float64 by default).

    >>> round(float(randn(10000, generator=0).numpy().std()), 1)
    1.0
    """
    _device(device, "randn")
    shape = _shape(size, "randn")
    dtype = _float_dtype(dtype, "randn")
    gen = _generator(generator, "randn")
    draw = gen.standard_normal(shape, dtype=np.float32 if dtype == np.float32 else np.float64)
    return _make(draw.astype(dtype, copy=False), requires_grad, "randn")


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Random integers in `[low, high)`, as `torch.randint`: `randint(high, size)` or
    `randint(low, high, size)`; int64 unless `dtype` says otherwise.

    >>> randint(3, 10, (4,), generator=0).dtype
    dtype('int64')
    """
    _device(device, "randint")
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=...)
        low, high = 0, low
    if size is None or high is None:
        raise user_error(TypeError, "randint", "needs high and size: randint(high, size) or randint(low, high, size)")
    low, high = as_index(low, "randint", "low"), as_index(high, "randint", "high")
    shape = _size((size,), "randint")
    if low >= high:
        raise user_error(ValueError, "randint", f"low ({low}) must be less than high ({high})")
    dtype = _dtype(dtype, "randint", np.int64)
    if dtype.kind in "iu" and (low < np.iinfo(dtype).min or high - 1 > np.iinfo(dtype).max):
        raise user_error(ValueError, "randint", f"[{low}, {high}) does not fit in dtype {dtype}")
    draw = _generator(generator, "randint").integers(low, high, shape, dtype=np.int64)
    return _make(draw.astype(dtype, copy=False), requires_grad, "randint")


# -- shaped like another
def _eager_leaf(x, fill_value, dtype, where, requires_grad):
    """`requires_grad=True`: an eager leaf of x's shape, whatever x is (an eager or traced value)."""
    if is_symbolic(x):
        raise user_error(TypeError, where, "requires_grad=True makes an eager tensor, but this is a static graph's "
                         "node, which has no values (use dg.Variable for a trainable value of a graph)", x)
    shape = _shape_of(x) if isinstance(x, Tensor) else np.shape(x)  # a traced value's shape is known too
    return _make(np.full(shape, fill_value, dtype), True, where)


def full_like(x, fill_value, dtype=None, *, device=None, requires_grad=False):
    """`fill_value` in x's shape (and dtype unless given), as `np.full_like` / `torch.full_like`.

    As `dagrad.numpy.full_like` (a static graph's node, a traced value, a NumPy array each give their
    own kind), and with `requires_grad=True` an eager leaf that requires grad.

    >>> full_like(zeros(2), 3.0, requires_grad=True)
    tensor([3., 3.], requires_grad=True)
    """
    _device(device, "full_like")
    out = _ew.full_like(x, fill_value, dtype)  # checks the fill value and the dtype
    return _eager_leaf(x, fill_value, _dtype_of(out), "full_like", True) if requires_grad else out


def zeros_like(x, dtype=None, *, device=None, requires_grad=False):
    """Zeros in x's shape and dtype, as `np.zeros_like` / `torch.zeros_like` (see `full_like`).

    >>> zeros_like(ones(2, dtype="int64"))
    tensor([0, 0])
    """
    _device(device, "zeros_like")
    out = _ew.zeros_like(x, dtype)
    return _eager_leaf(x, 0, _dtype_of(out), "zeros_like", True) if requires_grad else out


def ones_like(x, dtype=None, *, device=None, requires_grad=False):
    """Ones in x's shape and dtype, as `np.ones_like` / `torch.ones_like` (see `full_like`).

    >>> ones_like(zeros(2), requires_grad=True)
    tensor([1., 1.], requires_grad=True)
    """
    _device(device, "ones_like")
    out = _ew.ones_like(x, dtype)
    return _eager_leaf(x, 1, _dtype_of(out), "ones_like", True) if requires_grad else out


def empty_like(x, dtype=None, *, device=None, requires_grad=False):
    """An array of x's shape and dtype whose values are unspecified, as `torch.empty_like` (dagrad gives
    zeros, so it also works on static-graph nodes, as `zeros_like`).

    >>> empty_like(zeros(2, 3)).shape
    (2, 3)
    """
    _device(device, "empty_like")
    out = _ew.zeros_like(x, dtype)
    return _eager_leaf(x, 0, _dtype_of(out), "empty_like", True) if requires_grad else out


def _like_shape(x, dtype, where):
    """x's shape and the dtype to draw (x's unless given), for the random `_like` factories."""
    if is_symbolic(x):
        raise user_error(TypeError, where, "got a static graph's node: dagrad draws random values eagerly, so a "
                         "graph would hold one fixed draw (feed random values through a placeholder instead)", x)
    if not isinstance(x, Tensor):
        x = np.asarray(x)
    return tuple(_shape_of(x)), (_dtype(dtype, where) or np.dtype(_dtype_of(x)))


def rand_like(x, *, dtype=None, device=None, requires_grad=False, generator=None):
    """Uniform random values in [0, 1) in x's shape and (floating-point) dtype, as `torch.rand_like`.

    >>> rand_like(zeros(2, dtype="float32")).dtype
    dtype('float32')
    """
    _device(device, "rand_like")
    shape, dtype = _like_shape(x, dtype, "rand_like")
    dtype = _float_dtype(dtype, "rand_like", hint="pass a float dtype= for an integer input")
    return rand(shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def randn_like(x, *, dtype=None, device=None, requires_grad=False, generator=None):
    """Standard normal random values in x's shape and (floating-point) dtype, as `torch.randn_like`.

    >>> randn_like(zeros(3)).shape
    (3,)
    """
    _device(device, "randn_like")
    shape, dtype = _like_shape(x, dtype, "randn_like")
    dtype = _float_dtype(dtype, "randn_like", hint="pass a float dtype= for an integer input")
    return randn(shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def randint_like(x, low=0, high=None, *, dtype=None, device=None, requires_grad=False, generator=None):
    """Random integers in `[low, high)` in x's shape and dtype, as `torch.randint_like(x, high)` or
    `randint_like(x, low, high)`.

    >>> randint_like(zeros(3), 5).dtype
    dtype('float64')
    """
    _device(device, "randint_like")
    if high is None:
        low, high = 0, low
    shape, dtype = _like_shape(x, dtype, "randint_like")
    return randint(low, high, shape, generator=generator, dtype=dtype, requires_grad=requires_grad)
