"""The graph IR: Symbols (the nodes of static graphs and of traced functions), the Graph that
holds them, `build`, the journal that makes graph building all or nothing, and the listing.

A Symbol is a Tensor without a value: the same IR node (op, inputs, attrs) with its shape
(entries may be None) and dtype inferred when it is built. An op with a Symbol among its
arguments builds a node in that Symbol's graph; eager Tensors beside it enter as constants.
"""

from __future__ import annotations

import threading

import numpy as np

from .errors import ShapeError, _provenance, caller_line, op_error, printable, user_error, user_line
from .shapes import SymbolicShape, broadcast_shapes
from .tensor import Tensor, _leaf, next_seq


class _Local(threading.local):
    def __init__(self):
        self.stack = []
        self.default = None
        self.journal = None  # inside `atomic()`: the nodes built so far, as (graph, node)


graph_state = _Local()  # per thread: the `with graph:` stack, the default graph, the open journal

def get_default_graph():
    """The innermost `with graph:` of this thread, else the thread's default graph."""
    if graph_state.stack:
        return graph_state.stack[-1]
    if graph_state.default is None:
        graph_state.default = Graph()
    return graph_state.default

class atomic:
    """All or nothing for static graphs: if the block raises, every node it built (in any graph) is
    removed again, so a failing `dg.gradients`, `minimize` or layer call leaves each graph as it was.
    Nested blocks roll back only their own nodes."""

    # A class, not a generator context manager: it wraps every layer call of the eager training
    # step, and this costs ~0.2 us where @contextmanager cost ~0.9 us. The outermost block opens the
    # thread's journal of built nodes; a nested block only notes where its own nodes start in it.
    __slots__ = ("_start",)

    def __enter__(self):
        journal = graph_state.journal
        if journal is None:
            graph_state.journal = []
            self._start = None
        else:
            self._start = len(journal)
        return self

    def __exit__(self, kind, error, traceback):
        journal, start = graph_state.journal, self._start
        if start is None:
            graph_state.journal = None
            if kind is not None and journal:
                rollback(journal)
        elif kind is not None and len(journal) > start:
            rollback(journal[start:])
            del journal[start:]
        return False

def rollback(journal):
    built = {}
    for graph, node in journal:
        built.setdefault(graph, {})[node] = True
    for graph, nodes in built.items():
        graph.nodes = [n for n in graph.nodes if n not in nodes]
        for name in [name for name, n in graph._names.items() if n in nodes]:
            del graph._names[name]

def reset_default_graph():
    """Replaces this thread's default graph with a new, empty one."""
    if graph_state.stack:
        raise user_error(RuntimeError, "reset_default_graph", "called inside a `with graph:` block; leave the "
                         "block first")
    graph_state.default = Graph()
    return graph_state.default

