"""Every path gives the same answer (SPEC): one program, every way dagrad can run it, every kind of input.

Three tables drive the product, each cheap to extend:

- PATHS: how a program runs (eager, backward, grad, vjp, jvp, vmap over several in_axes, hessian, each of
  those under dg.compile, a static graph in a Session, an exported module). A path returns a `Result`
  (value, gradients, tangent, Hessian-vector product: what it computes) or raises.
- PROGRAMS: what runs: every op-table row (tests/op_table.py) and hand-written programs (indexing,
  gathers, masks, control flow, custom rules, losses). A program names its arguments' roles: floats
  (differentiated), indices into an axis of a given size, boolean masks.
- KINDS: how the arguments come (Python float and int, 0-d arrays, float64 and float32 arrays, Tensors,
  negative and out-of-range indices).

The reference is eager dagrad (its value checked against NumPy's where the program has one; its gradient
from `dg.grad`, checked against central differences for the hand-written programs, the op rows being
checked so in tests/test_ops.py). Every path must give the reference's values, gradients and dtypes, or,
where eager raises, raise the same exception type: a path that returns a number where eager raises is a
silent wrong result. A path that cannot take a program says so in REFUSALS, with the error it raises
(asserted); a defect being fixed is a strict xfail in KNOWN (delete the entry once fixed).

The default run takes one input kind per program (`fast_kind`); `-m paths_full` runs every program x
path x applicable kind, and hypothesis draws shapes, dtypes and indices of the indexing programs.
docs/architecture.md ("Every path gives the same answer") says how to add a path, a program, a kind.
"""

from __future__ import annotations

import functools
import importlib.util
import tempfile
import zlib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path as FilePath

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dagrad as dg
import dagrad.numpy as dnp
from op_table import CASES, COMPOSITES
from test_static_ops import _ids, _unique

B = 3  # examples in a vmap batch


# ---------------------------------------------------------------- programs


@dataclass(frozen=True)
class Arg:
    """One argument of a program: a float (differentiated), an index into an axis of `size`, or a mask."""

    shape: tuple = ()
    low: float = -2.0
    high: float = 2.0
    size: int | None = None  # an integer index into an axis of this size
    mask: bool = False

    @property
    def role(self):
        return "mask" if self.mask else "float" if self.size is None else "index"


@dataclass
class Program:
    name: str
    f: object  # f(*args) -> one array
    args: tuple  # Arg per argument
    ref: object = None  # the same with NumPy, where there is one
    differentiable: bool = True  # False: every gradient is zero (comparisons, argmax, stop_gradient)
    tol: dict = field(default_factory=dict)
    fast: str | None = None  # the input kind of the default run (None: one chosen by the name)
    raises: type | None = None  # a mistake (a wrong custom rule, complex logits): eager must raise this
    raises_in: str = "value"  # where: computing the "value" or the "gradient"
    values: object = None  # values(example) -> the arguments before a kind converts them (None: random)

    @property
    def diff(self):
        """Positions of the differentiated arguments: the floats."""
        return tuple(k for k, a in enumerate(self.args) if a.role == "float")


def _op_program(name, c):
    return Program(f"op:{name}", c.f, tuple(Arg(s, c.low, c.high) for s in c.shapes), c.ref, c.differentiable,
                   dict(c.tol))


OP_ROWS = _unique(CASES + COMPOSITES)
PROGRAMS = {p.name: p for p in (_op_program(i, c) for i, c in zip(_ids(OP_ROWS), OP_ROWS))}


def program(name, args, ref=None, **kw):
    """Decorator: adds the function as a hand-written program."""

    def add(f):
        PROGRAMS[name] = Program(name, f, tuple(args), ref, **kw)
        return f

    return add


def _np_index(x, *index):
    return np.asarray(x)[index]


program("x[i]", [Arg((5,)), Arg((), size=5)], _np_index, fast="negative_index")(lambda x, i: x[i])
program("x[i] rows", [Arg((4, 3)), Arg((3,), size=4)], _np_index, fast="out_of_range_index")(lambda x, i: x[i])
program("x[i, j]", [Arg((4, 3)), Arg((), size=4), Arg((), size=3)], _np_index, fast="python_int")(
    lambda x, i, j: x[i, j])
program("x[:, i]", [Arg((3, 4)), Arg((2,), size=4)], lambda x, i: np.asarray(x)[:, i], fast="negative_index")(
    lambda x, i: x[:, i])
program("x[i] unread", [Arg((5,)), Arg((2,), size=5)],  # only x[i]'s shape is used: its index is checked all the same
        lambda x, i: np.ones_like(np.asarray(x)[i]) * np.sum(x), fast="out_of_range_index")(
    lambda x, i: dg.ones_like(x[i]) * dg.sum(x))
program("take", [Arg((4, 3)), Arg((2,), size=3)], lambda x, i: np.take(x, i, axis=1), fast="out_of_range_index")(
    lambda x, i: dnp.take(x, i, axis=1))
program("take_along_axis", [Arg((3, 4)), Arg((3, 2), size=4)], lambda x, i: np.take_along_axis(x, i, 1),
        fast="negative_index")(lambda x, i: dnp.take_along_axis(x, i, 1))
program("x[mask]", [Arg((5,)), Arg((5,), mask=True)], lambda x, m: np.asarray(x)[m], fast="float64")(
    lambda x, m: x[m])
program("x[x > 0] sum", [Arg((6,))], lambda x: np.sum(np.asarray(x)[np.asarray(x) > 0]), fast="float32")(
    lambda x: dg.sum(x[x > 0]))


def _np_cond(x, w):
    return np.sin(x) * w if np.sum(x) > 0 else np.cos(x) - w


program("cond", [Arg((3,)), Arg(())], _np_cond, fast="python_float")(
    lambda x, w: dg.cond(dg.sum(x) > 0, lambda x, w: dg.sin(x) * w, lambda x, w: dg.cos(x) - w, x, w))


def _np_fori(w, c):
    for i in range(4):
        c = np.sin(c * w + i)
    return c


program("fori_loop", [Arg(()), Arg((3,))], _np_fori, fast="python_float")(
    lambda w, c: dg.fori_loop(0, 4, lambda i, c: dg.sin(c * w + i), c))


