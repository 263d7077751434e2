"""`dg.nn.functional`: layers and losses as functions, in dagrad's own ops.

Everything here composes dagrad operations (plus `Im2Col` and its adjoint `Col2Im`, `dg.Function`s that
differentiate each other), so it works eagerly and under every transform at any order; `linear`, the
activations and the losses also in static graphs and `dg.compile`.

>>> import dagrad as dg, numpy as np
>>> import dagrad.nn.functional as F
>>> logits = dg.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, np.array([0]))
>>> round(loss.item(), 4)
0.2413
"""

from __future__ import annotations

import functools
import math
import operator
import warnings

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._core import dask_ops
from .._core.backends import compute_together, is_dask, to_numpy
from .._core.dtypes import first
from .._core.errors import caller_line, user_error
from .._core.ir import number_needed
from .._core.op import Op, apply
from .._core.shapes import dtype_of, normalize_axis_index, shape_of
from .._core.tensor import Batched, Tensor, is_symbolic, mark_written
from ..function import Function
from ..ops.elementwise import (
    abs,
    astype,
    equal,
    erf,
    exp,
    expm1,
    greater,
    greater_equal,
    less,
    log,
    not_equal,
    relu,
    sigmoid,
    sqrt,
    tanh,
    where,
)
from ..ops.elementwise import softplus as _softplus_op
from ..ops.elementwise import where as _where  # some functions here name a parameter `where`
from ..ops.linalg import matmul
from ..ops.nn import CLASS_LABELS
from ..ops.nn import binary_cross_entropy as _bce_op
from ..ops.nn import linear as _linear_op
from ..ops.nn import log_softmax as _log_softmax_op
from ..ops.nn import nll_indices as _nll_op
from ..ops.nn import softmax as _softmax_op
from ..ops.reduce import argmax, mean, sum, var
from ..ops.shape import expand_dims, getitem, reshape, transpose
from .init import _generator

__all__ = [
    "linear", "conv2d", "max_pool2d", "dropout", "layer_norm", "batch_norm", "embedding", "relu", "tanh",
    "sigmoid", "gelu", "silu", "leaky_relu", "elu", "softplus", "softmax", "log_softmax", "flatten",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits",
]


# -- helpers
def _shape(x):
    return tuple(shape_of(x))


def _values(x):  # x must be concrete (not symbolic)
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _raw(x):  # x must be concrete (not symbolic): its array, of its own type (a Dask array not computed)
    return x._raw() if isinstance(x, Tensor) else x


def shape_error(where, expected, actual, *operands):
    """A ValueError naming the layer or function, the expected and actual input shape, at the user's line."""
    return user_error(ValueError, where, f"expected input of shape {expected}, got {tuple(actual)}", *operands)


def _fits(shape, expected):
    """Whether `shape` is `expected`, where a size a static graph does not know yet (None) fits any."""
    return shape == expected or (len(shape) == len(expected)
                                 and all(a == b or a is None or b is None for a, b in zip(shape, expected)))


