"""Optimisation passes over a Program, run to a fixed point.

Each pass is a small named rewrite. A rewrite changes no value: the optimised program
computes what the traced one does, bit for bit (the property tests check this). Rewrites
that would change rounding or NaN/Inf behaviour are not made: `x + 0.0 -> x` is wrong for
x = -0.0 (the sum is +0.0, and 1/x then flips from -inf to +inf), so only `x + (-0.0)` and
integer `x + 0` are removed; `x * 0 -> 0` is wrong for x = inf or nan, so it is not made.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .._core import structural
from .._core.ir import Symbol, WeakScalar, new_symbol, validating, walk
from .._core.op import Op
from .._core.shapes import broadcast_shapes, summed_axes
from ..ops import elementwise, shape
from .program import Program

# the ops the rewrites know, by identity
ADD, SUBTRACT, MULTIPLY, DIVIDE, NEGATIVE, POWER, POSITIVE, ASTYPE, STOP_GRADIENT, FULL_LIKE = (
    f.op for f in (elementwise.add, elementwise.subtract, elementwise.multiply, elementwise.divide,
                   elementwise.negative, elementwise.power, elementwise.positive, elementwise.astype,
                   elementwise.stop_gradient, elementwise.full_like))
RESHAPE, BROADCAST_TO = structural.reshape.op, structural.broadcast_to.op
TRANSPOSE, CONCATENATE, EXPAND_DIMS, STACK = (
    f.op for f in (shape.transpose, shape.concatenate, shape.expand_dims, shape.stack))
SUM, SUM_TO = structural.sum.op, structural.sum_to.op

MAX_ROUNDS = 20
# An n-ary node needs all its operands at once, where the chain it replaces needed two: a long
# chain (a backward pass is one) flattened whole would keep hundreds of arrays alive together.
MAX_OPERANDS = 8
FOLD_LIMIT_BYTES = 1 << 16  # folding may not create a constant larger than this (or than its inputs)


class Report:
    """What each pass removed or rewrote, with counts: `print(report)`.

    >>> import dagrad as dg, numpy as np
    >>> fast = dg.compile(lambda x: (x * 1.0 + dg.exp(x) * 1.0 + dg.exp(x)).sum())
    >>> print(fast.report(np.ones(3)))  # doctest: +NORMALIZE_WHITESPACE
    nodes: 8 traced -> 4 optimised, in 2 rounds
    pass             count  rewrite
    simplify             2  x*1 -> x
    dead_nodes           5  removed nodes no output needs
    cse                  1  merged a repeated node
    flatten              1  flattened a chain of add into add_n
    """

    def __init__(self):
        self.entries = {}  # (pass, rewrite) -> count, in the order first seen
        self.traced = self.optimised = self.rounds = 0

    def add(self, pass_name, rewrite, count=1):
        self.entries[pass_name, rewrite] = self.entries.get((pass_name, rewrite), 0) + count

    def __str__(self):
        lines = [f"nodes: {self.traced} traced -> {self.optimised} optimised, in {self.rounds} rounds"]
        if self.entries:
            lines.append(f"{'pass':<16} {'count':>5}  rewrite")
            lines += [f"{p:<16} {n:>5}  {r}" for (p, r), n in self.entries.items()]
        return "\n".join(lines)

    __repr__ = __str__


def optimize(program):
    """Runs every pass until none changes the program; returns the Report."""
    report = Report()
    report.traced = len(program.nodes)
    for report.rounds in range(1, MAX_ROUNDS + 1):  # noqa: B007  (the count is reported)
        changed = 0
        for run_pass in PASSES:
            changed += run_pass(program, report)
        if not changed:
            break
    _optimize_bodies(program, report)
    report.optimised = len(program.nodes)
    return report


def _optimize_bodies(program, report):
    """Each body a control-flow node holds (Op.bodies) becomes an optimised copy: the original may belong to a
    user's static graph, whose later gradients replay it (the n-ary nodes of `flatten` have no rules)."""
    for node in program.nodes:
        if node.op is None or not node.op.bodies:
            continue
        attrs = dict(node.attrs)
        for key in node.op.bodies:
            body = attrs[key].copy()
            inner = Program(body.graph, body.inputs, body.outputs)
            for (pass_name, rewrite), count in optimize(inner).entries.items():
                report.add(pass_name, f"{rewrite} (in a body)", count)
            body.adopt(inner)
            attrs[key] = body
        node.attrs = attrs  # a new dict: the node is the program's own, its attrs may be shared


