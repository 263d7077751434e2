"""SciPy's `scipy.stats.gamma` functions, differentiable: the gamma distribution (shape `a`).

>>> round(float(cdf(1.0, 1.0)), 6)  # 1 - exp(-1)
0.632121
"""

from __future__ import annotations

from ...ops.elementwise import exp, log
from .. import special

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, a, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    return special.xlogy(a - 1, y) - y - special.gammaln(a) - log(scale)


def pdf(x, a, loc=0.0, scale=1.0):
    return exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0.0, scale=1.0):
    return special.gammainc(a, (x - loc) / scale)
