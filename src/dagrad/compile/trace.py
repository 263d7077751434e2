"""`dg.compile`: trace a function per input signature, optimise, generate code, run it."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .._core.autodiff import complex_seed_error, reverse_sweep
from .._core.backends import as_dtype, compute_together, has_unknown_size, is_dask, unknown_size_error
from .._core.errors import caller_line, user_error
from .._core.ir import Graph, Symbol, WeakScalar, new_symbol
from .._core.pytree import tree_flatten, tree_unflatten
from .._core.tensor import Tensor, _grad_mode, _leaf, note_grad_change, trace_grads
from ..ops.elementwise import full_like
from .cache import LRUCache
from .codegen import generate, identifier
from .export import export_module
from .interpret import eval_graph, node_error, python_power
from .passes import optimize
from .program import Program, check_lazy
from .signature import leaf_names, leaf_paths

CACHE_SIZE = 64  # signatures kept per compiled function; the least recently used is dropped beyond this
ARRAY_KINDS = "biufc"  # dtype kinds an array argument may have: bool, integers, floats, complex
NUMBERS = {float: np.dtype(np.float64), complex: np.dtype(np.complex128)}  # Python numbers traced (weakly typed)


def compile(f=None, *, optimize=True, static_argnums=(), static_argnames=()):  # noqa: A001  (as jax.jit)
    """`f` (arrays -> arrays, or a transform of such a function) compiled to NumPy code.

    The first call with a new input signature (pytree structure, shapes and dtypes of the
    array arguments, which arguments are Python floats, values of the other Python scalars)
    traces `f` into a graph, optimises it and generates a Python function over NumPy; later
    calls with that signature run that function. A Python float is traced as a 0-d value,
    weakly typed as NumPy types it (a new value does not trace again; gradients reach it);
    Python ints and bools are constants of the code, and so is every leaf of the arguments named
    by `static_argnums` (positions) or `static_argnames` (names), as in `jax.jit`: a float there
    is baked in (a new value traces again), for a hyperparameter that code checks in Python
    (`F.dropout(x, p)`). Use as `dg.compile(f)` or as a decorator, `@dg.compile`. A Dask array
    argument gets a program of its own, which keeps it lazy (no buffer reuse; docs/backends.md).

    >>> import dagrad as dg, numpy as np
    >>> @dg.compile
    ... def f(x):
    ...     return dg.sum(dg.tanh(x) ** 2)
    >>> df = dg.compile(dg.grad(f))
    >>> df(np.array([0.0, 1.0]))
    array([0.        , 0.63970001])
    >>> print(df.source(np.array([0.0, 1.0])))  # doctest: +ELLIPSIS
    def grad_f(x):
        t1 = tanh(x)...
    """
    if f is None:
        return functools.partial(compile, optimize=optimize, static_argnums=static_argnums,
                                 static_argnames=static_argnames)
    if not callable(f):
        raise user_error(TypeError, "dg.compile", f"expects a function, got {type(f).__name__}")
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    if not all(type(n) is int for n in nums) or not all(type(n) is str for n in names):
        raise user_error(TypeError, "dg.compile", f"static_argnums must be ints and static_argnames strings, got "
                         f"{static_argnums!r} and {static_argnames!r}")
    return Compiled(f, optimize, nums, names)


class Compiled:
    """A compiled function: call it like `f`; `graph`, `source`, `report` and `export` show
    what a given input signature compiles to."""

    def __init__(self, f, optimize=True, static_argnums=(), static_argnames=()):
        self.f = f
        self.optimize = optimize
        self.static_argnums, self.static_argnames = static_argnums, frozenset(static_argnames)
        try:  # the names of f's positional parameters, for static_argnames
            parameters = inspect.signature(f).parameters.values()
            self._positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            self._positional = []
        self._cache = LRUCache(CACHE_SIZE)  # signature -> _Entry, shared by threads
        functools.update_wrapper(self, f)
        self.__name__ = _identifier(getattr(f, "__name__", "f"))

    def __call__(self, *args, **kwargs):
        key, leaves, static = self._signature(args, kwargs)
        entry = self._cache.get(key)
        if entry is None or entry.wrap:
            for leaf in leaves:
                if isinstance(leaf, Tensor) and (leaf._level or leaf._symbolic or
                                                 (leaf._requires_grad and _grad_mode.enabled)):
                    # a value another transform or graph is tracing, or one whose gradient is wanted:
                    # run f itself, so that the operations are recorded (compiling does not record)
                    return self.f(*args, **kwargs)
        if entry is None:
            entry = self._entry(key, leaves, static, args, kwargs)
        if entry.wrap:
            unwrap = Tensor._raw if entry.lazy else Tensor.numpy  # numpy() would compute a Dask value
            arrays = [unwrap(leaf) if isinstance(leaf, Tensor) else leaf for leaf in (leaves[k] for k in entry.arrays)]
        else:
            arrays = [leaves[k] for k in entry.arrays]
        if entry.reads:  # what the traced function reads besides its arguments: parameters, optimiser state
            # what the trace built in (an optimiser's options) is read first: a bad value raises before anything ran
            changed = any(read() != value for read, value in entry.guards)
            extra = [read() for read in entry.reads]
            if changed or any(np.shape(v) != s or v.dtype != d for v, (s, d) in zip(extra, entry.read_types)):
                # a parameter or state changed shape or dtype since the trace (module.to(float32)), or an option
                # changed: trace again
                self._cache.discard(key)
                entry = self._cache.put(key, self._trace(leaves, entry.in_def, static))
                extra = [read() for read in entry.reads]
            arrays = arrays + extra
        try:
            if not self.optimize:  # the reference: each op's own forward, node by node
                results = eval_graph(entry.program, arrays, "dg.compile(..., optimize=False)")
            else:
                try:
                    results = entry.generated.function(*arrays)
                except Exception as err:
                    raise explain(err, entry.generated, "compiled code") from err
        except TypeError as err:
            if _raised_by(err.__cause__, python_power):
                # Python's ** on traced numbers gave another type than traced (a negative float to a fractional
                # power is complex): this call runs f itself, which computes what eager code computes
                return self.f(*args, **kwargs)
            raise
        if entry.writes:  # what it changed: parameters, their gradients, optimiser state (after every read)
            if entry.computes:
                # parameters and optimiser state hold values (NumPy): over Dask data, the call computes what it
                # writes together with its results, in one dask.compute (each chunk read once per step)
                results = compute_together(results)
            n = len(results) - len(entry.writes)
            taken = {id(a) for a in arrays}  # a value written back is copied if it is an input or seen twice
            for write, value in zip(entry.writes, results[n:]):
                if id(value) in taken:
                    value = value.copy() if is_dask(value) else np.array(value)  # Dask's copy: lazy, shallow
                write(value)
                taken.add(id(value))
            results = results[:n]
        for tensor in entry.cleared:
            tensor._grad = None
        if entry.wrap:
            results = [_leaf(r if entry.lazy and is_dask(r) else np.asarray(r), False) for r in results]
        if entry.out_def is None:
            return results[0]
        return tree_unflatten(entry.out_def, results)

    # -- looking at what a signature compiles to
    def graph(self, *args, **kwargs):
        """The optimised graph for these arguments' signature (print it for a listing)."""
        return self._entry_for(args, kwargs).program.graph

    def source(self, *args, **kwargs):
        """The generated Python source for these arguments' signature."""
        return self._entry_for(args, kwargs).generated.source

    def report(self, *args, **kwargs):
        """What each optimisation pass did for these arguments' signature."""
        return self._entry_for(args, kwargs).report

    def export(self, path, *args, **kwargs):
        """Writes a standalone module (NumPy only) computing this function for these arguments'
        signature; see `dagrad.compile.export`."""
        entry = self._entry_for(args, kwargs)
        if entry.reads:
            raise user_error(ValueError, "export", "the function reads parameters or optimiser state it does not take "
                             "as arguments (a training step): only functions of their arguments can be exported")
        return export_module(path, entry, self.f)

    def _entry_for(self, args, kwargs):
        key, leaves, static = self._signature(args, kwargs)
        return self._cache.get(key) or self._entry(key, leaves, static, args, kwargs)

    def _signature(self, args, kwargs):
        """(key, leaves, static) of a call: its signature (see `_key`), its leaves in the order of tree_flatten,
        and the positions of the leaves under static arguments (constants of the code, keyed by value)."""
        leaves = []
        if not (self.static_argnums or self.static_argnames):
            return _key((args, kwargs), leaves), leaves, frozenset()
        nums = {n % len(args) for n in self.static_argnums if -len(args) <= n < len(args)}
        names = [self._positional[n] if n < len(self._positional) else None for n in range(len(args))]
        static, parts = set(), []
        for label, value, constant in [*((n, a, n in nums or names[n] in self.static_argnames)
                                         for n, a in enumerate(args)),
                                       *((k, v, k in self.static_argnames) for k, v in kwargs.items())]:
            start = len(leaves)
            parts.append((label, _key(value, leaves, constant)))
            if constant:
                static.update(range(start, len(leaves)))
        return tuple(parts), leaves, frozenset(static)

    def _entry(self, key, leaves, static, args, kwargs):
        """Traces a new signature (outside the cache's lock: another thread may trace the same one;
        both then use the entry stored first)."""
        for leaf in leaves:
            if isinstance(leaf, Tensor) and (leaf._level or leaf._symbolic):
                raise user_error(TypeError, "dg.compile", "cannot trace values that a transform or a static graph "
                                 "is tracing")
        _, treedef = tree_flatten((args, kwargs))
        _check_arrays(self.f, treedef, leaves)
        return self._cache.put(key, self._trace(leaves, treedef, static))

    def _trace(self, leaves, treedef, static=frozenset()):
        graph = Graph()
        graph.tracing = self.__name__
        graph.traced_for = caller_line()
        names = leaf_names(self.f, treedef, len(leaves))
        arrays = [k for k, leaf in enumerate(leaves) if _is_array(leaf) and k not in static]
        traced = list(leaves)  # the array leaves replaced by placeholders
        lazy = []  # the placeholders of Dask arrays
        graph.backward_hook = functools.partial(_traced_backward, graph)
        outer, trace_grads.saved = trace_grads.saved, {}
        try:
            with graph:
                for k in arrays:
                    if type(leaves[k]) in NUMBERS:  # weakly typed, as NumPy 2 types the number itself
                        traced[k] = new_symbol(graph, "placeholder", (), NUMBERS[type(leaves[k])],
                                               requires_grad=True, name=names[k], cls=WeakScalar)
                        continue
                    value = leaves[k]._raw() if isinstance(leaves[k], Tensor) else leaves[k]
                    value = value if is_dask(value) else np.asarray(value)  # a Dask array's facts, not computed
                    traced[k] = new_symbol(graph, "placeholder", value.shape, value.dtype,
                                           requires_grad=value.dtype.kind in "fc", name=names[k])
                    if is_dask(value):
                        lazy.append(traced[k])
                        graph.lazy = True
                args, kwargs = tree_unflatten(treedef, traced)
                out = self.f(*args, **kwargs)
        finally:
            touched, trace_grads.saved = trace_grads.saved, outer
            graph.backward_hook = None
            # the trace leaves every .grad as it found it: each call sets them
            grads_after = {t: t._grad for t in touched}
            for t, before in touched.items():
                t._grad = before
        cleared = _grad_writes(graph, grads_after)
        out_leaves, out_def = tree_flatten(out)
        outputs = [_output(o, graph) for o in out_leaves] + [node for node, _ in graph.writes]
        inputs = [traced[k] for k in arrays] + [node for node, _ in graph.reads.values()]
        program = Program(graph, inputs, outputs)
        program.lazy_inputs = frozenset(lazy)
        if self.optimize:
            report = optimize(program)
        else:
            report = None
            program.schedule()  # still only what the outputs need
        check_lazy(program, "dg.compile")
        # Dask arrays have no buffers to write into: their program has no out=
        generated = generate(program, self.__name__, reuse_buffers=not lazy)
        entry = _Entry(program, generated, report, arrays, out_def, any(isinstance(x, Tensor) for x in leaves))
        entry.lazy = program.lazy_inputs
        entry.in_def = treedef
        entry.static = static
        entry.static_leaves = {k: leaf for k, leaf in enumerate(leaves) if k not in arrays}
        entry.reads = [read for _, read in graph.reads.values()]
        entry.guards = list(graph.guards.values())
        entry.read_types = [(tuple(node._shape), node._dtype) for node, _ in graph.reads.values()]
        entry.writes = [write for _, write in graph.writes]
        entry.computes = bool(lazy) and any(getattr(w, "func", None) is not _set_grad for w in entry.writes)
        entry.cleared = cleared
        return entry


