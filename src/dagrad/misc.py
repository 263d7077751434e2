"""HIPS autograd's `autograd.misc` names: `flatten` (dagrad's `dg.ravel_pytree` with autograd's order:
a dict's items by sorted key) and `const_graph` (dagrad's `dg.compile`).

>>> import numpy as np
>>> flat, unflatten = flatten({"b": np.ones(2), "a": 3.0})
>>> flat
array([3., 1., 1.])
>>> unflatten(flat * 2)["b"]
array([2., 2.])
"""

from __future__ import annotations

import functools

import numpy as np

from .compile import compile
from .differential import ravel_pytree

__all__ = ["flatten", "const_graph"]


def _sorted(tree):
    """`tree` with every dict's items in sorted key order (autograd's flattening order)."""
    if isinstance(tree, dict):
        return {key: _sorted(tree[key]) for key in sorted(tree)}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_sorted(item) for item in tree)
    return tree


def flatten(value):
    """`(vector, unflatten)`: every leaf of the nested lists, tuples and dicts `value` raveled into one 1-D
    array, and the function rebuilding such a structure from a vector. Both are differentiable."""
    return ravel_pytree(_sorted(value))


def const_graph(fun, *args, **kwargs):
    """`fun` with `args` and `kwargs` bound, traced into a graph on its first call and replayed after
    (`dg.compile`: traced once per shape and dtype of the remaining arguments; Python numbers count as
    float64 or int64 arrays, so a new number does not trace again).

    >>> import dagrad as dg
    >>> g = const_graph(dg.grad(lambda x, y: dg.sin(x) * y), y=2.0)
    >>> float(g(0.0)), bool(g(1.0) == 2 * np.cos(1.0))
    (2.0, True)
    """
    compiled = compile(functools.partial(fun, *args, **kwargs))

    def replay(*rest, **more):
        return compiled(*[np.asarray(a) if isinstance(a, (int, float)) else a for a in rest], **more)

    return replay
