"""Learning-rate schedulers: `StepLR` and `CosineAnnealingLR`, with PyTorch's formulas."""

from __future__ import annotations

import math

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR"]


class LRScheduler:
    """Base class: sets each param group's "lr" on every `step()` (call it after `optimizer.step()`).

    As in PyTorch, creating a scheduler records each group's "initial_lr" and performs the
    epoch-0 step; `last_epoch` counts the steps. In a static graph the new rate reaches the
    graph's learning-rate Variable, so `minimize`'s training step uses it from the next run.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> sched = dg.optim.lr_scheduler.StepLR(dg.optim.SGD([w], lr=1.0), step_size=2, gamma=0.5)
    >>> isinstance(sched, dg.optim.lr_scheduler.LRScheduler)
    True
    """

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not a dg.optim Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a "
                                   "scheduler with last_epoch >= 0 (load the optimizer's state dict first)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._initial = True
        self.step()
        self._initial = False

    def get_lr(self):
        """The learning rates of the current epoch (chainable form, from the groups' current rates)."""
        raise NotImplementedError

    def get_last_lr(self):
        """The learning rates the last `step()` set, one per param group."""
        return list(self._last_lr)

    def step(self):
        """Advances one epoch and sets each group's "lr"."""
        self._step_count += 1
        self.last_epoch += 1
        values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        """The scheduler's state (every attribute but the optimizer): Python numbers and lists.

        >>> import dagrad as dg
        >>> w = dg.tensor([1.0], requires_grad=True)
        >>> sched = dg.optim.lr_scheduler.StepLR(dg.optim.SGD([w], lr=1.0), step_size=2)
        >>> sched.step(); sched.state_dict()["last_epoch"]
        1
        """
        return {key: (list(value) if isinstance(value, list) else value)
                for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restores a `state_dict()`."""
        unknown = set(state_dict) - set(self.__dict__)
        if unknown:
            raise ValueError(f"{type(self).__name__}.load_state_dict: unknown entries {sorted(unknown)}")
        for key, value in state_dict.items():
            value = value.tolist() if hasattr(value, "tolist") else value
            setattr(self, key, list(value) if isinstance(value, (list, tuple)) else value)


class StepLR(LRScheduler):
    """Multiplies each group's learning rate by `gamma` every `step_size` epochs (PyTorch's StepLR).

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> opt = dg.optim.SGD([w], lr=1.0)
    >>> sched = dg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     opt.step()          # (a training epoch)
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if int(step_size) != step_size or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive integer, got {step_size}")
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from each group's initial rate to `eta_min` over `T_max` epochs
    (PyTorch's CosineAnnealingLR, its recursive form, so rates set by hand are followed).

    Its closed form: eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> opt = dg.optim.SGD([w], lr=1.0)
    >>> sched = dg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    >>> for epoch in range(4):
    ...     sched.step()
    ...     print(round(sched.get_last_lr()[0], 6))
    0.853553
    0.5
    0.146447
    0.0
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803  (PyTorch's name)
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be positive, got {T_max}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                    / 2 for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)) * (group["lr"] - self.eta_min)
                + self.eta_min for group in groups]
