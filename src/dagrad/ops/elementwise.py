"""Elementwise ops.

For an elementwise op the Jacobian is diagonal, so multiplying by the partial derivative
is both the vjp rule (applied to the cotangent) and the jvp rule (applied to the
tangent): each op below declares one rule per input and uses it for both.
"""

from __future__ import annotations

import numpy as np

from .._core.op import apply, defop
from .._core.shapes import broadcast_shapes


def _elementwise(name, forward, rules, nargs):
    rules = None if rules is None else tuple(rules)
    return defop(name, forward, vjp=rules, jvp=rules, shape=broadcast_shapes, nargs=nargs).function


def _is_number(x):
    return isinstance(x, (int, float, np.number))


# -- arithmetic
add = _elementwise("add", np.add, (lambda g, out, x, y: g, lambda g, out, x, y: g), 2)
subtract = _elementwise("subtract", np.subtract, (lambda g, out, x, y: g, lambda g, out, x, y: -g), 2)
multiply = _elementwise("multiply", np.multiply, (lambda g, out, x, y: g * y, lambda g, out, x, y: g * x), 2)
divide = _elementwise(
    "divide", np.divide, (lambda g, out, x, y: g / y, lambda g, out, x, y: -g * out / y), 2
)


def _power_rule_base(g, out, x, y):
    # d/dx x**y = y * x**(y-1); PyTorch's convention: zero where y == 0 (even at x == 0)
    if _is_number(y):
        return g * 0 if y == 0 else g * (y * x ** (y - 1))
    return g * where(y == 0, 0, y * x ** (y - 1))


def _power_rule_exponent(g, out, x, y):
    # d/dy x**y = x**y * log(x); PyTorch's convention: zero where x == 0
    if _is_number(x):  # a Python number stays weakly typed, so float32 stays float32
        return g * 0 if x == 0 else g * (out * float(np.log(x)))
    return g * where(x == 0, 0, out * log(where(x == 0, 1, x)))


power = _elementwise("power", np.power, (_power_rule_base, _power_rule_exponent), 2)


def _maximum_rule(first):
    # the winner takes the gradient; a tie shares it evenly (PyTorch's convention)
    def rule(g, out, x, y):
        mine, other = (x, y) if first else (y, x)
        return where(mine > other, g, where(mine == other, g * 0.5, 0))

    return rule


def _minimum_rule(first):
    def rule(g, out, x, y):
        mine, other = (x, y) if first else (y, x)
        return where(mine < other, g, where(mine == other, g * 0.5, 0))

    return rule


maximum = _elementwise("maximum", np.maximum, (_maximum_rule(True), _maximum_rule(False)), 2)
minimum = _elementwise("minimum", np.minimum, (_minimum_rule(True), _minimum_rule(False)), 2)

negative = _elementwise("negative", np.negative, (lambda g, out, x: -g,), 1)
positive = _elementwise("positive", np.positive, (lambda g, out, x: g,), 1)
abs = _elementwise("abs", np.abs, (lambda g, out, x: g * sign(x),), 1)  # abs'(0) = 0
sign = _elementwise("sign", np.sign, None, 1)

# -- exponentials and powers
exp = _elementwise("exp", np.exp, (lambda g, out, x: g * out,), 1)
log = _elementwise("log", np.log, (lambda g, out, x: g / x,), 1)
sqrt = _elementwise("sqrt", np.sqrt, (lambda g, out, x: g / (out * 2),), 1)

# -- trigonometric and hyperbolic
sin = _elementwise("sin", np.sin, (lambda g, out, x: g * cos(x),), 1)
cos = _elementwise("cos", np.cos, (lambda g, out, x: -(g * sin(x)),), 1)
tanh = _elementwise("tanh", np.tanh, (lambda g, out, x: g * (1 - out * out),), 1)


# -- activations
def _sigmoid(x):
    # exp of a non-positive number only, so no overflow for large |x|
    e = np.exp(-np.abs(x))
    return np.where(np.asarray(x) >= 0, 1 / (1 + e), e / (1 + e))[()]


sigmoid = _elementwise("sigmoid", _sigmoid, (lambda g, out, x: g * (out * (1 - out)),), 1)
relu = _elementwise("relu", lambda x: np.maximum(x, 0), (lambda g, out, x: where(x > 0, g, 0),), 1)  # relu'(0) = 0

# -- selection
where = defop(
    "where",
    np.where,
    vjp=(None, lambda g, out, c, x, y: where(c, g, 0), lambda g, out, c, x, y: where(c, 0, g)),
    jvp=(None, lambda t, out, c, x, y: where(c, t, 0), lambda t, out, c, x, y: where(c, 0, t)),
    shape=broadcast_shapes,
).function

# -- comparisons: bool results, no gradient
equal = _elementwise("equal", np.equal, None, 2)
not_equal = _elementwise("not_equal", np.not_equal, None, 2)
less = _elementwise("less", np.less, None, 2)
less_equal = _elementwise("less_equal", np.less_equal, None, 2)
greater = _elementwise("greater", np.greater, None, 2)
greater_equal = _elementwise("greater_equal", np.greater_equal, None, 2)


# -- casting
def _astype_shape(shape, dtype):
    return shape


_astype = defop(
    "astype",
    lambda x, dtype: np.asarray(x).astype(dtype, copy=False)[()],
    vjp=(lambda g, out, x, dtype: astype(g, _dtype(x)),),
    jvp=(lambda t, out, x, dtype: astype(t, dtype),),
    shape=_astype_shape,
)


def _dtype(x):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def astype(x, dtype):
    """`x` cast to `dtype`; casting to a non-float dtype cuts the gradient."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        from .._core.tensor import Tensor

        if isinstance(x, Tensor):
            x = x.detach()
    return apply(_astype, (x,), {"dtype": dtype})


_astype.function = astype
