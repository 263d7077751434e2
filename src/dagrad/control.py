"""Control flow: `cond`, `fori_loop`, `while_loop` and `scan`, with JAX's signatures (`jax.lax`).

Eagerly (no static graph's node among the operands, none being built) they run Python: eager Tensors and
the transforms' boxes record op by op, as any code does. In a static graph and under `dg.compile` each
call is ONE node whose op holds its function(s) as a `Body`: a graph traced once on fresh placeholders
(no unrolling). A value from outside that a body reads (an outer node, a transform's box, a parameter
dg.compile lifts) becomes a placeholder of the body and an extra input of the node (closure conversion,
as JAX), so transforms differentiate through the node by its rules.

A node has one value in the engine, so a node with several outputs (the carry's leaves, the stacked ys)
packs them into one flat array and `_unpack` projects them out by slicing (dagrad/function.py does the
same for a Function with several outputs). The packed dtype is NumPy's promotion of the outputs' dtypes,
which holds each exactly except a 64-bit integer among floats: that one is packed bit for bit (`bitcast`).
"""

from __future__ import annotations

import numpy as np

from ._core.backends import as_dtype, has_unknown_size, is_dask, unknown_size_error
from ._core.errors import user_error
from ._core.ir import Graph, Symbol, WeakScalar, graph_state, new_symbol, validating, walk
from ._core.op import Op, apply, batch_broadcast
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.shapes import dtype_of, shape_of
from ._core.tensor import Batched, Tensor, is_symbolic
from .compile.interpret import python_arithmetic
from .ops.elementwise import astype, where
from .ops.reduce import sum as sum_
from .ops.shape import concatenate, getitem, ravel, reshape, stack, swapaxes
from .transforms import _next_level, jvp, vjp, vmap

__all__ = ["cond", "fori_loop", "while_loop", "scan"]


# ---------------------------------------------------------------- bodies


class Body:
    """A function traced once into a graph of its own: `inputs` (its placeholders: the explicit ones,
    then one per captured outer value), `outputs` (nodes of the graph, or constants) and `nodes` (what
    the outputs need, in order). Calling it replays the graph with dagrad's ops on any values (arrays,
    boxes, nodes of another graph), which is how the rules differentiate it; `fn` is kept so that a
    later transform (batching) may trace it again."""

    def __init__(self, graph, params, outputs, fn):
        self.graph = graph
        self.params = params
        self.captures = [outer for outer, _ in graph.captured.values()]
        self.inputs = params + [node for _, node in graph.captured.values()]
        self.outputs = outputs
        self.fn = fn
        # what the outputs need, and the nodes that check values (an index out of range raises, read or not)
        self.nodes = sorted({**dict.fromkeys(self.inputs), **walk(self.symbol_outputs() + validating(graph.nodes))},
                            key=lambda n: n._seq)
        self.avals = [_aval_of(o) for o in outputs]
        self.layout = None  # how the node's outputs are packed (set by the control-flow function)

    def symbol_outputs(self):
        return [o for o in self.outputs if isinstance(o, Symbol)]

    def copy(self):
        """This body in a graph of its own, node by node (each keeping its line), for a pass to rewrite:
        the original may belong to a user's static graph. `adopt` takes the rewritten nodes back."""
        graph = Graph()
        graph.level, graph.captured = self.graph.level, {}
        env = {}
        for node in self.nodes:
            inputs = None if node.op is None else tuple(env[a] if isinstance(a, Symbol) else a for a in node.inputs)
            twin = new_symbol(graph, node.kind, node._shape, node._dtype, node.op, inputs, node.attrs,
                              node._requires_grad, name=node.name if node.op is None else None, cls=type(node))
            twin._data, twin.where, twin.grad_of, twin._seq = node._data, node.where, node.grad_of, node._seq
            env[node] = twin
        copy = object.__new__(Body)
        copy.__dict__.update(self.__dict__)
        copy.graph, copy.nodes = graph, [env[n] for n in self.nodes]
        copy.params, copy.inputs = [env[p] for p in self.params], [env[p] for p in self.inputs]
        copy.outputs = [env[o] if isinstance(o, Symbol) else o for o in self.outputs]
        return copy

    def adopt(self, program):
        """Takes the outputs and nodes of `program`, a rewritten copy of this body's."""
        self.outputs, self.nodes = list(program.outputs), list(program.nodes)

    def __call__(self, *values):
        env = dict(zip(self.inputs, values))
        for node in self.nodes:
            if node in env:
                continue
            if node.op is None:  # a constant node
                env[node] = node._data
                continue
            args = [env[a] if isinstance(a, Symbol) else a for a in node.inputs]
            arithmetic = python_arithmetic(node)
            if arithmetic is not None and all(type(a) in _NUMBERS for a in args):
                env[node] = arithmetic[0](*args)  # Python's arithmetic on Python numbers, as traced
                continue
            env[node] = out = apply(node.op, tuple(args), node.attrs)
            if type(node) is WeakScalar and type(out) is Symbol and all(_weak(a) for a in args):
                out.__class__ = WeakScalar  # weakly typed again in the graph being built
        return [env[o] if isinstance(o, Symbol) else o for o in self.outputs]

    def run(self, values):
        """The outputs for input arrays `values`, each node by its op's forward (the reference), Python's
        arithmetic on Python numbers by Python's operators (as generated code computes it)."""
        env = dict(zip(self.inputs, values))
        for node in self.nodes:
            if node in env:
                continue
            if node.op is None:
                env[node] = node._data
                continue
            args = [env[a] if isinstance(a, Symbol) else a for a in node.inputs]
            arithmetic = python_arithmetic(node)
            env[node] = arithmetic[0](*args) if arithmetic else node.op.forward(*args, **(node.attrs or {}))
        return [env[o] if isinstance(o, Symbol) else o for o in self.outputs]

    def __repr__(self):
        return f"<body of {len(self.nodes)} nodes>"


def _aval_of(value):
    """(shape, dtype) of a value, a node, a box or a Python number: the shape the code sees (one
    example's under vmap)."""
    if isinstance(value, Symbol):
        return (value._shape, value._dtype)
    if isinstance(value, Tensor):
        inner = value
        while isinstance(inner, Tensor) and not isinstance(inner, Symbol):
            inner = inner._value
        if isinstance(inner, Symbol) and inner._shape is None:  # an unknown rank
            return (None, inner._dtype)
        return (tuple(value.shape), value.dtype)
    return (tuple(np.shape(value)), dtype_of(value))


def _is_batched(value):
    """Whether `value` is, or boxes, a value mapped by vmap (one per example)."""
    while isinstance(value, Tensor):
        if type(value) is Batched:
            return True
        value = value._value
    return False


def _each_example(pred, new, old):
    """`new` where the example's `pred` holds, else `old`: pytrees of leaves under vmap (a mapped
    predicate selects per example, as JAX batches a cond or a while_loop)."""
    new_leaves, tree = tree_flatten(new)
    return tree_unflatten(tree, [where(pred, a, b) for a, b in zip(new_leaves, tree_flatten(old)[0])])


def _shown(avals):
    return ", ".join(f"{tuple(s) if s is not None else '<any shape>'} {d}" for s, d in avals) or "nothing"


