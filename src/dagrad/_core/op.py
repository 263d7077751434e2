"""Op declaration and dispatch.

Each primitive is declared once with `defop`: its NumPy forward, shape rule, vjp and jvp. The rules
are written with dagrad's own functions, which are polymorphic: on plain arrays they return plain
arrays (so a first-order backward runs the rules on raw NumPy values and allocates no Tensors), on
Tensors they record the graph (so the same rules serve `create_graph`, nested transforms and every
higher order).

vjp and jvp are either a tuple with one rule per input, `rule(g, out, *inputs, **attrs)` returning that
input's contribution (None for a non-differentiable input), or one joint rule: for vjp
`rule(g, out, *inputs, **attrs)` returning a tuple of cotangents, for jvp `rule(tangents, out, *inputs,
**attrs)` with None for inputs without a tangent. The engine reduces a broadcast cotangent to its
input's shape (vjp) and broadcasts a tangent to the output's shape (jvp), so no rule does that itself.

`saves` declares which values the vjp reads (beyond shapes and dtypes, which never change in place):
input numbers, "out" for the output, and the names of attributes that may hold a caller's arrays
(an index). What it reads is what a recorded node saves: the reverse sweep checks that none of it was
written in place since (the version counter), and a NumPy array the caller passed for it is copied
when the node is recorded, so that a later write into it cannot change the gradient. A flat tuple
holds for every input's rule; a tuple of tuples, one per rule, says what each rule reads (a
multiplication's rule for x reads y only). Undeclared (None) means everything. tests/test_saved_values.py
runs every rule with what it does not declare replaced by NaN, so a declaration is checked, not trusted.
"""

from __future__ import annotations

from sys import _getframe

import numpy as np

from .backends import check_dask_mixing, has_unknown_size, is_dask, is_foreign, mixing_error, same_unknown
from .errors import _PACKAGE_DIR, ShapeError, op_error, user_error
from .ir import build
from .shapes import broadcast_shapes, shape_of
from .tensor import Batched, Dual, Tensor, _grad_mode, _leaf, _new, next_seq

REGISTRY: dict[str, Op] = {}
_ndarray = np.ndarray
_SCALARS = (np.generic, Tensor)  # outputs that are no Dask array: scalars, a transform's boxes
_INSIDE = {}  # file name -> whether it is dagrad's own (provenance skips those frames)


