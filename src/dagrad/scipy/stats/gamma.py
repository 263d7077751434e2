"""SciPy's `scipy.stats.gamma` functions, differentiable: the gamma distribution (shape `a`), on
[loc, inf). Below it `logpdf` is -inf and `cdf` 0, with gradient 0; `a <= 0` or `scale <= 0` give
NaN (see `_support`).

>>> round(float(cdf(1.0, 1.0)), 6)  # 1 - exp(-1)
0.632121
>>> float(logpdf(-1.0, 2.0))
-inf
"""

from __future__ import annotations

from ...ops.elementwise import exp, log
from .. import special
from ._support import any_of, inside, not_above, outside, undefined

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _standard(x, a, loc, scale):
    """(invalid, a, y): where the parameters are invalid, a and y = (x - loc) / scale at valid stand-ins."""
    invalid = any_of(not_above(a, 0), not_above(scale, 0))
    return invalid, inside(invalid, a, 1.0), (x - loc) / inside(invalid, scale, 1.0)


def logpdf(x, a, loc=0.0, scale=1.0):
    invalid, a_, y = _standard(x, a, loc, scale)
    below = y < 0
    y = inside(below, y, 1.0)
    out = outside(below, special.xlogy(a_ - 1, y) - y - special.gammaln(a_) - log(inside(invalid, scale, 1.0)))
    return undefined(invalid, out, x, a, loc, scale)


def pdf(x, a, loc=0.0, scale=1.0):
    return exp(logpdf(x, a, loc, scale))


def _clipped(function, x, a, loc, scale):
    """`function` (gammainc or gammaincc) of a and y = (x - loc) / scale, y clipped to 0 below the support
    (where the cdf is 0 and has no slope: its log's gradient there is 0 too, not inf * 0)."""
    invalid, a_, y = _standard(x, a, loc, scale)
    return undefined(invalid, function(a_, inside(y < 0, y, 0.0)), x, a, loc, scale)


def cdf(x, a, loc=0.0, scale=1.0):
    return _clipped(special.gammainc, x, a, loc, scale)


def logcdf(x, a, loc=0.0, scale=1.0):
    return log(cdf(x, a, loc, scale))


def sf(x, a, loc=0.0, scale=1.0):
    return _clipped(special.gammaincc, x, a, loc, scale)


def logsf(x, a, loc=0.0, scale=1.0):
    return log(sf(x, a, loc, scale))
