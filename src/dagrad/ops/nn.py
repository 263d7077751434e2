"""Softmax family: composites of primitives, shifted by the maximum so inputs of 1e3 stay finite."""

from __future__ import annotations

import numpy as np

from .._core.shapes import normalize_axis
from .elementwise import exp, isfinite, log, stop_gradient, where
from .reduce import max, sum
from .shape import reshape


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