def remove_dead_nodes(program, report, replaced=frozenset()):
    """Drops every node that no output needs, but for those that check values (Op.validates), which run
    whatever reads them: an unread one with a cheaper check (an index's bounds for a gather) becomes that check.
    A node a rewrite `replaced` checks nothing its replacement does not (a merged twin, a fold that ran it
    without error on constants): it goes."""
    checks = _checks_in_place(program, replaced)
    if checks:
        report.add("dead_nodes", "unread index -> bounds check", checks)
    removed = program.schedule(replaced)
    if removed:
        report.add("dead_nodes", "removed nodes no output needs", removed)
    return removed + checks


# ---------------------------------------------------------------- the checks of unread values
# An index out of range raises IndexError on every path (SPEC), read or not: eagerly `dg.ones_like(x[i])` and
# `x[i].shape` raise. A gather nothing reads is replaced by a check of its index arrays against the sizes of the
# axes they index, which costs a comparison per index instead of the gather (and its array of results).


def index_check(*arrays, sizes, axes):
    """Raises NumPy's IndexError if an entry of `arrays[k]` is out of range for an axis of size `sizes[k]` (axis
    number `axes[k]`, for the message); negative entries count from the end."""
    for a, n, axis in zip(arrays, sizes, axes):
        a = np.asarray(a)
        bad = (a < -n) | (a >= n)
        if bad.any():
            raise IndexError(f"index {a[bad].flat[0]} is out of bounds for axis {axis} with size {n}")
    return np.True_


_BOUNDS = {}  # an indexing op -> its check, named after it (`gather_bounds`): an error names the op checked


def _bounds_op(op):
    check = _BOUNDS.get(op)
    if check is None:
        check = _BOUNDS[op] = Op(f"{op.name}_bounds", index_check, None, None, lambda *shapes, sizes, axes: (), False,
                                 dtype=lambda *dtypes, sizes, axes: np.dtype(bool), validates=True)
    return check


def _bounds(node):
    """The cheaper check an op declares for an indexing node ([(array, size, axis)]), or None."""
    validates = node.op.validates
    return validates(*node.inputs, **(node.attrs or {})) if callable(validates) else None


def _checks_in_place(program, exempt):
    """Replaces each unread indexing node by the check of its indices (`index_check`); returns how many."""
    nodes = [n for n in program.nodes if n not in exempt]
    kept = [n for n in validating(nodes) if _bounds(n) is None]  # checked by running them whole
    needed = walk(program.symbol_outputs() + kept)
    replaced = {}
    for node in nodes:
        if node in needed or node.op is None or not node.op.validates:
            continue
        found = _bounds(node)
        if found is not None:
            arrays, sizes, axes = zip(*found) if found else ((), (), ())
            check = new_symbol(program.graph, "op", (), np.dtype(bool), _bounds_op(node.op), arrays,
                               {"sizes": tuple(int(n) for n in sizes), "axes": tuple(axes)})
            replaced[node] = _placed(check, node)
    if replaced:
        program.graph.nodes = [n for n in program.graph.nodes if n not in replaced]
    return len(replaced)


