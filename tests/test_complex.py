"""Complex numbers through the engine (issue 16): values against NumPy, derivatives against central
differences along complex directions (first and second order, both modes), and HIPS autograd as the
oracle, since dagrad follows its convention (and JAX's): a cotangent ct of z pairs with a tangent t
as Re(ct * t), so grad(f)(z) = df/dx - i df/dy for real-valued f.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg

HERE = __file__.rsplit("/", 1)[-1]
autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")


def _here(offset=1):
    return f"{HERE}:{sys._getframe(1).f_lineno + offset}"


def _complex(shape, seed=0, low=-1.5, high=1.5):
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)


# name -> (dagrad function, NumPy/autograd function name, input range)
HOLOMORPHIC = {
    "negative": (dg.negative, "negative", {}),
    "positive": (dg.positive, "positive", {}),
    "exp": (dg.exp, "exp", {}),
    "exp2": (dg.exp2, "exp2", {}),
    "expm1": (dg.expm1, "expm1", {}),
    "log": (dg.log, "log", {"low": 0.3}),
    "log2": (dg.log2, "log2", {"low": 0.3}),
    "log10": (dg.log10, "log10", {"low": 0.3}),
    "log1p": (dg.log1p, "log1p", {"low": 0.3}),
    "sqrt": (dg.sqrt, "sqrt", {"low": 0.3}),
    "square": (dg.square, "square", {}),
    "reciprocal": (dg.reciprocal, "reciprocal", {"low": 0.3}),
    "sin": (dg.sin, "sin", {}),
    "cos": (dg.cos, "cos", {}),
    "tan": (dg.tan, "tan", {"low": -0.6, "high": 0.6}),
    "sinh": (dg.sinh, "sinh", {}),
    "cosh": (dg.cosh, "cosh", {}),
    "tanh": (dg.tanh, "tanh", {"low": -0.6, "high": 0.6}),
    "arcsin": (dg.arcsin, "arcsin", {"low": -0.6, "high": 0.6}),
    "arccos": (dg.arccos, "arccos", {"low": -0.6, "high": 0.6}),
    "arctan": (dg.arctan, "arctan", {"low": -0.6, "high": 0.6}),
    "arcsinh": (dg.arcsinh, "arcsinh", {"low": -0.6, "high": 0.6}),
    "arccosh": (dg.arccosh, "arccosh", {"low": 1.2, "high": 2.0}),
    "arctanh": (dg.arctanh, "arctanh", {"low": -0.6, "high": 0.6}),
}
NOT_HOLOMORPHIC = {
    "abs": (dg.abs, "abs", {}),
    "sign": (dg.sign, None, {}),  # autograd gives sign no gradient; z/|z| has one (PyTorch's sgn)
    "conj": (dg.conj, "conj", {}),
    "real": (dg.real, "real", {}),
    "imag": (dg.imag, "imag", {}),
    "angle": (dg.angle, "angle", {}),
}
UNARY = {**HOLOMORPHIC, **NOT_HOLOMORPHIC}


def _loss(f, c, xp):
    """A real-valued function of z through f: sum(Re(c * f(z))), so its gradient is f's vjp of c."""
    return lambda z: xp.sum(xp.real(c * f(z)))


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_values_match_numpy_and_keep_complex64(name):
    f, np_name, kw = UNARY[name]
    z = _complex((2, 3), 1, **kw)
    expected = getattr(np, np_name or "sign")(z)
    np.testing.assert_allclose(f(z), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f(dg.tensor(z)).numpy(), expected, rtol=1e-12, atol=1e-12)
    assert f(dg.tensor(z.astype(np.complex64))).dtype == expected.astype(np.complex64).dtype if \
        expected.dtype.kind == "c" else np.float32


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_derivatives_by_central_differences_both_modes_second_order(name):
    f, _, kw = UNARY[name]
    assert dg.gradcheck(f, _complex((2, 3), 2, **kw), order=2)


# (autograd has no vjp for positive)
@pytest.mark.parametrize("name", [n for n, (_, ag, _) in UNARY.items() if ag and n != "positive"])
def test_unary_gradients_match_autograd(name):
    f, ag_name, kw = UNARY[name]
    z = _complex((2, 3), 3, **kw)
    c = _complex((2, 3), 4)
    ours = dg.grad(_loss(f, c, dg))(z)
    theirs = autograd.grad(_loss(getattr(anp, ag_name), c, anp))(z)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    t = _complex((2, 3), 5)
    np.testing.assert_allclose(dg.jvp(f, (z,), (t,))[1], autograd.make_jvp(getattr(anp, ag_name))(z)(t)[1],
                               rtol=1e-10, atol=1e-12)


