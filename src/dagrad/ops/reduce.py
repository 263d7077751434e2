"""Reductions over `axis` (None, int or tuple) with `keepdims`."""

from __future__ import annotations

import builtins

import numpy as np

from .._core.backends import has_unknown_size
from .._core.dtypes import accumulated, first, index, of_ufunc
from .._core.op import apply, defop, public
from .._core import batching
from .._core.errors import user_error
from .._core.shapes import normalize_axis, normalize_axis_index, reduced_shape
from .._core.shapes import dtype_of as _dtype
from .._core.shapes import ndim_of as _ndim
from .._core.shapes import shape_of as _shape
from .elementwise import astype, conj, equal, logical_and, logical_not, maximum, ones_like, real, where
from .._core.structural import reshape, sum, sum_to  # noqa: F401  (sum and sum_to are this family's, defined in the core)
from .._core.structural import reduction_shape as _reduction_shape
from .shape import as_array, flip


def _keep(g, shape, axis, keepdims):
    """A reduced value reshaped to keep its reduced axes as size 1 (broadcastable to `shape`)."""
    kept = reduced_shape(shape, axis, True)
    return g if _shape(g) == kept else reshape(g, kept)


def _extremum_weights(x, out, axis, keepdims):
    """1/count where x attains the extremum along `axis`, else 0: ties share evenly (as torch.amax)."""
    shape = _shape(x)
    hits = astype(equal(x, _keep(out, shape, axis, keepdims)), _dtype(x))  # 1.0 at the extrema: no gradient
    return hits / sum(hits, axis=axis, keepdims=True)


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
        dtype=first,
        batch=batching.over_axes,
        saves=(0, "out"),
    )


_max = _extremum_op("max", np.max)
_min = _extremum_op("min", np.min)


def _prod_weights(x, axis):
    """d prod / d x: the product of the other entries, exact when x has zeros (as PyTorch)."""
    nonzero = x != 0
    zeros = sum(logical_not(nonzero), axis=axis, keepdims=True)
    x_safe = where(nonzero, x, 1)
    others = prod(x_safe, axis=axis, keepdims=True)
    # no zero: prod / x; one zero: the zero's slot gets the product of the rest; more: all 0
    return where(zeros == 0, others / x_safe, where(logical_and(zeros == 1, logical_not(nonzero)), others, 0))


_prod = defop(
    "prod",
    lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
    vjp=(lambda g, out, x, axis, keepdims: _keep(g, _shape(x), axis, keepdims) * _prod_weights(x, axis),),
    jvp=(lambda t, out, x, axis, keepdims: sum(t * _prod_weights(x, axis), axis=axis, keepdims=keepdims),),
    shape=_reduction_shape,
    fresh=True,
    dtype=accumulated,
    batch=batching.over_axes,
    saves=(0,),
)


def _cumsum_shape(shape, axis):
    return (None if None in shape else int(np.prod(shape)),) if axis is None else tuple(shape)


def _reverse_cumsum(g, axis):
    return flip(cumsum(flip(g, axis), axis), axis)


_cumsum = defop(
    "cumsum",
    lambda x, axis: np.cumsum(x, axis=axis),
    vjp=(lambda g, out, x, axis: reshape(_reverse_cumsum(g, 0), _shape(x)) if axis is None
         else _reverse_cumsum(g, axis),),
    jvp=(lambda t, out, x, axis: cumsum(t, axis),),
    shape=_cumsum_shape,
    fresh=True,
    dtype=accumulated,
    batch=batching.flat_axis,
    saves=(),
)

def _arg_shape(shape, axis, keepdims):
    return reduced_shape(shape, None if axis is None else (axis,), keepdims)


_argmax = defop("argmax", lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims), shape=_arg_shape,
                 dtype=index, batch=batching.flat_axis)
_argmin = defop("argmin", lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims), shape=_arg_shape,
                 dtype=index, batch=batching.flat_axis)


