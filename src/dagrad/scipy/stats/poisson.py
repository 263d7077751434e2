"""SciPy's `scipy.stats.poisson` functions, differentiable in the mean `mu`: the Poisson distribution.

>>> round(float(pmf(0.0, 2.0)), 6)  # exp(-2)
0.135335
"""

from __future__ import annotations

from ...ops.elementwise import exp
from .. import special

__all__ = ["logpmf", "pmf", "cdf"]


def logpmf(k, mu, loc=0):
    k = k - loc
    return special.xlogy(k, mu) - mu - special.gammaln(k + 1)


def pmf(k, mu, loc=0):
    return exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    return special.gammaincc(k - loc + 1, mu)
