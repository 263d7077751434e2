"""Linear algebra."""

from __future__ import annotations

import numpy as np

from .._core.op import defop
from .._core.shapes import broadcast_shapes
from .shape import expand_dims, squeeze, swapaxes


def _ndim(x):
    try:
        return len(x.shape)
    except AttributeError:
        return np.ndim(x)


def _matmul_shape(a, b):
    if not a or not b:
        raise ValueError("matmul: inputs must have at least one dimension, got a 0-d input")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    k1, k2 = a2[-1], b2[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"matmul: inner dimensions differ: {tuple(a)} @ {tuple(b)}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul_vjp_a(g, out, a, b):
    if _ndim(b) == 1:
        return g * b if _ndim(a) == 1 else expand_dims(g, -1) * b
    if _ndim(a) == 1:
        return squeeze(matmul(b, expand_dims(g, -1)), -1)  # batch axes are summed by the engine
    return matmul(g, swapaxes(b, -1, -2))


def _matmul_vjp_b(g, out, a, b):
    if _ndim(a) == 1:
        return g * a if _ndim(b) == 1 else expand_dims(a, -1) * expand_dims(g, -2)
    if _ndim(b) == 1:
        return squeeze(matmul(expand_dims(g, -2), a), -2)
    return matmul(swapaxes(a, -1, -2), g)


matmul = defop(
    "matmul",
    np.matmul,
    vjp=(_matmul_vjp_a, _matmul_vjp_b),
    jvp=(lambda t, out, a, b: matmul(t, b), lambda t, out, a, b: matmul(a, t)),
    shape=_matmul_shape,
    nargs=2,
).function
