"""Lazy forms, on Dask arrays, of the indexing ops NumPy computes with fancy indexing or `np.add.at`.

Dask indexes one axis at a time with a 1-d integer array (and silently indexes orthogonally where NumPy
broadcasts, as in `x[0, :, [1, 2]]`), has `vindex` for NumPy's broadcast indexing and no `np.add.at`. The
ops call these functions only when a value already is a Dask array (`backends.is_dask`), so Dask is taken
from `sys.modules`, never imported here. Every index is known (a NumPy array), so a scatter-add is planned
on the host: the positions landing in each output block are selected with Dask's 1-d indexing, gathered
into one chunk, and added with `np.add.at` inside a `map_blocks` task, which is exact for repeated indices
(all of a target's contributions meet in the same task).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .backends import is_dask
from .errors import user_error


def _da():
    return sys.modules["dask.array"]


def _expand(index, shape):
    """The index as one part per axis of `x` plus its None parts: Ellipsis spelt out, boolean masks as their
    nonzero integer arrays, integer arrays wrapped into range (IndexError as NumPy's when out of bounds)."""
    parts = index if isinstance(index, tuple) else (index,)
    taken = 0
    for p in parts:
        if isinstance(p, np.ndarray) and p.dtype == bool:
            taken += p.ndim
        elif p is not None and p is not Ellipsis:
            taken += 1
    out, axis = [], 0
    for p in parts:
        if p is Ellipsis:
            out.extend([slice(None)] * (len(shape) - taken))
            axis += len(shape) - taken
            continue
        if isinstance(p, np.ndarray) and p.dtype == bool:
            out.extend(np.nonzero(p))
            axis += p.ndim
            continue
        if isinstance(p, np.ndarray):
            if p.dtype.kind not in "iu":
                raise IndexError(f"arrays used as indices must be of integer (or boolean) type, got {p.dtype}")
            n = shape[axis]
            if p.size and (p.min() < -n or p.max() >= n):
                bad = p[(p < -n) | (p >= n)].ravel()[0]
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
            p = np.where(p < 0, p + n, p) if p.ndim else int(p) + (n if p < 0 else 0)
        elif isinstance(p, (int, np.integer)) and -shape[axis] <= p < 0:
            p = int(p) + shape[axis]
        out.append(p)
        axis += p is not None
    out.extend([slice(None)] * (len(shape) - axis))
    return out


def _advanced(parts):
    """Positions (in `parts`) of the advanced parts: the arrays, and the integers when there is an array."""
    arrays = [k for k, p in enumerate(parts) if isinstance(p, np.ndarray)]
    if not arrays:
        return []
    return [k for k, p in enumerate(parts) if isinstance(p, (np.ndarray, int, np.integer))]


def _native(parts, adv):
    """Whether Dask's own indexing gives NumPy's result: one 1-d array, its integer neighbours adjacent."""
    arrays = [p for p in parts if isinstance(p, np.ndarray)]
    return len(arrays) == 1 and arrays[0].ndim == 1 and adv == list(range(adv[0], adv[0] + len(adv)))


def _has_dask_part(index):
    return any(is_dask(p) for p in (index if isinstance(index, tuple) else (index,)))


def _dask_index(index, ndim):
    """An index holding a Dask array (a boolean mask, or 1-d integers), checked to be one whose result Dask's
    indexing gives as NumPy's, and returned as one part per axis: the array (a mask of several axes counts for
    them all) and slices. Several arrays (Dask indexes them orthogonally where NumPy broadcasts), integers or
    None beside the array (NumPy moves the array's axes then) are refused: their values are needed first."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if is_dask(p) or isinstance(p, (np.ndarray, list))]
    if len(arrays) != 1 or any(not isinstance(p, slice) for p in parts if p is not arrays[0] and p is not Ellipsis):
        raise TypeError("a Dask array as an index goes with slices only (x[mask], x[:, mask], x[i] with 1-d integers "
                        "i): with several arrays, integers or None beside it Dask's indexing would differ from "
                        "NumPy's; compute the index first (.compute()), or index in two steps")
    (array,) = arrays
    if array.dtype.kind not in "biu" or (array.dtype.kind != "b" and array.ndim != 1):
        raise TypeError(f"a Dask array as an index must be a boolean mask or 1-d integers, got dtype {array.dtype} "
                        f"and {array.ndim} dimension(s)")
    taken = sum(array.ndim if p is array else 1 for p in parts if p is not Ellipsis)
    out = []
    for p in parts:
        out.extend([slice(None)] * (ndim - taken) if p is Ellipsis else [p] * (array.ndim if p is array else 1))
    return out + [slice(None)] * (ndim - len(out))


def getitem(x, index):
    """`x[index]` with NumPy's semantics for a Dask array `x` and any NumPy index (`vindex` where Dask's own
    indexing would differ: several arrays, an n-d array, integers apart from the array). An index holding a
    Dask array (a mask, `x[x > 0]`) is Dask's own lazy indexing: the result's size is unknown (nan) until computed."""
    if _has_dask_part(index):
        _dask_index(index, x.ndim)  # a form whose result is NumPy's
        return x[index]
    parts = _expand(index, x.shape)
    _check_known_sizes(parts, x.shape)
    adv = _advanced(parts)
    if not adv or _native(parts, adv):
        return x[tuple(parts)]
    # the basic parts first (each part keeps one axis), then NumPy's broadcast indexing over the others
    x1 = x[tuple(slice(None) if k in adv else p for k, p in enumerate(parts))]
    arrays = np.broadcast_arrays(*(np.asarray(parts[k]) for k in adv))
    picked = iter(arrays)
    out = x1.vindex[tuple(next(picked) if k in adv else slice(None) for k in range(len(parts)))]
    nb = arrays[0].ndim  # vindex puts the broadcast axes first; NumPy keeps them in place when adjacent
    if adv == list(range(adv[0], adv[0] + len(adv))) and adv[0]:
        out = _da().moveaxis(out, tuple(range(nb)), tuple(range(adv[0], adv[0] + nb)))
    return out


def _check_known_sizes(parts, shape):
    """Refuses an index (one part per axis, and None parts) that takes less than the whole of an axis whose size
    Dask does not know yet (nan, after a boolean mask: `t[t > 0][::2]`): Dask cannot plan which blocks hold the
    entries it takes, and its own error points into its documentation rather than at the user's line."""
    axis = 0
    for p in parts:
        if p is None:
            continue
        n = shape[axis]
        if n != n and not (isinstance(p, slice) and p == slice(None)):  # (Dask refuses even 0: or ::1 there)
            if isinstance(p, slice):
                start, stop = ("" if v is None else v for v in (p.start, p.stop))
                what = f"the slice {start}:{stop}" + ("" if p.step is None else f":{p.step}")
            else:
                what = "an index array" if isinstance(p, np.ndarray) else f"the index {p!r}"
            raise user_error(ValueError, "getitem", f"axis {axis} of this Dask array has a size known only once it is "
                             f"computed (shape {tuple(shape)}, as after a boolean mask x[x > 0]), and Dask cannot take "
                             f"{what} along it lazily; compute the masked values first (.numpy(), or Dask's "
                             f"compute_chunk_sizes()), or select with one mask (x[mask & other_mask])")
        axis += 1


