"""Softmax family (shifted by the maximum so inputs of 1e3 stay finite; `log_softmax` a primitive),
`linear` and `nll_loss`, primitives for speed, and `binary_cross_entropy`, a primitive for its
numerics at p = 0 and 1."""

from __future__ import annotations

import math

import numpy as np

from .._core.dtypes import accumulated, first, of_ufunc, promoted
from .._core import batching, dask_ops
from .._core.backends import is_dask
from .._core.op import Op, apply, batch_broadcast, batch_loop, defop, public
from .._core.shapes import broadcast_shapes, dtype_of, normalize_axis, shape_of
from .._core.shapes import ndim_of as _ndim_of
from .._core.tensor import Tensor
from .elementwise import add, equal, exp, isfinite, log, log1p, maximum, ones_like, stop_gradient, where
from .linalg import einsum, matmul
from .reduce import _torch_keywords, max, sum
from .shape import expand_dims, getitem, reshape, transpose


def _constant_max(x, axes):
    """max of x over `axes` (keepdims) as a constant: a shift that needs no gradient.

    Subtracting any constant leaves softmax and logsumexp unchanged, so the shift is never
    differentiated (no tie-breaking questions, no extra backward work).
    """
    shift = stop_gradient(max(x, axis=axes, keepdims=True))
    return where(isfinite(shift), shift, 0)


def _empty_reduction(x, axes):
    """Whether an axis reduced over is known to be empty (there is no maximum to shift by)."""
    shape = shape_of(x)
    return any(shape[a] == 0 for a in (range(len(shape)) if axes is None else axes))


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over `axis`, finite for large inputs, as `scipy.special.logsumexp`; -inf
    over an empty axis, as `torch.logsumexp`.

    >>> float(logsumexp(np.array([1e16, 1e16])) - 1e16), logsumexp(np.zeros((2, 0)), axis=1)
    (0.0, array([-inf, -inf]))
    """
    axes = normalize_axis(axis, len(shape_of(x)), "logsumexp", x)
    if _empty_reduction(x, axes):
        return sum(x, axis=axes, keepdims=keepdims) - math.inf  # log(0), without a divide-by-zero warning
    shift = _constant_max(x, axes)
    out = log(sum(exp(x - shift), axis=axes, keepdims=True)) + shift
    if keepdims:
        return out
    shape = np.shape(out)
    return reshape(out, tuple(n for i, n in enumerate(shape) if axes is not None and i not in axes))


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, as `scipy.special.softmax` / `torch.softmax` (an empty
    axis gives an empty result).

    >>> softmax(np.array([1e16, 1e16]))
    array([0.5, 0.5])
    """
    axes = normalize_axis(axis, len(shape_of(x)), "softmax", x)
    if _empty_reduction(x, axes):
        e = exp(x)  # empty: nothing to shift
        return e / sum(e, axis=axes, keepdims=True)
    e = exp(x - _constant_max(x, axes))
    return e / sum(e, axis=axes, keepdims=True)


# -- log_softmax: one node whose backward reads its own output (softmax = exp(out)), as PyTorch's
# does. The composite x - logsumexp(x) is eight nodes and recomputes the softmax going back.
def _log_softmax_forward(x, axis):
    if not hasattr(x, "__array_function__"):  # a number (a NumPy or Dask array is used as it is)
        x = np.asarray(x)
    if x.size == 0:  # an empty axis has no maximum: the result is empty, as PyTorch's
        with np.errstate(divide="ignore"):
            return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))
    shift = x.max(axis=axis, keepdims=True)
    if not isinstance(x, np.ndarray) or not np.isfinite(shift).all():  # a Dask array is never asked (a compute)
        shift = np.where(np.isfinite(shift), shift, 0)
    # (x - max) - log(sum(exp(x - max))), PyTorch's order: x - (log(sum) + max) loses log(sum)
    # (about 2e-9 for logits 1e8 and 1e8 - 20) when it is added to a large max
    shifted = x - shift
    lse = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    if shifted.dtype != lse.dtype or not isinstance(shifted, np.ndarray):  # integer logits; a lazy array
        return shifted - lse
    shifted -= lse  # a new array: subtracting in place saves an allocation
    return shifted


