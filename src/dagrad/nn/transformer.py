"""`TransformerEncoderLayer` and `TransformerEncoder`, as PyTorch's: the same arguments, sub-modules (so the same
`state_dict` keys: `self_attn.in_proj_weight`, `linear1.weight`, `norm1.bias`, `layers.0. ...`), post- or
pre-norm (`norm_first`), relu, gelu or any callable as the activation, dropout in training only.

PyTorch's inference fast path (nested tensors, fused kernels) is an implementation detail there and is not
reproduced: dagrad always computes what PyTorch's reference path computes, so outputs at padded positions are
computed too (PyTorch's fast path returns zeros there).
"""

from __future__ import annotations

import copy

import numpy as np

from .._core.errors import user_error
from .._core.shapes import dtype_of
from . import functional as F
from .attention import MultiheadAttention
from .layers import Dropout, LayerNorm, Linear, ModuleList
from .module import Module

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and layer normalisation, as
    `torch.nn.TransformerEncoderLayer`: `x = norm1(x + sa(x)); x = norm2(x + ff(x))`, or with `norm_first`
    `x = x + sa(norm1(x)); x = x + ff(norm2(x))`.

    >>> import dagrad as dg, numpy as np
    >>> layer = dg.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(np.zeros((3, 5, 8))).shape
    (3, 5, 8)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, dtype=None, generator=None):
        super().__init__()
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise user_error(ValueError, "TransformerEncoderLayer", f"activation should be relu/gelu, not "
                                 f"{activation!r}")
            activation = _ACTIVATIONS[activation]
        elif not callable(activation):
            raise user_error(TypeError, "TransformerEncoderLayer", f"activation must be 'relu', 'gelu' or a callable, "
                             f"got {type(activation).__name__}")
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype, generator=generator)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype, generator=generator)
        self.dropout = Dropout(dropout, generator=generator)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype, generator=generator)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout, generator=generator)
        self.dropout2 = Dropout(dropout, generator=generator)
        self.activation = activation  # a Module (nn.ReLU()) is registered as a child, as in PyTorch

    @property
    def batch_first(self):
        return self.self_attn.batch_first

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        xs = F._shape(src)
        d = self.self_attn.embed_dim
        if len(xs) not in (2, 3) or xs[-1] != d:
            raise F.shape_error("TransformerEncoderLayer", f"(L, {d}) or ({'N, L' if self.batch_first else 'L, N'}, "
                                f"{d})", xs, src)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` in sequence (`layers.0`, `layers.1`, ...), then `norm` if
    given, as `torch.nn.TransformerEncoder`. `enable_nested_tensor` and `mask_check` (PyTorch's fast path) are
    accepted and change nothing.

    >>> import dagrad as dg, numpy as np
    >>> layer = dg.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    >>> encoder = dg.nn.TransformerEncoder(layer, num_layers=2, norm=dg.nn.LayerNorm(8))
    >>> encoder(np.zeros((5, 3, 8))).shape, encoder.layers[0] is layer
    ((5, 3, 8), False)
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise user_error(TypeError, "TransformerEncoder", f"encoder_layer must be a dg.nn.Module, got "
                             f"{type(encoder_layer).__name__}")
        num_layers = F._int(num_layers, "num_layers", "TransformerEncoder")
        if num_layers < 0:
            raise user_error(ValueError, "TransformerEncoder", f"num_layers must be non-negative, got {num_layers}")
        # the copies draw dropout masks from the generator the layer was given, not from copies of it (copies
        # would repeat each other's masks)
        shared = {id(g): g for m in encoder_layer.modules() for g in (getattr(m, "generator", None),) if g is not None}
        self.layers = ModuleList([copy.deepcopy(encoder_layer, dict(shared)) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        if is_causal is None:  # PyTorch's detection: a hint only, the mask is what is applied
            is_causal = mask is not None and _is_causal_mask(mask, F._shape(src))
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        return out if self.norm is None else self.norm(out)


def _is_causal_mask(mask, src_shape):
    """Whether `mask` (with values) is the causal mask of PyTorch's `generate_square_subsequent_mask` (float -inf
    above the diagonal, 0 elsewhere) or its bool form (True above the diagonal)."""
    values = F._concrete(mask)
    if values is None or values.ndim != 2 or values.shape[0] != values.shape[1]:
        return False
    upper = np.triu(np.ones(values.shape, bool), 1)
    if dtype_of(values).kind == "b":
        return bool((values == upper).all())
    return bool((np.isneginf(values) == upper).all() and (values[~upper] == 0).all())