def _name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _trace(fn, avals, names, where, weak=None):
    """Traces `fn(*placeholders)`, one placeholder per (shape, dtype) of `avals` (None: the argument is
    None), weakly typed where `weak` says (a Python number: ir.WeakScalar), in a graph of its own; returns
    (graph, placeholders, fn's result)."""
    for shape, _ in filter(None, avals):
        if shape is None or None in shape:
            raise user_error(ValueError, where, f"needs operands of known shapes to trace {_name(fn)} once, got "
                             f"{_shown([a for a in avals if a])}; give the placeholders their sizes")
    outer = graph_state.stack[-1] if graph_state.stack else None
    graph = Graph()
    graph.level = _next_level()  # above every transform alive: the body's ops build nodes, capturing the rest
    graph.captured = {}
    if outer is not None:
        graph.tracing, graph.traced_for = outer.tracing, outer.traced_for
    weak = weak or [False] * len(avals)
    params = [None if a is None else new_symbol(graph, "placeholder", a[0], a[1], requires_grad=a[1].kind in "fc",
                                                name=n, cls=WeakScalar if w else None)
              for a, n, w in zip(avals, names, weak)]
    with graph:
        out = fn(*params)
    return graph, params, out


def _outputs(graph, leaves, where, fn, weak=None):
    """The outputs of a traced body: its nodes, outer values captured, constants as arrays (a Python number
    where `weak` says the output is weakly typed)."""
    outputs = []
    weak = list(weak or ()) + [False] * (len(leaves) - len(weak or ()))
    for leaf, w in zip(leaves, weak):
        if w and type(leaf) in _NUMBERS:
            outputs.append(leaf)
        elif isinstance(leaf, Symbol) and leaf.graph is graph:
            outputs.append(leaf)
        elif isinstance(leaf, Tensor) and (leaf._symbolic or leaf._level or leaf._requires_grad):
            outputs.append(graph.enclose(leaf))
        else:
            value = leaf._value if isinstance(leaf, Tensor) else leaf
            if not is_dask(value):  # a Dask constant stays lazy; an array is copied, as a graph's constants are
                value = np.array(leaf.numpy() if isinstance(leaf, Tensor) else leaf)
            if value.dtype.kind not in "biuf":
                raise user_error(TypeError, where, f"{_name(fn)} returned a {type(leaf).__name__} of dtype "
                                 f"{value.dtype}; it must return arrays (bool, integer or float)")
            outputs.append(value)
    return outputs


# ---------------------------------------------------------------- weakly typed values: Python numbers
# A loop's index is a Python int eagerly, and so is it in a traced body (a weakly typed node whose code gets the
# int), so `c * w + i` with a float32 carry stays float32 on every path (JAX's index is an int32 for the same
# reason). A carry that starts as a Python number stays one where the body keeps it one, which JAX's rule is
# too: weakly typed in the traced body, and after the loop a Python number on every path (`v * 1.5` from 1.0);
# where the body makes it a NumPy value (`dg.sin(v)`), the body is traced again with it strongly typed, and
# the loop gives a NumPy float64, as eagerly. cond's outputs likewise: weak where both branches give a weakly
# typed value.
_NUMBERS = (int, float, complex)  # (not bool: NumPy types a bool strongly)


def _weak(value):
    """Whether `value` is weakly typed: a Python number, or a node dg.compile traces for one."""
    return type(value) in _NUMBERS or type(value) is WeakScalar


def _python_number(x):
    return x.item() if hasattr(x, "item") else x


def _same_batch(op, values, batched, attrs):
    return values[0], batched[0]


# a value of a node as a Python number again (`.item()`): a weakly typed carry or result of control flow
PYTHON_NUMBER = Op("python_number", _python_number, (lambda g, out, x: g,), (lambda t, out, x: t,),
                   lambda shape: tuple(shape), True, dtype=lambda dtype: np.dtype(dtype), batch=_same_batch)


def _as_weak(value, kind):
    """`value` (a node's value) as a weakly typed one where `kind` says so: a Python number eagerly, a
    PYTHON_NUMBER node (ir.WeakScalar) in a graph; a transform's box stays as it is."""
    if not kind or _weak(value):
        return value
    if type(value) is Symbol:
        out = apply(PYTHON_NUMBER, (value,))
        out.__class__ = WeakScalar
        return out
    if isinstance(value, Tensor):
        return value
    return kind(_python_number(value)) if np.ndim(value) == 0 else value


def _weak_kind(value):
    """The Python type a weakly typed `value` stands for (int, float, complex), else None."""
    if type(value) is WeakScalar:
        return {"i": int, "f": float, "c": complex}[value._dtype.kind]
    return type(value) if type(value) in _NUMBERS else None


def _typed(value, weak, where):
    """An operand of a control-flow node: a weakly typed one as it is (a Python number, a traced one), else as
    `_operand` makes it (a traced Python number made a NumPy value: the body makes it one)."""
    if weak:
        return value
    if type(value) is WeakScalar:
        return astype(value, value.dtype)  # (a strongly typed node of the same value)
    return _operand(value, where)


def _graph_mode(*values):
    """Whether control flow builds a node: a graph is being built, or an operand is (or boxes) a node."""
    return bool(graph_state.stack) or any(is_symbolic(v) for v in values)


def _operand(value, where):
    """An operand as the node takes it: Tensors as they are, anything else as a NumPy array (a Python
    number too, so that its dtype is the one traced)."""
    if value is None or isinstance(value, Tensor):
        return value
    array = value if is_dask(value) else np.asarray(value)  # np.asarray would compute a Dask array
    if array.dtype.kind not in "biuf":
        raise user_error(TypeError, where, f"an operand of type {type(value).__name__} (dtype {array.dtype}) is not "
                         "an array of numbers")
    return array


def _check_types(where, fn, before, after, carry=True):
    """Raises unless the pytrees `before` and `after` agree in structure, shapes and dtypes: a body's carry
    in and out (`carry`), or the outputs of cond's two branches."""
    b_leaves, b_def = tree_flatten(before)
    a_leaves, a_def = tree_flatten(after)
    b_avals = [None if x is None else _aval_of(x) for x in b_leaves]
    a_avals = [None if x is None else _aval_of(x) for x in a_leaves]
    if b_def != a_def or [a and (tuple(a[0]), a[1]) for a in b_avals] != [a and (tuple(a[0]), a[1]) for a in a_avals]:
        what = "a carry of the same structure, shapes and dtypes as its input" if carry else \
            "an output of the same structure, shapes and dtypes as the other branch"
        hint = _WEAK_HINT if carry and _dtypes_differ(a_avals, b_avals) else ""
        raise user_error(TypeError, where, f"{_name(fn)} must return {what}: got {_describe(a_def, a_avals)} for "
                         f"{_describe(b_def, b_avals)}{hint}")


def _dtypes_differ(a_avals, b_avals):
    return any(a and b and a[1] != b[1] for a, b in zip(a_avals, b_avals))


def _describe(treedef, avals):
    kind = "one array" if treedef is None else (treedef[0].__name__ if isinstance(treedef, tuple) else "tree")
    return f"{kind} [{_shown([a for a in avals if a])}]"


_WEAK_HINT = (" (a Python number as an initial value is float64 or int64: give it the dtype the body computes, "
              "e.g. np.float32(0.0))")


# ---------------------------------------------------------------- packing several outputs into one value


