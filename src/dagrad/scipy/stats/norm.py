"""SciPy's `scipy.stats.norm` functions, differentiable: the normal distribution.

>>> float(pdf(0.0))
0.3989422804014327
"""

from __future__ import annotations

import math

from ...ops.elementwise import exp, log
from .. import special

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "entropy"]

_LOG_2PI = math.log(2 * math.pi)


def logpdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -0.5 * z * z - log(scale) - 0.5 * _LOG_2PI


def pdf(x, loc=0.0, scale=1.0):
    return exp(logpdf(x, loc, scale))


def cdf(x, loc=0.0, scale=1.0):
    return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0.0, scale=1.0):
    return special.log_ndtr((x - loc) / scale)


def sf(x, loc=0.0, scale=1.0):
    return special.ndtr(-(x - loc) / scale)


def logsf(x, loc=0.0, scale=1.0):
    return special.log_ndtr(-(x - loc) / scale)


def ppf(q, loc=0.0, scale=1.0):
    return loc + scale * special.ndtri(q)


def entropy(loc=0.0, scale=1.0):
    return 0.5 * (_LOG_2PI + 1) + log(scale)
