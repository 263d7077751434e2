"""More of NumPy's functions in dagrad.numpy (issue 16, item 4): NumPy's values on Tensors and under
transforms and dg.compile, derivatives against central differences, NumPy's own result on plain arrays."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp

RNG = np.random.default_rng(3)
A = RNG.normal(size=(4, 5))
B = RNG.normal(size=(4, 5))
V3 = RNG.normal(size=(2, 3))
W3 = RNG.normal(size=(2, 3))

CASES = {  # name -> (function of dagrad.numpy or numpy, arguments); differentiable in the float arguments
    "fabs": (lambda m, x: m.fabs(x), (A,)),
    "deg2rad": (lambda m, x: m.deg2rad(x), (A,)),
    "radians": (lambda m, x: m.radians(x), (A,)),
    "rad2deg": (lambda m, x: m.rad2deg(x), (A,)),
    "degrees": (lambda m, x: m.degrees(x), (A,)),
    "sinc": (lambda m, x: m.sinc(x), (A,)),
    "logaddexp": (lambda m, x, y: m.logaddexp(x, y), (A, B)),
    "logaddexp2": (lambda m, x, y: m.logaddexp2(x, y), (A, B)),
    "nan_to_num": (lambda m, x: m.nan_to_num(x), (A,)),
    "select": (lambda m, x, y: m.select([x > 0, y > 0], [x, y], 0.5), (A, B)),
    "fliplr": (lambda m, x: m.fliplr(x), (A,)),
    "flipud": (lambda m, x: m.flipud(x), (A,)),
    "rot90": (lambda m, x: m.rot90(x), (A,)),
    "rot90 k=3": (lambda m, x: m.rot90(x, 3, axes=(1, 0)), (A,)),
    "rot90 k=2": (lambda m, x: m.rot90(x, 2), (A,)),
    "roll": (lambda m, x: m.roll(x, 2), (A,)),
    "roll axis": (lambda m, x: m.roll(x, -1, axis=1), (A,)),
    "roll axes": (lambda m, x: m.roll(x, (1, 2), axis=(0, 1)), (A,)),
    "rollaxis": (lambda m, x: m.rollaxis(x[None], 2), (A,)),
    "append": (lambda m, x, y: m.append(x, y), (A, B)),
    "append axis": (lambda m, x, y: m.append(x, y, axis=1), (A, B)),
    "array_split": (lambda m, x: m.array_split(x, 3, axis=1)[1], (A,)),
    "hsplit": (lambda m, x: m.hsplit(x[:, :4], 2)[0], (A,)),
    "vsplit": (lambda m, x: m.vsplit(x, [1])[1], (A,)),
    "dsplit": (lambda m, x: m.dsplit(x.reshape(2, 2, 5), [2])[0], (A,)),
    "diff": (lambda m, x: m.diff(x), (A,)),
    "diff n=2 axis 0": (lambda m, x: m.diff(x, n=2, axis=0), (A,)),
    "diff prepend": (lambda m, x: m.diff(x, prepend=0.0), (A,)),
    "gradient": (lambda m, x: m.gradient(x[0], 0.5), (A,)),
    "gradient axes": (lambda m, x: m.gradient(x)[1], (A,)),
    "kron": (lambda m, x, y: m.kron(x[:2, :3], y[:3, :2]), (A, B)),
    "cross": (lambda m, x, y: m.cross(x, y), (V3, W3)),
    "r_": (lambda m, x, y: m.r_[x[0], y[1]], (A, B)),
    "c_": (lambda m, x, y: m.c_[x[0], y[1]], (A, B)),
    # rounding and tests: zero gradients (A's values are away from the jumps)
    "trunc": (lambda m, x: m.trunc(3 * x), (A,)),
    "fix": (lambda m, x: m.fix(3 * x), (A,)),
    "rint": (lambda m, x: m.rint(3 * x), (A,)),
    "around": (lambda m, x: m.around(x, 1), (A,)),
    "isinf": (lambda m, x: m.where(m.isinf(x / (x > 0)), 1.0, x), (A,)),
    "isposinf": (lambda m, x: m.where(m.isposinf(x / (x > 0)), 1.0, x), (A,)),
    "isneginf": (lambda m, x: m.where(m.isneginf(-x / (x > 0)), 1.0, x), (A,)),
    "logical_xor": (lambda m, x, y: m.where(m.logical_xor(x > 0, y > 0), x, y), (A, B)),
    "heaviside": (lambda m, x, y: m.heaviside(m.trunc(x), y), (A, B)),
    "fmod": (lambda m, x, y: m.fmod(3 * x, y), (A, B)),
    "floor_divide": (lambda m, x, y: m.floor_divide(3 * x, y), (A, B)),
    "float_power": (lambda m, x, y: m.float_power(m.abs(x), y), (A, B)),
    "cbrt": (lambda m, x: m.cbrt(x), (A,)),
    # reductions and statistics
    "cumprod": (lambda m, x: m.cumprod(x, axis=1), (A,)),
    "cumprod flat": (lambda m, x: m.cumprod(x[:2]), (A,)),
    "nansum": (lambda m, x: m.nansum(x, axis=0), (A,)),
    "nanprod": (lambda m, x: m.nanprod(x, axis=1, keepdims=True), (A,)),
    "nanmean": (lambda m, x: m.nanmean(x, axis=1), (A,)),
    "nanvar": (lambda m, x: m.nanvar(x, axis=0, ddof=1), (A,)),
    "nanstd": (lambda m, x: m.nanstd(x), (A,)),
    "nanmax": (lambda m, x: m.nanmax(x, axis=1), (A,)),
    "nanmin": (lambda m, x: m.nanmin(x, axis=0, keepdims=True), (A,)),
    "nanargmax": (lambda m, x: x[m.nanargmax(x[:, 0])], (A,)),
    "nanargmin": (lambda m, x: x[:, m.nanargmin(x[0])], (A,)),
    "average": (lambda m, x: m.average(x, axis=1), (A,)),
    "average weights": (lambda m, x, w: m.average(x, axis=0, weights=m.abs(w[:, 0])), (A, B)),
    "average axes": (lambda m, x, w: m.average(x, axis=(1, 0), weights=w.T * w.T), (A, B)),
    "average returned": (lambda m, x, w: m.average(x, weights=w * w, returned=True)[0], (A, B)),
    "ptp": (lambda m, x: m.ptp(x, axis=1), (A,)),
    "median": (lambda m, x: m.median(x, axis=0), (A,)),
    "median odd": (lambda m, x: m.median(x, axis=1, keepdims=True), (A,)),
    "percentile": (lambda m, x: m.percentile(x, [10, 50, 95], axis=1), (A,)),
    "quantile": (lambda m, x: m.quantile(x, 0.3), (A,)),
    "quantile axes": (lambda m, x: m.quantile(x[None], [[0.2], [0.7]], axis=(0, 2), keepdims=True), (A,)),
    "nanmedian": (lambda m, x: m.nanmedian(x, axis=1), (A,)),
    "nanquantile": (lambda m, x: m.nanquantile(x, [0.0, 0.3, 1.0], axis=0, keepdims=True), (A,)),
    "nanpercentile": (lambda m, x: m.nanpercentile(x, 42), (A,)),
    "cov": (lambda m, x: m.cov(x), (A,)),
    "cov y": (lambda m, x, y: m.cov(x[0], y[1], rowvar=False, bias=True), (A, B)),
    "cov weights": (lambda m, x, w: m.cov(x, fweights=[1, 2, 1, 3, 1], aweights=m.abs(w[0])), (A, B)),
    "corrcoef": (lambda m, x: m.corrcoef(x.T, rowvar=False), (A,)),
    "trapezoid": (lambda m, y: m.trapezoid(y, dx=0.5), (A,)),
    "trapezoid x": (lambda m, y, x: m.trapezoid(y, x[0], axis=1), (A, B)),
    "trapezoid x nd": (lambda m, y, x: m.trapezoid(y, x, axis=0), (A, B)),
    "ediff1d": (lambda m, x, y: m.ediff1d(x, to_begin=y[0], to_end=[1.0, 2.0]), (A, B)),
    "cumulative_sum": (lambda m, x: m.cumulative_sum(x, axis=1, include_initial=True), (A,)),
    "cumulative_prod": (lambda m, x: m.cumulative_prod(x[0]), (A,)),
    "cumulative_prod initial": (lambda m, x: m.cumulative_prod(x, axis=0, include_initial=True), (A,)),
    "nancumsum": (lambda m, x: m.nancumsum(x, axis=0), (A,)),
    "nancumprod": (lambda m, x: m.nancumprod(x, axis=1), (A,)),
    "divmod": (lambda m, x, y: m.divmod(3 * x, y)[0] + m.divmod(3 * x, y)[1], (A, B)),
    "modf": (lambda m, x: m.modf(3 * x)[0] * 2 + m.modf(3 * x)[1], (A,)),
    # shapes and products
    "broadcast_arrays": (lambda m, x, y: m.broadcast_arrays(x[:, :1], y[0])[0], (A, B)),
    "diagflat": (lambda m, x: m.diagflat(x[:2, :2], -1), (A,)),
    "unstack": (lambda m, x: m.unstack(x, axis=1)[2], (A,)),
    "matrix_transpose": (lambda m, x: m.matrix_transpose(x.reshape(2, 2, 5)), (A,)),
    "vecdot": (lambda m, x, y: m.vecdot(x, y[0], axis=-1), (A, B)),
    "vecdot axis": (lambda m, x, y: m.vecdot(x, y, axis=0), (A, B)),
    "matvec": (lambda m, x, y: m.matvec(x.reshape(2, 2, 5), y[:2]), (A, B)),
    "vecmat": (lambda m, x, y: m.vecmat(x[:, :2], y[:2].reshape(2, 5)), (A, B)),
    "block": (lambda m, x, y: m.block([[x[:2, :2], y[:2, :3]], [x[2:, :3], y[2:, :2]]]), (A, B)),
    "block flat": (lambda m, x, y: m.block([x[0], y[0]]), (A, B)),
    "meshgrid": (lambda m, x, y: m.meshgrid(x[0], y[0, :3])[1], (A, B)),
    "meshgrid ij": (lambda m, x, y: m.meshgrid(x[0], y[0, :3], indexing="ij")[0], (A, B)),
    "delete": (lambda m, x: m.delete(x, [0, 2], axis=1), (A,)),
    "delete flat": (lambda m, x: m.delete(x, slice(1, None, 3)), (A,)),
    "insert": (lambda m, x, y: m.insert(x, 1, y[0], axis=0), (A, B)),
    "insert many": (lambda m, x, y: m.insert(x, [3, 0, 3], y[:, :3], axis=1), (A, B)),
    "insert flat": (lambda m, x, y: m.insert(x, 2, y[0, :2]), (A, B)),
    "convolve": (lambda m, x, y: m.convolve(x[0], y[1, :3]), (A, B)),
    "convolve same": (lambda m, x, y: m.convolve(x[0, :2], y[1], "same"), (A, B)),
    "correlate": (lambda m, x, y: m.correlate(x[0], y[1, :2]), (A, B)),
    "correlate full": (lambda m, x, y: m.correlate(x[0, :3], y[1], "full"), (A, B)),
    "interp": (lambda m, x, f: m.interp(x[0] * 3, np.linspace(-2, 2, 4), f[0, :4]), (A, B)),
    "interp left right": (lambda m, x, f: m.interp(x[:2] * 3, [-1.0, 0.0, 1.5], f[0, :3], left=0.5, right=x[3, 0]),
                          (A, B)),
    "unwrap": (lambda m, x: m.unwrap(x * 4, axis=0), (A,)),
    "unwrap discont": (lambda m, x: m.unwrap(x * 4, discont=4.0, period=5.0), (A,)),
    "polyval": (lambda m, p, x: m.polyval(p[0], x), (A, B)),
    "vander": (lambda m, x: m.vander(x[0], 4), (A,)),
    "vander increasing": (lambda m, x: m.vander(x[0], increasing=True), (A,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_derivatives_and_compile(name):
    f, args = CASES[name]
    want = np.asarray(f(np, *args))
    assert np.array_equal(np.asarray(f(dnp, *args)), want)  # plain arrays: NumPy's own function
    got = f(dnp, *[dg.tensor(a) for a in args])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(dg.compile(lambda *a: f(dnp, *a))(*args), want, rtol=1e-12, atol=1e-12)
    if name != "select":  # piecewise: its derivative is that of the chosen arguments (checked below)
        dg.check_grads(lambda *a: f(dnp, *a), args, order=2, modes=("fwd", "rev"))


def test_select_and_logic():
    x = dg.tensor(A, requires_grad=True)
    dnp.select([x > 0], [x * 2.0], 0.0).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.where(A > 0, 2.0, 0.0))
    for fn in ("all", "any"):
        for axis in (None, 0, 1):
            want = getattr(np, fn)(A > 0, axis=axis)
            assert np.array_equal(getattr(dnp, fn)(dg.tensor(A > 0), axis=axis).numpy(), want)
            assert np.array_equal(dg.compile(lambda a, fn=fn, axis=axis: getattr(dnp, fn)(a > 0, axis=axis))(A), want)


def test_edge_values():
    big = np.array([0.0, 1000.0, -np.inf, np.inf])
    assert np.array_equal(dnp.logaddexp(dg.tensor(big), dg.tensor(big)).numpy(), np.logaddexp(big, big))
    odd = np.array([np.nan, np.inf, -np.inf, 1.5])
    assert np.array_equal(dnp.nan_to_num(dg.tensor(odd)).numpy(), np.nan_to_num(odd))
    assert np.array_equal(dnp.nan_to_num(dg.tensor(odd), nan=-1.0, posinf=9.0).numpy(),
                          np.nan_to_num(odd, nan=-1.0, posinf=9.0))
    g = dg.grad(lambda x: dnp.sinc(x).sum())(np.array([0.0, 0.25]))
    assert g[0] == 0.0 and np.isclose(g[1], (np.sinc(0.25 + 1e-7) - np.sinc(0.25 - 1e-7)) / 2e-7)


def test_bad_input_names_the_function():
    with pytest.raises(ValueError, match=r"select: list of cases must be same length.*test_numpy_more\.py"):
        dnp.select([dg.tensor(A) > 0], [], 0.0)
    with pytest.raises(ValueError, match=r"cross: incompatible dimensions.*test_numpy_more\.py"):
        dnp.cross(dg.tensor(A), dg.tensor(B))
    with pytest.raises(ValueError, match=r"vsplit: only works on arrays of 2 or more dimensions"):
        dnp.vsplit(dg.tensor(A[0]), 2)


def test_linspace_is_differentiable_in_start_and_stop():
    for num, endpoint in [(0, True), (1, True), (5, True), (5, False)]:
        out = dnp.linspace(dg.tensor(1.2), dg.tensor(-3.4), num, endpoint=endpoint)
        np.testing.assert_allclose(out.numpy(), np.linspace(1.2, -3.4, num, endpoint=endpoint), rtol=1e-14)
        dg.check_grads(lambda a, b: dnp.linspace(a, b, num, endpoint=endpoint), (1.2, -3.4), order=2)
    start, stop = np.array([0.0, 1.0]), np.array([2.0, 5.0])
    np.testing.assert_allclose(dnp.linspace(dg.tensor(start), stop, 3, axis=1).numpy(),
                               np.linspace(start, stop, 3, axis=1))
    assert dnp.linspace(0.0, 1.0, 3) is not None and isinstance(dnp.linspace(0.0, 1.0, 3), np.ndarray)


def test_make_diagonal_is_the_inverse_of_diagonal():
    d = RNG.normal(size=(3, 4))
    m = dnp.make_diagonal(d)
    assert m.shape == (3, 4, 4) and np.array_equal(np.diagonal(m, axis1=-1, axis2=-2), d)
    assert np.count_nonzero(m) == 12
    dg.check_grads(dnp.make_diagonal, (d,), order=2)
    with pytest.raises(NotImplementedError, match=r"make_diagonal: supports offset=0, axis1=-1, axis2=-2 only.*"
                                                  r"test_numpy_more\.py"):
        dnp.make_diagonal(d, axis1=0, axis2=1)


def test_where_takes_keywords_and_one_argument():
    c, x, y = [True, False, True], np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(dnp.where(condition=c, x=x, y=y), np.where(c, x, y))
    np.testing.assert_array_equal(dnp.where(c, x, y=y), np.where(c, x, y))
    np.testing.assert_array_equal(dnp.where(c)[0], [0, 2])
    np.testing.assert_array_equal(dnp.where(dg.tensor(x) > 1.5)[0], [1, 2])
    with pytest.raises(ValueError, match=r"where: either both or neither of x and y.*test_numpy_more\.py"):
        dnp.where(c, x)


def test_integer_types_cast_traced_values_to_indices():
    def f(w):
        rows = dnp.int64(w[:, -1])  # NumPy's int64 of a traced column: integer labels, no gradient
        assert rows.dtype == dnp.int64 and rows.dtype == np.int64
        return w[rows, 0].sum()

    w = np.array([[1.0, 1.0], [2.0, 0.0], [3.0, 2.0]])
    np.testing.assert_array_equal(dg.grad(f)(w), [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    assert dnp.int64(3) == 3 and type(dnp.int64(3)) is np.int64 and isinstance(np.int64(3), dnp.int64)
    assert np.zeros(2, dtype=dnp.int32).dtype == np.int32 and dnp.__version__ == np.__version__


def test_append_and_column_stack_of_traced_values():
    g = dg.grad(lambda a, b: dnp.sum(dnp.append(a, b) ** 2), argnums=(0, 1))([1.0, 2.0], 3.0)
    assert [float(v) for v in g[0]] == [2.0, 4.0] and float(g[1]) == 6.0
    v = np.array([1.0, 2.0])
    np.testing.assert_array_equal(dnp.column_stack(dg.tensor(v)).numpy(), np.column_stack(v))


def test_logaddexp_is_smooth_where_its_arguments_tie():
    # d2/dx2 logaddexp(x, c) at x == c is sigmoid'(0) = 1/4 (a max-and-|gap| formula gave 0)
    second = dg.grad(dg.grad(lambda x: dnp.logaddexp(x, 0.4)))(0.4)
    central = (dnp.logaddexp(0.4 + 1e-4, 0.4) - 2 * dnp.logaddexp(0.4, 0.4) + dnp.logaddexp(0.4 - 1e-4, 0.4)) / 1e-8
    assert np.isclose(second, 0.25) and np.isclose(central, 0.25, rtol=1e-4)
    special = [0.0, 1000.0, -np.inf, np.inf, np.nan, 0.0]
    other = [0.0, 1000.0, -np.inf, np.inf, 1.0, -50.0]
    np.testing.assert_allclose(dnp.logaddexp(dg.tensor(special), dg.tensor(other)).numpy(),
                               np.logaddexp(special, other), rtol=1e-15)


Z = RNG.normal(size=(4, 5)) + 1j * RNG.normal(size=(4, 5))

COMPLEX_CASES = {  # the functions above where NumPy takes complex input: values, dtypes and gradients on Z
    "rint": lambda m, z: m.rint(3 * z),
    "around": lambda m, z: m.around(z, 1),
    "isinf": lambda m, z: m.where(m.isinf(z), 0.0, z),
    "logical_xor": lambda m, z: m.where(m.logical_xor(z, z.real > 0), z, 0.0),
    "float_power": lambda m, z: m.float_power(z, 2.5),
    "cumprod": lambda m, z: m.cumprod(z, axis=0),
    "nansum": lambda m, z: m.nansum(z, axis=1),
    "nanprod": lambda m, z: m.nanprod(z, axis=1),
    "nanmean": lambda m, z: m.nanmean(z, axis=0),
    "nanvar": lambda m, z: m.nanvar(z, axis=1),
    "nanstd": lambda m, z: m.nanstd(z),
    "nanmax": lambda m, z: m.nanmax(z, axis=1),
    "median": lambda m, z: m.median(z, axis=1),
    "average": lambda m, z: m.average(z, axis=1, weights=[1.0, 2.0, 0.5, 1.0, 3.0]),
    "cov": lambda m, z: m.cov(z),
    "corrcoef": lambda m, z: m.corrcoef(z),
    "trapezoid": lambda m, z: m.trapezoid(z, dx=0.3),
    "ediff1d": lambda m, z: m.ediff1d(z),
    "broadcast_arrays": lambda m, z: m.broadcast_arrays(z[:, :1], z[0])[0],
    "diagflat": lambda m, z: m.diagflat(z[0]),
    "unstack": lambda m, z: m.unstack(z)[1],
    "matrix_transpose": lambda m, z: m.matrix_transpose(z),
    "vecdot": lambda m, z: m.vecdot(z, z[::-1]),
    "matvec": lambda m, z: m.matvec(z, z[0]),
    "vecmat": lambda m, z: m.vecmat(z[0, :4], z),
    "block": lambda m, z: m.block([[z, z[:, :2]], [z[:1], z[:1, :2]]]),
    "meshgrid": lambda m, z: m.meshgrid(z[0], z[1, :3])[0],
    "delete": lambda m, z: m.delete(z, 1, axis=0),
    "insert": lambda m, z: m.insert(z, [1, 1], z[0], axis=0),
    "interp": lambda m, z: m.interp(np.linspace(-1, 5, 7), np.arange(5.0), z[0]),
    "polyval": lambda m, z: m.polyval(z[0], z[1]),
    "vander": lambda m, z: m.vander(z[0], 3),
    "convolve": lambda m, z: m.convolve(z[0], z[1, :3], "same"),
    "correlate": lambda m, z: m.correlate(z[0, :2], z[1], "full"),
    "cumulative_sum": lambda m, z: m.cumulative_sum(z, axis=0, include_initial=True),
    "cumulative_prod": lambda m, z: m.cumulative_prod(z, axis=1),
    "nancumsum": lambda m, z: m.nancumsum(z),
    "nancumprod": lambda m, z: m.nancumprod(z, axis=0),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_inputs(name):
    f = COMPLEX_CASES[name]
    want = np.asarray(f(np, Z))
    got = f(dnp, dg.tensor(Z))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    assert got.dtype == want.dtype
    dg.check_grads(lambda z: f(dnp, z), (Z,), order=2, modes=("fwd", "rev"))


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e300, -1e-300, np.inf, -np.inf, np.nan, 7.0, 0.1, 3.0])


@pytest.mark.parametrize("name", ["fmod", "floor_divide", "heaviside", "float_power", "logical_xor"])
def test_two_argument_functions_at_special_values_and_on_integers(name):
    a, b = np.repeat(SPECIAL, len(SPECIAL)), np.tile(SPECIAL, len(SPECIAL))
    ints = np.array([7, -7, 7, -7, 0, 5]), np.array([2, 2, -2, -2, 3, 0])
    with np.errstate(all="ignore"):
        for x, y in ((a, b), ints):
            want = getattr(np, name)(x, y)
            got = getattr(dnp, name)(dg.tensor(x), dg.tensor(y)).numpy()
            np.testing.assert_array_equal(got, want)  # NaN where NumPy's is; 1 // 0.1 is 9.0 as NumPy's
            assert got.dtype == want.dtype


@pytest.mark.parametrize("name", ["trunc", "fix", "rint", "around", "isinf", "isposinf", "isneginf", "cbrt", "modf 0",
                                  "modf 1", "divmod 0", "divmod 1"])
def test_one_argument_functions_at_special_values_and_on_integers(name):
    name, part = (name.split() + [None])[:2]
    for x in (SPECIAL, np.array([7, -7, 0, 5])):
        args = (x, 0.75) if name == "divmod" else (x,)
        want = getattr(np, name)(*args) if part is None else getattr(np, name)(*args)[int(part)]
        got = getattr(dnp, name)(dg.tensor(x), *args[1:])
        got = (got if part is None else got[int(part)]).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-15)
        assert got.dtype == want.dtype
    assert np.array_equal(dg.grad(lambda x: dnp.sum(dnp.trunc(x) + dnp.rint(x)))(SPECIAL[:8]), np.zeros(8))


def test_nan_reductions_match_numpy_with_all_nan_slices():
    m = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [2.0, 5.0, -1.0]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "median", "ptp"):
            for axis in (None, 0, 1):
                want = getattr(np, name)(m, axis=axis)
                np.testing.assert_allclose(getattr(dnp, name)(dg.tensor(m), axis=axis).numpy(), want, rtol=1e-15)
        for axis in (None, 0, 1):
            np.testing.assert_allclose(dnp.quantile(dg.tensor(m), [0.1, 0.5], axis=axis).numpy(),
                                       np.quantile(m, [0.1, 0.5], axis=axis))
            for name, q in (("nanquantile", [0.0, 0.3, 0.5, 1.0]), ("nanpercentile", 75)):
                np.testing.assert_array_equal(getattr(dnp, name)(dg.tensor(m), q, axis=axis).numpy(),
                                              getattr(np, name)(m, q, axis=axis))
            np.testing.assert_array_equal(dnp.nanmedian(dg.tensor(m), axis=axis).numpy(), np.nanmedian(m, axis=axis))
    # an even count of values that are not NaN: the mean of the middle two, whose gradient is 1/2 each
    np.testing.assert_array_equal(dg.grad(lambda x: dnp.nanmedian(x))(np.array([4.0, np.nan, 1.0, 3.0, 2.0])),
                                  [0.0, 0.0, 0.0, 0.5, 0.5])
    # NaNs take no gradient; the others that of the NaN-free reduction
    g = dg.grad(lambda x: dnp.nansum(x) * 2.0 + dnp.nanmean(x) + dnp.nanmax(x))(m)
    finite = ~np.isnan(m)
    np.testing.assert_allclose(g, np.where(finite, 2 + 1 / finite.sum() + (m == 5.0), 0.0))
    assert int(dnp.nanargmax(dg.tensor(m[0]))) == 2 and int(dnp.nanargmin(dg.tensor(m[2]))) == 2


def test_integer_statistics_are_float():
    k = np.arange(7)
    for name, args in (("median", ()), ("percentile", (30,)), ("quantile", ([0.25, 0.5],)), ("nanmean", ()),
                       ("average", ()), ("cov", ()), ("nanvar", ())):
        want = getattr(np, name)(k, *args)
        got = getattr(dnp, name)(dg.tensor(k), *args).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-15)
        assert got.dtype == np.asarray(want).dtype == np.float64


def test_bad_input_names_the_function_and_line():
    t, z = dg.tensor(A), dg.tensor(Z)
    here = r"\(inputs: \(4, 5\) complex128\) at .*test_numpy_more\.py"
    for name in ("fmod", "floor_divide", "heaviside"):
        with pytest.raises(TypeError, match=rf"{name}: ufunc '{name}' not supported.*{here}"):
            getattr(dnp, name)(z, 2.0)
    with pytest.raises(TypeError, match=rf"isposinf: This operation is not supported for complex128.*{here}"):
        dnp.isposinf(z)
    with pytest.raises(TypeError, match=rf"quantile: a must be an array of real numbers.*{here}"):
        dnp.quantile(z, 0.5)
    with pytest.raises(ValueError, match=r"percentile: Percentiles must be in the range \[0, 100\].*test_numpy_more"):
        dnp.percentile(t, 120)
    with pytest.raises(NotImplementedError, match=r"quantile: only method='linear'.*test_numpy_more\.py"):
        dnp.quantile(t, 0.5, method="nearest")
    with pytest.raises(ValueError, match=r"nanargmax: All-NaN slice encountered.*test_numpy_more\.py"):
        dnp.nanargmax(dg.tensor(np.full((2, 2), np.nan)), axis=0)
    with pytest.raises(ZeroDivisionError, match=r"average: Weights sum to zero.*test_numpy_more\.py"):
        dnp.average(t, axis=1, weights=dg.tensor(np.array([1.0, -1.0, 0.0, 0.0, 0.0])))
    with pytest.raises(ValueError, match=r"average: Shape of weights must be consistent.*test_numpy_more\.py"):
        dnp.average(t, axis=0, weights=np.ones(5))
    with pytest.raises(TypeError, match=r"average: Axis must be specified.*test_numpy_more\.py"):
        dnp.average(t, weights=np.ones(5))
    with pytest.raises(ValueError, match=r"matrix_transpose: Input array must be at least 2-dim.*test_numpy_more"):
        dnp.matrix_transpose(t[0])
    with pytest.raises(ValueError, match=r"vecdot: Input operand 1 has a mismatch in its core dimension 0.*"
                                         r"\(size 4 is different from 5\) \(inputs: \(4, 5\) float64, \(4, 4\) "
                                         r"float64\) at .*test_numpy_more\.py"):
        dnp.vecdot(t, t[:, :4])
    with pytest.raises(ValueError, match=r"matvec: shape mismatch: .*arg 0 with shape \(2,\).*test_numpy_more\.py"):
        dnp.matvec(t.reshape(2, 2, 5), t[:3])
    with pytest.raises(ValueError, match=r"vecmat: Input operand 1 has a mismatch in its core dimension 0.*test_numpy"):
        dnp.vecmat(t[0], t)
    with pytest.raises(ValueError, match=r"block: List depths are mismatched.*test_numpy_more\.py"):
        dnp.block([[t], t])
    with pytest.raises(IndexError, match=r"delete: index 9 is out of bounds.*test_numpy_more\.py"):
        dnp.delete(t, 9, axis=0)
    with pytest.raises(ValueError, match=r"vander: x must be a one-dimensional array.*test_numpy_more\.py"):
        dnp.vander(t)
    with pytest.raises(ValueError, match=r"interp: fp and xp are not of the same length.*test_numpy_more\.py"):
        dnp.interp(t[0], np.arange(3.0), t[1])
    with pytest.raises(ValueError, match=r"cov: m has more than 2 dimensions.*test_numpy_more\.py"):
        dnp.cov(t[None])
    with pytest.raises(ValueError, match=r"broadcast_arrays: .*mismatch.*test_numpy_more\.py"):
        dnp.broadcast_arrays(t, t[:, :2])
    with pytest.raises(np.exceptions.AxisError, match=r"nansum: .*axis 2 is out of bounds.*test_numpy_more\.py"):
        dnp.nansum(t, axis=2)
    with pytest.raises(ValueError, match=r"cumulative_sum: .*``axis`` argument is required.*test_numpy_more\.py"):
        dnp.cumulative_sum(t)
    with pytest.raises(TypeError, match=rf"divmod: ufunc 'divmod' not supported.*{here}"):
        dnp.divmod(z, 2.0)


def test_floor_divide_has_zero_gradient_and_fmod_the_remainders():
    x, y = A * 5, B + np.sign(B)
    gx, gy = dg.grad(lambda a, b: dnp.sum(dnp.fmod(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.ones_like(x))
    np.testing.assert_allclose(gy, -np.trunc(x / y))
    gx, gy = dg.grad(lambda a, b: dnp.sum(dnp.floor_divide(a, b)), argnums=(0, 1))(x, y)
    assert not gx.any() and not gy.any()


def test_float32_and_integer_dtypes_are_numpys():
    for x in (np.arange(1.0, 7.0, dtype=np.float32), np.arange(1, 7)):
        for f in (lambda m, a: m.quantile(a, 0.3), lambda m, a: m.percentile(a, [30, 60]), lambda m, a: m.median(a),
                  lambda m, a: m.nanvar(a), lambda m, a: m.nanmean(a), lambda m, a: m.cov(a), lambda m, a: m.average(a),
                  lambda m, a: m.trapezoid(a), lambda m, a: m.vander(a), lambda m, a: m.cumprod(a),
                  lambda m, a: m.ptp(a), lambda m, a: m.cbrt(a), lambda m, a: m.fmod(a, 4), lambda m, a: m.rint(a),
                  lambda m, a: m.floor_divide(a, 4), lambda m, a: m.float_power(a, 2), lambda m, a: m.trunc(a),
                  lambda m, a: m.heaviside(a - 3, 0.5), lambda m, a: m.vecdot(a, a), lambda m, a: m.polyval(a, a)):
            want = np.asarray(f(np, x))
            got = f(dnp, dg.tensor(x))
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
            assert got.dtype == want.dtype


def test_static_graph_with_unknown_batch_size():
    graph = dg.Graph()
    with graph:
        x = dg.placeholder(shape=(None, 3), dtype="float64")
        outs = [dnp.nanmean(x, axis=0), dnp.cumprod(x, axis=1), dnp.median(x, axis=1), dnp.fmod(x, 2.0),
                dnp.vecdot(x, x), dnp.average(x, axis=1, weights=np.array([1.0, 2.0, 3.0])),
                dnp.quantile(x, [0.2, 0.9], axis=1), dnp.nanmax(x, axis=1), dnp.floor_divide(x, 0.7)]
        (grad,) = dg.gradients(dg.sum(outs[0]) + dg.sum(outs[1]), [x])
    v = np.arange(6.0).reshape(2, 3) - 2.5
    got = dg.Session(graph).run(outs + [grad], feed_dict={x: v})
    want = [np.nanmean(v, 0), np.cumprod(v, 1), np.median(v, 1), np.fmod(v, 2.0), np.vecdot(v, v),
            np.average(v, axis=1, weights=[1.0, 2.0, 3.0]), np.quantile(v, [0.2, 0.9], axis=1), np.nanmax(v, 1),
            np.floor_divide(v, 0.7)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
    # d/dv of sum(nanmean(v, 0)) + sum(cumprod(v, 1)), by the plain products
    rows = [[sum(np.prod(r[:k + 1]) / r[j] for k in range(j, 3)) for j in range(3)] for r in v]
    np.testing.assert_allclose(got[-1], 1 / 2 + np.array(rows), rtol=1e-14)
    with graph, pytest.raises(ValueError, match=r"median: the sizes of the reduced axes must be known.*test_numpy"):
        dnp.median(x, axis=0)


VMAPPED = {  # under vmap: the same as a loop over the examples (value-dependent checks skip mapped values)
    "median": lambda x: dnp.median(x, axis=0),
    "quantile": lambda x: dnp.quantile(x, [0.1, 0.6]),
    "cumprod": lambda x: dnp.cumprod(x, axis=1),
    "nanvar": lambda x: dnp.nanvar(x, axis=1),
    "cov": dnp.cov,
    "interp": lambda x: dnp.interp(x[0], np.linspace(-1, 1, 5), x[1]),
    "matvec": lambda x: dnp.matvec(x, x[0]),
    "insert": lambda x: dnp.insert(x, [1, 2], x[0], axis=0),
    "unwrap": lambda x: dnp.unwrap(4 * x),
    "average": lambda x: dnp.average(x, axis=1, weights=x[0] ** 2),
    "nanargmax": lambda x: dnp.nanargmax(x, axis=1),
    "floor_divide": lambda x: dnp.floor_divide(x, 0.3),
    "nanmedian": lambda x: dnp.nanmedian(dnp.where(x > 1, np.nan, x), axis=1),
    "nanquantile": lambda x: dnp.nanquantile(dnp.where(x > 1, np.nan, x), [0.3, 0.8], axis=0),
}


@pytest.mark.parametrize("name", sorted(VMAPPED))
def test_vmap_is_a_loop(name):
    f, xs = VMAPPED[name], RNG.normal(size=(3, 4, 5))
    np.testing.assert_allclose(dg.vmap(f)(xs), np.stack([np.asarray(f(x)) for x in xs]), rtol=1e-13)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_and_correlate_every_mode_and_length(name):
    rng = np.random.default_rng(5)
    for n in range(1, 6):
        for m in range(1, 6):
            a, v = rng.normal(size=n) + 1j * rng.normal(size=n), rng.normal(size=m)
            for mode in ("full", "same", "valid"):
                got = getattr(dnp, name)(dg.tensor(a), dg.tensor(v), mode)
                want = getattr(np, name)(a, v, mode)
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-15)
                assert got.dtype == want.dtype
    with pytest.raises(ValueError, match=rf"{name}: v cannot be empty.*test_numpy_more\.py"):
        getattr(dnp, name)(dg.tensor(A[0]), np.zeros(0))


@pytest.mark.parametrize("name", ["cbrt", "float_power"])
def test_reimplemented_functions_equal_numpy_bit_for_bit_on_many_values(name):
    # each is an op of its own with NumPy's function as forward: sign(x) * |x| ** (1/3) and np.power on float64
    # casts differ from np.cbrt and np.float_power by an ulp on many values (SIMD loops of some CPUs)
    x = np.random.default_rng(0).uniform(-50.0, 50.0, 4000)
    args = (x,) if name == "cbrt" else (np.abs(x), x / 10)
    want = getattr(np, name)(*args)
    got = getattr(dnp, name)(*(dg.tensor(a) for a in args)).numpy()
    assert got.dtype == want.dtype and np.array_equal(got, want)
    compiled = dg.compile(lambda *a: getattr(dnp, name)(*a))(*args)
    assert np.array_equal(compiled, want)