def index_add(g, index, shape):
    """Zeros of `shape` with the Dask array `g` added at the NumPy `index` (np.add.at's sum at repeated
    indices), lazily: the adjoint of `getitem`."""
    da = _da()
    if _has_dask_part(index):
        return _unmask(g, index, shape)
    parts = _expand(index, shape)
    adv = _advanced(parts)
    if adv:
        nb = np.broadcast(*(np.asarray(parts[k]) for k in adv)).nd
        if adv == list(range(adv[0], adv[0] + len(adv))) and adv[0]:  # NumPy kept the broadcast axes in place
            g = da.moveaxis(g, tuple(range(adv[0], adv[0] + nb)), tuple(range(nb)))
        picked = np.broadcast(*(np.asarray(parts[k]) for k in adv)).shape
        g = g.reshape((math.prod(picked),) + g.shape[nb:]) if nb != 1 else g  # one axis of the picked positions
        rest = [p for k, p in enumerate(parts) if k not in adv]
    else:
        rest = [p for p in parts if not isinstance(p, (int, np.integer))]
    # the axes None made hold one entry: drop them from g and from the index
    lead = (slice(None),) if adv else ()
    if any(p is None for p in rest):
        g = g[lead + tuple(0 if p is None else slice(None) for p in rest)]
    parts = [p for p in parts if p is not None]
    if not adv:
        out = np.zeros(shape, g.dtype, like=g)
        out[tuple(parts)] = g  # basic indices select each element at most once
        return out
    axes = [a for a, p in enumerate(parts) if isinstance(p, (np.ndarray, int, np.integer))]
    dims = [shape[a] for a in axes]
    coords = [a.ravel() for a in np.broadcast_arrays(*(np.asarray(parts[a]) for a in axes))]
    flat = _segment_sum(g, np.ravel_multi_index(coords, dims), math.prod(dims), math.prod(dims[1:]))
    inner = flat.reshape(tuple(dims) + flat.shape[1:])
    others = [a for a in range(len(shape)) if a not in axes]
    inner = inner.transpose(tuple(np.argsort(axes + others)))  # back to x's order of axes
    if all(parts[a] == slice(None) for a in others):
        return inner
    out = np.zeros(shape, g.dtype, like=g)
    out[tuple(slice(None) if a in axes else parts[a] for a in range(len(shape)))] = inner
    return out