def _traced_backward(graph, loss, gradient):
    """`loss.backward()` inside a function dg.compile traces (PyTorch's training step): the gradients of
    the parameters the loss depends on, as nodes, accumulated into their `.grad` as eager backward would;
    each call of the compiled function then sets the parameters' `.grad` to the computed values."""
    if tuple(loss._shape) != () and gradient is None:
        raise user_error(ValueError, "backward", f"grad can be created implicitly only for a one-element output, "
                         f"got shape {tuple(loss._shape)}; pass grad= of that shape", loss)
    if gradient is None and loss._dtype.kind == "c":  # as eager backward(): the real part would be silent
        raise complex_seed_error("backward", loss)
    if not loss._requires_grad:
        raise user_error(RuntimeError, "backward", "the loss does not depend on any parameter that requires grad",
                         loss)
    params = {node: tensor for tensor, node in graph.params.values()}
    seed = full_like(loss, 1) if gradient is None else gradient
    found = reverse_sweep([loss], [seed], 0, graph_mode=True, targets=set(params))
    for node, tensor in params.items():
        g = found.get(node)
        if g is None:
            continue
        cleared = tensor in trace_grads.saved  # the traced function set this .grad itself (zero_grad)
        note_grad_change(tensor)
        before = tensor._grad
        if isinstance(before, Symbol):
            g = before + g
        elif before is not None and cleared:
            g = before.numpy() + g  # set inside the function (zero_grad(set_to_none=False)): a constant
        elif not cleared:
            # the .grad the caller has at each call is added to, as eager backward adds to it
            incoming = graph.read_at_call(("grad", id(tensor)), functools.partial(_grad_or_zeros, tensor),
                                          tensor.shape, tensor.dtype, "grad")
            g = incoming + g
        tensor._grad = g


