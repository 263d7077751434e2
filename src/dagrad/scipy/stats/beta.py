"""SciPy's `scipy.stats.beta` functions, differentiable: the beta distribution (shapes `a`, `b`), on
[loc, loc + scale]. Outside it `logpdf` is -inf and `cdf` 0 or 1, with gradient 0; `a <= 0`, `b <= 0`
or `scale <= 0` give NaN (see `_support`).

>>> float(cdf(0.25, 1.0, 1.0))
0.25
>>> float(logpdf(1.5, 1.0, 1.0))
-inf
"""

from __future__ import annotations

import math

from ...ops.elementwise import exp, log
from .. import special
from ..special import weakly
from ._support import any_of, inside, log_, not_above, outside, undefined

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _standard(x, a, b, loc, scale):
    """(invalid, a, b, scale, below, above): a, b and scale each at a valid stand-in where it is invalid
    (see `_support`), and where x is below or above the support."""
    bad_a, bad_b, bad_scale = not_above(a, 0), not_above(b, 0), not_above(scale, 0)
    scale = inside(bad_scale, scale, 1.0)
    y = (x - loc) / scale
    return any_of(bad_a, bad_b, bad_scale), inside(bad_a, a, 1.0), inside(bad_b, b, 1.0), scale, y < 0, y > 1


def _inside(x, loc, scale, off):
    """(x - loc) / scale, and 1/2 (the middle of the support) off it: the formulas see no inf there, not
    even from an infinite x (whose 0 * inf in d/dscale would be NaN)."""
    return (inside(off, x, loc + 0.5 * scale) - loc) / scale


def logpdf(x, a, b, loc=0.0, scale=1.0):
    invalid, a_, b_, scale_, below, above = _standard(x, a, b, loc, scale)
    off = any_of(below, above)
    y = _inside(x, loc, scale_, off)
    out = special.xlogy(a_ - 1, y) + special.xlog1py(b_ - 1, -y) - weakly(special.betaln, a_, b_) - log_(scale_)
    return undefined(invalid, outside(off, out), x, a, b, loc, scale)


def pdf(x, a, b, loc=0.0, scale=1.0):
    return exp(logpdf(x, a, b, loc, scale))


def _tail(x, a, b, loc, scale, upper, take_log, below_value, above_value):
    """The cdf (the sf with `upper`) of (x - loc) / scale, or its log; `below_value` and `above_value` off
    the support, with no slope there in either mode."""
    invalid, a_, b_, scale_, below, above = _standard(x, a, b, loc, scale)
    y = _inside(x, loc, scale_, any_of(below, above))
    # I_y(a, b) = 1 - I_{1-y}(b, a): the upper tail without the cancellation of 1 - cdf
    out = special.betainc(b_, a_, 1 - y) if upper else special.betainc(a_, b_, y)
    out = outside(below, outside(above, log(out) if take_log else out, above_value), below_value)
    return undefined(invalid, out, x, a, b, loc, scale)


def cdf(x, a, b, loc=0.0, scale=1.0):
    return _tail(x, a, b, loc, scale, False, False, 0.0, 1.0)


def logcdf(x, a, b, loc=0.0, scale=1.0):
    return _tail(x, a, b, loc, scale, False, True, -math.inf, 0.0)


def sf(x, a, b, loc=0.0, scale=1.0):
    return _tail(x, a, b, loc, scale, True, False, 1.0, 0.0)


def logsf(x, a, b, loc=0.0, scale=1.0):
    return _tail(x, a, b, loc, scale, True, True, 0.0, -math.inf)
