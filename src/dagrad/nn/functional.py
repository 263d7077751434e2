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

import math
import warnings

import numpy as np

from .._core import dask_ops
from .._core.backends import is_dask
from .._core.dtypes import first
from .._core.errors import caller_line, user_error
from .._core.op import Op, apply
from .._core.shapes import broadcast_shapes, dtype_of, normalize_axis_index, shape_of
from .._core.tensor import Batched, Tensor, is_symbolic
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
    stop_gradient,
    tanh,
    where,
)
from ..ops.elementwise import softplus as _softplus_op
from ..ops.elementwise import where as _where  # some functions here name a parameter `where`
from ..ops.linalg import matmul
from ..ops.nn import CLASS_LABELS, ROW_INDICES
from ..ops.nn import binary_cross_entropy as _bce_op
from ..ops.nn import linear as _linear_op
from ..ops.nn import log_softmax as _log_softmax_op
from ..ops.nn import nll_indices as _nll_op
from ..ops.nn import softmax as _softmax_op
from ..ops.reduce import max as _max
from ..ops.reduce import mean, sum, var
from ..ops.shape import expand_dims, getitem, repeat, reshape, swapaxes, transpose
from ._common import (  # noqa: F401  (the layers and losses read these as F._int, F.shape_error, ...)
    _fits,
    _int,
    _is_real,
    _non_negative,
    _number,
    _pair,
    _positive_number,
    _probability,
    _shape,
    _values,
    shape_error,
)
from .conv import conv1d, conv2d, conv_transpose2d
from .init import _generator
from .norm import batch_norm, group_norm
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool1d, max_pool2d

__all__ = [
    "linear", "conv1d", "conv2d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool2d",
    "adaptive_avg_pool2d", "dropout", "dropout2d", "layer_norm", "batch_norm", "group_norm", "embedding", "relu",
    "tanh", "sigmoid", "gelu", "silu", "leaky_relu", "elu", "softplus", "softmax", "log_softmax", "flatten",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "scaled_dot_product_attention",
]


# -- helpers
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
    # one pass from the draws to the mask in its dtype (the same values as (keep / (1 - p)).astype(dtype), which
    # made three passes: 33 of a Transformer layer's 155 ms training step at float32, batch 32 x 64 x 2048)
    return np.multiply(generator.random(shape) >= p, 1.0 / (1.0 - p), dtype=dtype)


# Not in the op registry (like a static graph's assign): only dropout builds it, on graph nodes
_KEEP_MASK = Op("dropout_mask", _keep_mask, None, None, lambda like, p, generator: tuple(like), False, random=True,
                dtype=first)


def dropout2d(input, p=0.5, training=True, inplace=False, generator=None):
    """Zeroes whole channels of (N, C, H, W) input with probability p each (one draw per example and channel) and
    scales the rest by 1/(1-p), as `torch.nn.functional.dropout2d`; identity when not training. A 3-d input is
    taken as (N, C, L), with PyTorch's warning (its historical behaviour). `inplace` is accepted for PyTorch's
    signature; the result is a new tensor.

    >>> import dagrad as dg, numpy as np
    >>> y = dropout2d(dg.tensor(np.ones((1, 4, 2, 2))), 0.5, generator=np.random.default_rng(0))
    >>> y.numpy()[0, :, 0, 0]
    array([2., 0., 0., 0.])
    """
    _probability(p, "p", "dropout2d", input)
    xs = _shape(input)
    if len(xs) not in (3, 4):
        raise shape_error("dropout2d", "(N, C, H, W) (or (N, C, L))", xs, input)
    if len(xs) == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", UserWarning, stacklevel=2)
    if not training or p == 0:
        return input
    gen = _generator(generator)
    index = (slice(None), slice(None)) + (slice(0, 1),) * (len(xs) - 2)
    if is_symbolic(input):  # one mask entry per channel, drawn anew at each run
        return input * apply(_KEEP_MASK, (getitem(input, index),), {"p": float(p), "generator": gen})
    return input * _keep_mask(np.broadcast_to(np.zeros((), dtype_of(input)), xs[:2] + (1,) * (len(xs) - 2)), p, gen)


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