_log_softmax = defop(
    "log_softmax",
    _log_softmax_forward,
    vjp=(lambda g, out, x, axis: g - exp(out) * sum(g, axis=axis, keepdims=True),),
    jvp=(lambda t, out, x, axis: t - sum(exp(out) * t, axis=axis, keepdims=True),),
    shape=lambda x, axis: tuple(x),
    dtype=of_ufunc(np.exp),
    batch=batching.over_axes,
    saves=("out",),
)


@public(_log_softmax)
def log_softmax(x, axis=-1):
    """x - logsumexp(x) along `axis`, finite and exact for large inputs, as `torch.log_softmax`
    (an empty axis gives an empty result).

    >>> log_softmax(np.array([0.0, np.log(3.0)])).round(4)
    array([-1.3863, -0.2877])
    >>> log_softmax(np.array([1e16, 1e16])).round(4)
    array([-0.6931, -0.6931])
    """
    return apply(_log_softmax, (x,), {"axis": normalize_axis(axis, len(shape_of(x)), "log_softmax", x)})


# -- linear: x @ w.T + b in one node. A composite (transpose, matmul, add) would cost six nodes
# and a dozen NumPy calls per layer and step; as a primitive a layer is one forward node and
# three NumPy calls backward, which is what a training step of small layers spends its time on.
def _linear_forward(x, w, b):
    out = np.matmul(x, w.T)
    if b is None:
        return out
    if type(b) is np.ndarray and type(out) is np.ndarray and b.dtype == out.dtype and b.shape == out.shape[-1:]:
        out += b  # out is a new array: adding in place saves an allocation
        return out
    return out + b


def _linear_shape(x, w, b):
    return tuple(x[:-1]) + (w[0],)


def _linear_grad_w(g, out, x, w, b):
    if type(g) is np.ndarray and type(x) is np.ndarray:
        # plain arrays (a first-order backward): NumPy directly, as below. With the bias's branch it
        # makes the (e) MLP step at batch 64 take 840 instead of 884 us, measured 2026-11-25
        if x.ndim != 2:
            g, x = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])
        return np.matmul(g.T, x)
    if len(shape_of(x)) == 2:
        return matmul(transpose(g), x)
    outs, ins = shape_of(g)[-1], shape_of(x)[-1]
    if outs is None or ins is None:  # a static graph's unknown feature sizes: the batch axes summed by an einsum
        batch = "abcdefgh"[: len(shape_of(x)) - 1]
        return einsum(f"{batch}o,{batch}i->oi", g, x)
    # every batch entry's rows together as one matrix: one BLAS product, where an einsum over the batch axes
    # (NumPy's, unoptimised) took 77 of a Transformer layer's 140 ms backward (d_model 128, batch 32 x 64)
    return matmul(transpose(reshape(g, (-1, outs))), reshape(x, (-1, ins)))


def _linear_grad_b(g, out, x, w, b):
    if type(g) is np.ndarray:
        return g.sum(axis=tuple(range(g.ndim - 1))) if g.ndim > 1 else g
    rank = len(shape_of(g))
    return sum(g, axis=tuple(range(rank - 1))) if rank > 1 else g


def _linear_batch(x, w, b, x_batched, w_batched, b_batched):
    """Only x mapped: its batch axis is one more leading axis. Mapped weights (an ensemble): a batched
    matmul and add."""
    if not w_batched and not b_batched:
        return apply(_linear, (x, w, b)), True
    out, _ = batching.matmul(matmul.op, (x, np.swapaxes(w, -1, -2)), (x_batched, w_batched), {})
    # only b mapped: the product has no batch axis, and the add must not take it as having one
    out_batched = x_batched or w_batched
    if b is not None:
        out, _ = batching.elementwise(add.op, (out, b), (out_batched, b_batched), {})
    return out, True


_linear = defop(
    "linear",
    _linear_forward,
    vjp=(lambda g, out, x, w, b: matmul(g, w), _linear_grad_w, _linear_grad_b),
    jvp=(
        lambda t, out, x, w, b: matmul(t, transpose(w)),
        lambda t, out, x, w, b: matmul(x, transpose(t)),
        lambda t, out, x, w, b: t,
    ),
    shape=_linear_shape,
    dtype=lambda x, w, b: promoted(of_ufunc(np.matmul)(x, w), b),
    batch=lambda op, values, batched, attrs: _linear_batch(*values, *batched),
    saves=((1,), (0,), ()),
)


