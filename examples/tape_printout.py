"""The tape of f(x1, x2) = log(x1) + x1*x2 - sin(x2) at (2, 5), and its gradient.

The classic worked example of reverse-mode automatic differentiation (Griewank and
Walther's book; Baydin et al., "Automatic differentiation in machine learning: a survey",
table 2): the evaluation trace, the graph dagrad recorded while computing it (`dg.listing`),
the backward pass as more nodes of the same kind, and the gradient (5.5, 1.71634).

    python examples/tape_printout.py
"""

from __future__ import annotations

import numpy as np

import dagrad as dg


def main():
    x1 = dg.tensor(2.0, requires_grad=True)
    x2 = dg.tensor(5.0, requires_grad=True)
    # f = log(x1) + x1*x2 - sin(x2), one intermediate per line (the order Python evaluates the one-liner in)
    v1 = dg.log(x1)
    v2 = x1 * x2
    v3 = v1 + v2
    v4 = dg.sin(x2)
    f = v3 - v4

    print("evaluation trace (the values of the listing's nodes %0 to %6):")
    for label, name, value in [("%0", "x1", x1), ("%1", "x2", x2), ("%2", "log(x1)", v1), ("%3", "x1*x2", v2),
                               ("%4", "%2 + %3", v3), ("%5", "sin(x2)", v4), ("%6", "f = %4 - %5", f)]:
        print(f"  {label:>3} = {name:<12} = {value.item():9.5f}")

    print("\nthe tape: dg.listing(f)")
    print(dg.listing(f))

    print("\nwith the backward pass: dg.listing(f, backward=True)")
    print(dg.listing(f, backward=True))  # builds the gradient's graph on a copy: f's graph and .grad stay as they are

    f.backward()
    print(f"\ndf/dx1 = 1/x1 + x2    = {x1.grad.item():.5f}")
    print(f"df/dx2 = x1 - cos(x2) = {x2.grad.item():.5f}")
    assert np.isclose(x1.grad.item(), 1 / 2 + 5) and np.isclose(x2.grad.item(), 2 - np.cos(5))
    return f.item(), x1.grad.item(), x2.grad.item()


if __name__ == "__main__":
    main()
