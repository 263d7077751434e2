"""Shape ops, indexing and joining."""

from __future__ import annotations

import numpy as np

from .._core.op import apply, defop, public
from .._core.errors import user_line
from .._core.shapes import SymbolicShape, broadcast_shapes, normalize_axis, runtime_shape
from .._core.shapes import dtype_of as _dtype
from .._core.shapes import ndim_of as _ndim
from .._core.shapes import shape_of as _shape
from .elementwise import where


# Ops that take a target shape (reshape, broadcast_to, index_add) accept one with unknown
# (None) sizes in a static graph when it is some node's SymbolicShape: that node becomes an
# extra, non-differentiable input (`source`) whose runtime shape fills in the unknown sizes.
def _shape_source(shape):
    return shape.ref if isinstance(shape, SymbolicShape) and None in shape else None


def _target_shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(None if n is None else int(n) for n in shape)


# -- reshape
def _reshape_shape(in_shape, *source_shape, shape):
    if -1 not in shape:
        return tuple(shape)
    known = [n for n in shape if n != -1]
    if None in in_shape or None in known:
        return tuple(None if n == -1 else n for n in shape)
    total = int(np.prod(in_shape))
    rest = int(np.prod(known))
    return tuple(total // rest if n == -1 else n for n in shape)


_reshape = defop(
    "reshape",
    lambda x, *source, shape: np.reshape(x, runtime_shape(shape, source)),
    vjp=(lambda g, out, x, *source, shape: reshape(g, _shape(x)),),
    jvp=(lambda t, out, x, *source, shape: reshape(t, _shape(out)),),
    shape=_reshape_shape,
)


@public(_reshape)
def reshape(x, shape, *more):
    """`x` with a new shape (one entry may be -1), as `np.reshape`."""
    if more:
        shape = (shape, *more)
    source = _shape_source(shape)
    shape = _target_shape(shape)
    if source is None and None in shape:
        if shape.count(None) != 1 or -1 in shape:
            raise ValueError(f"reshape: target shape {shape} has unknown sizes that cannot be inferred ({user_line()})")
        shape = tuple(-1 if n is None else n for n in shape)  # one unknown size: NumPy infers it
    in_shape = _shape(x)
    if None not in in_shape and None not in shape:
        shape = _reshape_shape(in_shape, shape=shape)
        if int(np.prod(shape)) != int(np.prod(in_shape)):
            raise ValueError(f"reshape: cannot reshape shape {tuple(in_shape)} into shape {shape} at {user_line()}")
    return apply(_reshape, (x,) if source is None else (x, source), {"shape": shape})


# -- transpose
def _transpose_shape(shape, axes):
    return tuple(shape[a] for a in axes)


_transpose = defop(
    "transpose",
    lambda x, axes: np.transpose(x, axes),
    vjp=(lambda g, out, x, axes: transpose(g, tuple(np.argsort(axes))),),
    jvp=(lambda t, out, x, axes: transpose(t, axes),),
    shape=_transpose_shape,
)


@public(_transpose)
def transpose(x, axes=None):
    """Permutes the axes (reverses them by default), as `np.transpose`."""
    ndim = _ndim(x)
    if axes is None:
        axes = tuple(range(ndim))[::-1]
    else:
        axes = tuple(int(a) % ndim if ndim else int(a) for a in axes)
        if sorted(axes) != list(range(ndim)):
            raise ValueError(f"transpose: axes {axes} are not a permutation of {ndim} dimensions")
    return apply(_transpose, (x,), {"axes": axes})


def swapaxes(x, axis1, axis2):
    """`x` with two axes exchanged, as `np.swapaxes`."""
    ndim = _ndim(x)
    axes = list(range(ndim))
    a, b = normalize_axis(axis1, ndim, "swapaxes")[0], normalize_axis(axis2, ndim, "swapaxes")[0]
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(x, axes)


# -- broadcasting and size-1 axes
_broadcast_to = defop(
    "broadcast_to",
    lambda x, *source, shape: np.broadcast_to(x, runtime_shape(shape, source)),
    vjp=(lambda g, out, x, *source, shape: g,),  # the engine sums g back down to x's shape
    jvp=(lambda t, out, x, *source, shape: broadcast_to(t, _shape(out)),),
    shape=lambda x_shape, *source_shape, shape: broadcast_shapes(x_shape, shape) and tuple(shape),
)


@public(_broadcast_to)
def broadcast_to(x, shape):
    """`x` broadcast to `shape`, as `np.broadcast_to`."""
    source = _shape_source(shape)
    shape = _target_shape(shape)
    return apply(_broadcast_to, (x,) if source is None else (x, source), {"shape": shape})


def _expand_dims_shape(shape, axis):
    out = list(shape)
    for a in axis:
        out.insert(a, 1)
    return tuple(out)


_expand_dims = defop(
    "expand_dims",
    lambda x, axis: np.expand_dims(x, axis),
    vjp=(lambda g, out, x, axis: reshape(g, _shape(x)),),
    jvp=(lambda t, out, x, axis: expand_dims(t, axis),),
    shape=_expand_dims_shape,
)


@public(_expand_dims)
def expand_dims(x, axis):
    """`x` with new size-1 axes at `axis` (int or tuple), as `np.expand_dims`."""
    axes = normalize_axis(axis, _ndim(x) + (1 if isinstance(axis, int) else len(axis)), "expand_dims")
    return apply(_expand_dims, (x,), {"axis": axes})


def _squeeze_shape(shape, axis):
    return tuple(n for i, n in enumerate(shape) if i not in axis)


_squeeze = defop(
    "squeeze",
    lambda x, axis: np.squeeze(x, axis),
    vjp=(lambda g, out, x, axis: reshape(g, _shape(x)),),
    jvp=(lambda t, out, x, axis: squeeze(t, axis),),
    shape=_squeeze_shape,
)


@public(_squeeze)
def squeeze(x, axis=None):
    """`x` without size-1 axes (all of them, or those in `axis`), as `np.squeeze`."""
    shape = _shape(x)
    if axis is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        axes = normalize_axis(axis, len(shape), "squeeze")
        for a in axes:
            if shape[a] != 1:
                raise ValueError(f"squeeze: cannot select axis {a} of shape {tuple(shape)}: its size is not 1")
    return apply(_squeeze, (x,), {"axis": axes})


# -- indexing
def _index_value(part):
    from .._core.tensor import Tensor

    if isinstance(part, Tensor):
        return part.numpy()
    if isinstance(part, list):
        return np.asarray(part)
    return part


def normalize_index(index):
    """An index with Tensors and lists turned into arrays (indices are never differentiated)."""
    if isinstance(index, tuple):
        return tuple(_index_value(p) for p in index)
    return _index_value(index)


def _is_basic(index):
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer)) for p in parts)


