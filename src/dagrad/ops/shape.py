"""Shape ops, indexing and joining."""

from __future__ import annotations

import builtins

import numpy as np

from .._core.dtypes import first, promoted
from .._core.op import Mapped, apply, batch_broadcast, batch_loop, defop, public
from .._core import batching, dask_ops
from .._core.backends import is_dask, zeros
from .._core.errors import user_error
from .._core.shapes import SymbolicShape, as_index, broadcast_shapes, is_sequence, normalize_axis
from .._core.shapes import normalize_axis_index, runtime_shape
from .._core.shapes import dtype_of as _dtype
from .._core.shapes import ndim_of as _ndim
from .._core.shapes import shape_of as _shape
from .._core.structural import batch_source, broadcast_to, reshape, shape_source, target_shape
from .elementwise import where, zeros_like
from .._core.tensor import Batched, Tensor, is_symbolic


# -- transpose
def _transpose_shape(shape, axes):
    return tuple(shape[a] for a in axes)


_transpose = defop(
    "transpose",
    lambda x, axes: np.transpose(x, axes),
    vjp=(lambda g, out, x, axes: transpose(g, tuple(sorted(range(len(axes)), key=axes.__getitem__))),),
    jvp=(lambda t, out, x, axes: transpose(t, axes),),
    shape=_transpose_shape,
    dtype=first,
    batch=lambda op, values, batched, attrs: (
        apply(op, values, {"axes": (0, *(a + 1 for a in attrs["axes"]))}), True),
    saves=(),
)


@public(_transpose)
def transpose(x, axes=None):
    """Permutes the axes (reverses them by default), as `np.transpose`."""
    ndim = _ndim(x)
    if axes is None:
        axes = tuple(range(ndim))[::-1]
    else:
        if not is_sequence(axes):
            axes = (axes,)  # np.transpose(vector, 0)
        if len(axes) != ndim:
            raise user_error(ValueError, "transpose", f"axes {tuple(axes)!r} do not match an array of dimension {ndim}",
                             x)
        axes = normalize_axis(axes, ndim, "transpose", x, ordered=True, name="axes")
    return apply(_transpose, (x,), {"axes": axes})


def swapaxes(x, axis1, axis2):
    """`x` with two axes exchanged, as `np.swapaxes`."""
    ndim = _ndim(x)
    axes = list(range(ndim))
    a = normalize_axis_index(axis1, ndim, "swapaxes", x, name="axis1")
    b = normalize_axis_index(axis2, ndim, "swapaxes", x, name="axis2")
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(x, axes)


# -- broadcasting and size-1 axes
def _expand_dims_shape(shape, axis):
    out = list(shape)
    for a in axis:
        out.insert(a, 1)
    return tuple(out)


_expand_dims = defop(
    "expand_dims",
    # a reshape: np.expand_dims does the same in 3.6 us, a reshape in 0.6 (vmap's rules call it often)
    lambda x, axis: np.reshape(x, _expand_dims_shape(np.shape(x), axis)),
    vjp=(lambda g, out, x, axis: reshape(g, _shape(x)),),
    jvp=(lambda t, out, x, axis: expand_dims(t, axis),),
    shape=_expand_dims_shape,
    dtype=first,
    batch=batching.over_axes,
    saves=(),
)


@public(_expand_dims)
def expand_dims(x, axis):
    """`x` with new size-1 axes at `axis` (int or tuple), as `np.expand_dims`."""
    axes = normalize_axis(axis, _ndim(x) + (len(axis) if is_sequence(axis) else 1), "expand_dims", x)
    return apply(_expand_dims, (x,), {"axis": axes})


def _squeeze_shape(shape, axis):
    return tuple(n for i, n in enumerate(shape) if i not in axis)


_squeeze = defop(
    "squeeze",
    lambda x, axis: np.squeeze(x, axis),
    vjp=(lambda g, out, x, axis: reshape(g, _shape(x)),),
    jvp=(lambda t, out, x, axis: squeeze(t, axis),),
    shape=_squeeze_shape,
    dtype=first,
    batch=batching.over_axes,
    saves=(),
)


@public(_squeeze)
def squeeze(x, axis=None):
    """`x` without size-1 axes (all of them, or those in `axis`), as `np.squeeze`."""
    shape = _shape(x)
    if axis is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        axes = normalize_axis(axis, len(shape), "squeeze", x)
        for a in axes:
            if shape[a] != 1:
                raise user_error(ValueError, "squeeze", f"cannot select axis {a}: its size is {shape[a]}, not 1", x)
    return apply(_squeeze, (x,), {"axis": axes})


# -- indexing
def _holds_dask(x):
    while isinstance(x, Tensor) and x._value is not x:  # (a static graph's node is its own value)
        x = x._value
    return is_dask(x)


def _index_value(part, of):
    while isinstance(part, Tensor) and part._level and type(part) is not Batched:
        part = part._value  # a box of grad or jvp: an index has no derivative, its value is the index
    if isinstance(part, Tensor) and part._level:
        return part  # a transform's box (vmap's batched indices): dispatch finds it (Op.boxed_index)
    if isinstance(part, Tensor):
        value = part._value
        if type(value) is not np.ndarray and is_dask(value) and value.dtype == bool and _holds_dask(of):
            return value  # a Dask mask of a Dask array stays lazy (x[x > 0]): numpy() would compute it
        return part.numpy()
    if isinstance(part, list):
        return np.asarray(part)
    return part


