"""Adagrad, with learning-rate decay."""

from __future__ import annotations

import numpy as np

from .. import numpy as dnp
from .optimizer import Optimizer, _scalar

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, PyTorch's `torch.optim.Adagrad` (same options, same formulas).

    With gradient g (negated if `maximize`) and step count t (from 1)::

        g = g + weight_decay * p                 (if weight_decay != 0)
        s = s + g * g                            (s starts at initial_accumulator_value)
        p = p - lr / (1 + (t - 1) * lr_decay) * (g / (sqrt(s) + eps))

    As in PyTorch, the state of every parameter exists from the start.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = dg.optim.Adagrad([w], lr=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.5, -1.5], requires_grad=True)
    """

    def __init__(self, params=None, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                 *, maximize=False):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps, maximize=maximize))

    _nonnegative = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")

    def _init_state(self, value, group):
        return {"step": 0.0, "sum": np.full_like(value, group["initial_accumulator_value"])}

    def _on_new_param(self, p, group):
        if p not in self.state:
            self.state[p] = self._init_state(p.value, group)

    def _update(self, p, g, state, group):
        step = state["step"] + 1.0
        if group["maximize"]:
            g = -g
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"] + g * g
        std = dnp.sqrt(state_sum) + group["eps"]
        return p + _scalar(-clr, p.dtype) * (g / std), {"step": step, "sum": state_sum}
