"""Elementwise ops.

For an elementwise op the Jacobian is diagonal, so multiplying by the partial derivative
is both the vjp rule (applied to the cotangent) and the jvp rule (applied to the
tangent): each op below declares one rule per input and uses it for both.

Complex numbers follow JAX and HIPS autograd: a cotangent ct of z pairs with a tangent t as
Re(ct * t), without conjugation, so a holomorphic op's one rule (multiply by f'(z)) serves
complex values unchanged. The ops that are not holomorphic (abs, sign, conj, real, imag,
angle) declare a vjp and a jvp of their own, and the ops defined only on real numbers (relu,
sigmoid, softplus, erf; NumPy refuses floor, mod, arctan2, ...) refuse complex inputs.
"""

from __future__ import annotations

import importlib
import math
import operator

import numpy as np

from .._core.dtypes import attr, first, floating, of_ufunc, promoted, real_part
from .._core.errors import user_error
from .._core.op import apply, defop, public
from .._core import batching
from .._core.shapes import broadcast_shapes
from .._core.structural import real
from .._core.shapes import dtype_of as _dtype
from .._core.tensor import Tensor


def _elementwise(name, forward, rules, nargs, dtype=None, saves=None):
    # a ufunc's dtype rule is NumPy's own type resolution for it; `saves`: what the rules read (Op.saves),
    # declared once for both modes like the rules
    dtype = dtype or of_ufunc(forward)
    rules = None if rules is None else tuple(rules)
    return defop(name, forward, vjp=rules, jvp=rules, shape=broadcast_shapes, nargs=nargs, dtype=dtype,
                 batch=batching.elementwise, saves=saves).function


def _is_number(x):
    return isinstance(x, (int, float, np.number))


def _is_complex(x):
    return _dtype(x).kind == "c"


def _nonholomorphic(name, forward, vjp, jvp, dtype=None, saves=None):
    # a unary op whose vjp and jvp differ on complex values (see the module docstring)
    return defop(name, forward, vjp=(vjp,), jvp=(jvp,), shape=broadcast_shapes, nargs=1,
                 dtype=dtype or of_ufunc(forward), batch=batching.elementwise, saves=saves).function


def _real_only(name, forward):
    """`forward`, refusing complex input: the op is defined on real numbers only."""

    def checked(x):
        if np.iscomplexobj(x):
            raise TypeError(f"{name} is defined for real numbers only, got dtype {np.asarray(x).dtype} (take the "
                            "real part, imaginary part or abs() first)")
        return forward(x)

    return checked


# -- arithmetic
add = _elementwise("add", np.add, (lambda g, out, x, y: g, lambda g, out, x, y: g), 2, saves=())
subtract = _elementwise("subtract", np.subtract, (lambda g, out, x, y: g, lambda g, out, x, y: -g), 2, saves=())
multiply = _elementwise("multiply", np.multiply, (lambda g, out, x, y: g * y, lambda g, out, x, y: g * x), 2,
                       saves=((1,), (0,)))  # x's rule reads y, y's reads x: `h * 2` saves nothing of h
divide = _elementwise(
    "divide", np.divide, (lambda g, out, x, y: g / y, lambda g, out, x, y: -g * out / y), 2,
    saves=((1,), (1, "out")),
)


def _power_rule_base(g, out, x, y):
    # d/dx x**y = y * x**(y-1); PyTorch's convention: zero where y == 0 (even at x == 0)
    if _is_number(y):
        return g * 0 if y == 0 else g * (y * x ** (y - 1))
    return g * where(y == 0, 0, y * x ** (y - 1))


def _power_rule_exponent(g, out, x, y):
    # d/dy x**y = x**y * log(x); PyTorch's convention: zero where x == 0 and y >= 0 (0**y is 0 or 1
    # there), else x**y * log(x) as it stands: -inf at 0**-1 (inf * log(0)), NaN for x < 0
    if _is_number(x):  # a Python number stays weakly typed, so float32 stays float32
        if x != 0:  # complex(...) for a complex base: float() would drop the imaginary part of its log
            return g * (out * (complex(np.log(x)) if isinstance(x, (complex, np.complexfloating)) else
                               float(np.log(x))))
        if _is_number(y):
            return g * 0 if y >= 0 else g * -math.inf
        # g times the derivative, not a choice between g * 0 and g * -inf: the unchosen g * -inf would give
        # the second derivative 0 * -inf = NaN
        zero = zeros_like(y)
        return g * where(y >= 0, zero, zero - math.inf)
    # where x == 0 and y >= 0, log(1) = 0 stands in for log(0) (out is 0 or 1 there: no 0 * inf)
    return g * (out * log(where(logical_and(x == 0, y >= 0), 1, x)))