class Op:
    """A primitive operation: plain data describing how to compute and differentiate it."""

    __slots__ = ("name", "forward", "vjp", "jvp", "shape", "differentiable", "function", "random", "fresh",
                 "shape_source", "dtype", "batch", "boxed_index", "bodies", "emit", "alias", "barrier",
                 "numpy_only", "validates", "saves", "reads", "array_attrs", "_saved", "copies_beside")

    def __init__(self, name, forward, vjp, jvp, shape, differentiable, random=False, fresh=False,
                 shape_source=False, dtype=None, batch=None, boxed_index=False, bodies=None, emit=None, alias=None,
                 barrier=False, numpy_only=False, saves=None, validates=False):
        self.name = name
        self.forward = forward
        self.vjp = vjp
        self.jvp = jvp
        self.shape = shape
        self.differentiable = differentiable
        self.function = None
        self.random = random  # draws new values at each run: never folded, merged or run on stand-ins
        self.fresh = fresh  # always returns a new array (beside ufuncs): generated code may write into it
        # takes unknown sizes from an extra last input (a node whose run-time shape fills them in)
        self.shape_source = shape_source
        # the dtype rule, dtype(*input dtypes, **attrs); None: found by running forward on stand-ins
        self.dtype = dtype
        # the batching rule of vmap, batch(op, values, batched, attrs) -> (out, out_batched): `values`
        # hold their batch on axis 0 where `batched` says so; None: the op runs once per example
        self.batch = batch
        # attrs["index"] may hold vmap's boxes (x[labels] with batched labels): dispatch finds them there
        self.boxed_index = boxed_index
        # an op holding graphs (control flow, dagrad/control.py): the names of the attributes that hold them
        # (each a body with `graph`, `inputs`, `outputs`, `nodes`); listings show them, passes optimise them
        self.bodies = bodies
        # how codegen writes the node itself instead of a call: emit(writer, node, args, target) -> lines
        self.emit = emit
        # returns its input number `alias` itself (a checkpoint's output, an optimization barrier): once
        # gradients are built the passes replace the node by that input (its `emit` writes `t = that input`)
        self.alias = alias
        # an alias the passes never fold, merge or replace (JAX's optimization_barrier): nodes computed
        # from it are never merged with those computed from its input (a checkpoint's recomputation)
        self.barrier = barrier
        # its forward runs code only NumPy arrays go through (LAPACK, SciPy, a write into a NumPy array):
        # given a Dask array it would load it whole, silently, so a Dask value is refused instead
        self.numpy_only = numpy_only
        # its forward raises on some run-time values (an index out of range, a singular matrix): a node of it
        # whose value no output reads still runs, so that every path raises where eager code does. True, or
        # for an index a function of the node's inputs and attrs giving its cheaper check, the integer arrays
        # with the sizes and numbers of the axes they index [(array, size, axis)] (None: a size is unknown),
        # which compile/passes.py runs in place of a node nothing reads
        self.validates = validates
        # what the vjp reads (see the module docstring); `reads`: per input, the frozenset its rule reads
        # (ints: inputs, "out", attribute names), or None where every rule reads the same (`saves` flat)
        self.saves = saves
        per_rule = bool(saves) and all(type(s) is tuple for s in saves)
        self.reads = tuple(frozenset(s) for s in saves) if per_rule else None
        keys = [k for s in saves for k in s] if per_rule else saves or ()
        # the attributes in which recording looks for a caller's arrays to copy: None for every one (undeclared)
        names = dict.fromkeys(k for k in keys if type(k) is str and k != "out")
        self.array_attrs = None if saves is None else tuple(names)
        self._saved = {}  # needed -> saved(needed), computed once each
        # the binary fast path's question, answered once: whether input 1 is read when only input 0 needs a
        # gradient, and input 0 when only input 1 does
        self.copies_beside = tuple(saved is None or 1 - i in saved
                                   for i, saved in enumerate((self.saved((0,)), self.saved((1,)))))

    def saved(self, needed):
        """What the recorded node's vjp reads when the gradients of the inputs numbered `needed` (a tuple)
        are computed: a frozenset (ints, "out", attribute names), or None for everything."""
        if self.saves is None:
            return None
        found = self._saved.get(needed)
        if found is None:
            reads = self.reads
            found = self._saved[needed] = frozenset(self.saves) if reads is None else frozenset().union(
                *(reads[i] for i in needed if i < len(reads)))
        return found

    def __repr__(self):
        return f"<op {self.name}>"


def defop(name, forward, *, vjp=None, jvp=None, shape=None, nargs=None, fresh=False, shape_source=False, dtype=None,
          batch=None, boxed_index=False, numpy_only=False, saves=None, validates=False):
    """Declares a primitive op and returns it; `op.function` is its user-facing function.

    `forward(*arrays, **attrs)` computes on NumPy values. `vjp`/`jvp` and `saves` as in the module
    docstring; an op with neither is non-differentiable (e.g. comparisons). `nargs` (1 or 2) selects a
    fast calling convention for elementwise ops without attributes. `fresh`, `shape_source`, `dtype`,
    `batch` and `boxed_index`, `numpy_only`, `validates`: see Op (generic batching rules are in
    _core/batching.py).
    """
    if name in REGISTRY:
        raise user_error(ValueError, "defop", f"op {name!r} is declared twice")
    if (vjp is None) != (jvp is None):
        raise user_error(ValueError, "defop", f"op {name!r}: declare both vjp and jvp, or neither")
    _check_saves(name, saves, vjp)
    op = Op(name, forward, vjp, jvp, shape, vjp is not None, fresh=fresh, shape_source=shape_source, dtype=dtype,
            batch=batch, boxed_index=boxed_index, numpy_only=numpy_only, saves=saves, validates=validates)
    # The unary and binary functions take eager Tensors and plain values without `apply`: with
    # only the general function workload (a) costs 6.44 instead of 5.29 us/op (0.67 instead of
    # 0.55 of PyTorch's, over the 0.6 target), measured 2026-11-25
    op.function = {1: _unary_function, 2: _binary_function}.get(nargs, _general_function)(op)
    op.function.__name__ = name
    op.function.__qualname__ = name
    op.function.op = op
    REGISTRY[name] = op
    return op