def normalize_index(index, of=None):
    """An index with Tensors and lists turned into arrays (indices are never differentiated); a boolean mask
    held in a Dask array is kept as it is when the array indexed, `of`, is a Dask array too."""
    if isinstance(index, tuple):
        return tuple(_index_value(p, of) for p in index)
    return _index_value(index, of)


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


def _getitem_batch(op, values, batched, attrs):
    x = values[0]  # batched: apply() gives an index mapped over an unmapped x the batch axis
    try:
        index, moves = batching.batched_index(attrs["index"], _shape(x)[0], True, _ndim(x) - 1)
    except batching.Unbatchable:
        return batch_loop(op, values, batched, attrs), True
    return batching.moved(apply(op, (x,), {"index": index}), moves), True


def _index_add_batch(op, values, batched, attrs):
    g = values[0]
    size = _shape(g)[0]
    if len(values) > 1 or any(batched[1:]):  # sizes known only when a graph runs
        return batch_loop(op, values, batched, attrs), True
    try:
        index, moves = batching.batched_index(attrs["index"], size, True, len(attrs["shape"]))
    except batching.Unbatchable:
        return batch_loop(op, values, batched, attrs), True
    batch, g = g, batching.moved_back(g, moves)
    if size is None:  # a static graph's batch of unknown size: g (batch in front) is the shape source
        shape = (None, *attrs["shape"])
        return apply(op, (g, batch_source(batch, len(shape))), {"index": index, "shape": shape}), True
    return apply(op, (g,), {"index": index, "shape": (size, *attrs["shape"])}), True


def _index_add_forward(g, *source, index, shape):
    if type(g) is not np.ndarray and is_dask(g):  # zeros of its type, written lazily (a NumPy out would compute g)
        return dask_ops.index_add(g, index, runtime_shape(shape, source))
    out = zeros(runtime_shape(shape, source), _dtype(g), g)  # on g's device, for a CuPy g
    if _is_basic(index):
        out[index] = g  # basic indices select each element at most once
    else:
        np.add.at(out, index, g)  # repeated integer indices add up
    return out


def _getitem_forward(x, index):
    if type(x) is np.ndarray:
        return x[index]
    if is_dask(x):  # Dask indexes orthogonally where NumPy broadcasts: NumPy's semantics by dask_ops
        return dask_ops.getitem(x, index)
    return np.asarray(x)[index] if not hasattr(x, "__getitem__") else x[index]


_getitem = defop(
    "getitem",
    _getitem_forward,
    vjp=(lambda g, out, x, index: index_add(g, index, _shape(x)),),
    jvp=(lambda t, out, x, index: getitem(t, index),),
    shape=_index_shape,
    dtype=first,
    batch=_getitem_batch,
    boxed_index=True,
    saves=("index",),
)

_index_add = defop(
    "index_add",
    _index_add_forward,
    vjp=(lambda g, out, v, *source, index, shape: getitem(g, index),),
    jvp=(lambda t, out, v, *source, index, shape: index_add(t, index, _shape(out)),),
    shape=lambda v_shape, *source_shape, index, shape: tuple(shape),
    shape_source=True,
    dtype=first,
    batch=_index_add_batch,
    boxed_index=True,
    saves=("index",),
)


def _setitem_forward(x, v, index):
    if is_dask(x) or is_dask(v):
        return dask_ops.setitem(x, v, index)
    out = np.array(x)  # a copy, of x's dtype
    out[index] = v
    return out


def _setitem_shape(x, v, index):
    target = _index_shape(x, index)
    fits = tuple(v)
    while len(fits) > len(target) and fits[0] in (1, None):  # NumPy drops leading size-1 axes of the value
        fits = fits[1:]
    # each axis of the value is 1 or the target's size (None, unknown until the graph runs, may be either)
    fits = len(fits) <= len(target) and all(
        n in (1, None) or m is None or n == m for n, m in zip(fits[::-1], tuple(target)[::-1]))
    if not fits:
        raise ValueError(f"could not broadcast input array from shape {tuple(v)} into shape {tuple(target)}")
    return tuple(x)


# x with x[index] = v, as a new array (Tensor.__setitem__ writes it into x when it records the write):
# the gradient is g with zeros at `index` for x, g[index] for v (summed to v's shape by the engine)
_setitem = defop(
    "setitem",
    _setitem_forward,
    vjp=(lambda g, out, x, v, index: setitem(g, index, 0), lambda g, out, x, v, index: getitem(g, index)),
    jvp=(lambda t, out, x, v, index: setitem(t, index, 0),
         lambda t, out, x, v, index: setitem(zeros_like(out), index, t)),
    shape=_setitem_shape,
    fresh=True,
    dtype=first,
    boxed_index=True,  # batched by running once per example
    saves=("index",),
)


@public(_setitem)
def setitem(x, index, v):
    """`x` with `x[index] = v`, as a new array (x is unchanged): the functional form of item assignment,
    as JAX's `x.at[index].set(v)`. `v` broadcasts to `x[index]` and is cast to x's dtype.

    >>> setitem(np.zeros(3), 1, 5.0)
    array([0., 5., 0.])
    """
    return apply(_setitem, (x, v), {"index": normalize_index(index, x)})


