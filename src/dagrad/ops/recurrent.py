"""The cells of the recurrent layers as primitives: `lstm_cell` and `gru_cell`, the gate arithmetic of one
time step after its two matrix products (PyTorch's gate order and formulas).

Why primitives: a recurrent layer repeats its cell once per time step, so what the cell costs in nodes is
paid sequence length times over. As a composite (gate slices, three sigmoids, two tanh, products and sums)
an LSTM step is a dozen nodes forward and as many backward; as one node it is one forward call and one
joint backward rule, which is what makes an eager LSTM as fast as PyTorch's (docs/nn.md has the figures).

Each cell takes the input's projection `gx` and the hidden state's `gh` (the matrix products, made by the
caller) and optional biases `bx` and `bh` (None: absent), all broadcasting over the leading axes; the
gates are the last axis. The rules recompute the gates from the inputs rather than saving them, and are
written with dagrad's functions, so the same rules serve a plain backward, create_graph and every order;
a plain first-order backward (NumPy values) runs them on NumPy directly.
"""

from __future__ import annotations

import numpy as np

from .._core import batching
from .._core.op import apply, defop, public
from .._core.shapes import broadcast_shapes
from .elementwise import sigmoid, tanh
from .shape import concatenate

__all__ = ["lstm_cell", "gru_cell"]


def _np_sigmoid(x):
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for x < -709 (float64): 1 / inf is the 0 wanted
        return 1.0 / (1.0 + np.exp(-x))


# the functions the rules compute with: NumPy's on NumPy values (a first-order backward), dagrad's otherwise
_NUMPY = (_np_sigmoid, np.tanh, np.concatenate)
_DAGRAD = (sigmoid, tanh, concatenate)


def _plain(*values):
    return all(v is None or type(v) is np.ndarray for v in values)


def _floating(name):
    """The dtype rule of a cell: NumPy's promotion of its inputs, which must all be floating point (a cell
    of integers or complex numbers has no meaning for a recurrent layer)."""

    def rule(*dtypes, **attrs):
        for d in dtypes:
            if d is not None and d is not float and (isinstance(d, type) or np.dtype(d).kind != "f"):
                shown = d.__name__ if isinstance(d, type) else np.dtype(d)
                raise TypeError(f"{name} computes on real floating-point values, got {shown}")
        return np.result_type(*[0.0 if d is float else d for d in dtypes if d is not None])

    return rule


def _check_floating(name, *values):
    """Eager mode refuses what the dtype rule refuses in a graph."""
    for v in values:
        if v is not None:
            dtype = v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype
            if dtype.kind != "f":
                raise TypeError(f"{name} computes on real floating-point values, got dtype {dtype}")


def _preactivation(gx, gh, bx, bh):
    z = gx + gh
    for b in (bx, bh):
        if b is not None:
            z = z + b
    return z


def _cell_shape(name, gates, outputs):
    """The shape rule of a cell with `gates` gates per unit: (..., gates * H) inputs, state (..., H), output
    (..., outputs * H)."""

    def rule(gx, gh, state, bx, bh):
        lead = broadcast_shapes(*(s[:-1] for s in (gx, gh, bx, bh) if s is not None and len(s)), state[:-1])
        h = state[-1] if len(state) else None
        for s in (gx, gh, bx, bh):
            if s is not None and len(s) and s[-1] is not None and h is not None and s[-1] != gates * h:
                raise ValueError(f"{name}: the gates' last axis must be {gates} x the state's ({gates * h}), "
                                 f"got {s[-1]}")
        return tuple(lead) + ((None if h is None else outputs * h),)

    return rule


# -- LSTM: i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the gates; c' = f c + i g; h' = o tanh(c').
# The output packs h' and c' along the last axis: (..., 2H).
def _lstm_forward(gx, gh, c, bx, bh):
    _check_floating("lstm_cell", gx, gh, c, bx, bh)
    z = _preactivation(gx, gh, bx, bh)
    n = c.shape[-1]
    i, f = _np_sigmoid(z[..., :n]), _np_sigmoid(z[..., n:2 * n])
    g, o = np.tanh(z[..., 2 * n:3 * n]), _np_sigmoid(z[..., 3 * n:])
    c_new = f * c + i * g
    return np.concatenate([o * np.tanh(c_new), c_new], axis=-1)


def _lstm_gates(fns, gx, gh, c, bx, bh):
    sig, th, _ = fns
    z = _preactivation(gx, gh, bx, bh)
    n = (c.shape if hasattr(c, "shape") else np.shape(c))[-1]
    return sig(z[..., :n]), sig(z[..., n:2 * n]), th(z[..., 2 * n:3 * n]), sig(z[..., 3 * n:]), n


def _lstm_vjp(g, out, gx, gh, c, bx, bh):
    fns = _NUMPY if _plain(g, out, gx, gh, c, bx, bh) else _DAGRAD
    i, f, gg, o, n = _lstm_gates(fns, gx, gh, c, bx, bh)
    # c' again rather than read from `out`: a gradient traced into a graph (a scan's backward) then needs no
    # forward of the cell, and drops it
    tc = fns[1](f * c + i * gg)
    g_h, g_c = g[..., :n], g[..., n:]
    dc = g_c + g_h * o * (1 - tc * tc)
    dz = fns[2]([dc * gg * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - gg * gg), g_h * tc * o * (1 - o)],
                axis=-1)
    return dz, dz, dc * f, None if bx is None else dz, None if bh is None else dz


