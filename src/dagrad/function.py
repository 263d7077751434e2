"""Custom differentiable operations: subclass `dg.Function`, as in PyTorch.

A Function becomes an op of its own (named after the class) whose forward is the class's
`forward` on NumPy arrays and whose vjp calls the class's `backward`. In a plain backward
pass `backward` receives NumPy arrays; when a graph of the gradient is being recorded
(higher order, nested transforms, static graphs, `dg.compile`) it receives Tensors, so a
`backward` written with operators and dagrad functions is differentiated again. Forward
mode needs no rule: `backward` is linear in its cotangent, g -> J^T g, so J t is the
gradient with respect to g of <J^T g, t>; a `jvp` staticmethod is used instead when given.

Several outputs are packed into one flat array for the engine (which has one value per
node) and unpacked by indexing, so their gradients reach `backward` together.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ._core.backends import is_foreign
from ._core.errors import caller_line, location, user_error, user_line
from ._core.op import Op, apply
from ._core.shapes import dtype_of, shape_of
from ._core.tensor import Tensor, is_symbolic
from .ops.elementwise import astype, zeros_like
from .ops.reduce import sum as reduce_sum
from .ops.shape import concatenate, getitem, ravel, reshape
from .transforms import grad as grad_of

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """What `forward` leaves for `backward`: `save_for_backward(*arrays)`, `saved_tensors`, and
    any attribute you set (`ctx.k = 3`)."""

    def __init__(self, function):
        self._function = function
        self._saved_raw = ()  # what forward saved
        self._saved = ()  # how to find each saved value again: ("input", k), ("output", k) or ("value", v)
        self._current = None  # the saved values as the running backward sees them
        self._outputs = None  # [(shape, dtype)] of several outputs, else None

    def save_for_backward(self, *arrays):
        self._saved_raw = arrays

    @property
    def saved_tensors(self):
        if self._current is None:
            raise user_error(RuntimeError, f"{self._function.__name__}.saved_tensors", "is read in backward (or jvp) "
                             "only")
        return self._current

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
        ctx = FunctionCtx(cls)
        out = apply(op, args, {"ctx": ctx})
        if ctx._outputs is None:
            return out
        if None in shape_of(out):
            tensors = [a for a in args if isinstance(a, Tensor)]
            raise user_error(TypeError, cls.__name__, "a Function with several outputs needs known sizes in a static "
                             "graph (its outputs are unpacked by position)", *tensors)
        parts = zip(_split(out, ctx._outputs), ctx._outputs)
        return tuple(p if np.dtype(dtype) == dtype_of(p) else astype(p, dtype) for p, (_, dtype) in parts)


def _make_op(cls):
    name = cls.__name__

    def forward(*values, ctx):
        try:
            out = cls.forward(ctx, *values)
        except Exception as err:
            raise _rewrapped(err, f"{name}.forward failed: {err}") from err
        outs = out if isinstance(out, tuple) else (out,)
        if not outs:
            raise user_error(TypeError, f"{name}.forward", "returned an empty tuple; return an array, or a tuple of "
                             "arrays for several outputs")
        for o in outs:
            _check_output(name, o)
        ctx._saved = tuple(_find(s, values, outs) for s in ctx._saved_raw)
        if isinstance(out, tuple):
            packed, ctx._outputs = _packed_outputs(out)
            return packed
        return out

    def shape(*shapes, ctx):
        # run forward on stand-ins to learn the output's shape; an unknown size is one that changes
        # when the stand-ins' unknown sizes do
        results = []
        for size in (2, 3):
            stand_ins = [np.ones(tuple(size if n is None else n for n in s)) if s is not None else None
                         for s in shapes]
            with np.errstate(all="ignore"):
                results.append(np.shape(forward(*stand_ins, ctx=ctx)))
        a, b = results
        return tuple(None if m != n else m for m, n in zip(a, b))

    def vjp(g, out, *inputs, ctx):
        grads = (g,) if ctx._outputs is None else _split(g, ctx._outputs)
        with _saved(ctx, inputs, out):
            try:
                result = cls.backward(ctx, *grads)
            except Exception as err:
                raise _rewrapped(err, f"{name}.backward failed: {err} (the forward was applied at "
                                 f"{_where(out)})") from err
        return _checked_grads(name, result, inputs)

    def jvp(tangents, out, *inputs, ctx):
        with _saved(ctx, inputs, out):
            if cls.jvp is not None:
                tangent = cls.jvp(ctx, *tangents)
                if ctx._outputs is not None and isinstance(tangent, tuple):
                    tangent = concatenate([ravel(t) for t in tangent])
                return tangent
        return _jvp_from_backward(vjp, tangents, out, inputs, ctx)

    op = Op(name, forward, vjp, jvp, shape, True)
    op.function = cls.apply
    return op


def _rewrapped(err, message):
    """`err`'s class (when its constructor takes a message) with `message` and the user's line."""
    where = caller_line() + (f" (building the gradient of the node made at {user_line()})"
                             if user_line() != caller_line() else "")
    try:
        return type(err)(f"{message} (at {where})")
    except Exception:
        return RuntimeError(f"{message} (at {where})")


def _check_output(name, out):
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


def _packed_outputs(outs):
    """Several outputs of a forward as the engine's one value, a flat array of their promoted dtype, and
    their (shape, dtype). A Dask or CuPy output stays as it is (np.asarray would compute or refuse it),
    and the value is of its type."""
    arrays = [o if is_foreign(o) else np.asarray(o) for o in outs]
    dtype = np.result_type(*(a.dtype for a in arrays))
    return np.concatenate([a.astype(dtype, copy=False).ravel() for a in arrays]), [(a.shape, a.dtype) for a in arrays]


def _find(saved, values, outs):
    """How backward finds a saved value again: as forward's input k, its output k, or the value itself."""
    for kind, group in (("input", values), ("output", outs)):
        for k, v in enumerate(group):
            if saved is v:
                return (kind, k)
    return ("value", saved)


