"""dagrad.scipy.stats and dagrad.scipy.special at the edges: every distribution and method outside its
support, on its boundary, at invalid parameters, with loc/scale and broadcasting, against SciPy's values;
gradients 0 outside the support (JAX's), NaN at invalid parameters, central differences inside; the
special functions at SciPy's domain edges (NaN, inf, or SciPy's error)."""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest

scipy_special = pytest.importorskip("scipy.special", reason="dagrad.scipy needs SciPy (the [scipy] extra)")
import scipy.stats as ss  # noqa: E402

import dagrad as dg  # noqa: E402
from dagrad.scipy import special, stats  # noqa: E402

INF, NAN = math.inf, math.nan


@dataclass
class Dist:
    name: str
    shapes: list  # valid values of the shape parameters (tuples)
    invalid: list  # invalid ones: SciPy's NaN
    outside: list  # standardized points outside the support
    boundary: list  # points on its edge (SciPy's values; no gradient check)
    inside: list  # interior points (central differences)
    gaps: list = field(default_factory=list)  # between a discrete support's points: outside for the pmf only
    edge_shapes: list = field(default_factory=list)  # valid shape parameters on the edge (no central differences)
    cdf_shapes: bool = False  # whether the cdf family is differentiable in the shape parameters
    discrete: bool = False
    scales: list = field(default_factory=lambda: [(0.0, 1.0), (0.5, 2.0)])  # (loc, scale)

    @property
    def module(self):
        return getattr(stats, self.name)

    @property
    def ref(self):
        return getattr(ss, self.name)

    def methods(self):
        return [m for m in self.module.__all__ if m not in ("entropy", "rvs", "ppf")]


DISTS = [
    Dist("norm", [()], [], [], [-INF, INF], [-1.3, 0.0, 2.1], cdf_shapes=True),
    Dist("t", [(0.7,), (3.0,), (INF,)], [(0.0,), (-1.0,), (NAN,)], [], [-INF, INF], [-1.3, 0.0, 2.1]),
    Dist("gamma", [(0.5,), (1.0,), (2.5,)], [(0.0,), (-1.0,), (NAN,)], [-1.0, -1e-3, -INF], [0.0, INF], [0.3, 2.0]),
    Dist("chi2", [(1.0,), (2.0,), (5.0,)], [(0.0,), (-2.0,), (NAN,)], [-1.0, -1e-3, -INF], [0.0, INF], [0.3, 2.0]),
    Dist("beta", [(0.5, 0.7), (1.0, 1.0), (2.0, 3.0)], [(0.0, 1.0), (1.0, -1.0), (NAN, 1.0)],
         [-0.5, 1.5, -1e-3, 1 + 1e-3, -INF, INF], [0.0, 1.0], [0.2, 0.7]),
    Dist("poisson", [(0.5,), (3.0,)], [(-1.0,), (NAN,)], [-1.0, -0.5, -INF], [0.0, INF], [0.0, 1.0, 4.0],
         gaps=[2.5, 0.5], edge_shapes=[(0.0,)], cdf_shapes=True, discrete=True, scales=[(0, None), (2, None)]),
]
PMF = {"logpdf", "pdf", "logpmf", "pmf"}


def _args(dist, x, shape, loc, scale):
    """The positional arguments of a call at standardized point(s) x."""
    if dist.discrete:
        return (x + loc, *shape, loc)
    return (loc + scale * x, *shape, loc, scale)


def _grid(dist, points, shapes, loc, scale):
    """Flat arrays pairing every point with every shape-parameter tuple: one call tests them all."""
    xs = np.repeat(np.asarray(points, dtype=float), len(shapes))
    columns = [np.tile(np.asarray([s[i] for s in shapes], dtype=float), len(points)) for i in range(len(shapes[0]))]
    return _args(dist, xs, columns, loc, scale)


def _ours(dist, method, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = getattr(dist.module, method)(*args)
    return np.asarray(out.numpy() if isinstance(out, dg.Tensor) else out)


def _scipys(dist, method, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(getattr(dist.ref, method)(*args), dtype=float)


def _same(ours, ref, what):
    """Equal to SciPy's, with inf and NaN in the same places."""
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref), err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(ref), err_msg=f"{what}: +inf positions")
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(ref), err_msg=f"{what}: -inf positions")
    finite = np.isfinite(ref)
    np.testing.assert_allclose(ours[finite], ref[finite], rtol=1e-9, atol=1e-300, err_msg=what)


