"""The one binder: Tensor's operators and methods, `backward`, and NumPy interop (`__array_ufunc__`,
`__array_function__`, which dispatch to `dagrad.numpy`). Every method is one of the op library's
functions; this module sits above them so that it can name them all.
"""

from __future__ import annotations

import numpy as np

from . import _inplace, torch_names
from . import numpy as dnp
from ._core.autodiff import backward
from ._core.backends import has_unknown_size, unknown_size_error
from ._core.errors import user_error
from ._core.ir import Graph, Symbol, WeakScalar
from ._core.op import apply
from ._core.shapes import normalize_axis, normalize_axis_index
from ._core.tensor import Tensor
from .compile.interpret import FLOOR_DIVIDE
from .ops import elementwise as ew
from .ops import linalg, reduce
from .ops import nn as nn_ops
from .ops import shape as sh
from .static.session import evaluate, run_node
from .viz import repr_svg

_PYTHON_NUMBERS = (bool, int, float, complex)


def _reflected(function):
    def method(self, other):
        return function(other, self)

    method.__name__ = f"r{function.__name__}"
    return method


_BINARY = {
    "add": ew.add, "sub": ew.subtract, "mul": ew.multiply, "truediv": ew.divide, "pow": ew.power,
    "matmul": linalg.matmul, "mod": ew.mod, "and": ew.logical_and, "or": ew.logical_or,
}
for _name, _function in _BINARY.items():
    setattr(Tensor, f"__{_name}__", _function)
    setattr(Tensor, f"__r{_name}__", _reflected(_function))

# `//` and divmod are NumPy's (dagrad.numpy's floor_divide: its gradient is zero, as JAX's; divmod's remainder is
# differentiable as `%`, whose gradient in x is 1, as PyTorch's remainder)
for _name, _function in (("floordiv", dnp.floor_divide), ("divmod", dnp.divmod)):
    setattr(Tensor, f"__{_name}__", _function)
    setattr(Tensor, f"__r{_name}__", _reflected(_function))


def _weak_floordiv(reflected):
    """`//` of a weakly typed value (a Python number dg.compile traces) by Python numbers or weak values: one
    node computed with Python's `//` (compile/interpret.py), weak again, as eager code gives a Python number."""

    def method(self, other):
        a, b = (other, self) if reflected else (self, other)
        if not (type(other) in _PYTHON_NUMBERS or type(other) is WeakScalar):
            return dnp.floor_divide(a, b)
        out = apply(FLOOR_DIVIDE, (a, b))
        if type(out) is Symbol:
            out.__class__ = WeakScalar
        return out

    return method