def _np_while(x):
    while np.sum(x) < 20.0:
        x = x * 1.5 + np.sin(x)
    return x


program("while_loop", [Arg((2,), 1.0, 2.0)], _np_while, fast="float64")(
    lambda x: dg.while_loop(lambda v: dg.sum(v) < 20.0, lambda v: v * 1.5 + dg.sin(v), x))


def _np_scan(w, h, xs):
    ys = []
    for x in xs:
        h = np.tanh(w @ h + x)
        ys.append(h * 2.0)
    return np.stack(ys) + h


def _scan(w, h, xs):
    h, ys = dg.scan(lambda h, x: (dg.tanh(w @ h + x), dg.tanh(w @ h + x) * 2.0), h, xs)
    return ys + h


program("scan", [Arg((3, 3), -0.6, 0.6), Arg((3,)), Arg((4, 3))], _np_scan, fast="float32")(_scan)


def _np_scan_scaled(w, xs):
    c = np.zeros(2)
    for x in xs:
        c = np.sin(c * w + x)
    return c


program("scan scaled", [Arg(()), Arg((3, 2))], _np_scan_scaled, fast="python_float")(
    lambda w, xs: dg.scan(lambda c, x: (dg.sin(c * w + x), None), np.zeros(2), xs)[0])


class Cube(dg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g


program("Function", [Arg((3,))], lambda x: 2 * np.asarray(x) ** 3 - x, fast="float32")(
    lambda x: Cube.apply(x) * 2.0 - x)


@dg.custom_vjp
def _sin_times(x, y):
    return np.sin(x) * y


_sin_times.defvjp(lambda x, y: (np.sin(x) * y, (x, y)), lambda saved, g: (g * dnp.cos(saved[0]) * saved[1],
                                                                         dg.sum(g * dnp.sin(saved[0]))))
program("custom_vjp", [Arg((3,)), Arg(())], lambda x, y: np.sin(x) * y, fast="python_float")(
    lambda x, y: _sin_times(x, y))


@dg.custom_jvp
def _softplus(x):
    return np.logaddexp(x, 0.0)


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softplus(x), t * dg.sigmoid(x)


program("custom_jvp", [Arg((4,))], lambda x: np.logaddexp(x, 0.0), fast="tensor")(lambda x: _softplus(x))

_cosh = dg.primitive(np.cosh)
dg.defvjp(_cosh, lambda ans, x: lambda g: g * dnp.sinh(x))
program("defvjp", [Arg((2, 2))], np.cosh, fast="float32")(lambda x: _cosh(x))


class Float32Twice(dg.Function):
    """A forward that casts to float32: the gradient still takes its input's dtype (SPEC, as PyTorch)."""

    @staticmethod
    def forward(ctx, x):
        return (x * 2).astype(np.float32)

    @staticmethod
    def backward(ctx, g):
        return g * 2


program("Function to float32", [Arg((3,))], lambda x: (np.asarray(x) * 2).astype(np.float32), fast="float64")(
    lambda x: Float32Twice.apply(x))

class SignedSquare(dg.Function):
    """Leaves a number computed from its input's values on the ctx: right eagerly and under eager transforms;
    where forward runs on stand-ins (dg.compile of a gradient, a static graph) it would be baked in, so it is
    refused there."""

    @staticmethod
    def forward(ctx, x):
        ctx.sign = 1.0 if x.sum() >= 0 else -1.0
        ctx.save_for_backward(x)
        return ctx.sign * x**2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * ctx.sign * x * g


program("Function ctx number", [Arg((3,))], lambda x: np.sign(np.sum(x)) * np.asarray(x) ** 2, fast="float64")(
    lambda x: SignedSquare.apply(x))

_sin_of_first = dg.primitive(lambda x, y: np.sin(x))  # y is not used: a rule returning None (zero) for it is right
dg.defvjp(_sin_of_first, lambda ans, x, y: lambda g: g * dnp.cos(x), lambda ans, x, y: lambda g: None)
program("defvjp None", [Arg((3,)), Arg((3,))], lambda x, y: np.sin(x), fast="float64")(
    lambda x, y: _sin_of_first(x, y))


@dg.custom_vjp
def _summed_gradient(x):
    return np.sin(x)


_summed_gradient.defvjp(lambda x: (np.sin(x), x), lambda x, g: (dg.sum(g * dnp.cos(x)),))  # shape () for (3,): wrong
program("custom_vjp wrong shape", [Arg((3,))], raises=ValueError, raises_in="gradient", fast="float64")(
    lambda x: _summed_gradient(x))

_sin_summed = dg.primitive(np.sin)
dg.defvjp(_sin_summed, lambda ans, x: lambda g: dg.sum(g * dnp.cos(x)))  # shape () for (3,): wrong
program("defvjp wrong shape", [Arg((3,))], raises=ValueError, raises_in="gradient", fast="float64")(
    lambda x: _sin_summed(x))


def _np_cross_entropy(z, labels):
    if np.any(np.asarray(labels) < 0):
        raise IndexError("a class index is never negative (PyTorch's rule; NumPy would count from the end)")
    z = np.asarray(z)
    shifted = z - z.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


program("cross_entropy", [Arg((4, 3)), Arg((4,), size=3)], _np_cross_entropy, fast="out_of_range_index")(
    lambda z, labels: dg.nn.functional.cross_entropy(z, labels))
program("nll_loss", [Arg((4, 3)), Arg((4,), size=3)], _np_cross_entropy, fast="negative_index")(
    lambda z, labels: dg.nn.functional.nll_loss(dg.log_softmax(z, axis=1), labels, reduction="mean"))


def _np_embedding(w, i):
    if np.any(np.asarray(i) < 0):
        raise IndexError("an embedding index is never negative (PyTorch's rule; NumPy would count from the end)")
    return np.asarray(w)[i]


program("embedding", [Arg((5, 3)), Arg((2, 2), size=5)], _np_embedding, fast="negative_index")(
    lambda w, i: dg.nn.functional.embedding(i, w))


def _np_mlp(w1, b1, w2, x, labels):
    return _np_cross_entropy(np.tanh(x @ w1 + b1) @ w2, labels)


_LABELS = np.array([2, 0, 1, 1])  # a constant: a wrong label would be a second mistake
program("cross_entropy complex", [Arg((4, 3))], raises=TypeError, fast="float64")(
    lambda z: dg.nn.functional.cross_entropy(z * (1 + 1j), _LABELS))
program("mlp loss", [Arg((3, 4)), Arg((4,)), Arg((4, 2)), Arg((5, 3)), Arg((5,), size=2)], _np_mlp, fast="float32")(
    lambda w1, b1, w2, x, labels: dg.nn.functional.cross_entropy(dg.tanh(x @ w1 + b1) @ w2, labels))

HAND_WRITTEN = [name for name in PROGRAMS if not name.startswith("op:")]


# ---------------------------------------------------------------- input kinds


def _integer_in(arg):
    """The integer nearest the middle of a float argument's range, or None if the range holds none."""
    k = round((arg.low + arg.high) / 2)
    return k if arg.low <= k <= arg.high else None


def _plain(arg, v, dtype=np.float64):
    """A float64 (or `dtype`) array, a NumPy scalar for a 0-d float or index argument."""
    if arg.role == "float":
        v = np.asarray(v, dtype)
    return v[()] if np.ndim(v) == 0 else v


def _python_float(arg, v, example):
    return float(v) if arg.role == "float" and arg.shape == () else None


def _python_int(arg, v, example):
    if arg.shape != ():
        return None
    return int(v) if arg.role == "index" else _integer_in(arg) if arg.role == "float" else None


def _zero_d(arg, v, example):
    return np.asarray(v) if arg.shape == () and arg.role != "mask" else None


def _negative(arg, v, example):
    return _plain(arg, v - arg.size) if arg.role == "index" else None


def _out_of_range(arg, v, example):
    """Example 0's first index is one past the end (so a batch has one bad example among good ones)."""
    if arg.role != "index" or example != 0:
        return None
    v = np.array(v)
    v.flat[0] = arg.size
    return _plain(arg, v)


@dataclass
class Kind:
    convert: object  # convert(arg, canonical value, example) -> the argument, or None: not changed by this kind
    base: object = _plain  # for the arguments `convert` leaves: base(arg, value)
    raises: type | None = None  # eager must raise this (the kind is a mistake)


KINDS = {
    "float64": Kind(lambda arg, v, k: _plain(arg, v)),
    "float32": Kind(lambda arg, v, k: _plain(arg, v, np.float32) if arg.role == "float" else None),
    "python_float": Kind(_python_float),
    "python_int": Kind(_python_int),
    "zero_d": Kind(_zero_d),
    "tensor": Kind(lambda arg, v, k: dg.tensor(_plain(arg, v)), base=lambda arg, v: dg.tensor(_plain(arg, v))),
    "negative_index": Kind(_negative),
    "out_of_range_index": Kind(_out_of_range, raises=IndexError),
}


def _canonical(p, example):
    if p.values is not None:
        return p.values(example)
    rng = np.random.default_rng([zlib.crc32(p.name.encode()), example])
    values = []
    for arg in p.args:
        if arg.role == "float":
            values.append(rng.uniform(arg.low, arg.high, size=arg.shape))
        elif arg.role == "index":
            values.append(rng.integers(0, arg.size, size=arg.shape))
        else:
            values.append(rng.random(arg.shape) < 0.5)
    return values


def applies(kind, p):
    """A kind applies to a program if it changes one of its arguments (Python numbers need 0-d arguments,
    negative and out-of-range indices need an index) and EXCLUDED does not exclude it."""
    k = KINDS[kind]
    changes = any(k.convert(a, v, 0) is not None for a, v in zip(p.args, _canonical(p, 0)))
    return changes and not any(_hits(e[0], p.name) and _hits(e[1], kind) for e in EXCLUDED)


def fast_kind(p):
    """The kind of the default run: the program's own, else one of those that apply, chosen by its name
    (stable when rows are added)."""
    kinds = [k for k in KINDS if applies(k, p) and not KINDS[k].raises]
    return p.fast or kinds[zlib.crc32(p.name.encode()) % len(kinds)]


# ---------------------------------------------------------------- a case: the arguments and the directions


@dataclass
class Case:
    program: Program
    examples: list  # B argument lists; example 0 is the case's own
    u: np.ndarray  # the output cotangent: gradients are of sum(f(*args) * u)
    tangents: tuple  # one per differentiated argument, for jvp
    v: np.ndarray  # the direction of the Hessian-vector product (first differentiated argument)

    @property
    def args(self):
        return self.examples[0]


def _convert(p, k, values, example):
    out = []
    for arg, v in zip(p.args, values):
        got = k.convert(arg, v, example)
        out.append(k.base(arg, v) if got is None else got)
    return out


def _array(x):
    return x.numpy() if isinstance(x, dg.Tensor) else np.asarray(x)


def _float_dtype(x):
    """The dtype a gradient with respect to x has: x's, float64 for Python numbers."""
    dtype = _array(x).dtype
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


@functools.cache
def case_of(name, kind):
    return make_case(PROGRAMS[name], KINDS[kind])


def make_case(p, kind):
    examples = [_convert(p, kind, _canonical(p, e), e) for e in range(B)]
    rng = np.random.default_rng([zlib.crc32(p.name.encode()), 99])
    out = _attempt(lambda: _array(p.f(*examples[0])))
    if isinstance(out, type):  # eager raises (an out-of-range index): the shape from index 0 instead
        out = _attempt(lambda: _array(p.f(*[_plain(a, np.zeros_like(v) if a.role == "index" else v)
                                            for a, v in zip(p.args, _canonical(p, 0))])))
    if isinstance(out, type):  # a mistake program: every path raises, no cotangent is used
        out = np.zeros(())
    u = rng.standard_normal(out.shape).astype(np.float32 if out.dtype == np.float32 else np.float64)
    tangents = tuple(_typed_like(examples[0][k], rng.standard_normal(np.shape(_array(examples[0][k]))))
                     for k in p.diff)
    first = _array(examples[0][p.diff[0]])
    v = rng.standard_normal(first.shape).astype(_float_dtype(first))
    return Case(p, examples, u, tangents, v)


def _typed_like(x, t):
    """A tangent for x: of its type (a Python float for a Python float) and float dtype."""
    if isinstance(x, (float, int)):
        return float(t)
    t = np.asarray(t, _float_dtype(x))
    return t[()] if np.ndim(x) == 0 and not isinstance(x, np.ndarray) else t


# ---------------------------------------------------------------- results and the reference


@dataclass
class Result:
    """What a path computed: None where it computes nothing of that kind."""

    value: object = None
    grads: tuple | None = None
    tangent: object = None
    hvp: object = None


@dataclass
class Outcome:
    """The reference: each part a value or the exception type eager raised; `tensors`: whether eager's value and
    each gradient are Tensors (else NumPy's arrays or scalars), where it gives them."""

    value: object
    grads: object
    hvp: object
    tensors: tuple = (None, None)


def _attempt(call):
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - the type is the reference's answer
        return type(e)


def _put(args, positions, values):
    args = list(args)
    for k, x in zip(positions, values):
        args[k] = x
    return args


def _loss(p, u):
    return lambda *args: dg.sum(p.f(*args) * u)


def _is_tensor(x):
    return None if isinstance(x, type) else isinstance(x, dg.Tensor)


def _reference(p, args, u, v, hvp, first_only=False):
    out = _attempt(lambda: p.f(*args))
    value = out if isinstance(out, type) else _attempt(lambda: _array(out))
    argnums = p.diff[:1] if first_only else p.diff
    raw = _attempt(lambda: tuple(dg.grad(_loss(p, u), argnums=argnums)(*args)))
    grads = raw if isinstance(raw, type) else tuple(_array(g) for g in raw)
    if not p.differentiable and not isinstance(grads, type):
        grads = tuple(np.zeros(np.shape(_array(args[k])), _float_dtype(args[k])) for k in argnums)
    if hvp:  # reverse over reverse (dg.hessian is forward over reverse)
        k = p.diff[0]
        hvp = _attempt(lambda: _array(dg.grad(lambda *a: dg.sum(dg.grad(_loss(p, u), argnums=k)(*a) * v),
                                              argnums=k)(*args)))
    return Outcome(value, grads, hvp, (_is_tensor(out), None if isinstance(raw, type) else tuple(map(_is_tensor, raw))))


@functools.cache
def reference(name, kind, mapped=None, hvp=False, first_only=False):
    return make_reference(case_of(name, kind), mapped, hvp, first_only)


def make_reference(case, mapped=None, hvp=False, first_only=False):
    """Eager's outcome for example 0, or (`mapped`: which arguments a batch maps) for every example
    stacked, the unmapped arguments being example 0's. `hvp`: with the Hessian-vector product;
    `first_only`: the gradient of the first float argument only."""
    p = case.program
    if mapped is None:
        return _reference(p, case.args, case.u, case.v, hvp, first_only)
    per = [_reference(p, [x if m else x0 for x, x0, m in zip(ex, case.args, mapped)], case.u, case.v, hvp, first_only)
           for ex in case.examples]

    def stacked(parts):
        error = next((x for x in parts if isinstance(x, type)), None)
        if error is not None:
            return error
        if isinstance(parts[0], tuple):
            return tuple(np.stack(g) for g in zip(*parts))
        return np.stack(parts)

    return Outcome(stacked([o.value for o in per]), stacked([o.grads for o in per]), stacked([o.hvp for o in per]),
                   per[0].tensors)


# ---------------------------------------------------------------- paths


def _with_grad(p, case):
    """value and gradients, one function of all the arguments (so that indices are traced too)."""

    def loss(*args):
        out = p.f(*args)
        return dg.sum(out * case.u), out

    value_and_grad = dg.value_and_grad(loss, argnums=p.diff, has_aux=True)

    def f(*args):
        (_, out), grads = value_and_grad(*args)
        return out, grads

    return f, lambda r: Result(r[0], tuple(r[1]))


def _with_vjp(p, case):
    def f(*args):
        out, pull = dg.vjp(lambda *d: p.f(*_put(args, p.diff, d)), *[args[k] for k in p.diff])
        return out, pull(case.u)

    return f, lambda r: Result(r[0], tuple(r[1]))


def _with_jvp(p, case):
    def f(*args):
        return dg.jvp(lambda *d: p.f(*_put(args, p.diff, d)), tuple(args[k] for k in p.diff), case.tangents)

    return f, lambda r: Result(r[0], tangent=r[1])


def _with_hessian(p, case):
    k = p.diff[0]
    h = dg.hessian(_loss(p, case.u), argnums=k)
    v = case.v
    return h, lambda r: Result(hvp=np.tensordot(_array(r), v, axes=v.ndim))


def _values(p, case):
    return p.f, lambda r: Result(r)


def _with_vmap(spec):
    """vmap of the program and of its gradient, the arguments mapped as `spec(p)` says."""

    def build(p, case):
        axes = spec(p)
        grad = dg.grad(_loss(p, case.u), argnums=p.diff)

        def f(*args):
            return dg.vmap(p.f, in_axes=axes)(*args), dg.vmap(grad, in_axes=axes)(*args)

        return f, lambda r: Result(r[0], tuple(r[1]))

    build.axes = spec
    return build


# the transforms, each a builder: (program, case) -> (a function of the program's arguments, its result as a
# Result). PATHS runs each as it is, under dg.compile, and (one of them) as an exported module.
TRANSFORMS = {
    "eager": _values,
    "grad": _with_grad,
    "vjp": _with_vjp,
    "jvp": _with_jvp,
    "hessian": _with_hessian,
    "vmap(0)": _with_vmap(lambda p: 0),
    "vmap(-1)": _with_vmap(lambda p: -1),
    "vmap(first)": _with_vmap(lambda p: (0,) + (None,) * (len(p.args) - 1)),
    "vmap(last)": _with_vmap(lambda p: (None,) * (len(p.args) - 1) + (0,)),
}


def _in_axes(p, spec):
    axes = spec(p)
    return axes if isinstance(axes, tuple) else (axes,) * len(p.args)


def _stack(xs, axis):
    if isinstance(xs[0], dg.Tensor):
        return dg.stack(xs, axis=axis)
    return np.stack([np.asarray(x) for x in xs], axis=axis)


def _batched_args(case, axes):
    return [case.args[i] if a is None else _stack([ex[i] for ex in case.examples], a) for i, a in enumerate(axes)]


def _arguments(builder, case):
    spec = getattr(builder, "axes", None)
    return case.args if spec is None else _batched_args(case, _in_axes(case.program, spec))


def _run(builder):
    def run(p, case):
        f, result = builder(p, case)
        return result(f(*_arguments(builder, case)))

    return run


def _compiled(builder):
    def run(p, case):
        f, result = builder(p, case)
        return result(dg.compile(f)(*_arguments(builder, case)))

    return run


def _backward(p, case):
    args = list(case.args)
    leaves = [dg.tensor(args[k], requires_grad=True) for k in p.diff]
    out = p.f(*_put(args, p.diff, leaves))
    dg.sum(out * case.u).backward()
    return Result(out, tuple(np.zeros(t.shape, t.dtype) if t.grad is None else t.grad for t in leaves))


def _overwritten(arg, a):
    if arg.role == "index":
        return (a + 1) % arg.size
    return ~a if arg.role == "mask" else a * 3.0 + 1.0


def _backward_overwritten(p, case):
    """backward of the first float argument, after the forward, the program's other NumPy arrays (floats,
    indices, masks) are overwritten in place: what a rule saved must not see it (issue 24 item 8)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    k = p.diff[0]
    leaf = dg.tensor(args[k], requires_grad=True)
    out = p.f(*_put(args, (k,), (leaf,)))
    for j, (arg, a) in enumerate(zip(p.args, args)):
        if j != k and isinstance(a, np.ndarray):
            a[...] = _overwritten(arg, a)
    dg.sum(out * case.u).backward()
    return Result(grads=(np.zeros(leaf.shape, leaf.dtype) if leaf.grad is None else leaf.grad,))


def _session(p, case):
    graph = dg.Graph()
    feeds = [_array(x) for x in case.args]
    with graph:
        holders = [dg.placeholder(x.shape, x.dtype, name=f"x{k}") for k, x in enumerate(feeds)]
        out = p.f(*holders)
        grads = dg.gradients(dg.sum(out * case.u), [holders[k] for k in p.diff])
    value, grads = dg.Session(graph).run([out, grads], dict(zip(holders, feeds)))
    return Result(value, tuple(grads))


def _exported(p, case):
    """The value and the gradients, compiled, exported to a module and imported from it."""
    f, result = _with_grad(p, case)
    with tempfile.TemporaryDirectory() as where:
        path = dg.compile(f).export(FilePath(where) / "exported.py", *case.args)
        spec = importlib.util.spec_from_file_location("exported", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return result(getattr(module, module.__all__[0])(*case.args))


@dataclass
class Path:
    run: object  # run(program, case) -> Result, or raises
    axes: object = None  # a vmap path: in_axes(program); the reference stacks the examples
    derivatives: bool = True  # it computes derivatives (so it raises where eager's derivatives raise)
    kinds: bool = True  # its results are Tensors where eager's are (a Session's and a module's are NumPy's)
    first_only: bool = False  # it differentiates the first float argument only
    applies: object = lambda p: True  # False only where the path has no meaning for the program (never a refusal)


def _cheap_hessian(p):
    return p.differentiable and int(np.prod(p.args[p.diff[0]].shape)) <= 6


def _several_args(p):
    return len(p.args) > 1


_APPLIES = {"hessian": _cheap_hessian, "vmap(first)": _several_args, "vmap(last)": _several_args}

PATHS = {"backward": Path(_backward, kinds=False),  # (its leaves and results are Tensors whatever the kind)
         "backward (operands overwritten)": Path(_backward_overwritten, applies=_several_args, first_only=True,
                                                 kinds=False)}
for _name, _builder in TRANSFORMS.items():
    _axes = getattr(_builder, "axes", None)
    _applies = _APPLIES.get(_name, lambda p: True)
    _derivatives = _name != "eager"
    PATHS[_name] = Path(_run(_builder), axes=_axes, derivatives=_derivatives, applies=_applies)
    PATHS[f"compile({_name})" if _derivatives else "compile"] = Path(_compiled(_builder), axes=_axes,
                                                                     derivatives=_derivatives, applies=_applies)
PATHS["session"] = Path(_session, kinds=False)
PATHS["export"] = Path(_exported, kinds=False)


# ---------------------------------------------------------------- declared refusals and known failures

# Entries of the tables below name (programs, paths, kinds), each as a pattern (fnmatch's * and ?; a
# bracket is itself), a tuple of patterns, or a predicate of the name.


def _hits(spec, name):
    if callable(spec):
        return spec(name)
    patterns = spec if isinstance(spec, tuple) else (spec,)
    return any(fnmatchcase(name, pattern.replace("[", "[[]")) for pattern in patterns)


def _matches(entry, name, path, kind):
    return _hits(entry[0], name) and _hits(entry[1], path) and _hits(entry[2], kind)


def _not(*patterns):
    return lambda name: not _hits(patterns, name)


# An input kind a program is not written for: (programs, kinds, why). NumPy's reference must refuse those
# inputs too (test_excluded_kinds_are_refused_by_numpy), so that nothing is left out that should run.
EXCLUDED = [
    ("op:sum of 0-d", ("python_float", "python_int"), "x.sum() is a method: a Python number has none (NumPy's too)"),
]

# A path that cannot take a program raises, and says so here: (programs, paths, kinds, the exception type
# it must raise, why). Asserted like any result.
_REVERSE = "reverse-mode differentiation of while_loop needs the trip count: refused while tracing, as JAX"
_RUN_TIME_MASK = "a boolean mask known only when the code runs gives a data-dependent size: refused"
_PER_EXAMPLE_SIZE = "the examples' masks select different numbers of elements: a batch cannot hold them"
_USER_PYTHON = "the forward is the user's Python: an exported module holds only NumPy"
_NO_GRAD = "backward of an output that does not require grad raises, as PyTorch's"
_STAND_IN_NUMBER = ("a number a Function's forward computes from its input's values and leaves on the ctx: forward "
                    "ran on stand-ins where the gradient is built, so it would be a wrong constant")
NON_DIFFERENTIABLE = tuple(name for name, p in PROGRAMS.items() if not p.differentiable)
REFUSALS = [
    (NON_DIFFERENTIABLE, "backward*", "*", RuntimeError, _NO_GRAD),
    ("while_loop", ("compile(grad)", "compile(vjp)", "compile(hessian)", "compile(vmap*", "session", "export"), "*",
     ValueError, _REVERSE),
    (("x[mask]", "x[x > 0] sum"), ("compile*", "session", "export"), "*", IndexError, _RUN_TIME_MASK),
    ("x[x > 0] sum", ("vmap(0)", "vmap(-1)"), "*", ValueError, _PER_EXAMPLE_SIZE),
    (("Function*", "custom_vjp*", "custom_jvp", "defvjp*", "op:odeint*"), "export", "*", TypeError, _USER_PYTHON),
    ("Function ctx number", ("compile(*", "session"), "*", TypeError, _STAND_IN_NUMBER),
]


def _refusal(name, path, kind):
    return next(((e[3], e[4]) for e in REFUSALS if _matches(e, name, path, kind)), None)


# Defects being fixed on other branches (issue 24), and new ones found here: strict xfails (delete an entry
# once its fix is merged: its cases then pass). (programs, paths, kinds, why); path "reference" is
# test_the_reference_is_sound.
KNOWN = []


def _known(name, path, kind):
    return next((e[3] for e in KNOWN if _matches(e, name, path, kind)), None)


# ---------------------------------------------------------------- comparing


def _tolerance(p, dtype, order=1):
    """Rounding's share: float32's is larger, and more so for second derivatives (reverse over reverse against
    forward over reverse); a row's own tolerance is a floor."""
    if dtype == np.float32:
        tol = {"rtol": 2e-4 if order == 1 else 2e-3, "atol": 2e-5}
    else:
        tol = {"rtol": 1e-9, "atol": 1e-11}
    return {k: max(v, p.tol.get(k, 0.0)) for k, v in tol.items()}


def _same(what, got, expected, p, order=1):
    got, expected = _array(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, eager {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, eager {expected.dtype}"
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, err_msg=what, equal_nan=True, **_tolerance(p, got.dtype, order))
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)


def _same_kind(what, got, tensor):
    """`got` is a Tensor if `tensor` (eager's is), else NumPy's (an array or a scalar); None: not checked. (A
    transform of arrays gives arrays, of Tensors Tensors: SPEC.)"""
    if tensor is not None:
        kind = "a Tensor" if isinstance(got, dg.Tensor) else f"a {type(got).__name__}"
        assert isinstance(got, dg.Tensor) == tensor, f"{what}: {kind}, eager's is {'' if tensor else 'not '}a Tensor"


def _raises(error, call, what):
    """`call` raises `error` (a type or a tuple of types)."""
    names = " or ".join(e.__name__ for e in (error if isinstance(error, tuple) else (error,)))
    try:
        got = call()
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, error), f"{what}: raised {type(e).__name__}: {e}; expected {names}"
        return
    pytest.fail(f"{what}: returned {got} where {names} was expected (a silent wrong result)")


