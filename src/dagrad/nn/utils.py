"""`dg.nn.utils`: gradient clipping, as `torch.nn.utils`.

Both functions change the `.grad` of the parameters in place (an in-place write of each gradient tensor's own
array, which bumps its version counter) and skip parameters without a gradient. Everything is checked before the
first gradient is written. Gradients held as Dask arrays (over Dask data) are clipped lazily: each `.grad` gets the
clipped Dask array, computed with the others by the optimizer's one `dask.compute` at `step()` (docs/backends.md).
"""

from __future__ import annotations

import numpy as np

from .._core.backends import as_dtype, compute_together, is_dask
from .._core.errors import user_error
from .._core.tensor import Tensor, mark_written
from . import functional as F
from .init import _array

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _gradients(parameters, where):
    """[(grad Tensor, its array)] of the parameters (a Tensor or an iterable of them) that have a gradient."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    try:
        parameters = list(parameters)
    except TypeError:
        raise user_error(TypeError, where, f"parameters must be a Tensor or an iterable of Tensors, got "
                         f"{type(parameters).__name__}") from None
    for p in parameters:
        if not isinstance(p, Tensor):
            raise user_error(TypeError, where, f"parameters must be Tensors, got a {type(p).__name__}")
    return [(p.grad, _array(p.grad, where)) for p in parameters if p.grad is not None]


def _norm(a, norm_type):
    # an empty gradient counts as 0 (np.linalg.norm has no maximum of nothing for the inf norm)
    return np.linalg.norm(a.ravel(), norm_type) if a.size else np.zeros((), a.dtype)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients in place so that their total norm (the `norm_type` norm of the gradients' norms,
    as if they were one vector) is at most `max_norm`, as `torch.nn.utils.clip_grad_norm_`: each is multiplied
    by max_norm / (total + 1e-6) when that is below 1 (or NaN, as PyTorch's). Returns the total norm before
    clipping as a 0-d Tensor. `foreach` is accepted for PyTorch's signature.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, 1.0], requires_grad=True)
    >>> (3.0 * w.sum() + 4.0 * w[0]).backward()          # grad [7, 3]
    >>> round(dg.nn.utils.clip_grad_norm_([w], max_norm=1.0).item(), 4)
    7.6158
    >>> w.grad.numpy().round(4)
    array([0.9191, 0.3939])
    """
    where = "clip_grad_norm_"
    F._non_negative(max_norm, "max_norm", where)
    try:
        norm_type = float(norm_type)  # as PyTorch's: 'inf' and float('inf') alike
    except (TypeError, ValueError):
        raise user_error(ValueError, where, f"norm_type must be a number (or inf), got {norm_type!r}") from None
    grads = _gradients(parameters, where)
    if not grads:
        return Tensor(np.zeros(()))
    if any(is_dask(a) for _, a in grads):
        if not error_if_nonfinite:
            return _clip_lazily(grads, max_norm, norm_type)
        # the check needs the norm's value: compute it from the gradients, all in one compute
        grads = _computed(grads)
    total = _norm(np.array([_norm(a, norm_type) for _, a in grads]), norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise user_error(RuntimeError, where, f"the total norm of order {norm_type} of the gradients is non-finite "
                         f"({total}), so it cannot be clipped; to scale the gradients by it anyway, set "
                         f"error_if_nonfinite=False")
    dtype = total.dtype.type
    coef = dtype(max_norm) / (total + dtype(1e-6))  # in the gradients' precision, as PyTorch's
    if not coef >= 1:  # below 1, or NaN from a NaN norm (PyTorch multiplies by it too)
        with np.errstate(invalid="ignore"):  # an inf gradient times the 0 of an inf norm is NaN, as PyTorch's
            for g, a in grads:
                a *= coef
                mark_written(g)
    return Tensor(np.asarray(total))


def _computed(grads):
    """The gradients with their Dask arrays computed by one `dask.compute` (each `.grad` then holds its values)."""
    arrays = compute_together([a for _, a in grads])
    for (g, _), a in zip(grads, arrays):
        g._value = a
    return [(g, a) for (g, _), a in zip(grads, arrays)]


def _clip_lazily(grads, max_norm, norm_type):
    """clip_grad_norm_ on gradients of which some are Dask arrays, computing nothing: every `.grad` becomes its
    gradient times min(coef, 1) (a Dask array; times 1 is exact, so unclipped gradients keep their values), as
    PyTorch multiplies without reading the norm; returns the total norm as a lazy 0-d Tensor."""
    total = _norm(np.stack([_norm(a, norm_type) for _, a in grads]), norm_type)
    dtype = total.dtype.type
    scale = np.minimum(dtype(max_norm) / (total + dtype(1e-6)), dtype(1))  # NaN stays NaN, as PyTorch's
    for g, a in grads:
        g._value = as_dtype(a * scale, a.dtype)  # in place, a float32 gradient would stay float32
        mark_written(g)
    return Tensor(total)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clips every gradient in place to [-clip_value, clip_value], as `torch.nn.utils.clip_grad_value_` (NaN
    stays NaN). `foreach` is accepted for PyTorch's signature.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, 1.0, 1.0], requires_grad=True)
    >>> (w * dg.tensor([-3.0, 0.5, 2.0])).sum().backward()
    >>> dg.nn.utils.clip_grad_value_(w, 1.0)
    >>> w.grad
    tensor([-1. ,  0.5,  1. ])
    """
    F._non_negative(clip_value, "clip_value", "clip_grad_value_")
    grads = _gradients(parameters, "clip_grad_value_")
    for g, a in grads:
        if is_dask(a):  # lazy: a new Dask array (Dask arrays are never written in place)
            g._value = np.clip(a, -clip_value, clip_value)
        else:
            np.clip(a, -clip_value, clip_value, out=a)
        mark_written(g)
