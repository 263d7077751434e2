"""RMSprop, plain or centered, with momentum."""

from __future__ import annotations

import numpy as np

from .. import numpy as dnp
from .optimizer import Optimizer, _lerp, _scalar

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, PyTorch's `torch.optim.RMSprop` (same options, same formulas).

    With gradient g (negated if `maximize`)::

        g = g + weight_decay * p                      (if weight_decay != 0)
        v = alpha * v + (1 - alpha) * g * g
        avg = sqrt(v) + eps, or if centered: m = m + (1 - alpha) * (g - m), avg = sqrt(v - m * m) + eps
        b = momentum * b + g / avg;  p = p - lr * b   (if momentum > 0)
        p = p - lr * g / avg                          (otherwise)

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = dg.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w.numpy().round(4)
    array([ 0.9, -1.9])
    """

    def __init__(self, params=None, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    _nonnegative = ("lr", "eps", "momentum", "weight_decay", "alpha")
    _flags = ("centered", "maximize")

    def _init_state(self, value, group):
        state = {"step": 0.0, "square_avg": np.zeros_like(value)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = np.zeros_like(value)
        if group["centered"]:
            state["grad_avg"] = np.zeros_like(value)
        return state

    def _update(self, p, g, state, group):
        dtype = p.dtype
        alpha, eps, weight_decay, momentum = group["alpha"], group["eps"], group["weight_decay"], group["momentum"]
        if group["maximize"]:
            g = -g
        new_state = {"step": state["step"] + 1.0}
        if weight_decay != 0:
            g = g + weight_decay * p
        square_avg = new_state["square_avg"] = state["square_avg"] * alpha + (1 - alpha) * g * g
        if group["centered"]:
            grad_avg = new_state["grad_avg"] = _lerp(state["grad_avg"], g, 1 - alpha)
            avg = dnp.sqrt(square_avg + -1.0 * grad_avg * grad_avg) + eps
        else:
            avg = dnp.sqrt(square_avg) + eps
        neg_lr = _scalar(-group["lr"], dtype)
        if momentum > 0:
            buf = new_state["momentum_buffer"] = state["momentum_buffer"] * momentum + g / avg
            return p + neg_lr * buf, new_state
        return p + neg_lr * (g / avg), new_state