def _raised_by(err, function):
    """Whether the exception `err` was raised in `function` itself (its innermost frame)."""
    tb = getattr(err, "__traceback__", None)
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is function.__code__


def _grad_or_zeros(tensor):
    grad = tensor._grad
    return np.zeros_like(tensor._value) if grad is None else grad._raw()


def _grad_writes(graph, grads_after):
    """Write-backs of the gradients the traced function left in `.grad` (nodes), and the `.grad`s it
    cleared (to clear at each call)."""
    cleared = []
    for tensor, after in grads_after.items():
        if isinstance(after, Symbol):
            graph.writes.append((after, functools.partial(_set_grad, tensor)))
        elif after is None:
            cleared.append(tensor)
    return cleared


def _set_grad(tensor, value):
    if is_dask(value):  # a lazy gradient stays lazy (over Dask data): never written in place, so not copied
        tensor._grad = _leaf(as_dtype(value, tensor.dtype), False)
        return
    fresh = type(value) is np.ndarray and value.dtype == tensor.dtype and value.flags.writeable
    tensor._grad = _leaf(value if fresh else np.array(value, dtype=tensor.dtype), False)


class _Entry:
    def __init__(self, program, generated, report, arrays, out_def, wrap):
        self.program = program
        self.generated = generated
        self.report = report
        self.arrays = arrays  # positions of the array arguments among the flattened leaves
        self.out_def = out_def
        self.wrap = wrap  # Tensors in, Tensors out (as f itself would do)
        self.lazy = frozenset()  # the placeholders traced for Dask arrays: if any, the program has no out=


