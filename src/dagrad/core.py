"""HIPS autograd's `autograd.core` names: `make_vjp(fun, x)` and `make_jvp(fun, x)` (of a function of
one argument, as in autograd's core; `dg.make_vjp` is the n-ary one), `vspace`, `primitive`,
`defvjp`, `defjvp` (dagrad's `dg.primitive`, `dg.defvjp`, `dg.defjvp`) and `primitive_vjps`.

>>> import numpy as np
>>> f_vjp, value = make_vjp(np.sin, 0.0)
>>> value, f_vjp(2.0)
(np.float64(0.0), np.float64(2.0))
"""

from __future__ import annotations

from ._core.errors import user_error
from .custom import defjvp, defjvp_argnum, defvjp, defvjp_argnum, primitive
from .transforms import jvp, vjp
from .vspace import VSpace, vspace

__all__ = ["make_vjp", "make_jvp", "vspace", "VSpace", "primitive", "defvjp", "defjvp", "defvjp_argnum",
           "defjvp_argnum", "primitive_vjps"]


def make_vjp(fun, x):
    """`(vjp, fun(x))`, where `vjp(g)` is the cotangent of `x` for the output's cotangent `g`."""
    value, f_vjp = vjp(fun, x)
    return (lambda g: f_vjp(g)[0]), value


def make_jvp(fun, x):
    """A function of a tangent `g` (shaped like `x`) returning `(fun(x), J g)`, by forward mode."""
    return lambda g: jvp(fun, (x,), (g,))


class _PrimitiveVjps:
    """The vjp makers of the functions made by `primitive`, by function (a dict {argnum: maker}), as
    autograd's `primitive_vjps`: deleting or popping an entry removes the rules, so differentiating the
    function raises NotImplementedError until they are set again. dagrad's own ops declare their rules
    with their `Op` and are not listed here: any other key is missing."""

    def __getitem__(self, fun):
        if not isinstance(fun, primitive) or not fun.vjps:
            raise KeyError(fun)
        return fun.vjps

    def __setitem__(self, fun, makers):
        if not isinstance(fun, primitive):
            raise user_error(TypeError, "primitive_vjps", f"keys are functions made by dg.primitive, not a "
                             f"{type(fun).__name__}")
        fun.vjps = makers

    def __delitem__(self, fun):
        if fun not in self:
            raise KeyError(fun)
        fun.vjps = {}

    def __contains__(self, fun):
        return isinstance(fun, primitive) and bool(fun.vjps)

    def get(self, fun, default=None):
        return self[fun] if fun in self else default

    def pop(self, fun, *default):
        if fun not in self and default:
            return default[0]
        makers = self[fun]
        del self[fun]
        return makers


primitive_vjps = _PrimitiveVjps()
