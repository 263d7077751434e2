"""`dagrad.scipy.integrate`: `odeint`, differentiable (SciPy's LSODA computes the values; SciPy is the
optional extra `dagrad[scipy]`).

`odeint` is one op. Its reverse rule is the adjoint method (as autograd's and JAX's): the adjoint state
a(t) = dL/dy(t) and the cotangents of the extra arguments are integrated backwards from the last time to
the first, beside y itself, by `odeint` again, with the vector-Jacobian products of `func` taken by
`dagrad.vjp`. Its forward rule integrates the tangent dy/dt' = J_y dy + J_args dargs beside y. As both
rules call `odeint`, the second order works too.

>>> import numpy as np
>>> import dagrad as dg
>>> from dagrad.scipy.integrate import odeint
>>> t = np.array([0.0, 1.0])
>>> float(odeint(lambda y, t, k: -k * y, 1.0, t, 2.0)[1].round(6))  # exp(-2)
0.135335
>>> float(dg.grad(lambda k: odeint(lambda y, t, k: -k * y, 1.0, t, k)[1])(2.0).round(5))  # -exp(-2)
-0.13534
"""

from __future__ import annotations

import warnings

import numpy as np

from .._core.dtypes import floating
from .._core.errors import user_error
from .._core.op import apply, defop
from .._core.shapes import shape_of as _shape
from ..ops.elementwise import astype
from ..ops.reduce import sum
from ..ops.shape import as_array, concatenate, getitem, reshape, stack
from ..transforms import jvp as _jvp
from ..transforms import vjp as _vjp

try:  # the values come from SciPy, an optional extra
    import scipy.integrate as _si
except ImportError:  # pragma: no cover  (the suite runs with SciPy)
    _si = None

__all__ = ["odeint"]

_WHERE = "dagrad.scipy.integrate.odeint"


def _rhs(y, s, func, shape, args, bad):
    """func on LSODA's flat float64 state (module-level, so that exported code can hold it); the first time
    and state where it returned NaN or inf are noted in `bad`, which the error names if the integration fails."""
    out = func(y.reshape(shape), s, *args)
    # a Tensor a transform traces, a graph's node or one that requires grad (duck-typed: export copies this
    # function, which may name only NumPy): np.asarray would refuse it, naming a line in SciPy, or drop its
    # derivative. Say what to do instead, in a plain error: dispatch adds the op, the shapes and the user's line
    if getattr(out, "_level", 0) or getattr(out, "_symbolic", False) or getattr(out, "_requires_grad", False):
        raise TypeError("func returned a value that depends on a differentiated or traced value it closes over "
                        "(a parameter of dg.grad, a tensor that requires grad, a graph's node), not only on y, t "
                        "and args: odeint could not differentiate through it. Pass that value in args: "
                        "odeint(func, y0, t, k) with func(y, t, k)")
    out = np.asarray(out, dtype=np.float64).reshape(-1)
    if not bad and not np.isfinite(out).all():
        bad.append((s, y.reshape(shape).copy()))
    return out


def _forward(y0, t, *args, func, rtol, atol, mxstep, hmax):
    dtype = np.result_type(y0)  # the solution's dtype (as JAX's): LSODA computes in float64
    if dtype.kind == "c":  # float64 would drop the imaginary part silently
        raise TypeError("odeint integrates real states (SciPy's LSODA); pass the real and imaginary parts as two "
                        "real states")
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    y0 = np.asarray(y0, dtype=np.float64)
    if len(t) == 1:  # the solution at t[0] alone: y0 (as SciPy and JAX), nothing to integrate
        return y0.reshape((1,) + y0.shape).astype(dtype)
    bad = []
    with np.errstate(all="ignore"), warnings.catch_warnings():  # a failure is raised below, not warned of
        warnings.simplefilter("ignore", _si.ODEintWarning)
        ys, info = _si.odeint(_rhs, y0.reshape(-1), t, args=(func, y0.shape, args, bad), rtol=rtol, atol=atol,
                              mxstep=mxstep, hmax=hmax, full_output=True)
    if info["message"] != "Integration successful." or not np.isfinite(ys).all():
        # a plain error: dispatch adds the op, the inputs' shapes and the user's line
        if bad:  # LSODA may call it "successful": the func is what failed
            s, y = bad[0]
            raise FloatingPointError(f"the integration failed: func returned NaN or inf at t={float(s)!r} "
                                     f"(y={np.array2string(y, threshold=8)}): the solution diverges there, or "
                                     "func is not defined at that y and t")
        raise FloatingPointError(f"the integration failed ({info['message'].strip()}): the solution diverges or "
                                 "the step became too small (a stiff or blowing-up func?)")
    return ys.reshape((len(t),) + y0.shape).astype(dtype, copy=False)


def _flat(parts):
    return concatenate([reshape(p, (-1,)) for p in parts], axis=0)


def _split(flat, shapes):
    out, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        out.append(reshape(getitem(flat, slice(start, start + size)), shape))
        start += size
    return out


