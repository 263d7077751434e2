"""What the distributions share: their values outside the support and at invalid parameters, as
SciPy's (-inf log-density, 0 density, a cdf of 0 or 1 outside the support; NaN for invalid
parameters), with gradients that stay finite.

A formula is evaluated at a point moved inside the support (`inside`), and `where` then puts the
value outside the support in its place (`outside`): the gradient there is 0, where the formula at
the point itself would give 0 * inf = NaN (JAX's double `where`). Invalid parameters (a scale or a
shape <= 0, a negative mean, NaN) give NaN, and a NaN gradient with respect to every argument: the
function is undefined there, so is its derivative (`undefined`); the formula sees a valid stand-in
(`inside` again), so no division by a zero scale runs. Each parameter is replaced where it is itself
invalid: a Python number's check is then a Python bool and the number stays one, weakly typed (a float32
x with the default scale=1.0 gives float32), where a mask from another argument would make it a float64
array. A function of Python numbers only goes through `special.weakly` for the same reason.
"""

from __future__ import annotations

import math

import numpy as np

from ..._core.shapes import dtype_of
from ...ops.elementwise import astype, greater, greater_equal, log, logical_not, logical_or, where

__all__ = ["any_of", "inside", "log_", "not_above", "outside", "undefined"]


def _never(mask):
    """Whether `mask` is a plain False (all the arguments are Python numbers that pass): no node then."""
    return isinstance(mask, (bool, np.bool_)) and not mask


def not_above(value, bound, strict=True):
    """Where `value` is not > `bound` (not >= with `strict=False`): an invalid parameter, NaN included."""
    if isinstance(value, (int, float)):
        return not (value > bound if strict else value >= bound)
    return logical_not(greater(value, bound) if strict else greater_equal(value, bound))


def any_of(*masks):
    """The elementwise or of `masks` (comparisons of Tensors, arrays or Python numbers)."""
    out = masks[0]
    for mask in masks[1:]:
        out = mask if _never(out) else out if _never(mask) else logical_or(out, mask)
    return out


def inside(out_of_support, value, point):
    """`value`, with `point` (a value inside the support) where it is out of the support."""
    if isinstance(out_of_support, bool) and isinstance(value, (int, float)):
        return point if out_of_support else value  # Python numbers stay weakly typed (float32 stays float32)
    return value if _never(out_of_support) else where(out_of_support, point, value)


def log_(value):
    """log(value), a Python float for a Python number (so a default scale of 1.0 does not make float32
    results float64: dagrad's log of a Python number is a float64 scalar)."""
    return math.log(value) if isinstance(value, (int, float)) else log(value)


def outside(out_of_support, value, fill=-math.inf):
    """`value`, with `fill` where the point is out of the support."""
    return value if _never(out_of_support) else where(out_of_support, fill, value)


def undefined(invalid, value, *args):
    """`value`, with NaN where the parameters are `invalid`; there the gradient with respect to each
    of `args` is NaN too (and nowhere else: the NaN factor is 0 where the parameters are valid)."""
    if _never(invalid):
        return value
    total = args[0]
    for arg in args[1:]:
        total = total + arg
    nan = astype(where(invalid, math.nan, 0.0), dtype_of(value))
    return where(invalid, total * nan, value)
