"""SciPy's `scipy.stats.chi2` functions, differentiable: the chi-squared distribution (`df` degrees of
freedom), a gamma distribution of shape `df / 2` and scale 2 (so the same support, [loc, inf), and
`df <= 0` or `scale <= 0` give NaN).

>>> round(float(cdf(2.0, 2.0)), 6)  # 1 - exp(-1)
0.632121
"""

from __future__ import annotations

from ...ops.elementwise import exp
from . import gamma

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0.0, scale=1.0):
    return gamma.logpdf(x, df / 2, loc=loc, scale=2 * scale)


def pdf(x, df, loc=0.0, scale=1.0):
    return exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0.0, scale=1.0):
    return gamma.cdf(x, df / 2, loc=loc, scale=2 * scale)


def logcdf(x, df, loc=0.0, scale=1.0):
    return gamma.logcdf(x, df / 2, loc=loc, scale=2 * scale)


def sf(x, df, loc=0.0, scale=1.0):
    return gamma.sf(x, df / 2, loc=loc, scale=2 * scale)


def logsf(x, df, loc=0.0, scale=1.0):
    return gamma.logsf(x, df / 2, loc=loc, scale=2 * scale)
