"""The loss modules of `dg.nn`, as `torch.nn`'s: each holds its options, checked when it is made, and calls its
`dg.nn.functional` form with `(input, target)`. Class weights are buffers, as PyTorch's (in `state_dict`, not
trained). The arguments after `weight` are keyword-only: where PyTorch's constructors still take the deprecated
`size_average` and `reduce` there, a positional value cannot be misread.
"""

from __future__ import annotations

from .._core.errors import user_error
from . import functional as F
from .module import Module

__all__ = [
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
    "KLDivLoss",
]


class _Loss(Module):
    def __init__(self, reduction, reductions=F._REDUCTIONS):
        super().__init__()
        if reduction not in reductions:
            raise user_error(ValueError, type(self).__name__, f"reduction must be one of "
                             f"{', '.join(map(repr, reductions))}, got {reduction!r}")
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight, reduction):
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean (or summed, or elementwise) squared error.

    >>> import dagrad as dg
    >>> dg.nn.MSELoss()(dg.tensor([1.0, 2.0]), dg.tensor([0.0, 0.0]))
    tensor(2.5)
    """

    def __init__(self, *, reduction="mean"):
        super().__init__(reduction)

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean (or summed, or elementwise) absolute error.

    >>> import dagrad as dg
    >>> dg.nn.L1Loss(reduction="sum")(dg.tensor([1.0, -2.0]), dg.tensor([0.0, 0.0]))
    tensor(3.)
    """

    def __init__(self, *, reduction="mean"):
        super().__init__(reduction)

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below `beta`, absolute error above (see `dg.nn.functional.smooth_l1_loss`).

    >>> import dagrad as dg
    >>> dg.nn.SmoothL1Loss(beta=0.5)(dg.tensor([0.25, 2.0]), dg.tensor([0.0, 0.0]))
    tensor(0.90625)
    """

    def __init__(self, *, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = F._non_negative(beta, "beta", "SmoothL1Loss")

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below `delta`, delta times the absolute error above (see `dg.nn.functional.huber_loss`).

    >>> import dagrad as dg
    >>> dg.nn.HuberLoss(delta=0.5)(dg.tensor([0.25, 2.0]), dg.tensor([0.0, 0.0]))
    tensor(0.453125)
    """

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = F._positive_number(delta, "delta", "HuberLoss")

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy of logits against class indices or class probabilities, with class `weight`,
    `ignore_index` and `label_smoothing` (see `dg.nn.functional.cross_entropy`).

    >>> import dagrad as dg, numpy as np
    >>> loss = dg.nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> round(loss(dg.tensor([[2.0, 0.5, -1.0]]), np.array([0])).item(), 4)
    0.3913
    """

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(weight, reduction)
        self.ignore_index = F._check_ignore_index(ignore_index, "CrossEntropyLoss")
        self.label_smoothing = F._probability(label_smoothing, "label_smoothing", "CrossEntropyLoss")

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices under log-probabilities, with class `weight` and `ignore_index`
    (see `dg.nn.functional.nll_loss`).

    >>> import dagrad as dg, numpy as np
    >>> round(dg.nn.NLLLoss()(dg.tensor(np.log([[0.5, 0.5], [0.25, 0.75]])), np.array([0, 1])).item(), 4)
    0.4904
    """

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean"):
        super().__init__(weight, reduction)
        self.ignore_index = F._check_ignore_index(ignore_index, "NLLLoss")

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities in [0, 1], each log clamped at -100 (as PyTorch's).

    >>> import dagrad as dg
    >>> round(dg.nn.BCELoss()(dg.tensor([0.9, 0.2]), dg.tensor([1.0, 0.0])).item(), 4)
    0.1643
    """

    def __init__(self, weight=None, *, reduction="mean"):
        super().__init__(weight, reduction)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Sigmoid and binary cross-entropy in one, finite for any logits; `pos_weight` (a buffer, as `weight`)
    scales the positive term of each class (see `dg.nn.functional.binary_cross_entropy_with_logits`).

    >>> import dagrad as dg
    >>> loss = dg.nn.BCEWithLogitsLoss(pos_weight=dg.tensor([2.0]))
    >>> round(loss(dg.tensor([0.0]), dg.tensor([1.0])).item(), 4)
    1.3863
    """

    def __init__(self, weight=None, *, reduction="mean", pos_weight=None):
        super().__init__(weight, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """KL divergence of a target distribution from log-probabilities `input` (see `dg.nn.functional.kl_div`;
    use reduction='batchmean' for the divergence itself).

    >>> import dagrad as dg, numpy as np
    >>> loss = dg.nn.KLDivLoss(reduction="batchmean")
    >>> round(loss(dg.tensor(np.log([[0.5, 0.5]])), dg.tensor([[1.0, 0.0]])).item(), 4)
    0.6931
    """

    def __init__(self, *, reduction="mean", log_target=False):
        super().__init__(reduction, F._REDUCTIONS + ("batchmean",))
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