@public(_linear)
def linear(x, weight, bias=None):
    """`x @ weight.T + bias` as one op (`weight` is (out, in), as in PyTorch); x is (..., in)."""
    return apply(_linear, (x, weight, bias))


# -- negative log-likelihood of integer class indices, for (N, C) log-probabilities: one node.
# Softmax cross-entropy is nll(log_softmax(z)): two nodes, where the composite (reshape, fancy
# index, negate, mean) would be a dozen, and a training step of small layers spends more time
# walking nodes than computing.
def _nll_forward(logp, target, reduction):
    if (type(logp) is not np.ndarray or type(target) is not np.ndarray) and (is_dask(logp) or is_dask(target)):
        return dask_ops.nll(logp, target, reduction)
    loss = -logp[np.arange(len(target)), target]
    if reduction == "none":
        return loss
    total = np.sum(loss)
    return total / len(target) if reduction == "mean" else total


def _nll_shape(logp, target, reduction):
    return (logp[0],) if reduction == "none" else ()


def _at_targets(target, logp, values):
    """logp's shape, holding `values` (broadcast) at [i, target[i]] and +0.0 elsewhere. Written with
    dagrad's ops: on arrays they compute, on a static graph's integer placeholder they build nodes."""
    picked = equal(expand_dims(target, -1), np.arange(shape_of(logp)[1]))
    return where(picked, values, np.zeros((), dtype_of(logp)))


def _rows(z):
    """How many rows z has: a number, or a node counting them where a static graph does not know yet."""
    n = shape_of(z)[0]
    if n is not None:
        return n
    return sum(ones_like(getitem(z, (slice(None), 0))))


def _nll_vjp(g, out, logp, target, reduction):
    if type(logp) is np.ndarray and type(target) is np.ndarray and isinstance(g, (np.ndarray, np.generic)):
        # plain arrays (a first-order backward, the training loop's case): the same values as the
        # dagrad-op form below, in two NumPy calls; the (e) MLP step at batch 64 takes 840 instead
        # of 884 us with it, measured 2026-11-25
        n = len(target)
        grad = np.zeros_like(logp)
        grad[np.arange(n), target] = -(g / n if reduction == "mean" else g)
        return grad
    if reduction == "none":
        return _at_targets(target, logp, -expand_dims(g, -1))
    return _at_targets(target, logp, -(g / _rows(logp) if reduction == "mean" else g))


def _nll_jvp(t, out, logp, target, reduction):
    per_row = -sum(_at_targets(target, logp, t), axis=1)
    if reduction == "none":
        return per_row
    total = sum(per_row)
    return total / _rows(logp) if reduction == "mean" else total


def _nll_dtype(logp, target, reduction):
    loss = of_ufunc(np.negative)(logp)
    if reduction == "none":
        return loss
    return of_ufunc(np.divide)(accumulated(loss), int) if reduction == "mean" else accumulated(loss)


def _nll_batch(op, values, batched, attrs):
    """The examples' rows as one (batch * rows, C) problem, reduced per example afterwards."""
    logp, target = values
    size = shape_of(logp if batched[0] else target)[0]
    rows, classes = (shape_of(logp)[batched[0]:] if _ndim_of(logp) - batched[0] == 2 else (None, None))
    if rows is None or classes is None or (size is None and not batched[0]):
        return batch_loop(op, values, batched, attrs), True
    if not batched[1]:  # the same labels for every example: pick them with a mask that broadcasts
        loss = -sum(where(equal(expand_dims(target, -1), np.arange(classes)), logp, 0), axis=-1)
    else:
        if not batched[0]:
            logp = batch_broadcast(logp, size)
        # -1: a static graph's batch size may be known only when it runs
        loss = reshape(apply(op, (reshape(logp, (-1, classes)), reshape(target, (-1,))), {"reduction": "none"}),
                       (-1, rows))
    reduction = attrs["reduction"]
    if reduction == "none":
        return loss, True
    total = sum(loss, axis=1)
    return (total / rows if reduction == "mean" else total), True


def _nll_bounds(logp, target, reduction):
    # Op.validates: a label out of range raises IndexError (the forward indexes axis 1 with the labels)
    classes = shape_of(logp)[1]
    return None if classes is None else [(target, classes, 1)]