# -- an index whose integer arrays are graph values (a placeholder, a value dg.compile traces, a value vmap maps
# under dg.compile): the arrays are inputs of a `gather` node, the rest of the index (slices, integers, None,
# Ellipsis) its attribute `index`, holding None at the positions `at` where the arrays go. NumPy takes the
# index when the node runs, so negative entries count from the end and entries out of range raise IndexError,
# on every path; its adjoint `scatter_add` adds up at repeated entries (np.add.at).
def _filled(index, at, arrays):
    """`index` with `arrays` at the positions `at`."""
    parts = list(index)
    for k, a in zip(at, arrays):
        parts[k] = a
    return tuple(parts)


def _gather_forward(x, *arrays, index, at):
    return _getitem_forward(x, _filled(index, at, arrays))


def _gather_shape(x, *arrays, index, at):
    # the index taken on stand-ins (zero-stride zeros), twice with different sizes for the unknown ones:
    # the result sizes that differ are unknown too; NumPy's own errors for an index that does not fit
    def taken(n):
        known = [tuple(n if d is None else d for d in shape) for shape in arrays]
        stand_ins = [np.broadcast_to(np.zeros((), np.intp), shape) for shape in known]
        return _index_shape(tuple(n if d is None else d for d in x), _filled(index, at, stand_ins))

    if None not in x and not any(None in shape for shape in arrays):
        return taken(0)
    return tuple(a if a == b else None for a, b in zip(taken(7), taken(11)))


def _scatter_add_forward(g, *rest, index, at, shape):
    arrays, source = rest[:len(at)], rest[len(at):]
    full = _filled(index, at, arrays)
    if any(is_dask(a) for a in arrays):  # refused there: a scatter-add plans its blocks from the indices' values
        return dask_ops.index_add(g, full, runtime_shape(shape, source))
    return _index_add_forward(g, *source, index=full, shape=shape)


def _split_index(index):
    """(template, at, arrays) of an index: the arrays out, None in their place."""
    parts = index if type(index) is tuple else (index,)
    at = tuple(k for k, p in enumerate(parts) if isinstance(p, (np.ndarray, Tensor)))
    return tuple(None if k in at else p for k, p in enumerate(parts)), at, tuple(parts[k] for k in at)


def _gather_batch(op, values, batched, attrs):
    x, arrays = values[0], values[1:]
    parts = _filled(attrs["index"], attrs["at"], [Mapped(a) if b else a for a, b in zip(arrays, batched[1:])])
    size = next((_shape(v)[0] for v, b in zip(values, batched) if b), None)
    try:
        index, moves = batching.batched_index(parts, size, batched[0], _ndim(x) - batched[0])
    except batching.Unbatchable:
        return batch_loop(op, values, batched, attrs), True
    template, at, arrays = _split_index(index)
    return batching.moved(apply(op, (x, *arrays), {"index": template, "at": at}), moves), True


def _scatter_add_batch(op, values, batched, attrs):
    index, at, shape = attrs["index"], attrs["at"], attrs["shape"]
    g, arrays = values[0], values[1:1 + len(at)]
    size = next(_shape(v)[0] for v, b in zip(values, batched) if b)
    if len(values) > 1 + len(at) or (size is None and any(batched[1:])):  # sizes known only when a graph runs
        return batch_loop(op, values, batched, attrs), True
    parts = _filled(index, at, [Mapped(a) if b else a for a, b in zip(arrays, batched[1:])])
    try:
        index, moves = batching.batched_index(parts, size, True, len(shape))
    except batching.Unbatchable:
        return batch_loop(op, values, batched, attrs), True
    batch = g = g if batched[0] else batch_broadcast(g, size)
    g = batching.moved_back(g, moves)
    template, at, arrays = _split_index(index)
    if size is None:  # a static graph's batch of unknown size: g (batch in front) is the shape source
        out_shape = (None, *shape)
        return apply(op, (g, *arrays, batch_source(batch, len(out_shape))), {"index": template, "at": at,
                                                                             "shape": out_shape}), True
    return apply(op, (g, *arrays), {"index": template, "at": at, "shape": (size, *shape)}), True


def _index_axes(template, at, ndim):
    """The axis of an `ndim`-d array that each integer array of an index (at the positions `at` of `template`,
    which holds None there) indexes, as NumPy assigns them: None (a new axis) takes none, Ellipsis the axes no
    other part takes, anything else one."""
    taken = sum(1 for k, p in enumerate(template) if k in at or (p is not None and p is not Ellipsis))
    axes, axis = {}, 0
    for k, p in enumerate(template):
        if k in at:
            axes[k] = axis
            axis += 1
        elif p is Ellipsis:
            axis += ndim - taken
        elif p is not None:
            axis += 1
    return [axes[k] for k in at]


def _bounds(arrays, axes, shape):
    """Op.validates of an index: [(array, size, axis)] for the integer `arrays` indexing `axes` of `shape`."""
    shape = tuple(shape)
    if any(shape[a] is None for a in axes):
        return None
    return [(a, shape[axis], axis) for a, axis in zip(arrays, axes)]


def _gather_bounds(x, *arrays, index, at):
    return _bounds(arrays, _index_axes(index, at, len(_shape(x))), _shape(x))


def _scatter_add_bounds(g, *rest, index, at, shape):
    return _bounds(rest[:len(at)], _index_axes(index, at, len(shape)), shape)