def _lstm_jvp(tangents, out, gx, gh, c, bx, bh):
    i, f, gg, o, n = _lstm_gates(_DAGRAD, gx, gh, c, bx, bh)
    t_gx, t_gh, t_c, t_bx, t_bh = tangents
    parts = [t for t in (t_gx, t_gh, t_bx, t_bh) if t is not None]
    tc = tanh(f * c + i * gg)
    if parts:
        tz = parts[0]
        for t in parts[1:]:
            tz = tz + t
        t_c_new = (tz[..., n:2 * n] * f * (1 - f)) * c + (tz[..., :n] * i * (1 - i)) * gg + i * (
            tz[..., 2 * n:3 * n] * (1 - gg * gg))
        t_o = tz[..., 3 * n:] * o * (1 - o)
    else:
        t_c_new = t_o = None
    if t_c is not None:
        t_c_new = f * t_c if t_c_new is None else t_c_new + f * t_c
    t_h = o * (1 - tc * tc) * t_c_new
    if t_o is not None:
        t_h = t_h + t_o * tc
    return concatenate([t_h, t_c_new], axis=-1)


_lstm = defop("lstm_cell", _lstm_forward, vjp=_lstm_vjp, jvp=_lstm_jvp, shape=_cell_shape("lstm_cell", 4, 2),
              dtype=_floating("lstm_cell"), batch=batching.elementwise)


@public(_lstm)
def lstm_cell(gx, gh, c, bx=None, bh=None):
    """One LSTM step after its matrix products, as PyTorch's: gates `gx + gh + bx + bh` of shape (..., 4H) in
    the order (input, forget, cell, output), the cell state `c` (..., H); returns h' and c' packed as
    (..., 2H).

    >>> import numpy as np
    >>> out = lstm_cell(np.zeros((1, 4)), np.zeros((1, 4)), np.ones((1, 1)))
    >>> out.round(4)   # h' = 0.5 tanh(0.5), c' = 0.5 * 1 + 0.5 * tanh(0)
    array([[0.2311, 0.5   ]])
    """
    return apply(_lstm, (gx, gh, c, bx, bh))


# -- GRU: r, z = sigmoid of their gates; n = tanh(a_n + r b_n) with a = gx + bx, b = gh + bh;
# h' = (1 - z) n + z h.
def _gru_forward(gx, gh, h, bx, bh):
    _check_floating("gru_cell", gx, gh, h, bx, bh)
    a = gx if bx is None else gx + bx
    b = gh if bh is None else gh + bh
    n = h.shape[-1]
    r, z = _np_sigmoid(a[..., :n] + b[..., :n]), _np_sigmoid(a[..., n:2 * n] + b[..., n:2 * n])
    new = np.tanh(a[..., 2 * n:] + r * b[..., 2 * n:])
    return new + z * (h - new)


def _gru_gates(fns, gx, gh, h, bx, bh):
    sig, th, _ = fns
    a = gx if bx is None else gx + bx
    b = gh if bh is None else gh + bh
    n = (h.shape if hasattr(h, "shape") else np.shape(h))[-1]
    r, z = sig(a[..., :n] + b[..., :n]), sig(a[..., n:2 * n] + b[..., n:2 * n])
    return r, z, th(a[..., 2 * n:] + r * b[..., 2 * n:]), b[..., 2 * n:], n


def _gru_vjp(g, out, gx, gh, h, bx, bh):
    fns = _NUMPY if _plain(g, out, gx, gh, h, bx, bh) else _DAGRAD
    r, z, new, b_n, n = _gru_gates(fns, gx, gh, h, bx, bh)
    d_new = g * (1 - z) * (1 - new * new)
    d_r = d_new * b_n * r * (1 - r)
    d_z = g * (h - new) * z * (1 - z)
    d_a = fns[2]([d_r, d_z, d_new], axis=-1)
    d_b = fns[2]([d_r, d_z, d_new * r], axis=-1)
    return d_a, d_b, g * z, None if bx is None else d_a, None if bh is None else d_b


def _gru_jvp(tangents, out, gx, gh, h, bx, bh):
    r, z, new, b_n, n = _gru_gates(_DAGRAD, gx, gh, h, bx, bh)
    t_gx, t_gh, t_h, t_bx, t_bh = tangents

    def total(*ts):
        ts = [t for t in ts if t is not None]
        if not ts:
            return None
        s = ts[0]
        for t in ts[1:]:
            s = s + t
        return s

    t_a, t_b = total(t_gx, t_bx), total(t_gh, t_bh)
    t_out = None if t_h is None else z * t_h
    pre = total(None if t_a is None else t_a[..., :2 * n], None if t_b is None else t_b[..., :2 * n])
    t_n_pre = None if t_a is None else t_a[..., 2 * n:]
    if pre is not None:
        t_r = pre[..., :n] * r * (1 - r)
        t_z = pre[..., n:] * z * (1 - z)
        t_n_pre = total(t_n_pre, t_r * b_n)
        t_out = total(t_out, t_z * (h - new))
    if t_b is not None:
        t_n_pre = total(t_n_pre, r * t_b[..., 2 * n:])
    if t_n_pre is not None:
        t_out = total(t_out, (1 - z) * (1 - new * new) * t_n_pre)
    return t_out


_gru = defop("gru_cell", _gru_forward, vjp=_gru_vjp, jvp=_gru_jvp, shape=_cell_shape("gru_cell", 3, 1),
             dtype=_floating("gru_cell"), batch=batching.elementwise)


@public(_gru)
def gru_cell(gx, gh, h, bx=None, bh=None):
    """One GRU step after its matrix products, as PyTorch's: `gx + bx` and `gh + bh` of shape (..., 3H) in the
    order (reset, update, new), the hidden state `h` (..., H); returns h' (..., H).

    >>> import numpy as np
    >>> gru_cell(np.zeros((1, 3)), np.zeros((1, 3)), np.ones((1, 1)))   # z = 0.5, n = 0: h' = 0.5
    array([[0.5]])
    """
    return apply(_gru, (gx, gh, h, bx, bh))