def check(name, path, kind):
    """Runs `name` on `path` with `kind` inputs and asserts that it agrees with eager, or raises as declared."""
    verify(PROGRAMS[name], path, kind, case_of(name, kind), functools.partial(reference, name, kind))


def verify(p, path, kind, case, reference):
    """The assertions of `check` for any case; `reference(mapped, hvp, first_only)` gives eager's Outcome."""
    entry = PATHS[path]
    mapped = None
    if entry.axes is not None:
        mapped = tuple(a is not None for a in _in_axes(p, entry.axes))
    expected = reference(mapped, path.endswith("hessian)") or path == "hessian", entry.first_only)
    errors = [e for e in (expected.value, expected.grads, expected.hvp) if isinstance(e, type)]
    refusal = _refusal(p.name, path, kind)
    if refusal is not None:  # or what eager raises: the path met the user's mistake before its own limit
        _raises((refusal[0], *errors), lambda: entry.run(p, case), f"{path} (declared refusal: {refusal[1]})")
        return
    if isinstance(expected.value, type):
        _raises(expected.value, lambda: entry.run(p, case), f"{path}: eager raises")
        return
    try:
        got = entry.run(p, case)
    except Exception as e:
        # a path computing derivatives may raise what eager raises for them (an integer input)
        if entry.derivatives and errors and isinstance(e, tuple(errors)):
            return
        raise
    value_tensor, grad_tensors = expected.tensors if entry.kinds else (None, None)
    if got.value is not None:
        _same(f"{path}: value", got.value, expected.value, p)
        _same_kind(f"{path}: value", got.value, value_tensor)
    if got.grads is not None:
        assert not isinstance(expected.grads, type), f"{path}: gradients where eager raises {expected.grads}"
        assert len(got.grads) == len(expected.grads)
        for k, (g, e) in enumerate(zip(got.grads, expected.grads)):
            _same(f"{path}: gradient {k}", g, e, p)
            _same_kind(f"{path}: gradient {k}", g, None if grad_tensors is None else grad_tensors[k])
    if got.tangent is not None:
        assert not isinstance(expected.grads, type), f"{path}: tangent where eager raises {expected.grads}"
        _check_tangent(path, got.tangent, expected, case, p)
        _same_kind(f"{path}: tangent", got.tangent, value_tensor)  # of the value's kind
    if got.hvp is not None:
        assert not isinstance(expected.hvp, type), f"{path}: Hessian where eager raises {expected.hvp}"
        _same(f"{path}: Hessian-vector product", got.hvp, expected.hvp, p, order=2)


