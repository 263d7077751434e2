"""Softmax family (composites of primitives, shifted by the maximum so inputs of 1e3 stay finite)
and `linear`, a primitive for speed."""

from __future__ import annotations

import numpy as np

from .._core.op import apply, defop, public
from .._core.shapes import dtype_of, normalize_axis, shape_of
from .._core.tensor import Tensor
from .elementwise import astype, equal, exp, isfinite, log, ones_like, stop_gradient, where
from .linalg import einsum, matmul
from .reduce import max, sum
from .shape import expand_dims, getitem, reshape, transpose


def _constant_max(x, axes):
    """max of x over `axes` (keepdims) as a constant: a shift that needs no gradient.

    Subtracting any constant leaves softmax and logsumexp unchanged, so the shift is never
    differentiated (no tie-breaking questions, no extra backward work).
    """
    shift = stop_gradient(max(x, axis=axes, keepdims=True))
    return where(isfinite(shift), shift, 0)


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over `axis`, finite for large inputs, as `scipy.special.logsumexp`."""
    axes = normalize_axis(axis, len(np.shape(x)), "logsumexp")
    shift = _constant_max(x, axes)
    out = log(sum(exp(x - shift), axis=axes, keepdims=True)) + shift
    if keepdims:
        return out
    shape = np.shape(out)
    return reshape(out, tuple(n for i, n in enumerate(shape) if axes is not None and i not in axes))


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, as `scipy.special.softmax` / `torch.softmax`."""
    axes = normalize_axis(axis, len(np.shape(x)), "softmax")
    e = exp(x - _constant_max(x, axes))
    return e / sum(e, axis=axes, keepdims=True)


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along `axis`, finite for large inputs, as `torch.log_softmax`."""
    return x - logsumexp(x, axis=axis, keepdims=True)


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
    if len(shape_of(x)) == 2:
        return matmul(transpose(g), x)
    batch = "abcdefgh"[: len(shape_of(x)) - 1]  # every batch entry's rows together (sizes may be unknown)
    return einsum(f"{batch}o,{batch}i->oi", g, x)


def _linear_grad_b(g, out, x, w, b):
    rank = len(shape_of(g))
    return sum(g, axis=tuple(range(rank - 1))) if rank > 1 else g


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
)


@public(_linear)
def linear(x, weight, bias=None):
    """`x @ weight.T + bias` as one op (`weight` is (out, in), as in PyTorch); x is (..., in)."""
    return apply(_linear, (x, weight, bias))


# -- softmax cross-entropy against integer class indices, for (N, C) logits: one node. The
# composite (log_softmax, pick, mean) is a dozen nodes; a training step of small layers spends
# more time walking them than computing. The gradient is (softmax - one-hot) times the upstream
# gradient, written with dagrad's ops so that it is differentiated again at higher orders.
def _cross_entropy_forward(z, target, reduction):
    shift = np.max(z, axis=1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0)
    lse = np.log(np.sum(np.exp(z - shift), axis=1, keepdims=True)) + shift
    loss = -((z - lse)[np.arange(len(target)), target])  # the composite's operations, in its order
    if reduction == "none":
        return loss
    total = np.sum(loss)
    return total / len(target) if reduction == "mean" else total


def _cross_entropy_shape(z, target, reduction):
    return (z[0],) if reduction == "none" else ()


def _one_hot(target, z):
    # dagrad's ops: on arrays they compute, on a static graph's integer placeholder they build nodes
    return astype(equal(expand_dims(target, -1), np.arange(shape_of(z)[1])), dtype_of(z))


def _rows(z):
    """How many rows z has: a number, or a node counting them where a static graph does not know yet."""
    n = shape_of(z)[0]
    if n is not None:
        return n
    return sum(ones_like(getitem(z, (slice(None), 0))))


def _cross_entropy_vjp(g, out, z, target, reduction):
    if type(z) is np.ndarray and type(target) is np.ndarray:
        # a first-order backward on plain arrays (the training loop's case): NumPy directly, which
        # is the same arithmetic as the dagrad ops below in fewer calls
        shift = np.max(z, axis=1, keepdims=True)
        e = np.exp(z - np.where(np.isfinite(shift), shift, 0))
        delta = e / np.sum(e, axis=1, keepdims=True)
        delta[np.arange(len(target)), target] -= 1
        if reduction == "none":
            return delta * np.expand_dims(g, -1)
        return delta * (g / len(target) if reduction == "mean" else g)
    delta = softmax(z, axis=1) - _one_hot(target, z)
    if reduction == "none":
        return delta * expand_dims(g, -1)
    return delta * (g / _rows(z) if reduction == "mean" else g)


def _cross_entropy_jvp(t, out, z, target, reduction):
    per_row = sum((softmax(z, axis=1) - _one_hot(target, z)) * t, axis=1)
    if reduction == "none":
        return per_row
    total = sum(per_row)
    return total / _rows(z) if reduction == "mean" else total


_cross_entropy = defop(
    "cross_entropy",
    _cross_entropy_forward,
    vjp=(_cross_entropy_vjp, None),
    jvp=(_cross_entropy_jvp, None),
    shape=_cross_entropy_shape,
)


@public(_cross_entropy)
def cross_entropy_indices(z, target, reduction="mean"):
    """Softmax cross-entropy of (N, C) logits against N integer class indices (already checked)."""
    target = target if isinstance(target, Tensor) else np.asarray(target)
    return apply(_cross_entropy, (z, target), {"reduction": reduction})
