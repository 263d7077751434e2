"""TensorFlow 1's `tf.nn`: activations, losses and dropout over dagrad's ops (`tf.nn.softmax`, ...).

>>> import dagrad.compat.v1 as tf, numpy as np
>>> with tf.Graph().as_default():
...     logits = tf.constant([[2.0, 1.0, 0.1]])
...     loss = tf.nn.softmax_cross_entropy_with_logits(labels=[[1.0, 0.0, 0.0]], logits=logits)
...     with tf.Session() as sess:
...         print(np.round(sess.run(loss), 4))
[0.417]
"""

from __future__ import annotations

from ... import numpy as dnp
from ..._core.errors import missing_name as missing
from ..._core.errors import user_error
from ..._core.ir import Symbol
from ..._core.shapes import dtype_of
from ...nn import functional as F
from ...ops import elementwise as ew
from ...ops import reduce
from ._ops import _axis, _unary, node, uniform_like

relu = _unary(ew.relu, "relu")
sigmoid = _unary(ew.sigmoid, "sigmoid")
tanh = _unary(ew.tanh, "tanh")
softplus = _unary(ew.softplus, "softplus")


@node
def elu(features, name=None):
    return F.elu(features)


@node
def relu6(features, name=None):
    return ew.clip(features, 0, 6)


@node
def leaky_relu(features, alpha=0.2, name=None):
    return F.leaky_relu(features, alpha)


@node
def softmax(logits, axis=None, name=None, dim=None):
    """`tf.nn.softmax(logits, axis=-1)` (TF1's old name for axis: dim)."""
    axis = _axis(axis, dim, "dim", "softmax")
    return dnp.softmax(logits, axis=-1 if axis is None else axis)


@node
def log_softmax(logits, axis=None, name=None, dim=None):
    axis = _axis(axis, dim, "dim", "log_softmax")
    return dnp.log_softmax(logits, axis=-1 if axis is None else axis)


@node
def l2_loss(t, name=None):
    """`tf.nn.l2_loss(t)`: sum(t ** 2) / 2."""
    return reduce.sum(ew.square(t)) / 2


@node
def bias_add(value, bias, data_format=None, name=None):
    if data_format not in (None, "NHWC", "NWC", "NDHWC"):
        raise user_error(ValueError, "bias_add", f"data_format {data_format!r}: only the channels-last formats")
    return value + bias


@node
def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None):
    """`tf.nn.embedding_lookup(params, ids)`: the rows of `params` at `ids` (an integer placeholder too)."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise user_error(TypeError, "embedding_lookup", "sharded params (a list of several) are not supported")
        params = params[0]
    return dnp.take(params, ids, axis=0)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """`tf.nn.dropout(x, keep_prob)` (or `rate=`, the probability to drop): each entry kept with probability
    keep_prob and scaled by 1/keep_prob, a new mask at each run. keep_prob may be a placeholder (fed 0.5 to
    train and 1.0 to evaluate, TF1's habit)."""
    if (keep_prob is None) == (rate is None):
        raise user_error(ValueError, "dropout", "pass one of keep_prob and rate")
    if noise_shape is not None:
        raise user_error(TypeError, "dropout", "noise_shape= is not supported")
    keep = 1 - rate if keep_prob is None else keep_prob
    if not isinstance(keep, Symbol) and not 0 < float(keep) <= 1:
        raise user_error(ValueError, "dropout", f"keep_prob must be in (0, 1], got {float(keep)}")
    mask = ew.astype(ew.less(uniform_like(x, seed), keep), dtype_of(x))
    return x * mask / keep


def _labelled(where, labels, logits):
    if labels is None or logits is None:
        raise user_error(TypeError, where, "needs labels= and logits= (by keyword, as TF1 requires)")


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    """`tf.nn.softmax_cross_entropy_with_logits(labels=..., logits=...)`: per example, -sum(labels *
    log_softmax(logits)); as TF1's, no gradient flows into the labels (the _v2 form's does)."""
    if _sentinel is not None:
        raise user_error(TypeError, "softmax_cross_entropy_with_logits", "call it with named arguments "
                         "(labels=..., logits=...)")
    _labelled("softmax_cross_entropy_with_logits", labels, logits)
    return softmax_cross_entropy_with_logits_v2(ew.stop_gradient(labels), logits, dim if axis is None else axis)


@node
def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """`tf.nn.softmax_cross_entropy_with_logits_v2(labels, logits)`: per example, -sum(labels *
    log_softmax(logits)), differentiable in both."""
    axis = _axis(axis, dim, "dim", "softmax_cross_entropy_with_logits_v2")
    axis = -1 if axis is None else axis
    return -reduce.sum(labels * dnp.log_softmax(logits, axis=axis), axis=axis)


@node
def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """`tf.nn.sparse_softmax_cross_entropy_with_logits(labels=..., logits=...)`: per example, -log_softmax(logits)
    at the integer label (labels of shape (N,), logits (N, C))."""
    if _sentinel is not None:
        raise user_error(TypeError, "sparse_softmax_cross_entropy_with_logits", "call it with named arguments "
                         "(labels=..., logits=...)")
    _labelled("sparse_softmax_cross_entropy_with_logits", labels, logits)
    return F.cross_entropy(logits, labels, reduction="none")


@node
def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """`tf.nn.sigmoid_cross_entropy_with_logits(labels=..., logits=...)`: elementwise, softplus(x) - x * z,
    TF1's stable form."""
    if _sentinel is not None:
        raise user_error(TypeError, "sigmoid_cross_entropy_with_logits", "call it with named arguments "
                         "(labels=..., logits=...)")
    _labelled("sigmoid_cross_entropy_with_logits", labels, logits)
    return ew.softplus(logits) - logits * labels


_HINTS = {
    "conv2d": "TF1's layout is NHWC with HWIO filters; dg.nn.functional.conv2d takes NCHW input and OIHW weights "
              "(transpose with tf.transpose(x, [0, 3, 1, 2]))",
    "max_pool": "dg.nn.functional.max_pool2d, on NCHW input",
    "avg_pool": "dg.nn.functional.avg_pool2d, on NCHW input",
    "rnn_cell": "dg.nn.RNN, dg.nn.LSTM, dg.nn.GRU (PyTorch's layers, eager)",
    "dynamic_rnn": "dg.nn.RNN, dg.nn.LSTM, dg.nn.GRU (PyTorch's layers, eager)",
    "batch_normalization": "dg.nn.functional.batch_norm",
    "moments": "tf.reduce_mean and dg.var (population variance, as tf.nn.moments)",
}


def __getattr__(name):
    raise missing(__name__, name, "TensorFlow 1's tf.nn.{}", _HINTS, "TensorFlow 1")


__all__ = ["relu", "relu6", "elu", "leaky_relu", "sigmoid", "tanh", "softplus", "softmax", "log_softmax", "l2_loss",
           "bias_add", "embedding_lookup", "dropout", "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits"]
