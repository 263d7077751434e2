"""PyTorch's names for functions dagrad has under NumPy's (`dg.cat` is `dg.concatenate` with `dim=`), so
that code written for `torch` runs with the library renamed. Each is a thin spelling of a dagrad op;
where a name means something else in NumPy (`sort`, `max(x, dim)`), NumPy's meaning stays (see
docs/coming-from.md).

>>> import dagrad as dg
>>> dg.cat([dg.ones(2, 1), dg.zeros(2, 1)], dim=1).shape
(2, 2)
"""

from __future__ import annotations

import math

import numpy as np

from ._core.errors import user_error
from ._core.shapes import normalize_axis_index
from ._core.tensor import Tensor, _leaf, _SetGradMode, enable_grad, is_grad_enabled, no_grad, tensor
from .ops import elementwise as ew
from .ops import linalg, shape

__all__ = ["mm", "bmm", "cat", "clamp", "flatten", "unsqueeze", "t", "numel", "permute", "narrow", "chunk",
           "gather", "index_select", "masked_fill", "neg", "pow", "from_numpy", "as_tensor", "is_tensor",
           "set_grad_enabled", "inference_mode", "is_inference_mode_enabled", "allclose"]


def _ranked(name, rank, *xs):
    for x in xs:
        if np.ndim(x) != rank:
            raise user_error(ValueError, name, f"expects {rank}-D inputs, got shapes "
                             f"{', '.join(str(np.shape(a)) for a in xs)}", *xs)


def mm(a, b):
    """The matrix product of two 2-D tensors, as `torch.mm`."""
    _ranked("mm", 2, a, b)
    return linalg.matmul(a, b)


def bmm(a, b):
    """The batched matrix product of two 3-D tensors, as `torch.bmm`."""
    _ranked("bmm", 3, a, b)
    return linalg.matmul(a, b)


def cat(tensors, dim=0):
    """Joins tensors along `dim`, as `torch.cat` (`np.concatenate`)."""
    return shape.concatenate(tensors, axis=dim)


def clamp(x, min=None, max=None):  # noqa: A002  (PyTorch's names)
    """`x` limited to [min, max], as `torch.clamp` (`np.clip`)."""
    return ew.clip(x, min, max)


flatten, gather, neg, pow = shape.flatten, shape.gather, ew.negative, ew.power  # noqa: A001


def unsqueeze(x, dim):
    """`x` with a new size-1 axis at `dim`, as `torch.unsqueeze`."""
    return shape.expand_dims(x, dim)


def t(x):
    """The transpose of a tensor of at most 2 dimensions, as `torch.t`."""
    if np.ndim(x) > 2:
        raise user_error(ValueError, "t", f"expects a tensor with at most 2 dimensions, got {np.ndim(x)}", x)
    return shape.transpose(x)


def numel(x):
    """The number of elements, as `torch.numel`."""
    return math.prod(np.shape(x))


def permute(x, dims):
    """`x` with its axes in the order `dims`, as `torch.permute` (`np.transpose`)."""
    return shape.transpose(x, dims)


def narrow(x, dim, start, length):
    """`length` elements of `x` from `start` along `dim`, as `torch.narrow` (a view)."""
    dim = normalize_axis_index(dim, np.ndim(x), "narrow", x, name="dim")
    size = np.shape(x)[dim]
    start = start + size if start < 0 else start
    if not 0 <= start <= start + length <= size:
        raise user_error(IndexError, "narrow", f"start {start} and length {length} exceed dimension {dim} of size "
                         f"{size}", x)
    return shape.getitem(x, (slice(None),) * dim + (slice(start, start + length),))


