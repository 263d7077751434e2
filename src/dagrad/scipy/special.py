"""`dagrad.scipy.special`: SciPy's special functions, differentiable (SciPy computes the values; it is the
optional extra `dagrad[scipy]`).

Each is an op declared here with `defop` like the op library's: its forward calls SciPy, its derivative
rules are written with the other functions of this module (the derivative of `gammaln` is `digamma`, of
`digamma` `polygamma(1, .)`, ...), so every order works in both modes and under `dg.compile`. A
derivative SciPy has no function for (with respect to the order `v` of `iv`, or the parameters of the
incomplete gamma and beta functions) raises NotImplementedError rather than being dropped.

>>> import numpy as np
>>> import dagrad as dg
>>> from dagrad.scipy import special
>>> float(dg.grad(special.gammaln)(3.0))  # digamma(3)
0.9227843350984671
"""

from __future__ import annotations

import math

import numpy as np

from .._core import batching
from .._core.dtypes import floating, of_ufunc
from .._core.errors import user_error
from .._core.op import apply, defop, public
from .._core.shapes import broadcast_shapes, dtype_of, normalize_axis, shape_of
from ..ops.elementwise import erf, exp, isfinite, log, log1p, not_equal, real, sigmoid, stop_gradient, where
from ..ops.elementwise import sign as sign_
from ..ops.nn import logsumexp as _logsumexp
from ..ops.reduce import max as max_
from ..ops.reduce import sum as sum_
from ..ops.shape import broadcast_to, reshape

try:  # the values come from SciPy, an optional extra
    import scipy.special as _sp
except ImportError:  # pragma: no cover  (the suite runs with SciPy)
    _sp = None

__all__ = ["beta", "betainc", "betaln", "digamma", "erf", "erfc", "erfcinv", "erfinv", "expit", "gamma",
           "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1", "i1e", "iv", "ive", "j0", "j1", "jn",
           "log_ndtr", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "rgamma", "stdtr",
           "xlog1py",
           "xlogy", "y0", "y1", "yn"]

_SQRT_PI = math.sqrt(math.pi)


def _needs_scipy(name):
    if _sp is None:
        raise user_error(ImportError, f"dagrad.scipy.special.{name}", "needs SciPy, an optional extra: pip install "
                         "'dagrad[scipy]' (or pip install scipy)")


# SciPy computes these on complex values too, and their rules (f'(z) times the cotangent) hold there
_HOLOMORPHIC = frozenset({"erfc", "xlogy", "xlog1py"})


def _op(name, forward, rules, nargs, ufunc=None, numpy_only=False):
    """A SciPy function as an op: elementwise, broadcasting; its dtype rule is NumPy's type resolution
    for SciPy's ufunc (`ufunc`, default the function of that name)."""
    rules = None if rules is None else tuple(rules)
    dtype = floating if _sp is None else (of_ufunc if nargs == 1 else _weak_rule)(getattr(_sp, ufunc or name))
    if name == "polygamma" and _sp is not None:  # the order n is an integer: the dtype is x's under digamma
        dtype = _on_second(of_ufunc(_sp.digamma))
    op = defop(name, forward, vjp=rules, jvp=rules, shape=broadcast_shapes, nargs=nargs, dtype=dtype,
               batch=batching.elementwise, numpy_only=numpy_only)
    function = op.function

    def checked(*args):
        _needs_scipy(name)
        for a in args:  # the rules are derived for real arguments (SciPy's complex support is partial)
            if dtype_of(a).kind == "c" and name not in _HOLOMORPHIC:
                raise user_error(TypeError, name, f"is defined here for real arguments, got dtype {dtype_of(a)} "
                                 "(erf, erfc, xlogy, xlog1py and logsumexp take complex ones)", a)
        return function(*args)

    checked.__name__ = checked.__qualname__ = name
    checked.__doc__ = f"`scipy.special.{name}`, differentiable."
    checked.op = op
    return checked