WeakScalar.__floordiv__, WeakScalar.__rfloordiv__ = _weak_floordiv(False), _weak_floordiv(True)
WeakScalar.__divmod__ = lambda self, other: (self // other, self % other)
WeakScalar.__rdivmod__ = lambda self, other: (other // self, other % self)

_OPERATORS = {  # the operators without a reflected form
    "neg": ew.negative, "pos": ew.positive, "abs": ew.abs, "invert": ew.logical_not, "eq": ew.equal,
    "ne": ew.not_equal, "lt": ew.less, "le": ew.less_equal, "gt": ew.greater, "ge": ew.greater_equal,
    "getitem": sh.getitem,
}
for _name, _function in _OPERATORS.items():
    setattr(Tensor, f"__{_name}__", _function)

Tensor.backward = backward
Symbol.eval, Symbol.run = evaluate, run_node  # TF1's Tensor.eval and Operation.run, with the default session
# in place, with PyTorch's rules (see _inplace.py)
for _name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__setitem__", "add_", "sub_", "mul_",
              "div_", "fill_", "zero_", "copy_", "clamp_", "data"):
    setattr(Tensor, _name, getattr(_inplace, _name))
Tensor._repr_svg_ = Graph._repr_svg_ = repr_svg  # Jupyter's picture
Tensor.__round__ = lambda self, ndigits=None: ew.round(self, ndigits or 0)

# methods that ndarray has too, with the same signatures
for _function in (
    ew.exp, ew.log, ew.sqrt, ew.sin, ew.cos, ew.tanh, ew.sigmoid, ew.relu, ew.abs, ew.sign,
    ew.astype, ew.clip, ew.round,
    reduce.sum, reduce.mean, reduce.prod, reduce.max, reduce.min, reduce.var, reduce.std,
    reduce.cumsum, reduce.argmax, reduce.argmin,
    sh.squeeze, sh.swapaxes, sh.broadcast_to, sh.ravel, sh.repeat, sh.expand_dims,
    linalg.matmul, linalg.dot, linalg.trace, linalg.diagonal,
):
    setattr(Tensor, _function.__name__, _function)


def _reshape(self, *shape):
    return sh.reshape(self, shape[0] if len(shape) == 1 else shape)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return sh.transpose(self, axes or None)


Tensor.reshape = _reshape
Tensor.transpose = _transpose
Tensor.T = property(lambda self: sh.transpose(self))
Tensor.real = property(lambda self: ew.real(self))
Tensor.imag = property(lambda self: ew.imag(self))
Tensor.conj = Tensor.conjugate = lambda self: ew.conj(self)
Tensor.angle = lambda self: ew.angle(self)
Tensor.flatten = sh.flatten  # PyTorch's (start_dim, end_dim); no arguments: NumPy's flatten
Tensor.copy = Tensor.clone = ew.positive


# -- PyTorch's names for the same things. Where one name means different things in NumPy and PyTorch
# (x.max(dim) returns values only; x.std() has ddof=0; x.repeat is np.repeat), NumPy's meaning stays.
class _Size(int):
    """`t.size`: the number of elements (NumPy's attribute), also callable as PyTorch's `t.size()` (the
    shape) and `t.size(dim)`."""

    def __new__(cls, shape):
        if has_unknown_size(shape):  # Dask's nan sizes: the count is not known (int64 of nan would be garbage)
            raise unknown_size_error("Tensor.size", shape)
        size = super().__new__(cls, int(np.prod(shape, dtype=np.int64)))
        size.shape = tuple(shape)
        return size

    def __call__(self, dim=None):
        if dim is None:
            return self.shape
        return self.shape[normalize_axis_index(dim, len(self.shape), "size", name="dim")]


def _view(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list)):  # NumPy's view(dtype)
        return Tensor(self.numpy().view(shape[0]))
    return _reshape(self, *shape)


def _t(self):
    if self.ndim > 2:
        raise user_error(ValueError, "t()", f"expects a tensor with at most 2 dimensions, got {self.ndim} (use "
                         ".transpose or .mT)", self)
    return sh.transpose(self)


def _masked_fill(self, mask, value):
    out = ew.where(mask, value, self)
    return out if out.dtype == self.dtype else ew.astype(out, self.dtype)  # PyTorch keeps self's dtype


def _to(self, *args, **kwargs):
    """PyTorch's `to(dtype)`, `to(other)` (other's dtype), `to("cpu")` (there is only one device)."""
    dtype = kwargs.get("dtype")
    for a in [*args, kwargs.get("device")]:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str) and a.split(":")[0] in ("cuda", "mps", "xla", "meta", "xpu"):
            raise user_error(ValueError, "to", f"dagrad computes on the CPU only, got device {a!r}", self)
        elif a is not None and not (isinstance(a, str) and a.split(":")[0] == "cpu"):
            dtype = a
    if dtype is None:
        return self
    out = ew.astype(self, dtype)  # it checks the dtype, naming astype and the user's line
    return self if out.dtype == self.dtype else out


def _cast(dtype):
    return lambda self: ew.astype(self, dtype)


Tensor.size = property(lambda self: _Size(self.shape))
Tensor.numel = lambda self: int(self.size)
Tensor.dim = lambda self: self.ndim
Tensor.pow = ew.power
Tensor.amax, Tensor.amin = reduce.amax, reduce.amin
Tensor.clamp = lambda self, min=None, max=None: ew.clip(self, min, max)
Tensor.unsqueeze = lambda self, dim: sh.expand_dims(self, dim)
Tensor.permute = lambda self, *dims: sh.transpose(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int)
                                                  else dims)
