"""The generic batching rules of `vmap`, which ops name in their declaration (`defop(..., batch=)`).

A rule is `batch(op, values, batched, attrs) -> (out, out_batched)`: `values` are one level down
(arrays, or the boxes and nodes of lower levels), those flagged in `batched` carry their examples
on axis 0, the others are the same for every example. The rule computes every example at once,
with the op itself or other ops, and says whether its result has the batch axis (always in front).
An op without a rule runs once per example (op.py's `_batch_loop`): slower, never wrong.

Rules reshape through NumPy's functions (`np.expand_dims`, `np.squeeze`, ...): on arrays they are
NumPy's, on Tensors and Symbols dagrad's own through `__array_function__` (as op.py's forward mode
broadcasts), since the ops of those names are declared one layer up.
"""

from __future__ import annotations

import numpy as np

from .op import Mapped, apply, batch_broadcast, batch_loop
from .shapes import dtype_of, ndim_of, shape_of
from .tensor import Tensor


def lead(value, rank):
    """A batched value whose examples get size-1 axes in front until they have `rank` axes, so that
    it broadcasts against per-example values of that rank."""
    missing = rank - (ndim_of(value) - 1)
    return np.expand_dims(value, tuple(range(1, 1 + missing))) if missing > 0 else value


def elementwise(op, values, batched, attrs):
    """Ops that broadcast their inputs: the batched ones are aligned on the right of the batch axis."""
    ranks = [len(shape_of(v)) - b for v, b in zip(values, batched)]
    rank = max(ranks)
    if any(b and r < rank for r, b in zip(ranks, batched)):
        values = [lead(v, rank) if b else v for v, b in zip(values, batched)]
    return apply(op, tuple(values), attrs or None), True


def _shifted(axis, rank):
    """A per-example axis attribute (None: every axis) as it reads with the batch axis in front."""
    if axis is None:
        return tuple(range(1, rank + 1))
    # a negative axis counts from the right, which the batch axis in front does not change
    if isinstance(axis, tuple):
        return tuple(a + 1 if a >= 0 else a for a in axis)
    return axis + 1 if axis >= 0 else axis


def over_axes(op, values, batched, attrs):
    """Ops of one array along `axis` (None: all axes, the result of the same kind): the axes shift by one."""
    if any(batched[1:]) or not batched[0]:
        return batch_loop(op, values, batched, attrs), True
    axis = _shifted(attrs.get("axis"), ndim_of(values[0]) - 1)
    return apply(op, tuple(values), {**attrs, "axis": axis}), True


def flat_axis(op, values, batched, attrs):
    """Ops whose `axis=None` means the flattened array (argmax, cumsum): each example is flattened."""
    if attrs.get("axis") is not None:
        return over_axes(op, values, batched, attrs)
    x = values[0]
    shape = shape_of(x)
    # a static graph's batch of unknown size is inferred (-1) from the known sizes of an example
    size = -1 if shape[0] is None and None not in shape[1:] else shape[0]
    out = apply(op, (np.reshape(x, (size, int(np.prod(shape[1:], dtype=np.int64)))),), {**attrs, "axis": 1})
    if attrs.get("keepdims"):
        out = np.reshape(out, (size,) + (1,) * (len(shape) - 1))
    return out, True


def stacked(op, values, batched, attrs):
    """Ops that already map over leading axes (np.linalg's stacked matrices): one batched operand
    needs nothing; several are aligned so that their batch axes meet."""
    rank = max(ndim_of(v) - b for v, b in zip(values, batched))
    values = tuple(lead(v, rank) if b else v for v, b in zip(values, batched))
    return apply(op, tuple(values), attrs or None), True


def matmul(op, values, batched, attrs):
    """np.matmul's rule: vectors become matrices, the stack axes are aligned on the right of the
    batch axis, and the added axes are taken away again."""
    a, b = values
    vector_a, vector_b = ndim_of(a) - batched[0] == 1, ndim_of(b) - batched[1] == 1
    # a batch of vectors against one matrix is one matrix product (a loop of vector products in NumPy
    # otherwise: a compiled 50 x 50 Hessian took 59 instead of 44 us, measured 2026-11-25)
    if vector_a and not batched[1] and ndim_of(b) == 2:
        return apply(op, (a, b)), True
    if vector_b and not batched[0] and ndim_of(a) == 2:
        return apply(op, (b, np.swapaxes(a, -1, -2))), True
    if vector_a:
        a = np.expand_dims(a, -2)
    if vector_b:
        b = np.expand_dims(b, -1)
    stack = max(ndim_of(a) - batched[0], ndim_of(b) - batched[1]) - 2
    a = lead(a, stack + 2) if batched[0] else a
    b = lead(b, stack + 2) if batched[1] else b
    out = apply(op, (a, b))
    if vector_a:
        out = np.squeeze(out, -2 if not vector_b else (-2, -1))
    elif vector_b:
        out = np.squeeze(out, -1)
    return out, True


