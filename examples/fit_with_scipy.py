"""Fit a damped oscillation with scipy.optimize, differentiating NumPy-style code with dagrad.

The model is ordinary NumPy code; only the import changed (`import dagrad.numpy as np`).
`dg.grad(loss)` gives scipy the exact gradient, and a Hessian-vector product by forward
over reverse mode (`dg.jvp` of `dg.grad`) lets scipy's Newton-CG trust-region method use
second-order information without ever forming the Hessian.

Run: python examples/fit_with_scipy.py   (needs scipy: pip install -e ".[examples]")
"""

from __future__ import annotations

import numpy

import dagrad as dg
import dagrad.numpy as np

TRUE_PARAMS = numpy.array([2.0, 0.3, 3.0, 0.5])  # amplitude, damping, angular frequency, phase


def model(params, t):
    amplitude, damping, omega, phase = params[0], params[1], params[2], params[3]
    return amplitude * np.exp(-damping * t) * np.cos(omega * t + phase)


def make_data(n=200, noise=0.05, seed=0):
    rng = numpy.random.default_rng(seed)
    t = numpy.linspace(0.0, 6.0, n)
    y = model(TRUE_PARAMS, t) + noise * rng.standard_normal(n)
    return t, y


def fit(t, y, start=(1.5, 0.2, 2.8, 0.3)):
    try:
        from scipy.optimize import minimize
    except ImportError as err:
        raise SystemExit("this example needs scipy: pip install -e '.[examples]'") from err

    def loss(params):
        residual = model(params, t) - y
        return np.mean(residual**2)

    gradient = dg.grad(loss)

    def hessian_vector_product(params, v):
        return dg.jvp(gradient, (params,), (v,))[1]  # forward over reverse: one pass, no Hessian matrix

    return minimize(loss, numpy.array(start), jac=gradient, hessp=hessian_vector_product, method="trust-ncg")


def main():
    t, y = make_data()
    result = fit(t, y)
    print(f"converged: {result.success} ({result.message})")
    print(f"loss {result.fun:.6f} after {result.nit} iterations: {result.njev} gradients and "
          f"{result.nhev} Hessian-vector products")
    for name, got, true in zip(["amplitude", "damping", "omega", "phase"], result.x, TRUE_PARAMS):
        print(f"  {name:9s} {got:8.4f}   (true {true})")
    return result


if __name__ == "__main__":
    main()