power = _elementwise("power", np.power, (_power_rule_base, _power_rule_exponent), 2, saves=((0, 1), (0, 1, "out")))
# np.float_power has a loop of its own, which can differ from np.power's (a SIMD loop) by an ulp on float64
# values: its own op, so that dnp.float_power equals NumPy's bit for bit; the derivatives are power's
float_power = _elementwise("float_power", np.float_power, (_power_rule_base, _power_rule_exponent), 2,
                           saves=((0, 1), (0, 1, "out")))


def _extremum_rules(wins):
    # the winner takes the gradient; a tie shares it evenly (PyTorch's convention)
    def rule(g, out, mine, other):
        return where(wins(mine, other), g, where(mine == other, g * 0.5, 0))

    return rule, lambda g, out, x, y: rule(g, out, y, x)


maximum = _elementwise("maximum", np.maximum, _extremum_rules(operator.gt), 2, saves=(0, 1))
minimum = _elementwise("minimum", np.minimum, _extremum_rules(operator.lt), 2, saves=(0, 1))

true_divide = divide


def _mod_rule_divisor(g, out, x, y):
    # x mod y = x - floor(x / y) * y; PyTorch's remainder has the same derivative
    return -g * floor(x / y)


mod = _elementwise("mod", np.mod, (lambda g, out, x, y: g, _mod_rule_divisor), 2, saves=((), (0, 1)))

negative = _elementwise("negative", np.negative, (lambda g, out, x: -g,), 1, saves=())
positive = _elementwise("positive", np.positive, (lambda g, out, x: g,), 1, saves=())
# abs'(0) = 0. Of complex z: d|z| = Re(conj(z) dz) / |z| = Re(conj(sign(z)) dz)
abs = _nonholomorphic(
    "abs", np.abs,
    lambda g, out, x: g * conj(sign(x)) if _is_complex(x) else g * sign(x),
    lambda t, out, x: real(conj(sign(x)) * t) if _is_complex(x) else t * sign(x),
    saves=(0,),
)
absolute = abs
reciprocal = _elementwise("reciprocal", np.reciprocal, (lambda g, out, x: -g * (out * out),), 1, saves=("out",))
square = _elementwise("square", np.square, (lambda g, out, x: g * (x * 2),), 1, saves=(0,))

# piecewise constant: the derivative is zero (not missing), as in PyTorch and JAX
_ZERO = (lambda g, out, x, **attrs: g * 0,)


# sign(z) = z / |z| is piecewise constant on reals, but not on complex numbers (0 at 0, as PyTorch's sgn):
# d sign = (dz - sign * Re(conj(sign) dz)) / |z|
def _sign_vjp(g, out, x):
    if not _is_complex(x):
        return g * 0
    r = abs(x)
    scale = where(r == 0, 0, 1 / where(r == 0, 1, r))
    return (g - conj(out) * real(g * out)) * scale


def _sign_jvp(t, out, x):
    if not _is_complex(x):
        return t * 0
    r = abs(x)
    scale = where(r == 0, 0, 1 / where(r == 0, 1, r))
    return (t - out * real(conj(out) * t)) * scale


sign = _nonholomorphic("sign", np.sign, _sign_vjp, _sign_jvp, saves=(0, "out"))
floor = _elementwise("floor", np.floor, _ZERO, 1, saves=())
ceil = _elementwise("ceil", np.ceil, _ZERO, 1, saves=())
_round = defop("round", lambda x, decimals: np.round(x, decimals), vjp=_ZERO, jvp=_ZERO,
               shape=lambda shape, decimals: shape, dtype=first, batch=batching.elementwise, saves=())


@public(_round)
def round(x, decimals=0):
    """Rounds half to even, as `np.round`; the gradient is zero."""
    return apply(_round, (x,), {"decimals": int(decimals)})