def _is_array(leaf):
    """Whether an argument is traced (a placeholder of the code): arrays, NumPy scalars, Tensors, and Python
    floats and complex numbers (JAX traces these too; SPEC: a float argument is differentiable)."""
    return isinstance(leaf, (np.ndarray, np.generic, Tensor)) or type(leaf) in NUMBERS or is_dask(leaf)


def _key(tree, leaves, static=False):
    """The signature of a call (hashable), appending its leaves to `leaves` in the order of
    `tree_flatten`: containers by type and keys, arrays by shape and dtype, Python floats and complex
    numbers by their type (traced), other leaves by value; under a static argument (`static`) every
    leaf by value."""
    kind = type(tree)
    if kind is np.ndarray and not static:
        leaves.append(tree)
        return (tree.shape, tree.dtype)
    if kind is tuple or kind is list or isinstance(tree, tuple):
        return (kind, tuple([_key(item, leaves, static) for item in tree]))
    if isinstance(tree, dict):
        return (dict, tuple([(k, _key(v, leaves, static)) for k, v in tree.items()]))
    leaves.append(tree)
    if static:
        if isinstance(tree, (np.ndarray, Tensor)) or is_dask(tree):
            raise user_error(TypeError, "dg.compile", f"a static argument must be a hashable constant, got a "
                             f"{type(tree).__name__} (pass arrays as traced arguments)")
    elif kind is float or kind is complex:
        return ("number", kind)
    elif isinstance(tree, Tensor):
        value = tree._value
        if type(value) is not np.ndarray and is_dask(value):
            return _lazy_key(value, "tensor")
        return ("tensor", np.shape(value), getattr(value, "dtype", None))
    elif isinstance(tree, np.generic):
        return ("scalar", tree.dtype)
    try:
        hash(tree)
    except TypeError:
        if is_dask(tree) and not static:  # unhashable: asked only here, off the path of NumPy arguments and constants
            return _lazy_key(tree, "array")
        raise user_error(TypeError, "dg.compile", f"an argument of type {kind.__name__} is neither an array nor a "
                         "hashable constant (pass arrays, Tensors, numbers, or lists/tuples/dicts of them)") from None
    # floats (a subclass of float) by repr: -0.0 and 0.0 are different constants, and nan equals itself
    return ("static", kind, repr(tree) if isinstance(tree, (float, complex, np.inexact)) else tree)


