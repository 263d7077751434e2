"""Normalisation over the batch or over groups of channels: `batch_norm`, `group_norm` and the layers
`BatchNorm1d`, `BatchNorm2d`, `GroupNorm`, as PyTorch's (signatures, defaults, `state_dict` keys, running
statistics, train/eval behaviour).

Batch normalisation in training of concrete values is one `dg.Function` (PyTorch's formulas for the value and the
gradient, per channel, in a few passes over the batch), whose backward on a graph of the gradient is written in
dagrad's ops, so it differentiates again; static graphs (and values traced by the transforms) take the same
formulas as a composite of dagrad's ops.

>>> import dagrad as dg, numpy as np
>>> bn = dg.nn.BatchNorm2d(3)
>>> y = bn(dg.tensor(np.random.default_rng(0).standard_normal((4, 3, 5, 5))))
>>> bool(np.abs(y.numpy().mean(axis=(0, 2, 3))).max() < 1e-12), int(bn.num_batches_tracked.item())
(True, 1)
"""

from __future__ import annotations

import numpy as np

from .._core.backends import compute_together, to_numpy
from .._core.dtypes import default_float
from .._core.errors import user_error
from .._core.shapes import dtype_of
from .._core.tensor import Tensor, is_symbolic, mark_written
from ..function import Function
from ..ops.elementwise import sqrt
from ..ops.reduce import mean, sum, var
from ..ops.shape import reshape
from ._common import _affine, _fits, _int, _positive_number, _probability, _raw, _shape, _size, shape_error
from .module import Module

__all__ = ["batch_norm", "group_norm", "BatchNorm1d", "BatchNorm2d", "GroupNorm"]


def _eager(*values):
    """Whether every value is concrete, of NumPy, and outside any transform (a NumPy array, None or a plain eager
    Tensor of one): a Dask or CuPy value takes the composite of dagrad's ops, which keeps its array type."""
    return all(v is None or isinstance(v, np.ndarray) or (isinstance(v, Tensor) and not v._level and not is_symbolic(v)
                                                          and isinstance(v._value, np.ndarray))
               for v in values)


def _channel_sums(a, b=None):
    """Per channel (axis 1) of a (N, C, ...): the sum of a, or of a * b, (C,), in one pass over the batch whatever
    its memory order (NumPy's sum over axes (0, 2, 3) is several times slower)."""
    n, c = a.shape[:2]
    a3 = a.reshape(n, c, -1)
    if b is None:
        return np.einsum("ncr->c", a3)
    return np.einsum("ncr,ncr->c", a3, b.reshape(n, c, -1))


def _stat_shape(ndim, c):
    return (1, c) + (1,) * (ndim - 2)


def _batch_statistics(x):
    """The batch mean and biased variance of x (N, C, ...) per channel, (C,) each, and x less its mean."""
    count = x.size // x.shape[1]
    mu = _channel_sums(x) / count
    centred = x - mu.reshape(_stat_shape(x.ndim, x.shape[1]))
    return mu, _channel_sums(centred, centred) / count, centred


def _normalise_backward(x, weight, g, eps, cache=None):
    """PyTorch's gradient of batch normalisation with batch statistics: for x-hat = (x - mean) / sqrt(var + eps)
    per channel (M values each), dx = w / sqrt(var + eps) * (g - mean(g) - x-hat * mean(g * x-hat)),
    dw = sum(g * x-hat), db = sum(g). On arrays in a few passes (with `cache`, the forward's x - mean and
    1 / sqrt(var + eps)); on Tensors in dagrad's ops, recomputed from x, so that the gradient differentiates again."""
    xs = _shape(x)
    shape = _stat_shape(len(xs), xs[1])
    if isinstance(g, np.ndarray) and isinstance(x, np.ndarray):
        if cache is None:
            _, v, centred = _batch_statistics(x)
            inv = 1 / np.sqrt(v + eps)
        else:
            centred, inv = cache
        count = x.size // xs[1]
        g_sum, g_centred = _channel_sums(g), _channel_sums(g, centred)
        a = inv if weight is None else inv * weight
        b, c = a * g_sum / count, a * g_centred * inv * inv / count
        # in place where the array is this function's own: each temporary of the batch's size is memory the
        # allocator may have to fault in again
        dx = g * a.reshape(shape).astype(g.dtype, copy=False)
        dx -= b.reshape(shape)
        correction = centred * c.reshape(shape).astype(g.dtype, copy=False)
        dx -= correction
        return dx, g_centred * inv, g_sum
    axes = (0,) + tuple(range(2, len(xs)))
    inv = 1 / sqrt(var(x, axis=axes, keepdims=True) + eps)
    normalised = (x - mean(x, axis=axes, keepdims=True)) * inv
    g_sum = sum(g, axis=axes, keepdims=True)
    g_normalised = sum(g * normalised, axis=axes, keepdims=True)
    count = int(np.prod([xs[a] for a in axes]))
    scale = inv if weight is None else inv * reshape(weight, shape)
    dx = scale * (g - g_sum / count - normalised * (g_normalised / count))
    return dx, reshape(g_normalised, (xs[1],)), reshape(g_sum, (xs[1],))