def chunk(x, chunks, dim=0):
    """`x` split into `chunks` pieces along `dim`, each of ceil(size / chunks) elements but the last, as
    `torch.chunk` (which may give fewer pieces)."""
    if chunks <= 0:
        raise user_error(ValueError, "chunk", f"chunks must be positive, got {chunks}", x)
    dim = normalize_axis_index(dim, np.ndim(x), "chunk", x, name="dim")
    size = np.shape(x)[dim]
    step = max(-(-size // chunks), 1)
    return [narrow(x, dim, start, min(step, size - start)) for start in range(0, size, step)] or [x]


def index_select(x, dim, index):
    """Entries of `x` at the 1-D `index` along `dim`, as `torch.index_select` (`np.take`)."""
    if np.ndim(index) != 1:
        raise user_error(ValueError, "index_select", f"index must be 1-D, got shape {np.shape(index)}", x)
    return shape.take(x, index, axis=dim)


def masked_fill(x, mask, value):
    """`x` with `value` where `mask` is true, as `torch.masked_fill` (x's dtype kept)."""
    out = ew.where(mask, value, x)
    return out if out.dtype == x.dtype else ew.astype(out, x.dtype)


def from_numpy(array):
    """A tensor sharing `array`'s memory, as `torch.from_numpy` (writes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise user_error(TypeError, "from_numpy", f"expected a NumPy array, got {type(array).__name__}")
    if array.dtype.kind not in "biuf":
        raise user_error(TypeError, "from_numpy", f"unsupported dtype {array.dtype} (dagrad holds bool, integer and "
                         "real floating-point data)")
    return _leaf(array, False)


def as_tensor(data, dtype=None):
    """`data` as a tensor, sharing a NumPy array's memory when no conversion is needed, as
    `torch.as_tensor`."""
    if isinstance(data, Tensor) and (dtype is None or np.dtype(dtype) == data.dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or np.dtype(dtype) == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def is_tensor(x):
    """Whether `x` is a dagrad Tensor, as `torch.is_tensor`."""
    return isinstance(x, Tensor)


class set_grad_enabled:  # noqa: N801  (PyTorch's name)
    """Turns recording on or off, as `torch.set_grad_enabled`: at once when called, and back to the
    previous mode at the end of a `with` block; as a decorator (`@dg.set_grad_enabled(False)`), the mode
    comes back at once and each call of the function runs in `mode`.

    >>> import dagrad as dg
    >>> @dg.set_grad_enabled(False)
    ... def double(t):
    ...     return t * 2
    >>> double(dg.ones(2, requires_grad=True)).requires_grad, dg.is_grad_enabled()
    (False, True)
    """

    def __init__(self, mode):
        if not isinstance(mode, (bool, np.bool_)):
            raise user_error(TypeError, "set_grad_enabled", f"mode must be True or False, got {type(mode).__name__}")
        self._flag = bool(mode)
        self._mode = (enable_grad if mode else no_grad)()
        self._mode.__enter__()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)

    def __call__(self, func):
        self._mode.__exit__()
        return (enable_grad if self._flag else no_grad)()(func)


class inference_mode(_SetGradMode):  # noqa: N801  (PyTorch's name)
    """`torch.inference_mode(mode=True)`: as `dg.no_grad` (dagrad has no separate inference tensors: a
    tensor made inside may later be used where gradients are recorded); `mode=False` leaves grad mode as it
    is. A context manager and a decorator, with or without the call.

    >>> import dagrad as dg
    >>> with dg.inference_mode():
    ...     y = dg.ones(2, requires_grad=True) * 2
    >>> y.requires_grad
    False
    """

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        self._on = True if callable(mode) else bool(mode)
        return self(mode) if callable(mode) else self  # @dg.inference_mode, without the call: decorates

    def __enter__(self):
        self._previous = is_grad_enabled()
        if self._on:
            super().__enter__()

    def _fresh(self):
        return type(self)(self._on)

    _mode = False


def is_inference_mode_enabled():
    """Whether recording is off (`inference_mode` is `no_grad` in dagrad)."""
    return not is_grad_enabled()


def allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether all values are close, as `torch.allclose` / `np.allclose` (a Python bool, no gradient)."""
    values = [x.numpy() if isinstance(x, Tensor) else x for x in (a, b)]
    return bool(np.allclose(*values, rtol=rtol, atol=atol, equal_nan=equal_nan))