_gather = defop(
    "gather",
    _gather_forward,
    vjp=(lambda g, out, x, *arrays, index, at: scatter_add(g, arrays, index, at, _shape(x)),),
    jvp=(lambda t, out, x, *arrays, index, at: apply(_gather, (t, *arrays), {"index": index, "at": at}),),
    shape=_gather_shape,
    dtype=first,
    batch=_gather_batch,
    validates=_gather_bounds,  # an index out of range raises IndexError
    # undeclared (reads everything): its rules read every index array, inputs 1..k, whose number varies
)
_scatter_add = defop(
    "scatter_add",
    _scatter_add_forward,
    vjp=(lambda g, out, v, *rest, index, at, shape: apply(_gather, (g, *rest[:len(at)]), {"index": index,
                                                                                          "at": at}),),
    jvp=(lambda t, out, v, *rest, index, at, shape: scatter_add(t, rest[:len(at)], index, at, _shape(out)),),
    shape=lambda v, *rest, index, at, shape: tuple(shape),
    shape_source=True,
    fresh=True,
    dtype=first,
    batch=_scatter_add_batch,
    validates=_scatter_add_bounds,
    # undeclared, as gather's
)


def scatter_add(values, arrays, index, at, shape):
    """Zeros of `shape` with `values` added at the index `index` whose positions `at` hold `arrays` (graph
    values): the adjoint of a gather node. Repeated entries add up.

    >>> scatter_add(np.ones(3), (np.array([0, 2, 0]),), (None,), (0,), (3,))
    array([2., 0., 1.])
    """
    source = shape_source(shape)
    attrs = {"index": tuple(index), "at": tuple(at), "shape": target_shape(shape, "scatter_add", values)}
    arrays = tuple(arrays)
    return apply(_scatter_add, (values, *arrays) if source is None else (values, *arrays, source), attrs)


def _index_arrays(x, index, where):
    """`index` as (template, at, arrays) for a gather node: its integer arrays (graph values, boxes, NumPy
    arrays, lists) as inputs, a NumPy boolean mask as its nonzero arrays (NumPy's reading). A traced
    boolean mask or a bool is refused: the result's size would be known only when it runs."""
    parts = []
    for p in index if isinstance(index, tuple) else (index,):
        if isinstance(p, list):
            p = np.asarray(p)
        elif isinstance(p, Tensor) and not p._level and not is_symbolic(p):
            p = p.numpy()  # an eager tensor: its values
        if isinstance(p, Tensor) and _dtype(p).kind == "b":
            raise user_error(IndexError, where, "an index known only when the graph runs must be integers, got "
                             "dtype bool (a boolean mask's result size would be known only then; use dg.where to "
                             "select instead)", x)
        if isinstance(p, (bool, np.bool_)):
            raise user_error(IndexError, where, f"a bool ({p}) in an index with values known only when the graph "
                             "runs is not supported", x)
        if isinstance(p, np.ndarray) and p.dtype.kind == "b":
            parts.extend(np.nonzero(p))
            continue
        if isinstance(p, (np.ndarray, Tensor)) and _dtype(p).kind not in "iu":
            raise user_error(IndexError, where, f"arrays used as indices must be integers (or booleans), got dtype "
                             f"{_dtype(p)}", x)
        parts.append(p)
    return _split_index(tuple(parts))


def _traced_index(x, index):
    """`x[index]` where a part of the index is a graph's value (a placeholder, a value dg.compile traces): a
    gather node, which takes the index as NumPy does when the graph runs."""
    template, at, arrays = _index_arrays(x, index, "getitem")
    return apply(_gather, (x, *arrays), {"index": template, "at": at})


@public(_getitem)
def getitem(x, index):
    """`x[index]`: basic slices, integer arrays and boolean masks, as NumPy indexes. An integer index that
    is itself a graph's value (`x[labels]` where labels is a placeholder, or under `dg.compile`) is
    taken when the graph runs."""
    parts = index if isinstance(index, tuple) else (index,)
    if any(isinstance(p, Tensor) and is_symbolic(p) for p in parts):
        return _traced_index(x, index)
    return apply(_getitem, (x,), {"index": normalize_index(index, x)})


@public(_index_add)
def index_add(values, index, shape):
    """Zeros of `shape` with `values` added at `index` (the adjoint of `getitem`)."""
    source = shape_source(shape)
    attrs = {"index": normalize_index(index), "shape": target_shape(shape, "index_add", values)}
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


def _joined_tangents(join):
    """The jvp rule of a joining op: the tangents joined as the values are (zeros for an input
    without one)."""

    def jvp(tangents, out, *xs, axis):
        return join([np.zeros(_shape(x), _dtype(out)) if t is None else t for t, x in zip(tangents, xs)], axis=axis)

    return jvp


def _concatenate_shape(*shapes, axis):
    first = list(shapes[0])
    for s in shapes[1:]:
        if len(s) != len(first) or any(
            a != b and a is not None and b is not None for i, (a, b) in enumerate(zip(s, first)) if i != axis
        ):
            raise ValueError(
                f"concatenate: all the input array dimensions except for the concatenation axis {axis} must match "
                f"exactly, got shapes {', '.join(str(tuple(s)) for s in shapes)}"
            )
    sizes = [s[axis] for s in shapes]
    first[axis] = None if None in sizes else int(np.sum(sizes))
    return tuple(first)