def _unmask_block(g, mask, axis):
    """Zeros shaped like the block g with axis `axis` of the mask's length (all of the mask's axes when
    axis is None), with g written where the mask is True."""
    shape = mask.shape if axis is None else g.shape[:axis] + mask.shape + g.shape[axis + 1:]
    out = np.zeros(shape, g.dtype)
    out[(slice(None),) * (axis or 0) + (mask,)] = g
    return out


def _unmask(g, index, shape):
    """Zeros of `shape` with the Dask array g written where the Dask boolean mask in `index` is True: the
    adjoint of x[mask], lazily. Dask's x[mask] gives one block per block of the mask (of its ravelled form for
    a mask of all of x's axes), holding that block's selected entries in order, so block k of g goes back
    where block k of the mask is True; its sizes need never be known."""
    parts = _dask_index(index, len(shape))
    mask = next(p for p in parts if is_dask(p))
    if mask.dtype != bool:
        raise TypeError("the scatter-add at integer indices held in a Dask array needs their values: compute the "
                        "indices first (.compute()), they are small")
    refuse = TypeError("the gradient of indexing by a Dask array is computed lazily only for a boolean mask of "
                       "x[mask] or x[:, mask] form (full slices elsewhere), when the mask's blocks match x's; "
                       "compute the index first (.compute()) for this one")
    if any(p is not mask and p != slice(None) for p in parts):
        raise refuse
    if any(math.isnan(n) for n in shape):
        raise ValueError(f"needs the shape of a Dask array whose chunk sizes are unknown (shape {tuple(shape)}): "
                         "the array indexed by the mask was itself of unknown size")
    if mask.ndim == len(shape):  # Dask ravelled x and the mask: block k of g is the selection of their block k
        flat = mask.ravel()
        if g.ndim != 1 or g.numblocks[0] != flat.numblocks[0]:
            raise refuse
        out = _da().blockwise(_unmask_block, "i", g, "i", flat, "i", axis=None, dtype=g.dtype, align_arrays=False,
                              adjust_chunks={"i": flat.chunks[0]})
        return out.reshape(shape)
    # a 1-d mask along one axis: block (.., k, ..) of g is x's block (.., k, ..) selected
    axis = next(k for k, p in enumerate(parts) if p is mask)
    if g.ndim != len(shape) or g.numblocks[axis] != mask.numblocks[0]:
        raise refuse
    letters = "abcdefghijklmnopqrstuvwxyz"[: len(shape)]
    return _da().blockwise(_unmask_block, letters, g, letters, mask, letters[axis], axis=axis, dtype=g.dtype,
                           align_arrays=False, adjust_chunks={letters[axis]: mask.chunks[0]})


def _add_at(block, local, n):
    out = np.zeros((n,) + block.shape[1:], block.dtype)
    np.add.at(out, local, block)  # repeated indices add up
    return out


def _segment_sum(g, target, n, unit):
    """(n, *g.shape[1:]) zeros with row p of the Dask array g added at row target[p]: per output block, the rows
    landing there are gathered (Dask's 1-d indexing) into one chunk and added by np.add.at. Output blocks are
    whole multiples of `unit` rows, so the caller can split the axis into (n // unit, unit)."""
    da = _da()
    rest, rest_chunks = g.shape[1:], g.chunks[1:]
    sizes = da.core.normalize_chunks(("auto", -1) + rest_chunks, (n // unit if unit else 0, unit) + rest,
                                     dtype=g.dtype)[0] if n else ()
    order = np.argsort(target, kind="stable")
    bounds = np.searchsorted(target[order], np.cumsum((0,) + tuple(s * unit for s in sizes)))
    blocks = []
    for start, s, lo, hi in zip(np.cumsum((0,) + sizes[:-1]) * unit, sizes, bounds[:-1], bounds[1:]):
        size = s * unit
        if lo == hi:
            blocks.append(da.zeros((size,) + rest, g.dtype, chunks=((size,),) + rest_chunks))
            continue
        rows = np.sort(order[lo:hi])
        part = g[rows].rechunk({0: -1})
        blocks.append(part.map_blocks(_add_at, local=target[rows] - start, n=size, dtype=g.dtype,
                                      chunks=((size,),) + rest_chunks))
    if not blocks:
        return da.zeros((n,) + rest, g.dtype, chunks=((n,),) + rest_chunks)
    return da.concatenate(blocks, axis=0)


def _aligned(x, indices, axis):
    """x and indices as Dask arrays broadcast on every axis but `axis`, with the same chunks there and one
    chunk along `axis` (so a block of each holds the same rows)."""
    da = _da()
    x, indices = da.asarray(x), da.asarray(indices)
    rest = np.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:], indices.shape[:axis] + indices.shape[axis + 1:])
    x = da.broadcast_to(x, rest[:axis] + (x.shape[axis],) + rest[axis:]).rechunk({axis: -1})
    indices = da.broadcast_to(indices, rest[:axis] + (indices.shape[axis],) + rest[axis:])
    return x, indices.rechunk(x.chunks[:axis] + (-1,) + x.chunks[axis + 1:])


