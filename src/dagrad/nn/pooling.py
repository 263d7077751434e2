"""Pooling: `max_pool1d`, `max_pool2d`, `avg_pool2d`, `adaptive_avg_pool2d` and their layers, as PyTorch's, on the
windows of `conv.py` (laid out (C, kh, kw, OH, OW, N): see there).

>>> import dagrad as dg, numpy as np
>>> dg.nn.AdaptiveAvgPool2d(1)(dg.tensor(np.arange(8.0).reshape(1, 2, 2, 2)))
tensor([[[[1.5]],
<BLANKLINE>
         [[5.5]]]])
"""

from __future__ import annotations

import functools

import numpy as np

from .._core.errors import user_error
from .._core.shapes import dtype_of
from .._core.tensor import is_symbolic
from ..function import Function
from ..ops.elementwise import equal
from ..ops.elementwise import where as _where  # functions here name a parameter `where`
from ..ops.linalg import matmul
from ..ops.reduce import argmax, sum
from ..ops.shape import expand_dims, reshape, transpose
from ._common import _int, _shape, _tuple, shape_error
from .conv import _col2im, _window_ops, _windows
from .module import Module

__all__ = ["max_pool1d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "MaxPool1d", "MaxPool2d", "AvgPool2d",
           "AdaptiveAvgPool2d"]


