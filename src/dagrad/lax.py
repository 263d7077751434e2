"""`dagrad.lax`: the control-flow primitives under the names `jax.lax` gives them, so code written for
JAX runs with the namespace swapped (`from dagrad import lax`).

`cond`, `fori_loop`, `while_loop` and `scan` are dagrad's own (`dagrad/control.py`); `map` and `switch`
are built on them, as JAX defines them; `stop_gradient` and `select` are the ops of those meanings.

>>> import numpy as np
>>> from dagrad import lax
>>> lax.switch(1, [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x], np.array([2.0]))
array([20.])
>>> lax.map(lambda x: x ** 2, np.array([1.0, 2.0, 3.0]))
array([1., 4., 9.])
"""

from __future__ import annotations

from ._core.errors import missing_name, user_error
from .control import cond, fori_loop, scan, while_loop
from .ops.elementwise import clip, stop_gradient, where

__all__ = ["cond", "fori_loop", "map", "scan", "select", "stop_gradient", "switch", "while_loop"]


def map(f, xs):  # noqa: A001  (jax.lax.map)
    """`f` applied to each slice of `xs` along its first axis, one after another (a `scan`, not a
    vmap: the memory of one application at a time), stacked: `jax.lax.map`.

    >>> import numpy as np
    >>> map(lambda x: x.sum(), np.ones((3, 2)))
    array([2., 2., 2.])
    """
    if not callable(f):
        raise user_error(TypeError, "lax.map", f"f must be a function, got {type(f).__name__}")
    return scan(lambda carry, x: (carry, f(x)), (), xs)[1]


def switch(index, branches, *operands):
    """`branches[index](*operands)`, with `index` clamped to the branches' range, as `jax.lax.switch`:
    one cond per branch past the first, so every branch is traced and checked to return the same
    structure, shapes and dtypes.

    >>> import numpy as np
    >>> switch(5, [lambda x: x, lambda x: x * 2.0], np.array([1.0]))  # clamped to the last branch
    array([2.])
    """
    branches = list(branches)
    if not branches or not all(callable(b) for b in branches):
        raise user_error(TypeError, "lax.switch", "branches must be a non-empty sequence of functions")
    index = clip(index, 0, len(branches) - 1)

    def chosen(k):
        if k == len(branches) - 1:
            return branches[k]
        return lambda *ops: cond(index == k, branches[k], chosen(k + 1), *ops)

    return chosen(0)(*operands)


def select(pred, on_true, on_false):
    """`on_true` where `pred` holds, else `on_false`, elementwise: `jax.lax.select` (`np.where`)."""
    return where(pred, on_true, on_false)


_HINTS = {
    "dot_general": "use dg.einsum or dg.tensordot",
    "conv_general_dilated": "dg.nn.functional.conv2d (NCHW input, OIHW weights)",
    "associative_scan": "use lax.scan (sequential)",
    "dynamic_slice": "index the array: x[start:start + size]",
    "dynamic_update_slice": "dg.setitem(x, index, update)",
    "optimization_barrier": "dg.checkpoint's recomputation keeps its own barrier (docs/checkpoint.md)",
}


def __getattr__(name):
    raise missing_name(__name__, name, "JAX's jax.lax.{}", _HINTS, "JAX")
