"""Tensor operators and methods, each one of the op library's functions."""

from __future__ import annotations

from .._core.tensor import Tensor
from . import elementwise as ew
from . import linalg, reduce
from . import shape as sh


def _reflected(function):
    def method(self, other):
        return function(other, self)

    method.__name__ = f"r{function.__name__}"
    return method


_BINARY = {
    "add": ew.add, "sub": ew.subtract, "mul": ew.multiply, "truediv": ew.divide,
    "pow": ew.power, "matmul": linalg.matmul,
}
for _name, _function in _BINARY.items():
    setattr(Tensor, f"__{_name}__", _function)
    setattr(Tensor, f"__r{_name}__", _reflected(_function))

Tensor.__neg__ = ew.negative
Tensor.__pos__ = ew.positive
Tensor.__abs__ = ew.abs
Tensor.__eq__ = ew.equal
Tensor.__ne__ = ew.not_equal
Tensor.__lt__ = ew.less
Tensor.__le__ = ew.less_equal
Tensor.__gt__ = ew.greater
Tensor.__ge__ = ew.greater_equal
Tensor.__getitem__ = sh.getitem

for _function in (ew.exp, ew.log, ew.sqrt, ew.sin, ew.cos, ew.tanh, ew.sigmoid, ew.relu, ew.abs, ew.sign,
                  ew.astype, reduce.sum, reduce.mean, reduce.max, reduce.min, sh.squeeze, sh.swapaxes,
                  sh.broadcast_to, linalg.matmul):
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
Tensor.expand_dims = sh.expand_dims
Tensor.flatten = lambda self: sh.reshape(self, (-1,))
Tensor.ravel = Tensor.flatten

# NumPy ufuncs called on Tensors (np.sin(t), ndarray * t) run the matching dagrad op.
_UFUNCS = {
    "add": ew.add, "subtract": ew.subtract, "multiply": ew.multiply, "divide": ew.divide,
    "power": ew.power, "negative": ew.negative, "positive": ew.positive, "absolute": ew.abs,
    "sign": ew.sign, "exp": ew.exp, "log": ew.log, "sqrt": ew.sqrt, "sin": ew.sin, "cos": ew.cos,
    "tanh": ew.tanh, "maximum": ew.maximum, "minimum": ew.minimum, "equal": ew.equal,
    "not_equal": ew.not_equal, "less": ew.less, "less_equal": ew.less_equal,
    "greater": ew.greater, "greater_equal": ew.greater_equal, "matmul": linalg.matmul,
}


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    function = _UFUNCS.get(ufunc.__name__)
    if method != "__call__" or kwargs or function is None:
        return NotImplemented
    return function(*inputs)


Tensor.__array_ufunc__ = _array_ufunc