def _lazy_key(value, kind):
    """A Dask array's signature: its own kind of program (no buffer reuse), so never NumPy's; its shape
    must be known, as the program is traced for one shape."""
    if has_unknown_size(value.shape):
        raise unknown_size_error("dg.compile", value.shape)
    return ("dask", kind, value.shape, value.dtype)


def _check_arrays(f, treedef, leaves):
    """Array arguments must be numbers or booleans: strings and objects have no arithmetic."""
    for k, leaf in enumerate(leaves):
        if _is_array(leaf) and type(leaf) not in NUMBERS:
            dtype = (leaf._value if isinstance(leaf, Tensor) else leaf).dtype
            if dtype.kind not in ARRAY_KINDS:
                path = leaf_paths(f, treedef)[k]
                raise user_error(TypeError, "dg.compile", f"argument {path} has dtype {dtype}: it has no arithmetic; "
                                 "pass arrays of numbers or booleans", leaf)


def _output(value, graph):
    """An output of the traced function: a node of the trace, or a constant."""
    if isinstance(value, Symbol):
        if value.graph is not graph:
            raise user_error(ValueError, "dg.compile", "the function returned a node of another static graph")
        return value
    if isinstance(value, Tensor):
        if value._level:
            raise user_error(TypeError, "dg.compile", "the function returned a value still traced by a transform")
        return np.array(value._value)  # its value now, as JAX bakes a closed-over array into the trace
    return value


def _identifier(name):
    """The generated function's name: f's name made an identifier ('<lambda>' is 'f')."""
    name = identifier(identifier(name if isinstance(name, str) else "f").strip("_"))
    return "f" if name == "lambda" else name


def explain(err, generated, where):
    """The error of a failing generated line, naming its op, its input shapes and the user's line."""
    tb = err.__traceback__
    node = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == generated.function.__dagrad_filename__:
            node = generated.line_nodes.get(tb.tb_lineno)
        tb = tb.tb_next
    if node is None:
        return err
    return node_error(node, err, where)