def _rewrite(pass_name, rule, program, report):
    """Applies `rule(node, context)` to each node in order; a rule returns None or (replacement, what).
    Consumers read the replacement from then on; the replaced node dies unless something else
    still reads it."""
    replaced = {}
    context = _Context(program)
    for node in list(program.nodes):
        if node.inputs and any(isinstance(a, Symbol) and a in replaced for a in node.inputs):
            node.inputs = tuple(replaced.get(a, a) if isinstance(a, Symbol) else a for a in node.inputs)
        # Python's arithmetic on Python numbers (weak: codegen writes Python's operators) stays as traced
        result = None if type(node) is WeakScalar else rule(node, context)
        if result is not None and context.lazy and node in context.lazy and not context.is_lazy(result[0]):
            result = None  # a Dask value may not become a NumPy one (a folded full_like of a Dask array)
        if result is not None:
            new, what = result
            replaced[node] = new
            report.add(pass_name, what)
            # the replacement takes over the node's readers (an over-count for an existing node is safe)
            context.uses[new] = context.uses.get(new, 0) + context.uses.get(node, 0)
            if node in context.outputs:
                context.outputs[new] = True
    if replaced:
        program.outputs = [replaced.get(o, o) if isinstance(o, Symbol) else o for o in program.outputs]
        remove_dead_nodes(program, report, replaced)  # the replaced nodes, and puts new nodes in order
    return len(replaced)


class _Context:
    """What rules may ask about the program: use counts, and a way to build nodes in it."""

    def __init__(self, program):
        self.program = program
        self.uses = program.use_counts()
        self.outputs = dict.fromkeys(program.symbol_outputs())
        self.seen = {}  # cse: node key -> the first node with it
        self.lazy = program.lazy_nodes()  # the values that will be Dask arrays (none on NumPy)

    def is_lazy(self, node):
        """Whether `node` (one the rules built, or an existing one) will be a Dask array."""
        if node in self.lazy:
            return True
        if isinstance(node, Symbol) and node.op is not None and any(self.is_lazy(a) for a in node.inputs):
            self.lazy.add(node)
            return True
        return False

    def build(self, replacing, op, args, attrs=None):
        """A new node for `op(args)`, placed where `replacing` was and carrying its source line.
        Every rewrite keeps the dtype, so it is not inferred again."""
        shape = op.shape(*[_shape(a) for a in args], **(attrs or {}))
        return _placed(new_symbol(self.program.graph, "op", shape, replacing._dtype, op, tuple(args), attrs), replacing)

    def constant(self, replacing, value):
        node = _placed(new_symbol(self.program.graph, "constant", value.shape, value.dtype), replacing)
        node._data = value
        return node


def _placed(node, replacing):
    node._seq = replacing._seq
    node.where, node.grad_of = replacing.where, replacing.grad_of
    return node


# ---------------------------------------------------------------- constant folding


def _fold(node, context):
    # a control-flow node is not run at compile time: compile time would then grow with its trip count
    if node.op is None or node.op.random or node.op.bodies is not None or node.op.barrier:
        return None
    # full_like needs only its input's shape, which is known: the result is a constant
    if node.op is FULL_LIKE and _small(node):
        return context.constant(node, np.full(node._shape, *_fill(node))), "full_like -> constant"
    symbols = [a for a in node.inputs if isinstance(a, Symbol)]
    if not all(a.kind == "constant" for a in symbols):
        return None
    values = [a._data if isinstance(a, Symbol) else a for a in node.inputs]
    try:
        with np.errstate(all="ignore"):
            value = np.asarray(node.op.forward(*values, **(node.attrs or {})))
    except Exception:  # leave the error to run time, where it is reported with the user's line
        return None
    if value.shape != node._shape or value.dtype != node._dtype:
        return None
    if value.nbytes > FOLD_LIMIT_BYTES and value.nbytes > sum(a._data.nbytes for a in symbols):
        return None  # e.g. a broadcast: computing it each run is cheaper than keeping it
    return context.constant(node, value), f"{node.op.name} of constants -> constant"