class BatchNormFunction(Function):
    """Batch normalisation with the batch's statistics, as one node: (x - mean) / sqrt(var + eps) * weight + bias
    (weight and bias may be None). It appends the batch's (mean, biased variance) to `into`, a list, for the
    running statistics' update. Applied to concrete values only (eager, outside the transforms): its forward keeps
    x - mean and 1 / sqrt(var + eps) for a plain backward, as PyTorch's kernel saves the mean and inverse std."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps, into):
        mu, v, centred = _batch_statistics(x)
        into.append((mu, v))
        inv = 1 / np.sqrt(v + eps)
        ctx.eps, ctx.cache = eps, (centred, inv)
        ctx.save_for_backward(x, weight)
        scale = inv if weight is None else inv * weight
        shape = _stat_shape(x.ndim, x.shape[1])
        out = centred * scale.reshape(shape).astype(x.dtype, copy=False)
        if bias is not None:
            out += bias.reshape(shape)
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        dx, dw, db = _normalise_backward(x, weight, g, ctx.eps, ctx.cache)
        return dx, dw, db, None, None


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalisation of x (N, C, ...) (BatchNorm1d's (N, C) or (N, C, L), BatchNorm2d's (N, C, H, W)), as
    `torch.nn.functional.batch_norm`: in training with the batch's mean and biased variance over every axis but the
    channels, updating the running stats given in place (`running = (1 - momentum) * running + momentum * batch`,
    with the unbiased variance); otherwise with the running stats.

    All or nothing: every argument is checked before the running stats are touched, and they are updated only
    once the output is computed. An empty batch (N = 0) gives an empty output and leaves them unchanged.

    >>> import dagrad as dg, numpy as np
    >>> rm, rv = np.zeros(2), np.ones(2)
    >>> y = batch_norm(dg.tensor([[1.0, 2.0], [3.0, 6.0]]), rm, rv, training=True)
    >>> rm
    array([0.2, 0.4])
    """
    xs = _shape(x)
    if len(xs) < 2:
        raise shape_error("batch_norm", "(N, C, ...)", xs, x)
    if dtype_of(x).kind != "f":
        raise user_error(TypeError, "batch_norm", f"the input must be floating point, got dtype {dtype_of(x)}", x)
    c = xs[1]
    for name, stat in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                       ("bias", bias)):
        if stat is not None and not _fits(_shape(stat), (c,)):
            raise user_error(ValueError, "batch_norm", f"{name} must hold one value per channel, shape ({c},), got "
                             f"{_shape(stat)}", x, stat)
    _positive_number(eps, "eps", "batch_norm", x)
    axes, stat_shape = (0,) + tuple(range(2, len(xs))), (1, c) + (1,) * (len(xs) - 2)
    count = int(np.prod([xs[a] for a in axes])) if None not in xs else None
    updates = ()
    if training:
        if count == 1:
            raise user_error(ValueError, "batch_norm", f"expected more than 1 value per channel when training, got "
                             f"input of shape {xs}", x)
        if running_mean is not None or running_var is not None:
            _probability(momentum, "momentum", "batch_norm", x)
            if is_symbolic(x):
                raise user_error(NotImplementedError, "batch_norm", "updating running statistics needs concrete "
                                 "values (eager or transforms), not a static graph node", x)
            updates = {name: _writable(stat, name) for name, stat in (("running_mean", running_mean),
                                                                      ("running_var", running_var)) if stat is not None}
        if count == 0:  # an empty batch: nothing to normalise, and nothing learnt about the data
            out = _affine_of(x, weight, bias, stat_shape)
        elif _eager(x, weight, bias):  # one node
            into = []
            out = BatchNormFunction.apply(x, weight, bias, eps, into)
            (mu, v), = into
        else:  # graph nodes, or values traced by a transform: the same formulas in dagrad's ops
            mu, v = mean(x, axis=axes, keepdims=True), var(x, axis=axes, keepdims=True)
            out = _affine_of((x - mu) / sqrt(v + eps), weight, bias, stat_shape)
    else:
        if running_mean is None or running_var is None:
            raise user_error(ValueError, "batch_norm", "evaluation mode needs running_mean and running_var", x)
        mu, v = reshape(running_mean, stat_shape), reshape(running_var, stat_shape)
        out = _affine_of((x - mu) / sqrt(v + eps), weight, bias, stat_shape)
    if updates and count != 0:  # the output is computed: nothing can fail any more
        # both statistics at once: over a Dask batch ONE compute (two would read every chunk twice)
        mu_values, v_values = (to_numpy(a) for a in compute_together([_raw(mu), _raw(v)]))
        batch = {"running_mean": mu_values.reshape(-1), "running_var": v_values.reshape(-1) * (count / (count - 1))}
        for name, (stat, target) in updates.items():
            target *= 1 - momentum
            target += momentum * batch[name]
            if stat is not None:
                mark_written(stat)
    return out