def _cast(out, ufunc, args):
    """SciPy's result in the dtype NumPy 2 gives for `args` (a Python number does not widen float32,
    where SciPy's ufuncs widen it to float64)."""
    dtypes = [type(a) if type(a) in (int, float, bool) else dtype_of(a) for a in args]
    # an array (a Dask or CuPy one too: SciPy's ufuncs reach them through __array_ufunc__) is cast as it is,
    # not through np.asarray (which would load a Dask array, and which CuPy refuses)
    return (out if hasattr(out, "astype") else np.asarray(out)).astype(_weak_result(ufunc, dtypes), copy=False)[()]


def _weak_result(ufunc, dtypes):
    """The result dtype of `ufunc` for inputs of `dtypes` (Python number types weakly typed, as NumPy 2
    types them): the arrays' common dtype (float64 for a float among integers), through SciPy's loops."""
    python = [d for d in dtypes if d is int or d is float or d is bool]  # identity: np.dtype(float) == float
    arrays = [np.dtype(d) for d in dtypes if not (d is int or d is float or d is bool)]
    common = np.result_type(*arrays) if arrays else np.result_type(*[d() for d in python])
    if any(d is float for d in python) and common.kind in "biu":
        common = np.result_type(common, np.float64)
    return ufunc.resolve_dtypes((common,) * ufunc.nin + (None,))[-1]


def _weak_rule(ufunc):
    return lambda *dtypes, **attrs: _weak_result(ufunc, dtypes)


def _on_second(rule):
    return lambda first, second, **attrs: rule(second)


def weakly(function, *args):
    """`function(*args)`, a Python float when every argument is a Python number. NumPy 2 types a Python
    number weakly (float32 * 2.5 is float32), but a function of one is a float64 scalar, which is not
    weak: a rule or a formula adding `gammaln(a)` of a Python `a` to a float32 value would make it
    float64 (and a float32 argument's second derivative with it).

    >>> (np.float32(1.0) - gammaln(2.5)).dtype, (np.float32(1.0) - weakly(gammaln, 2.5)).dtype
    (dtype('float64'), dtype('float32'))
    """
    out = function(*args)
    return float(out) if all(type(a) in (int, float) for a in args) else out


def _not_for(name, what):
    def rule(*args, **kwargs):
        raise user_error(NotImplementedError, f"dagrad.scipy.special.{name}", f"has no derivative with respect to "
                         f"{what}")

    return rule


_ORDER = None  # an integer order: no derivative (None in a rule tuple)

# the gamma family
gammaln = _op("gammaln", lambda x: _sp.gammaln(x), (lambda g, out, x: g * digamma(x),), 1)
digamma = _op("digamma", lambda x: _sp.digamma(x), (lambda g, out, x: g * polygamma(1, x),), 1)
psi = digamma
def _polygamma_forward(n, x):
    # scipy.special.polygamma is a Python function computing in float64: the result takes digamma's dtype
    dtype = _sp.digamma.resolve_dtypes((np.result_type(x), None))[-1]
    return np.asarray(_sp.polygamma(n, x)).astype(dtype, copy=False)[()]


polygamma = _op("polygamma", _polygamma_forward, (_ORDER, lambda g, out, n, x: g * polygamma(n + 1, x)), 2,
                "digamma", numpy_only=True)  # SciPy's polygamma is a Python function calling np.asarray
gamma = _op("gamma", lambda x: _sp.gamma(x), (lambda g, out, x: g * out * digamma(x),), 1)
gammasgn = _op("gammasgn", lambda x: _sp.gammasgn(x), None, 1)  # piecewise constant: no gradient


rgamma = _op("rgamma", lambda x: _sp.rgamma(x), (lambda g, out, x: -g * out * digamma(x),), 1)  # 1 / gamma


# beta and betaln are SciPy's own (its values at poles, infinities and negative arguments, which
# compositions of gammaln miss); d log|B(a, b)| / da = digamma(a) - digamma(a + b)
def _digamma_gap(a, b):
    return digamma(a) - digamma(a + b)