def _check_tangent(path, tangent, expected, case, p):
    """The tangent has the output's shape and dtype, and <u, J t> = sum_k <grad_k, t_k>."""
    tangent, value = _array(tangent), np.asarray(expected.value)
    assert tangent.shape == value.shape, f"{path}: tangent shape {tangent.shape}, output {value.shape}"
    if value.dtype.kind == "f":
        assert tangent.dtype == value.dtype, f"{path}: tangent dtype {tangent.dtype}, output {value.dtype}"
    got = np.sum(case.u.astype(np.float64) * tangent)
    want = sum(np.sum(np.asarray(g, np.float64) * np.asarray(t, np.float64))
               for g, t in zip(expected.grads, case.tangents))
    scale = np.sum(np.abs(case.u) * np.abs(tangent)) + 1.0
    assert abs(got - want) <= _tolerance(p, tangent.dtype)["rtol"] * scale * 10, (
        f"{path}: <u, J t> = {got}, the gradients give {want}")


# ---------------------------------------------------------------- the tests


def _param(name, path, kind):
    why = _known(name, path, kind)
    marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
    return pytest.param(name, path, kind, marks=marks, id=f"{name}|{path}|{kind}")


def _product(kinds):
    return [_param(name, path, kind) for name, p in PROGRAMS.items() for kind in kinds(p)
            for path, entry in PATHS.items() if entry.applies(p)]