def embedding(indices, weight):
    """Rows of `weight` (num_embeddings, dim) picked by integer `indices` of any shape, as
    `torch.nn.functional.embedding`: an index outside [0, num_embeddings - 1] (a negative one too) raises
    IndexError, at once for values known now, when the graph runs for a static graph's or `dg.compile`'s
    indices (and under `dg.vmap`, mapped indices included).

    >>> import dagrad as dg, numpy as np
    >>> embedding(np.array([2, 0]), dg.tensor(np.arange(6.0).reshape(3, 2)))
    tensor([[4., 5.],
            [0., 1.]])
    """
    n = _shape(weight)[0]
    if dtype_of(indices).kind not in "iu":
        raise user_error(TypeError, "embedding", f"indices must be integers, got dtype {dtype_of(indices)}", indices)
    if is_symbolic(indices):  # values known only when the graph runs: a node checks them then (a gather follows)
        if n is None:
            raise user_error(ValueError, "embedding", "the number of rows of the weight must be known when the graph "
                             "is built", weight)
        return getitem(weight, apply(ROW_INDICES, (indices,), {"rows": int(n)}))
    idx = indices
    while isinstance(idx, Tensor) and idx._level:  # vmap's mapped indices: every example's values, checked at once
        idx = idx._value
    idx = _values(idx)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise user_error(IndexError, "embedding", f"indices must be in [0, {n - 1}], got values from {idx.min()} to "
                         f"{idx.max()}", idx, weight)
    return getitem(weight, indices if isinstance(indices, Tensor) and indices._level else idx)


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


