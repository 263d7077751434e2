"""Running static graphs: `Session` and `gradients`.

`Session.run` runs generated code: per fetch set and feed signature, the nodes the fetches
need are copied with their sizes made concrete, optimised and compiled to a Python
function over NumPy (the machinery of `dg.compile`), which every later run with that
signature calls. A Session keeps at most CACHE_SIZE compiled functions and FETCH_SETS
fetch sets, dropping the least recently used; threads may share it.

A gradient through a node of unknown rank (from a placeholder of any shape) cannot be built
with the graph: the rules need ranks to undo broadcasts and reductions. `gradients` then
builds a deferred node per x, and `Session.run` builds the real gradient in its copy, once
the feeds' shapes are known (`_expanded`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np

from .._core.autodiff import reverse_sweep
from .._core.backends import as_dtype, compute_together, has_unknown_size, is_dask
from .._core.errors import user_error
from .._core.ir import Graph, Symbol, atomic, checked_value, get_default_graph, infer_shape, new_symbol, shape_fits
from .._core.ir import ancestors as _ancestors
from .._core.op import Op
from .._core.pytree import tree_flatten, tree_unflatten
from ..compile.cache import LRUCache
from ..compile.codegen import generate
from ..compile.passes import optimize
from ..compile.program import check_lazy, from_graph
from ..compile.trace import explain
from ..ops.elementwise import astype, full_like

CACHE_SIZE = 64  # compiled functions (fetch set and feed shapes) a Session keeps
FETCH_SETS = 64  # fetch sets whose analysis a Session keeps


def _not_expanded(*inputs, **attrs):
    raise RuntimeError("a deferred gradient is built by Session.run, which replaces it before anything runs")


# a deferred gradient: inputs (*ys, *seeds, *xs), attrs ys (how many) and x (which x it is the gradient for)
_GRADIENT = Op("gradients", _not_expanded, None, None, lambda *shapes, ys, x: shapes[2 * ys + x], False)

def gradients(ys, xs, grad_ys=None):
    """Symbolic gradients: nodes computing d(sum of ys)/d x for each x, built in the graph.

    The rules are the same vjp rules eager mode uses, so `gradients` of gradients gives
    second derivatives. An x that the ys do not depend on gets zeros. If it fails, the graph
    is left as it was (no node of the attempt stays).

    >>> import dagrad as dg, numpy as np
    >>> with dg.Graph() as g:
    ...     x = dg.placeholder((3,), name="x")
    ...     (dx,) = dg.gradients((x ** 2).sum(), [x])
    >>> dg.Session(g).run(dx, {x: np.array([1.0, 2.0, 3.0])})
    array([2., 4., 6.])
    """
    single_x = isinstance(xs, Symbol)
    ys, xs = _listed(ys), _listed(xs)
    for t in ys + xs:
        if not isinstance(t, Symbol):
            raise user_error(TypeError, "gradients", f"expects nodes of a static graph, got {type(t).__name__}")
    if any(t.graph is not ys[0].graph for t in ys + xs):
        raise user_error(ValueError, "gradients", "the ys and xs belong to different graphs")
    if grad_ys is not None:
        grad_ys = [grad_ys] if not isinstance(grad_ys, (list, tuple)) else list(grad_ys)
        if len(grad_ys) != len(ys):
            raise user_error(ValueError, "gradients", f"{len(ys)} ys but {len(grad_ys)} grad_ys")
    within = _between(xs, ys)
    for x in xs:  # as dg.grad: a zero for an integer x the ys depend on would be a silent wrong gradient
        if np.dtype(x.dtype).kind not in "fc" and any(a is x for n in within for a in n.inputs or ()):
            raise user_error(TypeError, "gradients", f"can only differentiate with respect to floating-point or "
                             f"complex nodes, got {x._label()} of dtype {x.dtype}, which the ys depend on (make it "
                             "a float placeholder, or leave it out: an x the ys do not depend on gets zeros)", x)
    with atomic():  # all or nothing: a failure removes every node built so far
        if grad_ys is None:
            seeds = [full_like(y, 1) for y in ys]
        else:  # plain values become constants of the graph, so every gradient is a node
            seeds = [s if isinstance(s, Symbol) else _constant_like(y, s) for y, s in zip(ys, grad_ys)]
        if any(n._shape is None or n.op is _GRADIENT for n in within):
            results = [_deferred(ys, seeds, xs, i) for i in range(len(xs))]
            return results[0] if single_x else results
        roots = [(y, s) for y, s in zip(ys, seeds) if y._requires_grad]
        found = {}
        if roots:
            found = reverse_sweep([y for y, _ in roots], [s for _, s in roots], 0, graph_mode=True, targets=set(xs),
                                  within=within)
        results = [found.get(x) if found.get(x) is not None else full_like(x, 0) for x in xs]
    return results[0] if single_x else results


def _deferred(ys, seeds, xs, i):
    """The deferred gradient for xs[i]; its dtype is the one the rules give when no other dtype enters."""
    x = xs[i]
    dtype = x._dtype
    if dtype.kind in "fc":
        dtype = np.result_type(dtype, *[y._dtype for y in ys if y._dtype.kind in "fc"])
        if x._dtype.kind == "f":  # a real input's gradient is real, whatever complex values it went through
            dtype = np.finfo(dtype).dtype
    return new_symbol(x.graph, "op", x._shape, dtype, _GRADIENT, (*ys, *seeds, *xs), {"ys": len(ys), "x": i},
                      requires_grad=dtype.kind in "fc")


def _listed(nodes):
    if isinstance(nodes, Symbol):
        return [nodes]
    try:
        return list(nodes)
    except TypeError:  # not iterable: reported as not a node
        return [nodes]


def _between(xs, ys):
    """The nodes on some path from an x to a y (the xs included): only their gradients are worth building."""
    depends = dict.fromkeys(xs, True)
    for node in _ancestors(ys):
        if node not in depends and node.inputs and any(isinstance(a, Symbol) and a in depends for a in node.inputs):
            depends[node] = True
    return depends


def _constant_like(y, value):
    data = checked_value(value, y._shape, y._dtype, "gradients", "grad_ys")
    node = new_symbol(y.graph, "constant", data.shape, data.dtype)
    node._data = data
    return node


class _FetchSet:
    """What one fetch set needs: its placeholders, its updates and the Variables it resets."""

    def __init__(self, fetches):
        order = _ancestors(fetches)
        self.placeholders = [n for n in order if n.kind == "placeholder"]
        self.updates = {}  # variable -> (assign node, value)
        for node in order:
            if node.kind == "assign":
                variable, value = node.inputs
                if variable in self.updates:
                    raise user_error(ValueError, "Session.run", f"Variable {variable.name!r} is assigned twice in "
                                     "one run")
                self.updates[variable] = (node, value)
        # global_variables_initializer: its Variables are reset when the run's updates are applied
        self.resets = list(dict.fromkeys(v for n in order if n.kind == "initializer" for v in n.inputs))
        for variable in self.resets:
            if variable in self.updates:
                raise user_error(ValueError, "Session.run", f"Variable {variable.name!r} is both assigned and reset "
                                 "(by global_variables_initializer) in one run")
        self.values = [f for f in fetches if f.kind not in ("assign", "group", "initializer")]
        self.deferred = any(n.op is _GRADIENT for n in order)

    def compile(self, feeds, lazy):
        """(generated function, its placeholders, its variables) for these feeds' shapes; `lazy`: whether
        some feeds are Dask arrays (their code writes into no buffer, and refuses ops that would load them)."""
        shapes = {p: feeds[p].shape for p in self.placeholders}
        values, updates = self.values, [(variable, value) for variable, (_, value) in self.updates.items()]
        originals = {}
        if self.deferred:
            values, updates, shapes, originals = _expanded(values, updates, shapes)
        program, placeholders, variables = from_graph(values, updates, shapes)
        placeholders = [originals.get(p, p) for p in placeholders]
        program.lazy_inputs = frozenset(c for c, p in zip(program.inputs, placeholders) if is_dask(feeds[p]))
        optimize(program)
        if lazy:
            check_lazy(program, "Session.run")
        return (generate(program, "run", reuse_buffers=not lazy), placeholders,
                [originals.get(v, v) for v in variables])


def _expanded(values, updates, shapes):
    """A copy, in a graph of its own, of the nodes that `values` and `updates` [(variable, value)] need,
    with the placeholders' fed `shapes` and every deferred gradient built by `gradients` on the copies.
    Returns values, updates and shapes in terms of the copies, and {copy: original} for placeholders and
    variables (the compiled function's arguments)."""
    graph = Graph()
    copies, originals, built = {}, {}, {}
    for node in _ancestors(list(values) + [v for _, v in updates if isinstance(v, Symbol)]):
        if node.kind in ("placeholder", "variable", "constant"):
            copy = new_symbol(graph, node.kind, shapes.get(node, node._shape), node._dtype, name=node.name,
                              requires_grad=node._requires_grad)
            copy._data = node._data
            originals[copy] = node
        elif node.op is _GRADIENT:
            n, i = node.attrs["ys"], node.attrs["x"]
            if node.inputs not in built:  # one sweep serves every x of one `gradients` call
                args = [copies[a] for a in node.inputs]
                built[node.inputs] = gradients(args[:n], args[2 * n:], args[n:2 * n])
            copy = built[node.inputs][i]
            if copy._dtype != node._dtype:  # the nodes built on it expect the dtype it was given
                copy = astype(copy, node._dtype)
            copies[node] = copy
            continue
        elif node.kind == "op":
            args = [copies[a] if isinstance(a, Symbol) else a for a in node.inputs]
            shape = infer_shape(node.op, [a._shape if isinstance(a, Symbol) else np.shape(a) for a in args],
                                node.attrs, during="Session.run", built_at=node.where)
            copy = new_symbol(graph, "op", shape, node._dtype, node.op, tuple(args), node.attrs, node._requires_grad)
        else:  # updates and groups: the caller's
            continue
        copy.where, copy.grad_of = node.where, node.grad_of
        copies[node] = copy
    return ([copies[v] for v in values], [(var, copies[v] if isinstance(v, Symbol) else v) for var, v in updates],
            {copies[p]: shape for p, shape in shapes.items() if p in copies}, originals)


def _fetched(node, value):
    """What run returns for a fetch: None for a group, else a value the caller may modify freely."""
    if node.kind in ("group", "initializer"):
        return None
    if node.kind in ("variable", "constant", "assign"):
        return np.array(value, copy=True)
    return value


def _lazy_feed(value, node, what):
    """A Dask array fed for placeholder `node`, checked as `checked_value` checks a value but without computing
    it, and cast lazily: Session.run's results over it are Dask arrays."""
    if not np.can_cast(value.dtype, node._dtype, "same_kind"):
        raise user_error(TypeError, "Session.run", f"{what}: a value of dtype {value.dtype} does not fit dtype "
                         f"{node._dtype}", value)
    if has_unknown_size(value.shape):  # the code is generated for the feeds' sizes
        raise user_error(ValueError, "Session.run", f"{what}: needs the shape of a Dask array whose chunk sizes are "
                         f"unknown (shape {value.shape}); call .compute_chunk_sizes() on it first")
    if not shape_fits(value.shape, node._shape):
        raise user_error(ValueError, "Session.run", f"{what}: a value of shape {value.shape} does not fit shape "
                         f"{tuple(node._shape)}", value)
    return as_dtype(value, node._dtype)


class Session:
    """Runs a static graph: `run(fetches, feed_dict)` evaluates what the fetches need.

    >>> import dagrad as dg, numpy as np
    >>> with dg.Graph() as g:
    ...     x = dg.placeholder((None,), name="x")
    ...     w = dg.Variable(2.0, name="w")
    ...     y = w * x
    ...     step = w.assign(w + 1.0)
    >>> sess = dg.Session(g)
    >>> sess.run([y, step], {x: [1.0, 2.0]})
    [array([2., 4.]), array(3.)]
    >>> w.value
    array(3.)

    As in TF1, `with dg.Session() as sess:` makes it the default session inside the block (what
    `t.eval()` and `op.run()` use) and closes it at the end; a closed session's compiled code is
    released, and running it is an error. `sess.as_default()` makes it the default without closing it.

    A Dask array fed for a placeholder stays lazy: the fetches computed from it are Dask arrays
    (compute several with one `dask.compute`), except in a run that assigns Variables, which
    computes its fetches and updates together (a Variable holds NumPy values); docs/backends.md.
    """

    def __init__(self, graph=None):
        if graph is not None and not isinstance(graph, Graph):
            raise user_error(TypeError, "Session", f"expects a dg.Graph, got {type(graph).__name__}")
        self.graph = graph if graph is not None else get_default_graph()
        self._fetch_sets = LRUCache(FETCH_SETS)  # fetches -> _FetchSet
        self._code = LRUCache(CACHE_SIZE)  # (fetches, feed shapes) -> what _FetchSet.compile returns
        self._closed = False

    def __enter__(self):
        _defaults.stack.append(self)
        return self

    def __exit__(self, *exc):
        _pop_default(self)
        self.close()

    def as_default(self):
        """A context manager making this session the default (for `t.eval()`, `op.run()`) inside its block,
        as TF1's; unlike `with sess:`, leaving the block does not close the session."""
        return _AsDefault(self)

    def close(self):
        """Releases the compiled code; the session can no longer run (closing again does nothing)."""
        self._closed = True
        self._fetch_sets.clear()
        self._code.clear()

    def run(self, fetches, feed_dict=None):
        if self._closed:  # TF1's words
            raise user_error(RuntimeError, "Session.run", "Attempted to use a closed Session.")
        leaves, treedef = tree_flatten(fetches)
        for f in leaves:
            if not isinstance(f, Symbol):
                raise user_error(TypeError, "Session.run", f"a fetch of type {type(f).__name__} is not a node of a "
                                 "static graph")
            if f.graph is not self.graph:
                raise user_error(ValueError, "Session.run", f"fetch {f!r} belongs to another graph than this "
                                 "session's")
        feeds, lazy = self._feeds(feed_dict)
        key = tuple(leaves)
        fetch_set = self._fetch_sets.get(key)
        if fetch_set is None:
            fetch_set = self._fetch_sets.put(key, _FetchSet(leaves))
        missing = [p for p in fetch_set.placeholders if p not in feeds]
        if missing:
            names = ", ".join(repr(p.name or p) for p in missing)
            raise user_error(ValueError, "Session.run", f"the fetches need placeholder(s) {names}, which feed_dict "
                             "does not feed")
        code_key = (key, tuple(feeds[p].shape for p in fetch_set.placeholders))
        if lazy:  # which feeds are Dask arrays: their code differs (no buffer reuse)
            code_key += tuple(is_dask(feeds[p]) for p in fetch_set.placeholders)
        entry = self._code.get(code_key)
        if entry is None:
            entry = self._code.put(code_key, fetch_set.compile(feeds, lazy))
        generated, placeholders, variables = entry
        try:
            results = generated.function(*[feeds[p] for p in placeholders], *[v._data for v in variables])
        except Exception as err:
            raise explain(err, generated, "Session.run") from err
        if lazy and fetch_set.updates:
            # a Variable holds values (as in TF): a run that assigns them computes, the fetches with the
            # updates in one dask.compute, so each chunk of the feeds is read once per step
            results = compute_together(results)
        computed = dict(zip(fetch_set.values, results))
        computed.update(self._commit(fetch_set, results[len(fetch_set.values):]))
        return tree_unflatten(treedef, [_fetched(f, computed.get(f)) for f in leaves])

    def _feeds(self, feed_dict):
        """{placeholder: its checked value}, and whether any value is a Dask array (kept lazy)."""
        if feed_dict is None:
            return {}, False
        if not isinstance(feed_dict, Mapping):
            raise user_error(TypeError, "Session.run", f"feed_dict must be a dict {{placeholder or its name: value}}, "
                             f"got {type(feed_dict).__name__}")
        feeds = {}
        lazy = False
        for key, value in feed_dict.items():
            if isinstance(key, str):
                try:
                    node = self.graph[key]
                except KeyError:
                    raise user_error(ValueError, "Session.run", f"feed_dict: this session's graph has no node named "
                                     f"{key!r}") from None
            elif isinstance(key, Symbol):
                node = key
            else:
                raise user_error(TypeError, "Session.run", f"feed_dict: a key of type {type(key).__name__} is neither "
                                 "a placeholder nor a placeholder's name")
            if node.graph is not self.graph:
                raise user_error(ValueError, "Session.run", f"feed_dict: {node!r} is not a node of this session's "
                                 "graph")
            if node.kind != "placeholder":
                raise user_error(TypeError, "Session.run", f"feed_dict: {node!r} is not a placeholder; only "
                                 "placeholders are fed")
            if node in feeds:
                raise user_error(ValueError, "Session.run", f"feed_dict: placeholder {node.name!r} is fed twice")
            what = f"feed_dict: the value for placeholder {node.name!r}"
            if type(value) is not np.ndarray and is_dask(value):
                feeds[node] = _lazy_feed(value, node, what)
                lazy = True
            else:
                feeds[node] = checked_value(value, node._shape, node._dtype, "Session.run", what)
        return feeds, lazy

    def _commit(self, fetch_set, new_values):
        """Checks every update of the run, then applies them all (or none) and the resets. Returns {assign node:
        value}."""
        updates = fetch_set.updates
        checked = [checked_value(value, var._shape, var._dtype, "Session.run", f"update of Variable {var.name!r}")
                   for var, value in zip(updates, new_values)]
        for variable, value in zip(updates, checked):
            variable._data = value
        for variable in fetch_set.resets:
            variable._data = np.array(variable.initial_value, copy=True)
        return {node: value for (node, _), value in zip(updates.values(), checked)}


class _Defaults(threading.local):
    def __init__(self):
        self.stack = []  # each thread's default sessions, innermost last (TF1's are per thread too)


_defaults = _Defaults()


def _pop_default(session):
    stack = _defaults.stack
    for i in range(len(stack) - 1, -1, -1):  # the innermost entry of this session (blocks may interleave)
        if stack[i] is session:
            del stack[i]
            return


class _AsDefault:
    def __init__(self, session):
        self.session = session

    def __enter__(self):
        _defaults.stack.append(self.session)
        return self.session

    def __exit__(self, *exc):
        _pop_default(self.session)


def get_default_session():
    """The session `t.eval()` and `op.run()` use: the innermost `with dg.Session() as sess:` (or
    `sess.as_default()`, or the latest open `InteractiveSession`) of this thread, else None.

    >>> import dagrad as dg
    >>> with dg.Graph() as g, dg.Session(g) as sess:
    ...     dg.get_default_session() is sess
    True
    """
    stack = _defaults.stack
    return stack[-1] if stack else None


class InteractiveSession(Session):
    """A Session that makes itself the default session when it is made, until it is closed, as TF1's
    (for a shell or a notebook: `t.eval()` needs no `with` block).

    >>> import dagrad as dg
    >>> with dg.Graph():
    ...     sess = dg.InteractiveSession()
    ...     two = dg.constant(1.0) + 1.0
    ...     value = two.eval()
    ...     sess.close()
    >>> value
    np.float64(2.0)
    """

    def __init__(self, graph=None):
        super().__init__(graph)
        _defaults.stack.append(self)

    def close(self):
        _pop_default(self)
        super().close()


def _session_for(node, session, where):
    if not isinstance(node, Symbol):
        raise user_error(TypeError, where, f"needs a node of a static graph, got {type(node).__name__}")
    if session is None:
        session = get_default_session()
        if session is None:  # TF1's words
            raise user_error(ValueError, where, "Cannot evaluate tensor using `eval()`: No default session is "
                             "registered. Use `with dg.Session() as sess:` (or `with sess.as_default():`) or pass "
                             "an explicit session: `eval(session=sess)`", node)
    elif not isinstance(session, Session):
        raise user_error(TypeError, where, f"session must be a dg.Session, got {type(session).__name__}")
    if node.graph is not session.graph:
        raise user_error(ValueError, where, f"{node!r} belongs to another graph than the session's; pass "
                         "session= a session of its graph")
    return session


def evaluate(node, feed_dict=None, session=None):
    """`node.eval(feed_dict=None, session=None)`, TF1's `Tensor.eval`: `session.run(node, feed_dict)`, with
    the default session (`get_default_session()`) unless one is given.

    >>> import dagrad as dg, numpy as np
    >>> with dg.Graph() as g:
    ...     x = dg.placeholder("float64", [None])
    ...     y = x * 2.0
    >>> with dg.Session(g):
    ...     y.eval({x: np.array([1.0, 2.0])})
    array([2., 4.])
    """
    return _session_for(node, session, "eval").run(node, feed_dict)


def run_node(node, feed_dict=None, session=None):
    """`op.run(feed_dict=None, session=None)`, TF1's `Operation.run`: runs the node (an update, a training
    step, the initializer) with the default session unless one is given, and returns None."""
    _session_for(node, session, "run").run(node, feed_dict)


__all__ = ["Session", "InteractiveSession", "gradients", "get_default_session", "evaluate", "run_node"]
