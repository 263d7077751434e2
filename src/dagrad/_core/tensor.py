"""The eager Tensor, the forward-mode Dual, grad mode and the `tensor` constructor.

A Tensor is also a node of the graph IR: `op`, `inputs` and `attrs` say how it was
computed (all None for a leaf); shape and dtype come from its value. A Tensor carries a
`_level`: 0 for eager tensors, a fresh number for each transform (`grad`, `jvp`, ...)
that boxes its inputs. An op dispatches on the highest level among its arguments, so
transforms nest without confusing their perturbations (as in HIPS autograd and JAX).
"""

from __future__ import annotations

import threading

import numpy as np

from .errors import user_line

# eager reverse mode, set by .autodiff (which imports this module, so it cannot be imported here)
_backward = None

__all__ = ["Tensor", "Dual", "tensor", "no_grad", "enable_grad", "is_grad_enabled"]


class _GradMode(threading.local):
    enabled = True  # class default: every new thread starts with grad mode on


_grad_mode = _GradMode()


def is_grad_enabled() -> bool:
    """Whether eager operations currently record the graph."""
    return _grad_mode.enabled


class _SetGradMode:
    """Context manager and decorator that sets grad mode, restoring it on exit."""

    _mode = True

    def __enter__(self):
        self._previous = _grad_mode.enabled
        _grad_mode.enabled = self._mode

    def __exit__(self, *exc):
        _grad_mode.enabled = self._previous

    def __call__(self, func):
        import functools

        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            previous = _grad_mode.enabled
            _grad_mode.enabled = mode
            try:
                return func(*args, **kwargs)
            finally:
                _grad_mode.enabled = previous

        return wrapper