def _bitcast(x, dtype):
    return np.ascontiguousarray(x).view(dtype)


# a 64-bit integer output of a node packed among floats: its bits, reinterpreted (no gradient)
BITCAST = Op("bitcast", _bitcast, None, None, lambda shape, dtype: shape, False, dtype=lambda d, dtype: dtype)


class _Layout:
    """How outputs of (shape, dtype) `avals` are packed into one value: the value itself for one output,
    else a flat array of their promoted dtype."""

    def __init__(self, avals):
        self.avals = [(tuple(s), np.dtype(d)) for s, d in avals]
        dtypes = [d for _, d in self.avals]
        self.single = len(avals) == 1
        self.dtype = dtypes[0] if len(set(dtypes)) == 1 else np.result_type(*dtypes)
        self.sizes = [int(np.prod(s, dtype=np.int64)) for s, _ in self.avals]
        self.shape = self.avals[0][0] if self.single else (sum(self.sizes),)
        self.bitcast = [self.dtype.kind == "f" and d.kind in "iu" and d.itemsize == 8 and d != self.dtype
                        for d in dtypes]

    def pack(self, values):
        """NumPy: one fresh array."""
        if self.single:
            value = values[0]
            # np.array would compute a Dask value; Dask arrays are never written in place, so no copy is needed
            return as_dtype(value, self.dtype) if is_dask(value) else np.array(value, dtype=self.dtype)
        parts = [np.ravel(v).view(self.dtype) if bit else np.ravel(v) for v, bit in zip(values, self.bitcast)]
        if not parts:
            return np.zeros(0, self.dtype)
        if any(is_dask(p) for p in parts):  # Dask's concatenate takes no dtype=: each part is cast lazily
            return np.concatenate([as_dtype(p, self.dtype) for p in parts])
        return np.concatenate(parts, dtype=self.dtype)

    def pack_source(self, names, literal):
        """The same as Python source over `names`."""
        dtype = literal(self.dtype)
        if self.single:
            return f"np.array({names[0]}, dtype={dtype})"
        parts = [f"np.ravel({n}).view({dtype})" if bit else f"np.ravel({n})" for n, bit in zip(names, self.bitcast)]
        if not parts:
            return f"np.zeros(0, {dtype})"
        return f"np.concatenate(({', '.join(parts)},), dtype={dtype})"

    def pack_traced(self, values):
        """With dagrad's ops, for tangents (zeros where a value is None or not differentiable)."""
        values = [np.zeros(s, self.dtype if self.single else d) if v is None or d.kind != "f" else v
                  for v, (s, d) in zip(values, self.avals)]
        if self.single:
            return values[0]
        parts = [np.zeros(n, self.dtype) if bit else ravel(astype(v, self.dtype) if dtype_of(v) != self.dtype else v)
                 for v, n, bit in zip(values, self.sizes, self.bitcast)]
        return concatenate(parts) if parts else np.zeros(0, self.dtype)

    def pack_batched(self, values):
        """With dagrad's ops, for values with a batch axis in front (a batching rule's outputs): one
        packed row per example."""
        if self.single:
            return values[0]
        size = shape_of(values[0])[0]
        parts = []
        for v, bit in zip(values, self.bitcast):
            v = reshape(v, (size, -1))
            parts.append(apply(BITCAST, (v,), {"dtype": self.dtype}) if bit else
                         astype(v, self.dtype) if dtype_of(v) != self.dtype else v)
        return concatenate(parts, axis=1) if parts else np.zeros((size, 0), self.dtype)

    def unpack(self, packed):
        """The outputs again, projected out of the packed value with dagrad's ops. A 0-d output is indexed
        with (): a NumPy scalar, as the ufuncs of an eager loop give it."""
        if self.single:
            return [getitem(packed, ()) if self.shape == () else packed]
        parts, offset = [], 0
        for (shape, dtype), size, bit in zip(self.avals, self.sizes, self.bitcast):
            part = getitem(packed, slice(offset, offset + size))
            offset += size
            if bit:
                part = apply(BITCAST, (part,), {"dtype": dtype})
            elif dtype != self.dtype:
                part = astype(part, dtype)
            parts.append(getitem(reshape(part, shape), ()) if shape == () else reshape(part, shape))
        return parts


def _shape_rule(*shapes, **attrs):
    return _layout_of(attrs).shape


def _dtype_rule(*dtypes, **attrs):
    return _layout_of(attrs).dtype


def _layout_of(attrs):
    return (attrs.get("body") or attrs.get("true")).layout


def _indented(lines):
    return [(f"    {line[0]}", line[1]) if isinstance(line, tuple) else f"    {line}" for line in lines]


def _zeros_like_aval(value):
    shape, dtype = _aval_of(value)
    return np.zeros(shape, dtype)


def _floats(values):
    return [dtype_of(v).kind in "fc" for v in values]


def _needed(values, traced):
    """Which inputs of a node get a cotangent: floats that were nodes or boxes when the node was built
    (`traced`), not constant arrays. Not read off the values the rule gets: a box over an array (dg.grad of
    a constant, inside dg.compile or a graph) reaches the rule as that array, and needs its cotangent."""
    return [t and f for f, t in zip(_floats(values), traced)]


def _vjp_of(fn, values, cotangents, mask=None):
    """Cotangents for `values` (None for a value that is not a float, or is left out by `mask`) of
    `fn(*values)` (a list of outputs), given the outputs' `cotangents` (None: zeros)."""
    which = [k for k, f in enumerate(_floats(values) if mask is None else mask) if f]
    if not which:
        return [None] * len(values)

    def partial(*chosen):
        full = list(values)
        for k, v in zip(which, chosen):
            full[k] = v
        return tuple(fn(*full))

    outs, pull = vjp(partial, *[values[k] for k in which])
    cts = [_zeros_like_aval(o) if ct is None or dtype_of(o).kind not in "fc" else ct for o, ct in zip(outs, cotangents)]
    found = pull(tuple(cts))
    result = [None] * len(values)
    for k, ct in zip(which, found):
        result[k] = ct
    return result


def _jvp_of(fn, values, tangents):
    """(outputs, their tangents) of `fn(*values)` (a list of outputs) for the `tangents` of `values` (None:
    a constant)."""
    which = [k for k, t in enumerate(tangents) if t is not None]

    def partial(*chosen):
        full = list(values)
        for k, v in zip(which, chosen):
            full[k] = v
        return tuple(fn(*full))

    if not which:
        outs = list(fn(*values))
        return outs, [None] * len(outs)
    outs, touts = jvp(partial, tuple(values[k] for k in which), tuple(tangents[k] for k in which))
    return list(outs), list(touts)


# ---------------------------------------------------------------- scan (and fori_loop with static bounds)