def _index_shape(shape, index):
    # Index stand-ins twice, with two different sizes for the unknown ones: the result sizes
    # that differ between the two are unknown too. Zero-stride stand-ins cost no memory.
    if None not in shape:
        return np.broadcast_to(np.empty((), np.int8), shape)[index].shape
    first = np.broadcast_to(np.empty((), np.int8), tuple(7 if n is None else n for n in shape))[index].shape
    second = np.broadcast_to(np.empty((), np.int8), tuple(11 if n is None else n for n in shape))[index].shape
    return tuple(a if a == b else None for a, b in zip(first, second))


def _index_add_forward(g, *source, index, shape):
    out = np.zeros(runtime_shape(shape, source), _dtype(g))
    if _is_basic(index):
        out[index] = g  # basic indices select each element at most once
    else:
        np.add.at(out, index, g)  # repeated integer indices add up
    return out


_getitem = defop(
    "getitem",
    lambda x, index: np.asarray(x)[index] if not hasattr(x, "__getitem__") else x[index],
    vjp=(lambda g, out, x, index: index_add(g, index, _shape(x)),),
    jvp=(lambda t, out, x, index: getitem(t, index),),
    shape=_index_shape,
)

_index_add = defop(
    "index_add",
    _index_add_forward,
    vjp=(lambda g, out, v, *source, index, shape: getitem(g, index),),
    jvp=(lambda t, out, v, *source, index, shape: index_add(t, index, _shape(out)),),
    shape=lambda v_shape, *source_shape, index, shape: tuple(shape),
)