def _vjp_rule(g, out, y0, t, *args, func, **options):
    """The adjoint method: between consecutive times the augmented state (y, a, args_bar) follows
    y' = f, a' = -a J_y f, args_bar' = -a J_args f, integrated from the later time to the earlier."""
    yshape, ashapes = tuple(_shape(y0)), [tuple(_shape(a)) for a in args]
    shapes = [yshape, yshape] + ashapes

    def augmented(state, s, *fargs):
        y, a = _split(state, shapes)[:2]
        dy, pullback = _vjp(lambda y, *fargs: func(y, s, *fargs), y, *fargs)
        cots = pullback(a)
        return _flat([dy, -cots[0]] + [-c for c in cots[1:]])

    n = _shape(t)[0]
    a = getitem(g, n - 1)
    args_bar = [0 * astype(x, out.dtype) for x in args]
    t_bar, a_start = [], a
    for i in range(n - 1, 0, -1):
        y_i = getitem(out, i)
        t_bar.append(sum(getitem(g, i) * func(y_i, getitem(t, i), *args)))  # dL/dt_i = g_i . f(y_i, t_i)
        span = stack([getitem(t, i), getitem(t, i - 1)])
        state = getitem(odeint(augmented, _flat([y_i, a] + args_bar), span, *args, **options), 1)
        parts = _split(state, shapes)
        a_start, args_bar = parts[1], parts[2:]
        a = a_start + getitem(g, i - 1)
    # moving t_0 moves where y_0 starts (out[0] is y_0 itself whatever t_0: g_0 takes no part)
    t_bar.append(-sum(a_start * func(getitem(out, 0), getitem(t, 0), *args)) if n > 1 else 0 * getitem(t, 0))
    return (a, stack(t_bar[::-1]), *args_bar)


def _jvp_rule(tangents, out, y0, t, *args, func, **options):
    """The tangent dy follows dy' = J_y f dy + J_args f dargs beside y; moving a time t_i adds f(y_i, t_i)
    dt_i to y_i, moving t_0 starts the tangent at -f(y0, t0) dt_0."""
    ty0, tt, targs = tangents[0], tangents[1], tangents[2:]
    yshape = tuple(_shape(y0))
    targs = [0 * astype(x, out.dtype) if d is None else d for x, d in zip(args, targs)]
    k = len(args)

    def augmented(state, s, *fargs):
        y, dy = _split(state, [yshape, yshape])
        f_y, df = _jvp(lambda y, *fa: func(y, s, *fa), (y, *fargs[:k]), (dy, *fargs[k:]))
        return _flat([f_y, df])

    dy0 = 0 * astype(y0, out.dtype) if ty0 is None else ty0
    if tt is not None:
        dy0 = dy0 - func(y0, getitem(t, 0), *args) * getitem(tt, 0)
    ys = odeint(augmented, _flat([y0, dy0]), t, *args, *targs, **options)
    n = _shape(t)[0]
    size = int(np.prod(yshape, dtype=np.int64))
    dys = reshape(getitem(ys, (slice(None), slice(size, 2 * size))), (n,) + yshape)
    if tt is not None:
        rates = stack([func(getitem(out, i), getitem(t, i), *args) for i in range(n)])
        dys = dys + rates * reshape(tt, (n,) + (1,) * len(yshape))
    return dys


_odeint = defop("odeint", _forward, vjp=_vjp_rule, jvp=_jvp_rule,
                shape=lambda y0, t, *args, **attrs: (t[0],) + tuple(y0),
                dtype=lambda y0, *others, **attrs: floating(y0), numpy_only=True)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=0, hmax=0.0):
    """The solution of dy/dt = func(y, t, *args) with y(t[0]) = y0 at the times `t` (increasing or
    decreasing), shape (len(t),) + y0.shape: JAX's signature (`jax.experimental.ode.odeint`), values from
    `scipy.integrate.odeint` (LSODA), differentiable with respect to y0, t and args in both modes.
    `func` is written with dagrad (or NumPy-style) functions; y0 and each of args are arrays or numbers.
    SciPy's (and autograd's) way of passing them, one tuple after `t`, is read the same:
    `odeint(func, y0, t, (a, b))` is `odeint(func, y0, t, a, b)`.

    >>> odeint(lambda y, t: np.ones_like(y), np.zeros(2), np.array([0.0, 0.5, 2.0]))
    array([[0. , 0. ],
           [0.5, 0.5],
           [2. , 2. ]])
    """
    if _si is None:
        raise user_error(ImportError, _WHERE, "needs SciPy, an optional extra: pip install 'dagrad[scipy]' (or pip "
                         "install scipy)")
    if not callable(func):
        raise user_error(TypeError, _WHERE, f"func must be a callable func(y, t, *args), got "
                         f"{type(func).__name__}")
    y0, t = as_array(y0, "odeint"), as_array(t, "odeint")
    if len(args) == 1 and isinstance(args[0], tuple):  # SciPy's args=(a, b): a tuple is never one array here
        args = args[0]
    args = tuple(as_array(a, "odeint") for a in args)
    if len(_shape(t)) != 1 or _shape(t)[0] < 1:
        raise user_error(ValueError, _WHERE, f"t must be a 1-D array of times, got shape {tuple(_shape(t))}", t)
    return apply(_odeint, (y0, t) + args, {"func": func, "rtol": rtol, "atol": atol, "mxstep": mxstep,
                                            "hmax": hmax})