FAST = _product(lambda p: [fast_kind(p)])
FULL = _product(lambda p: [k for k in KINDS if applies(k, p) and k != fast_kind(p)])


@pytest.mark.parametrize(("name", "path", "kind"), FAST)
def test_every_path_agrees(name, path, kind):
    check(name, path, kind)


@pytest.mark.paths_full
@pytest.mark.parametrize(("name", "path", "kind"), FULL)
def test_every_path_agrees_for_every_input_kind(name, path, kind):
    check(name, path, kind)


# ---------------------------------------------------------------- the reference itself


def _numpy_args(case):
    return [x if isinstance(x, (float, int)) else _array(x) for x in case.args]


def _loss_value(p, args, u):
    return float(np.sum(_array(p.f(*args)) * u))


def _central_differences(p, case, eps=1e-6):
    args = [np.array(_array(x), np.float64) if k in p.diff else x for k, x in enumerate(case.args)]
    grads = []
    for k in p.diff:
        g = np.zeros_like(args[k])
        for i in np.ndindex(args[k].shape):
            up, down = list(args), list(args)
            up[k], down[k] = args[k].copy(), args[k].copy()
            up[k][i] += eps
            down[k][i] -= eps
            g[i] = (_loss_value(p, up, case.u) - _loss_value(p, down, case.u)) / (2 * eps)
        grads.append(g)
    return grads