def test_the_spec_example_and_holomorphic_grad():
    assert dg.grad(lambda z: abs(z) ** 2)(3 + 4j) == 6 - 8j  # PyTorch gives the conjugate
    assert dg.holomorphic_grad(lambda z: z * (1.0 + 0.2j))(1.0 + 0.0j) == 1.0 + 0.2j
    z = _complex((3,), 6)
    np.testing.assert_allclose(dg.holomorphic_grad(lambda z: dg.sum(dg.sin(z) * z))(z), np.cos(z) * z + np.sin(z))
    np.testing.assert_allclose(dg.holomorphic_grad(dg.holomorphic_grad(lambda z: z ** 3))(1 + 2j), 6 * (1 + 2j))


# -- binary ops: complex with complex, with real arrays, and with Python numbers
BINARY = {"add": dg.add, "subtract": dg.subtract, "multiply": dg.multiply, "divide": dg.divide, "power": dg.power}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("kinds", ["cc", "cr", "rc"])
def test_binary_ops_of_complex_and_real_arrays(name, kinds):
    f = BINARY[name]
    a = _complex((2, 3), 7, low=0.5) if kinds[0] == "c" else np.random.default_rng(7).uniform(0.5, 1.5, (2, 3))
    b = _complex((3,), 8, low=0.5) if kinds[1] == "c" else np.random.default_rng(8).uniform(0.5, 1.5, (3,))
    np.testing.assert_allclose(f(a, b), getattr(np, name)(a, b), rtol=1e-12)
    assert dg.gradcheck(f, a, b, order=2)
    c = _complex((2, 3), 9)
    ours = dg.grad(lambda a, b: dg.sum(dg.real(c * f(a, b))), argnums=(0, 1))(a, b)
    theirs = autograd.grad(lambda a, b: anp.sum(anp.real(c * getattr(anp, name)(a, b))), argnum=(0, 1))(a, b)
    for o, t, x in zip(ours, theirs, (a, b)):
        assert o.dtype == x.dtype  # a real input's gradient is real: the real part of what reaches it
        np.testing.assert_allclose(o, t, rtol=1e-10)


def test_python_complex_numbers_and_eager_tensors():
    x = dg.tensor([0.5, -1.0], requires_grad=True)
    y = dg.exp(x * 1j) * (2 - 1j)
    assert y.dtype == np.complex128
    dg.abs(y + 1).sum().backward()
    expected = autograd.grad(lambda x: anp.sum(anp.abs(anp.exp(x * 1j) * (2 - 1j) + 1)))(np.array([0.5, -1.0]))
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad.numpy(), expected)
    z = dg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    (z * z.conj()).real.sum().backward()  # |z|^2: gradient 2 conj(z) in this convention
    np.testing.assert_allclose(z.grad.numpy(), 2 * np.conj([1 + 2j, 3 - 1j]))
    assert z.grad.dtype == np.complex128
    assert z.real.numpy().tolist() == [1.0, 3.0] and z.imag.numpy().tolist() == [2.0, -1.0]
    assert np.conj(z).numpy().tolist() == [1 - 2j, 3 + 1j]  # NumPy's ufunc on a Tensor runs dagrad's op


def test_a_real_input_gets_a_real_gradient_and_a_complex_input_a_complex_one():
    assert np.isrealobj(dg.grad(lambda x: dg.sum(dg.real(x)))(2.0))
    assert np.iscomplexobj(dg.grad(lambda x: dg.sum(dg.real(x)))(1.0j))
    assert dg.grad(lambda x: dg.real(x * (1 + 2j)))(3.0) == 1.0


