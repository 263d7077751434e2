"""SciPy's `scipy.stats.t` functions, differentiable: Student's t distribution (`df` degrees of freedom;
`df = inf` is the normal distribution, as SciPy's). `df <= 0` or `scale <= 0` give NaN (see `_support`).

>>> float(cdf(0.0, 3.0))
0.5
"""

from __future__ import annotations

import math

from ...ops.elementwise import exp, log, log1p
from .. import special
from ..special import weakly
from ._support import any_of, inside, log_, not_above, undefined

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _standard(x, df, loc, scale):
    """(invalid, normal, df, z, scale): df and scale each at a valid stand-in where it is invalid (see
    `_support`), df also where it is infinite (`normal`: the normal distribution's formulas serve there),
    and z = (x - loc) / scale."""
    bad_df, bad_scale = not_above(df, 0), not_above(scale, 0)
    normal = df == math.inf
    scale = inside(bad_scale, scale, 1.0)
    return any_of(bad_df, bad_scale), normal, inside(any_of(bad_df, normal), df, 1.0), (x - loc) / scale, scale


def _log_normaliser(df):
    return special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * log(df * math.pi)


def logpdf(x, df, loc=0.0, scale=1.0):
    invalid, normal, df_, z, scale_ = _standard(x, df, loc, scale)
    out = weakly(_log_normaliser, df_) - (df_ + 1) / 2 * log1p(z * z / df_)
    out = inside(normal, out, -0.5 * z * z - 0.5 * math.log(2 * math.pi)) - log_(scale_)
    return undefined(invalid, out, x, df, loc, scale)


def pdf(x, df, loc=0.0, scale=1.0):
    return exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0.0, scale=1.0):
    invalid, normal, df_, z, _ = _standard(x, df, loc, scale)
    return undefined(invalid, inside(normal, special.stdtr(df_, z), special.ndtr(z)), x, df, loc, scale)


def logcdf(x, df, loc=0.0, scale=1.0):
    return log(cdf(x, df, loc, scale))


def sf(x, df, loc=0.0, scale=1.0):
    return cdf(-x, df, -loc, scale)  # the distribution is symmetric about loc


def logsf(x, df, loc=0.0, scale=1.0):
    return log(sf(x, df, loc, scale))
