"""dagrad: a computational-graph and automatic-differentiation library on NumPy.

>>> import dagrad as dg
>>> x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""

from __future__ import annotations

from ._core.autodiff import grad, hessian, jacfwd, jacobian, jvp, value_and_grad, vjp
from ._core.op import REGISTRY, Op, defop
from ._core.tensor import Tensor, enable_grad, is_grad_enabled, no_grad, tensor
from .check import gradcheck
from .ops import (
    abs, add, astype, broadcast_to, concatenate, cos, divide, equal, exp, expand_dims, getitem, index_add,
    greater, greater_equal, less, less_equal, log, matmul, max, maximum, mean, min, minimum,
    multiply, negative, not_equal, positive, power, relu, reshape, sigmoid, sign, sin, sqrt,
    squeeze, stack, subtract, sum, swapaxes, tanh, transpose, where,
)

__version__ = "0.1.0"

__all__ = [
    "Tensor", "tensor", "no_grad", "enable_grad", "is_grad_enabled", "Op", "defop", "REGISTRY",
    "grad", "value_and_grad", "vjp", "jvp", "jacobian", "jacfwd", "hessian", "gradcheck",
    "abs", "add", "astype", "broadcast_to", "concatenate", "cos", "divide", "equal", "exp",
    "expand_dims", "getitem", "index_add", "greater", "greater_equal", "less", "less_equal", "log", "matmul",
    "max", "maximum", "mean", "min", "minimum", "multiply", "negative", "not_equal", "positive",
    "power", "relu", "reshape", "sigmoid", "sign", "sin", "sqrt", "squeeze", "stack", "subtract",
    "sum", "swapaxes", "tanh", "transpose", "where",
]
