"""dagrad.scipy: the composite special functions and the distributions against SciPy, their
derivatives against central differences, and the error without SciPy. (The special functions that
are ops are tested by registration: rows of tests/op_table.py.)"""

from __future__ import annotations

import numpy as np
import pytest

scipy_special = pytest.importorskip("scipy.special", reason="dagrad.scipy needs SciPy (the [scipy] extra)")
import scipy.stats as ss  # noqa: E402

import dagrad as dg  # noqa: E402
from dagrad.scipy import special, stats  # noqa: E402

X = np.array([0.5, 1.5, 3.0])
U = np.array([0.2, 0.5, 0.7])


@pytest.mark.parametrize("name, f, ref, args", [
    ("beta", lambda a: special.beta(a, 2.0), lambda a: scipy_special.beta(a, 2.0), (X,)),
    ("betaln", lambda a: special.betaln(a, 2.0), lambda a: scipy_special.betaln(a, 2.0), (X,)),
    ("multigammaln", lambda a: special.multigammaln(a + 3, 3), lambda a: scipy_special.multigammaln(a + 3, 3), (X,)),
    ("expit", special.expit, scipy_special.expit, (X,)),
    ("logit", special.logit, scipy_special.logit, (U,)),
    ("xlogy", special.xlogy, scipy_special.xlogy, (X, U)),
    ("xlog1py", special.xlog1py, scipy_special.xlog1py, (X, U)),
    ("logsumexp", lambda a: special.logsumexp(a, b=U), lambda a: scipy_special.logsumexp(a, b=U), (X,)),
    ("norm.logpdf", lambda x, m, s: stats.norm.logpdf(x, m, s), ss.norm.logpdf, (X, 0.3, 1.7)),
    ("norm.cdf", lambda x, m, s: stats.norm.cdf(x, m, s), ss.norm.cdf, (X, 0.3, 1.7)),
    ("norm.logcdf", lambda x: stats.norm.logcdf(x), ss.norm.logcdf, (X - 2,)),
    ("norm.sf", lambda x: stats.norm.sf(x), ss.norm.sf, (X,)),
    ("norm.ppf", lambda q: stats.norm.ppf(q, 1.0, 2.0), lambda q: ss.norm.ppf(q, 1.0, 2.0), (U,)),
    ("t.logpdf", lambda x, m, s: stats.t.logpdf(x, 3.5, m, s), lambda x, m, s: ss.t.logpdf(x, 3.5, m, s),
     (X, 0.2, 1.3)),
    ("t.cdf", lambda x: stats.t.cdf(x, 3.5), lambda x: ss.t.cdf(x, 3.5), (X - 1,)),
    ("t.logcdf", lambda x: stats.t.logcdf(x, 3.5, 0.2), lambda x: ss.t.logcdf(x, 3.5, 0.2), (X - 1,)),
    ("t.sf", lambda x: stats.t.sf(x, 3.5, 0.2, 1.3), lambda x: ss.t.sf(x, 3.5, 0.2, 1.3), (X - 1,)),
    ("t.logsf", lambda x: stats.t.logsf(x, 3.5), lambda x: ss.t.logsf(x, 3.5), (X - 1,)),
    ("gamma.logpdf", lambda x, a: stats.gamma.logpdf(x, a, scale=1.5), lambda x, a: ss.gamma.logpdf(x, a, scale=1.5),
     (X, 2.5)),
    ("gamma.cdf", lambda x: stats.gamma.cdf(x, 2.5), lambda x: ss.gamma.cdf(x, 2.5), (X,)),
    ("beta.logpdf", lambda x: stats.beta.logpdf(x, 2.0, 3.0), lambda x: ss.beta.logpdf(x, 2.0, 3.0), (U,)),
    ("chi2.logpdf", lambda x: stats.chi2.logpdf(x, 3.0), lambda x: ss.chi2.logpdf(x, 3.0), (X,)),
    ("poisson.logpmf", lambda mu: stats.poisson.logpmf(np.array([0.0, 2.0, 5.0]), mu),
     lambda mu: ss.poisson.logpmf([0, 2, 5], mu), (X,)),
    ("dirichlet.logpdf", lambda a: stats.dirichlet.logpdf(np.array([0.2, 0.3, 0.5]), a),
     lambda a: ss.dirichlet.logpdf(np.array([0.2, 0.3, 0.5]), a), (X + 1,)),
    ("multivariate_normal.logpdf",
     lambda m: stats.multivariate_normal.logpdf(np.array([[0.1, 0.2], [1.0, -1.0]]), m, np.array([[2.0, 0.3],
                                                                                                [0.3, 1.0]])),
     lambda m: ss.multivariate_normal.logpdf(np.array([[0.1, 0.2], [1.0, -1.0]]), m, np.array([[2.0, 0.3],
                                                                                             [0.3, 1.0]])),
     (np.array([0.3, -0.2]),)),
    ("multivariate_normal.entropy",
     lambda c: stats.multivariate_normal.entropy(np.zeros(2), 0.5 * (c + c.T)),
     lambda c: ss.multivariate_normal.entropy(np.zeros(2), 0.5 * (c + c.T)), (np.array([[2.0, 0.3], [0.3, 1.0]]),)),
])
def test_values_and_derivatives(name, f, ref, args):
    np.testing.assert_allclose(f(*[dg.tensor(a) if isinstance(a, np.ndarray) else a for a in args]).numpy()
                               if any(isinstance(a, np.ndarray) for a in args) else f(*args), ref(*args),
                               rtol=1e-10, atol=1e-12)
    dg.check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_derivatives_that_scipy_has_no_function_for_are_refused():
    with pytest.raises(NotImplementedError, match=r"gammainc: has no derivative with respect to a"):
        dg.grad(lambda a: special.gammainc(a, 2.0))(1.5)
    with pytest.raises(NotImplementedError, match=r"iv: has no derivative with respect to the order v"):
        dg.grad(lambda v: special.iv(v, 2.0))(1.5)


