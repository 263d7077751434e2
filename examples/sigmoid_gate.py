"""A gate as a custom op: the sigmoid written by hand with dg.Function, as the classic
computational-graph lectures do (a "gate" knows its local forward and backward), then
checked against dagrad's own sigmoid and by central differences, first and second order.

    python examples/sigmoid_gate.py
"""

from __future__ import annotations

import numpy as np

import dagrad as dg


class SigmoidGate(dg.Function):
    """sigma(x) = 1 / (1 + e^-x); its local gradient is sigma * (1 - sigma)."""

    @staticmethod
    def forward(ctx, x):
        out = 1.0 / (1.0 + np.exp(-x))
        ctx.save_for_backward(out)  # the output is all the backward pass needs
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out * (1.0 - out)  # plain operators: differentiated again for higher orders


def neuron(w, x):
    """The lecture's 2-input neuron: sigma(w0*x0 + w1*x1 + w2)."""
    return SigmoidGate.apply(w[0] * x[0] + w[1] * x[1] + w[2])


def main():
    w = np.array([2.0, -3.0, -3.0])
    x = np.array([-1.0, -2.0])
    value = neuron(w, x)
    dw = dg.grad(neuron)(w, x)
    dx = dg.grad(neuron, argnums=1)(w, x)
    print(f"f = {float(value):.5f}")  # 0.73106
    print("df/dw =", np.round(dw, 5))  # [-0.19661 -0.39322  0.19661]
    print("df/dx =", np.round(dx, 5))  # [ 0.39322 -0.58984]
    np.testing.assert_allclose(dw, dg.grad(lambda w: dg.sigmoid(w[0] * x[0] + w[1] * x[1] + w[2]))(w))
    assert dg.gradcheck(lambda w: neuron(w, x), w, order=2)  # reverse and forward mode, 1st and 2nd order
    return value, dw, dx


if __name__ == "__main__":
    main()