def joined(op, values, batched, attrs):
    """concatenate and stack: every input gets the batch axis (the same values for an unmapped one)."""
    size = next(shape_of(v)[0] for v, b in zip(values, batched) if b)
    values = tuple(v if b else batch_broadcast(v, size) for v, b in zip(values, batched))
    return apply(op, values, {**attrs, "axis": attrs["axis"] + 1}), True


class Unbatchable(Exception):
    """An index this module does not batch: the op runs once per example instead."""


def _is_array_part(part):
    return type(part) is Mapped or isinstance(part, (np.ndarray, Tensor))


def _axes_before(parts, k, ndim):
    """How many axes of an example's result the parts of the index before `parts[k]` (its first advanced
    part: slices, None and Ellipsis before it) make, for an array of `ndim` axes."""
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)  # (no boolean masks here)
    return sum(ndim - consumed if p is Ellipsis else 1 for p in parts[:k])


def batched_index(index, size, x_batched, ndim):
    """`index` (per example; its Mapped parts are integer arrays with the batch on axis 0) as one index on
    the array (with the batch axis in front if `x_batched`, else the same for every example, of `ndim` axes
    per example), and `moves`: the (source, destination) axes that `moved` passes to np.moveaxis so that
    the result has the batch axis in front and each example's axes in NumPy's order (None: nothing to move).

    Every integer array keeps NumPy's meaning (negative entries count from the end, entries out of range
    raise IndexError when the index is taken): a mapped one selects with an arange over the batch beside it,
    as NumPy does itself. A boolean mask or a bool (a selection of its own size per example) is Unbatchable.
    """
    parts = index if type(index) is tuple else (index,)
    arrays = [k for k, p in enumerate(parts) if _is_array_part(p)]
    if any(isinstance(p, (bool, np.bool_)) for p in parts) or any(
            dtype_of(parts[k].value if type(parts[k]) is Mapped else parts[k]).kind == "b" for k in arrays):
        raise Unbatchable
    # with an array among them, integers are advanced indices too (NumPy's rule)
    advanced = [k for k, p in enumerate(parts) if k in arrays or (arrays and isinstance(p, (int, np.integer)))]
    adjacent = not advanced or advanced[-1] - advanced[0] + 1 == len(advanced)
    rank = len(np.broadcast_shapes(*(tuple(shape_of(parts[k].value))[1:] if type(parts[k]) is Mapped else
                                     tuple(shape_of(parts[k])) for k in arrays)))
    # NumPy puts the advanced axes where the advanced parts are when they are adjacent, else first
    before = _axes_before(parts, advanced[0], ndim) if advanced and adjacent else 0
    if not any(type(p) is Mapped for p in parts):  # the array has the batch axis: a full slice takes it
        return (slice(None), *parts), (None if adjacent else ((rank,), (0,)))
    parts = tuple(lead(p.value, rank) if type(p) is Mapped else p for p in parts)
    if not x_batched:  # the mapped arrays' batch axis is the first of the advanced axes
        return parts, (((before,), (0,)) if before else None)
    if size is None:
        raise Unbatchable  # the arange over the batch needs its size
    # the arange and the mapped arrays are advanced together, before any slice: their axes come first
    grid = np.arange(size).reshape((size,) + (1,) * rank)
    moves = ((tuple(range(1, 1 + rank)), tuple(range(1 + before, 1 + before + rank))) if before else None)
    return (grid, *parts), moves


def moved(value, moves):
    """The result of a batched index with its axes in place (`moves` from batched_index)."""
    return value if moves is None else np.moveaxis(value, *moves)


def moved_back(value, moves):
    """A value laid out as `moved` returns it, in the order the batched index produces (for scatter-adds)."""
    return value if moves is None else np.moveaxis(value, moves[1], moves[0])