class Graph:
    """A static graph: nodes in the order they were built. Use it as a context manager.

    >>> import dagrad as dg
    >>> g = dg.Graph()
    >>> with g:
    ...     x = dg.placeholder((None, 3), name="x")
    ...     y = (x * 2.0).sum(axis=1)
    >>> print(g)
    %x = placeholder : (None, 3) float64
    %1 = multiply(%x, 2.0) : (None, 3) float64
    %2 = sum(%1, axis=(1,), keepdims=False) : (None,) float64
    """

    def __init__(self):
        self.nodes = []
        self._names = {}
        self.tracing = None  # the name of the function dg.compile is tracing into this graph, if any
        self.traced_for = None  # then: the user's line whose call made dg.compile trace it
        self.lazy = False  # then: whether some of its arguments are Dask arrays (seeds follow their type)
        # while dg.compile traces: inputs read at each call {key: (node, read)}, values written back after
        # each call [(node, write)], and what `loss.backward()` on a node of this graph does
        self.reads, self.writes, self.backward_hook = {}, [], None
        self.guards = {}  # {key: (read, its value when traced)}: a call where read() differs traces again
        self.params = {}  # the eager tensors captured as inputs: id -> (tensor, node)
        self.lifted = {}  # eager tensors that requires grad, in the trace: id -> (tensor, node)
        # a body of control flow (dagrad/control.py) is a graph whose Symbols have a transform level of their
        # own, above every level alive when it is traced; an outer value it reads becomes a placeholder
        self.level = 0
        self.captured = None  # in a body: id -> (outer value, its placeholder), in order of capture

    def enclose(self, value):
        """The placeholder of this body standing for `value`, a value from outside the body (a Symbol of an
        outer graph, a transform's box, a parameter dg.compile lifts): closure conversion, as JAX does. The
        control-flow node takes it as an extra input, so that transforms differentiate through it."""
        entry = self.captured.get(id(value))
        if entry is None:
            inner = _innermost(value)
            # the shape the code sees: a box's own (one example's under vmap), a node's (None: unknown rank)
            shape = inner._shape if isinstance(inner, Symbol) and (inner is value or inner._shape is None) else \
                tuple(value.shape) if isinstance(value, Tensor) else np.shape(inner)
            # a Python number's placeholder stays weakly typed in the body, as the number is in eager code
            node = new_symbol(self, "placeholder", shape, value.dtype, requires_grad=value.dtype.kind in "fc",
                              name="captured", cls=WeakScalar if type(value) is WeakScalar else None)
            entry = self.captured[id(value)] = (value, node)
        return entry[1]

    def __enter__(self):
        graph_state.stack.append(self)
        return self

    def __exit__(self, *exc):
        graph_state.stack.pop()

    def as_default(self):
        """TF1's `with graph.as_default():`, the same as `with graph:`."""
        return self

    def _add(self, node, name):
        if name is not None:
            base, k = str(name), 1
            name = base
            while name in self._names:
                name = f"{base}_{k}"
                k += 1
            self._names[name] = node
        node.name = name
        node.graph = self
        self.nodes.append(node)
        journal = graph_state.journal
        if journal is not None:
            journal.append((self, node))
        return node

    def __getitem__(self, name):
        return self._names[name]

    def read_at_call(self, key, read, shape, dtype, name, requires_grad=False):
        """An input of the function dg.compile is tracing that is no argument: its value is `read()`
        again at each call (an eager tensor the function closes over, an optimiser's state); one node
        per `key`."""
        entry = self.reads.get(key)
        if entry is None:
            node = new_symbol(self, "placeholder", shape, dtype, requires_grad=requires_grad, name=name)
            entry = self.reads[key] = (node, read)
        return entry[0]

    def guard(self, key, read):
        """Makes the trace depend on `read()` (Python values the traced code built in, such as an optimiser's
        options): each call reads it again, first, and traces again if it changed. One guard per `key`."""
        if key not in self.guards:
            self.guards[key] = (read, read())

    def capture(self, tensor):
        """The input node standing for an eager tensor that requires grad (a parameter) read by the traced
        function: read at each call, so training between calls is seen, and differentiable."""
        node = self.read_at_call(id(tensor), lambda: tensor._value, tensor.shape, tensor.dtype, "param", True)
        self.params[id(tensor)] = (tensor, node)
        return node

    @property
    def variables(self):
        return [n for n in self.nodes if n.kind == "variable"]

    def __len__(self):
        return len(self.nodes)

    def listing(self):
        """One line per node: `%7 = matmul(%3, %5) : (None, 10) float64`; the graphs a control-flow node
        holds are listed indented under it."""
        return "\n".join(printable(line) for line in _listing(self.nodes, {}, ""))  # a name forges no line

    __str__ = listing

    def __repr__(self):
        return f"<dagrad.Graph with {len(self.nodes)} nodes>"

def _innermost(value):
    while isinstance(value, Tensor) and not isinstance(value, Symbol):
        value = value._value
    return value


def show_value(value, labels):
    if isinstance(value, Symbol):
        return labels.get(value, "%?")
    if isinstance(value, (int, float, bool, np.number)) or value is None:
        return repr(value.item() if isinstance(value, np.number) else value)
    arr = np.asarray(value)
    if arr.size <= 4 and arr.dtype.kind in "biuf":
        return np.array2string(arr, separator=", ").replace("\n", "")
    return f"array{arr.shape} {arr.dtype}"

