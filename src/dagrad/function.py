"""Custom differentiable operations: subclass `dg.Function`, as in PyTorch.

A Function becomes an op of its own (named after the class) whose forward is the class's
`forward` on NumPy arrays and whose vjp calls the class's `backward`. In a plain backward
pass `backward` receives NumPy arrays; when a graph of the gradient is being recorded
(higher order, nested transforms, static graphs, `dg.compile`) it receives Tensors, so a
`backward` written with operators and dagrad functions is differentiated again. Forward
mode needs no rule: `backward` is linear in its cotangent, g -> J^T g, so J t is the
gradient with respect to g of <J^T g, t>; a `jvp` staticmethod is used instead when given.

Only the Tensor arguments of `apply` are the op's inputs; every other argument (a number, a
NumPy array, a string, None, a function, a shape) is a constant of that call, kept in the ctx
and passed to `forward` as it is on every path (never replaced by a stand-in).

Several outputs are packed into one flat array for the engine (which has one value per
node) and unpacked by indexing, so their gradients reach `backward` together.

The checks of what users' rules return live here, for every style of custom rule (custom.py
uses them too): `checked_cotangent` for a gradient, `checked_tangent` for a tangent.
"""

from __future__ import annotations

import numpy as np

from ._core.backends import is_foreign
from ._core.errors import caller_line, user_error
from ._core.op import Op, apply
from ._core.pytree import tree_flatten
from ._core.shapes import dtype_of, shape_of
from ._core.tensor import Batched, Tensor, _leaf, is_symbolic
from .ops.elementwise import astype, zeros_like
from .ops.reduce import sum as reduce_sum
from .ops.shape import concatenate, getitem, ravel, reshape
from .transforms import grad as grad_of

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """What `forward` leaves for `backward`: `save_for_backward(*arrays)`, `saved_tensors`, and
    any attribute you set (`ctx.k = 3`)."""

    # dagrad's own state; what users set on a ctx lives in its __dict__ (vmap and static graphs look at it)
    __slots__ = ("_function", "_static", "_nargs", "_dtypes", "_applied", "_saved_raw", "_saved", "_aliases",
                 "_current", "_outputs", "_examples", "_stacked", "_merged", "_varying", "__dict__")

    def __init__(self, function, static=None, nargs=0, dtypes=(), applied=None):
        self._function = function
        self._static = static or {}  # forward's arguments that are not Tensors, by position: passed as they are
        self._nargs = nargs
        self._dtypes = dtypes  # of the op's inputs (the stand-ins of a static graph's shape rule have them)
        self._applied = applied  # the user's line that applied the Function
        self._saved_raw = ()  # what forward saved
        # how to find each saved value again: ("input", j), ("output", k), ("static", v) or ("value", v)
        self._saved = ()
        # attributes forward set to one of its inputs or outputs (`ctx.x = x`), found again as saved values are
        self._aliases = {}
        self._current = None  # the saved values as the running backward sees them
        self._outputs = None  # [(shape, dtype)] of several outputs, else None
        self._examples = None  # under vmap: one ctx per example (forward ran once per example) ...
        self._stacked = None  # ... and the stacked output they made (vmap's box holds it)
        self._merged = False
        # after forward ran on stand-ins (a static graph, dg.compile): the attributes it set to values that
        # depend on its inputs' values, or an exception when that could not be checked
        self._varying = frozenset()

    def save_for_backward(self, *arrays):
        self._saved_raw = arrays

    @property
    def saved_tensors(self):
        if self._current is None:
            raise user_error(RuntimeError, f"{self._function.__name__}.saved_tensors", "is read in backward (or jvp) "
                             "only")
        return self._current

    def _arguments(self, values):
        """forward's arguments again: the op's inputs `values` with the constants in their places."""
        it = iter(values)
        return [self._static[k] if k in self._static else next(it) for k in range(self._nargs)]

    def _positions(self):
        """The argument number of each of the op's inputs."""
        return [k for k in range(self._nargs) if k not in self._static]

    def _example(self):
        return FunctionCtx(self._function, self._static, self._nargs, self._dtypes, self._applied)

    def __repr__(self):
        return "ctx"