_nll = defop("nll_loss", _nll_forward, vjp=(_nll_vjp, None), jvp=(_nll_jvp, None), shape=_nll_shape,
             dtype=_nll_dtype, batch=_nll_batch, saves=(1,), validates=_nll_bounds)


@public(_nll)
def nll_indices(logp, target, reduction="mean"):
    """Negative log-likelihood of (N, C) log-probabilities at N integer class indices (already checked)."""
    target = target if isinstance(target, Tensor) else np.asarray(target)
    return apply(_nll, (logp, target), {"reduction": reduction})


# -- class labels checked when they arrive: in a static graph or dg.compile the labels are known only
# at run time, and a label outside [0, C-1] would pick no class of the one-hot (its row would be
# silently dropped), so a node checks them on the way in. Not in the op registry (like dropout's mask):
# only the losses build it, on graph nodes; eager labels are checked before any op runs.
def _class_labels(target, classes, ignore_index):
    labels = np.asarray(target)
    bad = ((labels < 0) | (labels >= classes)) & (labels != ignore_index)
    if bad.any():
        raise IndexError(f"target labels must be class indices in [0, {classes - 1}] (the input has {classes} "
                         f"classes) or ignore_index ({ignore_index}), got {labels[bad].ravel()[0]}")
    return target


CLASS_LABELS = Op("class_labels", _class_labels, None, None, lambda target, classes, ignore_index: tuple(target),
                  False, dtype=first, validates=True)


# -- embedding's indices known only when they arrive (a graph's, or mapped by a compiled vmap): integers in
# [0, rows - 1] (PyTorch's rule: a negative index is refused, not counted from the end as NumPy would); the same
# node checks every example of a batch at once
def _row_indices(indices, rows):
    values = np.asarray(indices)
    bad = (values < 0) | (values >= rows)
    if bad.any():
        raise IndexError(f"indices must be in [0, {rows - 1}] (the weight has {rows} rows), got "
                         f"{values[bad].ravel()[0]}")
    return indices


ROW_INDICES = Op("embedding_indices", _row_indices, None, None, lambda indices, rows: tuple(indices), False,
                 dtype=first, batch=batching.elementwise, validates=True)


# -- binary cross-entropy of probabilities p against targets t, elementwise: one node, with PyTorch's
# numerics. Each log is clamped at -100, so p = 0 or 1 gives a finite loss, and the derivative in p,
# (p - t) / (p (1 - p)), has its denominator clamped at 1e-12 (in float32, PyTorch's constant), so
# it is finite there too; composed of log and maximum, the gradient at p = 0 or 1 would be NaN.
_BCE_EPS = float(np.float32(1e-12))


def _binary_cross_entropy(p, t):
    p = np.asarray(p)
    if p.size and not (p.min() >= 0 and p.max() <= 1):  # NaN fails too, as in PyTorch
        raise ValueError(f"the input must hold probabilities in [0, 1], got values from {p.min()} to {p.max()}")
    with np.errstate(divide="ignore"):  # log(0) is clamped
        return ((t - 1) * np.maximum(np.log1p(-p), -100) - t * np.maximum(np.log(p), -100))[()]


def _bce_grad_input(g, out, p, t):
    return g * ((p - t) / maximum(p * (1 - p), _BCE_EPS))


def _bce_grad_target(g, out, p, t):
    return g * (log1p(-p) - log(p))  # not clamped: +-inf at p = 0 or 1, as PyTorch


_bce_rules = (_bce_grad_input, _bce_grad_target)
binary_cross_entropy = defop("binary_cross_entropy", _binary_cross_entropy, vjp=_bce_rules, jvp=_bce_rules,
                             shape=broadcast_shapes, nargs=2, batch=batching.elementwise,
                             dtype=lambda p, t: promoted(of_ufunc(np.log)(p), t), numpy_only=True, validates=True,
                             saves=((0, 1), (0,))).function
binary_cross_entropy.__doc__ = """-(t log p + (1 - t) log(1 - p)) elementwise, each log clamped at -100, with
PyTorch's gradients (finite at p = 0 and 1); `dg.nn.functional.binary_cross_entropy` adds weight and reduction."""


# PyTorch's keywords too (dg.softmax(x, dim=1), x.log_softmax(dim=-1)), as every reduction takes them
softmax, log_softmax, logsumexp = map(_torch_keywords, (softmax, log_softmax, logsumexp))