def scan(f, init, xs=None, length=None, reverse=False):
    """Loops `f(carry, x) -> (carry, y)` over the leading axis of `xs`; returns the final carry and the ys
    stacked (JAX's `lax.scan`). `init`, `xs` and the ys are pytrees; with `xs=None`, `length` steps get
    x = None. Eagerly a Python loop; in a static graph or under `dg.compile`, one node holding `f` traced
    once, differentiable in both modes.

    >>> import dagrad as dg, numpy as np
    >>> def step(total, x):
    ...     total = total + x
    ...     return total, total * 2.0
    >>> dg.scan(step, 0.0, np.array([1.0, 2.0, 3.0]))
    (np.float64(6.0), array([ 2.,  6., 12.]))
    >>> dg.compile(lambda xs: dg.scan(step, 0.0, xs)[1])(np.array([1.0, 2.0, 3.0]))
    array([ 2.,  6., 12.])
    """
    if not callable(f):
        raise user_error(TypeError, "scan", f"f must be a function f(carry, x) -> (carry, y), got {type(f).__name__}")
    return _scan(f, init, xs, length, reverse, "scan", None)


def _length(xs_leaves, length, where):
    shapes = [_aval_of(x)[0] for x in xs_leaves if x is not None]
    if any(shape is None or len(shape) == 0 or shape[0] is None for shape in shapes):
        raise user_error(ValueError, where, "every array of xs needs a leading axis of known size to scan over, "
                         f"got shapes {', '.join(str(s) for s in shapes)}")
    sizes = {shape[0] for shape in shapes}
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
            raise user_error(TypeError, where, f"length must be a non-negative int, got {length!r}")
        sizes.add(int(length))
    if len(sizes) != 1:
        raise user_error(ValueError, where, "xs's arrays and length must agree on the number of steps, got "
                         f"{sorted(sizes)}" if sizes else "needs xs or length to know the number of steps")
    return sizes.pop()


def _scan(f, init, xs, length, reverse, where, index):
    """scan, and fori_loop with static bounds (`index`: its lower bound; f then takes the step's index first)."""
    call = f if index is not None else (lambda i, c, x: f(c, x))
    init_leaves, init_def = tree_flatten(init)
    xs_leaves, xs_def = tree_flatten(xs)
    _known_sizes(init_leaves + xs_leaves, where)
    n = _length(xs_leaves, length, where)
    reverse = bool(reverse)
    if not _graph_mode(*init_leaves, *xs_leaves):
        return _eager_scan(call, f, init, xs_leaves, xs_def, n, reverse, where, index)
    kinds = [_weak_kind(v) for v in init_leaves]
    init_leaves = [v if k else _operand(v, where) for v, k in zip(init_leaves, kinds)]
    xs_leaves = [_operand(v, where) for v in xs_leaves]
    carry_avals = [_aval_of(v) for v in init_leaves]
    x_avals = [None if x is None else (_aval_of(x)[0][1:], _aval_of(x)[1]) for x in xs_leaves]
    n_c, n_x = len(init_leaves), len(xs_leaves)
    shapes = {}

    def traced(*params):
        i = params[0] if index is not None else None
        carry = tree_unflatten(init_def, params[1:1 + n_c] if index is not None else params[:n_c])
        x = tree_unflatten(xs_def, params[n_c + (index is not None):])
        out = call(i, carry, x)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise user_error(TypeError, where, f"{_name(f)} must return a pair (carry, y), got "
                             f"{type(out).__name__}")
        _check_types(where, f, carry, out[0])
        y_leaves, shapes["y"] = tree_flatten(out[1])
        return list(tree_flatten(out[0])[0]), y_leaves

    index_aval = [((), np.dtype(np.int64))] if index is not None else []  # the index: a Python int, weakly typed
    weak = [k is not None for k in kinds]
    while True:  # (twice at most: again with the carries the body makes NumPy values typed strongly)
        graph, params, (carry_out, y_leaves) = _trace(traced, index_aval + carry_avals + x_avals,
                                                      ["i"] * len(index_aval) + ["carry"] * n_c + ["x"] * n_x, where,
                                                      [True] * len(index_aval) + weak + [False] * n_x)
        kept = [w and _weak(o) for w, o in zip(weak, carry_out)]
        if kept == weak:
            break
        weak = kept
    init_leaves = [_typed(v, w, where) for v, w in zip(init_leaves, weak)]
    present = [k for k, y in enumerate(y_leaves) if y is not None]
    outputs = _outputs(graph, carry_out + [y_leaves[k] for k in present], where, f, weak)
    operands = [*init_leaves, *[x for x in xs_leaves if x is not None],
                *[outer for outer, _ in graph.captured.values()]]
    # under a reverse-mode transform the node also stacks the carry before each step, which its gradient
    # reads (else the gradient runs the loop again to find them)
    saved = n_c if any(type(v) is Tensor and v._level and v._requires_grad for v in operands) else 0
    carry_params = [p for p in params if p is not None][index is not None:][:n_c]
    body = Body(graph, [p for p in params if p is not None], outputs + carry_params[:saved], f)
    y_avals = [((n, *tuple(s)), d) for s, d in body.avals[n_c:]]
    body.layout = _Layout(carry_avals + y_avals)
    operands = (*init_leaves, *[x for x in xs_leaves if x is not None], *body.captures)
    attrs = {"body": body, "length": n, "reverse": reverse, "index": index, "carries": n_c, "saved": saved,
             "traced": tuple(isinstance(v, Tensor) for v in operands)}
    out = apply(SCAN, operands, attrs)
    parts = body.layout.unpack(out)[:len(outputs)]
    ys = [None] * len(y_leaves)
    for k, part in zip(present, parts[n_c:]):
        ys[k] = part
    carry = [_as_weak(part, kind if w else None) for part, kind, w in zip(parts[:n_c], kinds, weak)]
    return tree_unflatten(init_def, carry), tree_unflatten(shapes["y"], ys)


def _eager_scan(call, f, init, xs_leaves, xs_def, n, reverse, where, index):
    carry = init
    ys = [None] * n
    for k in (range(n - 1, -1, -1) if reverse else range(n)):
        x = tree_unflatten(xs_def, [None if leaf is None else leaf[k] for leaf in xs_leaves])
        out = call(None if index is None else index + k, carry, x)  # the index: a Python int
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise user_error(TypeError, where, f"{_name(f)} must return a pair (carry, y), got {type(out).__name__}")
        _check_types(where, f, carry, out[0])
        carry, ys[k] = out
    if n == 0:  # the ys' structure and shapes come from tracing f once, as JAX does
        with Graph():
            _, empty = _scan(f, init, tree_unflatten(xs_def, xs_leaves), 0, reverse, where, index)
        leaves, y_def = tree_flatten(empty)
        return carry, tree_unflatten(y_def, [None if y is None else np.zeros((0, *y.shape[1:]), y.dtype)
                                             for y in leaves])
    leaves = [tree_flatten(y) for y in ys]
    y_def = leaves[0][1]
    if any(d != y_def for _, d in leaves):
        raise user_error(TypeError, where, f"{_name(f)} returned ys of different structures at different steps")
    stacked = [None if column[0] is None else stack(list(column)) for column in zip(*[ls for ls, _ in leaves])]
    return carry, tree_unflatten(y_def, stacked)


def _scan_parts(inputs, attrs):
    body, n_c = attrs["body"], attrs["carries"]
    n_x = len(body.params) - n_c - (attrs["index"] is not None)
    return body, list(inputs[:n_c]), list(inputs[n_c:n_c + n_x]), list(inputs[n_c + n_x:])


