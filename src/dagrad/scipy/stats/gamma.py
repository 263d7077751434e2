"""SciPy's `scipy.stats.gamma` functions, differentiable: the gamma distribution (shape `a`), on
[loc, inf). Below it `logpdf` is -inf and `cdf` 0, with gradient 0; `a <= 0` or `scale <= 0` give
NaN (see `_support`).

>>> round(float(cdf(1.0, 1.0)), 6)  # 1 - exp(-1)
0.632121
>>> float(logpdf(-1.0, 2.0))
-inf
"""

from __future__ import annotations

import math

from ...ops.elementwise import exp, log
from .. import special
from ..special import weakly
from ._support import any_of, inside, log_, not_above, outside, undefined

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _standard(x, a, loc, scale):
    """(invalid, a, scale, below): a and scale each at a valid stand-in where it is invalid (see
    `_support`), and where x is below the support."""
    bad_a, bad_scale = not_above(a, 0), not_above(scale, 0)
    scale = inside(bad_scale, scale, 1.0)
    return any_of(bad_a, bad_scale), inside(bad_a, a, 1.0), scale, (x - loc) / scale < 0


def _inside(x, loc, scale, below):
    """(x - loc) / scale, and 1 (a point inside the support) below it: the formulas see no inf there, not
    even from an x = -inf (whose 0 * inf in d/dscale would be NaN)."""
    return (inside(below, x, loc + scale) - loc) / scale


def logpdf(x, a, loc=0.0, scale=1.0):
    invalid, a_, scale_, below = _standard(x, a, loc, scale)
    y = _inside(x, loc, scale_, below)
    out = outside(below, special.xlogy(a_ - 1, y) - y - weakly(special.gammaln, a_) - log_(scale_))
    return undefined(invalid, out, x, a, loc, scale)


def pdf(x, a, loc=0.0, scale=1.0):
    return exp(logpdf(x, a, loc, scale))


def _tail(function, x, a, loc, scale, below_value, take_log=False):
    """`function` (gammainc: the cdf, gammaincc: the sf) of a and (x - loc) / scale, or its log, and
    `below_value` below the support, with no slope there in either mode."""
    invalid, a_, scale_, below = _standard(x, a, loc, scale)
    out = function(a_, _inside(x, loc, scale_, below))
    return undefined(invalid, outside(below, log(out) if take_log else out, below_value), x, a, loc, scale)


def cdf(x, a, loc=0.0, scale=1.0):
    return _tail(special.gammainc, x, a, loc, scale, 0.0)


def logcdf(x, a, loc=0.0, scale=1.0):
    return _tail(special.gammainc, x, a, loc, scale, -math.inf, take_log=True)


def sf(x, a, loc=0.0, scale=1.0):
    return _tail(special.gammaincc, x, a, loc, scale, 1.0)


def logsf(x, a, loc=0.0, scale=1.0):
    return _tail(special.gammaincc, x, a, loc, scale, 0.0, take_log=True)
