"""Adam and AdamW (decoupled weight decay), with AMSGrad."""

from __future__ import annotations

import numpy as np

from .. import numpy as dnp
from .._core.errors import user_error
from .optimizer import Optimizer, _lerp, _real, _scalar

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, PyTorch's `torch.optim.Adam` (same options, same formulas, same order of operations).

    With gradient g (negated if `maximize`) and step count t (from 1)::

        g = g + weight_decay * p         (or, if decoupled_weight_decay, p = p * (1 - lr * weight_decay))
        m = m + (1 - beta1) * (g - m)    (torch.lerp)
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)            (if amsgrad; then v_max replaces v below)
        p = p - lr / (1 - beta1**t) * (m / (sqrt(v) / sqrt(1 - beta2**t) + eps))

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = dg.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9, -1.9], requires_grad=True)
    >>> opt.state[w]["step"]
    1.0
    """

    def __init__(self, params=None, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 maximize=False, decoupled_weight_decay=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, decoupled_weight_decay=decoupled_weight_decay))

    _nonnegative = ("lr", "eps", "weight_decay")
    _flags = ("amsgrad", "maximize", "decoupled_weight_decay")

    def _validate(self, group, op):
        betas = group["betas"]
        if isinstance(betas, np.ndarray):  # as dg.load gives a saved tuple back
            betas = tuple(betas.tolist())
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
            raise user_error(TypeError, op, f"betas must be a pair of numbers in [0, 1), got {type(betas).__name__} "
                             f"{betas!r}")
        for b in betas:
            if not 0.0 <= _real(op, "betas", b) < 1.0:
                raise user_error(ValueError, op, f"invalid betas {tuple(betas)} (two numbers in [0, 1))")
        dict.__setitem__(group, "betas", tuple(betas))  # as PyTorch's defaults: a tuple

    def _init_state(self, value, group):
        state = {"step": 0.0, "exp_avg": np.zeros_like(value), "exp_avg_sq": np.zeros_like(value)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = np.zeros_like(value)
        return state

    def _update(self, p, g, state, group):
        dtype = p.dtype
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        eps, weight_decay = group["eps"], group["weight_decay"]
        if group["maximize"]:
            g = -g
        step = state["step"] + 1.0
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p = p * _scalar(1 - lr * weight_decay, dtype)
            else:
                g = g + weight_decay * p
        exp_avg = _lerp(state["exp_avg"], g, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] * beta2 + (1 - beta2) * g * g
        # NumPy's power in every mode: a compiled or static step computes it with np.power on its step
        # node, and Python's ** (C's pow) can differ from NumPy's SIMD loop by an ulp, so eager and compiled
        # steps would drift apart
        step_size = lr / (1 - dnp.power(beta1, step))
        bias_correction2_sqrt = _scalar(dnp.power(1 - dnp.power(beta2, step), 0.5), dtype)
        new_state = {"step": step, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        v = exp_avg_sq
        if group["amsgrad"]:
            v = new_state["max_exp_avg_sq"] = dnp.maximum(state["max_exp_avg_sq"], exp_avg_sq)
        denom = dnp.sqrt(v) / bias_correction2_sqrt + eps
        return p + _scalar(-step_size, dtype) * (exp_avg / denom), new_state


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (`p = p * (1 - lr * weight_decay)` before the Adam step),
    PyTorch's `torch.optim.AdamW` (weight_decay defaults to 1e-2).

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = dg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.85, -1.8 ], requires_grad=True)
    """

    def __init__(self, params=None, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
