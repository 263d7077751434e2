"""The optimiser's view of a computation: a Program of private graph nodes.

A Program owns its nodes (Symbols of a private Graph), so passes may rewrite them in
place without touching the user's graph. Every size is known: `dg.compile` traces per
input signature and `Session` copies its graph per feed signature, so the passes and the
memory plan can compare shapes exactly.
"""

from __future__ import annotations

import itertools
from heapq import heappop, heappush
from operator import attrgetter
from types import SimpleNamespace

import numpy as np

from .._core.errors import user_error
from .._core.ir import Graph, Symbol, ancestors, infer_shape, new_symbol, validating, walk
from .._core.shapes import runtime_shape


class Program:
    """Nodes in a topological order, the inputs (function arguments) and the outputs."""

    def __init__(self, graph, inputs, outputs):
        self.graph = graph  # the private Graph that owns the nodes
        self.inputs = list(inputs)  # placeholders and variables, in argument order
        self.outputs = list(outputs)  # Symbols or plain values, in result order
        # the inputs that will be Dask arrays: their code writes into no buffer, and the values computed from
        # them stay Dask arrays through the passes (as in eager mode: full_like of a Dask array is one)
        self.lazy_inputs = frozenset()

    @property
    def nodes(self):
        return self.graph.nodes

    def symbol_outputs(self):
        return [o for o in self.outputs if isinstance(o, Symbol)]

    def schedule(self, exempt=frozenset()):
        """Keeps only the inputs, the nodes the outputs need and the nodes that check values (`Op.validates`:
        an index out of range raises, read or not, as it does eagerly; but those in `exempt`) with what they
        need, in creation order (a node that a rewrite made takes the sequence number of the node it replaced).
        Returns how many were dropped."""
        nodes = self.graph.nodes
        needed = dict.fromkeys(self.inputs)
        needed.update(walk(self.symbol_outputs() + [n for n in validating(nodes) if n not in exempt]))
        # a stable sort: among nodes of one sequence number, the one made first comes first
        order = sorted((n for n in nodes if n in needed), key=attrgetter("_seq"))
        if len(order) != len(needed) or not _topological(order):
            order = _kahn(needed)
        self.graph.nodes = order
        return len(nodes) - len(order)

    def lazy_nodes(self):
        """The nodes computed from a lazy input (or that are one): their values will be Dask arrays."""
        lazy = set(self.lazy_inputs)
        if lazy:
            for node in self.graph.nodes:
                if node.op is not None and any(isinstance(a, Symbol) and a in lazy for a in node.inputs):
                    lazy.add(node)
        return lazy

    def use_counts(self):
        """How many times each node is read: by other nodes' inputs and by the outputs."""
        counts = dict.fromkeys(self.graph.nodes, 0)
        for node in self.graph.nodes:
            for a in node.inputs or ():
                if isinstance(a, Symbol):
                    counts[a] += 1
        for o in self.symbol_outputs():
            counts[o] += 1
        return counts


def check_lazy(program, where):
    """Refuses a node of `program` that computes from its lazy inputs (Dask arrays) and would load a Dask
    array whole, silently: NumPy-only code (`Op.numpy_only`), or control flow (`Op.bodies`: its generated
    loop writes into NumPy buffers, its branch needs a computed value). The error names the op, the line
    that built it and, as every user error, the line of the call (`where`: dg.compile, Session.run)."""
    for node in program.lazy_nodes():
        op = node.op
        if op is None:
            continue
        if op.numpy_only or op.bodies:
            what = ("runs NumPy-only code (LAPACK, SciPy, or a write into a NumPy array)" if op.numpy_only else
                    "is control flow, whose generated code writes into NumPy buffers or branches on a value,")
            raise user_error(TypeError, op.name, f"{what} that would load a whole Dask array: {where} cannot run it "
                             f"lazily (the op was built at {node.where}); compute that operand first (.compute()) "
                             "if it fits in memory")


def _topological(order):
    seen = set()
    for node in order:
        for a in node.inputs or ():
            if isinstance(a, Symbol) and a not in seen:
                return False
        seen.add(node)
    return True


def _kahn(needed):
    """A topological order of `needed` that follows sequence numbers where it can (ready nodes
    leave a heap by sequence number)."""
    waiting = {}
    consumers = {}
    heap = []
    tiebreak = itertools.count()  # nodes do not compare
    for node in needed:
        parents = dict.fromkeys(a for a in (node.inputs or ()) if isinstance(a, Symbol))
        waiting[node] = len(parents)
        for parent in parents:
            consumers.setdefault(parent, []).append(node)
        if not parents:
            heappush(heap, (node._seq, next(tiebreak), node))
    order = []
    while heap:
        node = heappop(heap)[2]
        order.append(node)
        for consumer in consumers.get(node, ()):
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                heappush(heap, (consumer._seq, next(tiebreak), consumer))
    return order


def from_graph(fetches, updates, feed_shapes):
    """A Program computing `fetches` and `updates` [(variable, value node)] of a user's graph,
    with each placeholder's unknown sizes replaced by those of `feed_shapes` {placeholder: shape}.

    Returns (program, placeholders, variables): the program's inputs are the copies of
    those placeholders, then of those variables, in that order.
    """
    targets = list(fetches) + [value for _, value in updates if isinstance(value, Symbol)]
    graph = Graph()
    copies = {}
    placeholders, variables = [], []
    for node in ancestors(targets):
        if node.kind == "placeholder":
            copy = new_symbol(graph, "placeholder", feed_shapes[node], node._dtype, name=node.name)
            placeholders.append(node)
        elif node.kind == "variable":
            copy = new_symbol(graph, "variable", node._shape, node._dtype, name=node.name)
            variables.append(node)
        elif node.kind == "constant":
            copy = new_symbol(graph, "constant", node._shape, node._dtype, name=node.name)
            copy._data = node._data
        elif node.kind == "op":
            copy = _rebuild(graph, node, [copies[a] if isinstance(a, Symbol) else a for a in node.inputs])
        else:  # an update node (assign, group): the caller turns these into outputs
            continue
        copy.where, copy.grad_of = node.where, node.grad_of
        copy._seq = node._seq
        copies[node] = copy
    inputs = [copies[p] for p in placeholders] + [copies[v] for v in variables]
    outputs = [copies[f] for f in fetches] + [copies[v] if isinstance(v, Symbol) else v for _, v in updates]
    return Program(graph, inputs, outputs), placeholders, variables


def _rebuild(graph, node, args):
    """A copy of op node `node` over `args`, with its shape worked out again from theirs (its dtype
    does not depend on sizes, so it is kept)."""
    attrs = node.attrs
    # an op that took unknown sizes from an extra "shape source" input (see ops/shape.py): once the
    # sizes are known the target shape is written into the attrs and that input is dropped
    if node.op.shape_source and None in attrs["shape"] and isinstance(args[-1], Symbol):
        attrs = {**attrs, "shape": runtime_shape(attrs["shape"], [SimpleNamespace(shape=args[-1]._shape)])}
        args = args[:-1]
    shapes = [a._shape if isinstance(a, Symbol) else np.shape(a) for a in args]
    # sizes that were unknown when the node was built may not fit
    shape = infer_shape(node.op, shapes, attrs, during="Session.run", built_at=node.where)
    return new_symbol(graph, "op", shape, node._dtype, node.op, tuple(args), attrs, node._requires_grad)