def _ceil_mode_pads(size, kernel, stride, dilation, pad):
    """(before, after) padding of one axis with ceil_mode: `pad`, plus enough after for one more window when one
    would start inside the input or the left padding (PyTorch's rule)."""
    extent = dilation * (kernel - 1) + 1
    out = -(-(size + 2 * pad - extent) // stride) + 1
    if (out - 1) * stride >= size + pad:
        out -= 1
    return pad, max(pad, (out - 1) * stride + extent - size - pad)


def _pool_options(kernel_size, stride, padding, dilation, where, dims=2):
    """The `dims`-tuples (kernel, stride, padding, dilation) of a pooling, checked as PyTorch checks them."""
    kernel = _tuple(kernel_size, dims, "kernel_size", where)
    stride = _tuple(kernel_size if stride is None else stride, dims, "stride", where)
    padding = _tuple(padding, dims, "padding", where)
    dilation = _tuple(dilation, dims, "dilation", where)
    if min(kernel + stride + dilation) < 1:
        raise user_error(ValueError, where, f"kernel_size {kernel}, stride {stride} and dilation {dilation} must "
                         f"be positive")
    if min(padding) < 0 or any(2 * p > k for p, k in zip(padding, kernel)):
        raise user_error(ValueError, where, f"padding {padding} must be non-negative and at most half the kernel "
                         f"{kernel}")
    return kernel, stride, padding, dilation


def _pool_pads(xs, kernel, stride, padding, dilation, ceil_mode):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    if ceil_mode and None not in xs[2:]:
        return _ceil_mode_pads(xs[2], kh, sh, dh, ph) + _ceil_mode_pads(xs[3], kw, sw, dw, pw)
    return ph, ph, pw, pw


def _check_return_indices(return_indices, where):
    if return_indices:
        raise user_error(NotImplementedError, where, "return_indices=True is not implemented (the indices of the "
                         "maxima); max_unpool has no counterpart here either")


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of x (N, C, H, W), as `torch.nn.functional.max_pool2d`: the gradient goes to the first
    maximum of each window (PyTorch's choice; a NaN counts as the maximum), padding is -inf; `ceil_mode` keeps a
    last partial window.

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
    _check_return_indices(return_indices, "max_pool2d")
    options = _pool_options(kernel_size, stride, padding, dilation, "max_pool2d")
    return _max_pool(x, *options, _pool_pads(xs, *options, ceil_mode), "max_pool2d")


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of x (N, C, L), as `torch.nn.functional.max_pool1d` (max_pool2d of a unit height).

    >>> import dagrad as dg
    >>> max_pool1d(dg.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2)
    tensor([[[3., 5.]]])
    """
    xs = _shape(x)
    if len(xs) != 3:
        raise shape_error("max_pool1d", "(N, C, L)", xs, x)
    _check_return_indices(return_indices, "max_pool1d")
    options = [(unit,) + o for unit, o in zip((1, 1, 0, 1), _pool_options(kernel_size, stride, padding, dilation,
                                                                           "max_pool1d", dims=1))]
    x4 = reshape(x, (-1 if xs[0] is None else xs[0], xs[1], 1, xs[2]))
    out = _max_pool(x4, *options, _pool_pads(_shape(x4), *options, ceil_mode), "max_pool1d")
    os_ = _shape(out)
    return reshape(out, (-1 if os_[0] is None else os_[0], os_[1], os_[3]))


def _max_pool(x, kernel, stride, padding, dilation, pads, where):
    if not is_symbolic(x) and dtype_of(x).kind == "f":
        n, c, h, w = _shape(x)
        extent = (dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1)
        if h + pads[0] + pads[1] >= extent[0] and w + pads[2] + pads[3] >= extent[1]:  # else _windows says why
            return _max_pool_op(kernel, stride, dilation, pads).apply(x)
    windows = _windows(x, kernel, stride, dilation, pads, -np.inf, where)  # (C, kh, kw, OH, OW, N)
    c, _, _, oh, ow, n = _shape(windows)
    k = kernel[0] * kernel[1]
    windows = reshape(windows, (c, k, oh, ow, -1 if n is None else n))
    first = equal(expand_dims(argmax(windows, axis=1), 1), np.arange(k).reshape(k, 1, 1, 1))  # first maximum
    out = sum(_where(first, windows, 0.0), axis=1)  # (C, OH, OW, N); where, not *: the padding is -inf
    return transpose(out, (3, 0, 1, 2))


@functools.cache
def _max_pool_op(kernel, stride, dilation, pads):
    """Max pooling of concrete values as one Function (a static graph's node goes through the composite above
    instead): its forward keeps, for each window offset, where the first maximum of each window is, and its
    backward puts the gradient there, adding the same numbers in the same order as the composite's."""
    (kh, kw), (sh, sw), (dh, dw), (top, bottom, left, right) = kernel, stride, dilation, pads
    disjoint = sh >= dh * (kh - 1) + 1 and sw >= dw * (kw - 1) + 1

    class MaxPool(Function):
        @staticmethod
        def forward(ctx, x):
            n, c, h, w = x.shape
            hp, wp = h + top + bottom, w + left + right
            oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
            xt = x.transpose(1, 2, 3, 0)
            if top or bottom or left or right:
                padded = np.full((c, hp, wp, n), -np.inf, x.dtype)
                padded[:, top:top + h, left:left + w] = xt
                xt = padded
            taps = [xt[:, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                    for i in range(kh) for j in range(kw)]
            best = taps[0].copy()
            for tap in taps[1:]:
                np.maximum(best, tap, out=best)  # NaN wins, as in PyTorch
            nan = bool(np.isnan(best).any())
            firsts, taken = [], None
            for tap in taps:
                hit = tap == best
                if nan:
                    hit |= np.isnan(tap)
                if taken is None:
                    taken = hit.copy()
                else:
                    hit &= ~taken
                    taken |= hit
                firsts.append(hit)
            ctx.firsts, ctx.hw = firsts, (h, w)
            return best.transpose(3, 0, 1, 2)

        @staticmethod
        def backward(ctx, g):
            h, w = ctx.hw
            if isinstance(g, np.ndarray):
                gt = g.transpose(1, 2, 3, 0)
                out = np.zeros((gt.shape[0], h + top + bottom, w + left + right, gt.shape[3]), g.dtype)
                oh, ow = gt.shape[1:3]
                for k, hit in enumerate(ctx.firsts):
                    i, j = divmod(k, kw)
                    rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
                    cols = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                    if disjoint:  # each input in one window at most: written once
                        out[:, rows, cols] = _where(hit, gt, 0.0)  # on raw arrays: the bits of gt, no branches
                    else:
                        out[:, rows, cols] += _where(hit, gt, 0.0)
                return out[:, top:top + h, left:left + w].transpose(3, 0, 1, 2)
            # a graph of the gradient: the same sums in dagrad's ops (Col2Im differentiates again)
            hits = np.stack(ctx.firsts, axis=1)  # (C, k, OH, OW, N)
            spread = _where(hits, expand_dims(transpose(g, (1, 2, 3, 0)), 1), 0.0)
            shape = _shape(spread)
            return _col2im(kernel, stride, dilation, pads, h, w).apply(
                reshape(spread, (shape[0], kh, kw) + tuple(shape[2:])))

        @staticmethod
        def jvp(ctx, t):
            windows = _window_ops(kernel, stride, dilation, pads, 0.0).apply(t)
            shape = _shape(windows)
            windows = reshape(windows, (shape[0], kh * kw) + tuple(shape[3:]))
            return transpose(sum(_where(np.stack(ctx.firsts, axis=1), windows, 0.0), axis=1), (3, 0, 1, 2))

    return MaxPool


def _avg_divisor(size, kernel, stride, pad, count, count_include_pad):
    """PyTorch's divisor of each window of one axis: its extent within the padded input (count_include_pad) or
    within the input itself; 0 where a window holds nothing (ceil_mode's last one, past the padding)."""
    start = np.arange(count) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    if count_include_pad:
        return end - start, np.minimum(end, size) > np.maximum(start, 0)
    inside = np.minimum(end, size) - np.maximum(start, 0)
    return np.maximum(inside, 0), inside > 0


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of x (N, C, H, W), as `torch.nn.functional.avg_pool2d`: zero padding, counted in the
    divisor with `count_include_pad` (the default) or not; `ceil_mode` keeps a last partial window (divided by what
    it holds of the padded input); `divisor_override` divides every window's sum by that number instead.

    >>> import dagrad as dg, numpy as np
    >>> avg_pool2d(dg.tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2)
    tensor([[[[ 2.5,  4.5],
              [10.5, 12.5]]]])
    """
    where = "avg_pool2d"
    xs = _shape(x)
    if len(xs) != 4:
        raise shape_error(where, "(N, C, H, W)", xs, x)
    kernel, stride, padding, dilation = _pool_options(kernel_size, stride, padding, 1, where)
    if divisor_override is not None and _int(divisor_override, "divisor_override", where) == 0:
        raise user_error(ValueError, where, "divisor_override must not be zero", x)
    pads = _pool_pads(xs, kernel, stride, padding, dilation, ceil_mode)
    windows = _windows(x, kernel, stride, dilation, pads, 0.0, where)  # (C, kh, kw, OH, OW, N)
    oh, ow = _shape(windows)[3:5]
    total = sum(windows, axis=(1, 2))  # (C, OH, OW, N)
    if divisor_override is not None:
        out = total / divisor_override
    else:
        rows, rows_held = _avg_divisor(xs[2], kernel[0], stride[0], padding[0], oh, count_include_pad)
        cols, cols_held = _avg_divisor(xs[3], kernel[1], stride[1], padding[1], ow, count_include_pad)
        divisor = np.outer(rows, cols)
        divisor[~np.outer(rows_held, cols_held)] = 1  # an empty window: its sum, 0 (PyTorch's output there)
        out = total / divisor.astype(dtype_of(x))[:, :, None]
    return transpose(out, (3, 0, 1, 2))


def _adaptive_sizes(output_size, where):
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size, output_size)
    if len(sizes) != 2:
        raise user_error(ValueError, where, f"output_size must be an int, None or a pair, got {output_size!r}")
    sizes = tuple(None if s is None else _int(s, "output_size", where) for s in sizes)
    if any(s is not None and s < 1 for s in sizes):
        raise user_error(ValueError, where, f"output_size must be positive (or None: the input's size), got "
                         f"{output_size!r}")
    return sizes


def _adaptive_matrix(size, out, dtype):
    """(out, size): row i averages PyTorch's window i, [floor(i size / out), ceil((i + 1) size / out))."""
    matrix = np.zeros((out, size), dtype)
    for i in range(out):
        start, end = i * size // out, -(-(i + 1) * size // out)
        matrix[i, start:end] = 1 / (end - start)
    return matrix


def adaptive_avg_pool2d(x, output_size):
    """Mean over the windows that give an output of `output_size` (an int, a pair; None keeps the input's size),
    as `torch.nn.functional.adaptive_avg_pool2d`: window i of an axis of n is [floor(i n / out), ceil((i + 1) n /
    out)), so windows overlap when out does not divide n. Computed as A_h @ x @ A_w^T with averaging matrices
    (a window's mean is the mean of its rows' means).

    >>> import dagrad as dg, numpy as np
    >>> adaptive_avg_pool2d(dg.tensor(np.arange(5.0).reshape(1, 1, 1, 5)), (1, 3))
    tensor([[[[0.5, 2. , 3.5]]]])
    """
    where = "adaptive_avg_pool2d"
    xs = _shape(x)
    if len(xs) != 4:
        raise shape_error(where, "(N, C, H, W)", xs, x)
    sizes = _adaptive_sizes(output_size, where)
    h, w = xs[2:]
    if h is None or w is None or min(h, w) < 1:
        raise user_error(ValueError, where, f"the input's spatial size must be known and positive, got {(h, w)}", x)
    oh, ow = (h if sizes[0] is None else sizes[0]), (w if sizes[1] is None else sizes[1])
    dtype = dtype_of(x)
    out = x if ow == w else matmul(x, _adaptive_matrix(w, ow, dtype).T)
    return out if oh == h else matmul(_adaptive_matrix(h, oh, dtype), out)


# -- the layers
class _Pool(Module):
    def _check_input(self, x, rank, expected):
        xs = _shape(x)
        if len(xs) != rank:
            raise shape_error(repr(self), expected, xs, x)


class MaxPool2d(_Pool):
    """Max pooling of (N, C, H, W) inputs (stride defaults to the kernel size).

    >>> import dagrad as dg, numpy as np
    >>> dg.nn.MaxPool2d(2)(dg.tensor(np.zeros((1, 3, 8, 8)))).shape
    (1, 3, 4, 4)
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        _pool_options(kernel_size, stride, padding, dilation, "MaxPool2d")  # checks them
        _check_return_indices(return_indices, "MaxPool2d")
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = False, bool(ceil_mode)

    def forward(self, x):
        self._check_input(x, 4, "(N, C, H, W)")
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        text = f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
        if self.dilation != 1:
            text += f", dilation={self.dilation}"
        return text + (", ceil_mode=True" if self.ceil_mode else "")


class MaxPool1d(MaxPool2d):
    """Max pooling of (N, C, L) inputs (stride defaults to the kernel size).

    >>> import dagrad as dg, numpy as np
    >>> dg.nn.MaxPool1d(3, stride=2)(dg.tensor(np.zeros((2, 4, 9)))).shape
    (2, 4, 4)
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        _Pool.__init__(self)
        _pool_options(kernel_size, stride, padding, dilation, "MaxPool1d", dims=1)
        _check_return_indices(return_indices, "MaxPool1d")
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = False, bool(ceil_mode)

    def forward(self, x):
        self._check_input(x, 3, "(N, C, L)")
        return max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class AvgPool2d(_Pool):
    """Average pooling of (N, C, H, W) inputs, as PyTorch's (stride defaults to the kernel size).

    >>> import dagrad as dg
    >>> dg.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
    AvgPool2d(kernel_size=3, stride=2, padding=1, count_include_pad=False)
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        _pool_options(kernel_size, stride, padding, 1, "AvgPool2d")
        if divisor_override is not None and _int(divisor_override, "divisor_override", "AvgPool2d") == 0:
            raise user_error(ValueError, "AvgPool2d", "divisor_override must not be zero")
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, bool(ceil_mode)
        self.count_include_pad, self.divisor_override = bool(count_include_pad), divisor_override

    def forward(self, x):
        self._check_input(x, 4, "(N, C, H, W)")
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)

    def extra_repr(self):
        text = f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
        if self.ceil_mode:
            text += ", ceil_mode=True"
        if not self.count_include_pad:
            text += ", count_include_pad=False"
        return text + ("" if self.divisor_override is None else f", divisor_override={self.divisor_override}")


class AdaptiveAvgPool2d(_Pool):
    """Average pooling of (N, C, H, W) inputs to a fixed output size (None keeps that axis), as PyTorch's.

    >>> import dagrad as dg, numpy as np
    >>> dg.nn.AdaptiveAvgPool2d((3, None))(dg.tensor(np.zeros((2, 4, 7, 5)))).shape
    (2, 4, 3, 5)
    """

    def __init__(self, output_size):
        super().__init__()
        _adaptive_sizes(output_size, "AdaptiveAvgPool2d")
        self.output_size = output_size

    def forward(self, x):
        self._check_input(x, 4, "(N, C, H, W)")
        return adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"
