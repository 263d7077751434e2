"""Learning-rate schedulers: `StepLR`, `CosineAnnealingLR` and `ReduceLROnPlateau`, with PyTorch's formulas."""

from __future__ import annotations

import math

import numpy as np

from .._core.errors import user_error
from .optimizer import Optimizer, _nonnegative, _real

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR", "ReduceLROnPlateau"]


# the entries that are integers (others: any real number)
_COUNTS = ("last_epoch", "_step_count", "step_size", "patience", "cooldown", "cooldown_counter", "num_bad_epochs")


def _is_real(value):
    return (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
            and math.isfinite(value))


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_rates(optimizer, op):
    """Every group's rate, checked before a scheduler changes anything (a user may have set any of them)."""
    for i, group in enumerate(optimizer.param_groups):
        _nonnegative(f"{op}: param_groups[{i}]", "lr", group.get("lr"))


class LRScheduler:
    """Base class: sets each param group's "lr" on every `step()` (call it after `optimizer.step()`).

    As in PyTorch, creating one records each group's "initial_lr" and performs the epoch-0 step. In a
    static graph the new rate reaches the graph's learning-rate Variable for the next run.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> sched = dg.optim.lr_scheduler.StepLR(dg.optim.SGD([w], lr=1.0), step_size=2, gamma=0.5)
    >>> isinstance(sched, dg.optim.lr_scheduler.LRScheduler)
    True
    """

    def __init__(self, optimizer, last_epoch=-1):
        op = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise user_error(TypeError, op, f"{type(optimizer).__name__} is not a dg.optim Optimizer")
        if not _is_int(last_epoch) or last_epoch < -1:
            raise user_error(ValueError, op, f"last_epoch must be an int >= -1, got {last_epoch!r}")
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch != -1 and "initial_lr" not in group:
                raise user_error(KeyError, op, f"param 'initial_lr' is not specified in param_groups[{i}] when "
                                 "resuming a scheduler with last_epoch >= 0 (load the optimizer's state dict first)")
            if "initial_lr" in group:
                _nonnegative(f"{op}: param_groups[{i}]", "initial_lr", group["initial_lr"])
        _check_rates(optimizer, op)
        # checked: from here on nothing raises
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = int(last_epoch)
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
        """Advances one epoch and sets each group's "lr" (every group's rate checked first: all or none set)."""
        _check_rates(self.optimizer, f"{type(self).__name__}.step")
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
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
        """Restores a `state_dict()` (also as `dg.load` gives it back), every entry checked against the
        scheduler's own (a number for a number, a list as long for a list) before any is set.

        >>> import dagrad as dg
        >>> w = dg.tensor([1.0], requires_grad=True)
        >>> sched = dg.optim.lr_scheduler.StepLR(dg.optim.SGD([w], lr=1.0), step_size=2)
        >>> sched.load_state_dict({"last_epoch": "three"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: StepLR.load_state_dict: entry 'last_epoch' must be an int like the scheduler's, got str 'three' ...
        """
        op = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict):
            raise user_error(TypeError, op, f"expects a dict (from state_dict()), got {type(state_dict).__name__}")
        unknown = [key for key in state_dict if key not in self.__dict__ or key == "optimizer"]
        if unknown:
            raise user_error(ValueError, op, f"unknown entries {', '.join(sorted(map(repr, unknown)))}")
        values = {}
        for key, value in state_dict.items():
            current = self.__dict__[key]
            value = value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value
            if isinstance(current, list):
                ok = (isinstance(value, (list, tuple)) and len(value) == len(current)
                      and all(_is_real(v) for v in value))
                what = f"a list of {len(current)} numbers"
                value = list(value) if ok else value
            elif isinstance(current, bool):
                ok, what = isinstance(value, bool), "True or False"
            elif key in _COUNTS:
                ok, what = _is_int(value), "an int"
                value = int(value) if ok else value
            else:
                ok, what = _is_real(value), "a real number"
            if not ok:
                raise user_error(TypeError, op, f"entry {key!r} must be {what} like the scheduler's, got "
                                 f"{type(value).__name__} {value!r}")
            values[key] = value
        self.__dict__.update(values)


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
        if not _is_real(step_size) or step_size <= 0 or int(step_size) != step_size:
            raise user_error(ValueError, "StepLR", f"step_size must be a positive integer, got {step_size!r}")
        _nonnegative("StepLR", "gamma", gamma)
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from each group's initial rate to `eta_min` over `T_max` epochs (PyTorch's
    recursive form, so rates set by hand are followed): eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2.

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
        if _real("CosineAnnealingLR", "T_max", T_max) <= 0:
            raise user_error(ValueError, "CosineAnnealingLR", f"T_max must be positive, got {T_max}")
        _nonnegative("CosineAnnealingLR", "eta_min", eta_min)
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