def _listing(nodes, labels, indent, outputs=None, prefix=""):
    lines = []
    for i, node in enumerate(nodes):
        # a name that is a number is quoted, so that it cannot be read as another node's position
        labels[node] = f"%{prefix}{i}" if not node.name else f'%"{node.name}"' if node.name.isdigit() else \
            f"%{node.name}"
        body, kind = node_parts(node, labels)
        lines.append(f"{indent}{labels[node]} = {body} : {kind}")
        if node.op is not None and node.op.bodies is not None:
            for label in node.op.bodies:
                sub = node.attrs[label]
                lines.append(f"{indent}  {label}:")
                # a body's nodes are numbered under the node holding it: %4.0, %4.1, ...
                lines += _listing(sub.nodes, dict(labels), indent + "    ", sub.outputs, f"{prefix}{i}.")
    if outputs is not None:
        lines.append(f"{indent}return {', '.join(show_value(o, labels) for o in outputs)}")
    return lines


def node_parts(node, labels):
    """The two halves of a node's listing line: `matmul(%3, %5)` and `(None, 10) float64`."""
    if node.op is None:
        body = node.kind
    else:
        args = [show_value(a, labels) for a in node.inputs]
        shown_attrs = node.attrs or {}
        if node.op.bodies is not None:  # the bodies are listed under the node
            shown_attrs = {k: v for k, v in shown_attrs.items() if k not in node.op.bodies}
        args += [f"{k}={str(v) if isinstance(v, np.dtype) else repr(v)}" for k, v in shown_attrs.items()]
        body = f"{node.op.name}({', '.join(args)})"
    return body, f"{shown(node._shape)} {node._dtype}"


def shown(shape):
    """A node's shape as listings and messages show it: `(None, 3)`, or `<any shape>` for an unknown rank."""
    return "<any shape>" if shape is None else str(tuple(shape))


# NumPy's largest rank. A node of unknown rank (its `_shape` is None: a placeholder made with shape=None,
# or an elementwise result of one) reports this many unknown sizes, so that ops given an axis
# normalise it and `build` then refuses them for needing the rank, rather than NumPy's "axis out of
# bounds"; and so that `mean` counts the elements in the graph, as it does for unknown sizes.
MAX_RANK = 64


class AnyShape(SymbolicShape):
    """The shape of a node whose rank is unknown until Session.run (see MAX_RANK); it prints as
    `<any shape>`. Ask the node's `ndim` (None) for its rank."""

    def __new__(cls, ref):
        return super().__new__(cls, (None,) * MAX_RANK, ref)

    def __repr__(self):
        return "<any shape>"

    __str__ = __repr__


class Symbol(Tensor):
    """A node of a static graph: a value that exists only inside `Session.run`."""

    # grad_of: the forward node a gradient node differentiates (built by a reverse sweep), else None
    __slots__ = ("_shape", "_dtype", "graph", "name", "kind", "_data", "where", "trainable", "grad_of")
    _symbolic = True

    @property
    def shape(self):
        shape = self._shape
        if shape is None:
            return AnyShape(self)
        return SymbolicShape(shape, self) if None in shape else shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        """The rank; None when it is unknown until Session.run (as TF1's `ndims`)."""
        return None if self._shape is None else len(self._shape)

    @property
    def size(self):
        if self._shape is None or None in self._shape:
            raise user_error(TypeError, "size", f"the size of {self._label()} is unknown until Session.run: its shape "
                             f"is {shown(self._shape)}")
        return int(np.prod(self._shape, dtype=np.int64))

    def _label(self):
        return f"symbolic tensor {self.name!r}" if self.name else "a symbolic tensor"

    def _no_value(self, what, traced="while the function is traced its arrays have no values yet; use dagrad "
                  "functions on them", static="its value exists only inside Session.run; fetch it with sess.run(t)"):
        """The TypeError for `what` needing a value; it names the dg.compile call tracing it, if any."""
        if self.graph.tracing:
            if type(self) is WeakScalar and self.op is None:  # a Python float argument: it may be made a constant
                traced += (f"; {self.name!r} is a Python float argument, traced as a 0-d value: to use its value in "
                           f"Python, make it a constant of the code with dg.compile(f, static_argnames=...)")
            return TypeError(f"{what} of a value traced by dg.compile({self.graph.tracing}), tracing it for the call "
                             f"at {self.graph.traced_for}: {traced} (at {user_line()})")
        return TypeError(f"{what} of {self._label()}: {static} (at {user_line()})")

    def __bool__(self):
        raise self._no_value(
            "bool()", "Python control flow (if, while, and, or) cannot depend on a traced value, because the "
            "function is traced once per input shape; use dg.where(condition, a, b) to choose between values, or "
            "dg.cond, dg.fori_loop, dg.while_loop or dg.scan for branches and loops",
            "its value exists only inside Session.run, so Python control flow cannot depend on it; use "
            "dg.where(condition, a, b), or dg.cond, dg.fori_loop, dg.while_loop or dg.scan for branches and loops")

    def __len__(self):
        n = self._shape[0] if self._shape else None
        if n is None:
            raise user_error(TypeError, "len", f"the length of {self._label()} with shape {shown(self._shape)} is not "
                             "known before Session.run")
        return n

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        if self.graph.backward_hook is not None:  # inside dg.compile: the gradients become nodes
            return self.graph.backward_hook(self, gradient)
        raise user_error(TypeError, "backward", "called on a symbolic tensor: in a static graph use "
                         "dg.gradients(ys, xs)")

    @property
    def value(self):
        """A Variable's (or constant's) current value; settable on Variables."""
        if self.kind not in ("variable", "constant"):
            raise self._no_value(".value")
        return self._data

    @value.setter
    def value(self, new):
        if self.kind != "variable":
            raise user_error(TypeError, "value", f"only a Variable's value can be set, not a {self.kind}'s")
        self._data = checked_value(new, self._shape, self._dtype, "Variable.value", f"Variable {self.name!r}")

    def assign(self, expr):
        """Only a Variable's node can be assigned (static/graph.py gives Variables this method)."""
        raise user_error(TypeError, "assign", f"the target must be a dg.Variable, got {self!r}")

    assign_add = assign_sub = assign

    def __repr__(self):
        label = f" {self.name!r}" if self.name else ""
        what = self.kind if self.op is None else self.op.name
        return printable(f"<Symbol{label} {what} : {shown(self._shape)} {self._dtype}>")