def _int(v, name, where):
    """v as an int, refusing floats (2.5 would be truncated) and bools, as PyTorch's size arguments."""
    if isinstance(v, (bool, np.bool_)):
        raise user_error(TypeError, where, f"{name} must be an integer, got {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise user_error(TypeError, where, f"{name} must be an integer, got {v!r}") from None


def _pair(v, name, where="conv2d"):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise user_error(ValueError, where, f"{name} must be an int or a pair, got {v!r}")
        return _int(v[0], name, where), _int(v[1], name, where)
    v = _int(v, name, where)
    return v, v


def _is_real(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _number(value, name, where, *operands):
    """Refuses a value that has none yet (a traced Python float: static_argnames makes it a constant)."""
    if isinstance(value, Tensor):
        raise number_needed(value, name, where, *operands)


def _positive_number(value, name, where, *operands):
    _number(value, name, where, *operands)
    if not _is_real(value) or not value > 0:
        raise user_error(ValueError, where, f"{name} must be a positive number, got {value!r}", *operands)
    return value


def _non_negative(value, name, where, *operands):
    _number(value, name, where, *operands)
    if not _is_real(value) or not value >= 0:
        raise user_error(ValueError, where, f"{name} must be a non-negative number, got {value!r}", *operands)
    return value


def _probability(p, name, where, *operands):
    """p, a real number in [0, 1], or a ValueError naming `where` (a string or None is refused too)."""
    _number(p, name, where, *operands)
    if not _is_real(p) or not 0 <= p <= 1:
        raise user_error(ValueError, where, f"{name} must be in [0, 1], got {p!r}", *operands)
    return p


_REDUCTIONS = ("mean", "sum", "none")


def _real_operands(where, input, target=None, weight=None, pos_weight=None):
    """Refuses complex operands of a loss defined on real numbers only (as PyTorch does): a complex input
    would give a complex loss, whose backward() would have to pick its real part silently."""
    for name, value in (("input", input), ("target", target), ("weight", weight), ("pos_weight", pos_weight)):
        dtype = getattr(value, "dtype", None)
        if dtype is None and isinstance(value, (complex, list, tuple)):  # numbers and lists: NumPy's reading
            dtype = np.asarray(value).dtype
        if dtype is not None and dtype.kind == "c":
            raise user_error(TypeError, where, f"is defined for real numbers only, got a complex {name} (dtype "
                             f"{dtype}); take its real part, imaginary part or abs() first", value)


def _check_reduction(reduction, where):
    if reduction not in _REDUCTIONS:
        raise user_error(ValueError, where, f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _reduce(loss, reduction, total=None):
    """loss reduced as a checked `reduction` says; with `total`, the mean is sum(loss) / total."""
    if reduction == "mean":
        return mean(loss) if total is None else sum(loss) / total
    return sum(loss) if reduction == "sum" else loss


def flatten(x, start_dim=1, end_dim=-1):
    """Merges dimensions `start_dim..end_dim` into one, as `torch.flatten` (a 0-d input counts as 1-d); a
    dimension out of range is an `np.exceptions.AxisError` (an IndexError, as PyTorch's, and a ValueError).

    >>> import dagrad as dg, numpy as np
    >>> flatten(dg.tensor(np.zeros((2, 3, 4)))).shape
    (2, 12)
    """
    shape = _shape(x)
    n = max(len(shape), 1)
    s = normalize_axis_index(start_dim, n, "flatten", x, name="start_dim")
    e = normalize_axis_index(end_dim, n, "flatten", x, name="end_dim")
    if s > e:
        raise user_error(ValueError, "flatten", f"start_dim {start_dim} comes after end_dim {end_dim}", x)
    if not shape:
        return reshape(x, (1,))
    middle = shape[s:e + 1]
    size = None if None in middle else int(np.prod(middle, dtype=np.int64))
    new = list(shape[:s]) + [size] + list(shape[e + 1:])
    if new.count(None) > 1:
        raise user_error(ValueError, "flatten", f"cannot flatten shape {shape} with several unknown sizes", x)
    return reshape(x, tuple(-1 if k is None else k for k in new))


def linear(x, weight, bias=None):
    """`x @ weight.T + bias`, as `torch.nn.functional.linear`.

    >>> import dagrad as dg, numpy as np
    >>> linear(dg.tensor([[1.0, 2.0]]), dg.tensor([[1.0, 1.0], [0.0, 1.0]]), dg.tensor([0.5, 0.0]))
    tensor([[3.5, 2. ]])
    """
    xs, ws = _shape(x), _shape(weight)
    if len(ws) != 2:
        raise user_error(ValueError, "linear", f"weight must have shape (out_features, in_features), got {ws}",
                         x, weight)
    if not xs or xs[-1] != ws[-1]:
        raise shape_error("linear", f"(..., {ws[-1]})", xs, x, weight)
    if bias is not None and _shape(bias) != () and not _fits(_shape(bias), (ws[0],)):
        raise user_error(ValueError, "linear", f"bias must have shape ({ws[0]},), got {_shape(bias)}", x, weight, bias)
    return _linear_op(x, weight, bias)  # one primitive node (see ops/nn.py)


# -- windows: im2col and its adjoint, differentiable at every order
@functools.cache
def _window_ops(kernel, stride, dilation, pads, fill):
    """Im2Col for one kernel (kh, kw), stride, dilation and padding (top, bottom, left, right): (N, C, H, W),
    padded with `fill`, -> (N, OH, OW, C, kh, kw). Linear in x but for the constant padding; adjoint Col2Im."""
    (kh, kw), (sh, sw), (dh, dw), (top, bottom, left, right) = kernel, stride, dilation, pads
    extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)

    class Im2Col(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.hw = x.shape[2:]
            if any(pads):
                x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
            windows = sliding_window_view(x, extent, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
            return np.ascontiguousarray(windows.transpose(0, 2, 3, 1, 4, 5))

        @staticmethod
        def backward(ctx, g):
            return _col2im(kernel, stride, dilation, pads, *ctx.hw).apply(g)

        @staticmethod
        def jvp(ctx, t):
            return _window_ops(kernel, stride, dilation, pads, 0.0).apply(t)  # the padding is a constant: zero tangent

    return Im2Col


@functools.cache
def _col2im(kernel, stride, dilation, pads, h, w):
    (kh, kw), (sh, sw), (dh, dw), (top, bottom, left, right) = kernel, stride, dilation, pads

    class Col2Im(Function):
        @staticmethod
        def forward(ctx, g):
            n, oh, ow, c = g.shape[:4]
            out = np.zeros((n, c, h + top + bottom, w + left + right), g.dtype)
            gt = g.transpose(0, 3, 1, 2, 4, 5)  # (N, C, OH, OW, kh, kw)
            for i in range(kh):
                for j in range(kw):
                    out[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += \
                        gt[:, :, :, :, i, j]
            return out[:, :, top:top + h, left:left + w]

        @staticmethod
        def backward(ctx, g):
            return _window_ops(kernel, stride, dilation, pads, 0.0).apply(g)

        @staticmethod
        def jvp(ctx, t):
            return Col2Im.apply(t)

    return Col2Im


def _windows(x, kernel, stride, dilation, pads, fill, where):
    n, c, h, w = _shape(x)
    top, bottom, left, right = pads
    extent = (dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1)
    if h is None or w is None or h + top + bottom < extent[0] or w + left + right < extent[1]:
        raise user_error(ValueError, where, f"the input's spatial size {(h, w)} with padding "
                         f"{(top + bottom, left + right)} is smaller than the kernel's extent {extent}", x)
    return _window_ops(tuple(kernel), tuple(stride), tuple(dilation), tuple(pads), fill).apply(x)


def _conv_padding(padding, kernel, stride, dilation, where="conv2d"):
    """(top, bottom, left, right) from an int, a pair, 'valid' or 'same' (PyTorch's meanings: 'same' pads by
    dilation * (k - 1) in all, the odd one at the bottom/right, and needs stride 1)."""
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0, 0, 0
        if padding != "same":
            raise user_error(ValueError, where, f"padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
        if stride != (1, 1):
            raise user_error(ValueError, where, f"padding='same' needs stride 1 (as in PyTorch), got stride {stride}")
        th, tw = (d * (k - 1) for k, d in zip(kernel, dilation))
        return th // 2, th - th // 2, tw // 2, tw - tw // 2
    ph, pw = _pair(padding, "padding", where)
    if min(ph, pw) < 0:
        raise user_error(ValueError, where, f"padding {(ph, pw)} must not be negative")
    return ph, ph, pw, pw


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation, as `torch.nn.functional.conv2d`) of x (N, C, H, W) with weight
    (O, C / groups, kh, kw): im2col by stride tricks, then one matrix product (batched per group when groups > 1).

    >>> import dagrad as dg, numpy as np
    >>> x = dg.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    >>> conv2d(x, dg.tensor(np.ones((1, 1, 2, 2))), stride=2)
    tensor([[[[10., 18.],
              [42., 50.]]]])
    >>> conv2d(x, dg.tensor(np.ones((1, 1, 2, 2))), dilation=2).shape  # each tap 2 pixels apart
    (1, 1, 2, 2)
    """
    xs, ws = _shape(x), _shape(weight)
    if len(ws) != 4 or None in ws or min(ws[0], ws[2], ws[3]) < 1:
        raise user_error(ValueError, "conv2d", f"weight must have shape (out_channels, in_channels / groups, kh, kw) "
                         f"with positive out_channels, kh and kw, got {ws}", x, weight)
    o, cg, kh, kw = ws
    groups = _int(groups, "groups", "conv2d")
    if groups < 1 or o % groups:
        raise user_error(ValueError, "conv2d", f"groups must be a positive divisor of the {o} output channels, got "
                         f"{groups}", x, weight)
    c = cg * groups
    if len(xs) != 4 or xs[1] != c:
        raise shape_error("conv2d", f"(N, {c}, H, W)", xs, x, weight)
    if bias is not None and not _fits(_shape(bias), (o,)):
        raise user_error(ValueError, "conv2d", f"bias must have shape ({o},), got {_shape(bias)}", x, weight, bias)
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if min(stride + dilation) < 1:
        raise user_error(ValueError, "conv2d", f"stride {stride} and dilation {dilation} must be positive", x)
    pads = _conv_padding(padding, (kh, kw), stride, dilation)
    cols = _windows(x, (kh, kw), stride, dilation, pads, 0.0, "conv2d")  # (N, OH, OW, C, kh, kw), zero padding
    oh, ow = _shape(cols)[1:3]
    n = xs[0]
    k = cg * kh * kw
    if groups == 1:
        out = matmul(reshape(cols, (-1, k)), transpose(reshape(weight, (o, k))))
    else:  # (G, rows, k) @ (G, k, O / G): each group's channels with its own filters
        cols = transpose(reshape(cols, (-1, groups, k)), (1, 0, 2))
        out = matmul(cols, transpose(reshape(weight, (groups, o // groups, k)), (0, 2, 1)))
        out = reshape(transpose(out, (1, 0, 2)), (-1, o))
    out = transpose(reshape(out, (-1 if n is None else n, oh, ow, o)), (0, 3, 1, 2))
    if bias is not None:
        out = out + reshape(bias, (o, 1, 1))
    return out


def _ceil_mode_pads(size, kernel, stride, dilation, pad):
    """(before, after) padding of one axis with ceil_mode: `pad`, plus enough after for one more window when one
    would start inside the input or the left padding (PyTorch's rule)."""
    extent = dilation * (kernel - 1) + 1
    out = -(-(size + 2 * pad - extent) // stride) + 1
    if (out - 1) * stride >= size + pad:
        out -= 1
    return pad, max(pad, (out - 1) * stride + extent - size - pad)


def _pool_options(kernel_size, stride, padding, dilation, where):
    """The pairs (kernel, stride, padding, dilation) of a max pooling, checked as PyTorch checks them."""
    kh, kw = _pair(kernel_size, "kernel_size", where)
    sh, sw = _pair(kernel_size if stride is None else stride, "stride", where)
    ph, pw = _pair(padding, "padding", where)
    dh, dw = _pair(dilation, "dilation", where)
    if min(kh, kw, sh, sw, dh, dw) < 1:
        raise user_error(ValueError, where, f"kernel_size {(kh, kw)}, stride {(sh, sw)} and dilation {(dh, dw)} must "
                         f"be positive")
    if min(ph, pw) < 0 or 2 * ph > kh or 2 * pw > kw:
        raise user_error(ValueError, where, f"padding {(ph, pw)} must be non-negative and at most half the kernel "
                         f"{(kh, kw)}")
    return (kh, kw), (sh, sw), (ph, pw), (dh, dw)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over windows of x (N, C, H, W), as `torch.nn.functional.max_pool2d`: the gradient goes to the first
    maximum of each window (PyTorch's choice), padding is -inf; `ceil_mode` keeps a last partial window.

    >>> import dagrad as dg, numpy as np
    >>> max_pool2d(dg.tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    >>> max_pool2d(dg.tensor(np.arange(25.0).reshape(1, 1, 5, 5)), 2, ceil_mode=True).shape
    (1, 1, 3, 3)
    """
    xs = _shape(x)
    if len(xs) != 4:
        raise shape_error("max_pool2d", "(N, C, H, W)", xs, x)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_options(kernel_size, stride, padding, dilation, "max_pool2d")
    pads = (ph, ph, pw, pw)
    if ceil_mode and None not in xs[2:]:
        pads = _ceil_mode_pads(xs[2], kh, sh, dh, ph) + _ceil_mode_pads(xs[3], kw, sw, dw, pw)
    windows = _windows(x, (kh, kw), (sh, sw), (dh, dw), pads, -np.inf, "max_pool2d")  # (N, OH, OW, C, kh, kw)
    k = kh * kw
    windows = reshape(windows, tuple(-1 if n is None else n for n in _shape(windows)[:3]) + (xs[1], k))
    first = equal(expand_dims(argmax(windows, axis=-1), -1), np.arange(k))  # one-hot of the first maximum
    out = sum(where(first, windows, 0.0), axis=-1)  # (N, OH, OW, C); where, not *: padding is -inf
    return transpose(out, (0, 3, 1, 2))


def dropout(x, p=0.5, training=True, generator=None):
    """Zeroes each entry with probability p and scales the rest by 1/(1-p) (identity when not training).
    `generator` is an `np.random.Generator`; by default `dg.nn.init`'s seedable one.

    >>> import dagrad as dg, numpy as np
    >>> dropout(dg.tensor(np.ones(4)), 0.5, generator=np.random.default_rng(0))
    tensor([2., 0., 0., 0.])
    """
    _probability(p, "p", "dropout", x)
    if not training or p == 0:
        return x
    gen = _generator(generator)
    if is_symbolic(x):  # a static graph (or dg.compile): a node that draws a new mask at each run
        return x * apply(_KEEP_MASK, (x,), {"p": float(p), "generator": gen})
    return x * _keep_mask(x, p, gen)


def _keep_mask(like, p, generator):
    """1/(1-p) where an entry is kept and 0 where dropped, in like's shape and dtype, drawn anew each call."""
    shape, dtype = shape_of(like), dtype_of(like)
    if p == 1:
        return np.zeros(shape, dtype)
    return ((generator.random(shape) >= p) / (1.0 - p)).astype(dtype)


# Not in the op registry (like a static graph's assign): only dropout builds it, on graph nodes
_KEEP_MASK = Op("dropout_mask", _keep_mask, None, None, lambda like, p, generator: tuple(like), False, random=True,
                dtype=first)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the trailing `normalized_shape` dims (biased variance), then scales and shifts.

    >>> import dagrad as dg
    >>> layer_norm(dg.tensor([[1.0, 2.0, 3.0]]), (3,))
    tensor([[-1.22473569,  0.        ,  1.22473569]])
    """
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    xs = _shape(x)
    k = len(normalized_shape)
    if k == 0 or len(xs) < k or xs[len(xs) - k:] != normalized_shape:
        raise shape_error("layer_norm", "(*, " + ", ".join(map(str, normalized_shape)) + ")", xs, x)
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and not _fits(_shape(param), normalized_shape):
            raise user_error(ValueError, "layer_norm", f"{name} must have the normalized shape {normalized_shape}, "
                             f"got {_shape(param)}", x, param)
    axes = tuple(range(len(xs) - k, len(xs)))
    mu = mean(x, axis=axes, keepdims=True)
    out = (x - mu) / sqrt(var(x, axis=axes, keepdims=True) + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalisation of x (N, C) or (N, C, L), as `torch.nn.functional.batch_norm`: in training with the
    batch's mean and biased variance, updating the running stats given in place (`running = (1 - momentum) *
    running + momentum * batch`, with the unbiased variance); otherwise with the running stats.

    All or nothing: every argument is checked before the running stats are touched, and they are updated only
    once the output is computed. An empty batch (N = 0) gives an empty output and leaves them unchanged.

    >>> import dagrad as dg, numpy as np
    >>> rm, rv = np.zeros(2), np.ones(2)
    >>> y = batch_norm(dg.tensor([[1.0, 2.0], [3.0, 6.0]]), rm, rv, training=True)
    >>> rm
    array([0.2, 0.4])
    """
    xs = _shape(x)
    if len(xs) not in (2, 3):
        raise shape_error("batch_norm", "(N, C) or (N, C, L)", xs, x)
    if dtype_of(x).kind != "f":
        raise user_error(TypeError, "batch_norm", f"the input must be floating point, got dtype {dtype_of(x)}", x)
    c = xs[1]
    for name, stat in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                       ("bias", bias)):
        if stat is not None and not _fits(_shape(stat), (c,)):
            raise user_error(ValueError, "batch_norm", f"{name} must hold one value per channel, shape ({c},), got "
                             f"{_shape(stat)}", x, stat)
    _positive_number(eps, "eps", "batch_norm", x)
    axes, stat_shape = ((0,), (1, c)) if len(xs) == 2 else ((0, 2), (1, c, 1))
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
            mu = v = None
        else:
            mu, v = mean(x, axis=axes, keepdims=True), var(x, axis=axes, keepdims=True)
    else:
        if running_mean is None or running_var is None:
            raise user_error(ValueError, "batch_norm", "evaluation mode needs running_mean and running_var", x)
        mu, v = reshape(running_mean, stat_shape), reshape(running_var, stat_shape)
    out = x if mu is None else (x - mu) / sqrt(v + eps)
    if weight is not None:
        out = out * reshape(weight, stat_shape)
    if bias is not None:
        out = out + reshape(bias, stat_shape)
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


def embedding(indices, weight):
    """Rows of `weight` (num_embeddings, dim) picked by integer `indices` of any shape.

    >>> import dagrad as dg, numpy as np
    >>> embedding(np.array([2, 0]), dg.tensor(np.arange(6.0).reshape(3, 2)))
    tensor([[4., 5.],
            [0., 1.]])
    """
    if is_symbolic(indices):
        raise user_error(NotImplementedError, "embedding", "indices must be concrete (an array or eager tensor), not "
                         "a static graph node", indices)
    idx = _values(indices)
    n = _shape(weight)[0]
    if idx.dtype.kind not in "iu":
        raise user_error(TypeError, "embedding", f"indices must be integers, got dtype {idx.dtype}", idx)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise user_error(IndexError, "embedding", f"indices must be in [0, {n - 1}], got values from {idx.min()} to "
                         f"{idx.max()}", idx, weight)
    return getitem(weight, idx)


# -- activations (relu, tanh and sigmoid are dagrad's ops themselves); each is PyTorch's formula in dagrad ops,
# so it differentiates at any order and builds static graphs. `inplace` is accepted for PyTorch's signatures; the
# result is always a new tensor.
def _real(value, name, where):
    _number(value, name, where)
    if not _is_real(value):
        raise user_error(TypeError, where, f"{name} must be a real number, got {value!r}")
    return value


_SQRT_HALF, _SQRT_TWO_OVER_PI = math.sqrt(0.5), math.sqrt(2 / math.pi)  # Python floats: float32 stays float32


def gelu(input, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF, as `torch.nn.functional.gelu`: through `erf`, or with
    `approximate='tanh'` PyTorch's 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).

    >>> import dagrad as dg
    >>> gelu(dg.tensor([-1.0, 0.0, 1.0]))
    tensor([-0.15865525,  0.        ,  0.84134475])
    """
    if approximate == "none":
        return input * 0.5 * (1 + erf(input * _SQRT_HALF))
    if approximate == "tanh":
        return 0.5 * input * (1 + tanh(_SQRT_TWO_OVER_PI * (input + 0.044715 * input * input * input)))
    raise user_error(ValueError, "gelu", f"approximate must be 'none' or 'tanh', got {approximate!r}", input)


def silu(input, inplace=False):
    """x * sigmoid(x) (swish), as `torch.nn.functional.silu`.

    >>> import dagrad as dg
    >>> silu(dg.tensor([0.0, 1.0]))
    tensor([0.        , 0.73105858])
    """
    return input * sigmoid(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x (the slope's gradient at 0, as PyTorch).

    >>> import dagrad as dg
    >>> leaky_relu(dg.tensor([-2.0, 3.0]), 0.1)
    tensor([-0.2,  3. ])
    """
    _real(negative_slope, "negative_slope", "leaky_relu")
    return where(greater(input, 0), input, input * negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1), as `torch.nn.functional.elu`.

    >>> import dagrad as dg
    >>> elu(dg.tensor([-1.0, 2.0])).numpy().round(4)
    array([-0.6321,  2.    ])
    """
    _real(alpha, "alpha", "elu")
    positive = greater(input, 0)
    # expm1 of the non-positive side only: exp of a large x would overflow, and its zero gradient times inf is NaN
    return where(positive, input, alpha * expm1(where(positive, 0, input)))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold, as `torch.nn.functional.softplus`.

    >>> import dagrad as dg
    >>> softplus(dg.tensor([0.0, 30.0])).numpy().round(4)
    array([ 0.6931, 30.    ])
    """
    _real(beta, "beta", "softplus")
    _real(threshold, "threshold", "softplus")
    scaled = input * beta
    return where(greater(scaled, threshold), input, _softplus_op(scaled) / beta)


def _softmax_dim(input, dim, name, stacklevel):
    """dim, or for dim=None PyTorch's deprecated implicit choice (0 for 0-, 1- and 3-d inputs, else 1), warned."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  f"an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if len(_shape(input)) in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`, as `torch.nn.functional.softmax` (cast to `dtype` first when given).

    >>> import dagrad as dg
    >>> softmax(dg.tensor([[0.0, 0.0], [0.0, 1000.0]]), dim=1)
    tensor([[0.5, 0.5],
            [0. , 1. ]])
    """
    dim = _softmax_dim(input, dim, "softmax", _stacklevel)
    return _softmax_op(input if dtype is None else astype(input, dtype), axis=dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along `dim`, as `torch.nn.functional.log_softmax` (cast to `dtype` first when given).

    >>> import dagrad as dg
    >>> log_softmax(dg.tensor([0.0, 0.0]), dim=0).numpy().round(4)
    array([-0.6931, -0.6931])
    """
    dim = _softmax_dim(input, dim, "log_softmax", _stacklevel)
    return _log_softmax_op(input if dtype is None else astype(input, dtype), axis=dim)


# -- losses
def _class_targets(target, n_classes, where, ignore_index=None):
    """(the integer targets as an array, each a class in range or ignore_index; whether any is ignore_index), or
    (None, None) for symbolic targets (a node checks them when they arrive, see `_class_targets_of`)."""
    if isinstance(target, Batched):  # labels mapped by vmap: every example's checked at once, and kept mapped
        checked, ignored = _class_targets(target._value, n_classes, where, ignore_index)
        return (None if checked is None else target), ignored
    if is_symbolic(target):
        if dtype_of(target).kind not in "iu":
            raise user_error(TypeError, where, f"class-index targets must be integers, got dtype {dtype_of(target)}",
                             target)
        return None, None
    raw = target._value if type(target) is Tensor else target
    if is_dask(raw):  # the check needs the values: made part of the Dask graph, it runs as the labels are computed
        if raw.dtype.kind not in "iu":
            raise user_error(TypeError, where, f"class-index targets must be integers, got dtype {raw.dtype}", raw)
        # whether any label is ignore_index is not known either: the general form handles both cases
        return dask_ops.checked_labels(raw, n_classes, ignore_index, where, caller_line()), True
    t = _values(target)
    if t.dtype.kind not in "iu":
        raise user_error(TypeError, where, f"class-index targets must be integers, got dtype {t.dtype}", t)
    # one reduction instead of min and max: read as unsigned, a negative label is larger than any class
    if t.size and t.view(t.dtype.str.replace("i", "u")).max() >= n_classes:
        bad = t[((t < 0) | (t >= n_classes)) & (t != ignore_index)]
        if bad.size:
            raise user_error(IndexError, where, f"target labels must be class indices in [0, {n_classes - 1}] (the "
                             f"input has {n_classes} classes), got {bad.ravel()[0]}", t)
        return t, True
    return t, ignore_index is not None and 0 <= ignore_index < n_classes and bool((t == ignore_index).any())


def _rows_of_indices(input, target, reduction, where, ignore_index=-100):
    """The checked integer targets when `input` is (N, C) with N class indices none of which is ignore_index,
    and a known reduction (the case one `nll_loss` node computes), else None."""
    xs = _shape(input)
    if not (len(xs) == 2 and xs[1] is not None and reduction in _REDUCTIONS
            and dtype_of(target).kind in "iu" and len(_shape(target)) == 1):
        return None
    if not _fits(_shape(target), (xs[0],)):
        raise user_error(ValueError, where, f"target of shape {tuple(_shape(target))} does not match the input's "
                         f"batch shape ({xs[0]},) (input {xs})", input, target)
    checked, ignored = _class_targets(target, xs[1], where, ignore_index)
    if checked is None or ignored:
        return None  # ignored labels (or symbolic ones, which may be) take the general form
    return checked


def _class_targets_of(x, target, weight, ignore_index, where):
    """Checks class-index targets for input x (N, C, d...) or (C,), its class weight and the targets' shape,
    before any node is built. Returns the targets: a checked array, or symbolic ones through a checking node."""
    xs = _shape(x)
    if not xs:
        raise user_error(ValueError, where, "input must have a class axis, got a 0-d input", x)
    c = xs[0] if len(xs) == 1 else xs[1]
    _check_weight(weight, c, where)
    expected, tshape = (xs[:1] + xs[2:] if len(xs) > 1 else ()), _shape(target)
    if not _fits(tshape, expected):
        raise user_error(ValueError, where, f"target of shape {tshape} does not match the input's batch shape "
                         f"{expected} (input {xs})", x, target)
    checked, _ = _class_targets(target, c, where, ignore_index)
    if checked is not None:
        return checked
    if c is None:
        raise user_error(ValueError, where, "the number of classes (the input's class axis) must be known when "
                         "the graph is built", target)
    # symbolic labels go through a node that raises IndexError when the graph runs (Session.run or compiled
    # code) for one outside [0, C-1] and not ignore_index: the one-hot would silently drop that row
    return apply(CLASS_LABELS, (target,), {"classes": int(c), "ignore_index": int(ignore_index)})


def _check_weight(weight, c, where):
    if isinstance(weight, str):
        raise user_error(TypeError, where, f"the third argument is the class weight (as in PyTorch), got {weight!r}; "
                         f"pass the reduction by keyword, reduction={weight!r}")
    if weight is not None and tuple(_shape(weight)) != (c,):
        raise user_error(ValueError, where, f"weight must hold one value per class, shape ({c},), got "
                         f"{tuple(_shape(weight))}", weight)


def _weighted_nll(logp, target, weight, ignore_index, reduction, label_smoothing):
    """PyTorch's nll_loss with class weights and ignore_index, plus cross_entropy's label smoothing, for
    log-probabilities (N, C, ...) or (C,) and targets checked by `_class_targets_of`, in dagrad ops. The mean
    divides by the summed weights of the targets that count, as PyTorch does."""
    xs = _shape(logp)
    c = xs[-1] if len(xs) == 1 else xs[1]
    if len(xs) > 2:  # classes last: (N, C, d1, ...) -> (N, d1, ..., C)
        logp = transpose(logp, (0,) + tuple(range(2, len(xs))) + (1,))
    counted = not_equal(target, ignore_index)
    one_hot = equal(expand_dims(_where(counted, target, 0), -1), np.arange(c))
    zero = np.zeros((), dtype_of(logp))
    if weight is None:
        target_weight = astype(counted, dtype_of(logp))
    else:
        target_weight = _where(counted, sum(_where(one_hot, weight, zero), axis=-1), zero)
    total = sum(target_weight) if reduction == "mean" else None
    loss = _reduce(_where(counted, -sum(_where(one_hot, logp, zero), axis=-1) * target_weight, zero), reduction, total)
    if not label_smoothing:
        return loss
    spread = _where(counted, -sum(logp if weight is None else logp * weight, axis=-1), zero)
    return (1 - label_smoothing) * loss + (label_smoothing / c) * _reduce(spread, reduction, total)


def _check_ignore_index(ignore_index, where):
    return ignore_index if type(ignore_index) is int else _int(ignore_index, "ignore_index", where)


def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of integer `target` under log-probabilities `input` (N, C) (or (C,), or (N, C, d...)),
    as `torch.nn.functional.nll_loss`: `weight` (C,) scales each class, targets equal to `ignore_index` count for
    nothing, and the mean divides by the summed weights of the rest. A label outside [0, C-1] (other than
    ignore_index) raises IndexError: at once for an array, when the graph runs for a static graph's or dg.compile's.

    >>> import dagrad as dg, numpy as np
    >>> logp = dg.tensor(np.log([[0.5, 0.5], [0.25, 0.75]]))
    >>> nll_loss(logp, np.array([0, 1])).item()  # doctest: +ELLIPSIS
    0.490...
    """
    _real_operands("nll_loss", input=input, weight=weight)
    _check_reduction(reduction, "nll_loss")
    ignore_index = _check_ignore_index(ignore_index, "nll_loss")
    if weight is None:
        indices = _rows_of_indices(input, target, reduction, "nll_loss", ignore_index)
        if indices is not None:
            return _nll_op(input, indices, reduction)  # one primitive node (see ops/nn.py)
    target = _class_targets_of(input, target, weight, ignore_index, "nll_loss")
    return _weighted_nll(input, target, weight, ignore_index, reduction, 0.0)


def cross_entropy(input, target, weight=None, *, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits `input` (N, C) (or (C,), or (N, C, d...)) against class indices `target`, or
    class probabilities of the input's shape, as `torch.nn.functional.cross_entropy`: `weight` (C,) scales each
    class, class indices equal to `ignore_index` count for nothing, and `label_smoothing` mixes the target with the
    uniform distribution. Computed through `log_softmax`, so large logits stay finite. Labels outside [0, C-1]
    (other than ignore_index) raise IndexError: at once for an array, when the graph runs for a static graph's or
    dg.compile's.

    >>> import dagrad as dg, numpy as np
    >>> x = dg.tensor([[1000.0, 0.0], [0.0, 0.0]], requires_grad=True)
    >>> loss = cross_entropy(x, np.array([0, 1]))
    >>> loss.backward()
    >>> round(loss.item(), 4), x.grad.numpy().round(3).tolist()
    (0.3466, [[0.0, 0.0], [0.25, -0.25]])
    """
    _real_operands("cross_entropy", input=input, target=target, weight=weight)
    _check_reduction(reduction, "cross_entropy")
    ignore_index = _check_ignore_index(ignore_index, "cross_entropy")
    _probability(label_smoothing, "label_smoothing", "cross_entropy")
    xs = _shape(input)
    axis = -1 if len(xs) == 1 else 1
    if weight is None and not label_smoothing:
        indices = _rows_of_indices(input, target, reduction, "cross_entropy", ignore_index)
        if indices is not None:
            return _nll_op(_log_softmax_op(input, axis=1), indices, reduction)  # two primitive nodes
    if not xs:
        raise user_error(ValueError, "cross_entropy", "input must have a class axis, got a 0-d input", input)
    if dtype_of(target).kind != "f":
        target = _class_targets_of(input, target, weight, ignore_index, "cross_entropy")
        logp = _log_softmax_op(input, axis=axis)
        return _weighted_nll(logp, target, weight, ignore_index, reduction, label_smoothing)
    # class probabilities
    if ignore_index != -100:
        raise user_error(ValueError, "cross_entropy", "ignore_index applies to class-index targets, not to "
                         "probabilities (as in PyTorch)", input, target)
    if _shape(target) != xs:
        raise user_error(ValueError, "cross_entropy", f"probability targets must have the input's shape {xs}, got "
                         f"{_shape(target)}", input, target)
    c = xs[axis]
    _check_weight(weight, c, "cross_entropy")
    logp = _log_softmax_op(input, axis=axis)
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / c
    if weight is not None:
        logp = logp * reshape(weight, (c,) + (1,) * (len(xs) - 2)) if len(xs) > 2 else logp * weight
    return _reduce(-sum(logp * target, axis=axis), reduction)


def _same_shapes(input, target, where):
    xs, ts = _shape(input), _shape(target)
    if not _fits(xs, ts):
        raise user_error(ValueError, where, f"input shape {xs} and target shape {ts} differ (as in PyTorch, the "
                         f"target must have the input's shape)", input, target)


def mse_loss(input, target, reduction="mean"):
    """Mean (or summed) squared error.

    >>> import dagrad as dg
    >>> mse_loss(dg.tensor([1.0, 2.0]), dg.tensor([0.0, 0.0]))
    tensor(2.5)
    """
    _real_operands("mse_loss", input=input, target=target)
    _check_reduction(reduction, "mse_loss")
    _same_shapes(input, target, "mse_loss")
    d = input - target
    return _reduce(d * d, reduction)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities `input` in [0, 1], as PyTorch: each log is clamped at -100,
    the gradient is PyTorch's, finite at p = 0 and 1 (one node, see `dagrad.ops.nn`); `weight` scales each element.

    >>> import dagrad as dg
    >>> round(binary_cross_entropy(dg.tensor([0.9, 0.2]), dg.tensor([1.0, 0.0])).item(), 4)
    0.1643
    >>> p = dg.tensor(40.0, requires_grad=True)
    >>> binary_cross_entropy(dg.sigmoid(p), dg.tensor(1.0)).backward()
    >>> p.grad  # p(1 - p) rounds to 0 here: its clamp keeps the gradient finite (PyTorch's 0 too)
    tensor(0.)
    """
    _real_operands("binary_cross_entropy", input=input, target=target, weight=weight)
    _check_reduction(reduction, "binary_cross_entropy")
    _same_shapes(input, target, "binary_cross_entropy")
    loss = _bce_op(input, target)  # raises ValueError for an input outside [0, 1]
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _difference(input, target, where, reduction):
    """|input - target| for the elementwise losses, once the reduction and the shapes are checked."""
    _check_reduction(reduction, where)
    _same_shapes(input, target, where)
    return abs(input - target)  # abs'(0) = 0, as PyTorch's


def l1_loss(input, target, reduction="mean"):
    """Mean (or summed) absolute error, as `torch.nn.functional.l1_loss`.

    >>> import dagrad as dg
    >>> l1_loss(dg.tensor([1.0, -2.0]), dg.tensor([0.0, 0.0]))
    tensor(1.5)
    """
    return _reduce(_difference(input, target, "l1_loss", reduction), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta, as `torch.nn.functional.smooth_l1_loss`
    (beta = 0 is the L1 loss).

    >>> import dagrad as dg
    >>> smooth_l1_loss(dg.tensor([0.5, 3.0]), dg.tensor([0.0, 0.0]), reduction="none")
    tensor([0.125, 2.5  ])
    """
    _real_operands("smooth_l1_loss", input=input, target=target)
    _non_negative(beta, "beta", "smooth_l1_loss")
    d = _difference(input, target, "smooth_l1_loss", reduction)
    if beta == 0:
        return _reduce(d, reduction)  # PyTorch's special case: 0.5 d^2 / 0 would be NaN
    return _reduce(where(less(d, beta), 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where d = |input - target| < delta, else delta (d - 0.5 delta), as `torch.nn.functional.huber_loss`
    (delta times `smooth_l1_loss` with beta = delta).

    >>> import dagrad as dg
    >>> huber_loss(dg.tensor([0.5, 3.0]), dg.tensor([0.0, 0.0]), reduction="none", delta=2.0)
    tensor([0.125, 4.   ])
    """
    _real_operands("huber_loss", input=input, target=target)
    _positive_number(delta, "delta", "huber_loss")
    d = _difference(input, target, "huber_loss", reduction)
    return _reduce(where(less(d, delta), 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def kl_div(input, target, reduction="mean", log_target=False):
    """Pointwise KL divergence target * (log target - input) for log-probabilities `input`, as
    `torch.nn.functional.kl_div`: 0 where target is 0; with `log_target` the target is log-probabilities too.
    reduction='batchmean' divides the sum by the batch size (the KL divergence itself); 'mean', the default,
    divides by the number of elements, with PyTorch's warning.

    >>> import dagrad as dg, numpy as np
    >>> round(kl_div(dg.tensor(np.log([0.5, 0.5])), dg.tensor([1.0, 0.0]), reduction="sum").item(), 4)
    0.6931
    """
    _real_operands("kl_div", input=input, target=target)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise user_error(ValueError, "kl_div", f"reduction must be 'mean', 'batchmean', 'sum' or 'none', got "
                         f"{reduction!r}")
    _same_shapes(input, target, "kl_div")
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if log_target:
        loss = exp(target) * (target - input)
    else:  # xlogy(t, t) - t * input: the log is taken of 1 where t is 0, whose term is 0
        empty = equal(target, 0)
        loss = _where(empty, 0, target * log(_where(empty, 1, target))) - target * input
    shape = _shape(input)
    if reduction == "batchmean":
        return sum(loss) if not shape else sum(loss) / shape[0]
    return _reduce(loss, reduction)


def _broadcasts(value, name, input, where):
    """Checks that `value` (a weight) broadcasts to the input's shape, as PyTorch requires."""
    vs, xs = _shape(value), _shape(input)
    if len(vs) > len(xs) or not all(v in (1, x) or None in (v, x) for v, x in zip(vs[::-1], xs[::-1])):
        raise user_error(ValueError, where, f"{name} of shape {vs} does not broadcast to the input's shape {xs}",
                         input, value)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """Sigmoid and binary cross-entropy in one, as `torch.nn.functional.binary_cross_entropy_with_logits`:
    (1 - t) x + lw * log(1 + exp(-x)) with lw = 1 + (pos_weight - 1) t, finite for logits of any size; `weight`
    scales each element and `pos_weight` the positive term (it broadcasts along the last dimension, the classes).

    >>> import dagrad as dg
    >>> x = dg.tensor([1000.0, -1000.0, 0.0], requires_grad=True)
    >>> loss = binary_cross_entropy_with_logits(x, dg.tensor([1.0, 0.0, 1.0]), reduction="sum")
    >>> loss.backward()
    >>> round(loss.item(), 4), x.grad
    (0.6931, tensor([ 0. ,  0. , -0.5]))
    """
    _real_operands("binary_cross_entropy_with_logits", input=input, target=target, weight=weight,
                   pos_weight=pos_weight)
    where = "binary_cross_entropy_with_logits"
    _check_reduction(reduction, where)
    if _shape(input) != _shape(target) and not _fits(_shape(input), _shape(target)):
        raise user_error(ValueError, where, f"target size {_shape(target)} must be the same as input size "
                         f"{_shape(input)}", input, target)
    for name, value in (("weight", weight), ("pos_weight", pos_weight)):
        if value is not None:
            _broadcasts(value, name, input, where)
    if pos_weight is None:
        lw, positive = 1, target
    else:
        lw, positive = (pos_weight - 1) * target + 1, pos_weight * target
    # Written apart for each sign of x (for x < 0, (1 - t) x + lw softplus(-x) = lw softplus(x) - pos_weight t x):
    # softplus of a non-positive number only, so that neither the loss nor its gradient is the difference of two
    # nearly equal numbers (the gradient for t = 0 and x = -30 is sigmoid(x) itself, not 1 - sigmoid(-x) = 0)
    loss = _where(greater_equal(input, 0), (1 - target) * input + lw * _softplus_op(-input),
                  lw * _softplus_op(input) - positive * input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)
