"""The structural ops: reshape, broadcast_to, sum, sum_to and real.

They are in the core because the engine needs them by identity: the reverse sweep reduces a
cotangent to its input's shape with them (unbroadcast, `_core/autodiff.py`), and takes the real
part of a complex cotangent that reaches a real input. The op library (ops/shape.py,
ops/reduce.py, ops/elementwise.py) re-exports them beside the other ops of their kind.
"""

from __future__ import annotations

import math

import numpy as np

from .backends import has_unknown_size, is_dask
from .batching import elementwise, lead, over_axes
from .dtypes import accumulated, first, real_part
from .errors import ShapeError, user_error
from .ir import Symbol
from .op import apply, batch_loop, defop, public
from .shapes import (
    SymbolicShape,
    as_index,
    broadcast_shapes,
    is_sequence,
    normalize_axis,
    reduced_shape,
    runtime_shape,
    summed_axes,
)
from .shapes import dtype_of as _dtype
from .shapes import ndim_of as _ndim
from .shapes import shape_of as _shape
from .tensor import Tensor


# Ops that take a target shape (reshape, broadcast_to, index_add) accept one with unknown
# (None) sizes in a static graph when it is some node's SymbolicShape: that node becomes an
# extra, non-differentiable input (`source`) whose runtime shape fills in the unknown sizes.
def shape_source(shape):
    return shape.ref if isinstance(shape, SymbolicShape) and None in shape else None


def target_shape(shape, op_name, x, infer=False):
    """`shape` (an integer or a sequence of them; None for a size a static graph knows only when it
    runs) as a tuple of Python ints. Floats and bools are a TypeError, negative sizes a ValueError
    (but -1, a size to infer, where `infer`), as NumPy."""
    if not is_sequence(shape):
        shape = (shape,)
    out = []
    for n in shape:
        if type(n) is not int:
            if n is None:
                out.append(None)
                continue
            n = as_index(n, op_name, "size", x, within=shape)
        if n < 0 and not (infer and n == -1):
            allowed = " (only -1, once, for a size to infer)" if infer else ""
            raise user_error(ValueError, op_name, f"negative size {n} in shape {tuple(shape)!r}{allowed}", x)
        out.append(n)
    return tuple(out)


# -- reshape
def _resized(op, values, batched, attrs, x=None):
    """reshape and broadcast_to: the batch size goes in front of the target shape."""
    x = values[0] if x is None else x
    if len(values) > 1:  # per-example sizes known only when a graph runs
        return batch_loop(op, values, batched, attrs), True
    size = _shape(x)[0]
    if size is None:  # a static graph's batch of unknown size
        shape = (None, *attrs["shape"])
        return apply(op, (x, batch_source(x, len(shape))), {"shape": shape}), True
    return apply(op, (x,), {"shape": (size, *attrs["shape"])}), True


def batch_source(x, rank):
    """A shape source (see `shape_source`) for a target of `rank` axes whose first, vmap's batch axis, has
    the size of x's axis 0, known only when a static graph runs: a node of shape (batch, 1, ..., 1)."""
    # a shape source must have the target's rank: its sizes are read position by position
    axes = tuple(range(1, _ndim(x)))
    return reshape(sum(x, axis=axes) if axes else x, (-1,) + (1,) * (rank - 1))