def _refuse(what):
    def method(self, *args, **kwargs):
        if self._dtype is not None and self._dtype.kind in "iu" and self._shape == ():
            # int(i) or np.int64(i) to index with: the index itself works (getitem gathers at run time)
            raise self._no_value(what, "while the function is traced its arrays have no values yet; to index "
                                 "with this integer, use it as it is (x[i], not x[int(i)] or x[np.int64(i)]): "
                                 "the index is then taken when the code runs")
        raise self._no_value(what)

    return method


_PYTHON_NUMBERS = (bool, int, float, complex)


def _weakly(name):
    """Python's operator `name` on a weakly typed value: with Python numbers or weak values only, its result
    is weak too, as eagerly the result is a Python number (`w * 2.0` with a float `w`)."""

    def method(self, *others):
        out = getattr(Symbol, name)(self, *others)  # Tensor's operator (bound by _methods.py)
        if type(out) is Symbol and all(type(o) in _PYTHON_NUMBERS or type(o) is WeakScalar for o in others):
            out.__class__ = WeakScalar  # the same slots: only the dtype rules' reading changes
        return out

    method.__name__ = name
    return method


class WeakScalar(Symbol):
    """A Python float or complex argument of dg.compile (its placeholder), a loop's index or a carry that
    started as a Python number (dagrad/control.py), or Python's arithmetic on such values only (`w * 2.0`):
    its dtype (float64, complex128, int64) is typed weakly by the dtype rules, as NumPy 2 types a Python
    number (float32 data times it stays float32). The compiled code gets the number itself
    and computes the arithmetic with Python's operators (compile/codegen.py), so every value and dtype is
    the one eager code gives. dagrad's functions of it (`dg.sin(w)`) are NumPy values, typed strongly, as
    eagerly."""

    __slots__ = ()
    __add__, __radd__, __sub__, __rsub__ = (_weakly(n) for n in ("__add__", "__radd__", "__sub__", "__rsub__"))
    __mul__, __rmul__, __truediv__, __rtruediv__ = (_weakly(n) for n in ("__mul__", "__rmul__", "__truediv__",
                                                                          "__rtruediv__"))
    __pow__, __rpow__, __neg__, __pos__, __abs__ = (_weakly(n) for n in ("__pow__", "__rpow__", "__neg__",
                                                                          "__pos__", "__abs__"))
    __mod__, __rmod__ = _weakly("__mod__"), _weakly("__rmod__")  # (`//` and divmod: _methods.py binds them)