def _check_saves(name, saves, vjp):
    """Refuses a `saves` declaration that is not a tuple of what rules can read, or one per rule."""
    if saves is None:
        return
    per_rule = bool(saves) and type(saves) is tuple and all(type(s) is tuple for s in saves)
    if type(saves) is not tuple or (per_rule and (type(vjp) is not tuple or len(saves) != len(vjp))):
        raise user_error(TypeError, "defop", f"op {name!r}: saves must be a tuple of input numbers, 'out' and "
                         f"attribute names, or one such tuple per vjp rule, got {saves!r}")
    for key in (k for s in saves for k in s) if per_rule else saves:
        if not (type(key) is str or (type(key) is int and key >= 0)):
            raise user_error(TypeError, "defop", f"op {name!r}: saves holds {key!r}, neither an input number, "
                             "'out' nor an attribute name")


def public(op):
    """Decorator: the decorated wrapper (which normalises arguments into attrs) becomes the
    op's user-facing function in place of the generic one `defop` made."""

    def register(function):
        op.function = function
        function.op = op
        return function

    return register


# Python types an op may take beside Tensors without a look at their dtype
_PLAIN = frozenset((float, int, bool, complex, type(None), np.float64, np.float32, np.int64, np.complex128))


def check_plain(op, value):
    """Refuses a non-Tensor operand of object dtype (values no op computes with). Strings need no
    check here: NumPy refuses them itself."""
    if isinstance(value, (np.ndarray, np.generic)):
        kind = value.dtype.kind
    elif isinstance(value, (list, tuple)):
        try:
            kind = np.asarray(value).dtype.kind
        except Exception:  # a ragged or odd list: the forward's own error is the clearer one
            return
    else:
        return
    if kind == "O":
        raise user_error(TypeError, op.name, "an operand of dtype object (object arrays are not supported; dagrad "
                         "computes on bool, integer, floating-point and complex values)", value)


def refuse_lazy(op, values):
    """Refuses a Dask array among `values` for an op whose forward would compute it (`Op.numpy_only`)."""
    for v in values:
        if is_dask(v):
            raise user_error(TypeError, op.name, "runs NumPy-only code (LAPACK, SciPy, or a write into a NumPy array) "
                             "that would load the whole Dask array; it has no lazy form yet: compute the operand "
                             "first (.compute()) if it fits in memory", *values)


def _op_error(op, values, err, attrs=None):
    """The error for an exception raised inside `op`'s forward: operands that mix CuPy with NumPy or Dask
    arrays (which CuPy refuses) get an error naming both array types; a ValueError for shapes the op's
    shape rule refuses is a ShapeError (a ValueError, as NumPy's, and a TypeError, as JAX's); others are
    `op_error`'s. Only ever computed after a failure, so the check costs NumPy's path nothing."""
    mixed = mixing_error(op.name, values)
    if mixed is not None:
        return mixed
    if type(err) is ValueError and op.shape is not None:
        try:
            op.shape(*[shape_of(v) for v in values], **(attrs or {}))
        except Exception:
            return op_error(op.name, values, err, ShapeError)
    return op_error(op.name, values, err)


def _call_forward(op, values, attrs):
    if op.numpy_only:
        refuse_lazy(op, values)
    try:
        return op.forward(*values) if attrs is None else op.forward(*values, **attrs)
    except Exception as err:
        raise _op_error(op, values, err, attrs) from err


# Anomaly mode (dg.detect_anomaly, _core/anomaly.py) turns these on through `set_anomaly_checks`:
# a plain global flag, because every op reads it (an attribute of an object cost about 2% in workload (a))
_ANOMALY = False
_CHECK_FORWARD = _CHECK_GRADIENT = None


def set_anomaly_checks(on, check_forward, check_gradient):
    """Turns the checks of anomaly mode on or off for every thread (each check asks its own thread)."""
    global _ANOMALY, _CHECK_FORWARD, _CHECK_GRADIENT
    _CHECK_FORWARD, _CHECK_GRADIENT = check_forward, check_gradient
    _ANOMALY = on