def _reshape_shape(in_shape, *source_shape, shape):
    if -1 not in shape:
        return tuple(shape)
    known = [n for n in shape if n != -1]
    if None in in_shape or None in known:
        return tuple(None if n == -1 else n for n in shape)
    total = int(np.prod(in_shape))
    rest = int(np.prod(known))
    if rest == 0 or total % rest:
        raise ValueError(f"reshape: cannot reshape shape {tuple(in_shape)} into shape {tuple(shape)}")
    return tuple(total // rest if n == -1 else n for n in shape)


_reshape = defop(
    "reshape",
    lambda x, *source, shape: np.reshape(x, runtime_shape(shape, source)),
    vjp=(lambda g, out, x, *source, shape: reshape(g, _shape(x)),),
    jvp=(lambda t, out, x, *source, shape: reshape(t, _shape(out)),),
    shape=_reshape_shape,
    dtype=first,
    shape_source=True,
    batch=lambda op, values, batched, attrs: _resized(op, values, batched, attrs),
    saves=(),
)


@public(_reshape)
def reshape(x, shape, *more):
    """`x` with a new shape (one entry may be -1), as `np.reshape`."""
    if more:
        shape = (shape, *more)
    source = shape_source(shape)
    shape = target_shape(shape, "reshape", x, infer=True)
    if shape.count(-1) > 1:
        raise user_error(ValueError, "reshape", f"shape {shape}: can only specify one unknown dimension (-1)", x)
    if source is None and None in shape:
        if shape.count(None) != 1 or -1 in shape:
            raise user_error(ValueError, "reshape", f"target shape {shape} has unknown sizes it cannot infer", x)
        shape = tuple(-1 if n is None else n for n in shape)  # one unknown size: NumPy infers it
    in_shape = _shape(x)
    if None not in in_shape and None not in shape:
        known = math.prod(n for n in shape if n != -1)
        total = math.prod(in_shape)
        fits = known != 0 and total % known == 0 if -1 in shape else known == total
        if not fits:
            raise user_error(ShapeError, "reshape", f"cannot reshape shape {tuple(in_shape)} into shape {shape}", x)
        if -1 in shape:
            shape = tuple(total // known if n == -1 else n for n in shape)
    return apply(_reshape, (x,) if source is None else (x, source), {"shape": shape})


_broadcast_to = defop(
    "broadcast_to",
    lambda x, *source, shape: np.broadcast_to(x, runtime_shape(shape, source)),
    vjp=(lambda g, out, x, *source, shape: g,),  # the engine sums g back down to x's shape
    jvp=(lambda t, out, x, *source, shape: broadcast_to(t, _shape(out)),),
    shape=lambda x_shape, *source_shape, shape: broadcast_shapes(x_shape, shape) and tuple(shape),
    dtype=first,
    shape_source=True,
    batch=lambda op, values, batched, attrs: _resized(op, values, batched, attrs, lead(values[0], len(attrs["shape"]))),
    saves=(),
)


@public(_broadcast_to)
def broadcast_to(x, shape):
    """`x` broadcast to `shape`, as `np.broadcast_to`."""
    source = shape_source(shape)
    shape = target_shape(shape, "broadcast_to", x)
    return apply(_broadcast_to, (x,) if source is None else (x, source), {"shape": shape})

reduction_shape = reduced_shape  # the shape rule of the reductions


def _expand(g, x, axis, keepdims):
    """A reduced value broadcast back over the reduced axes of `x`'s shape."""
    shape = _shape(x)
    kept = reduced_shape(shape, axis, True)
    # a Dask value (or a Tensor of one with unknown sizes, under create_graph), or dg.compile's trace for one
    if type(x) is not np.ndarray and (is_dask(x) or has_unknown_size(shape) or (isinstance(x, Symbol) and
                                                                                 x.graph.lazy)):
        # chunks like x's, each made on its own, and a 0-d g left unreshaped, so Dask fuses g's own task
        # (the seed, say) into every chunk: a broadcast of one shared task made Dask's ordering finish the
        # whole forward pass before the first chunk's backward, holding every chunk of the data meanwhile
        # (a 4 GB gradient's peak RSS was 4 GB; it is 0.3 GB). NumPy's functions reach dagrad's ops for a
        # traced x (through __array_function__), which _core cannot import
        if _ndim(g) and _ndim(g) != len(shape):  # (an unknown size, after x[mask], cannot be reshaped: expand)
            g = g[tuple(None if a in axis else slice(None) for a in range(len(shape)))] if has_unknown_size(shape) \
                else reshape(g, kept)
        return np.multiply(g, np.ones_like(x, dtype=_dtype(g)))
    if _shape(g) != kept:
        g = reshape(g, kept)
    return broadcast_to(g, shape)

_sum = defop(
    "sum",
    lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    vjp=(lambda g, out, x, axis, keepdims: _expand(g, x, axis, keepdims),),
    jvp=(lambda t, out, x, axis, keepdims: sum(t, axis=axis, keepdims=keepdims),),
    shape=reduction_shape,
    fresh=True,
    dtype=accumulated,
    batch=over_axes,
    saves=(),
)

def _sum_to_forward(x, like):
    """x summed over the axes along which `like` was broadcast to x's shape."""
    shape = np.shape(like)
    axes = summed_axes(np.shape(x), shape)
    if axes is None:
        return np.broadcast_to(x, shape)
    # x's dtype kept, as broadcast_to (its adjoint) keeps it
    return np.sum(x, axis=axes, keepdims=True, dtype=x.dtype).reshape(shape) if axes else np.reshape(x, shape)


# the engine's unbroadcast when sizes are unknown until a static graph runs
_sum_to = defop(
    "sum_to",
    _sum_to_forward,
    vjp=(lambda g, out, x, like: broadcast_to(g, _shape(x)), None),
    jvp=(lambda t, out, x, like: sum_to(t, like), None),
    shape=lambda x_shape, like_shape: tuple(like_shape),
    dtype=first,
    batch=lambda op, values, batched, attrs: _sum_to_batch(*values, *batched),
    saves=(),
)


def _sum_to_batch(x, like, x_batched, like_batched):
    target = tuple(_shape(like))[like_batched:]
    if None in target:
        return batch_loop(_sum_to, (x, like), (x_batched, like_batched), {}), True
    if not x_batched:  # the same for every example
        return _sum_to_forward(x, np.broadcast_to(np.empty((), np.int8), target)) if not isinstance(x, Tensor) \
            else sum_to(x, np.broadcast_to(np.empty((), np.int8), target)), False
    size = _shape(x)[0]
    axes = summed_axes(tuple(_shape(x))[1:], target)
    if axes is None:
        return broadcast_to(lead(x, len(target)), (size, *target)), True
    if axes:
        x = sum(x, axis=tuple(a + 1 for a in axes), keepdims=True)
    return reshape(x, (size, *target)), True


@public(_sum_to)
def sum_to(x, like):
    """`x` summed down to the shape of `like` (undoing a broadcast), as the gradient of a broadcast needs."""
    return apply(_sum_to, (x, like))

@public(_sum)
def sum(x, axis=None, keepdims=False):
    """Sum over `axis` (None: all), as `np.sum`.

    >>> sum(np.ones((2, 3)), axis=0)
    array([2., 2., 2.])
    """
    return apply(_sum, (x,), {"axis": normalize_axis(axis, _ndim(x), "sum", x), "keepdims": bool(keepdims)})


# Complex numbers follow JAX and HIPS autograd: a cotangent ct of z pairs with a tangent t as
# Re(ct * t), without conjugation. So Re(z)'s tangent is Re(t), and its cotangent is g itself
# (Re(g * t) = g * Re(t) for real g), and the real part of a complex cotangent is what a real
# input receives (the engine takes it there).
_real = defop(
    "real",
    np.real,
    vjp=(lambda g, out, x: g,),
    jvp=(lambda t, out, x: real(t),),
    shape=lambda shape: shape,
    nargs=1,
    dtype=real_part,
    batch=elementwise,
    saves=(),
)
real = _real.function
real.__doc__ = """The real part, as `np.real` (of a real array: the array itself).

>>> real(np.array([1 + 2j, 3 - 1j]))
array([1., 3.])
"""
