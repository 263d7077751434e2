"""The op library: importing it declares every primitive and gives Tensor its methods."""

from __future__ import annotations

from .._core.op import REGISTRY
from . import elementwise, linalg, reduce, shape
from .elementwise import (
    abs, add, astype, cos, divide, equal, exp, greater, greater_equal, less, less_equal, log,
    maximum, minimum, multiply, negative, not_equal, positive, power, relu, sigmoid, sign, sin,
    sqrt, subtract, tanh, where,
)
from .linalg import matmul
from .reduce import max, mean, min, sum
from .shape import (
    broadcast_to, concatenate, expand_dims, getitem, index_add, reshape, squeeze, stack, swapaxes,
    transpose,
)
from . import _methods  # noqa: F401  (binds Tensor operators and methods)

__all__ = [
    "REGISTRY", "elementwise", "linalg", "reduce", "shape",
    "abs", "add", "astype", "cos", "divide", "equal", "exp", "greater", "greater_equal", "less",
    "less_equal", "log", "maximum", "minimum", "multiply", "negative", "not_equal", "positive",
    "power", "relu", "sigmoid", "sign", "sin", "sqrt", "subtract", "tanh", "where", "matmul",
    "max", "mean", "min", "sum", "broadcast_to", "concatenate", "expand_dims", "getitem",
    "index_add", "reshape", "squeeze", "stack", "swapaxes", "transpose",
]