def check_reference(name, kind):
    """Eager agrees with NumPy (values; dtypes too but for float32, which the op table's references may
    widen), and raises where NumPy raises or the kind is a mistake; its gradients have their inputs' shapes
    and dtypes and, for the hand-written programs, the values of central differences."""
    p, k = PROGRAMS[name], KINDS[kind]
    case, expected = case_of(name, kind), reference(name, kind)
    numpy = _attempt(lambda: np.asarray(p.ref(*_numpy_args(case)))) if p.ref is not None else None
    if p.raises is not None:
        raised = expected.value if p.raises_in == "value" else expected.grads
        assert isinstance(raised, type) and issubclass(raised, p.raises), (
            f"eager's {p.raises_in} is {raised}, the program's mistake must raise {p.raises.__name__}")
        return
    error = k.raises or (numpy if isinstance(numpy, type) else None)
    if error is not None:
        assert isinstance(expected.value, type) and issubclass(expected.value, error), (
            f"eager gives {expected.value}, NumPy or the kind raises {error.__name__}")
        assert numpy is None or numpy is error, f"NumPy gives {numpy}, the kind raises {error.__name__}"
        return
    assert not isinstance(expected.value, type), f"eager raises {expected.value.__name__}"
    if numpy is not None:
        if kind == "float32" and name not in HAND_WRITTEN:  # (a hand-written reference computes as eager code)
            numpy = numpy.astype(np.float32) if numpy.dtype == np.float64 else numpy
        _same("eager against NumPy", expected.value, numpy, p)
    if any(_array(case.args[j]).dtype.kind not in "fc" for j in p.diff):
        assert expected.grads is TypeError, "an integer input must be refused by grad"
        return
    assert not isinstance(expected.grads, type), f"eager's gradient raises {expected.grads.__name__}"
    for j, g in zip(p.diff, expected.grads):
        assert g.shape == np.shape(_array(case.args[j])), f"gradient {j}: shape {g.shape}"
        assert g.dtype == _float_dtype(case.args[j]), f"gradient {j}: dtype {g.dtype}"
    if name in HAND_WRITTEN and kind == "float64":  # a float32 output (a cast) rounds: a larger step and tolerance
        single = expected.value.dtype == np.float32
        tol = {"rtol": 1e-3, "atol": 1e-3} if single else {"rtol": 1e-5, "atol": 1e-7}
        for g, e in zip(expected.grads, _central_differences(p, case, 1e-3 if single else 1e-6)):
            np.testing.assert_allclose(g, e, err_msg="gradient against central differences", **tol)


