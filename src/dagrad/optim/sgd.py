"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

import numpy as np

from .. import numpy as dnp
from .._core.errors import user_error
from .._core.tensor import is_symbolic
from .optimizer import Optimizer, _scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's `torch.optim.SGD` (same options, same formulas).

    With gradient g of parameter p (negated if `maximize`)::

        g = g + weight_decay * p                              (if weight_decay != 0)
        b = g  on the first step, else  momentum * b + (1 - dampening) * g   (if momentum != 0)
        g = g + momentum * b  if nesterov, else  g = b        (if momentum != 0)
        p = p - lr * g

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = dg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(3):
    ...     opt.zero_grad()
    ...     (w * w).sum().backward()
    ...     opt.step()
    >>> w
    tensor([ 0.062, -0.124], requires_grad=True)
    """

    def __init__(self, params=None, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    _nonnegative = ("lr", "momentum", "weight_decay")
    _numbers = ("dampening",)
    _flags = ("nesterov", "maximize")

    def _validate(self, group, op):
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise user_error(ValueError, op, f"nesterov=True (Nesterov momentum) requires a momentum > 0 and zero "
                             f"dampening, got momentum={group['momentum']}, dampening={group['dampening']}")

    def _optional_state(self, group):
        return {"momentum_buffer"} if group["momentum"] != 0 else set()

    def _static_extra_state(self, value, group, loaded):
        # a static step cannot branch on "is there a buffer yet": it counts steps instead
        if group["momentum"] == 0:
            return {}
        return {"momentum_buffer": np.zeros_like(value),
                "_step": 1.0 if loaded and "momentum_buffer" in loaded else 0.0}

    def _export_state(self, entry, group):
        if "_step" in entry and float(entry["_step"]) == 0:
            entry = {}  # no step yet: no buffer, as in PyTorch
        return super()._export_state(entry, group)

    def _fast_update(self, group):
        # plain SGD in place, without the general update's state and scalar handling: the (e) MLP
        # step, batch 64, takes 847 instead of 873 us with it (3%), measured 2026-11-25
        if group["momentum"] != 0 or group["weight_decay"] != 0 or group["maximize"]:
            return None
        lr = group["lr"]

        def update(value, g):  # p - lr * g rounds as torch's p + (-lr) * g
            value -= lr * g

        return update

    def _update(self, p, g, state, group):
        neg_lr = _scalar(-group["lr"], p.dtype)
        if group["maximize"]:
            g = -g
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            g = g + weight_decay * p
        new_state = {}
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = g
            else:
                buf = buf * momentum + (1 - group["dampening"]) * g
                if is_symbolic(p):  # a static graph: the first run takes g (one graph serves every step)
                    buf = dnp.where(state["_step"] == 0, g, buf)
                    new_state["_step"] = state["_step"] + 1.0
            new_state["momentum_buffer"] = buf
            g = g + momentum * buf if group["nesterov"] else buf
        return p + neg_lr * g, new_state