_concatenate = defop(
    "concatenate",
    lambda *xs, axis: np.concatenate(xs, axis=axis),
    vjp=_concatenate_vjp,
    jvp=_joined_tangents(lambda parts, axis: concatenate(parts, axis=axis)),
    shape=_concatenate_shape,
    fresh=True,
    dtype=promoted,
    batch=batching.joined,
    saves=(),
)


@public(_concatenate)
def concatenate(arrays, axis=0):
    """Joins arrays along an existing axis (of the flattened arrays when None), as `np.concatenate`."""
    arrays = tuple(arrays)
    if not arrays:
        raise user_error(ValueError, "concatenate", "need at least one array")
    if axis is None:
        arrays, axis = tuple(ravel(a) for a in arrays), 0
    ndim = _ndim(arrays[0])
    if ndim == 0:
        raise user_error(ValueError, "concatenate", "zero-dimensional arrays cannot be concatenated", *arrays)
    axis = normalize_axis_index(axis, ndim, "concatenate", *arrays)
    return apply(_concatenate, arrays, {"axis": axis})


def _stack_shape(*shapes, axis):
    first = shapes[0]
    if any(len(s) != len(first) or any(a != b and None not in (a, b) for a, b in zip(s, first)) for s in shapes):
        raise ValueError(f"stack: all input arrays must have the same shape, got shapes "
                         f"{', '.join(str(tuple(s)) for s in shapes)}")
    return tuple(first[:axis]) + (len(shapes),) + tuple(first[axis:])


def _stack_vjp(g, out, *xs, axis):
    return [getitem(g, (slice(None),) * axis + (k,)) for k in range(len(xs))]


_stack = defop(
    "stack",
    lambda *xs, axis: np.stack(xs, axis=axis),
    vjp=_stack_vjp,
    jvp=_joined_tangents(lambda parts, axis: stack(parts, axis=axis)),
    shape=_stack_shape,
    fresh=True,
    dtype=promoted,
    batch=batching.joined,
    saves=(),
)


@public(_stack)
def stack(arrays, axis=0):
    """Joins arrays along a new axis, as `np.stack`."""
    arrays = tuple(arrays)
    if not arrays:
        raise user_error(ValueError, "stack", "need at least one array")
    if len({tuple(_shape(a)) for a in arrays}) != 1:
        raise user_error(ValueError, "stack", "all input arrays must have the same shape", *arrays)
    axis = normalize_axis_index(axis, _ndim(arrays[0]) + 1, "stack", *arrays)
    return apply(_stack, arrays, {"axis": axis})


def _holds_tensor(obj):
    return isinstance(obj, Tensor) or (isinstance(obj, (list, tuple)) and any(_holds_tensor(o) for o in obj))


def as_array(obj, op):
    """`obj` as one array-like value, as NumPy reads a nested list: a (nested) list or tuple holding
    Tensors (traced values) is stacked, so `mean([x, x + 2])` differentiates; other values pass unchanged.

    >>> as_array([[1.0, 2.0], (3.0, 4.0)], "mean")
    array([[1., 2.],
           [3., 4.]])
    """
    if not isinstance(obj, (list, tuple)):
        return obj
    if not _holds_tensor(obj):
        try:
            return np.asarray(obj)
        except ValueError as err:  # a ragged list
            raise user_error(ValueError, op, f"cannot make an array of the list: {err}") from None
    if not obj:
        return np.asarray(obj)
    parts = [as_array(o, op) for o in obj]
    shapes = [tuple(_shape(p)) for p in parts]
    if len(set(shapes)) != 1:
        raise user_error(ValueError, op, f"the list's items must have one shape to make an array, got shapes "
                         f"{', '.join(map(str, shapes))}")
    return stack(parts)


# -- composites: exact gradients come from getitem / broadcast_to / reshape
def ravel(x):
    """`x` flattened to one dimension, as `np.ravel`."""
    return reshape(x, (-1,))


def flatten(x, start_dim=0, end_dim=-1):
    """`x` with axes start_dim..end_dim merged into one, as `torch.flatten` (by default all of them:
    `np.ravel`; a 0-d `x` gives shape (1,), as PyTorch).

    >>> flatten(np.zeros((2, 3, 4)), 1).shape
    (2, 12)
    """
    shape = _shape(x)
    if not shape:
        return reshape(x, (1,))
    start = normalize_axis_index(start_dim, len(shape), "flatten", x, name="start_dim")
    end = normalize_axis_index(end_dim, len(shape), "flatten", x, name="end_dim")
    if start > end:
        raise user_error(ValueError, "flatten", f"start_dim {start_dim} comes after end_dim {end_dim}", x)
    merged = shape[start:end + 1]
    dims = (*shape[:start], -1 if None in merged else int(np.prod(merged)), *shape[end + 1:])
    if dims.count(None) + dims.count(-1) > 1:
        raise user_error(ValueError, "flatten", f"shape {tuple(shape)} has more unknown sizes than a reshape can "
                         "infer (one)", x)
    return reshape(x, tuple(-1 if n is None else n for n in dims))