class Function:
    """Base class of custom differentiable operations.

    >>> import dagrad as dg, numpy as np
    >>> class Cube(dg.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * x ** 2 * g
    >>> dg.grad(lambda x: Cube.apply(x).sum())(np.array([1.0, 2.0]))
    array([ 3., 12.])
    >>> float(dg.grad(dg.grad(lambda x: Cube.apply(x)))(2.0))  # backward is differentiated again
    12.0
    """

    jvp = None  # optional: jvp(ctx, *tangents) -> the tangent of the output(s)

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("a Function subclass defines forward(ctx, *arrays)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a Function subclass defines backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args):
        """Applies the operation: eagerly, under transforms, or as a node of a static graph."""
        op = cls.__dict__.get("_dagrad_op")
        if op is None:
            op = cls._dagrad_op = _make_op(cls)
        inputs, static = [], {}
        for k, a in enumerate(args):
            if isinstance(a, Tensor):
                inputs.append(a)
            else:
                static[k] = static_argument(cls.__name__, k, a)
        ctx = FunctionCtx(cls, static, len(args), [a.dtype for a in inputs], caller_line())
        out = apply(op, tuple(inputs), {"ctx": ctx})
        if ctx._outputs is None:
            return out
        if None in shape_of(out):
            raise user_error(TypeError, cls.__name__, "a Function with several outputs needs known sizes in a static "
                             "graph (its outputs are unpacked by position)", *inputs)
        return tuple(unpacked_parts(out, ctx._outputs))


def static_argument(name, k, value):
    """`value`, an argument of custom op `name` that is not a Tensor: a constant passed to the user's
    code as it is. A container holding Tensors is refused: they would reach NumPy code undifferentiated."""
    if isinstance(value, (list, tuple, dict)) and any(isinstance(leaf, Tensor) for leaf in tree_flatten(value)[0]):
        raise user_error(TypeError, name, f"argument {k} is a {type(value).__name__} holding Tensors: only arguments "
                         "that are Tensors themselves are inputs of a custom op (any other argument is a constant, "
                         "passed as it is); pass each Tensor as an argument of its own")
    # a rule may read it after the caller wrote into their array: a copy, as the engine copies what rules save
    return value.copy() if type(value) is np.ndarray else value


def stand_in_shape(run, shapes, dtypes):
    """The output shape of a custom op whose forward is `run`, for inputs of `shapes`: `run` on
    stand-ins (ones of each input's dtype), once when every size is known, else twice, with the
    unknown sizes 2 and then 3 (a size that changes with them is unknown too)."""
    unknown = any(s is None or None in s for s in shapes)
    results = []
    for size in (2, 3) if unknown else (1,):
        with np.errstate(all="ignore"):
            results.append(tuple(np.shape(run(*stand_ins(shapes, dtypes, size)))))
    if not unknown:
        return results[0]
    return tuple(None if m != n else m for m, n in zip(*results))


def stand_ins(shapes, dtypes, size, pattern=None):
    """Arrays of `shapes` (an unknown size: `size`) and `dtypes` standing in for a custom op's inputs: ones,
    or with `pattern` (low, high), values evenly spaced from low to high (integers 0, a safe index; bools True)."""
    arrays = []
    for s, dtype in zip(shapes, dtypes):
        shape = None if s is None else tuple(size if n is None else n for n in s)
        kind = np.dtype(dtype).kind
        if shape is None or pattern is None or kind == "b":
            arrays.append(None if shape is None else np.ones(shape, dtype))
        elif kind in "iu":
            arrays.append(np.zeros(shape, dtype))
        else:
            arrays.append(np.linspace(*pattern, int(np.prod(shape))).reshape(shape).astype(dtype))
    return arrays


# the other stand-in values a Function's forward runs on, to find what it leaves on the ctx that depends on its
# inputs' values: distinct values of either sign, with a negative sum and a positive largest one (a maximum, a
# sum, a sign, a norm differ from the ones'), then values in (0, 1), for a forward refusing negative ones
_PATTERNS = ((-2.25, 1.75), (0.2, 0.8))


def _varying(forward, ctx, shapes, states):
    """The attributes a Function's forward set on `ctx` to values that depend on its inputs: those that differ
    between `states` (what it left on stand-ins of ones, of two sizes when a size is unknown) and what it
    leaves on the other stand-ins (in a ctx of their own); the exception forward raised on those, if it
    raised on each."""
    failed = None
    for pattern in _PATTERNS:
        other = ctx._example()
        try:
            with np.errstate(all="ignore"):
                forward(*stand_ins(shapes, ctx._dtypes, 3, pattern), ctx=other)
        except Exception as err:  # forward refuses those values: try the next
            failed = err
        else:
            states.append(vars(other))
    if len(states) == 1 + any(s is None or None in s for s in shapes):
        return failed
    return frozenset(attr for attr in set().union(*states)
                     if not all(_same_value(states[0].get(attr, _MISSING), s.get(attr, _MISSING)) for s in states[1:]))


def _make_op(cls):
    name = cls.__name__

    def forward(*values, ctx):
        try:
            out = cls.forward(ctx, *ctx._arguments(values))
        except Exception as err:  # the Rule only now: forward runs at every call
            raise Rule(f"{name}.forward", cls.forward, ctx._applied, "forward").failed(err) from err
        outs = out if isinstance(out, tuple) else (out,)
        if not outs:
            raise user_error(TypeError, f"{name}.forward", "returned an empty tuple; return an array, or a tuple of "
                             "arrays for several outputs")
        for o in outs:
            check_output(name, o)
        ctx._saved = tuple(_find(s, values, ctx, outs) for s in ctx._saved_raw)
        # `ctx.x = x` works as PyTorch's does: backward sees the input as it sees a saved one (a Tensor when
        # the gradient is differentiated again), not the array forward got (a constant: a zero second derivative)
        ctx._aliases = {attr: found for attr, v in vars(ctx).items()
                        if (found := _find(v, values, ctx, outs))[0] in ("input", "output")}
        if isinstance(out, tuple):
            packed, ctx._outputs = packed_outputs(out)
            return packed
        return out

    forward.custom_op = "a dg.Function"  # export refuses it by this mark: the forward is the user's code

    def shape(*shapes, ctx):
        # forward runs on stand-ins: a value it leaves on ctx that depends on its inputs' values (`ctx.m =
        # float(x.max())`) would be baked into a backward built now, so _refuse_stand_in_values refuses it
        states = []

        def run(*values):
            out = forward(*values, ctx=ctx)
            states.append(dict(vars(ctx)))
            return out

        result = stand_in_shape(run, shapes, ctx._dtypes)
        ctx._varying = _varying(forward, ctx, shapes, states)
        return result

    def vjp(g, out, *inputs, ctx):
        grads = (g,) if ctx._outputs is None else unpacked_parts(g, ctx._outputs)
        rule = Rule(f"{name}.backward", cls.backward, ctx._applied)
        with _saved(ctx, inputs, out):
            result = rule.call(ctx, *grads)
        return _checked_grads(rule, result, inputs, ctx)

    def jvp(tangents, out, *inputs, ctx):
        if cls.jvp is None:
            return _jvp_from_backward(vjp, tangents, out, inputs, ctx)
        it = iter(tangents)
        spread = [None if k in ctx._static else next(it) for k in range(ctx._nargs)]  # one per forward argument
        rule = Rule(f"{name}.jvp", cls.jvp, ctx._applied)
        with _saved(ctx, inputs, out):
            tangent = rule.call(ctx, *spread)
        return _checked_tangents(rule, tangent, out, ctx._outputs)

    def batch(op, values, batched, attrs):
        # vmap with no batching rule: forward once per example, each with a ctx of its own (a shared one
        # would hand backward the last example's state), stacked. A backward run above the vmap sees the
        # examples' state at once: _saved merges it then
        ctx = attrs["ctx"]
        size = next(shape_of(v)[0] for v, b in zip(values, batched) if b)
        if size is None:
            raise user_error(ValueError, "vmap", f"{name} has no batching rule, and the batch size is unknown until "
                             "the graph runs; give the mapped axis a size")
        examples, rows = [], []
        for k in range(size):
            example = ctx._example()
            rows.append(apply(op, tuple(v[k] if b else v for v, b in zip(values, batched)), {"ctx": example}))
            examples.append(example)
        ctx._examples, ctx._stacked = examples, np.stack(rows)
        ctx._outputs = examples[0]._outputs
        return ctx._stacked, True

    op = Op(name, forward, vjp, jvp, shape, True, batch=batch)
    op.function = cls.apply
    return op


def check_output(name, out):
    """forward returns NumPy arrays or numbers of a dtype dagrad computes with."""
    if isinstance(out, Tensor):
        raise user_error(TypeError, f"{name}.forward", "returned a Tensor: forward works on NumPy arrays and returns "
                         "them (use .numpy() inside forward, or return the array)")
    if isinstance(out, (np.ndarray, np.generic)) or is_foreign(out):
        kind = out.dtype.kind
    elif isinstance(out, (bool, int, float, complex)):
        kind = "f"
    else:
        raise user_error(TypeError, f"{name}.forward", f"returned a {type(out).__name__}; forward returns a NumPy "
                         "array (or number, or a Dask or CuPy array), or a tuple of them for several outputs")
    if kind not in "biufc":
        raise user_error(TypeError, f"{name}.forward", f"returned an array of dtype {out.dtype}: dagrad computes on "
                         "bool, integer, floating-point and complex values", out)


def packed_outputs(outs):
    """Several outputs of a forward as the engine's one value, a flat array of their promoted dtype, and
    their (shape, dtype). A Dask or CuPy output stays as it is (np.asarray would compute or refuse it),
    and the value is of its type."""
    arrays = [o if is_foreign(o) else np.asarray(o) for o in outs]
    dtype = np.result_type(*(a.dtype for a in arrays))
    return np.concatenate([a.astype(dtype, copy=False).ravel() for a in arrays]), [(a.shape, a.dtype) for a in arrays]


def unpacked_parts(packed, outputs):
    """The parts of an output-shaped packed value (the output, a cotangent), each in its own dtype."""
    return tuple(p if np.dtype(dtype) == dtype_of(p) else astype(p, dtype)
                 for p, (_, dtype) in zip(split(packed, outputs), outputs))


def _find(saved, values, ctx, outs):
    """How backward finds a saved value again: as the op's input j, forward's output k, a constant
    argument, or the value itself."""
    for j, v in enumerate(values):
        if saved is v:
            return ("input", j)
    for k, v in enumerate(outs):
        if saved is v:
            return ("output", k)
    for v in ctx._static.values():
        if saved is v:
            return ("static", v)
    return ("value", saved)


class _saved:
    """`with _saved(ctx, inputs, out):` gives backward the saved values as it must see them: the op's
    own inputs and outputs as the sweep passes them (arrays, or Tensors when a graph of the gradient is
    recorded). (A class, not a contextlib generator: the errors it raises name the user's line, and
    contextlib's frames would stand in for it.)"""

    def __init__(self, ctx, inputs, out):
        symbolic = is_symbolic(out)
        if symbolic:
            for example in (ctx, *(ctx._examples or ())):
                _refuse_stand_in_values(example)
        if ctx._examples is not None and not ctx._merged:
            _merge(ctx, out)
        outs = (out,) if ctx._outputs is None else split(out, ctx._outputs)
        found = {"input": inputs, "output": outs}
        current = []
        for kind, where in ctx._saved:
            if kind in found:
                current.append(found[kind][where])
            elif symbolic and kind == "value":
                raise user_error(
                    TypeError, f"{ctx._function.__name__}.save_for_backward", "in a static graph or under "
                    "dg.compile it may save only forward's inputs and outputs (the others have no value when the "
                    "gradient is built); recompute the rest in backward")
            else:
                current.append(where)  # a constant argument, or an intermediate value: a constant of the gradient
        self.ctx, self.current = ctx, tuple(current)
        self.aliases = {attr: found[kind][where] for attr, (kind, where) in ctx._aliases.items()}

    def __enter__(self):
        ctx = self.ctx
        self.previous = ctx._current, {attr: getattr(ctx, attr) for attr in self.aliases}
        ctx._current = self.current
        for attr, value in self.aliases.items():
            setattr(ctx, attr, value)

    def __exit__(self, *exc):
        self.ctx._current, attributes = self.previous
        for attr, value in attributes.items():
            setattr(self.ctx, attr, value)


def _refuse_stand_in_values(ctx):
    """In a static graph the forward ran on stand-ins when the gradient is built: an array it left on
    the ctx (a mask, say), or a value that depends on its inputs' values (a number computed from them),
    would be a wrong constant of the gradient, so it is refused. Constants (`ctx.eps = 1e-5`, a shape)
    are the same on any stand-ins, and the constant arguments are the caller's."""
    name = ctx._function.__name__
    for attr, value in vars(ctx).items():
        if attr in ctx._aliases or any(value is v for v in ctx._static.values()):
            continue
        if isinstance(value, np.ndarray) or is_foreign(value):
            what = "an array"
        elif isinstance(ctx._varying, Exception):
            raise user_error(TypeError, f"{name}.forward", f"set ctx.{attr}, and raised on a second set of stand-in "
                             f"values ({type(ctx._varying).__name__}: {ctx._varying}), so whether ctx.{attr} depends "
                             "on the inputs' values cannot be told: in a static graph or under dg.compile the gradient "
                             "is built before any value exists (forward ran on stand-ins); compute it in backward from "
                             "ctx.saved_tensors (forward's inputs and outputs)")
        elif attr in ctx._varying:
            what = (f"a value of type {type(value).__name__} that depends on the inputs (their values, or a size "
                    "unknown until the graph runs)")
        else:
            continue
        raise user_error(TypeError, f"{name}.forward", f"set ctx.{attr} to {what}: in a static graph or under "
                         "dg.compile the gradient is built before any value exists (forward ran on stand-ins), so it "
                         "would be a wrong constant; recompute it in backward from ctx.saved_tensors (forward's inputs "
                         "and outputs)", *([value] if what == "an array" else []))


_MISSING = object()


def _same_value(a, b):
    """Whether two values forward left on ctx (on different stand-ins) are the same: identical, or equal
    (NaN equal to NaN); values whose equality is no plain bool (arrays in a container) are not."""
    if a is b:
        return True
    if a is _MISSING or b is _MISSING:
        return False
    try:
        equal = a == b
        if isinstance(equal, (bool, np.bool_)):
            return bool(equal) or (_is_nan(a) and _is_nan(b))
    except Exception:  # nosec B110  # a comparison that raises: the values are not simply equal
        pass
    return False


def _is_nan(value):
    return isinstance(value, (float, np.floating)) and value != value


def _merge(ctx, out):
    """Gives `ctx`, whose forward ran once per example under vmap, the examples' state as the batched
    backward (or jvp) above that vmap must see it: a value that differs between the examples becomes a
    value mapped by that vmap (its examples stacked), one they share stays as it is."""
    level = _batch_level(out, ctx._stacked)
    examples = ctx._examples
    name = ctx._function.__name__
    if len({len(e._saved) for e in examples}) != 1:
        raise _differs(name, "save_for_backward", "saved a different number of values")
    saved = []
    for k, entries in enumerate(zip(*(e._saved for e in examples))):
        kinds = {kind if kind in ("value", "static") else (kind, where) for kind, where in entries}
        if len(kinds) != 1:
            raise _differs(name, "save_for_backward", f"saved different things as value {k}")
        kind = entries[0][0]
        saved.append(entries[0] if kind in ("input", "output") else
                     (kind, _mapped(name, f"saved value {k}", [where for _, where in entries], level)))
    names = set(vars(examples[0]))
    if any(set(vars(e)) != names for e in examples):
        raise _differs(name, "forward", "set different attributes of ctx")
    for attr in names:
        aliases = {e._aliases.get(attr) for e in examples}
        if len(aliases) == 1 and None not in aliases:  # the same input or output of each example
            ctx._aliases[attr] = aliases.pop()
        setattr(ctx, attr, _mapped(name, f"ctx.{attr}", [getattr(e, attr) for e in examples], level))
    ctx._saved, ctx._merged = tuple(saved), True


def _batch_level(out, stacked):
    """The level of the vmap whose box holds `stacked`, found through the boxes around `out`."""
    value = out
    while isinstance(value, Tensor):
        if type(value) is Batched and value._value is stacked:
            return value._level
        value = value._value
    raise RuntimeError("dagrad internal error: a Function's vmap box was not found; please report it")


def _mapped(name, what, values, level):
    """One value for the examples' `values`: the value they share, or their stack as a box of vmap `level`."""
    first = values[0]
    if all(v is first for v in values):
        return first
    arrays = all(isinstance(v, (np.ndarray, np.generic, Tensor, bool, int, float, complex)) or is_foreign(v)
                 for v in values)
    if arrays and len({tuple(shape_of(v)) for v in values}) == 1:
        return _leaf(np.stack(values), False, level, Batched)
    try:
        if all(bool(v == first) for v in values):
            return first
    except Exception:  # nosec B110  # a comparison that is no plain bool: the values are not simply equal
        pass
    raise _differs(name, "forward", f"left {what} of type {type(first).__name__} different in each example")


def _differs(name, where, what):
    return user_error(TypeError, f"{name}.{where}", f"under dg.vmap {what}: a Function's backward runs once for "
                      "all the examples, so what forward leaves must be arrays or numbers (mapped with the examples) "
                      "or the same in every example")


class Rule:
    """A user's code in a custom op (a rule, whose results are checked, or a forward): its name as errors
    give it (`Cube.backward`, `f vjp (dg.defvjp)`), the function (for the line defining it), the user's
    line that applied the custom op, and what it is (`what`: "rule", "forward", "function")."""

    __slots__ = ("name", "fn", "applied", "what")

    def __init__(self, name, fn, applied, what="rule"):
        self.name = name
        self.fn = fn
        self.applied = applied
        self.what = what

    def where(self, skip=None):
        """' (the op was applied at ..., the rule defined at ...)', without the first when it is `skip`."""
        code = getattr(self.fn, "__code__", None)
        lines = [] if self.applied in (None, skip) else [f"the op was applied at {self.applied}"]
        if code is not None:
            lines.append(f"the {self.what} defined at {code.co_filename}:{code.co_firstlineno}")
        return f" ({', '.join(lines)})" if lines else ""

    def call(self, *args, **kwargs):
        """The user's code run on `args`; an exception it raises is raised again naming it (`failed`), for
        every style of custom op alike."""
        try:
            return self.fn(*args, **kwargs)
        except Exception as err:
            raise self.failed(err) from err

    def failed(self, err):
        """`err`, raised inside the user's code, again: of its type (ValueError for a type taking no
        message), its message after the name, with the line that applied the op, the line defining the
        code and the user's line: "Cube.backward failed: ... (the op was applied at train.py:12, the rule
        defined at train.py:7) at train.py:20"."""
        return user_error(type(err), f"{self.name} failed", f"{err}{self.where(skip=caller_line())}")


def checked_cotangent(rule, k, ct, x):
    """What the engine takes from `ct`, the gradient `rule` returned for argument `k`, whose value is `x`
    (as the sweep sees it: an array, or a Tensor when a graph of the gradient is recorded), as PyTorch's
    validate_outputs does: None for a zero (also for an integer or bool input: it has no gradient), or
    `ct` in `x`'s dtype (a real gradient of a complex input becomes complex) with `x`'s shape or one `x`
    was broadcast to (the sweep then sums it). Anything else raises, naming the rule, the argument, both
    shapes or types and the lines: another shape, a complex gradient for a real input, a list, a string."""
    if ct is None:
        return None
    dtype = dtype_of(x)
    if dtype.kind not in "fc":
        return None
    what = f"the gradient for argument {k}"
    shape = shape_of(x)
    ct = _array(rule, ct, what, f"argument {k}", shape, dtype)
    got = shape_of(ct)
    if not _broadcasts(shape, got):
        raise user_error(ValueError, rule.name, f"returned {what} with shape {_text(got)}, but argument {k} has shape "
                         f"{_text(shape)}: a gradient has its argument's shape, or a shape the argument was broadcast "
                         f"to (it is then summed){rule.where()}")
    return _cast(rule, ct, dtype, what, f"argument {k}")


def checked_tangent(rule, t, shape, dtype, what):
    """What the engine takes from `t`, the tangent `rule` returned for `what` (an output of `shape` and
    `dtype`): None for a zero (also for an integer or bool output), or `t` of exactly that shape in that
    dtype. Anything else raises, as `checked_cotangent`."""
    if t is None or dtype.kind not in "fc":
        return None
    text = f"the tangent of {what}"
    t = _array(rule, t, text, what, shape, dtype)
    got = shape_of(t)
    if not _same(got, shape):
        raise user_error(ValueError, rule.name, f"returned {text} with shape {_text(got)}, but {what} has shape "
                         f"{_text(shape)}: a tangent has exactly its output's shape{rule.where()}")
    return _cast(rule, t, dtype, text, what)


def checked_primal(rule, value, shape, dtype, what):
    """`value`, the primal output a custom_jvp rule returned for `what` (an output of `shape` and `dtype`),
    checked as JAX checks it against the function's own output: exactly that shape and dtype (a Python
    number may stand for a 0-d output whose dtype it does not change). Anything else raises, naming the
    rule, both shapes or dtypes and the lines: a rule whose primal differs from the function is wrong,
    and its tangent with it."""
    text = f"the primal output for {what}"
    if value is None:
        raise user_error(TypeError, rule.name, f"returned None as {text} ({what} is {_describe(shape, dtype)}): "
                         f"return the function's output at the primals{rule.where()}")
    if isinstance(value, (bool, int, float, complex)) and np.result_type(dtype, value) == dtype:
        value = np.asarray(value, dtype)
    value = _array(rule, value, text, what, shape, dtype)
    got, have = shape_of(value), dtype_of(value)
    if not _same(got, shape):
        raise user_error(ValueError, rule.name, f"returned {text} with shape {_text(got)}, but {what} has shape "
                         f"{_text(shape)}: the primal output is the function's output at the primals{rule.where()}")
    if have != dtype:
        raise user_error(TypeError, rule.name, f"returned {text} of dtype {have}, but {what} has dtype {dtype}: the "
                         f"primal output is the function's output at the primals{rule.where()}")


def _array(rule, value, what, subject, shape, dtype):
    """`value` as an array or Tensor (a number becomes a 0-d array), or the error for anything else."""
    if isinstance(value, (Tensor, np.ndarray, np.generic)) or is_foreign(value):
        kind = dtype_of(value).kind
    elif isinstance(value, (bool, int, float, complex)):
        value = np.asarray(value)
        kind = value.dtype.kind
    else:
        raise user_error(TypeError, rule.name, f"returned a {type(value).__name__} as {what} ({subject} is "
                         f"{_describe(shape, dtype)}): return an array or a number (Tensors when a graph of the "
                         f"gradient is recorded), or None for a zero{rule.where()}")
    if kind not in "biufc":
        raise user_error(TypeError, rule.name, f"returned an array of dtype {value.dtype} as {what} ({subject} is "
                         f"{_describe(shape, dtype)}): it must be numeric{rule.where()}")
    return value


def _cast(rule, value, dtype, what, subject):
    """`value` in `dtype` (as PyTorch casts a gradient to its input's dtype); a complex value for a real
    one is refused (its imaginary part would be dropped silently)."""
    have = dtype_of(value)
    if have == dtype:
        return value
    if have.kind == "c" and dtype.kind != "c":
        raise user_error(TypeError, rule.name, f"returned {what} of complex dtype {have}, but {subject} is real "
                         f"({dtype}): return a real value (the real part, if that is what you mean){rule.where()}")
    return astype(value, dtype)


def _unknown(n):
    return n is None or n != n  # None: a static graph's unknown size; NaN: Dask's


def _broadcasts(shape, target):
    """Whether `shape` broadcasts to `target` (an unknown size fits any)."""
    if shape is None or target is None:
        return True
    if len(shape) > len(target):
        return False
    return all(n == m or n == 1 or _unknown(n) or _unknown(m) for n, m in zip(reversed(shape), reversed(target)))


def _same(shape, target):
    if shape is None or target is None:
        return True
    return len(shape) == len(target) and all(n == m or _unknown(n) or _unknown(m) for n, m in zip(shape, target))


def _text(shape):
    return "unknown" if shape is None else str(tuple(shape))


def _describe(shape, dtype):
    return f"of shape {_text(shape)} and dtype {dtype}"


def _checked_grads(rule, result, inputs, ctx):
    grads = result if isinstance(result, tuple) else (result,)
    if len(grads) != ctx._nargs:
        got = "" if isinstance(result, tuple) else f" (a {type(result).__name__})"
        raise user_error(ValueError, rule.name, f"returned {len(grads)} gradient(s){got} for {ctx._nargs} input(s) "
                         "(return one per argument of forward, a tuple of them for several, None for one without "
                         f"a gradient){rule.where()}")
    # an argument that is not a Tensor is a constant: whatever its gradient is, it is not wanted
    return tuple(checked_cotangent(rule, k, grads[k], x) for k, x in zip(ctx._positions(), inputs))


def _checked_tangents(rule, tangent, out, outputs):
    """The output tangent(s) a jvp rule returned, checked and packed as the engine holds several outputs."""
    if outputs is None:
        return checked_tangent(rule, tangent, shape_of(out), dtype_of(out), "the output")
    if not isinstance(tangent, tuple) or len(tangent) != len(outputs):
        got = f"{len(tangent)} tangents" if isinstance(tangent, tuple) else f"a {type(tangent).__name__}"
        raise user_error(ValueError, rule.name, f"returned {got} for {len(outputs)} outputs: return a tuple with one "
                         f"tangent per output (None for a zero){rule.where()}")
    parts = []
    for i, (t, part, (shape, dtype)) in enumerate(zip(tangent, split(out, outputs), outputs)):
        t = checked_tangent(rule, t, shape, dtype, f"output {i}")
        parts.append(ravel(zeros_like(part) if t is None else t))
    return concatenate(parts)


def in_dtype_of(value, like):
    """A tangent or cotangent that dagrad derived from a rule of the other mode, in the dtype of `like`,
    the value it belongs to (a rule computing in another dtype, or a float64 zero, must not change it)."""
    dtype = dtype_of(like)
    return value if dtype.kind not in "fc" or dtype_of(value) == dtype else astype(value, dtype)


def _jvp_from_backward(vjp, tangents, out, inputs, ctx):
    """J t as the gradient over g of <J^T g, t> (backward is linear in g, so any g will do)."""
    def inner(g):
        total = 0.0
        for part, t in zip(vjp(g, out, *inputs, ctx=ctx), tangents):
            if part is not None and t is not None:
                total = total + reduce_sum(part * t)
        return total

    return in_dtype_of(grad_of(inner)(zeros_like(out)), out)


def split(packed, outputs):
    parts, offset = [], 0
    for shape, _ in outputs:
        size = int(np.prod(shape, dtype=np.int64))
        parts.append(reshape(getitem(packed, slice(offset, offset + size)), shape))
        offset += size
    return parts
