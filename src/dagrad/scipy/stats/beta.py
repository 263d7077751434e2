"""SciPy's `scipy.stats.beta` functions, differentiable: the beta distribution (shapes `a`, `b`).

>>> float(cdf(0.25, 1.0, 1.0))
0.25
"""

from __future__ import annotations

from ...ops.elementwise import exp, log
from .. import special

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, a, b, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    return special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y) - special.betaln(a, b) - log(scale)


def pdf(x, a, b, loc=0.0, scale=1.0):
    return exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0.0, scale=1.0):
    return special.betainc(a, b, (x - loc) / scale)