def test_without_scipy_the_error_names_the_extra(monkeypatch):
    monkeypatch.setattr(special, "_sp", None)
    with pytest.raises(ImportError, match=r"gammaln: needs SciPy, an optional extra: pip install 'dagrad\[scipy\]'.*"
                                          r"test_scipy\.py"):
        special.gammaln(np.ones(2))


def test_distributions_are_modules_at_autograds_paths():
    import importlib

    for name in stats.__all__:
        module = importlib.import_module(f"dagrad.scipy.stats.{name}")
        assert getattr(stats, name) is module
    import dagrad.scipy.stats.multivariate_normal as mvn

    assert mvn.logpdf is stats.multivariate_normal.logpdf


def test_multivariate_normal_with_a_singular_covariance_is_scipys_density_on_its_support():
    cov = np.diag([1.0, 2.0, 0.0])
    mean = np.array([0.1, 0.2, 0.3])
    x = np.array([[0.5, -0.4, 0.3], [1.0, 0.0, 0.3]])
    ref = ss.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True), ref, rtol=1e-12)
    np.testing.assert_allclose(stats.multivariate_normal.pdf(x, mean, cov, allow_singular=True), np.exp(ref),
                               rtol=1e-12)
    # differentiated along the support (the third coordinate of x - mean stays 0): off it the density is -inf
    def on_support(x2, m2):
        third = np.full(x2.shape[:-1] + (1,), 0.3)
        return stats.multivariate_normal.logpdf(dg.concatenate([x2, third], axis=-1),
                                                dg.concatenate([m2, third[0]], axis=-1), cov, allow_singular=True)

    dg.check_grads(on_support, (x[:, :2], mean[:2]), order=2)


def test_dirichlet_rvs_are_scipys_draws():
    alpha = np.array([1.5, 2.0, 3.0])
    draws = stats.dirichlet.rvs(alpha, size=4, random_state=0)
    np.testing.assert_array_equal(draws, ss.dirichlet.rvs(alpha, size=4, random_state=0))
    np.testing.assert_allclose(draws.sum(axis=1), 1.0)