beta = _op("beta", lambda a, b: _cast(_sp.beta(a, b), _sp.beta, (a, b)),
           (lambda g, out, a, b: g * out * _digamma_gap(a, b), lambda g, out, a, b: g * out * _digamma_gap(b, a)), 2)
betaln = _op("betaln", lambda a, b: _cast(_sp.betaln(a, b), _sp.betaln, (a, b)),
             (lambda g, out, a, b: g * _digamma_gap(a, b), lambda g, out, a, b: g * _digamma_gap(b, a)), 2)


# multigammaln: SciPy's, so a <= (d - 1) / 2 raises its ValueError on every path (the forward runs there)
def _multigammaln_forward(a, d):
    dtype = _sp.digamma.resolve_dtypes((np.result_type(a), None))[-1]  # gammaln's dtype, not SciPy's float64
    return np.asarray(_sp.multigammaln(a, d)).astype(dtype, copy=False)[()]


def _multidigamma(a, d):
    """d multigammaln(a, d) / da: the sum of digamma(a - j / 2) for j < d."""
    out = 0
    for j in range(d):
        out = out + digamma(a - j / 2)
    return out


_multigammaln = defop("multigammaln", _multigammaln_forward, vjp=(lambda g, out, a, d: g * _multidigamma(a, d),),
                      jvp=(lambda t, out, a, d: t * _multidigamma(a, d),), shape=lambda a, d: tuple(a),
                      dtype=floating if _sp is None else (lambda a, d: of_ufunc(_sp.digamma)(a)),
                      batch=batching.elementwise, numpy_only=True,  # SciPy's multigammaln is a Python function
                      validates=True)  # a <= (d - 1) / 2 raises ValueError


@public(_multigammaln)
def multigammaln(a, d):
    """`scipy.special.multigammaln`: the log of the multivariate gamma function of dimension `d`; as
    SciPy, a ValueError unless every `a > (d - 1) / 2`.

    >>> round(float(multigammaln(2.0, 1)), 12)  # gammaln(2)
    0.0
    """
    _needs_scipy("multigammaln")
    if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)) \
            or not float(d).is_integer():
        raise user_error(ValueError, "dagrad.scipy.special.multigammaln", f"d should be a positive integer (the "
                         f"dimension), got {d!r}", a)
    if dtype_of(a).kind == "c":
        raise user_error(TypeError, "multigammaln", f"is defined here for real arguments, got dtype {dtype_of(a)}", a)
    return apply(_multigammaln, (a,), {"d": int(d)})


# incomplete gamma and beta: derivatives with respect to x only
def _gamma_density(a, x):
    """d gammainc(a, x) / dx (in the output's dtype: gammaln of a Python a stays a Python number); xlogy
    keeps it exp(-x) / gamma(1) = 1 at x = 0 for a = 1, not exp(0 * log 0) = NaN."""
    return exp(-x + xlogy(a - 1, x) - weakly(gammaln, a))


gammainc = _op("gammainc", lambda a, x: _cast(_sp.gammainc(a, x), _sp.gammainc, (a, x)),
               (_not_for("gammainc", "a"), lambda g, out, a, x: g * _gamma_density(a, x)), 2)
gammaincc = _op("gammaincc", lambda a, x: _cast(_sp.gammaincc(a, x), _sp.gammaincc, (a, x)),
                (_not_for("gammaincc", "a"), lambda g, out, a, x: -g * _gamma_density(a, x)), 2)
def _beta_density(a, b, x):
    """d betainc(a, b, x) / dx."""
    return exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - weakly(betaln, a, b))


_betainc = defop("betainc", lambda a, b, x: _cast(_sp.betainc(a, b, x), _sp.betainc, (a, b, x)),
                 vjp=(_not_for("betainc", "a"), _not_for("betainc", "b"),
                      lambda g, out, a, b, x: g * _beta_density(a, b, x)),
                 jvp=(_not_for("betainc", "a"), _not_for("betainc", "b"),
                      lambda t, out, a, b, x: t * _beta_density(a, b, x)),
                 shape=broadcast_shapes, dtype=floating if _sp is None else _weak_rule(_sp.betainc),
                 batch=batching.elementwise)