def _small(node):
    return int(np.prod(node._shape, dtype=np.int64)) * node._dtype.itemsize <= FOLD_LIMIT_BYTES


def _fill(node):
    """(fill value, dtype) of a full_like node."""
    return node.attrs["fill_value"], node.attrs["dtype"] or node.inputs[0]._dtype


# ---------------------------------------------------------------- common subexpressions


def _merge_repeated(node, context):
    try:
        key = _node_key(node)
    except TypeError:  # an attribute that cannot be compared (an unusual object): keep the node
        return None
    first = node if key is None else context.seen.setdefault(key, node)
    return None if first is node else (first, "merged a repeated node")


def _node_key(node):
    if node.kind == "constant":  # by value, when small
        return _freeze(node._data) if node._data.size <= 4096 else None
    if node.op is None or node.op.random or node.op.barrier:
        # inputs are distinct by definition; two random draws are two draws; a barrier stands apart
        return None
    return (node.op, tuple(_freeze(a) for a in node.inputs), _freeze(node.attrs))


def _freeze(value):
    """A hashable key equal for values the ops cannot tell apart: types count (1, 1.0 and True
    differ), and floats compare by repr (-0.0 and 0.0 differ, two NaNs are the same)."""
    if isinstance(value, (Symbol, str)) or value is None or value is Ellipsis:
        return value
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return (type(value).__name__, repr(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", _freeze(value.start), _freeze(value.stop), _freeze(value.step))
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    raise TypeError(f"no key for {type(value).__name__}")


# the n-ary forms of associative ops (made by flattening chains, below)


def _nary_forward(ufunc):
    def forward(*xs):
        # left to right, as the chain it replaces, so every rounding is the same; after the first
        # step the running result is a fresh array of the final shape and dtype, updated in place
        out = ufunc(xs[0], xs[1])
        if type(out) is np.ndarray:
            for x in xs[2:]:
                ufunc(out, x, out=out)
        else:
            for x in xs[2:]:
                out = ufunc(out, x)
        return out

    forward.__name__ = f"{ufunc.__name__}_n"
    return forward


# op -> its n-ary form (add_n, multiply_n), and back
NARY = {
    base: Op(f"{base.name}_n", _nary_forward(getattr(np, base.name)), None, None, broadcast_shapes, False, fresh=True)
    for base in (ADD, MULTIPLY)
}
_NARY_OPS = {nary: base for base, nary in NARY.items()}


# ---------------------------------------------------------------- algebraic simplification


def _scalar(value):
    """The one value every element of `value` has, when that is known before running, else None."""
    if isinstance(value, (Symbol, np.ndarray)):
        data = value._data if isinstance(value, Symbol) and value.kind == "constant" else value
        if isinstance(data, np.ndarray):
            if not data.size or data.size > 1 << 20 or not np.all(data == data.flat[0]):
                return None
            for part in (data.real, data.imag) if data.dtype.kind == "c" else (data,):
                if part.dtype.kind == "f" and not np.all(np.signbit(part) == np.signbit(part.flat[0])):
                    return None  # -0.0 == 0.0, but x + [-0.0, 0.0] is not x + (-0.0)
            return data.flat[0]
        return np.asarray(*_fill(value))[()] if value.op is FULL_LIKE else None
    if isinstance(value, (bool, int, float, np.generic)):
        return value
    return None


def _is(value, number, negative_zero=None):
    """Whether `value` is exactly `number` everywhere (for 0: with the sign bit asked, if asked)."""
    s = _scalar(value)
    try:
        if s is None or isinstance(s, (str, bytes)) or not bool(s == number):
            return False
    except (TypeError, ValueError):
        return False
    if negative_zero is not None and number == 0:  # an integer 0 acts as +0.0 in float arithmetic
        return (np.asarray(s).dtype.kind == "f" and bool(np.signbit(s))) == negative_zero
    return True


def _shape(value):
    return value._shape if isinstance(value, Symbol) else np.shape(value)


def _same_type(node, x):
    """Whether replacing `node` by `x` keeps the shape and dtype (no broadcast, no promotion); a Python
    number's placeholder is weakly typed, which a node computed from it is not."""
    return isinstance(x, Symbol) and x._shape == node._shape and x._dtype == node._dtype and \
        (type(x) is not WeakScalar or type(node) is WeakScalar)


def rewrite(*ops):
    """Declares the ops a simplification matches (PyTensor's node_rewriter): the driver tries it
    only on nodes of those ops."""

    def declare(rule):
        rule.ops = ops
        return rule

    return declare


def _simplify(node, context):
    if node.op is not None and node.op.alias is not None and not node.op.barrier:
        return _alias(node)
    for rule in _RULES.get(node.op, ()):
        result = rule(node, context)
        if result is not None:
            return result
    return None


def _alias(node):
    # an op that returns one of its inputs (a checkpoint's output, whose other inputs were there for its
    # gradient, now built) -> that input
    x = node.inputs[node.op.alias]
    return (x, f"{node.op.name} (returns an input) -> the input") if _same_type(node, x) else None


@rewrite(MULTIPLY)
def _multiply_by_one(node, context):
    # x*1 -> x and 1*x -> x (exact for every x, including nan, inf and -0.0)
    x, y = node.inputs
    for a, b in ((x, y), (y, x)):
        if _is(b, 1) and _same_type(node, a):
            return a, "x*1 -> x"
    return None


@rewrite(ADD)
def _add_zero(node, context):
    # x+(-0.0) -> x is exact; x+0.0 is not (-0.0+0.0 is +0.0), so only integer x+0 goes too
    x, y = node.inputs
    for a, b in ((x, y), (y, x)):
        if _same_type(node, a) and (_is(b, 0, negative_zero=True) or (a._dtype.kind in "iub" and _is(b, 0))):
            return a, "x+0 -> x"
    return None


@rewrite(SUBTRACT)
def _subtract_zero(node, context):
    # x-0.0 -> x (exact: -0.0-0.0 is -0.0); x-(-0.0) is x+0.0, which is not
    x, y = node.inputs
    if _same_type(node, x) and _is(y, 0, negative_zero=False):
        return x, "x-0 -> x"
    return None


@rewrite(DIVIDE)
def _divide_by_one(node, context):
    # x/1 -> x (exact; an integer x divides to floats, which the dtype check keeps)
    x, y = node.inputs
    if _is(y, 1) and _same_type(node, x):
        return x, "x/1 -> x"
    return None


@rewrite(NEGATIVE)
def _double_negation(node, context):
    # --x -> x (negation is exact)
    (x,) = node.inputs
    if isinstance(x, Symbol) and x.op is NEGATIVE and _same_type(node, x.inputs[0]):
        return x.inputs[0], "--x -> x"
    return None


@rewrite(POWER)
def _power(node, context):
    # x**0 -> 1 (C's pow gives 1 for every x, nan and inf included); x**1 -> x;
    # x**2 -> x*x (NumPy computes a square exactly as x*x: the property tests check it)
    x, y = node.inputs
    if _is(y, 0) and isinstance(x, Symbol) and _small(node):
        return context.constant(node, np.ones(node._shape, node._dtype)), "x**0 -> 1"
    if _is(y, 1) and _same_type(node, x):
        return x, "x**1 -> x"
    if _is(y, 2) and _same_type(node, x) and _shape(y) == ():
        # only a scalar exponent: with an array of 2s NumPy calls pow(), which may round differently
        return context.build(node, MULTIPLY, (x, x)), "x**2 -> x*x"
    return None


@rewrite(RESHAPE, BROADCAST_TO, SUM_TO, ASTYPE, TRANSPOSE, POSITIVE, STOP_GRADIENT)
def _identity(node, context):
    # ops that return their input unchanged at these shapes: reshape or broadcast_to to its own
    # shape, sum_to a like-shaped target, astype to its own dtype, a transpose that keeps the
    # order, positive, stop_gradient (gradients are already built)
    x = node.inputs[0]
    if not _same_type(node, x):
        return None
    if node.op is TRANSPOSE and tuple(node.attrs["axes"]) != tuple(range(len(node._shape))):
        return None
    return x, f"{node.op.name} that changes nothing -> x"


@rewrite(RESHAPE)
def _reshape_of_reshape(node, context):
    # reshape(reshape(x, a), b) -> reshape(x, b): a reshape reads elements in C order either way
    x = node.inputs[0]
    if len(node.inputs) == 1 and isinstance(x, Symbol) and x.op is RESHAPE and len(x.inputs) == 1:
        return context.build(node, node.op, (x.inputs[0],), node.attrs), "reshape of reshape -> reshape"
    return None


@rewrite(TRANSPOSE)
def _transpose_of_transpose(node, context):
    # transpose(transpose(x, a), b) -> transpose(x, a[b])
    x = node.inputs[0]
    if isinstance(x, Symbol) and x.op is TRANSPOSE:
        axes = tuple(x.attrs["axes"][a] for a in node.attrs["axes"])
        return context.build(node, node.op, (x.inputs[0],), {"axes": axes}), "transpose of transpose -> transpose"
    return None


@rewrite(SUM_TO)
def _sum_to_known_shape(node, context):
    # sum_to(x, like) with known sizes -> sum over the broadcast axes (then a reshape), so that
    # `like` need not stay alive until then
    x = node.inputs[0]
    if not isinstance(x, Symbol) or x._shape == node._shape:
        return None  # folding's or _identity's case
    shape = node._shape
    axes = summed_axes(x._shape, shape)
    if axes is None:
        return context.build(node, BROADCAST_TO, (x,), {"shape": shape}), "sum_to -> sum"
    total = context.build(node, SUM, (x,), {"axis": axes, "keepdims": True}) if axes else x
    if total._shape != shape:
        total = context.build(node, RESHAPE, (total,), {"shape": shape})
    return total, "sum_to -> sum"


@rewrite(*NARY.values())
def _nary_unit(node, context):
    # add_n/multiply_n(..., u, ...) -> without u, where u is -0.0 (for add) or 1 (for multiply):
    # a running result r that already has the node's dtype gives r+(-0.0) == r and r*1 == r exactly.
    # The running result is the node's own array from the second operand on (see _nary_forward);
    # for the first pair, the other operand must have the node's shape and dtype.
    base = _NARY_OPS[node.op]
    xs = node.inputs
    for k, u in enumerate(xs):
        if isinstance(u, Symbol) or np.ndim(u) or not (_is(u, 1) if base is MULTIPLY else
                                                         _is(u, 0, negative_zero=True)):
            continue
        if np.result_type(node._dtype, u) != node._dtype:
            continue  # u would promote the running result (a float64 scalar with float32 arrays)
        if k < 2 and not _same_type(node, xs[1 - k]):
            continue
        rest = xs[:k] + xs[k + 1:]
        if len(rest) == 1:
            return rest[0], f"{base.name}_n without its unit operand"
        op = NARY[base] if len(rest) > 2 else base
        return context.build(node, op, rest), f"{base.name}_n without its unit operand"
    return None


@rewrite(CONCATENATE)
def _stack_of_expanded(node, context):
    # concatenate([expand_dims(x1, a), ..., expand_dims(xn, a)], axis=a) -> stack([x1, ..., xn], axis=a):
    # the same array, one node instead of n+1 (jacobians and hessians assemble rows this way)
    if len(node.inputs) < 2:
        return None
    axis = node.attrs["axis"]
    parts = []
    for a in node.inputs:
        if not (isinstance(a, Symbol) and a.op is EXPAND_DIMS and tuple(a.attrs["axis"]) == (axis,)
                and context.uses.get(a) == 1 and a not in context.outputs):
            return None
        parts.append(a.inputs[0])
    return context.build(node, STACK, parts, {"axis": axis}), "concatenate of expand_dims -> stack"


_EXACT_WITH_SCALARS = (ADD, SUBTRACT, MULTIPLY, DIVIDE)


@rewrite(*_EXACT_WITH_SCALARS)
def _uniform_constant(node, context):
    # an arithmetic op reading a constant array whose entries are all one value (a broadcast seed
    # such as 1/n) reads that value as a typed scalar instead, when the other operand alone gives the
    # result its shape: the same numbers in the same dtype, and no array to keep. Only + - * /, which
    # IEEE rounds the same in every loop: NumPy takes other paths for some scalar operands (power's
    # fast squares, fmax's choice between -0.0 and 0.0), and n-ary nodes need their first pair
    # to have the result's shape
    for k, a in enumerate(node.inputs):
        data = a._data if isinstance(a, Symbol) and a.kind == "constant" else a
        if not isinstance(data, np.ndarray) or data.ndim == 0:
            continue
        others = node.inputs[:k] + node.inputs[k + 1:]
        value = _scalar(a)
        if value is None or broadcast_shapes(*map(_shape, others)) != node._shape:
            continue
        if not any(isinstance(b, Symbol) for b in others):  # folding's case
            continue
        inputs = node.inputs[:k] + (np.asarray(value, dtype=data.dtype)[()],) + node.inputs[k + 1:]
        return context.build(node, node.op, inputs, node.attrs), "uniform constant array -> scalar"
    return None


# the order in which a node's rules are tried
SIMPLIFICATIONS = [
    _uniform_constant, _multiply_by_one, _add_zero, _subtract_zero, _divide_by_one, _double_negation, _power,
    _identity, _reshape_of_reshape, _transpose_of_transpose, _sum_to_known_shape, _nary_unit, _stack_of_expanded,
]
_RULES = {}  # op -> its rules, in that order
for _rule in SIMPLIFICATIONS:
    for _matched in _rule.ops:
        _RULES.setdefault(_matched, []).append(_rule)


# ---------------------------------------------------------------- flattening associative chains


def _chain_operands(x, base, node, context):
    """The operands of `x` if it is a chain of op `base` that can join `node`'s: read only by `node`,
    of `node`'s shape and dtype (so that every step of the joined chain has that shape and dtype)."""
    if not isinstance(x, Symbol) or context.uses.get(x) != 1 or x in context.outputs or not _same_type(node, x):
        return None
    return list(x.inputs) if x.op is base or _NARY_OPS.get(x.op) is base else None


def _flatten(node, context):
    # (a+b)+c -> add_n(a, b, c), evaluated left to right: the same roundings in the same order.
    # c+(a+b) is left alone: its value does not depend on the order, but when both operands are NaN
    # the NaN that comes out (its sign bit) does
    base = _NARY_OPS.get(node.op) or (node.op if node.op in (ADD, MULTIPLY) else None)
    if base is None:
        return None
    operands = _chain_operands(node.inputs[0], base, node, context)
    if operands is None or len(operands) + len(node.inputs) - 1 > MAX_OPERANDS:
        return None
    operands += node.inputs[1:]
    return context.build(node, NARY[base], operands), f"flattened a chain of {base.name} into {base.name}_n"


# the passes, each `pass(program, report) -> how many nodes it rewrote`
fold_constants = partial(_rewrite, "fold_constants", _fold)
simplify = partial(_rewrite, "simplify", _simplify)
eliminate_common_subexpressions = partial(_rewrite, "cse", _merge_repeated)
flatten_associative = partial(_rewrite, "flatten", _flatten)
PASSES = [remove_dead_nodes, fold_constants, simplify, eliminate_common_subexpressions, flatten_associative]
