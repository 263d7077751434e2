"""Static graphs as TensorFlow 1 has them: placeholders, constants, Variables and their updates
(`assign`, `group`, `global_variables_initializer`). The nodes themselves, the Graph and `build` are
the core's IR (_core/ir.py).
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
           "atomic", "assign", "group", "global_variables_initializer", "variables_initializer", "global_variables",
           "trainable_variables"]


class VariableSymbol(Symbol):
    """A Variable's node: a Symbol with TensorFlow's update methods and its initial value (read-only)."""

    __slots__ = ("initial_value",)

    def assign(self, expr):
        """An update node: running it sets this Variable to `expr` (read before any update of that run)."""
        return assign(self, expr)

    def assign_add(self, expr):
        return self.assign(self + expr)

    def assign_sub(self, expr):
        return self.assign(self - expr)


# TensorFlow's names for dtypes that NumPy reads otherwise (NumPy's "float" is float64); TF1 code
# writes placeholder("float"). Every other name (float32, int64, bool, ...) means the same to both.
_TF_NAMES = {"float": np.dtype(np.float32), "double": np.dtype(np.float64), "half": np.dtype(np.float16)}
_MISSING = object()  # an argument not given (None is a meaningful shape: any shape)


def placeholder(first=_MISSING, second=_MISSING, name=None, *, shape=_MISSING, dtype=_MISSING):
    """A graph input fed at `Session.run`, as `placeholder(shape, dtype="float64", name=None)` or in
    TF1's order, `placeholder(dtype, shape=None, name=None)`.

    The first argument tells which: a dtype (a dtype name such as "float32" or TF1's "float", a
    NumPy dtype or scalar type, Python's float, int or bool) or a shape (None, or a tuple or list of
    sizes, each an integer or None for a size known only at run time). `shape=None` is any shape,
    even of unknown rank: elementwise operations and reductions over all axes accept it.

    >>> import dagrad as dg
    >>> with dg.Graph():
    ...     x = dg.placeholder((None, 64), name="x")
    ...     y = dg.placeholder("float", [None], name="y")   # TF1's order; "float" is float32, as in TF
    >>> x.shape, y.shape, y.dtype
    ((None, 64), (None,), dtype('float32'))
    """
    if first is not _MISSING and _names_a_dtype(first):  # TF1's order: (dtype, shape, name)
        given_shape, given_dtype = second, first
        if dtype is not _MISSING:
            raise user_error(TypeError, "placeholder", "got the dtype twice: as the first argument and as dtype=")
    else:
        given_shape, given_dtype = first, second
        if given_dtype is not _MISSING and dtype is not _MISSING:
            raise user_error(TypeError, "placeholder", "got the dtype twice: as the second argument and as dtype=")
    if given_shape is not _MISSING and shape is not _MISSING:
        raise user_error(TypeError, "placeholder", "got the shape twice: as an argument and as shape=")
    given_shape = shape if given_shape is _MISSING else given_shape
    given_dtype = dtype if given_dtype is _MISSING else given_dtype
    if given_shape is _MISSING and given_dtype is _MISSING:
        raise user_error(TypeError, "placeholder", "needs a shape, placeholder(shape, dtype='float64'), or a dtype, "
                         "placeholder(dtype, shape=None) as in TF1")
    shape = None if given_shape is _MISSING else _sizes(given_shape)
    dtype = _dtype("float64" if given_dtype is _MISSING else given_dtype)
    return new_symbol(get_default_graph(), "placeholder", shape, dtype, requires_grad=dtype.kind in "fc", name=name)


def _names_a_dtype(value):
    """Whether placeholder's first argument is a dtype (else it is a shape)."""
    return isinstance(value, (str, np.dtype, type))


def _dtype(dtype):
    """A placeholder's dtype: a NumPy dtype of a supported kind, names read as TensorFlow reads them."""
    if isinstance(dtype, str) and dtype in _TF_NAMES:
        return _TF_NAMES[dtype]
    try:
        dtype = np.dtype(dtype)
    except TypeError as err:
        raise user_error(TypeError, "placeholder", f"{dtype!r} is not a dtype: {err}") from None
    _check_kind("placeholder", dtype)
    return dtype


def _sizes(shape):
    """A placeholder's shape: a tuple of sizes, each an integer >= 0 or None (unknown until a run); or None,
    any shape (unknown rank)."""
    if shape is None:
        return None
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
    """Static graphs hold booleans, integers, floats and complex numbers."""
    if dtype.kind not in "biufc":
        raise user_error(TypeError, op, f"unsupported dtype {dtype}: it has no arithmetic; use a boolean, integer, "
                         "float or complex dtype")


def constant(value, dtype=None, name=None):
    """A constant node of the default graph."""
    data = _data("constant", value, dtype)
    # a float constant can be differentiated against, as in TensorFlow (gradients w.r.t. it)
    node = new_symbol(get_default_graph(), "constant", data.shape, data.dtype, requires_grad=data.dtype.kind in "fc",
                      name=name)
    node._data = data
    return node