# -- exponentials and powers
_LN2, _LN10 = math.log(2.0), math.log(10.0)  # Python floats: weakly typed, float32 stays float32
exp = _elementwise("exp", np.exp, (lambda g, out, x: g * out,), 1, saves=("out",))
exp2 = _elementwise("exp2", np.exp2, (lambda g, out, x: g * (out * _LN2),), 1, saves=("out",))
expm1 = _elementwise("expm1", np.expm1, (lambda g, out, x: g * (out + 1),), 1, saves=("out",))
log = _elementwise("log", np.log, (lambda g, out, x: g / x,), 1, saves=(0,))
log2 = _elementwise("log2", np.log2, (lambda g, out, x: g / (x * _LN2),), 1, saves=(0,))
log10 = _elementwise("log10", np.log10, (lambda g, out, x: g / (x * _LN10),), 1, saves=(0,))
log1p = _elementwise("log1p", np.log1p, (lambda g, out, x: g / (x + 1),), 1, saves=(0,))
# log(e^x + e^y): the derivatives are the softmax weights e^(x - out), smooth at every order (a composition
# through maximum and abs would lose the second derivative where x == y)
logaddexp = _elementwise("logaddexp", np.logaddexp,
                         (lambda g, out, x, y: g * exp(x - out), lambda g, out, x, y: g * exp(y - out)), 2,
                         saves=((0, "out"), (1, "out")))
logaddexp2 = _elementwise("logaddexp2", np.logaddexp2,
                          (lambda g, out, x, y: g * exp2(x - out), lambda g, out, x, y: g * exp2(y - out)), 2,
                          saves=((0, "out"), (1, "out")))
sqrt = _elementwise("sqrt", np.sqrt, (lambda g, out, x: g / (out * 2),), 1, saves=("out",))
# np.cbrt itself: sign(x) * |x| ** (1/3) differs from it by an ulp on about half of all values; the
# derivative 1 / (3 cbrt(x)**2) is infinite at 0, as JAX's
cbrt = _elementwise("cbrt", np.cbrt, (lambda g, out, x: g / (out * out * 3),), 1, saves=("out",))

# -- trigonometric and hyperbolic
sin = _elementwise("sin", np.sin, (lambda g, out, x: g * cos(x),), 1, saves=(0,))
cos = _elementwise("cos", np.cos, (lambda g, out, x: -(g * sin(x)),), 1, saves=(0,))
tan = _elementwise("tan", np.tan, (lambda g, out, x: g * (1 + out * out),), 1, saves=("out",))
arcsin = _elementwise("arcsin", np.arcsin, (lambda g, out, x: g / sqrt(1 - x * x),), 1, saves=(0,))
arccos = _elementwise("arccos", np.arccos, (lambda g, out, x: -g / sqrt(1 - x * x),), 1, saves=(0,))
arctan = _elementwise("arctan", np.arctan, (lambda g, out, x: g / (1 + x * x),), 1, saves=(0,))


def _arctan2_scale(y, x):
    # 1 / (x*x + y*y), and 0 where that is infinite (at the origin), as PyTorch's atan2 backward:
    # the gradient at (0, 0) is (0, -0), not NaN
    r2 = x * x + y * y
    origin = r2 == 0
    scale = 1 / where(origin, 1, r2)
    return where(logical_or(origin, logical_not(isfinite(scale))), 0, scale)


arctan2 = _elementwise(
    "arctan2", np.arctan2,
    (lambda g, out, y, x: g * x * _arctan2_scale(y, x), lambda g, out, y, x: g * -y * _arctan2_scale(y, x)), 2,
    saves=(0, 1),
)
hypot = _elementwise("hypot", np.hypot, (lambda g, out, x, y: g * x / out, lambda g, out, x, y: g * y / out), 2,
                     saves=((0, "out"), (1, "out")))
sinh = _elementwise("sinh", np.sinh, (lambda g, out, x: g * cosh(x),), 1, saves=(0,))
cosh = _elementwise("cosh", np.cosh, (lambda g, out, x: g * sinh(x),), 1, saves=(0,))
tanh = _elementwise("tanh", np.tanh, (lambda g, out, x: g * (1 - out * out),), 1, saves=("out",))
arcsinh = _elementwise("arcsinh", np.arcsinh, (lambda g, out, x: g / sqrt(x * x + 1),), 1, saves=(0,))
arccosh = _elementwise("arccosh", np.arccosh, (lambda g, out, x: g / sqrt(x * x - 1),), 1, saves=(0,))
arctanh = _elementwise("arctanh", np.arctanh, (lambda g, out, x: g / (1 - x * x),), 1, saves=(0,))


