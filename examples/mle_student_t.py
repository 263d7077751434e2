"""Maximum-likelihood fit of a Student-t model with `dagrad.scipy.stats` and `scipy.optimize`.

    python examples/mle_student_t.py

Draws 2,000 points from a Student-t distribution (df 4, loc 1.5, scale 0.8), writes the negative
log-likelihood with `dagrad.scipy.stats.t.logpdf` over unconstrained parameters (log df, loc, log
scale) held in a dict, flattens them with `dg.ravel_pytree` (JAX's bridge to `scipy.optimize`), and
lets L-BFGS-B minimise it with dagrad's exact gradient. It prints the estimates beside the true
values and SciPy's own fit (`scipy.stats.t.fit`, a derivative-free search) with both likelihoods,
and checks the gradient against central differences.
Needs SciPy (the `[scipy]` extra).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.stats

import dagrad as dg
from dagrad.scipy import stats

TRUE = {"df": 4.0, "loc": 1.5, "scale": 0.8}


def negative_log_likelihood(params, data):
    df, scale = dg.exp(params["log_df"]), dg.exp(params["log_scale"])
    return -dg.sum(stats.t.logpdf(data, df, params["loc"], scale)) / len(data)


def main(n=2000, seed=0):
    data = scipy.stats.t.rvs(TRUE["df"], TRUE["loc"], TRUE["scale"], size=n, random_state=seed)
    start = {"log_df": np.array(0.0), "loc": np.array(float(np.median(data))), "log_scale": np.array(0.0)}
    flat, unravel = dg.ravel_pytree(start)
    objective = dg.value_and_grad(lambda v: negative_log_likelihood(unravel(v), data))

    # the gradient the optimiser gets is the function's: dg.check_grads compares it with central differences
    dg.check_grads(lambda v: negative_log_likelihood(unravel(v), data), (flat,), order=1)

    result = scipy.optimize.minimize(lambda v: tuple(np.asarray(r, dtype=float) for r in objective(v)), flat,
                                     jac=True, method="L-BFGS-B")
    fit = unravel(result.x)
    estimate = {"df": float(np.exp(fit["log_df"])), "loc": float(fit["loc"]), "scale": float(np.exp(fit["log_scale"]))}
    scipy_fit = dict(zip(("df", "loc", "scale"), scipy.stats.t.fit(data)))
    print(f"{'':8}{'true':>8}{'dagrad':>10}{'scipy':>10}")
    for name in ("df", "loc", "scale"):
        print(f"{name:8}{TRUE[name]:8.3f}{estimate[name]:10.3f}{scipy_fit[name]:10.3f}")
    ours = -scipy.stats.t.logpdf(data, estimate["df"], estimate["loc"], estimate["scale"]).mean()
    theirs = -scipy.stats.t.logpdf(data, scipy_fit["df"], scipy_fit["loc"], scipy_fit["scale"]).mean()
    print(f"mean negative log-likelihood: dagrad {ours:.6f}, scipy.stats.t.fit {theirs:.6f}")
    print(f"L-BFGS-B: {result.nit} iterations, {result.nfev} evaluations, converged: {result.success}")
    return {"estimate": estimate, "scipy": scipy_fit, "nll": ours, "scipy_nll": theirs, "result": result}


if __name__ == "__main__":
    main()
