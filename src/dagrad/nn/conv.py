"""Convolutions: `conv1d`, `conv2d`, `conv_transpose2d` and their layers `Conv1d`, `Conv2d`, `ConvTranspose2d`,
as PyTorch's (signatures, defaults, initialisation, `state_dict` keys), on the window machinery that the pooling
functions share.

Windows are cut by `Im2Col`, a `dg.Function` whose adjoint `Col2Im` (a sum of the windows back into an image) is
its gradient, and the other way round, so every order of derivative works. The windows of an (N, C, H, W) batch are
laid out as (C, kh, kw, OH, OW, N): the batch is the innermost axis, so every copy and every sum over a window
offset runs over long contiguous rows even for small images, and a convolution is ONE matrix product
(O, C kh kw) @ (C kh kw, OH OW N) whose result, (O, OH, OW, N), is the next layer's input seen through a transposed
view (N, O, OH, OW): no copy between layers, and the next layer's windows are cut from contiguous memory. Values
are NumPy arrays of any strides; the results of these functions are views in that channel-first, batch-last memory
order (`.numpy()` of one is not C-contiguous; `np.ascontiguousarray` makes it so).

>>> import dagrad as dg, numpy as np
>>> conv = dg.nn.Conv1d(2, 3, 3, padding=1)
>>> conv(dg.tensor(np.ones((4, 2, 10)))).shape
(4, 3, 10)
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._core.errors import user_error
from ..function import Function
from ..ops.linalg import matmul
from ..ops.shape import reshape, transpose
from . import init
from ._common import _empty, _fits, _int, _padding_mode, _shape, _size, _tuple, shape_error
from .module import Module

__all__ = ["conv1d", "conv2d", "conv_transpose2d", "Conv1d", "Conv2d", "ConvTranspose2d"]


# -- windows: im2col and its adjoint, differentiable at every order
def _span(size, kernel, stride, dilation):
    """How many windows of `kernel` taps `dilation` apart, `stride` apart, fit into `size`."""
    return (size - dilation * (kernel - 1) - 1) // stride + 1


@functools.cache
def _window_ops(kernel, stride, dilation, pads, fill, counts=None):
    """Im2Col for one kernel (kh, kw), stride, dilation and padding (top, bottom, left, right): x (N, C, H, W),
    padded with `fill`, -> windows (C, kh, kw, OH, OW, N) (the first `counts` (OH, OW) of them when given: the
    adjoint of a Col2Im has as many as that Col2Im summed). Linear in x but for the constant padding; adjoint
    Col2Im."""
    (kh, kw), (sh, sw), (dh, dw), (top, bottom, left, right) = kernel, stride, dilation, pads

    class Im2Col(Function):
        @staticmethod
        def forward(ctx, x):
            n, c, h, w = x.shape
            ctx.hw = (h, w)
            hp, wp = h + top + bottom, w + left + right
            oh, ow = counts or (_span(hp, kh, sh, dh), _span(wp, kw, sw, dw))
            xt = x.transpose(1, 2, 3, 0)  # (C, H, W, N): contiguous when x came out of another layer here
            if top or bottom or left or right:
                padded = np.full((c, hp, wp, n), fill, x.dtype)
                padded[:, top:top + h, left:left + w] = xt
                xt = padded
            cols = np.empty((c, kh, kw, oh, ow, n), x.dtype)
            for i in range(kh):
                for j in range(kw):
                    cols[:, i, j] = xt[:, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            return cols

        @staticmethod
        def backward(ctx, g):
            return _col2im(kernel, stride, dilation, pads, *ctx.hw).apply(g)

        @staticmethod
        def jvp(ctx, t):
            return _window_ops(kernel, stride, dilation, pads, 0.0, counts).apply(t)  # the padding: zero tangent

    return Im2Col


@functools.cache
def _col2im(kernel, stride, dilation, pads, h, w):
    """Col2Im: windows (C, kh, kw, OH, OW, N) summed into an image (N, C, h, w) (the padding cut off again)."""
    (kh, kw), (sh, sw), (dh, dw), (top, bottom, left, right) = kernel, stride, dilation, pads

    class Col2Im(Function):
        @staticmethod
        def forward(ctx, g):
            c, oh, ow, n = g.shape[0], g.shape[3], g.shape[4], g.shape[5]
            ctx.counts = (oh, ow)
            out = np.zeros((c, h + top + bottom, w + left + right, n), g.dtype)
            for i in range(kh):
                for j in range(kw):
                    out[:, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += g[:, i, j]
            return out[:, top:top + h, left:left + w].transpose(3, 0, 1, 2)

        @staticmethod
        def backward(ctx, g):
            return _window_ops(kernel, stride, dilation, pads, 0.0, ctx.counts).apply(g)

        @staticmethod
        def jvp(ctx, t):
            return Col2Im.apply(t)

    return Col2Im


def _windows(x, kernel, stride, dilation, pads, fill, where):
    """The windows (C, kh, kw, OH, OW, N) of x (N, C, H, W), checked to hold at least one."""
    n, c, h, w = _shape(x)
    top, bottom, left, right = pads
    extent = (dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1)
    if h is None or w is None or h + top + bottom < extent[0] or w + left + right < extent[1]:
        raise user_error(ValueError, where, f"the input's spatial size {(h, w)} with padding "
                         f"{(top + bottom, left + right)} is smaller than the kernel's extent {extent}", x)
    return _window_ops(tuple(kernel), tuple(stride), tuple(dilation), tuple(pads), fill).apply(x)


def _conv_padding(padding, kernel, stride, dilation, where="conv2d"):
    """(top, bottom, left, right) from an int, a pair (a 1-tuple for one spatial axis, whose unit height is never
    padded), 'valid' or 'same' (PyTorch's meanings: 'same' pads by dilation * (k - 1) in all, the odd one at the
    bottom/right, and needs stride 1)."""
    unit = (0,) * (2 - len(kernel))
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0, 0, 0
        if padding != "same":
            raise user_error(ValueError, where, f"padding must be an int, a {'pair' if len(kernel) == 2 else '1-tuple'}"
                             f", 'valid' or 'same', got {padding!r}")
        if any(s != 1 for s in stride):
            raise user_error(ValueError, where, f"padding='same' needs stride 1 (as in PyTorch), got stride "
                             f"{stride}")
        th, tw = unit + tuple(d * (k - 1) for k, d in zip(kernel, dilation))
        return th // 2, th - th // 2, tw // 2, tw - tw // 2
    pads = _tuple(padding, len(kernel), "padding", where)
    if min(pads) < 0:
        raise user_error(ValueError, where, f"padding {pads} must not be negative")
    ph, pw = unit + pads
    return ph, ph, pw, pw


def _check_weight(x, weight, bias, groups, dims, where, transposed=False):
    """Checks the weight (O, C / groups, k...) (transposed: (C, O / groups, k...)), groups, the input (N, C, ...)
    and the bias (O,) of a convolution with `dims` spatial axes; returns (in channels, out channels)."""
    xs, ws = _shape(x), _shape(weight)
    letters = ("L",) if dims == 1 else ("H", "W")
    names = ("in_channels, out_channels / groups" if transposed else "out_channels, in_channels / groups") + \
        (", k" if dims == 1 else ", kh, kw")
    if len(ws) != 2 + dims or None in ws or min(ws[:1] + ws[2:]) < 1:
        raise user_error(ValueError, where, f"weight must have shape ({names}) with positive sizes (but the second), "
                         f"got {ws}", x, weight)
    groups = _int(groups, "groups", where)
    first = ws[0]
    if groups < 1 or first % groups:
        raise user_error(ValueError, where, f"groups must be a positive divisor of the {first} "
                         f"{'input' if transposed else 'output'} channels, got {groups}", x, weight)
    c, o = (first, ws[1] * groups) if transposed else (ws[1] * groups, first)
    if len(xs) != 2 + dims or xs[1] != c:
        raise shape_error(where, "(N, " + ", ".join((str(c),) + letters) + ")", xs, x, weight)
    if bias is not None and not _fits(_shape(bias), (o,)):
        raise user_error(ValueError, where, f"bias must have shape ({o},), got {_shape(bias)}", x, weight, bias)
    return groups, c, o


def _positive_pairs(where, x, **options):
    for name, value in options.items():
        if min(value) < 1:
            raise user_error(ValueError, where, f"{name} {value} must be positive", x)


def _conv(x, weight, bias, stride, dilation, pads, groups, where):
    """The convolution of checked x (N, C, H, W) and weight (O, C / groups, kh, kw): one matrix product of the
    filters and the windows (per group when groups > 1), (O, OH OW N), seen as (N, O, OH, OW)."""
    o, cg, kh, kw = _shape(weight)
    cols = _windows(x, (kh, kw), stride, dilation, pads, 0.0, where)  # (C, kh, kw, OH, OW, N), zero padding
    oh, ow, n = _shape(cols)[3:]
    k = cg * kh * kw
    if groups == 1:
        out = matmul(reshape(weight, (o, k)), reshape(cols, (k, -1)))
    else:  # (G, O / G, k) @ (G, k, OH OW N): each group's filters with its own channels
        out = reshape(matmul(reshape(weight, (groups, o // groups, k)), reshape(cols, (groups, k, -1))), (o, -1))
    if bias is not None:
        out = out + reshape(bias, (o, 1))  # here its gradient sums contiguous rows
    return transpose(reshape(out, (o, oh, ow, -1 if n is None else n)), (3, 0, 1, 2))


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation, as `torch.nn.functional.conv2d`) of x (N, C, H, W) with weight
    (O, C / groups, kh, kw): windows cut by im2col, then one matrix product (batched per group when groups > 1).
    `padding` is an int, a pair, 'valid' or 'same'.

    >>> import dagrad as dg, numpy as np
    >>> x = dg.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    >>> conv2d(x, dg.tensor(np.ones((1, 1, 2, 2))), stride=2)
    tensor([[[[10., 18.],
              [42., 50.]]]])
    >>> conv2d(x, dg.tensor(np.ones((1, 1, 2, 2))), dilation=2).shape  # each tap 2 pixels apart
    (1, 1, 2, 2)
    """
    groups, _, _ = _check_weight(x, weight, bias, groups, 2, "conv2d")
    stride, dilation = _tuple(stride, 2, "stride", "conv2d"), _tuple(dilation, 2, "dilation", "conv2d")
    if min(stride + dilation) < 1:
        raise user_error(ValueError, "conv2d", f"stride {stride} and dilation {dilation} must be positive", x)
    pads = _conv_padding(padding, _shape(weight)[2:], stride, dilation)
    return _conv(x, weight, bias, stride, dilation, pads, groups, "conv2d")


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation, as `torch.nn.functional.conv1d`) of x (N, C, L) with weight
    (O, C / groups, k): conv2d of a unit height. `padding` is an int, a 1-tuple, 'valid' or 'same'.

    >>> import dagrad as dg, numpy as np
    >>> conv1d(dg.tensor([[[1.0, 2.0, 3.0, 4.0]]]), dg.tensor([[[1.0, -1.0]]]))
    tensor([[[-1., -1., -1.]]])
    """
    groups, _, _ = _check_weight(x, weight, bias, groups, 1, "conv1d")
    (s,), (d,) = _tuple(stride, 1, "stride", "conv1d"), _tuple(dilation, 1, "dilation", "conv1d")
    if min(s, d) < 1:
        raise user_error(ValueError, "conv1d", f"stride {(s,)} and dilation {(d,)} must be positive", x)
    pads = _conv_padding(padding, _shape(weight)[2:], (s,), (d,), "conv1d")
    xs, ws = _shape(x), _shape(weight)
    out = _conv(reshape(x, (-1 if xs[0] is None else xs[0], xs[1], 1, xs[2])), reshape(weight, ws[:2] + (1, ws[2])),
                bias, (1, s), (1, d), pads, groups, "conv1d")
    os_ = _shape(out)
    return reshape(out, (-1 if os_[0] is None else os_[0], os_[1], os_[3]))


def _transposed_size(size, kernel, stride, padding, dilation, output_padding):
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-d convolution of x (N, C, H, W) with weight (C, O / groups, kh, kw), as
    `torch.nn.functional.conv_transpose2d` (note its order: `groups` before `dilation`): the gradient of conv2d with
    respect to its input, each pixel spreading its filter over the output (one matrix product, then the windows
    summed into the image by col2im). The output is (H - 1) stride - 2 padding + dilation (k - 1) + output_padding
    + 1 high (and wide, likewise); `output_padding` (smaller than the stride or the dilation) adds rows and columns
    at the bottom and right, which only the bias reaches.

    >>> import dagrad as dg, numpy as np
    >>> conv_transpose2d(dg.tensor(np.ones((1, 1, 2, 2))), dg.tensor(np.ones((1, 1, 2, 2))), stride=2).shape
    (1, 1, 4, 4)
    """
    where = "conv_transpose2d"
    groups, c, o = _check_weight(x, weight, bias, groups, 2, where, transposed=True)
    stride, dilation = _tuple(stride, 2, "stride", where), _tuple(dilation, 2, "dilation", where)
    _positive_pairs(where, x, stride=stride, dilation=dilation)
    padding, output_padding = _tuple(padding, 2, "padding", where), _tuple(output_padding, 2, "output_padding", where)
    if min(padding + output_padding) < 0:
        raise user_error(ValueError, where, f"padding {padding} and output_padding {output_padding} must not be "
                         f"negative", x)
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise user_error(ValueError, where, f"output_padding {output_padding} must be smaller than either the "
                             f"stride {stride} or the dilation {dilation} (as in PyTorch)", x)
    (n, _, h, w), (_, og, kh, kw) = _shape(x), _shape(weight)
    if h is None or w is None:
        raise user_error(ValueError, where, f"the input's spatial size must be known, got {(h, w)}", x)
    size = tuple(_transposed_size(*a) for a in zip((h, w), (kh, kw), stride, padding, dilation, output_padding))
    if min(size) < 1:
        raise user_error(ValueError, where, f"the output size {size} is not positive (input {(h, w)}, kernel "
                         f"{(kh, kw)}, stride {stride}, padding {padding}, dilation {dilation})", x, weight)
    k = og * kh * kw
    xm = reshape(transpose(x, (1, 2, 3, 0)), (c, -1))  # (C, H W N): free for an input that came from a layer here
    if groups == 1:
        cols = matmul(transpose(reshape(weight, (c, k))), xm)
    else:  # (G, k, C / G) @ (G, C / G, H W N)
        cols = matmul(transpose(reshape(weight, (groups, c // groups, k)), (0, 2, 1)),
                      reshape(xm, (groups, c // groups, -1)))
    cols = reshape(cols, (o, kh, kw, h, w, -1 if n is None else n))
    ph, pw = padding
    out = _col2im((kh, kw), stride, dilation, (ph, ph, pw, pw), *size).apply(cols)
    if bias is not None:
        out = out + reshape(bias, (o, 1, 1))
    return out


# -- the layers
class _Conv(Module):
    """What Conv1d, Conv2d and ConvTranspose2d share: options checked when the layer is made (PyTorch checks most
    at the first call), the weight (out, in / groups, k...) (transposed: (in, out / groups, k...)) and bias
    initialised as PyTorch's (kaiming_uniform with a = sqrt(5), the bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    fan_in from the weight's second axis and the kernel, for the transposed layer too)."""

    _dims, _transposed = 2, False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                 dtype, generator, output_padding=0):
        super().__init__()
        name, n = type(self).__name__, self._dims
        self.in_channels = _size(in_channels, "in_channels", name)
        self.out_channels = _size(out_channels, "out_channels", name, minimum=1)
        self.groups = _size(groups, "groups", name, minimum=1)
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise user_error(ValueError, name, f"groups ({groups}) must divide in_channels ({in_channels}) and "
                             f"out_channels ({out_channels})")
        self.kernel_size = _tuple(kernel_size, n, "kernel_size", name)
        self.stride = _tuple(stride, n, "stride", name)
        self.dilation = _tuple(dilation, n, "dilation", name)
        if min(self.kernel_size + self.stride + self.dilation) < 1:
            raise user_error(ValueError, name, f"kernel_size {self.kernel_size}, stride {self.stride} and dilation "
                             f"{self.dilation} must be positive")
        if self._transposed:
            if isinstance(padding, str):
                raise user_error(ValueError, name, f"padding must be an int or a pair for a transposed convolution, "
                                 f"got {padding!r}")
            self.padding = _tuple(padding, n, "padding", name)
            self.output_padding = _tuple(output_padding, n, "output_padding", name)
            if min(self.padding + self.output_padding) < 0:
                raise user_error(ValueError, name, f"padding {self.padding} and output_padding {self.output_padding} "
                                 f"must not be negative")
            self._check_output_padding(self.output_padding, name)
        else:
            _conv_padding(padding, self.kernel_size, self.stride, self.dilation, name)  # checks it
            self.padding = padding if isinstance(padding, str) else _tuple(padding, n, "padding", name)
        self.padding_mode = _padding_mode(padding_mode, name)
        shape = ((self.in_channels, self.out_channels // self.groups) if self._transposed
                 else (self.out_channels, self.in_channels // self.groups))
        self.weight = _empty(shape + self.kernel_size, dtype)
        self.bias = _empty((self.out_channels,), dtype) if bias else None
        self.reset_parameters(generator)

    def _check_output_padding(self, output_padding, where):
        for op, s, d in zip(output_padding, self.stride, self.dilation):
            if op >= s and op >= d:
                raise user_error(ValueError, where, f"output_padding {output_padding} must be smaller than either the "
                                 f"stride {self.stride} or the dilation {self.dilation} (as in PyTorch)")

    def reset_parameters(self, generator=None):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), generator=generator)
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound, generator)

    def _check_input(self, x):
        xs = _shape(x)
        if len(xs) != 2 + self._dims or xs[1] != self.in_channels:
            letters = "L" if self._dims == 1 else "H, W"
            raise shape_error(repr(self), f"(N, {self.in_channels}, {letters})", xs, x)

    def extra_repr(self):  # PyTorch's: the options that differ from their defaults
        n = self._dims
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            text += f", padding={self.padding!r}"
        if self.dilation != (1,) * n:
            text += f", dilation={self.dilation}"
        if self._transposed and self.output_padding != (0,) * n:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        return text + ("" if self.bias is not None else ", bias=False")


class Conv2d(_Conv):
    """2-d convolution of (N, C_in, H, W) inputs; weight (C_out, C_in / groups, kh, kw) and bias initialised as
    PyTorch's.

    >>> import dagrad as dg, numpy as np
    >>> conv = dg.nn.Conv2d(1, 4, 3, padding=1)
    >>> conv
    Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    >>> conv(dg.tensor(np.zeros((2, 1, 8, 8)))).shape
    (2, 4, 8, 8)
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 dtype=None, generator=None, *, padding_mode="zeros"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype, generator)

    def forward(self, x):
        self._check_input(x)
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution of (N, C_in, L) inputs; weight (C_out, C_in / groups, k) and bias initialised as PyTorch's.

    >>> import dagrad as dg, numpy as np
    >>> dg.nn.Conv1d(2, 4, 3, stride=2)
    Conv1d(2, 4, kernel_size=(3,), stride=(2,))
    """

    _dims = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", dtype=None, generator=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype, generator)

    def forward(self, x):
        self._check_input(x)
        return conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_Conv):
    """Transposed 2-d convolution of (N, C_in, H, W) inputs (the gradient of a Conv2d with respect to its input,
    an "up-convolution"); weight (C_in, C_out / groups, kh, kw) and bias initialised as PyTorch's.
    `forward(x, output_size=None)`: an `output_size` (H_out, W_out) (or with N and C in front) picks the
    output_padding that gives it, as PyTorch's.

    >>> import dagrad as dg, numpy as np
    >>> up = dg.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
    >>> up(dg.tensor(np.zeros((1, 4, 5, 5)))).shape, up(dg.tensor(np.zeros((1, 4, 5, 5))), output_size=(10, 10)).shape
    ((1, 2, 9, 9), (1, 2, 10, 10))
    """

    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", dtype=None, generator=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype, generator, output_padding)

    def _output_padding(self, x, output_size):
        """PyTorch's: the output_padding that makes the output `output_size`, checked to be in reach."""
        where = repr(self)
        try:
            size = tuple(output_size)
        except TypeError:
            size = (output_size,)
        if len(size) == 4:
            size = size[2:]
        if len(size) != 2:
            raise user_error(ValueError, where, f"output_size must have 2 or 4 elements (H, W or N, C, H, W), got "
                             f"{output_size!r}", x)
        size = tuple(_int(s, "output_size", where) for s in size)
        padding = []
        for d, (want, n) in enumerate(zip(size, _shape(x)[2:])):
            smallest = _transposed_size(n, self.kernel_size[d], self.stride[d], self.padding[d], self.dilation[d], 0)
            largest = smallest + self.stride[d] - 1
            if not smallest <= want <= largest:
                raise user_error(ValueError, where, f"requested an output size of {size}, but valid sizes range from "
                                 f"{smallest} to {largest} for dimension {d} (for an input of {_shape(x)[2:]})", x)
            padding.append(want - smallest)
        self._check_output_padding(tuple(padding), where)
        return tuple(padding)

    def forward(self, x, output_size=None):
        self._check_input(x)
        output_padding = self.output_padding if output_size is None else self._output_padding(x, output_size)
        return conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                                self.dilation)