@contextmanager
def _saved(ctx, inputs, out):
    """Gives backward the saved values as it must see them: the op's own inputs and outputs as
    the sweep passes them (arrays, or Tensors when a graph of the gradient is recorded)."""
    outs = (out,) if ctx._outputs is None else _split(out, ctx._outputs)
    current = []
    for kind, where in ctx._saved:
        if kind == "input":
            current.append(inputs[where])
        elif kind == "output":
            current.append(outs[where])
        elif is_symbolic(out):
            raise user_error(
                TypeError, f"{ctx._function.__name__}.save_for_backward", "in a static graph or under dg.compile "
                "it may save only forward's inputs and outputs (the others have no value when the gradient is "
                "built); recompute the rest in backward")
        else:
            current.append(where)  # an intermediate value: a constant of the gradient
    previous, ctx._current = ctx._current, tuple(current)
    try:
        yield
    finally:
        ctx._current = previous


def _where(out):
    place = location(out) if isinstance(out, Tensor) else None
    return place or user_line()


def _checked_grads(name, result, inputs):
    grads = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(grads) != len(inputs):
        raise user_error(ValueError, f"{name}.backward", f"returned {len(grads)} gradient(s) for {len(inputs)} "
                         "input(s) (return one per input of forward, None for one without a gradient)")
    # a Python int or flag argument has no gradient, nor has anything but a number or an array (a Dask one too)
    grads = tuple(None if isinstance(x, int) or not (isinstance(x, (Tensor, np.ndarray, float, np.generic))
                                                     or is_foreign(x)) else grad
                  for grad, x in zip(grads, inputs))
    for k, (grad, x) in enumerate(zip(grads, inputs)):
        if grad is not None and tuple(shape_of(grad)) != tuple(shape_of(x)):
            raise user_error(ValueError, f"{name}.backward", f"the gradient for input {k} has shape "
                             f"{tuple(shape_of(grad))}, but that input has shape {tuple(shape_of(x))}")
    return grads


def _jvp_from_backward(vjp, tangents, out, inputs, ctx):
    """J t as the gradient over g of <J^T g, t> (backward is linear in g, so any g will do)."""
    def inner(g):
        total = 0.0
        for part, t in zip(vjp(g, out, *inputs, ctx=ctx), tangents):
            if part is not None and t is not None:
                total = total + reduce_sum(part * t)
        return total

    return grad_of(inner)(zeros_like(out))


def _split(packed, outputs):
    parts, offset = [], 0
    for shape, _ in outputs:
        size = int(np.prod(shape, dtype=np.int64))
        parts.append(reshape(getitem(packed, slice(offset, offset + size)), shape))
        offset += size
    return parts

