"""SciPy's `scipy.stats.multivariate_normal` functions, differentiable in the points, the mean and the
covariance: `logpdf`, `pdf` (with `allow_singular`) and `entropy`.

A positive-definite covariance goes through its Cholesky factor (whose rule is the symmetric gradient);
with `allow_singular=True` the density is SciPy's on the covariance's support: the pseudo-inverse and
pseudo-determinant of its eigenvalues above SciPy's cutoff, and -inf (gradient 0) at points off that
support (farther from it than SciPy's tolerance, 1000 times the cutoff).

>>> import numpy as np
>>> round(float(logpdf(np.zeros(2), np.zeros(2), np.eye(2))), 6)  # -log(2 pi)
-1.837877
"""

from __future__ import annotations

import math

import numpy as np

from ..._core.shapes import dtype_of, shape_of
from ...ops.elementwise import astype, exp, log, where
from ...ops.linalg import cholesky, diagonal, eigh, solve
from ...ops.reduce import max as max_
from ...ops.reduce import sum as sum_
from ...ops.shape import expand_dims, squeeze
from ._support import inside, log_, not_above, outside, undefined

__all__ = ["logpdf", "pdf", "entropy"]

_LOG_2PI = math.log(2 * math.pi)


def _logpdf_singular(diff, cov):
    """SciPy's density on the support of a positive semi-definite `cov`: eigenvalues at most
    1e6 * eps * max|eigenvalue| (1e3 in float32) count as zero; -inf off the support."""
    s, u = eigh(cov)
    dtype = dtype_of(s)
    cutoff = {"f": 1e3, "d": 1e6}.get(dtype.char.lower(), 1e6) * np.finfo(dtype).eps * max_(abs(s), axis=-1,
                                                                                            keepdims=True)
    kept = s > cutoff
    safe = where(kept, s, 1.0)
    projected = squeeze(expand_dims(diff, -2) @ u, -2)  # the coordinates of diff in the eigenbasis
    mahalanobis = sum_(where(kept, projected * projected / safe, 0.0), axis=-1)
    rank = sum_(astype(kept, dtype), axis=-1)  # where(kept, 1.0, 0.0) would be float64
    out = -0.5 * (rank * _LOG_2PI + sum_(where(kept, log(safe), 0.0), axis=-1) + mahalanobis)
    # off the support: the part of diff along the null space is longer than SciPy's tolerance
    residual = sum_(where(kept, 0.0, projected * projected), axis=-1)
    tolerance = 1e3 * squeeze(cutoff, -1)
    return outside(residual >= tolerance * tolerance, out)


def logpdf(x, mean=None, cov=1, allow_singular=False):
    """x: (..., d) points; mean (d,); cov a (d, d) positive-definite matrix (or a scalar)."""
    shape = tuple(shape_of(x))
    d = shape[-1] if shape else 1
    diff = x if mean is None else x - mean
    if len(shape_of(cov)) == 0:  # a scalar variance: the isotropic case; NaN for one <= 0 (SciPy raises)
        invalid = not_above(cov, 0)
        var = inside(invalid, cov, 1.0)
        out = -0.5 * (sum_(diff * diff, axis=-1) / var + d * (_LOG_2PI + log_(var)))
        return undefined(invalid, out, sum_(x, axis=-1), cov)
    if allow_singular:
        return _logpdf_singular(diff, cov)
    chol = cholesky(cov)
    # L y = diff for each point: the Mahalanobis distance is |y|^2, log det(cov) twice the log-diagonal of L
    y = squeeze(solve(chol, expand_dims(diff, -1)), -1)
    half_logdet = sum_(log(diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * (sum_(y * y, axis=-1) + d * _LOG_2PI) - half_logdet


def pdf(x, mean=None, cov=1, allow_singular=False):
    return exp(logpdf(x, mean, cov, allow_singular))


def entropy(mean=None, cov=1):
    """The differential entropy, 0.5 log det(2 pi e cov); it does not depend on the mean."""
    if len(shape_of(cov)) == 0:  # cov * I of the mean's dimension (1 without a mean), as SciPy
        d = shape_of(mean)[-1] if mean is not None and len(shape_of(mean)) else 1
        invalid = not_above(cov, 0)
        return undefined(invalid, 0.5 * d * (_LOG_2PI + 1 + log_(inside(invalid, cov, 1.0))), cov)
    d = shape_of(cov)[-1]
    half_logdet = sum_(log(diagonal(cholesky(cov), axis1=-2, axis2=-1)), axis=-1)
    return 0.5 * d * (_LOG_2PI + 1) + half_logdet
