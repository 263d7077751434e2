"""`dagrad.scipy.stats`: the densities and distribution functions of SciPy's common distributions,
written with `dagrad.scipy.special` and the op library, so they are differentiable in every argument
SciPy's formulas make smooth (the value, `loc`, `scale` and the shape parameters), to any order.

>>> import numpy as np
>>> import dagrad as dg
>>> from dagrad.scipy import stats
>>> float(stats.norm.logpdf(0.5, loc=0.0, scale=2.0))
-1.643335713764618
>>> float(dg.grad(lambda mu: stats.norm.logpdf(1.0, loc=mu, scale=1.0))(0.25))  # (x - mu) / scale**2
0.75
"""

from __future__ import annotations

import math

from ..ops.elementwise import exp, log, log1p, where
from ..ops.linalg import cholesky, diagonal, solve
from ..ops.reduce import sum as sum_
from ..ops.shape import expand_dims, squeeze
from . import special

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]

_LOG_2PI = math.log(2 * math.pi)


class _Distribution:
    """The functions of one distribution; each derived from `logpdf` (or `logpmf`) where SciPy's are."""

    def pdf(self, x, *args, **kwargs):
        return exp(self.logpdf(x, *args, **kwargs))

    def __repr__(self):
        return f"<dagrad.scipy.stats.{type(self).__name__.strip('_')}>"


class _Norm(_Distribution):
    def logpdf(self, x, loc=0.0, scale=1.0):
        z = (x - loc) / scale
        return -0.5 * z * z - log(scale) - 0.5 * _LOG_2PI

    def cdf(self, x, loc=0.0, scale=1.0):
        return special.ndtr((x - loc) / scale)

    def logcdf(self, x, loc=0.0, scale=1.0):
        return special.log_ndtr((x - loc) / scale)

    def sf(self, x, loc=0.0, scale=1.0):
        return special.ndtr(-(x - loc) / scale)

    def logsf(self, x, loc=0.0, scale=1.0):
        return special.log_ndtr(-(x - loc) / scale)

    def ppf(self, q, loc=0.0, scale=1.0):
        return loc + scale * special.ndtri(q)

    def entropy(self, loc=0.0, scale=1.0):
        return 0.5 * (_LOG_2PI + 1) + log(scale)


class _T(_Distribution):
    def logpdf(self, x, df, loc=0.0, scale=1.0):
        z = (x - loc) / scale
        half = (df + 1) / 2
        return (special.gammaln(half) - special.gammaln(df / 2) - 0.5 * log(df * math.pi) - log(scale)
                - half * log1p(z * z / df))

    def cdf(self, x, df, loc=0.0, scale=1.0):
        z = (x - loc) / scale
        tail = 0.5 * special.betainc(df / 2, 0.5, df / (df + z * z))
        return where(z > 0, 1 - tail, tail)


class _Gamma(_Distribution):
    def logpdf(self, x, a, loc=0.0, scale=1.0):
        y = (x - loc) / scale
        return special.xlogy(a - 1, y) - y - special.gammaln(a) - log(scale)

    def cdf(self, x, a, loc=0.0, scale=1.0):
        return special.gammainc(a, (x - loc) / scale)


class _Chi2(_Distribution):
    def logpdf(self, x, df, loc=0.0, scale=1.0):
        return gamma.logpdf(x, df / 2, loc=loc, scale=2 * scale)

    def cdf(self, x, df, loc=0.0, scale=1.0):
        return special.gammainc(df / 2, (x - loc) / (2 * scale))


class _Beta(_Distribution):
    def logpdf(self, x, a, b, loc=0.0, scale=1.0):
        y = (x - loc) / scale
        return special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y) - special.betaln(a, b) - log(scale)

    def cdf(self, x, a, b, loc=0.0, scale=1.0):
        return special.betainc(a, b, (x - loc) / scale)


class _Poisson(_Distribution):
    def logpmf(self, k, mu, loc=0):
        k = k - loc
        return special.xlogy(k, mu) - mu - special.gammaln(k + 1)

    def pmf(self, k, mu, loc=0):
        return exp(self.logpmf(k, mu, loc))

    def cdf(self, k, mu, loc=0):
        return special.gammaincc(k - loc + 1, mu)


class _Dirichlet(_Distribution):
    def logpdf(self, x, alpha):
        """x: (..., K) points of the simplex, alpha: (K,)."""
        norm_const = sum_(special.gammaln(alpha), axis=-1) - special.gammaln(sum_(alpha, axis=-1))
        return sum_(special.xlogy(alpha - 1, x), axis=-1) - norm_const


class _MultivariateNormal(_Distribution):
    def logpdf(self, x, mean=None, cov=1):
        """x: (..., d) points; mean (d,); cov a (d, d) positive-definite matrix (or a scalar)."""
        from_shape = getattr(x, "shape", None)
        d = from_shape[-1] if from_shape else 1
        diff = x if mean is None else x - mean
        if getattr(cov, "ndim", 0) == 0:  # a scalar variance: the isotropic case
            return -0.5 * (sum_(diff * diff, axis=-1) / cov + d * (_LOG_2PI + log(cov)))
        chol = cholesky(cov)
        # L y = diff for each point: the Mahalanobis distance is |y|^2, log det(cov) twice the log-diagonal of L
        y = squeeze(solve(chol, expand_dims(diff, -1)), -1)
        half_logdet = sum_(log(diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        return -0.5 * (sum_(y * y, axis=-1) + d * _LOG_2PI) - half_logdet


norm, t, gamma, chi2, beta = _Norm(), _T(), _Gamma(), _Chi2(), _Beta()
poisson, dirichlet, multivariate_normal = _Poisson(), _Dirichlet(), _MultivariateNormal()