def _scan_forward(*inputs, **attrs):
    body, carry, xs, consts = _scan_parts(inputs, attrs)
    n, index, n_c = attrs["length"], attrs["index"], attrs["carries"]
    ys = [np.empty(s, d) for s, d in body.layout.avals[n_c:]]
    for k in (range(n - 1, -1, -1) if attrs["reverse"] else range(n)):
        step = ([index + k] if index is not None else []) + carry + [x[k] for x in xs] + consts
        out = body.run(step)
        carry = out[:n_c]
        for y, v in zip(ys, out[n_c:]):
            y[k] = v
    return body.layout.pack(carry + ys)


def _scan_node(fn, init, xs, n, reverse, index, where):
    """scan over lists: `fn(i, carry, x) -> (carry, ys)` with lists of leaves (the rules' own scans)."""
    out_carry, ys = _scan(lambda i, c, x: fn(i, list(c), list(x)), list(init), list(xs), n, reverse, where,
                          0 if index is None else index)
    return list(out_carry), list(ys)


def _scan_vjp(g, out, *inputs, **attrs):
    body, init, xs, consts = _scan_parts(inputs, attrs)
    n, index, reverse, n_c = attrs["length"], attrs["index"], attrs["reverse"], attrs["carries"]
    cts = body.layout.unpack(g)
    ct_carry, ct_ys = cts[:n_c], cts[n_c:]
    offset = index if index is not None else 0

    def pre(i):
        return [i] if index is not None else []

    saved = attrs["saved"]
    if saved:  # the carry before each step, stacked by the forward node
        carries = body.layout.unpack(out)[-saved:]
    else:  # found by running the forward again
        _, carries = _scan_node(lambda i, c, x: (body(*pre(i), *c, *x, *consts)[:n_c], c), init, xs, n, reverse,
                                offset, "scan")
    traced = attrs["traced"]
    float_c = _needed(init, traced[:n_c])
    float_x = _needed(xs, traced[n_c:n_c + len(xs)])
    float_k = _needed(consts, traced[n_c + len(xs):])

    def backward_step(i, state, inp):
        # one step back: the body's vjp at the step's carry and x; the captured values' cotangents add up
        ct_c, ct_k = state[:n_c], state[n_c:]
        c, x, ct_y = inp[:n_c], inp[n_c:n_c + len(xs)], inp[n_c + len(xs):]
        found = _vjp_of(lambda *v: body(*pre(i), *v), c + x + consts, ct_c + ct_y,
                        _floats(init) + float_x + float_k)
        d_c = [d if d is not None else _zeros_like_aval(v) for d, v in zip(found[:n_c], c)]
        d_k = [a + d for a, d in zip(ct_k, [d for d, f in zip(found[n_c + len(xs):], float_k) if f])]
        return d_c + d_k, [d for d, f in zip(found[n_c:n_c + len(xs)], float_x) if f]

    ct_carry = [ct if f else _zeros_like_aval(v) for ct, f, v in zip(ct_carry, _floats(init), init)]
    zeros_k = [_zeros_like_aval(k) for k, f in zip(consts, float_k) if f]
    state, d_xs = _scan_node(backward_step, ct_carry + zeros_k, carries + xs + ct_ys, n, not reverse, offset, "scan")
    d_init = [d if f else None for d, f in zip(state[:n_c], float_c)]
    d_k = iter(state[n_c:])
    d_x = iter(d_xs)
    return (*d_init, *[next(d_x) if f else None for f in float_x], *[next(d_k) if f else None for f in float_k])


def _scan_jvp(tangents, out, *inputs, **attrs):
    body, init, xs, consts = _scan_parts(inputs, attrs)
    n, index, reverse, n_c = attrs["length"], attrs["index"], attrs["reverse"], attrs["carries"]
    t_init, t_xs, t_consts = _scan_parts(tangents, attrs)[1:]
    float_c = _floats(init)
    # a float carry gets a tangent even if it started without one: the body may give it one
    t_init = [t if t is not None else (_zeros_like_aval(v) if f else None) for t, v, f in zip(t_init, init, float_c)]
    tc_at = [k for k, t in enumerate(t_init) if t is not None]
    tx_at = [k for k, t in enumerate(t_xs) if t is not None]

    def pre(i):
        return [i] if index is not None else []

    def step(i, state, inp):
        c, tc = state[:n_c], state[n_c:]
        x, tx = inp[:len(xs)], inp[len(xs):]
        tangents_in = [None] * n_c
        for k, t in zip(tc_at, tc):
            tangents_in[k] = t
        t_x = [None] * len(xs)
        for k, t in zip(tx_at, tx):
            t_x[k] = t
        outs, touts = _jvp_of(lambda *v: body(*pre(i), *v), c + x + consts, tangents_in + t_x + t_consts)
        touts = [t if t is not None else _zeros_like_aval(o) for t, o in zip(touts, outs)]
        return outs[:n_c] + [touts[k] for k in tc_at], outs[n_c:] + touts[n_c:]

    state, ys = _scan_node(step, init + [t_init[k] for k in tc_at], xs + [t_xs[k] for k in tx_at], n, reverse,
                           index if index is not None else 0, "scan")
    t_final = [None] * n_c
    for k, t in zip(tc_at, state[n_c:]):
        t_final[k] = t
    n_y = len(ys) // 2
    return body.layout.pack_traced(t_final + ys[n_y:])


def _scan_emit(writer, node, args, target):
    attrs = node.attrs
    body, n_c, n, index = attrs["body"], attrs["carries"], attrs["length"], attrs["index"]
    params = body.params[index is not None:]
    names = {}
    lines = []
    carry = []
    for p, arg in zip(params[:n_c], args):
        names[p] = writer.name(p.name)
        carry.append(names[p])
        lines.append(f"{names[p]} = {arg}")
    xs = args[n_c:n_c + len(params) - n_c]
    for p in params[n_c:]:
        names[p] = writer.name(p.name)
    for p, arg in zip(body.inputs[len(body.params):], args[n_c + len(xs):]):
        names[p] = arg  # a captured value: the outer name itself
    ys = []
    for shape, dtype in body.layout.avals[n_c:]:
        ys.append(writer.name("ys"))
        lines.append(f"{ys[-1]} = np.empty({writer.literal(shape)}, dtype={writer.literal(dtype)})")
    k = writer.name("k")
    lines.append(f"for {k} in {f'range({n - 1}, -1, -1)' if attrs['reverse'] else f'range({n})'}:")
    inner = []
    read = {a for node in body.nodes if node.op is not None for a in node.inputs if isinstance(a, Symbol)}
    read.update(body.symbol_outputs())
    if index is not None and body.params[0] in read:
        names[body.params[0]] = writer.name("i")
        inner.append(f"{names[body.params[0]]} = {k} + {index}" if index else f"{names[body.params[0]]} = {k}")
    inner += [f"{names[p]} = {x}[{k}]" for p, x in zip(params[n_c:], xs) if p in read]
    block, _ = writer.block(body, names)
    inner += block
    outs = [names[o] if isinstance(o, Symbol) else writer.literal(o) for o in body.outputs]
    # the ys first: an output may be the carry's old value, which the assignment below rebinds
    inner += [f"{y}[{k}] = {o}" for y, o in zip(ys, outs[n_c:])]
    if carry:
        inner.append(f"{', '.join(carry)} = {', '.join(outs[:n_c])}")
    lines += _indented(inner or ["pass"])
    lines.append(f"{target} = {body.layout.pack_source(carry + ys, writer.literal)}")
    return lines


