"""SciPy's `scipy.stats.dirichlet` functions: `logpdf` and `pdf` differentiable in the point `x` (on the
simplex, last axis) and the concentrations `alpha`; `rvs` draws with SciPy (no gradient).

>>> import numpy as np
>>> float(pdf(np.array([0.5, 0.5]), np.array([1.0, 1.0])))  # uniform on the 1-simplex
1.0
"""

from __future__ import annotations

from ..._core.errors import user_error
from ...ops.elementwise import exp
from ...ops.reduce import sum as sum_
from .. import special

try:  # the draws come from SciPy, an optional extra
    import scipy.stats as _stats
except ImportError:  # pragma: no cover  (the suite runs with SciPy)
    _stats = None

__all__ = ["logpdf", "pdf", "rvs"]


def logpdf(x, alpha):
    """x: (..., K) points of the simplex, alpha: (K,)."""
    norm_const = sum_(special.gammaln(alpha), axis=-1) - special.gammaln(sum_(alpha, axis=-1))
    return sum_(special.xlogy(alpha - 1, x), axis=-1) - norm_const


def pdf(x, alpha):
    return exp(logpdf(x, alpha))


def rvs(alpha, size=1, random_state=None):
    """Random points of the simplex, shape (size, K): SciPy's draws (data, not differentiable)."""
    if _stats is None:
        raise user_error(ImportError, "dagrad.scipy.stats.dirichlet.rvs", "needs SciPy, an optional extra: pip "
                         "install 'dagrad[scipy]' (or pip install scipy)")
    return _stats.dirichlet.rvs(alpha, size=size, random_state=random_state)