# -- reductions, shapes, selection and linear algebra on complex values
COMPOSITE = {
    "sum": (lambda z: dg.sum(z, axis=0), lambda z: anp.sum(z, axis=0)),
    "mean": (lambda z: dg.mean(z, axis=1, keepdims=True), lambda z: anp.mean(z, axis=1, keepdims=True)),
    "prod": (lambda z: dg.prod(z, axis=1), lambda z: anp.prod(z, axis=1)),
    "cumsum": (lambda z: dg.cumsum(z, axis=1), lambda z: anp.cumsum(z, axis=1)),
    "var": (lambda z: dg.var(z, axis=0), lambda z: anp.var(z, axis=0)),
    "std": (lambda z: dg.std(z), lambda z: anp.std(z)),
    "reshape": (lambda z: dg.reshape(z, (3, 2)) * z[0, 0], lambda z: anp.reshape(z, (3, 2)) * z[0, 0]),
    "transpose": (lambda z: dg.transpose(z) ** 2, lambda z: anp.transpose(z) ** 2),
    "concatenate": (lambda z: dg.concatenate([z, z * 1j], axis=1), lambda z: anp.concatenate([z, z * 1j], axis=1)),
    "stack": (lambda z: dg.stack([z, dg.conj(z)]), lambda z: anp.stack([z, anp.conj(z)])),
    "getitem": (lambda z: z[1, :0:-1] * z[0, 1:], lambda z: z[1, :0:-1] * z[0, 1:]),
    "where": (lambda z: dg.where(np.array([True, False, True]), z, z * z),
              lambda z: anp.where(np.array([True, False, True]), z, z * z)),
    "broadcast": (lambda z: z + z[:, :1], lambda z: z + z[:, :1]),
    "matmul": (lambda z: z @ dg.transpose(z), lambda z: anp.dot(z, anp.transpose(z))),
    "matmul with real": (lambda z: z @ np.arange(3.0), lambda z: anp.dot(z, np.arange(3.0))),
    "einsum": (lambda z: dg.einsum("ij,kj->ik", z, dg.conj(z)), lambda z: anp.einsum("ij,kj->ik", z, anp.conj(z))),
    "abs of matmul": (lambda z: dg.abs(z @ dg.transpose(z)), lambda z: anp.abs(anp.dot(z, anp.transpose(z)))),
    "astype": (lambda z: dg.astype(z, np.complex64) * 1.0, None),
}


@pytest.mark.parametrize("name", list(COMPOSITE))
def test_composites_against_numpy_differences_and_autograd(name):
    f, ag = COMPOSITE[name]
    z = _complex((2, 3), 10)
    if ag is not None:
        np.testing.assert_allclose(f(z), ag(z), rtol=1e-12)
        c = _complex(np.shape(ag(z)), 11)
        np.testing.assert_allclose(dg.grad(_loss(f, c, dg))(z), autograd.grad(_loss(ag, c, anp))(z), rtol=1e-9)
        assert dg.gradcheck(f, z, order=2)
    else:
        assert dg.gradcheck(f, z, order=2, eps=1e-3, atol=1e-4, rtol=1e-3)


# -- transforms, compile, static graphs
def test_vmap_compile_and_jacobian_of_complex_functions():
    f = lambda z: dg.sum(dg.abs(dg.exp(z) * z) ** 2)  # noqa: E731
    zs = _complex((4, 3), 12)
    loop = np.stack([dg.grad(f)(z) for z in zs])
    np.testing.assert_allclose(dg.vmap(dg.grad(f))(zs), loop, rtol=1e-12)
    np.testing.assert_allclose(dg.compile(dg.vmap(dg.grad(f)))(zs), loop, rtol=1e-12)
    np.testing.assert_allclose(dg.compile(f)(zs[0]), f(zs[0]), rtol=1e-12)
    # jacfwd of a holomorphic function: J t for a complex t, row by row (JAX's holomorphic=True; without it,
    # complex inputs are refused, as JAX does: a function that is not holomorphic has no complex Jacobian)
    g = lambda z: dg.sin(z) * z[0]  # noqa: E731
    t = _complex((3,), 13)
    np.testing.assert_allclose(dg.jacfwd(g, holomorphic=True)(zs[0]) @ t, dg.jvp(g, (zs[0],), (t,))[1], rtol=1e-12)
    np.testing.assert_allclose(dg.jacrev(g, holomorphic=True)(zs[0]), dg.jacfwd(g, holomorphic=True)(zs[0]),
                               rtol=1e-12)
    with pytest.raises(TypeError, match="jacfwd: argument 0 has dtype complex128: jacfwd needs real inputs; for a "
                                        "holomorphic function pass holomorphic=True"):
        dg.jacfwd(g)(zs[0])


