"""dagrad.numpy.fft against numpy.fft (values and dtypes, bit for bit), central differences (order 2, both
modes, complex directions), HIPS autograd (vjp; jvp through the pairing with autograd's vjp, autograd
having no fft jvps), a loop over basis vectors (the vjp of every call, odd lengths and repeated axes
included), dg.compile, vmap, static graphs, and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp
import dagrad.numpy.fft as F

SHAPE = (2, 3, 4)
_1D = [{}, {"n": 3}, {"n": 6, "axis": 0}, {"norm": "ortho", "axis": -2}, {"n": 5, "norm": "forward"}]
_ND = [{}, {"s": (3, 6), "axes": (0, 2)}, {"s": (2, 5), "axes": (-2, -1)}, {"axes": (1, 1), "s": (5, 2)},
       {"norm": "ortho"}, {"axes": (-1,), "norm": "forward"}]
_IRND = [{}, {"s": (3, 7), "axes": (0, 2)}, {"s": (2, 6), "axes": (1, 2)}, {"axes": (2, 2), "s": (5, 6)},
         {"norm": "ortho"}, {"axes": (0, 1), "norm": "forward"}]
_SHIFT = [{}, {"axes": 1}, {"axes": (0, 2)}]

# (function name, keyword arguments, whether the input must be real)
CALLS = (
    [(name, kw, False) for name in ("fft", "ifft", "irfft", "hfft") for kw in _1D]
    + [(name, kw, True) for name in ("rfft", "ihfft") for kw in _1D]
    + [(name, kw, False) for name in ("fft2", "ifft2", "fftn", "ifftn") for kw in _ND]
    + [(name, kw, True) for name in ("rfft2", "rfftn") for kw in _ND]
    + [(name, kw, False) for name in ("irfft2", "irfftn") for kw in _IRND]
    + [(name, kw, False) for name in ("fftshift", "ifftshift") for kw in _SHIFT]
)
IDS = [f"{name}{kw}" for name, kw, _ in CALLS]


def _input(real_only, kind, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(SHAPE)
    if kind == "complex":
        x = x + 1j * rng.standard_normal(SHAPE)
    return x.astype(np.result_type(dtype, x.dtype) if kind == "complex" else dtype)


def _kinds(real_only):
    return ("real",) if real_only else ("real", "complex")


def _fns(name, kw):
    return (lambda x: getattr(F, name)(x, **kw)), (lambda x: getattr(np.fft, name)(x, **kw))


# -- values
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize(("name", "kw", "real_only"), CALLS, ids=IDS)
def test_values_and_dtypes_are_numpys(name, kw, real_only, dtype):
    if real_only and np.dtype(dtype).kind == "c":
        pytest.skip("a real transform")
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * x[::-1]
    f, ref = _fns(name, kw)
    expected = ref(x)
    got = f(x)
    assert type(got) is np.ndarray and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    t = f(dg.tensor(x, requires_grad=np.dtype(dtype).kind == "f"))
    assert isinstance(t, dg.Tensor) and t.dtype == expected.dtype
    np.testing.assert_array_equal(t.numpy(), expected)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.float16])
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "fft2", "rfft2", "irfft2"])
def test_dtypes_of_other_inputs_are_numpys(name, dtype):
    # NumPy 2: float16 gives complex64; irfft of float16 stays float16 (irfft2 goes through complex64)
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    expected = getattr(np.fft, name)(x)
    with dg.Graph():
        node = getattr(F, name)(dg.placeholder((3, 4), dtype))
    assert node.dtype == expected.dtype
    got = getattr(F, name)(dg.tensor(x))
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.numpy(), expected)


def test_python_lists_and_the_module_paths():
    assert dnp.fft is F and dnp.fft.fft is F.fft
    np.testing.assert_array_equal(F.fft([1.0, 2.0, 3.0]), np.fft.fft([1.0, 2.0, 3.0]))
    assert F.fftfreq is np.fft.fftfreq and F.rfftfreq is np.fft.rfftfreq
    np.testing.assert_array_equal(F.fftfreq(5, 0.1), np.fft.fftfreq(5, 0.1))
    assert set(F.__all__) >= {"fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "fftn", "ifftn", "rfftn", "irfftn",
                              "rfft2", "irfft2", "hfft", "ihfft", "fftshift", "ifftshift"}


def test_no_axes_returns_the_input_as_numpy_does():
    x = np.arange(3.0)
    assert F.fftn(x, axes=()).dtype == np.fft.fftn(x, axes=()).dtype == np.float64
    t = dg.tensor(x)
    assert F.fftn(t, axes=()) is t


def test_s_without_axes_warns_as_numpy_does():
    x = np.ones((2, 3, 4))
    with pytest.warns(DeprecationWarning, match="axes"):
        got = F.fftn(dg.tensor(x), s=(2, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        np.testing.assert_array_equal(got.numpy(), np.fft.fftn(x, s=(2, 5)))


def test_out_writes_into_a_numpy_array():
    x = np.arange(4.0)
    out = np.empty(4, complex)
    assert F.fft(x, out=out) is out
    np.testing.assert_array_equal(out, np.fft.fft(x))


# -- derivatives against central differences, complex directions for complex values
@pytest.mark.parametrize(("name", "kw", "real_only"), CALLS, ids=IDS)
def test_gradcheck_order_2_both_modes(name, kw, real_only):
    f, _ = _fns(name, kw)
    for kind in _kinds(real_only):
        assert dg.gradcheck(f, _input(real_only, kind), order=2, modes=("rev", "fwd"))


# -- the vjp against a loop over basis vectors: each transform is linear over the reals, so the
# cotangent of entry k is Re<c, f(e_k)> - i Re<c, f(i e_k)> (the pairing Re(sum(c * t)))
def _vjp_by_loop(ref, x, c):
    flat = np.zeros(x.size, complex if np.iscomplexobj(x) else float)
    for k in range(x.size):
        e = np.zeros(x.size, x.dtype)
        e[k] = 1
        flat[k] = np.real(np.sum(c * ref(e.reshape(x.shape))))
        if np.iscomplexobj(x):
            flat[k] -= 1j * np.real(np.sum(c * ref((1j * e).reshape(x.shape))))
    return flat.reshape(x.shape)


def _cotangent(out, seed):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(np.shape(out))
    return c + 1j * rng.standard_normal(np.shape(out)) if np.iscomplexobj(out) else c


@pytest.mark.parametrize(("name", "kw", "real_only"), CALLS, ids=IDS)
def test_vjp_matches_a_loop_over_basis_vectors(name, kw, real_only):
    f, ref = _fns(name, kw)
    for kind in _kinds(real_only):
        x = _input(real_only, kind, seed=2)
        out, f_vjp = dg.vjp(f, x)
        c = _cotangent(out, 3)
        (got,) = f_vjp(c)
        assert got.dtype == x.dtype
        np.testing.assert_allclose(got, _vjp_by_loop(ref, x, c), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("name", "kw", "real_only"), CALLS, ids=IDS)
def test_jvp_is_the_transform_of_the_tangent(name, kw, real_only):
    f, ref = _fns(name, kw)
    for kind in _kinds(real_only):
        x, t = _input(real_only, kind, seed=4), _input(real_only, kind, seed=5)
        out, tangent = dg.jvp(f, (x,), (t,))
        np.testing.assert_array_equal(out, ref(x))
        np.testing.assert_allclose(tangent, ref(t), rtol=1e-12, atol=1e-12)


def test_irfft_ignores_the_imaginary_parts_of_bin_0_and_the_nyquist_bin():
    # irfft's values do not depend on Im X[0] and, for even n, Im X[n/2]: nor does its gradient
    z = _input(False, "complex", seed=6)[0, 0]  # 4 bins
    for n, ignored in [(6, [0, 3]), (5, [0]), (4, [0, 2])]:
        (g,) = dg.vjp(lambda v, n=n: F.irfft(v, n), z)[1](np.arange(1.0, n + 1))
        for k in range(min(len(z), n // 2 + 1)):
            assert (g[k].imag == 0) == (k in ignored), (n, k, g)
        bumped = z.copy()
        bumped[ignored] += 1j
        np.testing.assert_array_equal(np.fft.irfft(bumped, n), np.fft.irfft(z, n))


# -- the oracle tier: HIPS autograd, the same convention (it does even lengths and distinct axes only,
# and has no jvp for the transforms: its vjp checks dagrad's jvp through <c, J t> = <J^T c, t>)
autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
ORACLE = [("fft", {}), ("fft", {"n": 3, "axis": 0}), ("fft", {"n": 7, "norm": "ortho"}), ("ifft", {"n": 2}),
          ("ifft", {"axis": 1, "norm": "ortho"}), ("fft2", {"s": (5, 2)}), ("ifft2", {"axes": (0, 2)}),
          ("fftn", {}), ("ifftn", {"s": (3, 6), "axes": (0, 2), "norm": "ortho"}), ("rfft", {}),
          ("rfft", {"n": 6, "axis": 1}), ("rfft", {"n": 2, "norm": "ortho"}), ("rfft2", {"s": (3, 6)}),
          ("rfftn", {"axes": (0, 2), "s": (5, 2)}), ("rfftn", {}), ("irfft", {}), ("irfft", {"n": 8}),
          ("irfft", {"n": 4, "axis": 0, "norm": "ortho"}), ("irfft2", {"s": (2, 6)}),
          ("irfftn", {"axes": (0, 2), "s": (5, 4)}), ("irfftn", {}), ("fftshift", {}),
          ("ifftshift", {"axes": (0, 2)})]
REAL_ONLY = {"rfft", "rfft2", "rfftn"}


@pytest.mark.parametrize(("name", "kw"), ORACLE, ids=[f"{n}{kw}" for n, kw in ORACLE])
def test_vjp_and_jvp_match_autograd(name, kw):
    f, _ = _fns(name, kw)
    kw = dict(kw)
    n = (kw.pop("n"),) if "n" in kw else ()  # autograd reads n only when given by position

    def theirs(x):
        return getattr(anp.fft, name)(x, *n, **kw)

    for kind in _kinds(name in REAL_ONLY):
        x = _input(name in REAL_ONLY, kind, seed=7)
        out, f_vjp = dg.vjp(f, x)
        c = _cotangent(out, 8)
        expected = autograd.make_vjp(theirs)(x)[0](c)
        (got,) = f_vjp(c)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        t = _input(name in REAL_ONLY, kind, seed=9)
        _, tangent = dg.jvp(f, (x,), (t,))
        np.testing.assert_allclose(np.real(np.sum(c * tangent)), np.real(np.sum(expected * t)), rtol=1e-12)


# -- compile, vmap, static graphs
def _spectral_loss(x):
    spectrum = F.rfft(x, 10, axis=-1, norm="ortho")
    smooth = F.irfft(spectrum * np.exp(-np.arange(6.0)), 7)
    return dg.sum(dg.abs(spectrum) ** 2) + dg.sum(smooth * smooth) + dg.sum(dg.real(F.fftshift(F.fft2(x)))[0])


def test_compile_matches_eager_values_and_gradients():
    x = _input(True, "real", seed=10)
    np.testing.assert_allclose(dg.compile(_spectral_loss)(x), _spectral_loss(x), rtol=1e-13)
    fast = dg.compile(dg.grad(_spectral_loss))
    np.testing.assert_allclose(fast(x), dg.grad(_spectral_loss)(x), rtol=1e-13)
    source = fast.source(x)
    assert "rfftn(" in source and "irfftn(" in source and "fftn(" in source


@pytest.mark.parametrize(("name", "kw", "real_only"), CALLS, ids=IDS)
def test_vmap_values_and_gradients_match_a_loop(name, kw, real_only):
    f, _ = _fns(name, kw)
    xs = np.stack([_input(real_only, "real", seed=s) for s in range(3)], axis=1)  # mapped on axis 1

    def loss(x):
        return dg.sum(dg.abs(f(x)) ** 2)

    values = dg.vmap(f, in_axes=1)(xs)
    for k in range(3):
        np.testing.assert_allclose(values[k], f(xs[:, k]), rtol=1e-13, atol=1e-13)
    grads = dg.vmap(dg.grad(loss), in_axes=1)(xs)
    for k in range(3):
        np.testing.assert_allclose(grads[k], dg.grad(loss)(xs[:, k]), rtol=1e-12, atol=1e-12)


def test_static_graph_values_and_gradients():
    x = _input(True, "real", seed=11)[0]
    with dg.Graph() as graph:
        p = dg.placeholder((None, 4), name="p")
        loss = dg.sum(dg.abs(F.rfft(p, 6)) ** 2) + dg.sum(F.irfft(F.fft(p, axis=1), 5) ** 3)
        (dp,) = dg.gradients(loss, [p])
    f = lambda v: dg.sum(dg.abs(F.rfft(v, 6)) ** 2) + dg.sum(F.irfft(F.fft(v, axis=1), 5) ** 3)  # noqa: E731
    value, grad = dg.Session(graph).run([loss, dp], {p: x})
    np.testing.assert_allclose(value, f(x), rtol=1e-13)
    np.testing.assert_allclose(grad, dg.grad(f)(x), rtol=1e-12)


def test_float32_gradients_stay_float32():
    x = dg.tensor(_input(True, "real", np.float32, seed=12), requires_grad=True)
    dg.sum(dg.abs(F.irfft(F.rfft2(x), 4)) ** 2).backward()
    assert x.grad.dtype == np.float32


def test_eager_backward_of_second_order():
    x = dg.tensor(_input(True, "real", seed=13)[0, 0], requires_grad=True)
    (g,) = dg.autograd.grad(dg.sum(dg.abs(F.fft(x, 6)) ** 2), [x], create_graph=True)
    dg.sum(g * g).backward()
    # sum |fft(x, 6)|^2 = 6 |x|^2 (Parseval; padding adds zeros): g = 12 x, sum g^2 = 144 |x|^2
    np.testing.assert_allclose(g.numpy(), 12 * x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 288 * x.numpy(), rtol=1e-12)


# -- bad input: NumPy's exception types, named, at the user's line
X = np.ones((2, 4))
BAD = [
    (lambda: F.fft(X, 0), ValueError, r"fft\.fft: invalid number of FFT data points \(0\)"),
    (lambda: F.irfft(np.ones(1)), ValueError, r"fft\.irfft: invalid number of FFT data points \(0\)"),
    (lambda: F.fft(X, 2.0), TypeError, r"fft\.fft: n 2\.0"),
    (lambda: F.ifft(X, axis=2), np.exceptions.AxisError, r"fft\.ifft: axis 2 is out of bounds .* dimension 2"),
    (lambda: F.fftn(X, axes=(0, 3)), IndexError, r"fft\.fftn: axis 3 is out of bounds"),
    (lambda: F.rfft(X, norm="unitary"), ValueError, r"fft\.rfft: invalid norm value 'unitary'"),
    (lambda: F.fft2(X, s=(2,), axes=(0, 1)), ValueError, r"fft\.fft2: s \(2,\) and axes \(0, 1\) have different"),
    (lambda: F.rfft(X + 1j), TypeError, r"fft\.rfft: needs real input"),
    (lambda: F.rfftn(X, axes=()), IndexError, r"fft\.rfftn: needs at least one axis"),
    (lambda: F.fft(dg.tensor(X), out=np.empty((2, 4), complex)), TypeError, r"fft\.fft: out= is not supported"),
    (lambda: F.fftshift(dg.tensor(X), axes=5), IndexError, r"fft\.fftshift: axis 5 is out of bounds"),
    (lambda: F.ifftshift(X, axes=(0, -3)), IndexError, r"fft\.ifftshift: axis -3 is out of bounds"),
]


@pytest.mark.parametrize(("call", "kind", "pattern"), BAD, ids=[p for _, _, p in BAD])
def test_bad_input_names_the_function_and_the_line(call, kind, pattern):
    with pytest.raises(kind, match=pattern + rf".* at .*test_fft\.py:{call.__code__.co_firstlineno}"):
        call()


def test_a_gradient_needing_an_unknown_size_fails_when_built():
    with dg.Graph():
        p = dg.placeholder((None, 4))
        out = dg.sum(dg.real(F.fft(p, 3, axis=0)))
        with pytest.raises(ValueError, match=r"fft\.fftn: the gradient needs the length of axis 0"):
            dg.gradients(out, [p])
