"""The cells of the recurrent layers as primitives: `lstm_cell` and `gru_cell`, the gate arithmetic of one
time step after its two matrix products (PyTorch's gate order and formulas).

Why primitives: a recurrent layer repeats its cell once per time step, so what the cell costs in nodes is
paid sequence length times over. As a composite (gate slices, three sigmoids, two tanh, products and sums)
an LSTM step is a dozen nodes forward and as many backward; as one node it is one forward call and one
joint backward rule (docs/nn.md has the figures).

Each cell takes the input's projection `gx` and the hidden state's `gh` (the matrix products, made by the
caller) and optional biases `bx` and `bh` (None: absent), all broadcasting over the leading axes; the
gates are the last axis. The output carries the activated gates beside the new state, so the rules need no
activation again; they are written with dagrad's functions, so the same rules serve a plain backward,
create_graph and every order, and give the same bits eagerly and compiled.
"""

from __future__ import annotations

import numpy as np

from .._core import batching
from .._core.op import apply, defop, public
from .._core.shapes import broadcast_shapes
from .elementwise import tanh
from .shape import concatenate

__all__ = ["lstm_cell", "gru_cell"]


def _np_sigmoid(x):
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for x < -709 (float64): 1 / inf is the 0 wanted
        return 1.0 / (1.0 + np.exp(-x))


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
# The output packs h', c' and the activated gates along the last axis, (..., 6H): the rules read the gates there
# instead of computing four activations again (so the backward is products only, the same NumPy calls in the
# same order whether it runs on NumPy values or is traced into a graph: the same bits eagerly and compiled).
def _total(*ts):
    """The sum of the tangents given (None: no tangent)."""
    ts = [t for t in ts if t is not None]
    if not ts:
        return None
    s = ts[0]
    for t in ts[1:]:
        s = s + t
    return s


def _lstm_forward(gx, gh, c, bx, bh):
    _check_floating("lstm_cell", gx, gh, c, bx, bh)
    z = _preactivation(gx, gh, bx, bh)
    n = c.shape[-1]
    i, f = _np_sigmoid(z[..., :n]), _np_sigmoid(z[..., n:2 * n])
    g, o = np.tanh(z[..., 2 * n:3 * n]), _np_sigmoid(z[..., 3 * n:])
    c_new = f * c + i * g
    # broadcast: the gates may have fewer leading axes than the state
    return np.concatenate(np.broadcast_arrays(o * np.tanh(c_new), c_new, i, f, g, o), axis=-1)


def _lstm_parts(out, c):
    n = (c.shape if hasattr(c, "shape") else np.shape(c))[-1]
    return n, out[..., n:2 * n], out[..., 2 * n:3 * n], out[..., 3 * n:4 * n], out[..., 4 * n:5 * n], out[..., 5 * n:]


def _lstm_vjp(g, out, gx, gh, c, bx, bh):
    n, c_new, i, f, gg, o = _lstm_parts(out, c)
    tc = tanh(c_new)
    g_h, g_c = g[..., :n], g[..., n:2 * n]
    dc = g_c + g_h * o * (1 - tc * tc)
    # each gate's cotangent: through c' and h', and its own slot of the output
    d_i, d_f = dc * gg + g[..., 2 * n:3 * n], dc * c + g[..., 3 * n:4 * n]
    d_g, d_o = dc * i + g[..., 4 * n:5 * n], g_h * tc + g[..., 5 * n:]
    dz = concatenate([d_i * i * (1 - i), d_f * f * (1 - f), d_g * (1 - gg * gg), d_o * o * (1 - o)], axis=-1)
    return dz, dz, dc * f, None if bx is None else dz, None if bh is None else dz


def _lstm_jvp(tangents, out, gx, gh, c, bx, bh):
    n, c_new, i, f, gg, o = _lstm_parts(out, c)
    t_gx, t_gh, t_c, t_bx, t_bh = tangents
    tz = _total(t_gx, t_gh, t_bx, t_bh)
    if tz is None:  # only c has a tangent: no gate moves
        t_c_new = f * t_c
        t_h = o * (1 - tanh(c_new) ** 2) * t_c_new
        return concatenate([t_h, t_c_new, 0 * out[..., 2 * n:]], axis=-1)
    t_i, t_f = tz[..., :n] * i * (1 - i), tz[..., n:2 * n] * f * (1 - f)
    t_g, t_o = tz[..., 2 * n:3 * n] * (1 - gg * gg), tz[..., 3 * n:] * o * (1 - o)
    t_c_new = _total(t_f * c, f * t_c if t_c is not None else None, t_i * gg, i * t_g)
    tc = tanh(c_new)
    t_h = t_o * tc + o * (1 - tc * tc) * t_c_new
    return concatenate([t_h, t_c_new, t_i, t_f, t_g, t_o], axis=-1)


_lstm = defop("lstm_cell", _lstm_forward, vjp=_lstm_vjp, jvp=_lstm_jvp, shape=_cell_shape("lstm_cell", 4, 6),
              dtype=_floating("lstm_cell"), batch=batching.elementwise)


