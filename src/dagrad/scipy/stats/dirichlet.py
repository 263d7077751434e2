"""SciPy's `scipy.stats.dirichlet` functions: `logpdf` and `pdf` differentiable in the point `x` (on the
simplex, last axis) and the concentrations `alpha`; `rvs` draws with SciPy (no gradient).

As SciPy's, `x` may leave out its last component (it is then 1 minus the sum of the others). Off the
closed simplex (an entry below 0 or above 1, or entries not summing to 1 within 1e-9, SciPy's
tolerance, or a few float32 roundings) `logpdf` is -inf with gradient 0, as JAX's (SciPy raises a
ValueError there); an `alpha` with an entry <= 0 gives NaN (SciPy raises), see `_support`.

>>> import numpy as np
>>> float(pdf(np.array([0.5, 0.5]), np.array([1.0, 1.0])))  # uniform on the 1-simplex
1.0
>>> float(logpdf(np.array([0.5, 0.7]), np.array([2.0, 2.0])))  # off the simplex
-inf
"""

from __future__ import annotations

import numpy as np

from ..._core.errors import user_error
from ..._core.shapes import dtype_of, shape_of
from ...ops.elementwise import exp, where
from ...ops.reduce import sum as sum_
from ...ops.shape import concatenate, expand_dims
from .. import special
from ._support import any_of, inside, not_above, outside, undefined

try:  # the draws come from SciPy, an optional extra
    import scipy.stats as _stats
except ImportError:  # pragma: no cover  (the suite runs with SciPy)
    _stats = None

__all__ = ["logpdf", "pdf", "rvs"]


def _points(x, k):
    """x with its K components: SciPy's K - 1 form gets 1 minus the sum of the others appended."""
    shape = tuple(shape_of(x))
    if not shape or shape[-1] not in (k, k - 1):
        raise user_error(ValueError, "dagrad.scipy.stats.dirichlet.logpdf", f"x of shape {shape} does not fit alpha "
                         f"of {k} entries: its last axis must have {k} (or {k - 1}) entries", x)
    if shape[-1] == k:
        return x
    return concatenate([x, expand_dims(1 - sum_(x, axis=-1), -1)], axis=-1)


def _any(mask):
    """Whether any entry of `mask` along the last axis holds."""
    return sum_(where(mask, 1.0, 0.0), axis=-1) > 0


def logpdf(x, alpha):
    """x: (..., K) points of the simplex (or (..., K - 1)), alpha: (K,)."""
    k = shape_of(alpha)[-1] if shape_of(alpha) else 1
    x = _points(x, k)
    invalid = _any(not_above(alpha, 0))
    alpha_ = inside(invalid, alpha, 1.0)
    tolerance = max(1e-9, 4 * k * float(np.finfo(dtype_of(x) if dtype_of(x).kind == "f" else np.float64).eps))
    off = any_of(_any(any_of(x < 0, x > 1)), abs(sum_(x, axis=-1) - 1) > tolerance)
    x_ = inside(expand_dims(off, -1), x, 1 / k)  # the centre of the simplex stands in off it
    norm_const = sum_(special.gammaln(alpha_), axis=-1) - special.gammaln(sum_(alpha_, axis=-1))
    out = outside(off, sum_(special.xlogy(alpha_ - 1, x_), axis=-1) - norm_const)
    return undefined(invalid, out, sum_(x, axis=-1), sum_(alpha, axis=-1))


def pdf(x, alpha):
    return exp(logpdf(x, alpha))


def rvs(alpha, size=1, random_state=None):
    """Random points of the simplex, shape (size, K): SciPy's draws (data, not differentiable)."""
    if _stats is None:
        raise user_error(ImportError, "dagrad.scipy.stats.dirichlet.rvs", "needs SciPy, an optional extra: pip "
                         "install 'dagrad[scipy]' (or pip install scipy)")
    return _stats.dirichlet.rvs(alpha, size=size, random_state=random_state)
