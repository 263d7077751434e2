"""`MultiheadAttention`, as `torch.nn.MultiheadAttention`: the same arguments, parameters (`in_proj_weight`,
`in_proj_bias`, `out_proj.weight`, ...; `q_proj_weight`, `k_proj_weight`, `v_proj_weight` when `kdim` or `vdim`
differ from `embed_dim`; `bias_k`, `bias_v`), initialisation and masks, so a PyTorch model's weights load as they
are. The attention itself is `functional.attention`, which `F.scaled_dot_product_attention` uses too.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.dtypes import default_float
from .._core.errors import user_error
from .._core.shapes import dtype_of
from ..ops.elementwise import astype
from ..ops.nn import linear
from ..ops.reduce import mean
from ..ops.shape import broadcast_to, concatenate, expand_dims, getitem, reshape, squeeze, swapaxes, transpose
from . import functional as F
from . import init
from .layers import Linear
from .module import Module, Parameter

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size embed_dim / num_heads, as `torch.nn.MultiheadAttention`.

    Inputs are (L, N, E) (`batch_first`: (N, L, E)) or unbatched (L, E); key and value (S, N, kdim / vdim).
    `key_padding_mask` (N, S) and `attn_mask` (L, S) or (N * num_heads, L, S) are bool (True: masked, not attended)
    or float (added to the scores). Returns (output, weights): the weights averaged over the heads (N, L, S), per
    head (N, num_heads, L, S) with `average_attn_weights=False`, or None with `need_weights=False`.

    >>> import dagrad as dg, numpy as np
    >>> mha = dg.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = np.random.default_rng(0).standard_normal((3, 5, 8))
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    ((3, 5, 8), (3, 5, 5))
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, dtype=None, generator=None):
        super().__init__()
        name = "MultiheadAttention"
        embed_dim, num_heads = F._int(embed_dim, "embed_dim", name), F._int(num_heads, "num_heads", name)
        if embed_dim <= 0 or num_heads <= 0:
            raise user_error(ValueError, name, f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise user_error(ValueError, name, f"embed_dim must be divisible by num_heads, got embed_dim={embed_dim} "
                             f"and num_heads={num_heads}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else F._int(kdim, "kdim", name)
        self.vdim = embed_dim if vdim is None else F._int(vdim, "vdim", name)
        if self.kdim <= 0 or self.vdim <= 0:
            raise user_error(ValueError, name, f"kdim and vdim must be greater than 0, got {self.kdim} and {self.vdim}")
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout = F._probability(dropout, "dropout", name)
        self.batch_first = bool(batch_first)
        self.add_zero_attn = bool(add_zero_attn)
        self.generator = generator
        dt = dtype or default_float()
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.zeros((3 * embed_dim, embed_dim), dt))
            for absent in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(absent, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(np.zeros((embed_dim, embed_dim), dt))
            self.k_proj_weight = Parameter(np.zeros((embed_dim, self.kdim), dt))
            self.v_proj_weight = Parameter(np.zeros((embed_dim, self.vdim), dt))
        if bias:
            self.in_proj_bias = Parameter(np.zeros(3 * embed_dim, dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype, generator=generator)
        if add_bias_kv:
            self.bias_k = Parameter(np.zeros((1, 1, embed_dim), dt))
            self.bias_v = Parameter(np.zeros((1, 1, embed_dim), dt))
        else:
            self.bias_k = self.bias_v = None
        self._reset_parameters(generator)

    def _reset_parameters(self, generator=None):
        """PyTorch's: xavier_uniform projections, zero biases, xavier_normal bias_k and bias_v (out_proj's weight
        keeps Linear's initialisation)."""
        generator = generator if generator is not None else self.generator
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w, generator=generator)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        for b in (self.bias_k, self.bias_v):
            if b is not None:
                init.xavier_normal_(b, generator=generator)

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"

    # -- checking the call
    def _check(self, query, key, value, key_padding_mask, attn_mask, is_causal):
        """Whether the input is batched; everything checked before anything is computed."""
        name = "MultiheadAttention"
        qs, ks, vs = F._shape(query), F._shape(key), F._shape(value)
        if len(qs) not in (2, 3) or len(ks) != len(qs) or len(vs) != len(qs):
            raise user_error(ValueError, name, f"expected query, key and value all 3-D (batched) or all 2-D "
                             f"(unbatched), got shapes {qs}, {ks} and {vs}", query, key, value)
        batched = len(qs) == 3
        for label, t, size in (("query", query, self.embed_dim), ("key", key, self.kdim),
                               ("value", value, self.vdim)):
            if F._shape(t)[-1] != size:
                raise F.shape_error(f"{name} ({label})", f"(..., {size})", F._shape(t), t)
            if dtype_of(t).kind != "f":
                raise user_error(TypeError, name, f"{label} must be floating point, got dtype {dtype_of(t)}", t)
        seq_axis = 1 if self.batch_first and batched else 0
        steps, keys = qs[seq_axis], ks[seq_axis]
        batch = (qs[1 - seq_axis],) if batched else ()
        if not F._fits(ks[:-1], vs[:-1]):
            raise user_error(ValueError, name, f"key and value must have the same sequence and batch sizes, got "
                             f"shapes {ks} and {vs}", key, value)
        if batched and not F._fits((ks[1 - seq_axis],), batch):
            raise user_error(ValueError, name, f"query and key must have the same batch size, got shapes {qs} and "
                             f"{ks}", query, key)
        if key_padding_mask is not None:
            self._check_mask(key_padding_mask, "key_padding_mask", [(*batch, keys)])
        if attn_mask is not None:
            heads = (batch[0] * self.num_heads if batched and batch[0] is not None else None,) if batched else (
                self.num_heads,)
            self._check_mask(attn_mask, "attn_mask", [(steps, keys), (*heads, steps, keys)])
        elif is_causal:
            raise user_error(ValueError, name, "is_causal=True is a hint that attn_mask is the causal mask: pass "
                             "the mask too (as PyTorch, which needs it)")
        return batched

    @staticmethod
    def _check_mask(mask, label, shapes):
        ms = F._shape(mask)
        if not any(F._fits(ms, s) for s in shapes):
            raise user_error(ValueError, "MultiheadAttention", f"{label} must have shape "
                             f"{' or '.join(map(str, shapes))}, got {ms}", mask)
        if dtype_of(mask).kind not in "bf":
            raise user_error(TypeError, "MultiheadAttention", f"{label} must be a bool or floating-point mask, got "
                             f"dtype {dtype_of(mask)}", mask)

    # -- running
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = self._check(query, key, value, key_padding_mask, attn_mask, is_causal)
        self_attention = query is key and key is value
        if not batched:  # one sequence: a batch of one
            query, key, value = (expand_dims(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = expand_dims(key_padding_mask, 0)
            if attn_mask is not None and len(F._shape(attn_mask)) == 3:
                attn_mask = expand_dims(attn_mask, 0)  # (1, heads, L, S)
        elif self.batch_first:
            query, key, value = (swapaxes(t, 0, 1) for t in (query, key, value))
        steps, batch, e = F._shape(query)
        heads, hd = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value, self_attention)
        dtype = dtype_of(q)
        bias = self._bias(key_padding_mask, attn_mask, batch, steps, dtype)
        if self.bias_k is not None:  # one more key and value, learnt, for every sequence
            k = concatenate([k, broadcast_to(self.bias_k, (1, batch, e))], axis=0)
            v = concatenate([v, broadcast_to(self.bias_v, (1, batch, e))], axis=0)
            bias = self._pad(bias)

        def split_heads(t):  # (S, N, E) -> (N, heads, S, hd)
            return transpose(reshape(t, (F._shape(t)[0], batch, heads, hd)), (1, 2, 0, 3))

        q, k, v = split_heads(q), split_heads(k), split_heads(v)
        if self.add_zero_attn:  # one more key and value of zeros
            zeros = np.zeros((batch, heads, 1, hd), dtype)
            k, v = concatenate([k, zeros], axis=2), concatenate([v, zeros], axis=2)
            bias = self._pad(bias)
        drop = self.dropout if self.training else 0.0
        out, weights = F.attention(q, k, v, bias, drop, 1.0 / math.sqrt(hd), self.generator)
        out = reshape(transpose(out, (2, 0, 1, 3)), (steps, batch, e))  # (L, N, E)
        out = self.out_proj(out)
        if need_weights:
            weights = mean(weights, axis=1) if average_attn_weights else weights
            if not batched:
                weights = squeeze(weights, 0)
        else:
            weights = None
        if not batched:
            out = squeeze(out, 1)
        elif self.batch_first:
            out = swapaxes(out, 0, 1)
        return out, weights

    def _project(self, query, key, value, self_attention):
        """q, k, v: the input projections (one product when the three are the same tensor, as PyTorch)."""
        e, b = self.embed_dim, self.in_proj_bias
        biases = (None, None, None) if b is None else tuple(getitem(b, slice(i * e, (i + 1) * e)) for i in range(3))
        if self.in_proj_weight is None:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        elif self_attention:
            packed = linear(query, self.in_proj_weight, b)
            return tuple(getitem(packed, (Ellipsis, slice(i * e, (i + 1) * e))) for i in range(3))
        else:
            w = self.in_proj_weight
            weights = tuple(getitem(w, slice(i * e, (i + 1) * e)) for i in range(3))
        return tuple(linear(t, w, bb) for t, w, bb in zip((query, key, value), weights, biases))

    def _bias(self, key_padding_mask, attn_mask, batch, steps, dtype):
        """The masks as one float bias broadcasting to the scores (N, heads, L, S), or None."""
        bias = None
        if attn_mask is not None:
            bias = F.mask_bias(attn_mask, False, dtype, "attn_mask", "MultiheadAttention", attn_mask)
            if len(F._shape(bias)) == 3:  # (N * heads, L, S), batch-major
                bias = reshape(bias, (batch, self.num_heads) + tuple(F._shape(bias)[1:]))
        if key_padding_mask is not None:
            pad = F.mask_bias(key_padding_mask, False, dtype, "key_padding_mask", "MultiheadAttention",
                              key_padding_mask)
            pad = reshape(pad, (batch, 1, 1, F._shape(pad)[-1]))
            bias = pad if bias is None else bias + pad
        return bias if bias is None or isinstance(bias, np.ndarray) else astype(bias, dtype)

    @staticmethod
    def _pad(bias):
        """The bias with a zero for one more key (PyTorch pads its masks so)."""
        if bias is None:
            return None
        shape = F._shape(bias)
        column = np.zeros(shape[:-1] + (1,), dtype_of(bias))
        return concatenate([bias, column], axis=-1)