Tensor.view = _view
Tensor.t = _t
Tensor.expand = sh.expand
Tensor.masked_fill = _masked_fill
Tensor.gather = lambda self, dim, index: sh.gather(self, dim, index)
Tensor.index_select = lambda self, dim, index: sh.take(self, index, axis=dim)
Tensor.to = _to
Tensor.cpu = lambda self: self  # one device
Tensor.view_as = lambda self, other: sh.reshape(self, other.shape)
Tensor.expand_as = lambda self, other: sh.broadcast_to(self, other.shape)
Tensor.type_as = lambda self, other: self if self.dtype == other.dtype else ew.astype(self, other.dtype)
Tensor.mm, Tensor.bmm, Tensor.neg = torch_names.mm, torch_names.bmm, ew.negative
Tensor.softmax, Tensor.log_softmax = nn_ops.softmax, nn_ops.log_softmax
Tensor.float, Tensor.double, Tensor.half = _cast(np.float32), _cast(np.float64), _cast(np.float16)
Tensor.long, Tensor.int, Tensor.bool = _cast(np.int64), _cast(np.int32), _cast(np.bool_)


def _truth(test, name):
    def method(self, axis=None, keepdims=False):
        axes = normalize_axis(axis, self.ndim, name, self)  # checked as every reduction, at the user's line
        return Tensor(test(self.numpy(), axis=axes, keepdims=keepdims))
    method.__name__ = name
    return method


Tensor.any = _truth(np.any, "any")
Tensor.all = _truth(np.all, "all")


# -- NumPy interop: np.sin(t), ndarray * t, np.sum(t), np.concatenate([t, a]) run dagrad ops


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    function = _FUNCTIONS.get(ufunc)
    if method != "__call__" or kwargs or function is None:
        detail = f" ufunc.{method}" if method != "__call__" else ""
        detail += f" with keyword arguments {sorted(kwargs)}" if kwargs else ""
        raise user_error(TypeError, "dagrad", f"numpy.{ufunc.__name__}{detail} is not supported on dagrad Tensors; "
                         "use the dagrad function, or .numpy() for a value without gradient")
    return function(*inputs)


def _numpy_functions():
    """NumPy function (or ufunc) -> the dagrad.numpy function of its name, or one on the values only."""
    functions = {}
    for name in dir(dnp):
        ours, theirs = getattr(dnp, name), getattr(np, name, None)
        if callable(ours) and callable(theirs) and getattr(ours, "__module__", "").startswith("dagrad"):
            functions[theirs] = ours
    for name in dir(dnp.linalg):
        theirs = getattr(np.linalg, name, None)
        if callable(theirs) and not name.startswith("_"):
            functions[theirs] = getattr(dnp.linalg, name)
    # functions of the values only: no gradient flows through them
    for theirs in (np.allclose, np.isclose, np.array_equal, np.argsort, np.argwhere, np.nonzero,
                   np.count_nonzero, np.any, np.all, np.unique, np.searchsorted):
        functions[theirs] = _on_values(theirs)
    return functions


def _values(x):
    if isinstance(x, Tensor):
        return x.numpy()
    if isinstance(x, (list, tuple)):
        return type(x)(_values(item) for item in x)
    return x


def _on_values(function):
    def call(*args, **kwargs):
        return function(*_values(args), **{k: _values(v) for k, v in kwargs.items()})

    return call


def _array_function(self, func, types, args, kwargs):
    implementation = _FUNCTIONS.get(func)
    if implementation is None:
        raise user_error(TypeError, "dagrad", f"numpy.{func.__name__} has no differentiable dagrad version; use "
                         "dagrad.numpy, or .numpy() for a value without gradient")
    return implementation(*args, **kwargs)


_FUNCTIONS = _numpy_functions()
Tensor.__array_ufunc__ = _array_ufunc
Tensor.__array_function__ = _array_function