@public(_getitem)
def getitem(x, index):
    """`x[index]`: basic slices, integer arrays and boolean masks, as NumPy indexes."""
    return apply(_getitem, (x,), {"index": normalize_index(index)})


@public(_index_add)
def index_add(values, index, shape):
    """Zeros of `shape` with `values` added at `index` (the adjoint of `getitem`)."""
    source = _shape_source(shape)
    attrs = {"index": normalize_index(index), "shape": _target_shape(shape)}
    return apply(_index_add, (values,) if source is None else (values, source), attrs)


# -- joining
def _concatenate_vjp(g, out, *xs, axis):
    cotangents = []
    start = 0
    for x in xs:
        stop = start + _shape(x)[axis]
        cotangents.append(getitem(g, (slice(None),) * axis + (slice(start, stop),)))
        start = stop
    return cotangents


def _concatenate_jvp(tangents, out, *xs, axis):
    parts = [np.zeros(_shape(x), _dtype(out)) if t is None else t for t, x in zip(tangents, xs)]
    return concatenate(parts, axis=axis)


def _concatenate_shape(*shapes, axis):
    first = list(shapes[0])
    sizes = [s[axis] for s in shapes]
    first[axis] = None if None in sizes else int(np.sum(sizes))
    return tuple(first)


_concatenate = defop(
    "concatenate",
    lambda *xs, axis: np.concatenate(xs, axis=axis),
    vjp=_concatenate_vjp,
    jvp=_concatenate_jvp,
    shape=_concatenate_shape,
)


@public(_concatenate)
def concatenate(arrays, axis=0):
    """Joins arrays along an existing axis, as `np.concatenate`."""
    arrays = tuple(arrays)
    if not arrays:
        raise ValueError("concatenate: need at least one array")
    axis = normalize_axis(axis, _ndim(arrays[0]), "concatenate")[0]
    return apply(_concatenate, arrays, {"axis": axis})


def stack(arrays, axis=0):
    """Joins arrays along a new axis, as `np.stack`."""
    arrays = tuple(arrays)
    if not arrays:
        raise ValueError("stack: need at least one array")
    shapes = {tuple(_shape(a)) for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"stack: all arrays must have the same shape, got {sorted(shapes)}")
    axis = normalize_axis(axis, _ndim(arrays[0]) + 1, "stack")[0]
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


# -- composites: exact gradients come from getitem / broadcast_to / reshape
def _axes_in_order(axis, ndim, op_name):
    """`axis` as a tuple of non-negative axes in the order given (NumPy's normalize_axis_tuple)."""
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{op_name}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op_name}: repeated axis in {axis}")
    return tuple(out)


def ravel(x):
    """`x` flattened to one dimension, as `np.ravel`."""
    return reshape(x, (-1,))


def flip(x, axis=None):
    """`x` with the order of elements reversed along `axis` (all axes when None), as `np.flip`."""
    ndim = _ndim(x)
    axes = range(ndim) if axis is None else _axes_in_order(axis, ndim, "flip")
    index = [slice(None)] * ndim
    for a in axes:
        index[a] = slice(None, None, -1)
    return getitem(x, tuple(index))