def Variable(value, name=None, trainable=True, dtype=None):
    """A graph variable: its value lives between runs, `.value` reads and sets it.

    `trainable` Variables are what `optimizer.minimize(loss)` trains when the optimizer was given
    no parameters (and what `trainable_variables()` lists); `global_variables_initializer()` sets a
    Variable back to `initial_value`, a read-only copy of `value`.

    >>> import dagrad as dg, numpy as np
    >>> with dg.Graph():
    ...     w = dg.Variable(np.zeros(3), name="w")
    >>> w.value = [1.0, 2.0, 3.0]
    >>> w.value, w.initial_value
    (array([1., 2., 3.]), array([0., 0., 0.]))
    """
    data = _data("Variable", value, dtype)
    node = new_symbol(get_default_graph(), "variable", data.shape, data.dtype, requires_grad=data.dtype.kind in "fc",
                      name=name, cls=VariableSymbol)
    node._data = data
    node.trainable = bool(trainable)
    node.initial_value = np.array(data, copy=True)
    node.initial_value.flags.writeable = False  # every reset copies it: nothing may change it in place
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
        if expr._shape is not None:  # a value of unknown rank (from a placeholder of any shape) is checked in the run
            known = tuple(1 if n is None else n for n in expr._shape)
            if not shape_fits(known, variable._shape) and not shape_fits(variable._shape, expr._shape):
                raise user_error(ValueError, "assign", f"a value of shape {expr._shape} cannot be assigned to "
                                 f"Variable {variable.name!r} of shape {variable._shape}", expr, variable)
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


# resetting is done by Session.run itself (from each Variable's initial_value), so the op computes nothing
_INITIALIZE = Op("initialize", lambda *variables: None, None, None, lambda *shapes: (), False)


def global_variables_initializer(graph=None, name="init"):
    """An op that, when run, sets every Variable of `graph` (default: the default graph) that exists now
    back to its initial value, as TF1's (optimizers' state Variables too: make it after `minimize`).

    >>> import dagrad as dg
    >>> with dg.Graph() as g:
    ...     w = dg.Variable(1.0, name="w")
    ...     step = w.assign(w + 1.0)
    ...     init = dg.global_variables_initializer()
    >>> sess = dg.Session(g)
    >>> sess.run(step), sess.run(init), w.value
    (array(2.), None, array(1.))
    """
    graph = _graph(graph, "global_variables_initializer")
    return new_symbol(graph, "initializer", (), np.bool_, _INITIALIZE, tuple(graph.variables), name=name)


def variables_initializer(var_list, name="init"):
    """An op that, when run, sets the Variables of `var_list` back to their initial values, as TF1's
    (an empty list gives an op that does nothing, TF1's `local_variables_initializer()`).

    >>> import dagrad as dg
    >>> with dg.Graph() as g:
    ...     a, b = dg.Variable(1.0, name="a"), dg.Variable(1.0, name="b")
    ...     step = dg.group(a.assign(a + 1.0), b.assign(b + 1.0))
    ...     init_a = dg.variables_initializer([a])
    >>> sess = dg.Session(g)
    >>> sess.run(step), sess.run(init_a), a.value, b.value
    (None, None, array(1.), array(2.))
    """
    if isinstance(var_list, Symbol) or not isinstance(var_list, (list, tuple)):
        raise user_error(TypeError, "variables_initializer", f"expects a list of dg.Variables, got "
                         f"{type(var_list).__name__}")
    for v in var_list:
        if not isinstance(v, Symbol) or v.kind != "variable":
            raise user_error(TypeError, "variables_initializer", f"expects dg.Variables, got {v!r}")
    graph = var_list[0].graph if var_list else get_default_graph()
    if any(v.graph is not graph for v in var_list):
        raise user_error(ValueError, "variables_initializer", "the Variables belong to different graphs")
    return new_symbol(graph, "initializer", (), np.bool_, _INITIALIZE, tuple(dict.fromkeys(var_list)), name=name)


def global_variables(graph=None):
    """Every Variable of `graph` (default: the default graph), in the order they were made."""
    return _graph(graph, "global_variables").variables


def trainable_variables(graph=None):
    """The Variables of `graph` (default: the default graph) made with `trainable=True` (the default).

    >>> import dagrad as dg
    >>> with dg.Graph():
    ...     w = dg.Variable(0.0, name="w")
    ...     steps = dg.Variable(0, name="steps", trainable=False)
    ...     [v.name for v in dg.trainable_variables()], [v.name for v in dg.global_variables()]
    (['w'], ['w', 'steps'])
    """
    return [v for v in _graph(graph, "trainable_variables").variables if v.trainable]


def _graph(graph, op):
    if graph is None:
        return get_default_graph()
    if not isinstance(graph, Graph):
        raise user_error(TypeError, op, f"expects a dg.Graph, got {type(graph).__name__}")
    return graph