def anomaly_checks():
    """The gradient check to call in the reverse sweep, or None when anomaly mode is off."""
    return _CHECK_GRADIENT if _ANOMALY else None


def _result(op, out, inputs, attrs, record, level=0):
    """An op's result box at `level`: it records op, inputs and attrs when `record`."""
    if type(out) is not _ndarray:
        if _ANOMALY and not isinstance(out, Tensor):  # the innermost level computed `out` itself
            _CHECK_FORWARD(op, out, inputs)
        if not isinstance(out, _SCALARS):  # Dask accepts CuPy beside NumPy lazily: caught here, not at compute
            check_dask_mixing(op.name, out, [a._value if isinstance(a, Tensor) else a for a in inputs])
    elif _ANOMALY:
        _CHECK_FORWARD(op, out, inputs)
    t = _new(Tensor)
    t._value = out
    t._grad = None
    t._level = level
    if record and _grad_mode.enabled:
        t.op = op
        t.inputs = inputs
        t.attrs = attrs
        t._requires_grad = True
        t._seq = next_seq()
        # provenance: the innermost frame outside dagrad. Files are classified once each (a code
        # object hashes slowly, its file name does not), and the instruction offset is kept rather
        # than the line, which costs more to compute and is needed only when someone looks
        frame = _getframe(2)  # _result's caller is dagrad's own (an op function or apply)
        code = frame.f_code
        inside = _INSIDE.get(code.co_filename)
        while inside is not False:
            if inside is None:
                inside = _INSIDE[code.co_filename] = code.co_filename.startswith(_PACKAGE_DIR)
                continue
            frame = frame.f_back
            if frame is None:
                break
            code = frame.f_code
            inside = _INSIDE.get(code.co_filename)
        if frame is None:
            t._code = None
        else:
            t._code = code
            t._line = frame.f_lasti
    else:
        t.op = t.inputs = t.attrs = None
        t._requires_grad = False
        t._seq = 0
    return t