def _affine_of(out, weight, bias, stat_shape):
    if weight is not None:
        out = out * reshape(weight, stat_shape)
    if bias is not None:
        out = out + reshape(bias, stat_shape)
    return out


def _writable(stat, name):
    """(the Tensor or None, the array to update in place) for a running statistic, checked first."""
    if isinstance(stat, Tensor):
        if is_symbolic(stat) or stat._level:
            raise user_error(TypeError, "batch_norm", f"{name} must be an eager Tensor or a NumPy array to update in "
                             f"place, got a traced or static-graph value", stat)
        target = stat._value
    elif isinstance(stat, np.ndarray):
        stat, target = None, stat
    else:
        raise user_error(TypeError, "batch_norm", f"{name} must be a Tensor or a NumPy array to update in place, got "
                         f"{type(stat).__name__}")
    if type(target) is not np.ndarray or target.dtype.kind != "f" or not target.flags.writeable:
        got = (type(target).__name__ if type(target) is not np.ndarray else
               f"a {'' if target.flags.writeable else 'read-only '}{target.dtype} array")
        raise user_error(TypeError, "batch_norm", f"{name} must be a writable floating-point NumPy array to update "
                         f"in place, got {got}", target)
    return stat, target


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalises x (N, C, ...) over each group of C / num_groups channels (and every other axis but the batch),
    with the biased variance, then scales and shifts per channel, as `torch.nn.functional.group_norm`.

    >>> import dagrad as dg, numpy as np
    >>> group_norm(dg.tensor([[1.0, 3.0, 10.0, 30.0]]), 2).numpy().round(4)
    array([[-1.,  1., -1.,  1.]])
    """
    where = "group_norm"
    xs = _shape(x)
    groups = _int(num_groups, "num_groups", where)
    if len(xs) < 2:
        raise shape_error(where, "(N, C, ...)", xs, x)
    c = xs[1]
    if groups < 1 or c is None or c % groups:
        raise user_error(ValueError, where, f"num_groups must be a positive divisor of the input's {c} channels, got "
                         f"{num_groups}", x)
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and not _fits(_shape(param), (c,)):
            raise user_error(ValueError, where, f"{name} must hold one value per channel, shape ({c},), got "
                             f"{_shape(param)}", x, param)
    _positive_number(eps, "eps", where, x)
    if None in xs[1:]:
        raise user_error(ValueError, where, f"the input's sizes but the batch must be known, got {xs}", x)
    rest = c // groups * int(np.prod(xs[2:], dtype=np.int64))
    grouped = reshape(x, (-1 if xs[0] is None else xs[0], groups, rest))
    normalised = (grouped - mean(grouped, axis=-1, keepdims=True)) / sqrt(var(grouped, axis=-1, keepdims=True) + eps)
    return _affine_of(reshape(normalised, tuple(-1 if n is None else n for n in xs)), weight, bias,
                      _stat_shape(len(xs), c))


# -- the layers
class _NormBase(Module):
    """BatchNorm1d's and BatchNorm2d's shared part: PyTorch's options, parameters and buffers (`weight`, `bias`,
    `running_mean`, `running_var`, `num_batches_tracked`, under its names), and the forward of the input ranks
    the subclass takes."""

    _ranks, _letters = (2, 3), ("", ", L")

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, dtype=None, *,
                 bias=True):
        super().__init__()
        name = type(self).__name__
        self.num_features = _size(num_features, "num_features", name, minimum=1)
        self.eps = _positive_number(eps, "eps", name)
        self.momentum = None if momentum is None else _probability(momentum, "momentum", name)
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        self.weight, self.bias = _affine(self.num_features, dtype, affine)
        if not bias:
            self.bias = None
        n, dt = self.num_features, dtype or default_float()
        for name, value in (("running_mean", np.zeros(n, dt)), ("running_var", np.ones(n, dt)),
                            ("num_batches_tracked", np.array(0, np.int64))):
            self.register_buffer(name, Tensor(value) if track_running_stats else None)

    def reset_running_stats(self):
        """Zero mean, unit variance, no batch counted (as PyTorch's)."""
        if self.track_running_stats:
            for name, value in (("running_mean", 0), ("running_var", 1), ("num_batches_tracked", 0)):
                buffer = getattr(self, name)
                buffer._value[...] = value
                mark_written(buffer)

    def forward(self, x):
        xs = _shape(x)
        if len(xs) not in self._ranks or xs[1] != self.num_features:
            expected = " or ".join(f"(N, {self.num_features}{letters})" for letters in self._letters)
            raise shape_error(repr(self), expected, xs, x)
        if not (self.training and self.track_running_stats):
            # eval with running statistics; or, without them, the batch's (in eval too, as PyTorch)
            use_batch = self.training or not self.track_running_stats
            return batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_batch, 0.0, self.eps)
        count = self.num_batches_tracked
        # momentum=None: a cumulative average of the batches, as PyTorch's
        momentum = 1.0 / (int(count._value) + 1) if self.momentum is None else self.momentum
        # batch_norm checks everything before it updates the running statistics, and the count
        # follows only once it has succeeded (an empty batch counts, as in PyTorch)
        out = batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, True, momentum, self.eps)
        count._value[...] += 1
        mark_written(count)
        return out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_NormBase):
    """Batch normalisation of (N, C) or (N, C, L) inputs, as PyTorch's: batch statistics and a running-average
    update (momentum 0.1, unbiased variance) in training, running statistics in eval.

    >>> import dagrad as dg, numpy as np
    >>> bn = dg.nn.BatchNorm1d(2)
    >>> y = bn(dg.tensor([[1.0, 2.0], [3.0, 6.0]]))
    >>> bn.running_mean, int(bn.num_batches_tracked.item())
    (tensor([0.2, 0.4]), 1)
    """