def expand(x, *sizes):
    """`x` broadcast to `sizes`, where -1 keeps a size, as `torch.Tensor.expand` (a view: no copy).

    >>> expand(np.array([[1.0], [2.0]]), -1, 3)
    array([[1., 1., 1.],
           [2., 2., 2.]])
    """
    sizes = tuple(sizes[0]) if len(sizes) == 1 and is_sequence(sizes[0]) else sizes
    shape = _shape(x)
    lead = len(sizes) - len(shape)
    if lead < 0 or builtins.any(n == -1 for n in sizes[:lead]):
        raise user_error(ValueError, "expand", f"sizes {sizes} must name every axis of shape {tuple(shape)} (-1 "
                         "keeps one), and new leading axes need a size", x)
    return broadcast_to(x, tuple(shape[i - lead] if n == -1 else n for i, n in enumerate(sizes)))


def take_along_axis(x, indices, axis):
    """Values of `x` at `indices` along `axis`, as `np.take_along_axis` (PyTorch's `gather`); the
    gradient adds up at repeated indices. The indices may be computed (`argsort` of a traced value).

    >>> take_along_axis(np.array([[10.0, 20.0], [30.0, 40.0]]), np.array([[1], [0]]), 1)
    array([[20.],
           [30.]])
    """
    shape = _shape(x)
    index = indices if isinstance(indices, Tensor) or is_dask(indices) else np.asarray(normalize_index(indices))
    if _dtype(index).kind not in "iu" or len(_shape(index)) != len(shape):
        raise user_error(ValueError if _dtype(index).kind in "iu" else IndexError, "take_along_axis",
                         f"indices must be integers with as many dimensions as x ({len(shape)}), got shape "
                         f"{tuple(_shape(index))} and dtype {_dtype(index)}", x)
    axis = normalize_axis_index(axis, len(shape), "take_along_axis", x)
    return apply(_take_along, (x, index), {"axis": axis})


def _along_shape(x, indices, axis):
    rest = broadcast_shapes(tuple(x[:axis]) + tuple(x[axis + 1:]), tuple(indices[:axis]) + tuple(indices[axis + 1:]))
    return rest[:axis] + (indices[axis],) + rest[axis:]


def _scatter_along_forward(g, indices, *source, axis, shape):
    if is_dask(g) or is_dask(indices):
        return dask_ops.scatter_along_axis(g, indices, axis, runtime_shape(shape, source))
    out = np.zeros(runtime_shape(shape, source), _dtype(g))
    sizes = np.shape(g)
    grid = list(_along(indices, sizes, axis))
    for i, n in enumerate(out.shape):  # an axis x broadcast from size 1 gathers its one entry everywhere
        if i != axis and n == 1 and sizes[i] != 1:
            grid[i] = np.zeros_like(grid[i])
    np.add.at(out, tuple(np.broadcast_arrays(*grid)), g)  # repeated indices add up
    return out


def scatter_along_axis(values, indices, axis, shape):
    """Zeros of `shape` with `values` added at `indices` along `axis`: the adjoint of take_along_axis."""
    source = shape_source(shape)
    attrs = {"axis": axis, "shape": target_shape(shape, "scatter_along_axis", values)}
    return apply(_scatter_along, (values, indices) if source is None else (values, indices, source), attrs)


def _along_batch(op, values, batched, attrs):
    """Both arrays get the batch axis (the same values for an unmapped one); the axis shifts by one."""
    if len(values) > 2:  # sizes known only when a graph runs
        return batch_loop(op, values, batched, attrs), True
    size = next(_shape(v)[0] for v, b in zip(values, batched) if b)
    if size is None and "shape" in attrs:  # scatter's result shape needs the batch size
        return batch_loop(op, values, batched, attrs), True
    # take_along_axis broadcasts its arguments, so an unmapped one needs only a batch axis of 1 (the size
    # may be unknown until a graph runs)
    values = [v if b else (np.expand_dims(v, 0) if size is None else batch_broadcast(v, size))
              for v, b in zip(values, batched)]
    extra = {"shape": (size, *attrs["shape"])} if "shape" in attrs else {}
    return apply(op, tuple(values), {**attrs, "axis": attrs["axis"] + 1, **extra}), True


_take_along = defop(
    "take_along_axis",
    lambda x, indices, axis: (dask_ops.take_along_axis(x, indices, axis) if is_dask(x) or is_dask(indices)
                              else np.take_along_axis(x, indices, axis)),
    vjp=(lambda g, out, x, indices, axis: scatter_along_axis(g, indices, axis, _shape(x)), None),
    jvp=(lambda t, out, x, indices, axis: apply(_take_along, (t, indices), {"axis": axis}), None),
    shape=_along_shape,
    dtype=first,
    batch=_along_batch,
    saves=(1,),
    validates=lambda x, indices, axis: _bounds((indices,), (axis,), _shape(x)),  # out of range: IndexError
)
_scatter_along = defop(
    "scatter_along_axis",
    _scatter_along_forward,
    vjp=(lambda g, out, v, indices, *source, axis, shape: apply(_take_along, (g, indices), {"axis": axis}), None),
    jvp=(lambda t, out, v, indices, *source, axis, shape: scatter_along_axis(t, indices, axis, _shape(out)), None),
    shape=lambda v, indices, *source, axis, shape: tuple(shape),
    shape_source=True,
    fresh=True,
    dtype=first,
    batch=_along_batch,
    saves=(1,),
    validates=lambda v, indices, *source, axis, shape: _bounds((indices,), (axis,), shape),
)