FAST_REFERENCES = [_param(name, "reference", fast_kind(p)) for name, p in PROGRAMS.items()]
FULL_REFERENCES = [_param(name, "reference", kind) for name, p in PROGRAMS.items() for kind in KINDS
                   if applies(kind, p) and kind != fast_kind(p)]


_FLOAT64_HAND_WRITTEN = [_param(n, "reference", "float64") for n in HAND_WRITTEN
                         if fast_kind(PROGRAMS[n]) != "float64"]  # their central differences


@pytest.mark.parametrize(("name", "path", "kind"), FAST_REFERENCES + _FLOAT64_HAND_WRITTEN)
def test_the_reference_is_sound(name, path, kind):
    check_reference(name, kind)


@pytest.mark.paths_full
@pytest.mark.parametrize(("name", "path", "kind"), FULL_REFERENCES)
def test_the_reference_is_sound_for_every_input_kind(name, path, kind):
    check_reference(name, kind)


def test_excluded_kinds_are_refused_by_numpy():
    # an exclusion is a program not written for that kind: NumPy's own version refuses it too
    for programs, kinds, _ in EXCLUDED:
        for name, p in PROGRAMS.items():
            for kind in KINDS:
                if _hits(programs, name) and _hits(kinds, kind):
                    case = make_case(p, KINDS[kind])
                    with pytest.raises(Exception):  # noqa: B017 - any error: NumPy cannot take it
                        p.ref(*_numpy_args(case))


def test_every_program_runs_on_every_path_in_the_default_run():
    # the fast tier holds each program once on each path that applies, and every path is used
    seen = {(prm.values[0], prm.values[1]) for prm in FAST}
    for name, p in PROGRAMS.items():
        for path, entry in PATHS.items():
            assert ((name, path) in seen) == entry.applies(p), (name, path)
    assert {path for _, path in seen} == set(PATHS)
    assert {prm.values[2] for prm in FAST} == {k for k in KINDS}