# -- activations
def _sigmoid(x):
    # exp of a non-positive number only, so no overflow for large |x|
    e = np.exp(-np.abs(x))
    return np.where(np.greater_equal(x, 0), 1 / (1 + e), e / (1 + e))[()]


def _real_ufunc(ufunc, *extra):
    # NumPy's type resolution for `ufunc`, refusing complex inputs (the op is defined on reals only)
    def rule(*dtypes, **attrs):
        if any(d is complex or (not isinstance(d, type) and np.dtype(d).kind == "c") for d in dtypes):
            raise TypeError(f"defined for real numbers only, got {dtypes}")
        return ufunc.resolve_dtypes((*dtypes, *extra, None))[-1]

    return rule


sigmoid = _elementwise("sigmoid", _real_only("sigmoid", _sigmoid), (lambda g, out, x: g * (out * (1 - out)),), 1,
                       _real_ufunc(np.exp), saves=("out",))
relu = _elementwise("relu", _real_only("relu", lambda x: np.maximum(x, 0)),  # relu'(0) = 0
                    (lambda g, out, x: where(x > 0, g, 0),), 1, _real_ufunc(np.maximum, int), saves=(0,))


def _softplus(x):
    # log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
    return (np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))[()]


softplus = _elementwise("softplus", _real_only("softplus", _softplus), (lambda g, out, x: g * sigmoid(x),), 1,
                        _real_ufunc(np.exp), saves=(0,))

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf(x):
    if hasattr(x, "map_blocks"):  # a Dask array: erf chunk by chunk, lazily (np.asarray would compute it all)
        return x.map_blocks(_erf_numpy, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    return _erf_numpy(x)


def _erf_numpy(x):
    # math.erf is exact to double precision; NumPy has no erf of its own. The ufunc is made here,
    # not once at import, so that the function stands alone (dg.compile's export copies it).
    x = np.asarray(x)
    if x.dtype.kind == "c":  # math.erf is real only; SciPy's erf (an optional extra) is entire
        try:  # imported when first needed: SciPy is not a run-time dependency
            special = importlib.import_module("scipy.special")
        except ImportError:
            raise TypeError(f"erf of complex numbers (dtype {x.dtype}) is computed by SciPy, the optional extra "
                            "dagrad[scipy] (pip install 'dagrad[scipy]')") from None
        return special.erf(x)[()]
    dtype = x.dtype if x.dtype.kind == "f" else np.float64
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=dtype)[()]


erf = _elementwise("erf", _erf, (lambda g, out, x: g * (exp(-(x * x)) * _TWO_OVER_SQRT_PI),), 1, floating, saves=(0,))
erf.__doc__ = """The error function, elementwise (of complex values through SciPy, the extra dagrad[scipy])."""

# -- complex numbers (see the module docstring for the convention)
conj = _elementwise("conjugate", np.conjugate, (lambda g, out, x: conj(g),), 1, saves=())  # the same rule both ways
conjugate = conj
imag = _nonholomorphic(
    "imag", np.imag,
    lambda g, out, x: g * -1j if _is_complex(x) else g * 0,  # Im(dz) = Re(-i dz)
    lambda t, out, x: imag(t),
    real_part,
    saves=(),
)
# d angle(z) = Im(conj(z) dz) / |z|^2 = Re(-i conj(z) dz) / |z|^2; of a real number: piecewise constant
angle = _nonholomorphic(
    "angle", np.angle,
    lambda g, out, x: g * (conj(x) * -1j) / (real(x) ** 2 + imag(x) ** 2) if _is_complex(x) else g * 0,
    lambda t, out, x: imag(conj(x) * t) / (real(x) ** 2 + imag(x) ** 2) if _is_complex(x) else t * 0,
    # np.angle of a real array is arctan2(0, x)
    lambda d: real_part(d) if d is complex or np.dtype(d).kind == "c" else of_ufunc(np.arctan2)(int, d),
    saves=(0,),
)
iscomplex = defop("iscomplex", np.iscomplex, shape=broadcast_shapes, nargs=1, dtype=lambda d: np.dtype(bool),
                  batch=batching.elementwise).function
isreal = defop("isreal", np.isreal, shape=broadcast_shapes, nargs=1, dtype=lambda d: np.dtype(bool),
               batch=batching.elementwise).function

# -- selection
def _plus_zero(v):
    return type(v) in (int, float) and v == 0 and math.copysign(1.0, v) == 1.0