# the orders of sort and partition (no gradient: they are integers)
# Dask has no argsort (NumPy's would load the array): on a Dask array each block holding the whole axis is sorted
_argsort = defop("argsort", lambda x, axis: (dask_ops.along_axis(np.argsort, x, axis, kind="stable") if is_dask(x)
                                             else np.argsort(x, axis=axis, kind="stable")),
                 shape=lambda shape, axis: tuple(shape), dtype=lambda x, axis: np.dtype(np.intp),
                 batch=batching.over_axes)
_argpartition = defop("argpartition", lambda x, kth, axis: (dask_ops.along_axis(np.argpartition, x, axis, kth=kth)
                                                            if is_dask(x) else np.argpartition(x, kth, axis=axis)),
                      shape=lambda shape, kth, axis: tuple(shape), dtype=lambda x, kth, axis: np.dtype(np.intp),
                      batch=batching.over_axes)


def _flat_or(x, axis, op):
    if axis is None:
        return ravel(x), 0
    return x, normalize_axis_index(axis, _ndim(x), op, x)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`np.argsort`: the indices that sort `a` along `axis` (a stable sort: ties keep their order).

    >>> argsort(np.array([3.0, 1.0, 2.0]))
    array([1, 2, 0])
    """
    if order is not None:
        raise user_error(ValueError, "argsort", "order= (fields of structured arrays) is not supported", a)
    a, axis = _flat_or(a, axis, "argsort")
    return apply(_argsort, (a,), {"axis": axis})


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`np.sort`, differentiable: each value's gradient goes back to where it came from.

    >>> sort(np.array([3.0, 1.0, 2.0]))
    array([1., 2., 3.])
    """
    if order is not None:
        raise user_error(ValueError, "sort", "order= (fields of structured arrays) is not supported", a)
    a, axis = _flat_or(a, axis, "sort")
    return apply(_take_along, (a, apply(_argsort, (a,), {"axis": axis})), {"axis": axis})


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """`np.argpartition`: indices that put the k-th element in its sorted place, smaller ones before."""
    a, axis = _flat_or(a, axis, "argpartition")
    kth = tuple(int(k) for k in np.atleast_1d(kth)) if np.ndim(kth) else int(kth)
    return apply(_argpartition, (a,), {"kth": kth, "axis": axis})


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`np.partition`, differentiable: `a` rearranged so the k-th element is where sorting would put it."""
    a, axis = _flat_or(a, axis, "partition")
    return apply(_take_along, (a, argpartition(a, kth, axis)), {"axis": axis})


def _along(index, sizes, axis):
    """An open grid over `sizes` on every axis but `axis`, which takes `index`: the index of x[...] that
    picks x[i, ..., index[i, ...], ...] (NumPy's construction for take_along_axis)."""
    grid = [np.arange(n).reshape((1,) * i + (-1,) + (1,) * (len(sizes) - i - 1)) for i, n in enumerate(sizes)]
    grid[axis] = index
    return tuple(grid)


def gather(x, dim, index):
    """`torch.gather`: out[i][j] = x[i][index[i][j]] along `dim`; unlike `take_along_axis`, `index` may be
    smaller than x on the other axes (it picks from their first entries), not broadcast.

    >>> gather(np.array([[1.0, 2.0], [3.0, 4.0]]), 1, np.array([[0, 0], [1, 0]]))
    array([[1., 1.],
           [4., 3.]])
    """
    index = np.asarray(normalize_index(index))
    shape = _shape(x)
    dim = normalize_axis_index(dim, len(shape), "gather", x, name="dim")
    if index.dtype.kind not in "iu" or index.ndim != len(shape) or builtins.any(
            n is not None and i != dim and k > n for i, (k, n) in enumerate(zip(index.shape, shape))):
        raise user_error(ValueError, "gather", f"index must be integers of the same rank as x, no larger than x "
                         f"{tuple(shape)} on every axis but {dim}, got shape {index.shape} and dtype {index.dtype}", x)
    return getitem(x, _along(index, index.shape, dim))


def take(x, indices, axis=None):
    """Elements of `x` at `indices` along `axis` (of the flattened `x` when None), as `np.take`
    (PyTorch's `index_select` with a 1-d index).

    >>> take(np.array([[1.0, 2.0], [3.0, 4.0]]), [1, 1, 0], axis=0)
    array([[3., 4.],
           [3., 4.],
           [1., 2.]])
    """
    if axis is None:
        x, axis = ravel(x), 0
    axis = normalize_axis_index(axis, _ndim(x), "take", x)
    # a Tensor stays one (a graph's value, vmap's mapped indices): the node takes it as an input
    indices = indices if isinstance(indices, Tensor) and (indices._level or is_symbolic(indices)) else \
        np.asarray(normalize_index(indices))
    if _dtype(indices).kind not in "iu":
        raise user_error(IndexError, "take", f"indices must be integers, got dtype {_dtype(indices)}", x)
    return apply(_gather, (x, indices), {"index": (slice(None),) * axis + (None,), "at": (axis,)})


def flip(x, axis=None):
    """`x` with the order of elements reversed along `axis` (all axes when None), as `np.flip`."""
    ndim = _ndim(x)
    axes = range(ndim) if axis is None else normalize_axis(axis, ndim, "flip", x)
    index = [slice(None)] * ndim
    for a in axes:
        index[a] = slice(None, None, -1)
    return getitem(x, tuple(index))


def moveaxis(x, source, destination):
    """`x` with axes moved from `source` to `destination`, as `np.moveaxis`."""
    ndim = _ndim(x)
    source = normalize_axis(source, ndim, "moveaxis", x, ordered=True, name="source")
    destination = normalize_axis(destination, ndim, "moveaxis", x, ordered=True, name="destination")
    if len(source) != len(destination):
        raise user_error(ValueError, "moveaxis", f"source {source} and destination {destination} must have the same "
                         "number of elements", x)
    order = [n for n in range(ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(x, order)


def split(x, indices_or_sections, axis=0):
    """A list of sub-arrays of `x` along `axis`, as `np.split`."""
    shape = _shape(x)
    axis = normalize_axis_index(axis, len(shape), "split", x)
    n = shape[axis]
    if not is_sequence(indices_or_sections):
        sections = as_index(indices_or_sections, "split", "sections", x)
        if sections <= 0:
            raise user_error(ValueError, "split", f"the number of sections must be larger than 0, got {sections}", x)
        if n is None:
            raise user_error(ValueError, "split", f"axis {axis} has a size known only when the graph runs: give "
                             "indices, not a number of sections", x)
        if n % sections:
            raise user_error(ValueError, "split", f"array split does not result in an equal division ({n} into "
                             f"{sections})", x)
        bounds = [n // sections * i for i in range(sections + 1)]
    else:
        indices = indices_or_sections
        bounds = [0, *[as_index(i, "split", "index", x, within=indices) for i in indices], n]
    lead = (slice(None),) * axis
    return [getitem(x, lead + (slice(start, stop),)) for start, stop in zip(bounds[:-1], bounds[1:])]


def repeat(x, repeats, axis=None):
    """Each element of `x` repeated `repeats` times along `axis` (flattened when None), as `np.repeat`."""
    given = x  # the errors list the input as given, not flattened
    if axis is None:
        x, axis = ravel(x), 0
    shape = _shape(x)
    axis = normalize_axis_index(axis, len(shape), "repeat", given)
    if not is_sequence(repeats):
        count = as_index(repeats, "repeat", "repeats", given)
        if count < 0:
            raise user_error(ValueError, "repeat", f"repeats {count} is negative", given)
        # a new axis broadcast to `repeats` and merged: the gradient sums the copies
        column = expand_dims(x, axis + 1)
        wide = broadcast_to(column, _like(column, shape[: axis + 1] + (count,) + shape[axis + 1 :]))
        return reshape(wide, shape[:axis] + (_times(shape[axis], count),) + shape[axis + 1 :])
    counts = [as_index(r, "repeat", "repeats", given, within=repeats) for r in repeats]
    if builtins.any(r < 0 for r in counts):
        raise user_error(ValueError, "repeat", f"repeats {repeats!r} has a negative count", given)
    if shape[axis] is None:
        raise user_error(ValueError, "repeat", f"a list of repeats needs the size of axis {axis}, known only when the "
                         "graph runs: repeat a number of times instead", given)
    if len(counts) not in (1, shape[axis]):
        raise user_error(ValueError, "repeat", f"{len(counts)} repeats do not match axis {axis} of size {shape[axis]}",
                         given)
    index = np.repeat(np.arange(shape[axis]), counts)
    return getitem(x, (slice(None),) * axis + (index,))


def tile(x, reps):
    """`x` repeated `reps` times along each axis, as `np.tile`."""
    reps = tuple(as_index(r, "tile", "reps", x, within=reps) for r in reps) if is_sequence(reps) else (
        as_index(reps, "tile", "reps", x),)
    if builtins.any(r < 0 for r in reps):
        raise user_error(ValueError, "tile", f"negative count in reps {reps}", x)
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
    given = np.asarray(pad_width, dtype=object)  # each width checked as an integer: floats and bools refused
    widths = np.array([as_index(w, "pad", "pad width", x, within=pad_width) for w in given.ravel()], dtype=np.int64)
    widths = widths.reshape(given.shape)
    try:
        widths = np.broadcast_to(widths, (len(shape), 2))
    except ValueError:
        raise user_error(ValueError, "pad", f"pad_width {pad_width!r} does not fit {len(shape)} axes: give (before, "
                         "after) once or per axis", x) from None
    if (widths < 0).any():
        raise user_error(ValueError, "pad", f"negative pad width in {pad_width!r}", x)
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
    raise user_error(ValueError, "pad", f"mode {mode!r} is not supported; use one of constant, "
                     f"{', '.join(_GATHER_PAD_MODES)}", x)


def _where_triangle(x, k, keep):
    k = as_index(k, keep.__name__, "k", x)
    shape = _shape(x)
    if len(shape) < 2:  # NumPy broadcasts a vector to a square matrix first
        x = broadcast_to(x, (shape[0], shape[0]) if shape else (1, 1))
        shape = _shape(x)
    if None in shape[-2:]:
        raise user_error(ValueError, keep.__name__, "the last two axes need known sizes in a static graph", x)
    return where(keep(np.ones(shape[-2:], dtype=bool), k), x, 0)


def triu(x, k=0):
    """The upper triangle of (the last two axes of) `x`, the rest zero, as `np.triu`."""
    return _where_triangle(x, k, np.triu)


def tril(x, k=0):
    """The lower triangle of (the last two axes of) `x`, the rest zero, as `np.tril`."""
    return _where_triangle(x, k, np.tril)