def test_a_static_graph_with_a_complex_placeholder():
    with dg.Graph():
        z = dg.placeholder((3,), dtype=np.complex128)
        w = dg.Variable(np.array([1.0, 2.0, 3.0]))
        loss = dg.sum(dg.abs(z * w) ** 2)
        gz, gw = dg.gradients(loss, [z, w])
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            value = _complex((3,), 14)
            got = sess.run([loss, gz, gw], {z: value})
    theirs = autograd.grad(lambda z, w: anp.sum(anp.abs(z * w) ** 2), argnum=(0, 1))(value, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(got[0], np.sum(np.abs(value * [1, 2, 3]) ** 2))
    np.testing.assert_allclose(got[1], theirs[0])
    np.testing.assert_allclose(got[2], theirs[1])
    assert got[2].dtype == np.float64


def test_gradcheck_catches_a_wrong_complex_rule():
    # conj's true vjp is conj(g); a rule that forgets the conjugation is wrong only on complex values
    wrong = dg.primitive(lambda z: np.conj(z))
    dg.defvjp(wrong, lambda ans, z: lambda g: g)
    dg.defjvp(wrong, lambda g, ans, z: dg.conj(g))
    assert dg.gradcheck(wrong, np.array([0.5, 1.5]), modes=("fwd", "rev"))  # right on reals
    with pytest.raises(dg.GradcheckError, match="rev mode"):
        dg.gradcheck(wrong, _complex((3,), 15), modes=("rev",))


# -- bad input
@pytest.mark.parametrize("name", ["relu", "sigmoid", "softplus"])
def test_real_only_ops_refuse_complex_input_naming_the_op_and_line(name):
    line = _here(2)
    with pytest.raises(TypeError, match=f"{name}.*real numbers only") as info:
        getattr(dg, name)(dg.tensor([1 + 1j]))
    assert line in str(info.value)


@pytest.mark.parametrize("name", ["floor", "ceil", "mod", "arctan2", "hypot"])
def test_ops_numpy_refuses_on_complex_are_refused_naming_the_op(name):
    f = getattr(dg, name)
    args = (dg.tensor([1 + 1j]),) if name in ("floor", "ceil") else (dg.tensor([1 + 1j]), dg.tensor([2.0]))
    with pytest.raises(TypeError, match=name) as info:
        f(*args)
    assert HERE in str(info.value)


def test_erf_of_complex_values_is_scipys():
    pytest.importorskip("scipy")
    from scipy.special import erf

    z = _complex((3,), 18, low=-0.8, high=0.8)
    np.testing.assert_allclose(dg.erf(z), erf(z), rtol=1e-14)
    assert dg.gradcheck(dg.erf, z, order=2)
    special = pytest.importorskip("dagrad.scipy.special")
    np.testing.assert_allclose(special.erfc(z), 1 - erf(z), rtol=1e-12)
    assert dg.gradcheck(special.erfc, z, order=2)
    line = _here(2)
    with pytest.raises(TypeError, match="gammaln: is defined here for real arguments, got dtype complex128") as info:
        special.gammaln(z)
    assert line in str(info.value)


def test_ravel_pytree_of_complex_leaves():
    flat, unravel = dg.ravel_pytree({"a": np.array([1j, 2.0]), "b": np.ones(2)})
    assert flat.dtype == np.complex128 and flat.tolist() == [1j, 2, 1, 1]
    assert unravel(flat)["a"].tolist() == [1j, 2]


def test_scipy_linalg_on_complex_matrices():
    sl = pytest.importorskip("dagrad.scipy.linalg")
    pytest.importorskip("scipy")
    import scipy.linalg as ssl

    rng = np.random.default_rng(19)
    z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    b = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    s = z.real + z.real.T  # real symmetric, with negative eigenvalues: its square root is complex, as SciPy's
    np.testing.assert_allclose(sl.sqrtm(s), ssl.sqrtm(s), rtol=1e-10)
    assert dg.gradcheck(sl.sqrtm, s, order=2) and dg.gradcheck(sl.expm, z, order=2)
    assert dg.gradcheck(sl.solve_sylvester, z, z.T, z, order=2)
    for trans in (0, "T", "C"):
        np.testing.assert_allclose(sl.solve_triangular(z, b, trans=trans), ssl.solve_triangular(z, b, trans=trans))
        assert dg.gradcheck(lambda a, b: sl.solve_triangular(a, b, trans=trans), z, b, order=2)
    h = z @ z.conj().T + 3 * np.eye(3)  # Hermitian positive definite: a = L L^H
    for lower in (True, False):
        np.testing.assert_allclose(sl.cho_solve(sl.cho_factor(h, lower=lower), b), np.linalg.solve(h, b))
        hermitian_solve = lambda h, b: sl.cho_solve(sl.cho_factor((h + dg.conj(dg.transpose(h))) / 2,  # noqa: E731
                                                                  lower=lower), b)
        assert dg.gradcheck(hermitian_solve, h, b)


def test_grad_of_a_complex_output_and_holomorphic_grad_misuse_are_clear_errors():
    line = _here(2)
    with pytest.raises(TypeError, match="grad: the function's output .* complex128.*holomorphic_grad") as info:
        dg.grad(lambda z: z * z)(1 + 1j)
    assert line in str(info.value)
    with pytest.raises(TypeError, match="holomorphic_grad: the function's output has dtype float64"):
        dg.holomorphic_grad(lambda z: dg.abs(z))(1 + 1j)
    line = _here(2)
    with pytest.raises(TypeError, match="holomorphic_grad: argument 0 has dtype float64") as info:
        dg.holomorphic_grad(lambda z: z * 1j)(1.0)
    assert line in str(info.value)
    with pytest.raises(TypeError, match="full=True compares real Jacobians"):
        dg.gradcheck(dg.exp, np.array([1j]), full=True)


def test_jax_check_grads_checks_complex_functions():
    z = _complex((3,), 16)
    dg.check_grads(lambda z: dg.abs(dg.sin(z)) ** 2, (z,), order=2)
    dg.check_grads(lambda z, x: dg.exp(z * x), (z, np.array([0.5, 1.0, 1.5])), order=2)
    wrong = dg.primitive(lambda z: np.abs(z) ** 2)
    dg.defvjp(wrong, lambda ans, z: lambda g: 2 * g * z)  # misses the conjugation: 2 g conj(z)
    dg.defjvp(wrong, lambda t, ans, z: 2 * dg.real(dg.conj(z) * t))
    dg.check_grads(wrong, (np.array([0.5, 1.5]),), order=1)  # right on reals
    with pytest.raises(AssertionError, match="VJP"):
        dg.check_grads(wrong, (z,), order=1, modes=("rev",))


# -- every differentiable row of the op table, again with complex inputs: computed and differentiated
# correctly (order 2, both modes, complex directions), or refused by a TypeError naming the op
from op_table import CASES  # noqa: E402

# ops defined on real numbers only: NumPy or SciPy has no complex loop, or the rules are derived for reals
REAL_ONLY = {"relu", "sigmoid", "softplus", "floor", "ceil", "mod", "arctan2", "hypot", "logaddexp",
             "logaddexp2", "odeint", "rfftn", "cbrt"}
# rows whose real construction does not carry over: a Hermitian input built as x @ x.T (x @ x^H is), or a
# function of singular vectors that is not phase-invariant (U U^T; U U^H is)
REAL_CONSTRUCTION = ("cholesky", "cho_factor", "svd U U^T")


def _complex_inputs(case, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(case.low, case.high, s) + 1j * rng.uniform(-0.5, 0.5, s) for s in case.shapes]


@pytest.mark.parametrize("case", [c for c in CASES if c.differentiable], ids=str)
def test_every_op_table_row_on_complex_inputs(case):
    if str(case).startswith(REAL_CONSTRUCTION):
        pytest.skip("the row builds a Hermitian matrix or a phase-invariant function for real inputs only")
    zs = _complex_inputs(case, 17)
    try:
        with np.errstate(all="ignore"):
            out = case.f(*zs)
    except TypeError as err:
        # refused: by a real-only op of the row (SciPy's special functions are real-only here), naming it
        special = dg.REGISTRY[case.op].forward.__module__ == "dagrad.scipy.special"
        assert case.op in REAL_ONLY or special or "real" in str(err), f"{case.op}: {err}"
        assert HERE in str(err) or "op_table.py" in str(err), str(err)
        return
    assert case.op not in REAL_ONLY, f"{case.op} is real-only but computed on complex values"
    if case.op == "erf":  # the table's reference is math.erf, real-only (it drops the imaginary part of a 0-d value)
        reference = pytest.importorskip("scipy.special").erf(*zs)
    else:
        reference = case.ref(*zs)
    if reference is not None:
        for o, r in zip(out if isinstance(out, tuple) else (out,), reference if isinstance(reference, tuple) else
                        (reference,)):
            np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-10, atol=1e-12)
    assert dg.gradcheck(case.f, *zs, order=2, eps=case.eps, **case.tol)


def test_real_if_close_decides_by_the_values_where_they_are_known():
    z = np.array([1.0 + 1e-15j, 2.0])
    out = dg.numpy.real_if_close(dg.tensor(z))
    assert out.dtype == np.float64 and out.numpy().tolist() == [1.0, 2.0]
    assert dg.numpy.real_if_close(dg.tensor(z + 1e-3j)).dtype == np.complex128
    assert dg.grad(lambda z: dg.numpy.real_if_close(z * 1.0).sum())(z).tolist() == [1, 1]  # known under grad too
    fast = dg.compile(lambda z: dg.numpy.real_if_close(z))  # values unknown while tracing: stays complex
    assert fast(z).dtype == np.complex128