def _bits_where(mask, x):
    """x where mask is set and +0.0 elsewhere, for float64 or float32 x of mask's shape: x's bits ANDed with all
    ones or all zeros. None for anything else."""
    if type(x) is not np.ndarray or x.shape != mask.shape:
        return None
    if x.dtype == np.float64:
        integer = np.int64
    elif x.dtype == np.float32:
        integer = np.int32
    else:
        return None
    bits = np.negative(mask.view(np.int8), dtype=integer)  # -1 (all ones) where the mask is set
    bits &= x.view(integer)
    return bits.view(x.dtype)


def _where_forward(condition, x, y):
    """np.where, bit for bit. A choice between an array and +0 (a ReLU's gradient, a max pool's, a clip's) is made
    on the array's bits: np.where branches on every entry, 10 ns each on a mask as random as a ReLU's (0.7 ms for
    65,536 entries, measured), the bits 0.5 ns."""
    if type(condition) is np.ndarray and condition.dtype == np.bool_ and condition.size >= 1024:
        if _plus_zero(y):
            out = _bits_where(condition, x)
        elif _plus_zero(x):
            out = _bits_where(~condition, y)
        else:
            out = None
        if out is not None:
            return out
    return np.where(condition, x, y)


_where_rules = (None, lambda g, out, c, x, y: where(c, g, 0), lambda g, out, c, x, y: where(c, 0, g))
where = defop(
    "where",
    _where_forward,
    vjp=_where_rules,
    jvp=_where_rules,
    shape=broadcast_shapes,
    fresh=True,
    dtype=lambda c, x, y: promoted(x, y),
    batch=batching.elementwise,  # the condition only selects
    saves=(0,),
).function


def _fmax_rules(first_wins):
    # NaN-ignoring max/min: the side that is chosen takes the gradient; a tie goes to the first
    # argument, as torch.fmax/fmin
    def chosen(x, y):
        return logical_or(first_wins(x, y), isnan(y))

    return lambda g, out, x, y: where(chosen(x, y), g, 0), lambda g, out, x, y: where(chosen(x, y), 0, g)


fmax = _elementwise("fmax", np.fmax, _fmax_rules(operator.ge), 2, saves=(0, 1))
fmin = _elementwise("fmin", np.fmin, _fmax_rules(operator.le), 2, saves=(0, 1))


def _clip_mask(x, lo, hi):
    """Where x lies inside [lo, hi] (bounds may be None), as torch.clamp: the bounds count as inside."""
    inside = True
    if lo is not None:
        inside = logical_and(inside, x >= lo)
    if hi is not None:
        inside = logical_and(inside, x <= hi)
    return inside


def _clip_low_wins(x, lo, hi):
    # np.clip is minimum(maximum(x, lo), hi): lo is the result where x < lo, unless hi is below it
    return x < lo if hi is None else logical_and(x < lo, lo < hi)


def _clip_high_wins(x, lo, hi):
    return x > hi if lo is None else logical_or(x > hi, lo > hi)


# the masks match torch.clamp, including its ties (a bound equal to x passes the gradient to x); as for
# every elementwise op, one rule per input serves both modes
_clip_rules = tuple(lambda g, out, x, lo, hi, mask=mask: where(mask(x, lo, hi), g, 0)
                    for mask in (_clip_mask, _clip_low_wins, _clip_high_wins))
_clip = defop(
    "clip",
    lambda x, lo, hi: np.clip(x, lo, hi),
    vjp=_clip_rules,
    jvp=_clip_rules,
    shape=lambda x, lo, hi: broadcast_shapes(x, lo, hi),
    dtype=promoted,
    batch=batching.elementwise,
    saves=(0, 1, 2),
)


@public(_clip)
def clip(x, a_min=None, a_max=None):
    """`x` limited to [a_min, a_max] (either may be None), as `np.clip`; the bounds may be tensors."""
    if a_min is None and a_max is None:
        raise user_error(ValueError, "clip", "a_min and a_max cannot both be None", x)
    return apply(_clip, (x, a_min, a_max))


# -- comparisons and tests: bool results, no gradient
equal = _elementwise("equal", np.equal, None, 2)
not_equal = _elementwise("not_equal", np.not_equal, None, 2)
less = _elementwise("less", np.less, None, 2)
less_equal = _elementwise("less_equal", np.less_equal, None, 2)
greater = _elementwise("greater", np.greater, None, 2)
greater_equal = _elementwise("greater_equal", np.greater_equal, None, 2)
isfinite = _elementwise("isfinite", np.isfinite, None, 1)
isnan = _elementwise("isnan", np.isnan, None, 1)
logical_and = _elementwise("logical_and", np.logical_and, None, 2)
logical_or = _elementwise("logical_or", np.logical_or, None, 2)
logical_not = _elementwise("logical_not", np.logical_not, None, 1)