def _scan_batch(op, values, batched, attrs):
    """vmap of a scan: one scan whose step maps the body over the examples. Every carry is mapped (one
    that starts the same for all may not stay so); a mapped xs has the steps first, then the batch."""
    body, init, xs, consts = _scan_parts(values, attrs)
    _, b_init, b_xs, b_k = _scan_parts(batched, attrs)
    size = _batch_size(values, batched)
    n, index, n_c = attrs["length"], attrs["index"], attrs["carries"]
    init = [v if b else batch_broadcast(v, size) for v, b in zip(init, b_init)]
    xs = [swapaxes(v, 0, 1) if b else v for v, b in zip(xs, b_xs)]
    flags = [True] * n_c + list(b_xs) + list(b_k)

    def step(i, c, x):
        outs = _mapped(lambda *v: body(*([i] if index is not None else []), *v), c + x + consts, flags, size)
        return outs[:n_c], outs[n_c:]

    carry, ys = _scan_node(step, init, xs, n, attrs["reverse"], index, "scan")
    return body.layout.pack_batched(carry + [swapaxes(y, 0, 1) for y in ys]), True


SCAN = Op("scan", _scan_forward, _scan_vjp, _scan_jvp, _shape_rule, True, fresh=True, dtype=_dtype_rule,
          bodies=("body",), emit=_scan_emit, batch=_scan_batch)


def _batch_size(values, batched):
    return next(shape_of(v)[0] for v, b in zip(values, batched) if b)


def _mapped(fn, values, flags, size):
    """`fn(*values)` (a list of outputs) for each example, through vmap: values flagged carry their
    examples on axis 0, the others are the same for all; every output gets the batch axis."""
    return list(vmap(lambda *v: list(fn(*v)), in_axes=tuple(0 if f else None for f in flags), axis_size=size)(*values))


def _per_example(pred, value):
    """A batch of scalar predicates shaped to select along the batch axis of `value`."""
    return reshape(pred, (shape_of(pred)[0],) + (1,) * (len(_aval_of(value)[0]) - 1))


# ---------------------------------------------------------------- fori_loop


def fori_loop(lower, upper, body_fun, init_val):
    """`body_fun(i, val) -> val` for i from `lower` to `upper - 1`; returns the final val (JAX's
    `lax.fori_loop`; i is a Python int, weakly typed on every path, so that `c * w + i` keeps a float32
    carry float32, as JAX's int32 index does). With bounds that are Python integers it is a scan (both
    modes of differentiation); with bounds that are traced values, a while_loop (forward mode only).

    >>> import dagrad as dg, numpy as np
    >>> dg.fori_loop(0, 4, lambda i, x: x * 2.0, np.array([1.0, 3.0]))
    array([16., 48.])
    >>> dg.compile(lambda x: dg.fori_loop(0, 4, lambda i, v: v * 2.0, x))(np.array([1.0, 3.0]))
    array([16., 48.])
    """
    if not callable(body_fun):
        raise user_error(TypeError, "fori_loop", f"body_fun must be a function body_fun(i, val) -> val, got "
                         f"{type(body_fun).__name__}")
    bounds = []
    for bound in (lower, upper):
        if dtype_of(bound).kind not in "iu" or isinstance(bound, bool) or shape_of(bound) != ():
            raise user_error(TypeError, "fori_loop", f"lower and upper must be integer scalars, got "
                             f"{_shown([_aval_of(lower), _aval_of(upper)])}")
        bounds.append(bound)
    if not any(is_symbolic(b) for b in bounds):
        lower, upper = (int(_decided(b)) for b in bounds)
        if not _graph_mode(*tree_flatten(init_val)[0]):
            _known_sizes(tree_flatten(init_val)[0], "fori_loop")
            val = init_val
            for i in range(lower, upper):  # i: a Python int (weakly typed), on every path
                new = body_fun(i, val)
                _check_types("fori_loop", body_fun, val, new)
                val = new
            return val
        return _scan(lambda i, c, x: (body_fun(i, c), None), init_val, None, max(upper - lower, 0), False,
                     "fori_loop", lower)[0]
    lower, upper = (astype(b, np.int64) if isinstance(b, Tensor) else np.int64(b) for b in bounds)
    return _while(lambda s: s[0] < s[1], lambda s: (s[0] + np.int64(1), s[1], body_fun(_as_weak(s[0], int), s[2])),
                  (lower, upper, init_val), "fori_loop", body_fun)[2]


# ---------------------------------------------------------------- while_loop


def while_loop(cond_fun, body_fun, init_val):
    """`val = body_fun(val)` while `cond_fun(val)` (a scalar bool); returns the final val (JAX's
    `lax.while_loop`). Differentiable in forward mode; reverse mode needs a known trip count: use
    `fori_loop` with static bounds or `scan`.

    >>> import dagrad as dg, numpy as np
    >>> dg.while_loop(lambda v: v[0] < 5, lambda v: (v[0] + 1, v[1] * 2.0), (0, 1.0))
    (5, 32.0)
    >>> dg.compile(lambda x: dg.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 3.0, x))(np.ones(2))
    array([81., 81.])
    """
    for fn, what in ((cond_fun, "cond_fun(val) -> bool"), (body_fun, "body_fun(val) -> val")):
        if not callable(fn):
            raise user_error(TypeError, "while_loop", f"needs a function {what}, got {type(fn).__name__}")
    return _while(cond_fun, body_fun, init_val, "while_loop", body_fun)


def _truth(value, where, what):
    """`value` if it is a scalar bool or integer (a predicate), else the error naming `what` it is."""
    aval = _aval_of(value)
    if tuple(aval[0]) != () or aval[1].kind not in "biu":
        raise user_error(TypeError, where, f"{what} must be a scalar bool, got {_shown([aval])}")
    return value


def _while(cond_fun, body_fun, init, where, named):
    leaves, tree = tree_flatten(init)
    if not _graph_mode(*leaves):
        _known_sizes(leaves, where)
        val = init
        while True:
            pred = _truth(cond_fun(val), where, f'the result of {_name(cond_fun)}')
            flags = _decided(pred)
            if not flags.any():  # (one flag per example under vmap: until every example is done)
                return val
            new = body_fun(val)
            _check_types(where, named, val, new)
            val = _each_example(pred, new, val) if _is_batched(pred) else new
    kinds = [_weak_kind(v) for v in leaves]
    leaves = [v if k else _operand(v, where) for v, k in zip(leaves, kinds)]
    avals = [_aval_of(v) for v in leaves]
    names = ["carry"] * len(leaves)

    def traced_cond(*params):
        return [_truth(cond_fun(tree_unflatten(tree, params)), where, f'the result of {_name(cond_fun)}')]

    def traced_body(*params):
        carry = tree_unflatten(tree, params)
        new = body_fun(carry)
        _check_types(where, named, carry, new)
        return tree_flatten(new)[0]

    weak = [k is not None for k in kinds]
    while True:  # (twice at most: again with the carries the body makes NumPy values typed strongly)
        body_graph, body_params, body_out = _trace(traced_body, avals, names, where, weak)
        kept = [w and _weak(o) for w, o in zip(weak, body_out)]
        if kept == weak:
            break
        weak = kept
    leaves = [_typed(v, w, where) for v, w in zip(leaves, weak)]
    graph, params, out = _trace(traced_cond, avals, names, where, weak)
    test = Body(graph, params, _outputs(graph, out, where, cond_fun), cond_fun)
    body = Body(body_graph, body_params, _outputs(body_graph, body_out, where, named, weak), body_fun)
    body.layout = _Layout(avals)
    out = apply(WHILE, (*leaves, *test.captures, *body.captures), {"cond": test, "body": body})
    carry = [_as_weak(part, kind if w else None) for part, kind, w in zip(body.layout.unpack(out), kinds, weak)]
    return tree_unflatten(tree, carry)