class no_grad(_SetGradMode):
    """Operations inside do not record the graph (like `torch.no_grad`).

    >>> x = tensor([1.0, 2.0], requires_grad=True)
    >>> with no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    _mode = False


class enable_grad(_SetGradMode):
    """Turns recording back on inside a `no_grad` block."""

    _mode = True


_new = object.__new__


class Tensor:
    """An n-dimensional array that records how it was computed.

    >>> x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> y = (x @ x.T).sum()
    >>> y.backward()
    >>> x.grad
    tensor([[ 8., 12.],
            [ 8., 12.]])
    """

    # _code/_line: where in the user's code a recorded node was made (see op._result)
    __slots__ = ("_value", "op", "inputs", "attrs", "_requires_grad", "grad", "_level", "_seq", "_code", "_line",
                 "__weakref__")
    __array_priority__ = 1000
    _symbolic = False  # True for the nodes of static graphs, which have no value

    def __init__(self, data, dtype=None, requires_grad=False):
        value = _as_array(data, dtype, "dg.Tensor")
        if requires_grad:
            _check_differentiable_dtype(value.dtype, "dg.Tensor")
        self._value = value
        self.op = self.inputs = self.attrs = self.grad = None
        self._requires_grad = bool(requires_grad)
        self._level = 0
        self._seq = 0

    # -- identity: Tensors are graph nodes, hashed by identity like torch.Tensor
    __hash__ = object.__hash__

    # -- the array's facts
    @property
    def value(self):
        """The underlying NumPy array itself, not a copy (for a value traced by a transform, the
        value one level down). Use `.numpy()` for a plain array in every case."""
        return self._value

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._value.shape, dtype=np.int64))

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if flag and self.op is not None:
            raise RuntimeError("requires_grad can only be set on a leaf tensor; use .detach() first")
        if flag:
            _check_differentiable_dtype(self.dtype, "Tensor.requires_grad")
        self._requires_grad = bool(flag)

    def requires_grad_(self, flag=True):
        """Sets `requires_grad` in place and returns the tensor."""
        self.requires_grad = flag
        return self

    @property
    def is_leaf(self) -> bool:
        return self.op is None

    # -- conversions
    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (no graph)."""
        value = self._value
        while isinstance(value, Tensor):
            value = value._value
        return np.asarray(value)

    def item(self):
        """The single value as a Python number."""
        arr = self.numpy()
        if arr.size != 1:
            raise ValueError(f"item(): only a one-element tensor converts to a Python scalar, got shape {arr.shape}")
        return arr.item()

    def tolist(self):
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        if self._level:
            # a traced value turned into a plain array would silently lose its derivative
            raise TypeError(
                "a value traced by a transform (dg.grad, dg.jvp, ...) cannot become a NumPy array: its "
                "derivative would be lost. Use dagrad.numpy functions or Tensor methods instead of NumPy's "
                f"(e.g. dnp.dot(a, x), not a.dot(x) with a NumPy a) at {user_line()}"
            )
        arr = self.numpy()
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def __bool__(self):
        arr = self.numpy()
        if arr.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {arr.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(arr)

    def __complex__(self):
        return complex(self.item())

    # -- autograd
    def detach(self) -> Tensor:
        """A new leaf tensor sharing the values, cut from the graph."""
        return _leaf(self.numpy(), False)

    def zero_grad(self, set_to_none: bool = True):
        """Clears `.grad` (to None, or to zeros with `set_to_none=False`)."""
        if set_to_none or self.grad is None:
            self.grad = None
        else:
            self.grad = _leaf(np.zeros_like(self.grad.numpy()), False)

    def backward(self, grad=None, retain_graph=None, create_graph=False):
        """Accumulates d(self)/d(leaf) into every leaf's `.grad` (PyTorch semantics).

        >>> x = tensor(3.0, requires_grad=True)
        >>> (x * x).backward()
        >>> x.grad
        tensor(6.)
        """
        _backward(self, grad, retain_graph, create_graph)

    def __repr__(self):
        arr = np.asarray(self.numpy())
        body = np.array2string(arr, separator=", ", prefix="tensor(")
        extras = []
        if arr.dtype not in (np.float64, np.int64, np.bool_):
            extras.append(f"dtype={arr.dtype}")
        if self.op is not None and self._requires_grad:
            extras.append(f"op={self.op.name}")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        if self._level:
            extras.append(f"level={self._level}")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __reduce__(self):
        raise TypeError("dagrad tensors are not pickled; use dg.save / dg.load or .numpy()")


class Dual(Tensor):
    """A box of forward mode: a primal value and its tangent at one transform level."""

    __slots__ = ("_tangent",)

    def __repr__(self):
        return f"Dual(primal={self._value!r}, tangent={self._tangent!r}, level={self._level})"



_SUPPORTED_KINDS = "biuf"


def _as_array(data, dtype, where):
    if isinstance(data, Tensor):
        data = data.numpy()
    try:
        value = np.array(data, dtype=dtype)
    except (ValueError, TypeError) as err:
        message = f"{where}: cannot make a tensor of {type(data).__name__} data ({err}) at {user_line()}"
        raise type(err)(message) from None
    if value.dtype.kind not in _SUPPORTED_KINDS:
        raise TypeError(
            f"{where}: unsupported dtype {value.dtype} (dagrad holds bool, integer and float data) at {user_line()}"
        )
    return value


def _check_differentiable_dtype(dtype, where):
    if np.dtype(dtype).kind != "f":
        raise TypeError(
            f"{where}: only floating-point tensors can require gradients, got dtype {dtype} at {user_line()}"
        )


def is_symbolic(value):
    """Whether `value` is a static graph's node, or a transform's box around one (no values yet)."""
    while isinstance(value, Tensor):
        if value._symbolic:
            return True
        value = value._value
    return False


def _leaf(value, requires_grad, level=0, cls=None):
    """A leaf Tensor (or `cls`) around an existing value, without copying or checks (internal)."""
    t = _new(cls or Tensor)
    t._value = value
    t.op = t.inputs = t.attrs = t.grad = None
    t._requires_grad = requires_grad
    t._level = level
    t._seq = 0
    return t


def tensor(data, dtype=None, requires_grad=False) -> Tensor:
    """Makes a leaf Tensor from a list, a number or an array (the data is copied).

    dtype follows NumPy: Python floats give float64, a float32 array stays float32.

    >>> tensor([1.0, 2.0], requires_grad=True)
    tensor([1., 2.], requires_grad=True)
    """
    value = _as_array(data, dtype, "dg.tensor")
    if requires_grad:
        _check_differentiable_dtype(value.dtype, "dg.tensor")
    return _leaf(value, bool(requires_grad))