def betainc(a, b, x):
    """`scipy.special.betainc`: the regularised incomplete beta function (differentiable in x)."""
    _needs_scipy("betainc")
    return _betainc.function(a, b, x)


# Student's t cdf: SciPy's, with the density as its derivative in t (through z * z / df the betainc form
# would give inf * 0 = NaN at t = 0)
def _t_log_normaliser(df):
    return gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * log(df * math.pi)


def _t_density(df, t):
    return exp(weakly(_t_log_normaliser, df) - (df + 1) / 2 * log1p(t * t / df))


stdtr = _op("stdtr", lambda df, t: _cast(_sp.stdtr(df, t), _sp.stdtr, (df, t)),
            (_not_for("stdtr", "df"), lambda g, out, df, t: g * _t_density(df, t)), 2)

# the error function family
erfc = _op("erfc", lambda x: _sp.erfc(x), (lambda g, out, x: g * (-2 / _SQRT_PI) * exp(-(x * x)),), 1)
erfinv = _op("erfinv", lambda x: _sp.erfinv(x), (lambda g, out, x: g * (_SQRT_PI / 2) * exp(out * out),), 1)
erfcinv = _op("erfcinv", lambda x: _sp.erfcinv(x), (lambda g, out, x: g * (-_SQRT_PI / 2) * exp(out * out),), 1)
ndtr = _op("ndtr", lambda x: _sp.ndtr(x), (lambda g, out, x: g * exp(-0.5 * x * x) / math.sqrt(2 * math.pi),), 1)
log_ndtr = _op("log_ndtr", lambda x: _sp.log_ndtr(x),
               (lambda g, out, x: g * exp(-0.5 * x * x - out) / math.sqrt(2 * math.pi),), 1)
ndtri = _op("ndtri", lambda x: _sp.ndtri(x), (lambda g, out, x: g * math.sqrt(2 * math.pi) * exp(0.5 * out * out),), 1)

# Bessel functions (derivatives by the recurrences)
i0 = _op("i0", lambda x: _sp.i0(x), (lambda g, out, x: g * i1(x),), 1)
i1 = _op("i1", lambda x: _sp.i1(x), (lambda g, out, x: g * (i0(x) + iv(2, x)) / 2,), 1)
i0e = _op("i0e", lambda x: _sp.i0e(x), (lambda g, out, x: g * (i1e(x) - sign_(x) * out),), 1)
i1e = _op("i1e", lambda x: _sp.i1e(x), (lambda g, out, x: g * ((i0e(x) + ive(2, x)) / 2 - sign_(x) * out),), 1)
iv = _op("iv", lambda v, x: _cast(_sp.iv(v, x), _sp.iv, (v, x)), (_not_for("iv", "the order v"),
                                            lambda g, out, v, x: g * (iv(v - 1, x) + iv(v + 1, x)) / 2), 2)
ive = _op("ive", lambda v, x: _cast(_sp.ive(v, x), _sp.ive, (v, x)),
          (_not_for("ive", "the order v"),
           lambda g, out, v, x: g * ((ive(v - 1, x) + ive(v + 1, x)) / 2 - sign_(x) * out)), 2)
j0 = _op("j0", lambda x: _sp.j0(x), (lambda g, out, x: -g * j1(x),), 1)
j1 = _op("j1", lambda x: _sp.j1(x), (lambda g, out, x: g * (j0(x) - jn(2, x)) / 2,), 1)
jn = _op("jn", lambda n, x: _cast(_sp.jv(n, x), _sp.jv, (n, x)),
         (_ORDER, lambda g, out, n, x: g * (jn(n - 1, x) - jn(n + 1, x)) / 2), 2, "jv")