def _differentiable(dist, method, nargs):
    """Indices of the arguments the method is differentiable in (k of the discrete cdf is a step: 0)."""
    shape_count = len(dist.shapes[0])
    if method in PMF or dist.cdf_shapes:
        indices = list(range(nargs))
    else:  # SciPy has no derivative of the incomplete gamma / beta functions in their parameters
        indices = [0] + list(range(1 + shape_count, nargs))
    if dist.discrete:
        indices = [i for i in indices if i == 1 or method in PMF]
    return [i for i in indices if i < nargs]


def _gradients(f, args, argnums):
    """Reverse-mode per-element gradients (the function is elementwise) and forward-mode ones."""
    args = [np.asarray(a, dtype=float) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rev = dg.grad(lambda *a: dg.sum(f(*a)), argnums=tuple(argnums))(*args)
        fwd = []
        for i in argnums:
            def along(v, i=i):
                return f(*args[:i], v, *args[i + 1:])

            fwd.append(np.asarray(dg.jvp(along, (args[i],), (np.ones_like(args[i]),))[1]))
    return [np.asarray(r) for r in rev], fwd


CASES = [(d, m) for d in DISTS for m in d.methods()]
IDS = [f"{d.name}.{m}" for d, m in CASES]


@pytest.mark.parametrize("dist, method", CASES, ids=IDS)
def test_values_match_scipy_inside_outside_on_the_boundary_and_at_invalid_parameters(dist, method):
    points = dist.outside + dist.gaps + dist.boundary + dist.inside + [NAN]
    for loc, scale in dist.scales:
        args = _grid(dist, points, dist.shapes + dist.edge_shapes, loc, scale)
        _same(_ours(dist, method, args), _scipys(dist, method, args), f"{dist.name}.{method} loc={loc} scale={scale}")
        if dist.invalid:  # NaN everywhere, as SciPy (whose logcdf gives 0 at k = inf even there: not followed)
            out = _ours(dist, method, _grid(dist, points, dist.invalid, loc, scale))
            assert np.isnan(out).all(), (method, out)
    if not dist.discrete:
        for bad_scale in (0.0, -1.0, NAN):
            out = _ours(dist, method, _grid(dist, points, dist.shapes, 0.5, bad_scale))
            assert np.isnan(out).all(), (method, bad_scale, out)


@pytest.mark.parametrize("dist, method", CASES, ids=IDS)
def test_outside_the_support_the_gradient_is_zero_in_both_modes(dist, method):
    if not dist.outside:
        pytest.skip(f"{dist.name}'s support is the real line")
    f = getattr(dist.module, method)
    for loc, scale in dist.scales:
        args = _grid(dist, dist.outside + (dist.gaps if method in PMF else []), dist.shapes + dist.edge_shapes, loc,
                     scale)
        argnums = _differentiable(dist, method, len(args))
        rev, fwd = _gradients(f, args, argnums)
        for i, r, t in zip(argnums, rev, fwd):
            np.testing.assert_array_equal(r, 0.0, err_msg=f"{dist.name}.{method}: reverse, argument {i}")
            np.testing.assert_array_equal(t, 0.0, err_msg=f"{dist.name}.{method}: forward, argument {i}")


@pytest.mark.parametrize("dist, method", CASES, ids=IDS)
def test_at_invalid_parameters_the_gradient_is_nan(dist, method):
    bad = [(shape, (0.5, 2.0) if not dist.discrete else (0, None)) for shape in dist.invalid]
    if not dist.discrete:
        bad += [(dist.shapes[0], (0.5, s)) for s in (0.0, -1.0)]
    f = getattr(dist.module, method)
    for shape, (loc, scale) in bad:
        args = _grid(dist, dist.outside + dist.inside, [shape], loc, scale)
        argnums = _differentiable(dist, method, len(args))
        rev, fwd = _gradients(f, args, argnums)
        for i, r, t in zip(argnums, rev, fwd):
            assert np.isnan(r).all() and np.isnan(t).all(), (method, shape, scale, i, r, t)


@pytest.mark.parametrize("dist, method", CASES, ids=IDS)
def test_inside_the_support_derivatives_match_central_differences(dist, method):
    f = getattr(dist.module, method)
    for loc, scale in dist.scales:
        for shape in dist.shapes:
            if any(math.isinf(s) for s in shape):
                continue  # df = inf: the normal distribution, no neighbourhood in df
            for x in dist.inside:
                args = _args(dist, np.float64(x), [np.float64(s) for s in shape], loc, scale)
                argnums = _differentiable(dist, method, len(args))
                if dist.discrete:  # the pmf of an integer k: differentiated in mu only
                    argnums = [1]
                if not argnums:
                    continue

                def g(*chosen, args=args, argnums=argnums):
                    full = list(args)
                    for i, value in zip(argnums, chosen):
                        full[i] = value
                    return f(*full)

                dg.check_grads(g, tuple(args[i] for i in argnums), order=1, modes=("fwd", "rev"), eps=1e-6)


@pytest.mark.parametrize("dist", DISTS, ids=[d.name for d in DISTS])
def test_broadcast_points_and_parameters_mix_inside_outside_and_invalid_without_nan_leaking(dist):
    """Points (3, 1) against parameters (3,): each element is its own case, and an invalid parameter's
    NaN (and NaN gradient) stays in its column (the last: an invalid scale, or shape for poisson)."""
    method = "logpmf" if dist.discrete else "logpdf"
    f = getattr(dist.module, method)
    shapes = (dist.shapes * 2)[:2] + (dist.invalid[:1] if dist.discrete else dist.shapes[:1])
    points = np.array([[dist.outside[0] if dist.outside else -5.0], [dist.inside[0]], [dist.inside[-1]]])
    columns = [np.array([s[i] for s in shapes]) for i in range(len(shapes[0]))]
    if dist.discrete:
        args = _args(dist, points, columns, 2, None)
    else:
        args = (0.5 + 2.0 * points, *columns, 0.5, np.array([2.0, 1.5, -1.0]))
    ours = _ours(dist, method, args)
    assert ours.shape == (3, 3)
    _same(ours, np.broadcast_to(_scipys(dist, method, args), (3, 3)).copy(), dist.name)
    x = np.broadcast_to(args[0], (3, 3)).copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gx = dg.grad(lambda x: dg.sum(f(x, *args[1:])))(x)
    assert np.isnan(gx[:, -1]).all()  # the invalid column
    assert np.isfinite(gx[:, :-1]).all()
    if dist.outside:
        np.testing.assert_array_equal(gx[0, :-1], 0.0)


def test_float32_stays_float32():
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    for f in (lambda: stats.gamma.logpdf(x, np.float32(2.0)), lambda: stats.beta.logcdf(x, np.float32(2.0), 3.0),
              lambda: stats.norm.logpdf(x, scale=np.float32(-1.0)), lambda: stats.poisson.logpmf(x, np.float32(2.0)),
              lambda: stats.t.cdf(x, np.float32(3.0))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert np.asarray(f()).dtype == np.float32


def test_the_issues_examples():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert float(stats.gamma.logpdf(-1.0, 1.0)) == -INF
        assert float(stats.beta.logpdf(1.5, 1, 1)) == -INF
        assert float(stats.poisson.logpmf(2.5, 3)) == -INF
        assert math.isnan(float(stats.poisson.logpmf(0, -1)))
        assert float(stats.chi2.logpdf(-1, 2)) == -INF
        assert float(dg.grad(lambda x: stats.gamma.logpdf(x, 2.0))(-1.0)) == 0.0
        assert float(dg.grad(lambda a: stats.gamma.logpdf(-1.0, a))(2.0)) == 0.0
        assert float(stats.poisson.cdf(2.5, 3.0)) == pytest.approx(ss.poisson.cdf(2.5, 3.0), rel=1e-12)
    # the gradient in a at a = 1 is log(x) - digamma(1), not -digamma(1) (xlogy's derivative at 0)
    assert float(dg.grad(lambda a: stats.gamma.logpdf(2.0, a))(1.0)) == pytest.approx(
        math.log(2.0) - scipy_special.digamma(1.0), rel=1e-12)


def test_the_discrete_cdf_is_a_step_function_of_k():
    assert float(dg.grad(lambda k: stats.poisson.cdf(k, 3.0))(2.5)) == 0.0
    dg.check_grads(lambda mu: stats.poisson.logcdf(2.5, mu), (1.5,), order=2)


# -- dirichlet and the multivariate normal
def test_dirichlet_off_the_simplex_is_minus_inf_with_zero_gradient():
    alpha = np.array([2.0, 0.5, 1.0])
    on = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(stats.dirichlet.logpdf(on, alpha), ss.dirichlet.logpdf(on, alpha), rtol=1e-12)
    np.testing.assert_allclose(stats.dirichlet.logpdf(on[:2], alpha), ss.dirichlet.logpdf(on[:2], alpha), rtol=1e-12)
    np.testing.assert_allclose(stats.dirichlet.logpdf(np.array([0.0, 0.5, 0.5]), alpha),
                               ss.dirichlet.logpdf(np.array([0.0, 0.5, 0.5]), alpha))  # alpha > 1 at 0: -inf
    off = np.array([[0.5, 0.7, -0.2], [0.5, 0.7, 0.1], [0.2, 0.3, 0.5 + 1e-6], [1.2, -0.1, -0.1]])
    for x in off:
        with pytest.raises(ValueError):  # SciPy refuses the point; dagrad's density is 0 there (JAX's)
            ss.dirichlet.logpdf(x, alpha)
    points = np.concatenate([off, on[None]])
    out = stats.dirichlet.logpdf(points, alpha)
    np.testing.assert_array_equal(out[:-1], -INF)
    gx, ga = dg.grad(lambda x, a: dg.sum(stats.dirichlet.logpdf(x, a)), argnums=(0, 1))(points, alpha)
    np.testing.assert_array_equal(gx[:-1], 0.0)
    assert np.isfinite(gx).all() and np.isfinite(ga).all()
    dg.check_grads(lambda a: stats.dirichlet.logpdf(points, a), (alpha,), order=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        bad = np.array([-1.0, 1.0, 1.0])
        assert np.isnan(stats.dirichlet.logpdf(on, bad))  # SciPy raises; NaN here, as the univariate ones
        assert np.isnan(dg.grad(lambda a: stats.dirichlet.logpdf(on, a))(bad)).all()


def test_a_singular_multivariate_normal_is_minus_inf_off_its_support():
    rotation = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    cov = rotation @ np.diag([1.0, 2.0, 0.0]) @ rotation.T
    mean = np.array([0.1, 0.2, 0.3])
    on = mean + np.array([[0.5, -0.4, 0.0], [1.0, 0.0, 0.0]]) @ rotation.T
    off = mean + np.array([[0.0, 0.0, 1.0], [0.5, 0.5, 1e-3]]) @ rotation.T
    x = np.concatenate([on, off])
    ref = ss.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    out = stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    np.testing.assert_array_equal(ref[2:], -INF)
    np.testing.assert_array_equal(out[2:], -INF)
    np.testing.assert_allclose(out[:2], ref[:2], rtol=1e-9)
    gx, gm = dg.grad(lambda x, m: dg.sum(stats.multivariate_normal.logpdf(x, m, cov, allow_singular=True)),
                     argnums=(0, 1))(x, mean)
    np.testing.assert_array_equal(gx[2:], 0.0)
    assert np.isfinite(gx).all() and np.isfinite(gm).all()


# -- special functions at SciPy's domain edges
EDGES = np.array([-INF, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, INF, NAN])
UNARY = ["gammaln", "digamma", "gamma", "rgamma", "gammasgn", "erfc", "erfinv", "erfcinv", "ndtr", "log_ndtr", "ndtri",
         "i0", "i1", "i0e", "i1e", "j0", "j1", "y0", "y1", "expit", "logit"]
BINARY = [("xlogy", "xlogy"), ("xlog1py", "xlog1py"), ("beta", "beta"), ("betaln", "betaln"), ("gammainc", "gammainc"),
          ("gammaincc", "gammaincc"), ("iv", "iv"), ("ive", "ive"), ("jn", "jv"), ("yn", "yv")]


def _quiet(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(f(*args), dtype=float)


@pytest.mark.parametrize("name", UNARY)
def test_unary_special_functions_at_domain_edges_are_scipys(name):
    _same(_quiet(getattr(special, name), EDGES), _quiet(getattr(scipy_special, name), EDGES), name)


@pytest.mark.parametrize("name, ref", BINARY)
def test_binary_special_functions_at_domain_edges_are_scipys(name, ref):
    x, y = np.meshgrid(EDGES, EDGES)
    _same(_quiet(getattr(special, name), x, y), _quiet(getattr(scipy_special, ref), x, y), name)


def test_betainc_polygamma_and_logsumexp_at_domain_edges_are_scipys():
    a, b, x = np.meshgrid(EDGES, EDGES, EDGES)
    _same(_quiet(special.betainc, a, b, x), _quiet(scipy_special.betainc, a, b, x), "betainc")
    for n in (-1, 0, 1, 3):  # a negative order: NaN, as SciPy
        _same(_quiet(special.polygamma, n, EDGES), _quiet(scipy_special.polygamma, n, EDGES), f"polygamma({n})")
    for a, b in [(np.array([INF, 1.0]), np.array([0.0, 1.0])), (np.array([0.0, 1.0]), np.array([-1.0, 1.0])),
                 (np.array([0.0, 1.0]), np.array([1.0, -2.0])), (np.array([-INF, -INF]), None),
                 (np.array([0.0, 0.0]), np.array([1.0, -1.0]))]:
        _same(_quiet(lambda a: special.logsumexp(a, b=b), a), _quiet(lambda a: scipy_special.logsumexp(a, b=b), a),
              f"logsumexp({a}, b={b})")
        ours = special.logsumexp(a, b=b, return_sign=True)
        ref = scipy_special.logsumexp(a, b=b, return_sign=True)
        _same(_quiet(lambda: ours[0]), np.asarray(ref[0]), "logsumexp value")
        _same(_quiet(lambda: ours[1]), np.asarray(ref[1]), "logsumexp sign")
    matrix = np.array([[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(special.logsumexp(matrix, axis=1, b=np.array([1.0, 2.0]), keepdims=True),
                               scipy_special.logsumexp(matrix, axis=1, b=np.array([1.0, 2.0]), keepdims=True))
    dg.check_grads(lambda a, b: special.logsumexp(a, axis=0, b=b, return_sign=True)[0],
                   (np.array([[0.3, 1.0, 2.0], [1.0, 2.0, 3.0]]), np.array([1.0, -2.0, 0.5])), order=2)


@pytest.mark.parametrize("path", ["eager", "grad", "compile", "vmap"])
def test_multigammaln_raises_as_scipy_below_its_domain_on_every_path(path):
    run = {"eager": lambda f, a: f(a), "grad": lambda f, a: dg.grad(lambda v: dg.sum(f(v)))(a),
           "compile": lambda f, a: dg.compile(f)(a), "vmap": lambda f, a: dg.vmap(f)(a)}[path]
    f = lambda a: special.multigammaln(a, 3)  # noqa: E731
    good = np.array([1.5, 4.0])
    expected = (sum(scipy_special.digamma(good - j / 2) for j in range(3)) if path == "grad"
                else scipy_special.multigammaln(good, 3))
    np.testing.assert_allclose(run(f, good), expected, rtol=1e-12)
    for bad in (np.array([0.4, 4.0]), np.array([1.0, 4.0])):  # SciPy: a > (d - 1) / 2 = 1
        with pytest.raises(ValueError, match=r"condition a"):
            scipy_special.multigammaln(bad, 3)
        with pytest.raises(ValueError, match=r"multigammaln.*condition a"):
            run(f, bad)
    with pytest.raises(ValueError, match=r"d should be a positive integer"):
        special.multigammaln(2.0, 1.5)


def test_xlogy_derivatives_at_zero():
    # d/dx x log y = log y, x == 0 included (JAX's); d/dy is 0 where x == 0 (the function is 0 for every y)
    assert float(dg.grad(special.xlogy)(0.0, 2.0)) == pytest.approx(math.log(2.0))
    assert float(dg.grad(special.xlog1py)(0.0, 1.0)) == pytest.approx(math.log(2.0))
    assert float(dg.grad(special.xlogy, argnums=1)(0.0, 0.0)) == 0.0
    assert float(dg.grad(special.xlog1py, argnums=1)(0.0, -1.0)) == 0.0
    assert float(dg.jvp(lambda y: special.xlogy(0.0, y), (0.0,), (1.0,))[1]) == 0.0
    assert float(dg.grad(special.xlogy)(0.0, 0.0)) == -INF  # x log 0: -inf for every x > 0


def test_an_isotropic_multivariate_normal():
    x = np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]])
    mean = np.zeros(3)
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, mean, 2.0),
                               ss.multivariate_normal.logpdf(x, mean, 2.0), rtol=1e-12)
    # the entropy of cov * I in the mean's dimension (it was the one-dimensional one's)
    np.testing.assert_allclose(stats.multivariate_normal.entropy(mean, 2.0), ss.multivariate_normal.entropy(mean, 2.0),
                               rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for cov in (0.0, -2.0):  # SciPy raises; NaN here, with NaN gradients, as the univariate scales
            assert np.isnan(stats.multivariate_normal.logpdf(x, mean, cov)).all()
            assert np.isnan(dg.grad(lambda c: dg.sum(stats.multivariate_normal.logpdf(x, mean, c)))(cov))
            assert np.isnan(stats.multivariate_normal.entropy(mean, cov))


# ---------------------------------------------------------------- float32 stays float32 at every order

def _f32(*values):
    return np.array(values, np.float32)


# every function of dagrad.scipy.special: (arguments, the positions differentiated), in one or more
# variants; a Python number is a parameter (NumPy 2 types it weakly: the result stays float32), a float32
# array a parameter too when no derivative exists in it (the incomplete gamma and beta functions' a, b)
_X, _A, _B = _f32(0.3, 0.6), _f32(1.5, 2.0), _f32(2.5, 3.0)
SPECIAL_F32 = {
    "beta": [((_A, _B), (0, 1)), ((2.5, _A), (1,))],
    "betainc": [((2.0, 3.0, _X), (2,)), ((_A, _B, _X), (2,))],
    "betaln": [((_A, _B), (0, 1)), ((_A, 2.5), (0,))],
    "digamma": [((_A,), (0,))], "psi": [((_A,), (0,))], "gamma": [((_A,), (0,))], "gammaln": [((_A,), (0,))],
    "rgamma": [((_A,), (0,))], "gammasgn": [((_A,), ())],
    "gammainc": [((2.5, _X), (1,)), ((2, _X), (1,)), ((_A, _X), (1,))],
    "gammaincc": [((2.5, _X), (1,)), ((_A, _X), (1,))],
    "polygamma": [((1, _A), (1,))], "multigammaln": [((_B, 3), (0,))],
    "stdtr": [((3.5, _X), (1,)), ((_B, _X), (1,))],
    "erf": [((_X,), (0,))], "erfc": [((_X,), (0,))], "erfinv": [((_X,), (0,))], "erfcinv": [((_X,), (0,))],
    "ndtr": [((_X,), (0,))], "log_ndtr": [((_X,), (0,))], "ndtri": [((_X,), (0,))],
    "i0": [((_X,), (0,))], "i0e": [((_X,), (0,))], "i1": [((_X,), (0,))], "i1e": [((_X,), (0,))],
    "iv": [((1.5, _X), (1,)), ((_A, _X), (1,))], "ive": [((1.5, _X), (1,))],
    "j0": [((_X,), (0,))], "j1": [((_X,), (0,))], "jn": [((2, _X), (1,))],
    "y0": [((_X,), (0,))], "y1": [((_X,), (0,))], "yn": [((2, _X), (1,))],
    "expit": [((_X,), (0,))], "logit": [((_X,), (0,))], "logsumexp": [((_X,), (0,))],
    "xlogy": [((_X, _B), (0, 1)), ((_X, 2.5), (0,)), ((2.5, _B), (1,))],
    "xlog1py": [((_X, _B), (0, 1)), ((_X, 2.5), (0,)), ((2.5, _B), (1,))],
}

# every method of every distribution: (points, shape parameters, whether the cdf family is differentiable
# in the shapes); each runs with Python-number parameters, float32 shapes with the default loc and scale,
# and every argument a float32 array
_STATS = {"norm": ((), True), "t": ((3.5,), False), "gamma": ((2.5,), False), "chi2": ((2.5,), False),
          "beta": ((2.5, 1.5), False), "poisson": ((2.5,), False)}
_LOCATION = {"loc": 0.1, "scale": 1.5}


def _with_keywords(method, n, keywords, *args):
    return method(*args[:n], **dict(zip(keywords, args[n:])))


def _stats_cases():
    for name, (shapes, cdf_shapes) in _STATS.items():
        module = getattr(stats, name)
        for method in module.__all__:
            point = () if method == "entropy" else (_f32(1.0, 2.0) if name == "poisson" else _X,)
            density = method in ("logpdf", "pdf", "logpmf", "pmf") or cdf_shapes
            keywords = ("loc",) if name == "poisson" else ("loc", "scale")
            for variant in ("python", "shapes", "arrays") if point else ("arrays",):
                params = tuple(s if variant == "python" else _f32(s, s + 0.5) for s in shapes)
                extra = tuple(_f32(_LOCATION[k], _LOCATION[k] + 0.25) for k in keywords) if variant == "arrays" else ()
                args = point + params + extra
                diff = tuple(k for k, a in enumerate(args) if isinstance(a, np.ndarray)
                             and (density or not len(point) <= k < len(point) + len(params)))
                if method == "entropy":
                    diff = tuple(range(len(args)))
                f = functools.partial(_with_keywords, getattr(module, method), len(point) + len(params), keywords)
                yield pytest.param(f, args, diff, id=f"{name}.{method}-{variant}")
    cov, mean = np.eye(2, dtype=np.float32) * 1.5, _f32(0.0, 0.1)
    points = np.array([[0.2, 0.3], [0.5, -0.1]], np.float32)
    for method in ("logpdf", "pdf"):
        m = getattr(stats.multivariate_normal, method)
        yield pytest.param(m, (points, mean, cov), (0, 1, 2), id=f"multivariate_normal.{method}")
        yield pytest.param(lambda x, mu, c, m=m: m(x, mu, c, allow_singular=True), (points, mean, cov), (0, 1, 2),
                           id=f"multivariate_normal.{method}-singular")
        yield pytest.param(m, (points, mean, np.float32(1.5)), (0, 1), id=f"multivariate_normal.{method}-scalar")
        yield pytest.param(lambda x, mu, m=m: m(x, mu, 1.5), (points, mean), (0, 1),
                           id=f"multivariate_normal.{method}-python")
        yield pytest.param(getattr(stats.dirichlet, method), (_f32(0.3, 0.7), _A), (0, 1), id=f"dirichlet.{method}")
    yield pytest.param(stats.multivariate_normal.entropy, (mean, cov), (1,), id="multivariate_normal.entropy")
    yield pytest.param(lambda c: stats.multivariate_normal.entropy(mean, c), (np.float32(1.5),), (0,),
                       id="multivariate_normal.entropy-scalar")


def _keeps_float32(f, args, diff):
    """f's value, its gradient with respect to each argument in `diff`, their gradients (reverse over
    reverse) and their tangents (forward over reverse) are all float32."""
    def total(*a):
        return dg.sum(f(*a))

    def gradient_sum(*a):
        return sum(dg.sum(g) for g in dg.grad(total, argnums=diff)(*a))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        found = {"value": f(*args)}
        if diff:
            found.update({f"gradient {k}": g for k, g in zip(diff, dg.grad(total, argnums=diff)(*args))})
            second = dg.grad(gradient_sum, argnums=diff)(*args)
            found.update({f"second derivative {k}": g for k, g in zip(diff, second)})

            def of_differentiated(*d):
                a = list(args)
                for k, v in zip(diff, d):
                    a[k] = v
                return gradient_sum(*a)

            differentiated = tuple(args[k] for k in diff)
            found["forward over reverse"] = dg.jvp(of_differentiated, differentiated,
                                                   tuple(np.ones_like(a) for a in differentiated))[1]
    wrong = {what: np.asarray(v).dtype for what, v in found.items() if np.asarray(v).dtype != np.float32}
    assert not wrong, f"not float32: {wrong}"


def test_the_float32_table_covers_every_function():
    assert set(SPECIAL_F32) == set(special.__all__)


@pytest.mark.parametrize("name, args, diff", [pytest.param(n, a, d, id=f"{n}-{i}")
                                              for n, variants in SPECIAL_F32.items()
                                              for i, (a, d) in enumerate(variants)])
def test_special_functions_keep_float32_at_every_order(name, args, diff):
    _keeps_float32(getattr(special, name), args, diff)


@pytest.mark.parametrize("f, args, diff", list(_stats_cases()))
def test_distributions_keep_float32_at_every_order(f, args, diff):
    _keeps_float32(f, args, diff)