# what needs a value refuses a Symbol (its _value is itself: Tensor._raw would never end)
for _name, _what in (("numpy", "numpy()"), ("_raw", "the values"), ("item", "item()"), ("__array__", "np.asarray()"),
                     ("__float__", "float()"), ("__int__", "int()"), ("__index__", "use as an index")):
    setattr(Symbol, _name, _refuse(_what))


def number_needed(value, name, where, *operands):
    """The TypeError for `name`, a number that `where` checks or uses in Python (dropout's p, leaky_relu's
    slope, quantile's q, a fill value), when `value` has no value yet: a Python float argument dg.compile
    traces (static_argnames/static_argnums make it a constant of the code), a static graph's node, a value a
    transform traces. One message for every such validator."""
    if isinstance(value, Symbol) and value.graph.tracing:
        floats = [n.name for n in walk([value]) if type(n) is WeakScalar and n.op is None and n.name]
        what = (f"the Python float argument {floats[0]!r}" if value.op is None and floats else
                f"a value computed from the Python float argument(s) {', '.join(map(repr, floats))}" if floats else
                "a value computed from the arguments")
        hint = (f"make it a constant of the code with dg.compile(f, static_argnames=({floats[0]!r},)) (or "
                "static_argnums)" if floats else "compute it from constants or static arguments (static_argnames, "
                "static_argnums)")
        message = (f"{name} must be a number known when dg.compile({value.graph.tracing}) traces the function, got "
                   f"{what}, which it traces as a 0-d value: {hint}")
    elif isinstance(value, Symbol):
        message = (f"{name} must be a number, got {value._label()}, whose value exists only inside Session.run")
    elif isinstance(value, Tensor) and value._level:
        message = f"{name} must be a number, got a value a transform (grad, vmap, jvp) traces: it is not one here"
    else:
        message = f"{name} must be a number, got a Tensor that requires grad: pass a number (t.item())"
    return user_error(TypeError, where, message, *operands)


def checked_value(value, shape, dtype, op, what):
    """`value` as a new array of `dtype`, if it fits `shape` (None: any size) and converts to `dtype`
    without changing kind (an int into a float, not a float into an int); else the error, raised
    as from `op` (the call the user made) and naming `what` the value is for."""
    if isinstance(value, Symbol):
        raise user_error(TypeError, op, f"{what}: a value is needed, got the symbolic tensor {value!r}")
    try:
        arr = np.asarray(value._value if isinstance(value, Tensor) else value)
    except (ValueError, TypeError) as err:  # e.g. a ragged list
        raise user_error(type(err), op, f"{what}: cannot be made an array: {err}") from None
    if not np.can_cast(arr.dtype, dtype, "same_kind"):
        raise user_error(TypeError, op, f"{what}: a value of dtype {arr.dtype} does not fit dtype {dtype}", arr)
    if not shape_fits(arr.shape, shape):
        raise user_error(ValueError, op, f"{what}: a value of shape {arr.shape} does not fit shape {tuple(shape)}",
                         arr)
    return np.array(arr, dtype=dtype)

def shape_fits(actual, declared):
    """Whether a shape fits a declared one: same rank, equal sizes where declared (None: any size or, for the
    whole shape, any rank)."""
    if declared is None:
        return True
    return len(actual) == len(declared) and all(d is None or a == d for a, d in zip(actual, declared))

def new_symbol(graph, kind, shape, dtype, op=None, inputs=None, attrs=None, requires_grad=False, name=None,
               cls=None):
    s = _leaf(None, requires_grad, graph.level, cls or Symbol)
    s._value = s  # a symbol stands for its own value: rules run on it and build nodes
    s.op, s.inputs, s.attrs = op, inputs, attrs
    s._seq = next_seq()
    s._shape = None if shape is None else tuple(None if n is None else int(n) for n in shape)
    s._dtype = np.dtype(dtype)
    s.kind = kind
    s._data = None
    s.trainable = False
    s.where = user_line()
    s.grad_of = _provenance.node
    return graph._add(s, name)

class TooManyNodes(Exception):
    """`walk` found more nodes than its limit."""


