"""`dagrad demo [--out DIR]` (also `python -m dagrad demo`): train a CNN and an MLP on the
8x8 digits (see dagrad/demo.py); `dagrad demo text`: a character-level Transformer and an LSTM on
dagrad's docs (dagrad/demo_text.py); `dagrad tour`: a short tour of the autodiff API."""

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
    demo = sub.add_parser("demo", help="train a CNN and an MLP on the 8x8 digits and write the results "
                          "(`dagrad demo text`: a Transformer and an LSTM on text)")
    # the digits demo's options; None when not given, so that they are not mistaken for the text demo's
    demo.add_argument("--out", metavar="DIR", help="output folder (default: ./dagrad-demo)")
    demo.add_argument("--epochs", type=int, nargs=2, metavar=("CNN", "MLP"),
                      help="training epochs of the CNN and of the MLP (default: 30 30)")
    demos = demo.add_subparsers(dest="demo", metavar="{text}")
    text = demos.add_parser("text", help="train a character-level Transformer and an LSTM on dagrad's docs, "
                            "print samples and write the results")
    # defaults None: run()'s own apply
    text.add_argument("--out", dest="text_out", metavar="DIR", help="output folder (default: ./dagrad-demo-text)")
    text.add_argument("--epochs", dest="text_epochs", type=int, nargs=2, metavar=("TRANSFORMER", "LSTM"),
                      help="training epochs of the Transformer and of the LSTM (default: 4 3)")
    text.add_argument("--steps", type=int, help="train each model this many steps instead (a quick run)")
    text.add_argument("--seed", type=int, help="seed of the weights, the batches and the samples (default: 0)")
    text.add_argument("--device", help="cpu (the default) or cuda")
    text.add_argument("--prompt", help="what the samples start from (default: 'The gradient of ')")
    text.add_argument("--temperature", type=float, help="of the samples (default: 0.8)")
    sub.add_parser("tour", help="a short tour of eager autodiff and the transforms")
    args = parser.parse_args(argv)
    if args.command == "demo" and args.demo == "text":
        return _text_demo(args, text, demo)
    if args.command == "demo":
        from .demo import run

        run(args.out or "dagrad-demo", tuple(args.epochs or (30, 30)))
        return 0
    if args.command == "tour":
        tour()
        return 0
    parser.print_help()
    return 1


def _text_demo(args, text, demo) -> int:
    from .demo_text import problem, run

    if args.out is not None or args.epochs is not None:
        demo.error("the text demo's options go after `text`: dagrad demo text --out DIR --epochs T L")
    given = {"epochs": args.text_epochs and tuple(args.text_epochs), "steps": args.steps, "device": args.device,
             "prompt": args.prompt, "temperature": args.temperature, "seed": args.seed}
    given = {name: value for name, value in given.items() if value is not None}
    why = problem(**given)
    if why:
        text.error(why[1])
    run(**given, **({} if args.text_out is None else {"out": args.text_out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
