"""SciPy's `scipy.stats.t` functions, differentiable: Student's t distribution (`df` degrees of freedom).

>>> float(cdf(0.0, 3.0))
0.5
"""

from __future__ import annotations

import math

from ...ops.elementwise import exp, log, log1p, where
from .. import special

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    half = (df + 1) / 2
    return (special.gammaln(half) - special.gammaln(df / 2) - 0.5 * log(df * math.pi) - log(scale)
            - half * log1p(z * z / df))


def pdf(x, df, loc=0.0, scale=1.0):
    return exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    tail = 0.5 * special.betainc(df / 2, 0.5, df / (df + z * z))
    return where(z > 0, 1 - tail, tail)


def logcdf(x, df, loc=0.0, scale=1.0):
    return log(cdf(x, df, loc, scale))


def sf(x, df, loc=0.0, scale=1.0):
    return cdf(-x, df, -loc, scale)  # the distribution is symmetric about loc


def logsf(x, df, loc=0.0, scale=1.0):
    return log(sf(x, df, loc, scale))