# ---------------------------------------------------------------- drawn by hypothesis: the indexing programs


@st.composite
def _indexing(draw):
    """(dtype, n: the indexed axis' size, m: the other axis', the index values of each example (a 0-d index when
    `scalar`), scalar, seed): each indexing program reads what it needs."""
    n, m = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    scalar = draw(st.booleans())
    k = 1 if scalar else draw(st.integers(1, 4))
    index = st.lists(st.integers(-n - 1, n), min_size=k, max_size=k)
    return (draw(st.sampled_from(["float64", "float32"])), n, m, [draw(index) for _ in range(B)], scalar,
            draw(st.integers(0, 2**16)))


def _index_args(values, scalar, shape=None):
    a = np.array(values, np.int64)
    return a[0] if scalar else a if shape is None else np.resize(a, shape)


# each: (Args, values of one example) from the drawn (n, m, index values, scalar, rng)
DRAWN = {
    "x[i]": lambda n, m, i, scalar, rng: ((Arg((n, m)), Arg(np.shape(_index_args(i, scalar)), size=n)),
                                          [rng.uniform(-2, 2, (n, m)), _index_args(i, scalar)]),
    "x[:, i]": lambda n, m, i, scalar, rng: ((Arg((m, n)), Arg(np.shape(_index_args(i, scalar)), size=n)),
                                             [rng.uniform(-2, 2, (m, n)), _index_args(i, scalar)]),
    "take": lambda n, m, i, scalar, rng: ((Arg((m, n)), Arg(np.shape(_index_args(i, scalar)), size=n)),
                                          [rng.uniform(-2, 2, (m, n)), _index_args(i, scalar)]),
    "take_along_axis": lambda n, m, i, scalar, rng: ((Arg((m, n)), Arg((m, len(i)), size=n)),
                                                     [rng.uniform(-2, 2, (m, n)), _index_args(i, False, (m, len(i)))]),
    "x[i, j]": lambda n, m, i, scalar, rng: ((Arg((n, n)), Arg((), size=n), Arg((), size=n)),
                                             [rng.uniform(-2, 2, (n, n)), np.int64(i[0]), np.int64(i[-1])]),
}


def check_drawn(name, path, drawn):
    dtype, n, m, indices, scalar, seed = drawn
    rng = np.random.default_rng(seed)
    made = [DRAWN[name](n, m, indices[e], scalar, rng) for e in range(B)]
    base = PROGRAMS[name]
    p = Program(name, base.f, made[0][0], base.ref, values=lambda e: made[e][1])
    case = make_case(p, KINDS[dtype])
    verify(p, path, "drawn", case, functools.partial(make_reference, case))


# the headline cases, whatever hypothesis draws (the known failures rely on them): negative indices, 0-d and
# arrays, in every example; out of range in example 0 (the paths without a batch see it) and in a batch's
# second example only
_NEGATIVE = ("float64", 4, 3, [[-1], [-3], [0]], True, 0)
_NEGATIVE_ARRAYS = ("float64", 4, 3, [[-1, 2], [-3, 0], [0, -4]], False, 1)
_OUT_OF_RANGE = ("float64", 4, 3, [[4], [0], [-5]], True, 2)
_ONE_BAD_EXAMPLE = ("float32", 4, 3, [[0, 1], [1, 4], [2, 3]], False, 3)
_DRAWN_CASES = [pytest.param(name, path, id=f"{name}|{path}",
                             marks=[pytest.mark.xfail(strict=True, reason=why)] if (why := _known(name, path, "drawn"))
                             else [])
                for name in DRAWN for path, entry in PATHS.items() if entry.applies(PROGRAMS[name])]
_DRAWN_SETTINGS = {"derandomize": True, "deadline": None, "database": None,
                   "suppress_health_check": [HealthCheck.too_slow]}


@pytest.mark.parametrize(("name", "path"), _DRAWN_CASES)
@settings(max_examples=3, **_DRAWN_SETTINGS)
@given(drawn=_indexing())
@example(drawn=_NEGATIVE)
@example(drawn=_NEGATIVE_ARRAYS)
@example(drawn=_OUT_OF_RANGE)
@example(drawn=_ONE_BAD_EXAMPLE)
def test_drawn_indices_agree_on_every_path(name, path, drawn):
    check_drawn(name, path, drawn)


@pytest.mark.paths_full
@pytest.mark.parametrize(("name", "path"), _DRAWN_CASES)
@settings(max_examples=40, **_DRAWN_SETTINGS)
@given(drawn=_indexing())
def test_drawn_indices_agree_on_every_path_many_draws(name, path, drawn):
    check_drawn(name, path, drawn)


# ---------------------------------------------------------------- the harness can fail


def _wrong(result):
    return lambda p, case: result(PATHS["grad"].run(p, case))


@pytest.mark.parametrize(("name", "kind", "broken", "message"), [
    ("op:sin((4,),)", "float64", lambda r: Result(r.value + 1e-6, r.grads), "value"),
    ("op:sin((4,),)", "float32", lambda r: Result(np.asarray(r.value, np.float64), r.grads), "dtype float64"),
    ("op:sin((4,),)", "float64", lambda r: Result(r.value, (r.grads[0][:2],)), "shape"),
    ("op:sin((4,),)", "float64", lambda r: Result(r.value, (r.grads[0] * 0,)), "gradient 0"),
    ("x[i]", "out_of_range_index", lambda r: Result(np.float64(0.0)), "silent wrong result"),
    ("op:sin((4,),)", "float64", lambda r: Result(r.value, (dg.tensor(r.grads[0]),)), "gradient 0: a Tensor"),
])
def test_the_harness_catches_a_wrong_path(monkeypatch, name, kind, broken, message):
    # a path that is off by a rounding error's thousand times, widens a dtype, drops part of a gradient,
    # zeroes it, or returns a number where eager raises, fails the check
    wrong = Path(_wrong(broken)) if name != "x[i]" else Path(lambda p, case: broken(None))
    monkeypatch.setitem(PATHS, "wrong", wrong)
    with pytest.raises((AssertionError, pytest.fail.Exception), match=message):
        check(name, "wrong", kind)