class BatchNorm2d(_NormBase):
    """Batch normalisation of (N, C, H, W) inputs per channel, as PyTorch's: batch statistics over (N, H, W) and a
    running-average update (momentum 0.1, unbiased variance) in training, running statistics in eval.

    >>> import dagrad as dg
    >>> dg.nn.BatchNorm2d(16)
    BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    """

    _ranks, _letters = (4,), (", H, W",)


class GroupNorm(Module):
    """Group normalisation of (N, C, ...) inputs, as PyTorch's: statistics over each group of C / num_groups
    channels of each example (the same in training and eval); weight ones and bias zeros per channel.

    >>> import dagrad as dg, numpy as np
    >>> gn = dg.nn.GroupNorm(2, 4)
    >>> gn, gn(dg.tensor(np.ones((3, 4, 5)))).shape
    (GroupNorm(2, 4, eps=1e-05, affine=True, bias=True), (3, 4, 5))
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, dtype=None, *, bias=True):
        super().__init__()
        self.num_groups = _size(num_groups, "num_groups", "GroupNorm", minimum=1)
        self.num_channels = _size(num_channels, "num_channels", "GroupNorm", minimum=1)
        if self.num_channels % self.num_groups:
            raise user_error(ValueError, "GroupNorm", f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.eps = _positive_number(eps, "eps", "GroupNorm")
        self.affine = bool(affine)
        self.weight, self.bias = _affine(self.num_channels, dtype, affine)
        if not bias:
            self.bias = None

    def forward(self, x):
        xs = _shape(x)
        if len(xs) < 2 or xs[1] != self.num_channels:
            raise shape_error(repr(self), f"(N, {self.num_channels}, ...)", xs, x)
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