def _innermost(value):
    while isinstance(value, Tensor):
        value = value._value
    return value


def _decided(value):
    """The value of an eager predicate (or loop bound) as a NumPy array: it decides which Python code runs
    next, so it must be known. A Dask value is computed here, as `bool(t)` computes one (JAX's eager cond and
    while_loop read a concrete predicate too); only the predicate is, operands and results stay lazy."""
    return np.asarray(_innermost(value))


def _known_sizes(leaves, where):
    """Refuses a Dask operand whose chunk sizes are unknown: control flow compares the shapes its functions
    return with their inputs' (and traces the branch not taken on them)."""
    for value in leaves:
        while isinstance(value, Tensor) and not isinstance(value, Symbol):  # a node's value is itself
            value = value._value
        if is_dask(value) and has_unknown_size(value.shape):
            raise unknown_size_error(where, value.shape)


def _while_parts(inputs, attrs):
    test, body = attrs["cond"], attrs["body"]
    n = len(body.params)
    return test, body, list(inputs[:n]), list(inputs[n:n + len(test.captures)]), list(inputs[n + len(test.captures):])


def _while_forward(*inputs, **attrs):
    test, body, carry, test_k, body_k = _while_parts(inputs, attrs)
    while test.run(carry + test_k)[0]:
        carry = body.run(carry + body_k)
    return body.layout.pack(carry)


def _while_vjp(g, out, *inputs, **attrs):
    raise user_error(ValueError, "while_loop", "reverse-mode differentiation does not work for while_loop (nor for "
                     "fori_loop with bounds that are traced values): its number of steps is known only when it runs. "
                     "Use fori_loop with static bounds or scan, or forward mode (dg.jvp, dg.jacfwd)")


def _while_jvp(tangents, out, *inputs, **attrs):
    test, body, carry, test_k, body_k = _while_parts(inputs, attrs)
    t_carry, _, t_body_k = _while_parts(tangents, attrs)[2:]
    n = len(carry)
    t_carry = [t if t is not None else (_zeros_like_aval(v) if f else None)
               for t, v, f in zip(t_carry, carry, _floats(carry))]
    at = [k for k, t in enumerate(t_carry) if t is not None]

    def step(state):
        c, tc = list(state[:n]), state[n:]
        tangents_in = [None] * n
        for k, t in zip(at, tc):
            tangents_in[k] = t
        outs, touts = _jvp_of(lambda *v: body(*v), c + body_k, tangents_in + t_body_k)
        return tuple(outs) + tuple(t if t is not None else _zeros_like_aval(o) for t, o in
                                   ((touts[k], outs[k]) for k in at))

    state = _while(lambda s: test(*s[:n], *test_k)[0], step, tuple(carry + [t_carry[k] for k in at]), "while_loop",
                   body.fn)
    t_final = [None] * n
    for k, t in zip(at, state[n:]):
        t_final[k] = t
    return body.layout.pack_traced(t_final)


def _while_emit(writer, node, args, target):
    test, body = node.attrs["cond"], node.attrs["body"]
    n = len(body.params)
    carry = [writer.name(p.name) for p in body.params]
    lines = [f"{c} = {a}" for c, a in zip(carry, args)]
    test_names = dict(zip(test.params, carry))
    test_names.update(zip(test.inputs[n:], args[n:n + len(test.captures)]))
    body_names = dict(zip(body.params, carry))
    body_names.update(zip(body.inputs[n:], args[n + len(test.captures):]))
    lines.append("while True:")
    inner, _ = writer.block(test, test_names)
    (flag,) = [test_names[o] if isinstance(o, Symbol) else writer.literal(o) for o in test.outputs]
    inner.append(f"if not {flag}:")
    inner.append("    break")
    block, _ = writer.block(body, body_names)
    inner += block
    outs = [body_names[o] if isinstance(o, Symbol) else writer.literal(o) for o in body.outputs]
    if carry:
        inner.append(f"{', '.join(carry)} = {', '.join(outs)}")
    lines += _indented(inner)
    lines.append(f"{target} = {body.layout.pack_source(carry, writer.literal)}")
    return lines


def _while_batch(op, values, batched, attrs):
    """vmap of a while_loop: every carry mapped; the loop runs while any example's predicate holds, and
    an example whose predicate no longer holds keeps its carry (JAX's batching of while_loop)."""
    test, body, carry, test_k, body_k = _while_parts(values, attrs)
    _, _, b_c, b_tk, b_bk = _while_parts(batched, attrs)
    size = _batch_size(values, batched)
    n = len(carry)
    carry = [v if b else batch_broadcast(v, size) for v, b in zip(carry, b_c)]

    def preds(c):
        return _mapped(lambda *v: test(*v), list(c) + test_k, [True] * n + list(b_tk), size)[0]

    def step(c):
        keep = preds(c)
        new = _mapped(lambda *v: body(*v), list(c) + body_k, [True] * n + list(b_bk), size)
        return tuple(where(_per_example(keep, v), a, v) for a, v in zip(new, c))

    out = _while(lambda c: sum_(astype(preds(c), np.int64)) > 0, step, tuple(carry), "while_loop", body.fn)
    return body.layout.pack_batched(list(out)), True


WHILE = Op("while_loop", _while_forward, _while_vjp, _while_jvp, _shape_rule, True, fresh=True, dtype=_dtype_rule,
           bodies=("cond", "body"), emit=_while_emit, batch=_while_batch)


