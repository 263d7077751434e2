"""HIPS autograd's `autograd.wrap_util` names: `unary_to_nary` turns an operator on functions of one
argument into one taking `argnum` (dagrad's transforms take `argnums` directly: `dg.grad(f, argnums=1)`).

>>> import numpy as np
>>> import dagrad as dg
>>> @unary_to_nary
... def derivative(fun, x):
...     return dg.grad(fun)(x)
>>> float(derivative(lambda a, b: a * b, 1)(3.0, 4.0))
3.0
"""

from __future__ import annotations

import functools

from ._core.errors import user_error
from .differential import _unary

__all__ = ["unary_to_nary", "get_name"]


def get_name(f):
    """`f.__name__`, or autograd's placeholder for a callable without one."""
    return getattr(f, "__name__", "[unknown name]")


def unary_to_nary(unary_operator):
    """`unary_operator(fun, x, *op_args, **op_kwargs)` as `nary(fun, argnum=0, *op_args, **op_kwargs)(*args,
    **kwargs)`: `x` is the argument at `argnum` (a tuple of them for a tuple of argnums), `fun` a function of
    it alone, the other arguments fixed."""
    if not callable(unary_operator):
        raise user_error(TypeError, "unary_to_nary", f"takes a function, not a {type(unary_operator).__name__}")

    @functools.wraps(unary_operator)
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        where = get_name(unary_operator)
        if not callable(fun):
            raise user_error(TypeError, where, f"takes a function, not a {type(fun).__name__}")
        if isinstance(argnum, list):
            argnum = tuple(argnum)

        def nary_f(*args, **kwargs):
            unary_f, x = _unary(fun, args, kwargs, argnum, where)
            unary_f.__name__ = get_name(fun)
            return unary_operator(unary_f, x, *op_args, **op_kwargs)

        nary_f.__name__ = f"{where}_of_{get_name(fun)}_wrt_argnum_{argnum}"
        return nary_f

    return nary_operator
