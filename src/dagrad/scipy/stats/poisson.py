"""SciPy's `scipy.stats.poisson` functions, differentiable in the mean `mu`: the Poisson distribution,
on the integers k >= loc. `logpmf` is -inf at other k (negative or not an integer) with gradient 0;
the cdf steps at the integers (its gradient in k is 0); `mu < 0` gives NaN (see `_support`).

>>> round(float(pmf(0.0, 2.0)), 6)  # exp(-2)
0.135335
>>> float(logpmf(2.5, 3.0))
-inf
"""

from __future__ import annotations

import math

from ...ops.elementwise import exp, floor, log, stop_gradient
from .. import special
from ..special import weakly
from ._support import any_of, inside, not_above, outside, undefined

__all__ = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]


def logpmf(k, mu, loc=0):
    invalid = not_above(mu, 0, strict=False)
    mu_ = inside(invalid, mu, 1.0)
    n = k - loc
    off = any_of(n < 0, floor(n) < n)  # negative or not an integer (NaN is neither: it stays NaN)
    n = inside(off, n, 0)
    out = outside(off, special.xlogy(n, mu_) - mu_ - weakly(special.gammaln, n + 1))
    return undefined(invalid, out, k, mu, loc)


def pmf(k, mu, loc=0):
    return exp(logpmf(k, mu, loc))


def _tail(function, k, mu, loc, below_value, take_log=False):
    """`function` (gammaincc: the cdf, gammainc: the sf) of floor(k - loc) + 1 and mu, or its log, and
    `below_value` below the support. floor(k - loc) is a constant: the cdf is a step function of k
    (gradient 0); below the support the formula sees k = 0 and mu = 1 (where the sf is not 0 even for a
    mu of 0, so its log has a finite slope to cut), so it has no slope there in either mode."""
    invalid = not_above(mu, 0, strict=False)
    n = stop_gradient(floor(k - loc))
    below = n < 0
    # a Python mu has no slope to cut below the support: it stays as it is, weakly typed (float32 k, float32 cdf)
    mu_ = inside(invalid if isinstance(mu, (int, float)) else any_of(invalid, below), mu, 1.0)
    out = function(inside(below, n, 0) + 1, mu_)
    return undefined(invalid, outside(below, log(out) if take_log else out, below_value), mu)


def cdf(k, mu, loc=0):
    return _tail(special.gammaincc, k, mu, loc, 0.0)


def logcdf(k, mu, loc=0):
    return _tail(special.gammaincc, k, mu, loc, -math.inf, take_log=True)


def sf(k, mu, loc=0):
    return _tail(special.gammainc, k, mu, loc, 1.0)


def logsf(k, mu, loc=0):
    return _tail(special.gammainc, k, mu, loc, 0.0, take_log=True)
