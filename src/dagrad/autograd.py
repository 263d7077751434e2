"""`dg.autograd`: `torch.autograd`'s names for code ported from PyTorch (`Function`, `grad`,
`backward`), on dagrad's one engine.

>>> import dagrad as dg
>>> x = dg.tensor([1.0, 2.0], requires_grad=True)
>>> (g,) = dg.autograd.grad((x ** 3).sum(), x)
>>> g
tensor([ 3., 12.])
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ._core.autodiff import backward as _backward
from ._core.autodiff import complex_seed_error, reverse_sweep
from ._core.backends import as_dtype, is_dask, ones
from ._core.errors import user_error
from ._core.tensor import Tensor, _leaf, enable_grad
from .function import Function, FunctionCtx

__all__ = ["Function", "FunctionCtx", "grad", "backward"]


def _as_list(tensors):
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


def _seeds(outputs, grad_outputs, create_graph, where):
    """One cotangent per output: ones for a one-element output, else the given grad_output."""
    grads = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    if len(grads) != len(outputs):
        raise user_error(ValueError, where, f"{len(grads)} grad_outputs for {len(outputs)} outputs")
    seeds = []
    for out, g in zip(outputs, grads):
        if not isinstance(out, Tensor) or out._level or not out.requires_grad:
            raise user_error(RuntimeError, where, "every output must be an eager tensor that requires grad (one "
                             "computed from tensors with requires_grad=True, outside no_grad)")
        if g is None:
            if out.size != 1:
                raise user_error(RuntimeError, where, f"grad can be created implicitly only for one-element "
                                 f"outputs, got shape {out.shape}; pass grad_outputs", out)
            if out.dtype.kind == "c":
                raise complex_seed_error(where, out)
            g = ones(out.shape, out.dtype, out._raw())  # a Dask output's seed is a Dask array
        elif tuple(np.shape(g)) != out.shape:
            raise user_error(ValueError, where, f"a grad_output of shape {tuple(np.shape(g))} for an output of "
                             f"shape {out.shape}", out)
        if not (create_graph and isinstance(g, Tensor)):
            g = g._raw() if isinstance(g, Tensor) else g
            g = _leaf(as_dtype(g, out.dtype) if is_dask(g) else np.asarray(g, dtype=out.dtype), False)
        seeds.append(g)
    return seeds


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """The gradients of `outputs` (weighted by `grad_outputs`) with respect to each of `inputs`, as
    `torch.autograd.grad`: a tuple, nothing accumulated into `.grad`. With `create_graph=True` they
    are recorded, to be differentiated again. An input the outputs do not depend on is an error,
    or None with `allow_unused=True`.

    >>> import dagrad as dg
    >>> x = dg.tensor(2.0, requires_grad=True)
    >>> (dx,) = dg.autograd.grad(x ** 3, x, create_graph=True)
    >>> dg.autograd.grad(dx, x)[0]
    tensor(12.)
    """
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    for x in inputs:
        if not isinstance(x, Tensor) or x._level or not x.requires_grad:
            raise user_error(RuntimeError, "autograd.grad", "every input must be an eager tensor that requires grad",
                             *[i for i in inputs if isinstance(i, Tensor)])
    seeds = _seeds(outputs, grad_outputs, create_graph, "autograd.grad")
    free = not (create_graph if retain_graph is None else retain_graph)
    with enable_grad() if create_graph else nullcontext():
        found = reverse_sweep(outputs, seeds, 0, graph_mode=create_graph, free=free, targets=set(inputs))
    results = []
    for x in inputs:
        g = found.get(x)
        if g is None and not allow_unused:
            raise user_error(RuntimeError, "autograd.grad", "one of the inputs was not used to compute the outputs; "
                             "pass allow_unused=True to get None for it", x)
        if g is not None and not isinstance(g, Tensor):  # a Dask gradient stays lazy (np.array computed it)
            g = _leaf(as_dtype(g, x.dtype) if is_dask(g) else np.array(g, dtype=x.dtype), False)
        results.append(g)
    return tuple(results)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """`torch.autograd.backward`: `t.backward(g)` for each tensor, accumulating into the leaves' `.grad`."""
    tensors = _as_list(tensors)
    grads = [None] * len(tensors) if grad_tensors is None else _as_list(grad_tensors)
    if len(grads) != len(tensors):
        raise user_error(ValueError, "autograd.backward", f"{len(grads)} grad_tensors for {len(tensors)} tensors")
    for t, g in zip(tensors, grads):
        _backward(t, g, retain_graph=True if len(tensors) > 1 else retain_graph, create_graph=create_graph)