# -- treating a value as a constant
stop_gradient = _elementwise("stop_gradient", lambda x: x, None, 1, first)
stop_gradient.__doc__ = """`x` as a constant: the same value, no gradient through it (as `jax.lax.stop_gradient`)."""

# -- constant arrays shaped like another (no gradient: their values do not depend on x's)
_full_like = defop(
    "full_like",
    lambda x, fill_value, dtype: np.full_like(x, fill_value, dtype=dtype),
    shape=lambda shape, fill_value, dtype: shape,
    fresh=True,
    dtype=attr("dtype"),
    batch=batching.elementwise,
)


def _real_dtype(dtype, op, x):
    """np.dtype(dtype), refused unless bool, integer, float or complex: object or text arrays would
    carry values no op computes with."""
    try:
        dtype = np.dtype(dtype)
    except TypeError as err:
        raise user_error(TypeError, op, f"{dtype!r} is not a dtype ({err})", x) from None
    if dtype.kind not in "biufc":
        raise user_error(TypeError, op, f"dtype {dtype} is not supported (dagrad holds bool, integer, float and "
                         f"complex data)", x)
    return dtype


@public(_full_like)
def full_like(x, fill_value, dtype=None):
    """An array of `fill_value` with x's shape (and dtype unless given), as `np.full_like`.

    >>> full_like(np.zeros(2), 1.5)
    array([1.5, 1.5])
    """
    if type(fill_value) not in (int, float, bool, complex) and np.asarray(fill_value).dtype.kind not in "biufc":
        raise user_error(TypeError, "full_like", f"the fill value must be a number, got {fill_value!r}", x)
    return _filled(x, fill_value, dtype, "full_like")


def _filled(x, fill_value, dtype, op):
    return apply(_full_like, (x,), {"fill_value": fill_value, "dtype": None if dtype is None else
                                    _real_dtype(dtype, op, x)})


def zeros_like(x, dtype=None):
    """Zeros with x's shape and dtype, as `np.zeros_like`."""
    return _filled(x, 0, dtype, "zeros_like")


def ones_like(x, dtype=None):
    """Ones with x's shape and dtype, as `np.ones_like`."""
    return _filled(x, 1, dtype, "ones_like")


# -- casting
def _astype_shape(shape, dtype):
    return shape


_astype = defop(
    "astype",
    # an array's own astype (a Dask array stays lazy); np.asarray for numbers
    lambda x, dtype: (np.real(x) if np.iscomplexobj(x) and dtype.kind != "c" else
                      x if hasattr(x, "astype") else np.asarray(x)).astype(
        dtype, copy=False)[()],
    # a cast from complex to real keeps the real part (Re(dz)), so its cotangent is g itself, and
    # a real input takes the real part of a complex cotangent
    vjp=(lambda g, out, x, dtype: astype(real(g) if _is_complex(g) and not _is_complex(x) else g, _dtype(x)),),
    jvp=(lambda t, out, x, dtype: astype(real(t) if _is_complex(t) and dtype.kind != "c" else t, dtype),),
    shape=_astype_shape,
    dtype=attr("dtype"),
    batch=batching.elementwise,
    saves=(),
)


@public(_astype)
def astype(x, dtype):
    """`x` cast to `dtype` (bool, integer, float or complex; complex to real keeps the real part, as
    NumPy but without its warning); casting to bool or integers cuts the gradient.

    >>> astype(np.array([1.5, -2.0]), np.int64)
    array([ 1, -2])
    """
    dtype = _real_dtype(dtype, "astype", x)
    if dtype.kind not in "fc" and isinstance(x, Tensor):
        # no gradient through a cast to bool or integers: an eager tensor is detached; a graph's node (no
        # values to detach) and a transform's value are cut by a stop_gradient node, which keeps a value at
        # its level (detach() makes an eager tensor of the values one level down, which a transform of
        # arrays would then hand out: dg.grad's result was a Tensor)
        x = x.detach() if x._level == 0 and not x._symbolic else stop_gradient(x)
    return apply(_astype, (x,), {"dtype": dtype})