_CHOICES = {"mode": ("min", "max"), "threshold_mode": ("rel", "abs")}


class ReduceLROnPlateau(LRScheduler):
    """Multiplies each group's rate by `factor` (down to `min_lr`) once the metric given to `step(metric)` has not
    improved for more than `patience` epochs (PyTorch's ReduceLROnPlateau: `mode` "min" or "max", improvement
    by `threshold`, relative or absolute, `cooldown` epochs of rest after a reduction, changes below `eps` ignored).

    `step(metric)` reads the metric's value with `float()`: a Tensor holding a Dask array is computed then. The
    loss that `opt.step(closure)` returns is already in memory (docs/backends.md), so passing it costs nothing.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0], requires_grad=True)
    >>> opt = dg.optim.SGD([w], lr=1.0)
    >>> sched = dg.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0]:
    ...     sched.step(loss)
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0.0, eps=1e-8):
        op = "ReduceLROnPlateau"
        if not isinstance(optimizer, Optimizer):
            raise user_error(TypeError, op, f"{type(optimizer).__name__} is not a dg.optim Optimizer")
        for key, value in (("mode", mode), ("threshold_mode", threshold_mode)):
            if value not in _CHOICES[key]:
                raise user_error(ValueError, op, f"{key} must be one of {_CHOICES[key]}, got {value!r}")
        if _nonnegative(op, "factor", factor) >= 1:
            raise user_error(ValueError, op, f"factor must be < 1 (it multiplies the rate), got {factor}")
        for key, value in (("patience", patience), ("cooldown", cooldown)):
            if not _is_int(value) or value < 0:
                raise user_error(ValueError, op, f"{key} must be an int >= 0, got {value!r}")
        _real(op, "threshold", threshold)
        _nonnegative(op, "eps", eps)
        groups = optimizer.param_groups
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(groups):
                raise user_error(ValueError, op, f"min_lr has {len(min_lr)} entries, the optimizer {len(groups)} "
                                 "parameter group(s)")
            min_lrs = [_nonnegative(op, "min_lr", v) for v in min_lr]
        else:
            min_lrs = [_nonnegative(op, "min_lr", min_lr)] * len(groups)
        # checked: from here on nothing raises
        self.optimizer = optimizer
        self.mode, self.threshold_mode = mode, threshold_mode
        self.factor, self.patience, self.threshold, self.cooldown, self.eps = factor, patience, threshold, cooldown, eps
        self.min_lrs = min_lrs
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = self.last_epoch = 0
        self._last_lr = [group["lr"] for group in groups]

    def _is_better(self, value):
        relative = self.threshold_mode == "rel"
        if self.mode == "min":
            return value < (self.best * (1 - self.threshold) if relative else self.best - self.threshold)
        return value > (self.best * (self.threshold + 1) if relative else self.best + self.threshold)

    def step(self, metrics):
        """Counts an epoch with the metric `metrics` (a number or a one-element Tensor, computed if lazy) and
        reduces the rates after more than `patience` epochs without improvement."""
        try:
            current = float(metrics)
        except (TypeError, ValueError) as e:
            raise user_error(TypeError, "ReduceLROnPlateau.step", f"the metric must be a number or a one-element "
                             f"Tensor, got {type(metrics).__name__}: {e}") from None
        _check_rates(self.optimizer, "ReduceLROnPlateau.step")
        self.last_epoch += 1
        if self._is_better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, min_lr)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def load_state_dict(self, state_dict):
        """Restores a `state_dict()`, checked as the other schedulers' (the modes among their choices, `best` a
        number or +-inf) before any entry is set."""
        op = "ReduceLROnPlateau.load_state_dict"
        if isinstance(state_dict, dict):
            for key, choices in _CHOICES.items():
                if key in state_dict and state_dict[key] not in choices:
                    raise user_error(ValueError, op, f"entry {key!r} must be one of {choices}, got "
                                     f"{state_dict[key]!r}")
            best = state_dict.get("best", 0.0)
            best = best.item() if isinstance(best, (np.ndarray, np.generic)) else best
            if not (_is_real(best) or best in (math.inf, -math.inf)):
                raise user_error(TypeError, op, f"entry 'best' must be a number, got {best!r}")
            rest = {k: v for k, v in state_dict.items() if k not in _CHOICES and k != "best"}
            saved = {k: self.__dict__[k] for k in (*_CHOICES, "best")}
            try:
                self.__dict__.update({k: state_dict[k] for k in (*_CHOICES, "best") if k in state_dict})
                self.best = float(best) if "best" in state_dict else self.best
                super().load_state_dict(rest)
            except BaseException:
                self.__dict__.update(saved)
                raise
            return
        super().load_state_dict(state_dict)