def walk(roots, stop=(), limit=None):
    """`roots` and every node they depend on (Symbols, or the recorded Tensors of eager code), as a
    dict in the order found, iteratively; a node in `stop` is neither taken nor looked through.
    Past `limit` nodes it raises TooManyNodes. The one ancestor walk of the package."""
    seen = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen or node in stop:
            continue
        seen[node] = True
        if limit is not None and len(seen) > limit:
            raise TooManyNodes(limit)
        if node.op is not None and node.inputs:
            stack.extend(a for a in node.inputs if isinstance(a, Tensor) and a not in seen)
    return seen


def validating(nodes):
    """The nodes among `nodes` whose op checks its run-time values (Op.validates): they run even when nothing
    reads them (an index out of range raises IndexError on every path, as it does eagerly)."""
    return [n for n in nodes if n.op is not None and n.op.validates]


def ancestors(nodes):
    """`nodes` and every node they depend on, in creation order."""
    return sorted(walk(nodes), key=lambda node: node._seq)


def build(op, args, attrs):
    """The node for `op` applied to `args`, at least one of them a Symbol (called by dispatch)."""
    graph = None
    for a in args:  # the graph of the innermost body among them (the highest level), else the one graph
        if isinstance(a, Symbol) and (graph is None or a._level > graph.level):
            graph = a.graph
    inputs = []
    for a in args:
        if graph.captured is not None and isinstance(a, Tensor) and getattr(a, "graph", None) is not graph and (
                a._symbolic or a._level or a._requires_grad):
            a = graph.enclose(a)  # a value from outside the body being traced
        elif isinstance(a, Symbol) and a.graph is not graph:
            raise user_error(ValueError, op.name, "inputs come from different graphs",
                             *[x for x in args if isinstance(x, Symbol)])
        elif isinstance(a, Tensor) and not isinstance(a, Symbol):
            # an eager value used in a graph is a constant there, unless dg.compile traces a function
            # that reads parameters: see _lifted
            a = _lifted(graph, a) if graph.tracing is not None and a._requires_grad else a.numpy()
        inputs.append(_kept(a))
    if attrs:
        attrs = {k: _kept(v) for k, v in attrs.items()}
    shapes = [a._shape if isinstance(a, Symbol) else np.shape(a) for a in inputs]
    if any(s is None for s in shapes):
        shape = _any_rank_shape(op, inputs, shapes, attrs)
    else:
        shape = infer_shape(op, shapes, attrs)
    dtype = _infer_dtype(op, inputs, attrs)
    requires_grad = any(isinstance(a, Symbol) and a._requires_grad for a in inputs)
    return new_symbol(graph, "op", shape, dtype, op, tuple(inputs), attrs,
                      requires_grad and op.differentiable and dtype.kind in "fc")


def _kept(value):
    """A constant as a node keeps it: a copy of a NumPy array (an operand, an index) that the caller may write
    into later, so that the graph computes with the value it was built with (as tf.constant copies, and JAX's
    trace bakes in a closed-over array), and so does every later run of it or of a compiled function."""
    if type(value) is np.ndarray:
        return value.copy()
    if type(value) is tuple and any(type(p) is np.ndarray or type(p) is tuple for p in value):
        return tuple(_kept(p) for p in value)
    return value


def _lifted(graph, tensor):
    """An eager tensor that requires grad, read by a function dg.compile traces: a parameter becomes an
    input read at each call, and a value computed eagerly from parameters (`self.weight.T`) is computed
    again from those inputs, node by node from its record, so that each call sees the parameters' current
    values and their gradients reach them. A record freed by backward() leaves a constant."""
    node = graph.lifted.get(id(tensor))
    if node is not None:
        return node[1]
    if tensor.op is None:
        node = graph.capture(tensor)
    elif tensor.inputs is None:
        return tensor.numpy()
    else:
        args = [_lifted(graph, a) if isinstance(a, Tensor) and a._requires_grad else
                a.numpy() if isinstance(a, Tensor) else a for a in tensor.inputs]
        node = build(tensor.op, args, tensor.attrs)
    graph.lifted[id(tensor)] = (tensor, node)  # the tensor is kept, so its id stays its own
    return node


