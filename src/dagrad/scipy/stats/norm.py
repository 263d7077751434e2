"""SciPy's `scipy.stats.norm` functions, differentiable: the normal distribution. `scale <= 0` gives NaN
(see `_support`); `ppf` is NaN outside [0, 1], as SciPy's.

>>> float(pdf(0.0))
0.3989422804014327
"""

from __future__ import annotations

import math

from ...ops.elementwise import exp
from .. import special
from ._support import inside, log_, not_above, undefined

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "entropy"]

_LOG_2PI = math.log(2 * math.pi)


def _standard(x, loc, scale):
    """(invalid, scale, z): scale and z = (x - loc) / scale at a valid stand-in where the scale is invalid."""
    invalid = not_above(scale, 0)
    scale_ = inside(invalid, scale, 1.0)
    return invalid, scale_, (x - loc) / scale_


def logpdf(x, loc=0.0, scale=1.0):
    invalid, scale_, z = _standard(x, loc, scale)
    return undefined(invalid, -0.5 * z * z - log_(scale_) - 0.5 * _LOG_2PI, x, loc, scale)


def pdf(x, loc=0.0, scale=1.0):
    return exp(logpdf(x, loc, scale))


def cdf(x, loc=0.0, scale=1.0):
    invalid, _, z = _standard(x, loc, scale)
    return undefined(invalid, special.ndtr(z), x, loc, scale)


def logcdf(x, loc=0.0, scale=1.0):
    invalid, _, z = _standard(x, loc, scale)
    return undefined(invalid, special.log_ndtr(z), x, loc, scale)


def sf(x, loc=0.0, scale=1.0):
    invalid, _, z = _standard(x, loc, scale)
    return undefined(invalid, special.ndtr(-z), x, loc, scale)


def logsf(x, loc=0.0, scale=1.0):
    invalid, _, z = _standard(x, loc, scale)
    return undefined(invalid, special.log_ndtr(-z), x, loc, scale)


def ppf(q, loc=0.0, scale=1.0):
    invalid = not_above(scale, 0)
    return undefined(invalid, loc + inside(invalid, scale, 1.0) * special.ndtri(q), q, loc, scale)


def entropy(loc=0.0, scale=1.0):
    invalid = not_above(scale, 0)
    return undefined(invalid, 0.5 * (_LOG_2PI + 1) + log_(inside(invalid, scale, 1.0)), loc, scale)
