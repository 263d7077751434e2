"""`dagrad demo [--out DIR]` (also `python -m dagrad demo`): train a CNN and an MLP on the
8x8 digits (see dagrad/demo.py); `dagrad tour`: a short tour of the autodiff API."""

from __future__ import annotations

import argparse
import sys


def tour() -> None:
    import numpy as np

    import dagrad as dg

    print("dagrad tour: eager autodiff, functional transforms, forward mode\n")
    rng = np.random.default_rng(0)
    true_w = np.array([2.0, -3.0, 0.5])
    X = rng.normal(size=(200, 3))
    y = X @ true_w + 0.1 * rng.normal(size=200)

    print("1. Eager: fit a linear model by gradient descent (PyTorch-style backward)")
    w = dg.tensor(np.zeros(3), requires_grad=True)
    for step in range(101):
        loss = ((dg.tensor(X) @ w - y) ** 2).mean()
        loss.backward()
        with dg.no_grad():
            w = dg.tensor(w.numpy() - 0.1 * w.grad.numpy(), requires_grad=True)
        if step % 25 == 0:
            print(f"   step {step:3d}  loss {loss.item():.5f}")
    print(f"   learned w = {np.round(w.numpy(), 3)}  (true {true_w})\n")

    print("2. Transforms compose: f(x) = sum(tanh(A @ x) ** 2)")
    A = rng.normal(size=(4, 3))

    def f(x):
        return dg.sum(dg.tanh(A @ x) ** 2)

    x0 = np.array([0.1, -0.2, 0.3])
    print("   grad(f)(x0)          =", np.round(dg.grad(f)(x0), 4))
    print("   hessian(f)(x0)[0]    =", np.round(dg.hessian(f)(x0)[0], 4))
    _, tangent = dg.jvp(f, (x0,), (np.ones(3),))
    print(f"   jvp along ones       = {tangent:.4f}  (forward mode)")
    print("   gradcheck(f, order=2):", dg.gradcheck(f, x0, order=2))
    print("\nDone. See README.md and docs/ for more.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="dagrad", description="dagrad command line")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="train a CNN and an MLP on the 8x8 digits and write the results")
    demo.add_argument("--out", default="dagrad-demo", help="output folder (default: ./dagrad-demo)")
    demo.add_argument("--epochs", type=int, nargs=2, metavar=("CNN", "MLP"), default=(30, 30),
                      help="training epochs of the CNN and of the MLP (default: 30 30)")
    sub.add_parser("tour", help="a short tour of eager autodiff and the transforms")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run

        run(args.out, tuple(args.epochs))
        return 0
    if args.command == "tour":
        tour()
        return 0
    parser.print_help()
    return 1


if __name__ == "__main__":
    sys.exit(main())