def _any_rank_shape(op, inputs, shapes, attrs):
    """The shape of a node with an input of unknown rank (None): None (unknown rank again) for an op
    that works elementwise, () for a reduction over all axes. The op's own shape rule tells, tried with
    that input as (None,) and as (None, None, None): an answer that is those shapes broadcast (or all
    ones: a reduction keeping its axes) is elementwise, () both times a full reduction. Any other op needs
    the rank, and so does one given an axis (counted against no known rank): refused, naming the input."""
    attrs = attrs or {}

    def answer(rank):
        tried = [(None,) * rank if s is None else s for s in shapes]
        try:
            out, full = tuple(op.shape(*tried, **attrs)), broadcast_shapes(*tried)
        except Exception:  # the rule refuses the tried shapes: it needs a rank
            return "refused"
        return "()" if out == () else "same" if out in (full, (1,) * len(full)) else "other"

    answers = {answer(1), answer(3)} if attrs.get("axis") is None and attrs.get("axes") is None else {"axis"}
    if answers == {"()"}:
        return ()
    if answers == {"same"}:
        return None
    ref = next(a for a, s in zip(inputs, shapes) if s is None)
    raise user_error(ValueError, op.name, f"needs the rank of its input, but {ref._label()} has an unknown shape "
                     f"(a placeholder made with shape=None, or a result of one): only elementwise operations and "
                     f"reductions over all axes accept it. Give the placeholder a shape, such as (None,) or "
                     f"(None, None) (None: any size)")


def infer_shape(op, shapes, attrs, during=None, built_at=None):
    """The output shape `op`'s rule gives for the input `shapes`. A rule that refuses them raises
    its error, of a user-facing kind, naming the op and the shapes, and the user's line (with
    `during`, e.g. "Session.run": the node's line `built_at` and the line of the call running it)."""
    try:
        return op.shape(*shapes, **(attrs or {}))
    except Exception as err:
        described = ", ".join(str(tuple(s)) for s in shapes)
        kind = type(err) if isinstance(err, (ValueError, TypeError, IndexError)) else ValueError
        if kind is ValueError:  # shapes that do not fit together: NumPy's ValueError, JAX's TypeError
            kind = ShapeError
        message = str(err).removeprefix(f"{op.name}: ")
        if during is None:
            raise kind(printable(f"{op.name}: {message} (input shapes {described}) at {user_line()}")) from None
        raise kind(printable(f"{op.name} failed in {during}: {message} (input shapes {described}; node built at "
                             f"{built_at}) at {caller_line()}")) from None




_WEAK_TYPES = {"c": complex, "f": float, "i": int}  # a weakly typed node's dtype kind -> the Python type it stands for


def _rule_input(a):
    """What a dtype rule gets for an input: a dtype, the type of a Python number (NumPy 2 types
    those weakly: float32 + 2.0 is float32), or None for an absent optional input."""
    if isinstance(a, Symbol):
        return _WEAK_TYPES.get(a._dtype.kind, a._dtype) if type(a) is WeakScalar else a._dtype
    if a is None or type(a) in (int, float, complex):
        return a if a is None else type(a)
    if isinstance(a, (list, tuple)):  # a nested list of numbers: np.result_type reads a list as a record layout
        return np.asarray(a).dtype
    return np.result_type(a)


def _infer_dtype(op, inputs, attrs):
    """The output dtype: the op's declared rule (see _core/dtypes.py)."""
    if op.dtype is not None:
        dtypes = [_rule_input(a) for a in inputs]
        try:
            return np.dtype(op.dtype(*dtypes, **(attrs or {})))
        except (TypeError, ValueError) as err:  # no loop for these dtypes: refused now, as eager mode would
            raise op_error(op.name, [a for a in inputs if isinstance(a, Symbol)], err) from None
    # a custom Function's forward is the user's own code: no rule is known, so it runs on stand-ins
    return _run_stand_ins(op, inputs, attrs)


def _run_stand_ins(op, inputs, attrs):
    dummies = []
    for a in inputs:
        if isinstance(a, Symbol):
            # (an input of unknown rank stands in as a scalar: only the dtype is wanted)
            dummies.append(np.broadcast_to(np.ones((), a._dtype), tuple(1 if n is None else n for n in a._shape or ())))
        else:
            dummies.append(a)
    try:
        with np.errstate(all="ignore"):
            return np.asarray(op.forward(*dummies, **(attrs or {}))).dtype
    except Exception:  # the forward refuses ones (e.g. a singular matrix): fall back on type promotion
        kinds = [np.asarray(a).dtype if not isinstance(a, Symbol) else a._dtype for a in inputs if a is not None]
        return np.result_type(*kinds) if kinds else np.dtype(np.float64)
