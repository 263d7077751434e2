"""Linear algebra on complex matrices (and eig on real ones): values against NumPy, derivatives
against central differences along complex directions (first and second order, both modes), vjps
against HIPS autograd's (the same Re(ct * t) convention), vmap, compile, and bad input.

Where eigenvectors or singular vectors have a free phase, the functions checked are invariant to
it (|v|, U diag(s) Vh, projectors), as autograd's own tests do."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg
from dagrad import linalg as dla

RNG = np.random.default_rng(16)


def _here(offset=1):
    return f"test_linalg_complex.py:{sys._getframe(1).f_lineno + offset}"


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _well(a):
    """a shifted to be well conditioned (|det| far from 0)."""
    return a + 4 * np.eye(a.shape[-1])


def _herm(a, xp=np):
    """A Hermitian positive-definite matrix (stack) made from any square a."""
    return (a + xp.conj(xp.swapaxes(a, -1, -2))) * 0.5 + 6 * np.eye(a.shape[-1])


A = _c(4, 4)
A3 = _c(2, 3, 3)
TALL = _c(5, 3)
WIDE = _c(3, 5)
B = _c(4, 2)
V4 = _c(4)


def _rank1_projector(u, xp):
    # u_1 u_1^H: invariant to the phase of u's first column
    return u[..., :, :1] * xp.conj(u[..., :, :1]).swapaxes(-1, -2) if xp is np else \
        u[..., :, :1] * xp.swapaxes(xp.conj(u[..., :, :1]), -1, -2)


# (name, f(xp, x), input): xp is dagrad.numpy, numpy or autograd.numpy, so one definition serves all three
FUNCTIONS = [
    ("matmul", lambda xp, x: xp.matmul(x, B), A),
    ("dot", lambda xp, x: xp.dot(V4, x), A),
    ("vdot first", lambda xp, x: xp.vdot(x, V4), V4),
    ("vdot second", lambda xp, x: xp.vdot(V4, x), V4),
    ("vdot matrices", lambda xp, x: xp.vdot(x, A), A),
    ("inner", lambda xp, x: xp.inner(x, A), A),
    ("outer", lambda xp, x: xp.outer(x, V4), V4),
    ("einsum", lambda xp, x: xp.einsum("ij,jk->ik", x, A), A),
    ("tensordot", lambda xp, x: xp.tensordot(x, A, 1), A),
    ("trace", lambda xp, x: xp.trace(x), A),
    ("inv", lambda xp, x: xp.linalg.inv(_well(x)), A),
    ("inv stack", lambda xp, x: xp.linalg.inv(_well(x)), A3),
    ("solve a", lambda xp, x: xp.linalg.solve(_well(x), B), A),
    ("solve b", lambda xp, x: xp.linalg.solve(_well(A), x), B),
    ("det", lambda xp, x: xp.linalg.det(x), A),
    ("det stack", lambda xp, x: xp.linalg.det(x), A3),
    ("slogdet logabsdet", lambda xp, x: xp.linalg.slogdet(x)[1], A),
    ("slogdet sign", lambda xp, x: xp.linalg.slogdet(x)[0], A3),
    ("cholesky", lambda xp, x: xp.linalg.cholesky(_herm(x, xp)), A),
    ("eigh L", lambda xp, x: (xp.linalg.eigh(x)[0], xp.abs(xp.linalg.eigh(x)[1])), A),
    ("eigh U", lambda xp, x: (xp.linalg.eigh(x, "U")[0], xp.abs(xp.linalg.eigh(x, "U")[1])), A3),
    ("eigvalsh", lambda xp, x: xp.linalg.eigvalsh(x), A),
    ("svd s", lambda xp, x: xp.linalg.svd(x, compute_uv=False), TALL),
    ("svd tall", lambda xp, x: tuple(xp.abs(m) for m in xp.linalg.svd(x, full_matrices=False)), TALL),
    ("svd wide", lambda xp, x: tuple(xp.abs(m) for m in xp.linalg.svd(x, full_matrices=False)), WIDE),
    ("svd square stack", lambda xp, x: tuple(xp.abs(m) for m in xp.linalg.svd(x, full_matrices=False)), A3),
    ("svd u_1 u_1^H", lambda xp, x: _rank1_projector(xp.linalg.svd(x, full_matrices=False)[0], xp), TALL),
    ("qr Q", lambda xp, x: xp.linalg.qr(x)[0], TALL),
    ("qr R", lambda xp, x: xp.linalg.qr(x)[1], TALL),
    ("qr wide", lambda xp, x: xp.linalg.qr(x)[1], WIDE),
    ("pinv", lambda xp, x: xp.linalg.pinv(x), TALL),
    ("matrix_power 3", lambda xp, x: xp.linalg.matrix_power(x, 3), A),
    ("matrix_power -2", lambda xp, x: xp.linalg.matrix_power(_well(x), -2), A),
    ("norm", lambda xp, x: xp.linalg.norm(x), A),
    ("norm vector", lambda xp, x: xp.linalg.norm(x), V4),
    ("norm axis", lambda xp, x: xp.linalg.norm(x, axis=1), A3),
    ("norm axes", lambda xp, x: xp.linalg.norm(x, axis=(0, 2)), A3),
    ("norm ord=3", lambda xp, x: xp.linalg.norm(x, ord=3), V4),
    ("norm ord=inf vector", lambda xp, x: xp.linalg.norm(x, ord=np.inf), V4),
    ("norm ord=1 vector", lambda xp, x: xp.linalg.norm(x, ord=1), V4),
    ("norm ord=0", lambda xp, x: xp.linalg.norm(x, ord=0), V4),
    ("norm fro", lambda xp, x: xp.linalg.norm(x, ord="fro"), A),
    ("norm nuc", lambda xp, x: xp.linalg.norm(x, ord="nuc"), TALL),
    ("norm 2", lambda xp, x: xp.linalg.norm(x, ord=2), TALL),
    ("norm -2", lambda xp, x: xp.linalg.norm(x, ord=-2), TALL),
    ("norm 1", lambda xp, x: xp.linalg.norm(x, ord=1), A),
    ("norm -inf", lambda xp, x: xp.linalg.norm(x, ord=-np.inf), A),
    ("eig", lambda xp, x: (xp.linalg.eig(x)[0], xp.abs(xp.linalg.eig(x)[1])), A),
    ("eig stack", lambda xp, x: (xp.linalg.eig(x)[0], xp.abs(xp.linalg.eig(x)[1])), A3),
    ("eig real", lambda xp, x: (xp.abs(xp.linalg.eig(x)[0]), xp.abs(xp.linalg.eig(x)[1])), A.real),
    ("eigvals", lambda xp, x: xp.linalg.eigvals(x), A),
]
IDS = [name for name, _, _ in FUNCTIONS]


def _dnp():
    import dagrad.numpy as dnp

    return dnp


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize(("name", "f", "x"), FUNCTIONS, ids=IDS)
def test_values_match_numpy(name, f, x):
    ours, theirs = _as_tuple(f(_dnp(), x)), _as_tuple(f(np, x))
    if name in ("eig", "eig stack", "eigvals"):
        assert np.asarray(ours[0]).dtype.kind == "c"  # always complex, as JAX's (NumPy's: real if every eigenvalue is)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.asarray(o), t, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("name", "f", "x"), FUNCTIONS, ids=IDS)
def test_first_and_second_derivatives_in_both_modes(name, f, x):
    if name in ("norm ord=0",):  # a count: no derivative
        assert dg.grad(lambda z: f(_dnp(), z))(x).tolist() == np.zeros_like(x).tolist()
        return
    assert dg.gradcheck(lambda z: f(_dnp(), z), x, order=2)


def _autograd():
    return pytest.importorskip("autograd")


# autograd's rules that assume real matrices (transposes where a complex matrix needs conjugate ones),
# or that it lacks: compared on real input only
_AUTOGRAD_REAL_ONLY = {"cholesky", "pinv", "slogdet sign"}
_AUTOGRAD_LACKS = {"qr Q", "qr R", "qr wide", "vdot first", "vdot second", "vdot matrices", "eigvalsh",
                   "matrix_power 3", "matrix_power -2", "eigvals", "norm ord=inf vector", "norm ord=1 vector",
                   "norm 2", "norm -2", "norm 1", "norm -inf"}  # autograd has no derivative of these


@pytest.mark.parametrize(("name", "f", "x"), FUNCTIONS, ids=IDS)
@pytest.mark.parametrize("kind", ["complex", "real"])
def test_vjps_of_random_cotangents_equal_autograds(name, f, x, kind):
    autograd = _autograd()
    import autograd.numpy as anp

    if name in _AUTOGRAD_LACKS or name == "norm ord=0" or (kind == "complex" and name in _AUTOGRAD_REAL_ONLY):
        pytest.skip("autograd has no (complex) rule for this function")
    if kind == "real":
        x = np.real(x) + (np.eye(x.shape[-1]) * 3 if x.ndim >= 2 and x.shape[-1] == x.shape[-2] else 0)
    ours_out, ours_vjp = dg.vjp(lambda z: f(_dnp(), z), x)
    from autograd.builtins import tuple as traced_tuple

    their_vjp, their_out = autograd.make_vjp(lambda z: (lambda o: traced_tuple(o) if isinstance(o, tuple) else o)(
        f(anp, z)))(x)
    rng = np.random.default_rng(7)
    cotangent = tuple(rng.standard_normal(np.shape(o)) + (1j * rng.standard_normal(np.shape(o))
                                                            if np.iscomplexobj(o) else 0)
                      for o in _as_tuple(ours_out))
    ours = ours_vjp(cotangent if isinstance(ours_out, tuple) else cotangent[0])[0]
    theirs = their_vjp(cotangent if isinstance(ours_out, tuple) else cotangent[0])
    assert np.asarray(ours).dtype.kind == np.asarray(x).dtype.kind  # a real input gets a real cotangent
    # autograd may leave a complex cotangent on a real input; its real part is what pairs with real tangents
    np.testing.assert_allclose(ours, np.real(theirs) if kind == "real" else theirs, rtol=1e-8, atol=1e-10)


def test_vdot_conjugates_its_first_argument_like_numpy():
    a, b = np.array([1j, 2.0]), np.array([1.0, 1j])
    assert dg.vdot(a, b) == np.vdot(a, b) == -1j + 2j
    # d/da of Re(vdot(a, b)) = Re(sum conj(a) b): the convention's gradient of a real function is
    # df/dx - i df/dy = conj(b) (from Re(conj(a) b) = x Re b + y Im b), as a loop over the entries finds
    grad = dg.grad(lambda z: dg.real(dg.vdot(z, b)))(a)
    loop = [(np.real(np.vdot(a + h * e, b)) - np.real(np.vdot(a - h * e, b))) / (2 * h)
            - 1j * (np.real(np.vdot(a + 1j * h * e, b)) - np.real(np.vdot(a - 1j * h * e, b))) / (2 * h)
            for h in [1e-6] for e in np.eye(2)]
    np.testing.assert_allclose(grad, loop, atol=1e-9)
    np.testing.assert_allclose(grad, np.conj(b), atol=1e-12)


def test_the_convention_on_a_hermitian_eigenvalue():
    # SPEC's convention: dg.grad of a real f of complex z is df/dx - i df/dy, entry by entry
    h = _herm(A)
    f = lambda z: dla.eigh(z).eigenvalues[-1]  # noqa: E731
    grad = dg.grad(f)(h)
    step = 1e-6
    for i, j in [(0, 0), (2, 1), (1, 2), (3, 0)]:
        e = np.zeros((4, 4))
        e[i, j] = step
        dx = (np.linalg.eigh(h + e)[0][-1] - np.linalg.eigh(h - e)[0][-1]) / (2 * step)
        dy = (np.linalg.eigh(h + 1j * e)[0][-1] - np.linalg.eigh(h - 1j * e)[0][-1]) / (2 * step)
        assert abs(grad[i, j] - (dx - 1j * dy)) < 1e-7, (i, j, grad[i, j], dx - 1j * dy)
    assert np.all(np.triu(grad, 1) == 0)  # the upper triangle is never read


def test_eig_of_a_real_matrix_gives_complex_values_and_real_gradients():
    rotation = np.array([[0.0, -2.0], [1.0, 0.0]])
    w = dla.eig(rotation).eigenvalues
    assert w.dtype == np.complex128
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(rotation)))
    assert dla.eig(np.float32(rotation)).eigenvectors.dtype == np.complex64
    grad = dg.grad(lambda a: dg.imag(dla.eigvals(a))[0])(rotation)
    assert grad.dtype == np.float64
    step = 1e-6
    loop = np.array([[(np.imag(np.linalg.eigvals(rotation + step * e))[0]
                       - np.imag(np.linalg.eigvals(rotation - step * e))[0]) / (2 * step)
                      for e in (np.eye(4)[k].reshape(2, 2) for k in range(2 * r, 2 * r + 2))] for r in range(2)])
    np.testing.assert_allclose(grad, loop, atol=1e-8)


def test_a_complex_sign_moves_with_the_matrix():
    # slogdet's sign of a complex matrix is det / |det|: its derivative is not zero (a real one's is)
    z = _well(A)
    _, tangent = dg.jvp(lambda a: dla.slogdet(a).sign, (z,), (A,))
    step = 1e-6
    numeric = (np.linalg.slogdet(z + step * A)[0] - np.linalg.slogdet(z - step * A)[0]) / (2 * step)
    np.testing.assert_allclose(tangent, numeric, atol=1e-8)
    assert abs(tangent) > 1e-3


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_slogdet_at_a_singular_complex_matrix():
    singular = np.outer([1.0, 1j], [1.0, 2.0])
    sign, logabsdet = dla.slogdet(singular)
    assert sign == 0 and logabsdet == -np.inf
    assert not np.any(np.isfinite(dg.grad(lambda a: dla.slogdet(a)[1])(singular)))


def test_vmap_matches_a_loop():
    f = lambda a: (dla.eig(a).eigenvalues, dla.slogdet(a).sign, dla.svd(a, compute_uv=False))  # noqa: E731
    batched = dg.vmap(f)(A3)
    for k in range(A3.shape[0]):
        for got, want in zip(batched, f(A3[k])):
            np.testing.assert_allclose(got[k], want, rtol=1e-12, atol=1e-12)
    grads = dg.vmap(dg.grad(lambda a: dg.abs(dla.eigvals(a)).sum()))(A3)
    for k in range(A3.shape[0]):
        np.testing.assert_allclose(grads[k], dg.grad(lambda a: dg.abs(dla.eigvals(a)).sum())(A3[k]), atol=1e-12)


def test_compile_matches_eager():
    def loss(a):
        return dg.abs(dla.eigvals(a)).sum() + dla.slogdet(a)[1] + dla.norm(a, "nuc") + dg.real(dla.det(a))

    fast = dg.compile(dg.value_and_grad(loss))
    value, grad = fast(A)
    eager_value, eager_grad = dg.value_and_grad(loss)(A)
    np.testing.assert_allclose(value, eager_value, rtol=1e-12)
    np.testing.assert_allclose(grad, eager_grad, rtol=1e-10, atol=1e-12)
    assert "eig_w" in fast.source(A) or "eig" in str(fast.graph(A))


@pytest.mark.parametrize("function", [dla.eig, dla.eigvals, dla.eigvalsh, dla.inv, dla.det, dla.cholesky])
def test_a_non_square_complex_matrix_is_refused_naming_the_function_and_line(function):
    line = _here(2)
    with pytest.raises(ValueError) as info:
        function(TALL)
    message = str(info.value)
    assert f"linalg.{function.__name__}" in message and "(5, 3)" in message and line in message, message


def test_eigh_refuses_a_bad_uplo_naming_the_line():
    line = _here(2)
    with pytest.raises(ValueError) as info:
        dla.eigvalsh(A, UPLO="X")
    assert "linalg.eigvalsh" in str(info.value) and "'X'" in str(info.value) and line in str(info.value)