def take_along_axis(x, indices, axis):
    """`np.take_along_axis` where x or indices is a Dask array: `axis` in one chunk, the blocks matched."""
    x, indices = _aligned(x, indices, axis)
    return _da().map_blocks(np.take_along_axis, x, indices, axis=axis, dtype=x.dtype, chunks=indices.chunks)


def _put_along(block, indices, axis, n):
    shape = list(block.shape)
    shape[axis] = n
    out = np.zeros(shape, block.dtype)
    grid = list(np.ix_(*(np.arange(m) for m in block.shape)))
    grid[axis] = indices
    np.add.at(out, tuple(grid), block)  # repeated indices add up
    return out


def scatter_along_axis(g, indices, axis, shape):
    """Zeros of `shape` with g added at `indices` along `axis` (the adjoint of take_along_axis), lazily; an axis
    of size 1 in `shape` that g broadcast sums its entries back."""
    indices, g = _aligned(indices, g, axis)  # g's chunks decide (its shape is the broadcast one)
    n = shape[axis]
    out = _da().map_blocks(_put_along, g, indices, axis=axis, n=n, dtype=g.dtype,
                           chunks=g.chunks[:axis] + ((n,),) + g.chunks[axis + 1:])
    summed = tuple(a for a, m in enumerate(shape) if a != axis and m == 1 and g.shape[a] != 1)
    return out.sum(axis=summed, keepdims=True) if summed else out


def along_axis(function, x, axis, **kwargs):
    """`function(block, axis=axis, **kwargs)` (argsort, argpartition) on `x` with `axis` in one chunk: integer
    results of NumPy's intp."""
    return x.rechunk({axis: -1}).map_blocks(function, axis=axis, dtype=np.intp, **kwargs)


def setitem(x, v, index):
    """`x` with `x[index] = v` as a new Dask array (Dask's own assignment on a shallow copy: `x` is unchanged),
    for the indices where Dask's assignment is NumPy's: basic ones and one 1-d integer array or mask."""
    da = _da()
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if isinstance(p, (np.ndarray, list)) or is_dask(p)]
    if len(arrays) > 1 or any(np.ndim(p) > 1 for p in arrays) or (
            arrays and any(isinstance(p, (int, np.integer)) for p in parts)):
        raise TypeError("on a Dask array only basic indices and one 1-d integer array or boolean mask can be assigned "
                        "(Dask's assignment would differ from NumPy's here)")
    out = da.asarray(x).copy()
    out[index] = v if is_dask(v) else np.asarray(v)
    return out


def _check_labels(labels, classes, ignore_index, message):
    bad = ((labels < 0) | (labels >= classes)) & (labels != ignore_index)
    if bad.any():
        raise IndexError(message.format(labels[bad].ravel()[0]))
    return labels


def checked_labels(labels, classes, ignore_index, where, line):
    """The Dask array of class labels, checked when it is computed (a label outside [0, classes-1] that is not
    `ignore_index` raises IndexError naming `where` and the user's `line` then): the check needs the values."""
    message = (f"{where}: target labels must be class indices in [0, {classes - 1}] (the input has {classes} "
               f"classes) or ignore_index ({ignore_index}), got {{}} (checked as the Dask array was computed) "
               f"at {line}")
    return labels.map_blocks(_check_labels, classes=classes, ignore_index=ignore_index, message=message,
                             dtype=labels.dtype)


def nll(logp, target, reduction):
    """nll_loss's forward where logp or target is a Dask array: the picked entries through a one-hot mask (a
    row's sum of one entry and zeros is that entry exactly), so a row-chunked batch stays chunk by chunk."""
    picked = np.expand_dims(target, -1) == np.arange(logp.shape[1])
    loss = -np.sum(np.where(picked, logp, np.zeros((), logp.dtype)), axis=1)
    if reduction == "none":
        return loss
    total = np.sum(loss)
    return total / logp.shape[0] if reduction == "mean" else total
