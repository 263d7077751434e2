"""Static graphs as TensorFlow 1 has them: placeholders, constants, Variables and their updates
(`assign`, `group`). The nodes themselves, the Graph and `build` are the core's IR (_core/ir.py).
"""

from __future__ import annotations

import numpy as np

from .._core.errors import user_error
from .._core.ir import (
    Graph,
    Symbol,
    atomic,
    checked_value,
    get_default_graph,
    new_symbol,
    reset_default_graph,
    shape_fits,
)
from .._core.op import Op
from .._core.tensor import Tensor

__all__ = ["Graph", "Symbol", "Variable", "placeholder", "constant", "get_default_graph", "reset_default_graph",
           "atomic", "assign", "group"]


class VariableSymbol(Symbol):
    """A Variable's node: a Symbol with TensorFlow's update methods."""

    __slots__ = ()

    def assign(self, expr):
        """An update node: running it sets this Variable to `expr` (read before any update of that run)."""
        return assign(self, expr)

    def assign_add(self, expr):
        return self.assign(self + expr)

    def assign_sub(self, expr):
        return self.assign(self - expr)


def placeholder(shape, dtype="float64", name=None):
    """A graph input fed at `Session.run`; sizes may be None (any size).

    >>> import dagrad as dg
    >>> with dg.Graph():
    ...     x = dg.placeholder((None, 64), name="x")
    >>> x.shape
    (None, 64)
    """
    shape = _sizes(shape)
    try:
        dtype = np.dtype(dtype)
    except TypeError as err:
        raise user_error(TypeError, "placeholder", f"{dtype!r} is not a dtype: {err}") from None
    _check_kind("placeholder", dtype)
    return new_symbol(get_default_graph(), "placeholder", shape, dtype, requires_grad=dtype.kind == "f", name=name)


def _sizes(shape):
    """A placeholder's shape: a tuple of sizes, each an integer >= 0 or None (unknown until a run)."""
    if not isinstance(shape, (tuple, list)):
        raise user_error(TypeError, "placeholder", f"shape must be a tuple of sizes (None for an unknown size), "
                         f"got {type(shape).__name__}")
    for n in shape:
        if n is None:
            continue
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise user_error(TypeError, "placeholder", f"shape {tuple(shape)!r}: a size must be an integer or None, "
                             f"got {type(n).__name__}")
        if n < 0:
            raise user_error(ValueError, "placeholder", f"shape {tuple(shape)!r}: a size cannot be negative (None "
                             "is an unknown size)")
    return tuple(shape)


def _check_kind(op, dtype):
    """Static graphs hold booleans, integers and floats (complex numbers are not supported yet)."""
    if dtype.kind not in "biuf":
        what = "complex numbers are not supported yet" if dtype.kind == "c" else "it has no arithmetic"
        raise user_error(TypeError, op, f"unsupported dtype {dtype}: {what}; use a boolean, integer or float dtype")


def constant(value, dtype=None, name=None):
    """A constant node of the default graph."""
    data = _data("constant", value, dtype)
    # a float constant can be differentiated against, as in TensorFlow (gradients w.r.t. it)
    node = new_symbol(get_default_graph(), "constant", data.shape, data.dtype, requires_grad=data.dtype.kind == "f",
                      name=name)
    node._data = data
    return node


def Variable(value, name=None, trainable=True, dtype=None):
    """A graph variable: its value lives between runs, `.value` reads and sets it.

    >>> import dagrad as dg, numpy as np
    >>> with dg.Graph():
    ...     w = dg.Variable(np.zeros(3), name="w")
    >>> w.value = [1.0, 2.0, 3.0]
    >>> w.value
    array([1., 2., 3.])
    """
    data = _data("Variable", value, dtype)
    node = new_symbol(get_default_graph(), "variable", data.shape, data.dtype, requires_grad=data.dtype.kind == "f",
                      name=name, cls=VariableSymbol)
    node._data = data
    node.trainable = bool(trainable)
    return node


def _data(op, value, dtype):
    """The array a constant or Variable holds: a copy of `value`, of a supported dtype."""
    if isinstance(value, Symbol):
        raise user_error(TypeError, op, f"expects a value, got the symbolic tensor {value!r}")
    try:
        data = np.array(value._value if isinstance(value, Tensor) else value, dtype=dtype)
    except (ValueError, TypeError) as err:
        raise user_error(type(err), op, f"cannot make an array of the value: {err}") from None
    _check_kind(op, data.dtype)
    return data


# update nodes are not differentiable ops, so they are not in the op registry
_ASSIGN = Op("assign", lambda variable, value: value, None, None, lambda v, e: v, False)
_GROUP = Op("group", lambda *updates: None, None, None, lambda *shapes: (), False)


def assign(variable, expr):
    """An update node: running it sets `variable` to `expr`.

    All reads in one `Session.run` see the values from before that run's updates.
    """
    if not isinstance(variable, Symbol) or variable.kind != "variable":
        raise user_error(TypeError, "assign", f"the target must be a dg.Variable, got {type(variable).__name__}")
    if isinstance(expr, Symbol):
        if expr.graph is not variable.graph:
            raise user_error(ValueError, "assign", f"{expr!r} and {variable!r} belong to different graphs")
        known = tuple(1 if n is None else n for n in expr._shape)
        if not shape_fits(known, variable._shape) and not shape_fits(variable._shape, expr._shape):
            raise user_error(ValueError, "assign", f"a value of shape {expr._shape} cannot be assigned to Variable "
                             f"{variable.name!r} of shape {variable._shape}", expr, variable)
        if not np.can_cast(expr._dtype, variable._dtype, "same_kind"):
            raise user_error(TypeError, "assign", f"dtype {expr._dtype} does not fit Variable {variable.name!r} of "
                             f"{variable._dtype}", expr, variable)
    else:
        expr = checked_value(expr, variable._shape, variable._dtype, "assign", f"the value for Variable "
                              f"{variable.name!r}")
    return new_symbol(variable.graph, "assign", variable._shape, variable._dtype, _ASSIGN, (variable, expr))


def group(*updates, name=None):
    """One node that runs all `updates` (e.g. the assignments of a training step)."""
    updates = [u for u in updates if u is not None]
    if not updates or not all(isinstance(u, Symbol) for u in updates):
        raise user_error(TypeError, "group", "expects one or more nodes of a static graph")
    graph = updates[0].graph
    if any(u.graph is not graph for u in updates):
        raise user_error(ValueError, "group", "the nodes belong to different graphs")
    return new_symbol(graph, "group", (), np.bool_, _GROUP, tuple(updates), name=name)
