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
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_derivatives_and_compile(name):
    f, args = CASES[name]
    want = np.asarray(f(np, *args))
    assert np.array_equal(np.asarray(f(dnp, *args)), want)  # plain arrays: NumPy's own function
    got = f(dnp, *[dg.tensor(a) for a in args])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
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