def moveaxis(x, source, destination):
    """`x` with axes moved from `source` to `destination`, as `np.moveaxis`."""
    ndim = _ndim(x)
    source = _axes_in_order(source, ndim, "moveaxis")
    destination = _axes_in_order(destination, ndim, "moveaxis")
    if len(source) != len(destination):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    order = [n for n in range(ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(x, order)


def split(x, indices_or_sections, axis=0):
    """A list of sub-arrays of `x` along `axis`, as `np.split`."""
    shape = _shape(x)
    axis = normalize_axis(axis, len(shape), "split")[0]
    n = shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ValueError(f"split: array split does not result in an equal division ({n} into {sections})")
        bounds = [n // sections * i for i in range(sections + 1)]
    else:
        bounds = [0, *[int(i) for i in indices_or_sections], n]
    lead = (slice(None),) * axis
    return [getitem(x, lead + (slice(start, stop),)) for start, stop in zip(bounds[:-1], bounds[1:])]


def repeat(x, repeats, axis=None):
    """Each element of `x` repeated `repeats` times along `axis` (flattened when None), as `np.repeat`."""
    if axis is None:
        x, axis = ravel(x), 0
    shape = _shape(x)
    axis = normalize_axis(axis, len(shape), "repeat")[0]
    if isinstance(repeats, (int, np.integer)):
        # a new axis broadcast to `repeats` and merged: the gradient sums the copies
        column = expand_dims(x, axis + 1)
        wide = broadcast_to(column, _like(column, shape[: axis + 1] + (int(repeats),) + shape[axis + 1 :]))
        return reshape(wide, shape[:axis] + (_times(shape[axis], int(repeats)),) + shape[axis + 1 :])
    index = np.repeat(np.arange(shape[axis]), np.asarray(repeats))
    return getitem(x, (slice(None),) * axis + (index,))


def tile(x, reps):
    """`x` repeated `reps` times along each axis, as `np.tile`."""
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    shape = _shape(x)
    ndim = max(len(reps), len(shape))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - len(shape)) + tuple(shape)
    # interleave a broadcast axis before each axis: (r0, s0, r1, s1, ...) -> (r0*s0, r1*s1, ...)
    spread = reshape(x, tuple(n for s in shape for n in (1, s)))
    spread = broadcast_to(spread, _like(spread, tuple(n for r, s in zip(reps, shape) for n in (r, s))))
    return reshape(spread, tuple(_times(r, s) for r, s in zip(reps, shape)))


def _like(x, dims):
    """`dims` for a shape of x's rank: in a static graph its unknown sizes are x's when it runs."""
    shape = _shape(x)
    return shape.derive(dims) if isinstance(shape, SymbolicShape) else dims


def _times(a, b):
    return None if a is None or b is None else a * b


_GATHER_PAD_MODES = ("edge", "reflect", "symmetric", "wrap")


def pad(x, pad_width, mode="constant", constant_values=0):
    """`x` padded by `pad_width`, as `np.pad` in modes constant, edge, reflect, symmetric and wrap."""
    shape = _shape(x)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(shape), 2))
    if (widths < 0).any():
        raise ValueError(f"pad: negative pad width in {pad_width}")
    if mode == "constant":
        padded = tuple(int(n + w[0] + w[1]) for n, w in zip(shape, widths))
        inner = tuple(slice(int(w[0]), int(w[0]) + n) for n, w in zip(shape, widths))
        out = index_add(x, inner, padded)
        if np.any(np.asarray(constant_values) != 0):
            border = np.pad(np.zeros(shape, _dtype(x)), widths, constant_values=constant_values)
            out = out + border
        return out
    if mode in _GATHER_PAD_MODES:
        # each output position reads one input position: np.pad of the indices says which
        for axis, (before, after) in enumerate(widths):
            if before or after:
                index = np.pad(np.arange(shape[axis]), (int(before), int(after)), mode=mode)
                x = getitem(x, (slice(None),) * axis + (index,))
        return x
    raise ValueError(f"pad: mode {mode!r} is not supported; use one of constant, {', '.join(_GATHER_PAD_MODES)}")


def _where_triangle(x, k, keep):
    shape = _shape(x)
    if len(shape) < 2:  # NumPy broadcasts a vector to a square matrix first
        x = broadcast_to(x, (shape[0], shape[0]) if shape else (1, 1))
        shape = _shape(x)
    if None in shape[-2:]:
        raise ValueError(f"{keep.__name__}: the last two axes need known sizes (a static graph has shape {shape})")
    return where(keep(np.ones(shape[-2:], dtype=bool), int(k)), x, 0)


def triu(x, k=0):
    """The upper triangle of (the last two axes of) `x`, the rest zero, as `np.triu`."""
    return _where_triangle(x, k, np.triu)


def tril(x, k=0):
    """The lower triangle of (the last two axes of) `x`, the rest zero, as `np.tril`."""
    return _where_triangle(x, k, np.tril)
