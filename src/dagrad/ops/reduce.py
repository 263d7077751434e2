"""Reductions over `axis` (None, int or tuple) with `keepdims`."""

from __future__ import annotations

import builtins

import numpy as np

from .._core.op import apply, defop
from .._core.shapes import normalize_axis, reduced_shape
from .elementwise import astype, equal, where
from .shape import broadcast_to, reshape


def _shape(x):
    try:
        return x.shape
    except AttributeError:
        return np.shape(x)


def _dtype(x):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _reduction_shape(shape, axis, keepdims):
    return reduced_shape(shape, axis, keepdims)


def _expand(g, shape, axis, keepdims):
    """A reduced value broadcast back over the reduced axes of `shape`."""
    kept = reduced_shape(shape, axis, True)
    if _shape(g) != kept:
        g = reshape(g, kept)
    return broadcast_to(g, shape)


def _keep(g, shape, axis, keepdims):
    """A reduced value reshaped to keep its reduced axes as size 1 (broadcastable to `shape`)."""
    kept = reduced_shape(shape, axis, True)
    return g if _shape(g) == kept else reshape(g, kept)


_sum = defop(
    "sum",
    lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    vjp=(lambda g, out, x, axis, keepdims: _expand(g, _shape(x), axis, keepdims),),
    jvp=(lambda t, out, x, axis, keepdims: sum(t, axis=axis, keepdims=keepdims),),
    shape=_reduction_shape,
)


def _extremum_weights(x, out, axis, keepdims):
    """1/count where x attains the extremum along `axis`, else 0: ties share evenly (as torch.amax)."""
    shape = _shape(x)
    hits = equal(x, _keep(out, shape, axis, keepdims))
    count = np.sum(np.asarray(hits), axis=axis, keepdims=True)  # not differentiable: plain NumPy
    return where(hits, astype(1.0 / count, _dtype(x)), 0)


def _extremum_op(name, forward):
    return defop(
        name,
        lambda x, axis, keepdims: forward(x, axis=axis, keepdims=keepdims),
        vjp=(
            lambda g, out, x, axis, keepdims: _keep(g, _shape(x), axis, keepdims)
            * _extremum_weights(x, out, axis, keepdims),
        ),
        jvp=(
            lambda t, out, x, axis, keepdims: sum(
                t * _extremum_weights(x, out, axis, keepdims), axis=axis, keepdims=keepdims
            ),
        ),
        shape=_reduction_shape,
    )


_max = _extremum_op("max", np.max)
_min = _extremum_op("min", np.min)


def _ndim(x):
    return len(_shape(x))


def sum(x, axis=None, keepdims=False):
    """Sum over `axis` (None: all), as `np.sum`.

    >>> sum(np.ones((2, 3)), axis=0)
    array([2., 2., 2.])
    """
    return apply(_sum, (x,), {"axis": normalize_axis(axis, _ndim(x), "sum"), "keepdims": bool(keepdims)})


def mean(x, axis=None, keepdims=False):
    """Mean over `axis` (None: all), as `np.mean`: a sum divided by the count."""
    axes = normalize_axis(axis, _ndim(x), "mean")
    shape = _shape(x)
    count = int(np.prod([shape[a] for a in (range(len(shape)) if axes is None else axes)]))
    total = sum(x, axis=axes, keepdims=keepdims)
    if _dtype(x).kind != "f":
        total = astype(total, np.float64)
    return total / count


def max(x, axis=None, keepdims=False):
    """Maximum over `axis`; the gradient is shared evenly among ties (as `torch.amax`)."""
    axes = normalize_axis(axis, _ndim(x), "max")
    _check_nonempty(x, axes, "max")
    return apply(_max, (x,), {"axis": axes, "keepdims": bool(keepdims)})


def min(x, axis=None, keepdims=False):
    """Minimum over `axis`; the gradient is shared evenly among ties (as `torch.amin`)."""
    axes = normalize_axis(axis, _ndim(x), "min")
    _check_nonempty(x, axes, "min")
    return apply(_min, (x,), {"axis": axes, "keepdims": bool(keepdims)})


def _check_nonempty(x, axes, name):
    shape = _shape(x)
    sizes = shape if axes is None else [shape[a] for a in axes]
    if builtins.any(n == 0 for n in sizes):
        raise ValueError(f"{name}: zero-size reduction over shape {tuple(shape)} has no identity")


_sum.function = sum
_max.function = max
_min.function = min
