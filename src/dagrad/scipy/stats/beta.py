"""SciPy's `scipy.stats.beta` functions, differentiable: the beta distribution (shapes `a`, `b`), on
[loc, loc + scale]. Outside it `logpdf` is -inf and `cdf` 0 or 1, with gradient 0; `a <= 0`, `b <= 0`
or `scale <= 0` give NaN (see `_support`).

>>> float(cdf(0.25, 1.0, 1.0))
0.25
>>> float(logpdf(1.5, 1.0, 1.0))
-inf
"""

from __future__ import annotations

from ...ops.elementwise import exp, log
from .. import special
from ._support import any_of, inside, not_above, outside, undefined

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _standard(x, a, b, loc, scale):
    """(invalid, a, b, y): a, b and y = (x - loc) / scale at valid stand-ins where the parameters are invalid."""
    invalid = any_of(not_above(a, 0), not_above(b, 0), not_above(scale, 0))
    return (invalid, inside(invalid, a, 1.0), inside(invalid, b, 1.0),
            (x - loc) / inside(invalid, scale, 1.0))


def logpdf(x, a, b, loc=0.0, scale=1.0):
    invalid, a_, b_, y = _standard(x, a, b, loc, scale)
    off = any_of(y < 0, y > 1)
    y = inside(off, y, 0.5)
    out = (special.xlogy(a_ - 1, y) + special.xlog1py(b_ - 1, -y) - special.betaln(a_, b_)
           - log(inside(invalid, scale, 1.0)))
    return undefined(invalid, outside(off, out), x, a, b, loc, scale)


def pdf(x, a, b, loc=0.0, scale=1.0):
    return exp(logpdf(x, a, b, loc, scale))


def _clipped(x, a, b, loc, scale, upper):
    """The cdf (the sf with `upper`) of y = (x - loc) / scale clipped to [0, 1], where it is 0 or 1 and
    has no slope (nor has its log)."""
    invalid, a_, b_, y = _standard(x, a, b, loc, scale)
    y = inside(y > 1, inside(y < 0, y, 0.0), 1.0)
    # I_y(a, b) = 1 - I_{1-y}(b, a): the upper tail without the cancellation of 1 - cdf
    out = special.betainc(b_, a_, 1 - y) if upper else special.betainc(a_, b_, y)
    return undefined(invalid, out, x, a, b, loc, scale)


def cdf(x, a, b, loc=0.0, scale=1.0):
    return _clipped(x, a, b, loc, scale, upper=False)


def logcdf(x, a, b, loc=0.0, scale=1.0):
    return log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0.0, scale=1.0):
    return _clipped(x, a, b, loc, scale, upper=True)


def logsf(x, a, b, loc=0.0, scale=1.0):
    return log(sf(x, a, b, loc, scale))