y0 = _op("y0", lambda x: _sp.y0(x), (lambda g, out, x: -g * y1(x),), 1)
y1 = _op("y1", lambda x: _sp.y1(x), (lambda g, out, x: g * (y0(x) - yn(2, x)) / 2,), 1)
yn = _op("yn", lambda n, x: _cast(_sp.yv(n, x), _sp.yv, (n, x)),
         (_ORDER, lambda g, out, n, x: g * (yn(n - 1, x) - yn(n + 1, x)) / 2), 2, "yv")


# compositions of the op library
def expit(x):
    """`scipy.special.expit`: the logistic sigmoid."""
    return sigmoid(x)


def logit(x):
    """`scipy.special.logit`: log(x / (1 - x))."""
    return log(x) - log1p(-x)


# xlogy and xlog1py are SciPy's (0 where x == 0, NaN where y is); the derivative in x is log(y) everywhere,
# x == 0 included (JAX's: x log y is linear in x), the one in y is x / y, and 0 where x == 0 (the function
# is 0 for every y there), without the 0 / 0 that x / y would give at (0, 0)
def _x_over(x, y):
    zero = x == 0
    return where(zero, 0, x / where(zero, 1, y))


xlogy = _op("xlogy", lambda x, y: _cast(_sp.xlogy(x, y), _sp.xlogy, (x, y)),
            (lambda g, out, x, y: g * weakly(log, y), lambda g, out, x, y: g * _x_over(x, y)), 2)
xlog1py = _op("xlog1py", lambda x, y: _cast(_sp.xlog1py(x, y), _sp.xlog1py, (x, y)),
              (lambda g, out, x, y: g * weakly(log1p, y), lambda g, out, x, y: g * _x_over(x, 1 + y)), 2)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """`scipy.special.logsumexp`: log(sum(b * exp(a))) over `axis`, without overflow. As SciPy's, terms
    with `b == 0` are left out (an infinite `a` there too), a negative sum gives NaN, and
    `return_sign=True` returns (log|sum|, its sign) (for complex values, the sign is the phase).

    >>> out, sign = logsumexp(np.array([0.0, 1.0]), b=np.array([1.0, -2.0]), return_sign=True)
    >>> round(float(out), 6), float(sign)
    (1.48988, -1.0)
    """
    if b is None and not return_sign:
        return _logsumexp(a, axis=axis, keepdims=keepdims)
    if b is None:
        b = 1.0
    shape = broadcast_shapes(shape_of(a), shape_of(b))
    a = broadcast_to(a, shape)
    axes = normalize_axis(axis, len(shape), "logsumexp", a)
    is_complex = dtype_of(a).kind == "c" or dtype_of(b).kind == "c"
    used = not_equal(b, 0)
    if any(shape[i] == 0 for i in (range(len(shape)) if axes is None else axes)):
        shift = 0.0  # an empty sum: no maximum to shift by
    else:  # the largest term that counts (its real part): a constant, as in logsumexp without b
        largest = max_(real(where(used, a, -math.inf)) if is_complex else where(used, a, -math.inf), axis=axes,
                       keepdims=True)
        shift = stop_gradient(where(isfinite(largest), largest, 0.0))
    # exp only of the terms that count, so an infinite a with b == 0 gives no inf * 0
    total = sum_(where(used, b * exp(where(used, a, shift) - shift), 0.0), axis=axes, keepdims=True)
    magnitude = abs(total)
    if is_complex:
        out = log(magnitude) + shift if return_sign else log(total) + shift
        sign = where(magnitude == 0, 0.0, total / where(magnitude == 0, 1.0, magnitude))
    else:
        out, sign = log(magnitude) + shift, sign_(total)
        if not return_sign:
            out = where(total < 0, math.nan, out)  # the log of a negative sum, as SciPy
    if not keepdims:
        kept = tuple(n for i, n in enumerate(shape) if axes is not None and i not in axes)
        out, sign = reshape(out, kept), reshape(sign, kept)
    return (out, sign) if return_sign else out