def _owned(value):
    """An operand as a recorded node keeps it: a copy of an array or list the caller passed (and may
    write into before backward), as PyTorch converts a NumPy operand into a tensor of its own."""
    if isinstance(value, _ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        try:
            return np.array(value)
        except Exception:  # a ragged or odd list: kept as it is (the forward took it, the rule will too)
            return value
    return value.copy() if is_foreign(value) else value  # a CuPy array copied on its GPU; a Dask one shallowly


_FIXED = _PLAIN | {slice, type(Ellipsis), str}  # attribute values no one can change in place


def _owned_attr(value):
    """An attribute (an index: an array, or a tuple of parts) with copies of the arrays it holds."""
    kind = type(value)
    if kind in _FIXED:
        return value
    if kind is tuple:
        return value if all(type(p) in _FIXED for p in value) else tuple(_owned_attr(p) for p in value)
    return value.copy() if isinstance(value, _ndarray) or is_foreign(value) else value


def saved_copies(op, args, attrs, level=0):
    """args and attrs for a node about to be recorded, with copies of the caller's arrays (not Tensors: the
    version counter guards those) among what its vjp reads (`Op.saves`): the caller may write into them
    between the forward pass and backward (PyTorch converts NumPy operands into its own tensors). Only
    recorded nodes pay for the copies, and only for what their rules read (`t + a` copies nothing)."""
    if op.reads is None:  # undeclared, or every rule reads the same: no need to ask which inputs need gradients
        saved = None if op.saves is None else op.saved(())
    else:
        saved = op.saved(tuple(i for i, a in enumerate(args)
                               if isinstance(a, Tensor) and a._level == level and a._requires_grad))
    return owned_copies(args, attrs, saved, op.array_attrs)


def owned_copies(args, attrs, saved=None, names=None):
    """args and attrs with copies of the caller's arrays: among the inputs numbered in `saved` (see
    Op.saved; None: all of them), and in the attributes `names` (None: all of them)."""
    copied = None
    for i, a in enumerate(args):
        if (saved is None or i in saved) and not isinstance(a, Tensor) and type(a) not in _PLAIN:
            owned = _owned(a)
            if owned is not a:
                copied = copied or list(args)
                copied[i] = owned
    if copied is not None:
        args = tuple(copied)
    return args, owned_attrs(attrs, names)


def owned_attrs(attrs, names=None):
    """attrs with copies of the caller's arrays held in the attributes `names` (None: all of them)."""
    if type(attrs) is dict:
        for name in tuple(attrs) if names is None else names:
            value = attrs.get(name)
            if type(value) in _FIXED:
                continue
            owned = _owned_attr(value)
            if owned is not value:
                attrs = {**attrs, name: owned}
    return attrs


def apply(op, args, attrs=None):
    """Runs `op` on `args` (a tuple), dispatching on the highest transform level present."""
    # the common case in one pass: eager Tensors (level 0, not a static graph's) and plain values
    values = []
    boxed = record = operand = False
    for a in args:
        if isinstance(a, Tensor):
            if a._level or a._symbolic:
                return _apply_traced(op, args, attrs)
            boxed = True
            record = record or a._requires_grad
            values.append(a._value)
        else:
            kind = type(a)
            if kind not in _PLAIN:
                if kind is not np.ndarray or a.dtype.kind == "O":
                    check_plain(op, a)
                operand = True  # an array or list the caller may change later: a recorded node copies it
            values.append(a)
    if op.boxed_index and _index_level(attrs):  # a vmap box in the index, over an eager tensor or an array
        return _apply_traced(op, args, attrs)
    if not boxed:
        return _call_forward(op, args, attrs)
    out = _call_forward(op, values, attrs)
    record = record and op.differentiable
    if record and _grad_mode.enabled:  # the caller's arrays that the node's rules read: copied
        if operand:
            args, attrs = saved_copies(op, args, attrs)
        elif attrs is not None and op.array_attrs != ():
            attrs = owned_attrs(attrs, op.array_attrs)
    return _result(op, out, args, attrs, record)


def _apply_traced(op, args, attrs):
    """apply() where a transform's box or a static graph's node is among the arguments."""
    top = None
    symbolic = operand = False
    for a in args:
        if isinstance(a, Tensor):
            symbolic = symbolic or a._symbolic
            if top is None or a._level > top._level:
                top = a
        elif type(a) not in _PLAIN:
            if type(a) is not np.ndarray or a.dtype.kind == "O":
                check_plain(op, a)
            operand = True
    if op.boxed_index:
        index_level = _index_level(attrs)
        if index_level > (0 if top is None else top._level):
            # an index mapped by vmap over a value that is not: the value is the same for every example
            return _apply_batched(op, args, attrs, index_level)
    if top is None:
        return _call_forward(op, args, attrs)
    level = top._level
    # a static graph (level 0), or a body of control flow being traced (its Symbols have the body's level)
    if symbolic and (level == 0 or top._symbolic):
        return build(op, args, attrs)
    if type(top) is Dual:
        return _apply_forward_mode(op, args, attrs, level)
    if type(top) is Batched:
        return _apply_batched(op, args, attrs, level)
    values = tuple(a._value if isinstance(a, Tensor) and a._level == level else a for a in args)
    record = op.differentiable and any(isinstance(a, Tensor) and a._level == level and a._requires_grad for a in args)
    # level 0 holds raw values; a higher level's values may be boxes of lower levels
    out = _call_forward(op, values, attrs) if level == 0 else _apply_traced(op, values, attrs)
    if record and _grad_mode.enabled:
        if operand:
            args, attrs = saved_copies(op, args, attrs, level)
        elif attrs is not None and op.array_attrs != ():
            attrs = owned_attrs(attrs, op.array_attrs)
    return _result(op, out, args, attrs, record, level)


def _index_level(attrs):
    """The highest vmap level among the parts of attrs["index"], 0 if it holds no box."""
    index = attrs["index"]
    level = 0
    for part in index if type(index) is tuple else (index,):
        if isinstance(part, Tensor) and part._level > level:
            level = part._level
    return level


class Mapped:
    """An index part mapped by the vmap being applied (its value holds the batch on axis 0), as a
    batching rule receives it in attrs["index"]."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _apply_batched(op, args, attrs, level):
    """apply() where a vmap box of `level` is the highest: the op's batching rule, else a loop over examples."""
    if op.shape is broadcast_shapes and attrs is None:
        # the common case of an elementwise op on mapped arrays of one rank (and numbers): NumPy directly,
        # without the rule's alignment (eager vmap(grad) of a small MLP: 605 instead of 684 us of
        # dispatch, measured 2026-11-25)
        values = []
        rank = None
        for a in args:
            if type(a) is Batched and a._level == level and type(a._value) is np.ndarray:
                if rank is None:
                    rank = a._value.ndim
                elif a._value.ndim != rank:
                    break
                values.append(a._value)
            elif type(a) in _PLAIN:
                values.append(a)
            else:
                break
        else:
            return _leaf(_call_forward(op, values, None), False, level, Batched)
    batched = [isinstance(a, Tensor) and a._level == level for a in args]
    # a constant eager Tensor (an unmapped array vmap made one of) as its array: the examples' values stay arrays,
    # as they would have been (eager vmap(grad) of an MLP: 10% more time otherwise, measured 2026-11-29)
    values = [a._value if b or is_constant(a) else a for a, b in zip(args, batched)]
    if op.boxed_index:
        index = attrs["index"]
        parts = tuple(Mapped(_index_values(p._value)) if isinstance(p, Tensor) and p._level == level else p
                      for p in (index if type(index) is tuple else (index,)))
        mapped = [p.value for p in parts if type(p) is Mapped]
        attrs = {**attrs, "index": parts if type(index) is tuple else parts[0]}
        if mapped and not batched[0]:
            values[0] = batch_broadcast(values[0], shape_of(mapped[0])[0])
            batched[0] = True
    if op.batch is None:
        out, out_batched = batch_loop(op, values, batched, attrs), True
    else:
        out, out_batched = op.batch(op, values, batched, attrs or {})
    return _leaf(out, False, level, Batched) if out_batched else out


def is_constant(x):
    """Whether x is an eager Tensor that records nothing: not a transform's box or a graph's node, and needing no
    gradient (its array stands for it wherever no Tensor is wanted)."""
    return type(x) is Tensor and not x._level and not x._requires_grad and not x._symbolic


def _index_values(value):
    """A mapped index part's values one level down: an eager Tensor's array (an index has no derivative, and the
    forwards, np.add.at among them, take arrays), boxes of lower levels and graph nodes as they are."""
    return value._value if isinstance(value, Tensor) and not value._level and not value._symbolic else value


def batch_broadcast(value, size):
    """`value`, the same for every example, with a batch axis of `size` in front (a view for arrays)."""
    # NumPy's function: a view for arrays; dagrad's broadcast_to for Tensors (through __array_function__)
    return np.broadcast_to(np.expand_dims(value, 0), (size, *shape_of(value)))


def batch_loop(op, values, batched, attrs):
    """An op without a batching rule, run once per example and stacked: slower, never wrong."""
    sizes = {shape_of(v)[0] for v, b in zip(values, batched) if b}
    size = sizes.pop()
    if size is None:
        raise user_error(ValueError, "vmap", f"{op.name} has no batching rule, and the batch size is unknown "
                         "until the graph runs; give the mapped axis a size")
    rows = [apply(op, tuple(v[k] if b else v for v, b in zip(values, batched)), _example_attrs(op, attrs, k))
            for k in range(size)]
    shapes = [shape_of(r) for r in rows]
    if any(shape != shapes[0] for shape in shapes) and not any(has_unknown_size(shape) for shape in shapes):
        differ = next(k for k, shape in enumerate(shapes) if shape != shapes[0])
        raise user_error(ValueError, "vmap", f"{op.name} gives the examples results of different shapes (example 0: "
                         f"{tuple(shapes[0])}, example {differ}: {tuple(shapes[differ])}), and a batch holds one shape "
                         "for all its examples. A result whose size depends on the values (a boolean mask's x[m], as "
                         "JAX refuses it under vmap) has no batched form: keep the shape with dg.where(m, x, 0), or "
                         "loop over the examples")
    return np.stack(rows)


def _example_attrs(op, attrs, k):
    """attrs for example `k`: a mapped index part gives its k-th entry."""
    if not op.boxed_index:
        return attrs
    index = attrs["index"]
    parts = tuple(p.value[k] if type(p) is Mapped else p for p in (index if type(index) is tuple else (index,)))
    return {**attrs, "index": parts if type(index) is tuple else parts[0]}


def make_dual(primal, tangent, level):
    d = _leaf(primal, False, level, Dual)
    d._tangent = tangent
    return d


def _apply_forward_mode(op, args, attrs, level):
    boxed = [type(a) is Dual and a._level == level for a in args]
    primals = tuple(a._value if b else a for a, b in zip(args, boxed))
    tangents = [a._tangent if b else None for a, b in zip(args, boxed)]
    out = apply(op, primals, attrs)
    if not op.differentiable:
        return out
    kw = attrs or {}
    rules = op.jvp
    if type(rules) is tuple:
        tangent = None
        for rule, t in zip(rules, tangents):
            if t is None or rule is None:
                continue
            part = rule(t, out, *primals, **kw)
            tangent = part if tangent is None else tangent + part
    else:
        tangent = rules(tangents, out, *primals, **kw)
    if tangent is None:
        return out
    out_shape = shape_of(out)
    # a rule gave an input's tangent of a broadcast op (unknown sizes of Dask's x[mask] on the same axes count
    # as equal: a tangent computed from x[mask] has its blocks)
    if shape_of(tangent) != out_shape and not same_unknown(shape_of(tangent), out_shape):
        # NumPy's function: on an array a view, on a Tensor or Symbol dagrad's differentiable
        # broadcast_to through __array_function__ (its module, _core/structural.py, imports this one)
        tangent = np.broadcast_to(tangent, out_shape)
    return make_dual(out, tangent, level)


def _general_function(op):
    def function(*args, **attrs):
        return apply(op, args, attrs or None)

    return function


def _checked_forward(op):
    """op.forward, refusing Dask values first when the op is NumPy-only (other ops pay nothing)."""
    forward = op.forward
    if not op.numpy_only:
        return forward

    def checked(*values):
        refuse_lazy(op, values)
        return forward(*values)

    return checked


def _unary_function(op):
    forward = _checked_forward(op)
    differentiable = op.differentiable

    def function(x):
        if type(x) is Tensor and x._level == 0:
            try:
                out = forward(x._value)
            except Exception as err:
                raise _op_error(op, (x._value,), err) from err
            return _result(op, out, (x,), None, differentiable and x._requires_grad)
        if not isinstance(x, Tensor):
            try:
                return forward(x)
            except Exception as err:
                raise _op_error(op, (x,), err) from err
        return apply(op, (x,))

    return function


def _binary_function(op):
    forward = _checked_forward(op)
    differentiable = op.differentiable
    # whether a recorded node keeps a copy of the caller's array a (b) beside a Tensor b (a) that needs a
    # gradient: the Tensor's rule reads it (see saved_copies)
    copies_a, copies_b = differentiable and op.copies_beside[1], differentiable and op.copies_beside[0]

    def function(a, b):
        ta = type(a) is Tensor
        tb = type(b) is Tensor
        # fast path: eager Tensors and plain values only (no transform boxes)
        if ta and a._level == 0:
            eager = b._level == 0 if tb else not isinstance(b, Tensor)
        elif tb and b._level == 0:
            eager = not isinstance(a, Tensor)
        else:
            eager = False
        if eager:
            va = a._value if ta else a
            vb = b._value if tb else b
            if not ta and type(a) not in _PLAIN:  # an array or list: b is the Tensor
                check_plain(op, a)
                if copies_a and b._requires_grad and _grad_mode.enabled:
                    a = _owned(a)
            if not tb and type(b) not in _PLAIN:
                check_plain(op, b)
                if copies_b and a._requires_grad and _grad_mode.enabled:
                    b = _owned(b)
            try:
                out = forward(va, vb)
            except Exception as err:
                raise _op_error(op, (va, vb), err) from err
            record = differentiable and ((ta and a._requires_grad) or (tb and b._requires_grad))
            return _result(op, out, (a, b), None, record)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            try:
                return forward(a, b)
            except Exception as err:
                raise _op_error(op, (a, b), err) from err
        return apply(op, (a, b))

    return function