# ---------------------------------------------------------------- cond


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)` (JAX's `lax.cond`); both must return
    the same structure, shapes and dtypes. In a static graph or under `dg.compile` both are traced and
    the node runs one of them; differentiable in both modes (through the branch taken).

    >>> import dagrad as dg, numpy as np
    >>> dg.cond(True, lambda x: x * 2.0, lambda x: x - 1.0, np.array([3.0]))
    array([6.])
    >>> f = dg.compile(lambda x: dg.cond(x.sum() > 0, dg.sin, dg.cos, x))
    >>> f(np.array([0.5])), f(np.array([-0.5]))
    (array([0.47942554]), array([0.87758256]))
    """
    for fn in (true_fun, false_fun):
        if not callable(fn):
            raise user_error(TypeError, "cond", f"true_fun and false_fun must be functions, got {type(fn).__name__}")
    leaves, tree = tree_flatten(operands)
    if not _graph_mode(pred, *leaves):
        _truth(pred, "cond", "pred")
        _known_sizes(leaves, "cond")
        if _is_batched(pred):  # a predicate per example (vmap): both branches, chosen example by example
            true_out, false_out = true_fun(*operands), false_fun(*operands)
            _check_types("cond", false_fun, true_out, false_out, carry=False)
            return _each_example(pred, true_out, false_out)
        taken, other = (true_fun, false_fun) if bool(_decided(pred)) else (false_fun, true_fun)
        out = taken(*operands)
        # the other branch is traced (not run), so that both are checked as JAX checks them
        with Graph():
            _, _, other_out = _trace(lambda *p: other(*tree_unflatten(tree, p)),
                                     [None if v is None else _aval_of(v) for v in leaves], ["operand"] * len(leaves),
                                     "cond", [_weak(v) for v in leaves])
        _check_types("cond", other, out, other_out, carry=False)
        # a Python number from the branch taken is weakly typed only if the other branch's is too, as compiled
        out_leaves, out_def = tree_flatten(out)
        return tree_unflatten(out_def, [np.asarray(v)[()] if _weak(v) and not _weak(o) else v
                                        for v, o in zip(out_leaves, tree_flatten(other_out)[0])])
    pred = _operand(pred, "cond")
    _truth(pred, "cond", "pred")
    weak = [_weak(v) for v in leaves]
    leaves = [v if w else _operand(v, "cond") for v, w in zip(leaves, weak)]
    avals = [None if v is None else _aval_of(v) for v in leaves]
    traces = [_trace(lambda *p, fn=fn: fn(*tree_unflatten(tree, p)), avals, ["operand"] * len(leaves), "cond", weak)
              for fn in (true_fun, false_fun)]
    _check_types("cond", false_fun, traces[0][2], traces[1][2], carry=False)
    (true_leaves, out_def), (false_leaves, _) = (tree_flatten(out) for _, _, out in traces)
    # an output is weakly typed (a Python number) where both branches give a weakly typed value
    kinds = [_weak_kind(a) if _weak(a) and _weak(b) else None for a, b in zip(true_leaves, false_leaves)]
    true, false = (Body(graph, [p for p in params if p is not None],
                        _outputs(graph, out_leaves, "cond", fn, [k is not None for k in kinds]), fn)
                   for (graph, params, _), out_leaves, fn in zip(traces, (true_leaves, false_leaves),
                                                                 (true_fun, false_fun)))
    true.layout = false.layout = _Layout(true.avals)
    present = [v for v in leaves if v is not None]
    out = apply(COND, (pred, *present, *true.captures, *false.captures), {"true": true, "false": false})
    return tree_unflatten(out_def, [_as_weak(part, kind) for part, kind in zip(true.layout.unpack(out), kinds)])


def _cond_parts(inputs, attrs):
    true, false = attrs["true"], attrs["false"]
    n = len(true.params)
    k = 1 + n + len(true.captures)
    return true, false, inputs[0], list(inputs[1:1 + n]), list(inputs[1 + n:k]), list(inputs[k:])


def _cond_forward(*inputs, **attrs):
    true, false, pred, ops, true_k, false_k = _cond_parts(inputs, attrs)
    out = true.run(ops + true_k) if pred else false.run(ops + false_k)
    return true.layout.pack(out)


def _cond_vjp(g, out, *inputs, **attrs):
    true, false, pred, ops, true_k, false_k = _cond_parts(inputs, attrs)
    cts = [ct if d.kind in "fc" else None for ct, (_, d) in zip(true.layout.unpack(g), true.layout.avals)]
    cts = [ct for ct in cts if ct is not None]
    float_ops, float_t, float_f = _floats(ops), _floats(true_k), _floats(false_k)
    ct_at = [k for k, (_, d) in enumerate(true.layout.avals) if d.kind in "fc"]

    def branch(body, mine, others_float, first):
        def fn(*args):
            given = [None] * len(body.outputs)
            for k, ct in zip(ct_at, args[len(ops):]):
                given[k] = ct
            found = _vjp_of(lambda *v: body(*v), list(args[:len(ops)]) + mine, given)
            parts = [d if d is not None else _zeros_like_aval(v) for d, v, f in
                     zip(found, list(args[:len(ops)]) + mine, float_ops + _floats(mine)) if f]
            zeros = [_zeros_like_aval(v) for v, f in others_float if f]
            n_ops = sum(float_ops)
            return parts[:n_ops] + (parts[n_ops:] + zeros if first else zeros + parts[n_ops:])
        return fn

    found = cond(pred, branch(true, true_k, list(zip(false_k, float_f)), True),
                 branch(false, false_k, list(zip(true_k, float_t)), False), *ops, *cts)
    found = iter(found)
    return (None, *[next(found) if f else None for f in float_ops + float_t + float_f])


def _cond_jvp(tangents, out, *inputs, **attrs):
    true, false, pred, ops, true_k, false_k = _cond_parts(inputs, attrs)
    t_ops, t_true_k, t_false_k = _cond_parts(tangents, attrs)[3:]
    at = [k for k, t in enumerate(t_ops) if t is not None]

    def branch(body, consts, t_consts):
        def fn(*args):
            t_in = [None] * len(ops)
            for k, t in zip(at, args[len(ops):]):
                t_in[k] = t
            outs, touts = _jvp_of(lambda *v: body(*v), list(args[:len(ops)]) + consts, t_in + t_consts)
            return [t if t is not None else _zeros_like_aval(o) for t, o in zip(touts, outs)]
        return fn

    touts = cond(pred, branch(true, true_k, t_true_k), branch(false, false_k, t_false_k), *ops,
                 *[t_ops[k] for k in at])
    return true.layout.pack_traced(list(touts))


def _cond_emit(writer, node, args, target):
    true, false = node.attrs["true"], node.attrs["false"]
    n = len(true.params)
    lines = [f"if {args[0]}:"]
    k = 1 + n + len(true.captures)
    for body, consts in ((true, args[1 + n:k]), (false, args[k:])):
        names = dict(zip(body.params, args[1:1 + n]))
        names.update(zip(body.inputs[n:], consts))
        block, _ = writer.block(body, names)
        outs = [names[o] if isinstance(o, Symbol) else writer.literal(o) for o in body.outputs]
        lines += _indented(block + [f"{target} = {body.layout.pack_source(outs, writer.literal)}"])
        if body is true:
            lines.append("else:")
    return lines


def _cond_batch(op, values, batched, attrs):
    """vmap of a cond: a mapped predicate computes both branches and selects per example (JAX's rule);
    a shared one stays a cond, of the branches mapped."""
    true, false, pred, ops, true_k, false_k = _cond_parts(values, attrs)
    b_pred, b_ops, b_tk, b_fk = batched[0], *_cond_parts(batched, attrs)[3:]
    size = _batch_size(values, batched)

    def branch(body, consts, flags):
        return lambda *o: _mapped(lambda *v: body(*v), list(o) + consts, list(b_ops) + list(flags), size)

    if b_pred:
        picked = [where(_per_example(pred, t), t, f) for t, f in
                  zip(branch(true, true_k, b_tk)(*ops), branch(false, false_k, b_fk)(*ops))]
    else:
        picked = list(cond(pred, branch(true, true_k, b_tk), branch(false, false_k, b_fk), *ops))
    return true.layout.pack_batched(picked), True


COND = Op("cond", _cond_forward, _cond_vjp, _cond_jvp, _shape_rule, True, fresh=True, dtype=_dtype_rule,
          bodies=("true", "false"), emit=_cond_emit, batch=_cond_batch)