def _count(x, axes, keepdims):
    """How many elements each reduction over `axes` sees: a number, or, where a static graph
    does not know the sizes yet, a node that counts them when it runs."""
    shape = _shape(x)
    sizes = [shape[a] for a in (range(len(shape)) if axes is None else axes)]
    if None not in sizes and not has_unknown_size(sizes):  # (a Dask array's unknown sizes, after x[mask]: counted)
        return int(np.prod(sizes))
    return sum(ones_like(x, dtype=_dtype(x) if _dtype(x).kind == "f" else np.float64), axis=axes, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    """Mean over `axis` (None: all), as `np.mean`: a sum divided by the count."""
    axes = normalize_axis(axis, _ndim(x), "mean", x)
    total = sum(x, axis=axes, keepdims=keepdims)
    if _dtype(x).kind not in "fc":
        total = astype(total, np.float64)
    return total / _count(x, axes, keepdims)


def _nonempty_reduction(op, doc, index=False):
    """The function of max, min (any axes) or argmax, argmin (one axis or None): empty selections refused."""

    @public(op)
    def reduce(x, axis=None, keepdims=False):
        if index:
            axes = None if axis is None else normalize_axis_index(axis, _ndim(x), op.name, x)
            _check_nonempty(x, None if axes is None else (axes,), op.name)
        else:
            axes = normalize_axis(axis, _ndim(x), op.name, x)
            _check_nonempty(x, axes, op.name)
        return apply(op, (x,), {"axis": axes, "keepdims": bool(keepdims)})

    reduce.__name__ = reduce.__qualname__ = op.name
    reduce.__doc__ = doc
    return reduce


max = _nonempty_reduction(_max, """Maximum over `axis`; the gradient is shared evenly among ties (as `torch.amax`).""")
min = _nonempty_reduction(_min, """Minimum over `axis`; the gradient is shared evenly among ties (as `torch.amin`).""")



@public(_prod)
def prod(x, axis=None, keepdims=False):
    """Product over `axis`, as `np.prod`; the gradient is exact where entries are zero."""
    return apply(_prod, (x,), {"axis": normalize_axis(axis, _ndim(x), "prod", x), "keepdims": bool(keepdims)})


def var(x, axis=None, ddof=0, keepdims=False):
    """Variance over `axis` with `ddof` delta degrees of freedom, as `np.var` (of complex values:
    the mean of |x - mean|^2, real)."""
    axes = normalize_axis(axis, _ndim(x), "var", x)
    centred = x - mean(x, axis=axes, keepdims=True)
    count = _count(x, axes, keepdims)
    dof = builtins.max(count - ddof, 0) if isinstance(count, int) else maximum(count - ddof, 0)
    squares = real(centred * conj(centred)) if _dtype(x).kind == "c" else centred * centred
    return sum(squares, axis=axes, keepdims=keepdims) / dof


def std(x, axis=None, ddof=0, keepdims=False):
    """Standard deviation over `axis`, as `np.std`; its gradient is 0 where it is 0 (as PyTorch)."""
    axes = normalize_axis(axis, _ndim(x), "std", x)  # checked here so that an error names std, not var
    return _std_sqrt.function(var(x, axis=axes, ddof=ddof, keepdims=keepdims))


# sqrt whose derivative is 0 at 0 instead of inf: std of constant data has gradient 0 in PyTorch
_std_sqrt = defop(
    "std_sqrt",
    np.sqrt,
    vjp=(lambda g, out, v: where(out == 0, 0, g / where(out == 0, 1, out * 2)),),
    jvp=(lambda t, out, v: where(out == 0, 0, t / where(out == 0, 1, out * 2)),),
    shape=lambda shape: shape,
    nargs=1,
    dtype=of_ufunc(np.sqrt),
    batch=batching.elementwise,
    saves=("out",),
)


@public(_cumsum)
def cumsum(x, axis=None):
    """Cumulative sum along `axis` (of the flattened array when None), as `np.cumsum`."""
    axes = None if axis is None else normalize_axis_index(axis, _ndim(x), "cumsum", x)
    return apply(_cumsum, (x,), {"axis": axes})


argmax = _nonempty_reduction(_argmax, """Index of the maximum (no gradient), as `np.argmax`.""", index=True)
argmin = _nonempty_reduction(_argmin, """Index of the minimum (no gradient), as `np.argmin`.""", index=True)


def _check_nonempty(x, axes, name):
    """max, min, argmax and argmin of nothing have no value (NumPy raises; PyTorch too)."""
    shape = _shape(x)
    sizes = shape if axes is None else [shape[a] for a in axes]
    if 0 in sizes:
        over = "an empty array" if axes is None else f"axis {next(a for a in axes if shape[a] == 0)} of size 0"
        raise user_error(ValueError, name, f"zero-size reduction over {over} has no identity", x)


# -- PyTorch's keywords on every reduction: dim= for axis=, keepdim= for keepdims= (dg.sum(x, dim=1),
# x.mean(dim=0, keepdim=True)), and var/std's correction= or unbiased= for ddof=. Only the keywords:
# x.std() keeps NumPy's ddof=0 and x.max(dim) returns the values only, as NumPy's (docs/coming-from.md).
_NOT_GIVEN = object()


def _torch_keywords(function):
    def reduce(x, *args, dim=_NOT_GIVEN, keepdim=_NOT_GIVEN, correction=_NOT_GIVEN, unbiased=_NOT_GIVEN, **kwargs):
        for theirs, ours, value in (("dim", "axis", dim), ("keepdim", "keepdims", keepdim),
                                    ("correction", "ddof", correction), ("unbiased", "ddof", unbiased)):
            if value is not _NOT_GIVEN:
                if ours in kwargs or (ours == "axis" and args):
                    raise user_error(TypeError, function.__name__, f"got both {ours} and {theirs} (PyTorch's name "
                                     f"for it)", x)
                kwargs[ours] = int(bool(value)) if theirs == "unbiased" else value
        return function(as_array(x, function.__name__), *args, **kwargs)

    reduce.__name__ = reduce.__qualname__ = function.__name__
    reduce.__doc__ = function.__doc__
    if hasattr(function, "op"):
        reduce.op = function.op
    return reduce


sum, mean, prod, max, min, var, std, cumsum, argmax, argmin = map(  # noqa: A001
    _torch_keywords, (sum, mean, prod, max, min, var, std, cumsum, argmax, argmin))
amax, amin = max, min
