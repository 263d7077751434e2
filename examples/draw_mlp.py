"""Draws a small MLP's graph, forward and with its gradient computation, as SVG files.

    python examples/draw_mlp.py [output folder]      # default: docs/img

Writes mlp_graph.svg (the forward graph of the loss) and mlp_backward.svg (the same with the
backward pass that `loss.backward()` would run), and prints the listing. docs/inspecting.md
shows the pictures this makes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import dagrad as dg

DEFAULT_FOLDER = Path(__file__).resolve().parent.parent / "docs" / "img"


def mlp_loss(seed=0):
    """The mean squared error of a 2-layer MLP (3 -> 4 -> 1, tanh) on a batch of 8."""
    rng = np.random.default_rng(seed)
    x = dg.tensor(rng.normal(size=(8, 3)))  # data: a leaf that needs no gradient
    y = dg.tensor(rng.normal(size=(8, 1)))
    w1 = dg.tensor(rng.normal(size=(3, 4)) * 0.5, requires_grad=True)  # parameters
    b1 = dg.tensor(np.zeros(4), requires_grad=True)
    w2 = dg.tensor(rng.normal(size=(4, 1)) * 0.5, requires_grad=True)
    b2 = dg.tensor(np.zeros(1), requires_grad=True)
    hidden = dg.tanh(x @ w1 + b1)
    prediction = hidden @ w2 + b2
    return dg.mean((prediction - y) ** 2)


def main(folder=DEFAULT_FOLDER):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    loss = mlp_loss()
    forward = dg.draw(loss, folder / "mlp_graph.svg")
    backward = dg.draw(loss, folder / "mlp_backward.svg", backward=True)
    print(dg.listing(loss, backward=True))
    return forward, backward


if __name__ == "__main__":
    for written in main(*sys.argv[1:2]):
        print("wrote", written)