def _real_softmax(input, dtype, where):
    """PyTorch computes softmax and log_softmax in real dtypes only ("not implemented for 'ComplexDouble'"):
    a complex one is refused, naming the function and the dtype (a result would be silently another
    function's: `dg.softmax` computes SciPy's complex softmax)."""
    computed = dtype_of(input) if dtype is None else np.dtype(dtype)
    if computed.kind == "c":
        raise user_error(TypeError, where, f"is computed for real dtypes only, as PyTorch's, got dtype {computed} "
                         f"(dg.{where} computes it for complex values, as scipy.special.{where})", input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`, as `torch.nn.functional.softmax` (cast to `dtype` first when given);
    a complex dtype is refused, as PyTorch refuses it.

    >>> import dagrad as dg
    >>> softmax(dg.tensor([[0.0, 0.0], [0.0, 1000.0]]), dim=1)
    tensor([[0.5, 0.5],
            [0. , 1. ]])
    """
    _real_softmax(input, dtype, "softmax")
    dim = _softmax_dim(input, dim, "softmax", _stacklevel)
    return _softmax_op(input if dtype is None else astype(input, dtype), axis=dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along `dim`, as `torch.nn.functional.log_softmax` (cast to `dtype` first when given);
    a complex dtype is refused, as PyTorch refuses it.

    >>> import dagrad as dg
    >>> log_softmax(dg.tensor([0.0, 0.0]), dim=0).numpy().round(4)
    array([-0.6931, -0.6931])
    """
    _real_softmax(input, dtype, "log_softmax")
    dim = _softmax_dim(input, dim, "log_softmax", _stacklevel)
    return _log_softmax_op(input if dtype is None else astype(input, dtype), axis=dim)


# -- attention
def _concrete(x):
    """x's values as a NumPy array when it has values (an array or an eager Tensor), else None."""
    return None if is_symbolic(x) else _values(x)


def mask_bias(mask, keep, dtype, name, layer, *operands):
    """An attention mask as the float bias added to the scores: a bool mask gives 0 where `keep` (True: attend,
    as F.scaled_dot_product_attention reads it; False: MultiheadAttention's, True there masks) and -inf elsewhere;
    a float mask is the bias itself. A NumPy array when the mask has values, else graph nodes."""
    kind = dtype_of(mask).kind
    if kind not in "bf":
        raise user_error(TypeError, layer, f"{name} must be a bool or floating-point mask, got dtype "
                         f"{dtype_of(mask)}", *operands)
    if kind == "f":
        return mask.astype(dtype, copy=False) if isinstance(mask, np.ndarray) else mask
    kept, dropped = (0.0, -math.inf) if keep else (-math.inf, 0.0)
    values = _concrete(mask)
    if values is None:
        return astype(where(mask, kept, dropped), dtype)
    return np.where(values, kept, dropped).astype(dtype)


def attention(q, k, v, bias, dropout_p, scale, generator=None):
    """(softmax(q k^T scale + bias) v, the softmax): the core of scaled dot-product attention. A query whose keys
    are all masked (its bias all -inf) gets the weights 0, as PyTorch's scaled_dot_product_attention gives
    (since 2.5), not NaN."""
    scores = matmul(q * scale, swapaxes(k, -1, -2))
    dead = None
    if bias is not None:
        scores = scores + bias
        values = _concrete(bias)
        if values is None or (isinstance(bias, Tensor) and bias.requires_grad):
            dead = equal(_max(stop_gradient(scores), axis=-1, keepdims=True), -math.inf)
        elif values.dtype.kind == "f" and np.isneginf(values).any():
            rows = np.isneginf(values).all(axis=-1, keepdims=True)  # a constant: which rows are dead
            dead = rows if rows.any() else None
    if dead is None:
        weights = _softmax_op(scores, axis=-1)
    else:  # softmax of a finite stand-in, so that no NaN reaches the gradient
        weights = where(dead, 0.0, _softmax_op(where(dead, 0.0, scores), axis=-1))
    if dropout_p:
        weights = dropout(weights, dropout_p, True, generator)
    return matmul(weights, v), weights


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, generator=None):
    """softmax(query key^T * scale + bias) value, as `torch.nn.functional.scaled_dot_product_attention`: query
    (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev); `scale` defaults to 1/sqrt(E).

    `attn_mask` broadcasts to (..., L, S): bool (True: the query attends to the key) or float (added to the
    scores). `is_causal`: each query attends to the keys up to its own position (the top-left triangle; not with
    `attn_mask`). A query whose keys are all masked gets zeros. `dropout_p` drops attention weights
    always (as PyTorch's function, which has no training flag), drawing from `generator`. `enable_gqa`: key and
    value may have fewer heads (axis -3) than query, each shared by a group of query heads.

    >>> import dagrad as dg, numpy as np
    >>> q = k = v = np.eye(2)[None]          # (1, 2, 2)
    >>> scaled_dot_product_attention(q, k, v, is_causal=True).round(4)
    array([[[1.    , 0.    ],
            [0.3302, 0.6698]]])
    """
    name = "scaled_dot_product_attention"
    qs, ks, vs = _shape(query), _shape(key), _shape(value)
    if min(len(qs), len(ks), len(vs)) < 2:
        raise user_error(ValueError, name, f"query, key and value must have at least 2 dimensions (..., L, E), got "
                         f"shapes {qs}, {ks} and {vs}", query, key, value)
    for label, t in (("query", query), ("key", key), ("value", value)):
        if dtype_of(t).kind != "f":
            raise user_error(TypeError, name, f"{label} must be floating point, got dtype {dtype_of(t)}", t)
    if not _fits((qs[-1],), (ks[-1],)) or not _fits((ks[-2],), (vs[-2],)):
        raise user_error(ValueError, name, f"expected query (..., L, E), key (..., S, E) and value (..., S, Ev), got "
                         f"shapes {qs}, {ks} and {vs}", query, key, value)
    _probability(dropout_p, "dropout_p", name, query)
    if enable_gqa:
        if min(len(qs), len(ks), len(vs)) < 3 or None in (qs[-3], ks[-3], vs[-3]) or ks[-3] != vs[-3] or (
                ks[-3] == 0 or qs[-3] % ks[-3]):
            raise user_error(ValueError, name, f"enable_gqa needs heads on axis -3, the key's and value's a divisor "
                             f"of the query's, got shapes {qs}, {ks} and {vs}", query, key, value)
        key, value = repeat(key, qs[-3] // ks[-3], axis=-3), repeat(value, qs[-3] // vs[-3], axis=-3)
        ks, vs = _shape(key), _shape(value)
    try:
        batch = broadcast_shapes(qs[:-2], ks[:-2], vs[:-2])
    except ValueError:
        raise user_error(ValueError, name, f"the batch axes of query, key and value do not broadcast: shapes {qs}, "
                         f"{ks} and {vs}", query, key, value) from None
    steps, keys = qs[-2], ks[-2]
    dtype = np.result_type(dtype_of(query), dtype_of(key))
    bias = None
    if is_causal and attn_mask is not None:
        raise user_error(ValueError, name, "attn_mask and is_causal=True both given: pass one mask (as PyTorch, "
                         "which refuses both)", query)
    if is_causal:
        bias = np.where(np.tri(steps, keys, dtype=bool), 0.0, -math.inf).astype(dtype)
    if attn_mask is not None:
        ms = _shape(attn_mask)
        try:
            fits = tuple(broadcast_shapes(ms, (*batch, steps, keys))) == (*batch, steps, keys)
        except ValueError:
            fits = False
        if not fits:
            raise user_error(ValueError, name, f"attn_mask of shape {ms} does not broadcast to the scores' shape "
                             f"{(*batch, steps, keys)}", attn_mask, query)
        bias = mask_bias(attn_mask, True, dtype, "attn_mask", name, attn_mask)
    if scale is None:
        scale = 1.0 / math.sqrt(qs[-1]) if qs[-1] else 1.0
    elif not _is_real(scale):
        raise user_error(TypeError, name, f"scale must be a number, got {scale!r}")
    return attention(query, key, value, bias, dropout_p, scale, generator)[0]


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