@public(_lstm)
def lstm_cell(gx, gh, c, bx=None, bh=None):
    """One LSTM step after its matrix products, as PyTorch's: gates `gx + gh + bx + bh` of shape (..., 4H) in
    the order (input, forget, cell, output), the cell state `c` (..., H); returns h', c' and the activated gates
    i, f, g, o packed as (..., 6H) (the gates are what its backward reads).

    >>> import numpy as np
    >>> out = lstm_cell(np.zeros((1, 4)), np.zeros((1, 4)), np.ones((1, 1)))
    >>> out.round(4)   # h' = 0.5 tanh(0.5), c' = 0.5 * 1 + 0.5 * tanh(0); i, f, g, o = 0.5, 0.5, 0, 0.5
    array([[0.2311, 0.5   , 0.5   , 0.5   , 0.    , 0.5   ]])
    """
    return apply(_lstm, (gx, gh, c, bx, bh))


# -- GRU: r, z = sigmoid of their gates; n = tanh(a_n + r b_n) with a = gx + bx, b = gh + bh;
# h' = (1 - z) n + z h. The output packs h' and r, z, n, (..., 4H), which the rules read.
def _gru_forward(gx, gh, h, bx, bh):
    _check_floating("gru_cell", gx, gh, h, bx, bh)
    a = gx if bx is None else gx + bx
    b = gh if bh is None else gh + bh
    n = h.shape[-1]
    r, z = _np_sigmoid(a[..., :n] + b[..., :n]), _np_sigmoid(a[..., n:2 * n] + b[..., n:2 * n])
    new = np.tanh(a[..., 2 * n:] + r * b[..., 2 * n:])
    return np.concatenate(np.broadcast_arrays(new + z * (h - new), r, z, new), axis=-1)


def _gru_parts(out, gh, h, bh):
    n = (h.shape if hasattr(h, "shape") else np.shape(h))[-1]
    b_n = gh[..., 2 * n:] if bh is None else gh[..., 2 * n:] + bh[..., 2 * n:]
    return n, out[..., n:2 * n], out[..., 2 * n:3 * n], out[..., 3 * n:], b_n


def _gru_vjp(g, out, gx, gh, h, bx, bh):
    n, r, z, new, b_n = _gru_parts(out, gh, h, bh)
    g_h = g[..., :n]
    d_new = (g_h * (1 - z) + g[..., 3 * n:]) * (1 - new * new)
    d_r = (d_new * b_n + g[..., n:2 * n]) * r * (1 - r)
    d_z = (g_h * (h - new) + g[..., 2 * n:3 * n]) * z * (1 - z)
    d_a = concatenate([d_r, d_z, d_new], axis=-1)
    d_b = concatenate([d_r, d_z, d_new * r], axis=-1)
    return d_a, d_b, g_h * z, None if bx is None else d_a, None if bh is None else d_b


def _gru_jvp(tangents, out, gx, gh, h, bx, bh):
    n, r, z, new, b_n = _gru_parts(out, gh, h, bh)
    t_gx, t_gh, t_h, t_bx, t_bh = tangents
    t_a, t_b = _total(t_gx, t_bx), _total(t_gh, t_bh)
    pre = _total(None if t_a is None else t_a[..., :2 * n], None if t_b is None else t_b[..., :2 * n])
    t_r = t_z = None
    if pre is not None:
        t_r, t_z = pre[..., :n] * r * (1 - r), pre[..., n:] * z * (1 - z)
    t_n_pre = _total(None if t_a is None else t_a[..., 2 * n:], None if t_r is None else t_r * b_n,
                     None if t_b is None else r * t_b[..., 2 * n:])
    t_new = None if t_n_pre is None else (1 - new * new) * t_n_pre
    t_out = _total(None if t_h is None else z * t_h, None if t_z is None else t_z * (h - new),
                   None if t_new is None else (1 - z) * t_new)
    zero = 0 * r
    return concatenate([t_out, zero if t_r is None else t_r, zero if t_z is None else t_z,
                        zero if t_new is None else t_new], axis=-1)


_gru = defop("gru_cell", _gru_forward, vjp=_gru_vjp, jvp=_gru_jvp, shape=_cell_shape("gru_cell", 3, 4),
             dtype=_floating("gru_cell"), batch=batching.elementwise)


@public(_gru)
def gru_cell(gx, gh, h, bx=None, bh=None):
    """One GRU step after its matrix products, as PyTorch's: `gx + bx` and `gh + bh` of shape (..., 3H) in the
    order (reset, update, new), the hidden state `h` (..., H); returns h' and the gates r, z, n packed as
    (..., 4H) (the gates are what its backward reads).

    >>> import numpy as np
    >>> gru_cell(np.zeros((1, 3)), np.zeros((1, 3)), np.ones((1, 1)))   # z = 0.5, n = 0: h' = 0.5
    array([[0.5, 0.5, 0.5, 0. ]])
    """
    return apply(_gru, (gx, gh, h, bx, bh))
