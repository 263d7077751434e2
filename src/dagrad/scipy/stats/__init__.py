"""`dagrad.scipy.stats`: the densities and distribution functions of SciPy's common distributions,
written with `dagrad.scipy.special` and the op library, so they are differentiable in every argument
SciPy's formulas make smooth (the value, `loc`, `scale` and the shape parameters), to any order.

Each distribution is a module of functions (`stats.norm.logpdf`, as SciPy's `scipy.stats.norm.logpdf`,
and importable as `dagrad.scipy.stats.norm`, as autograd's `autograd.scipy.stats.norm`).

Outside a distribution's support the values are SciPy's (a log-density -inf, a cdf 0 or 1) with
gradient 0, as JAX's; invalid parameters give NaN (docs/numpy.md, "SciPy").

>>> import numpy as np
>>> import dagrad as dg
>>> from dagrad.scipy import stats
>>> float(stats.norm.logpdf(0.5, loc=0.0, scale=2.0))
-1.643335713764618
>>> float(dg.grad(lambda mu: stats.norm.logpdf(1.0, loc=mu, scale=1.0))(0.25))  # (x - mu) / scale**2
0.75
>>> float(stats.gamma.logpdf(-1.0, 2.0)), float(dg.grad(lambda x: stats.gamma.logpdf(x, 2.0))(-1.0))
(-inf, 0.0)
"""

from __future__ import annotations

from . import beta, chi2, dirichlet, gamma, multivariate_normal, norm, poisson, t

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]
