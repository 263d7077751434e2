"""CuPy arrays as a Tensor's value (issue 17), in two tiers.

The real tier (`cp` = "cupy") runs where CuPy and a CUDA device are present and skips with the reason
otherwise: op-table rows (values and first-order gradients against NumPy's), backward, dg.grad and the
mixing errors on the GPU.

The stand-in tier (`cp` = "stand-in") runs everywhere. Its `cupy` is a tiny fake module injected into
`sys.modules`, whose `ndarray` wraps a NumPy array, serves NumPy's functions and ufuncs for its own type
through `__array_function__`/`__array_ufunc__`, and refuses NumPy arrays and implicit conversion with
TypeError as CuPy does (`__array__` raises). It checks dagrad's dispatch, host copies and messages (that
dagrad's own code never turns a CuPy value into a NumPy one behind the user's back), not CuPy.
"""

from __future__ import annotations

import re
import sys
import types

import numpy as np
import pytest

import dagrad as dg
from dagrad._core.backends import array_type_name, is_cupy, is_foreign, mixing_error
from op_table import CASES, COMPOSITES

# -- the stand-in -----------------------------------------------------------------------------------------

_IMPLICIT = "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array " \
            "explicitly."
_UNSUPPORTED = "Unsupported type <class 'numpy.ndarray'>"  # what CuPy's functions say when given a NumPy array


class _Device:
    id = 0


class FakeCupyArray:
    """A stand-in for `cupy.ndarray` (see the module docstring): its data is a NumPy array `_a`."""

    __array_priority__ = 100  # CuPy's
    __hash__ = None
    device = _Device()

    def __init__(self, a):
        self._a = a

    def get(self):
        """The host copy, as `cupy.ndarray.get()`."""
        return self._a.copy()

    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(not _handled(x) for x in inputs):
            return NotImplemented
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        result = getattr(ufunc, method)(*(_unwrap(x) for x in inputs), **kwargs)
        return out[0] if out is not None and len(out) == 1 else _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        if any(t not in (FakeCupyArray, np.ndarray) for t in types):
            return NotImplemented
        kwargs = {k: _unwrap(v) for k, v in kwargs.items() if k != "like"}
        return _wrap(func(*_unwrap(args), **kwargs))

    def __getattr__(self, name):  # the ndarray methods and properties (never NumPy's conversion protocols)
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr)
        return lambda *args, **kwargs: _wrap(attr(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))

    def astype(self, dtype, copy=True):
        return FakeCupyArray(self._a.astype(dtype, copy=copy))

    def __getitem__(self, index):
        return _wrap(self._a[_unwrap(index, strict=False)])

    def __setitem__(self, index, value):
        self._a[_unwrap(index, strict=False)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return repr(self._a)

    # a one-element array converts to a number (CuPy synchronises and copies it)
    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __bool__(self):
        return bool(self._a)

    def __index__(self):
        return self._a.__index__()


def _binary(ufunc):
    return (lambda self, other: ufunc(self, other)), (lambda self, other: ufunc(other, self))


for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
                      ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power),
                      ("matmul", np.matmul), ("and", np.logical_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)]:
    _left, _right = _binary(_ufunc)
    setattr(FakeCupyArray, f"__{_name}__", _left)
    setattr(FakeCupyArray, f"__r{_name}__", _right)
for _name, _ufunc in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                      ("eq", np.equal), ("ne", np.not_equal)]:
    setattr(FakeCupyArray, f"__{_name}__", _binary(_ufunc)[0])
for _name, _ufunc in [("neg", np.negative), ("pos", np.positive), ("abs", np.absolute), ("invert", np.invert)]:
    setattr(FakeCupyArray, f"__{_name}__", lambda self, _u=_ufunc: _u(self))
FakeCupyArray.__name__ = FakeCupyArray.__qualname__ = "ndarray"
FakeCupyArray.__module__ = "cupy"  # as CuPy's class names itself in messages


def _handled(x):
    """What CuPy's ufuncs take: its arrays, NumPy arrays (refused afterwards, in _unwrap), numbers."""
    return isinstance(x, (FakeCupyArray, np.ndarray, np.generic, int, float, complex, bool))


def _unwrap(x, strict=True):
    if isinstance(x, FakeCupyArray):
        return x._a
    if isinstance(x, np.ndarray):
        if strict:  # CuPy never copies host data to the device implicitly (an index may be a NumPy array)
            raise TypeError(_UNSUPPORTED)
        return x
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v, strict) for v in x)
    return x


def _wrap(x):
    if isinstance(x, (np.ndarray, np.generic)) and not isinstance(x, np.dtype):
        return FakeCupyArray(np.asarray(x))  # CuPy returns 0-d arrays where NumPy returns scalars
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


def _fake_module():
    module = types.ModuleType("cupy")
    module.ndarray = FakeCupyArray
    module._dagrad_stand_in = True
    module.asarray = lambda x, dtype=None: FakeCupyArray(np.array(x._a if isinstance(x, FakeCupyArray) else x, dtype))
    module.asnumpy = lambda x: x.get()
    return module


# -- the two tiers ----------------------------------------------------------------------------------------


def _real_cupy():
    cupy = pytest.importorskip("cupy", reason="CuPy is an optional extra: pip install dagrad[cupy]")
    if getattr(cupy, "_dagrad_stand_in", False):
        pytest.skip("the stand-in is in sys.modules")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CuPy raises its own CUDARuntimeError without a driver
        pytest.skip(f"no CUDA device ({err})")
    if count == 0:
        pytest.skip("no CUDA device")
    return cupy


@pytest.fixture(params=["stand-in", "cupy"])
def cp(request, monkeypatch):
    """The `cupy` module of the tier: the real one (skipped without a GPU), or the stand-in."""
    if request.param == "cupy":
        return _real_cupy()
    module = _fake_module()
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


@pytest.fixture
def fake(monkeypatch):
    """The stand-in alone: for what only it can show (a Dask array of its chunks, its refusals)."""
    module = _fake_module()
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


def _host(x):
    """A CuPy (or stand-in) array's values on the host, for comparisons."""
    return x.get() if is_cupy(x) else np.asarray(x)


# -- op-table rows ----------------------------------------------------------------------------------------

ALL = [c for c in CASES + COMPOSITES if c.differentiable]
# Rows that cannot run on CuPy values, with the reason (docs/backends.md lists them too). Each of them raises
# a TypeError naming the op (or backward) and the CuPy array type, with the user's line (tested below): none
# copies a CuPy array to the host behind the user's back. Found with the stand-in tier.
_OWN_DATA = "the row mixes in NumPy data of its own (np.eye to make a matrix well conditioned, a NumPy mask, " \
            "labels or indices): refused as mixing, as it must be"
_NUMPY_CODE = "its forward is NumPy-only code (np.asarray, math.erf through np.frompyfunc, SciPy's Python " \
              "functions, a write into a NumPy array): CuPy refuses the implicit conversion"
_INDEX_ADD = "the gradient of indexing (index_add) writes into NumPy zeros (ops/shape.py): needs like=g"
_INTEGER_INDEX = "an integer-array index (or the scatter-add of its gradient) held as a NumPy array meets the " \
                  "CuPy values: refused as mixing"
_RULE_CONSTANTS = "its gradient rule (or forward) makes NumPy constants (np.eye, a triangular mask, FFT weights) " \
                  "that meet the CuPy values: refused as mixing; they need like="
NOT_ON_CUPY = {
    **dict.fromkeys(["where", "nll_loss", "gather", "take_along_axis", "scatter_add", "scatter_along_axis", "inv",
                     "inv_inf", "det", "logabsdet", "slogdet_phase", "solve", "cholesky", "cofactor", "eigh_w",
                     "eigh_v", "eig_w", "eig_v", "solve_triangular", "solve_sylvester", "sqrtm"], _OWN_DATA),
    **dict.fromkeys(["erf", "digamma", "polygamma", "multigammaln", "binary_cross_entropy", "convolve", "expm",
                     "odeint", "setitem"], _NUMPY_CODE),
    **dict.fromkeys(["pad", "trace"], _INDEX_ADD),
    **dict.fromkeys(["svd_u", "svd_vt", "qr_q", "qr_r", "irfftn", "tril", "triu"], _RULE_CONSTANTS),
}
# single rows of ops whose other rows run
NOT_ON_CUPY_ROWS = {
    "prod with zeros": _OWN_DATA,
    **dict.fromkeys(["matrix_power(3, 3) n=0", "matrix_power(3, 3) n=1", "matrix_power(3, 3) n=2",
                     "matrix_power(2, 3, 3) n=5"], _OWN_DATA),
    **dict.fromkeys(["einsum('ii->')((3, 3),)", "einsum('ii->i')((3, 3),)", "einsum('ii')((3, 3),)",
                     "einsum('iij->j')((2, 2, 3),)", "einsum('ii,i->i')((3, 3), (3,))"],
                    "a repeated letter's gradient is an einsum with a NumPy identity: " + _RULE_CONSTANTS),
    "repeat((3,),)": _INDEX_ADD,
    # integer-array indices are NumPy arrays: they meet the CuPy values in the forward or in index_add's np.add.at
    **dict.fromkeys([
         'x[[0, 2, 0]]',
         'x[mask]',
         'index_add repeated',
         'trace(3, 3) {}',
         'diagonal(3, 3) {}',
         "trace(3, 4) {'offset': 1}",
         "diagonal(3, 4) {'offset': 1}",
         "trace(3, 3) {'offset': -1}",
         "diagonal(3, 3) {'offset': -1}",
         "trace(2, 3, 3) {'axis1': 1, 'axis2': 2}",
         "diagonal(2, 3, 3) {'axis1': 1, 'axis2': 2}",
         "trace(3, 4, 2) {'offset': 1, 'axis1': 2, 'axis2': 0}",
         "diagonal(3, 4, 2) {'offset': 1, 'axis1': 2, 'axis2': 0}",
         'trace',
         'diag(3,) k=0',
         'diag(3,) k=1',
         'diag(2,) k=-2',
         'diag(3, 4) k=0',
         'diag(3, 4) k=-1',
         'diag(3, 4) k=2',
         'trace(np.int64 offset and axes)',
         'diag(x, np.int32(-1))',
         'solve_banded((1, 1))'], _INTEGER_INDEX),
}


def _on_cupy(c):
    return c.op not in NOT_ON_CUPY and str(c) not in NOT_ON_CUPY_ROWS


ROWS = [c for c in ALL if _on_cupy(c)]
REFUSED = [c for c in ALL if not _on_cupy(c)]


@pytest.mark.parametrize("c", ROWS, ids=[str(c) for c in ROWS])
def test_op_table_row_on_cupy_values_and_backward(cp, c):
    xs = c.inputs(seed=2)
    ts = [dg.tensor(cp.asarray(x), requires_grad=True) for x in xs]
    expected_out = c.ref(*xs)
    cotangent = np.random.default_rng(3).standard_normal(np.shape(expected_out))
    out = c.f(*ts)
    assert is_cupy(out._value), type(out._value)
    out.backward(cp.asarray(cotangent))
    np.testing.assert_allclose(_host(out._value), expected_out, rtol=1e-10, atol=1e-12)
    expected = [dg.tensor(x, requires_grad=True) for x in xs]
    c.f(*expected).backward(cotangent)
    for t, e in zip(ts, expected):
        assert (t.grad is None) == (e.grad is None)
        if t.grad is not None:
            assert is_cupy(t.grad._value)  # the gradient stays on the device
            got = _host(t.grad._value)
            assert got.shape == e.grad.shape and got.dtype == e.grad.dtype
            np.testing.assert_allclose(got, e.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("c", REFUSED, ids=[str(c) for c in REFUSED])
def test_op_table_rows_not_on_cupy_refuse_naming_the_array_type(cp, c):
    ts = [dg.tensor(cp.asarray(x), requires_grad=True) for x in c.inputs(seed=2)]
    cotangent = np.random.default_rng(3).standard_normal(np.shape(c.ref(*c.inputs(seed=2))))
    with pytest.raises(TypeError) as info:
        c.f(*ts).backward(cp.asarray(cotangent))
    text = str(info.value)
    assert "cupy ndarray" in text or "CuPy array" in text, text
    assert re.search(r"(test_cupy|op_table\w*)\.py:\d+", text), text  # the user's line (a row's is in op_table*.py)


# -- values, host copies, seeds and .grad -----------------------------------------------------------------


def test_tensor_keeps_a_cupy_value_and_copies_to_the_host_only_when_asked(cp):
    x = cp.asarray(np.array([[1.5, -2.0], [3.0, 4.0]]))
    for t in (dg.tensor(x), dg.tensor(x, requires_grad=True), dg.Tensor(x), dg.tensor(x, dtype=np.float32)):
        assert is_cupy(t._value) and t.shape == (2, 2)
        assert t._value is not x  # copied on the device, as dg.tensor copies NumPy data
    assert dg.tensor(x, dtype=np.float32).dtype == np.float32
    t = dg.tensor(x)
    host = t.numpy()
    assert type(host) is np.ndarray and not host.flags.writeable
    np.testing.assert_array_equal(host, [[1.5, -2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(t), host)
    assert t.tolist() == [[1.5, -2.0], [3.0, 4.0]]
    one = dg.sum(t)
    assert is_cupy(one._value)
    assert float(one) == 6.5 and one.item() == 6.5 and bool(one) is True and int(one) == 6
    assert repr(dg.tensor(cp.asarray(np.array([1.0, 2.0])), requires_grad=True)) == \
        "tensor([1., 2.], device='cuda:0', requires_grad=True)"


def test_backward_seed_and_grad_follow_the_cupy_type(cp):
    x0 = np.array([0.5, -1.0, 2.0])
    x = dg.tensor(cp.asarray(x0), requires_grad=True)
    y = dg.sum(dg.sin(x) * x + 2.0 * x - x / 3.0)  # Python numbers beside a CuPy tensor are fine
    y.backward()  # the seed is made with like=: a CuPy one
    expected = np.cos(x0) * x0 + np.sin(x0) + 2.0 - 1.0 / 3.0
    assert is_cupy(x.grad._value)
    np.testing.assert_allclose(_host(x.grad._value), expected, rtol=1e-12)
    dg.sum(x * x).backward()  # accumulation stays on the device
    assert is_cupy(x.grad._value)
    np.testing.assert_allclose(_host(x.grad._value), expected + 2 * x0, rtol=1e-12)
    x.zero_grad(set_to_none=False)
    assert is_cupy(x.grad._value) and not _host(x.grad._value).any()
    z = dg.tensor(cp.asarray(x0), requires_grad=True)
    (dg.sum(z) * 3.0).backward(grad=2.0)  # a Python number as grad= becomes a CuPy seed
    np.testing.assert_allclose(_host(z.grad._value), [6.0, 6.0, 6.0])


def test_grad_value_and_grad_and_vjp_on_cupy_arrays(cp):
    x0 = np.array([[0.3, -1.2], [2.0, 0.7]])
    x = cp.asarray(x0)
    g = dg.grad(lambda a: dg.sum(dg.tanh(a) * 2.0))(x)
    assert is_cupy(g)
    np.testing.assert_allclose(_host(g), 2 / np.cosh(x0) ** 2, rtol=1e-12)
    value, (gw, gb) = dg.value_and_grad(lambda w, b: dg.sum(dg.exp(w * b)), argnums=(0, 1))(x, cp.asarray(x0[0]))
    assert is_cupy(gw) and is_cupy(gb)
    np.testing.assert_allclose(_host(gw), x0[0] * np.exp(x0 * x0[0]), rtol=1e-12)
    np.testing.assert_allclose(_host(gb), (x0 * np.exp(x0 * x0[0])).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(float(value), np.exp(x0 * x0[0]).sum(), rtol=1e-12)
    # an input the function does not use gets zeros of its own type
    unused = dg.grad(lambda a, b: dg.sum(a * a), argnums=1)(x, cp.asarray(x0))
    assert is_cupy(unused) and not _host(unused).any()


def test_setting_grad_and_value_keeps_the_device(cp):
    t = dg.tensor(cp.asarray(np.zeros(3)), requires_grad=True)
    t.grad = cp.asarray(np.ones(3))
    assert is_cupy(t.grad._value)
    with pytest.raises(TypeError, match=r"Tensor.grad: the gradient is a numpy ndarray, but the tensor holds a cupy "
                                        r"ndarray; move it with cupy.asarray\(g\) or g.get\(\).*test_cupy.py:\d+"):
        t.grad = np.ones(3)
    np.testing.assert_array_equal(_host(t.grad._value), np.ones(3))  # unchanged by the refused set
    t.value = cp.asarray(np.arange(3.0))
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match=r"Tensor.value: mixes a cupy ndarray \(GPU memory\) with a numpy ndarray "
                                        r"\(host memory\).*test_cupy.py:\d+"):
        t.value = np.ones(3)
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0])


# -- mixing errors ----------------------------------------------------------------------------------------

_MIX = r"mixes a cupy ndarray \(GPU memory\) with a numpy ndarray \(host memory\).*cupy.asarray\(x\).*x.get\(\)"


def test_cupy_with_numpy_in_an_op_names_the_op_both_types_and_the_line(cp):
    c = dg.tensor(cp.asarray(np.ones(3)), requires_grad=True)
    n = dg.tensor(np.ones(3), requires_grad=True)
    for f, op in [(lambda: c * n, "multiply"), (lambda: n + c, "add"), (lambda: dg.exp(c) @ np.ones(3), "matmul"),
                  (lambda: c * np.ones(3), "multiply"), (lambda: dg.where(c > 0, c, np.zeros(3)), "where")]:
        with pytest.raises(TypeError, match=op + ": " + _MIX + r".*\(inputs: .*cupy ndarray.*test_cupy.py:\d+"):
            f()


def test_a_numpy_grad_for_a_cupy_output_is_refused_in_backward(cp):
    c = dg.tensor(cp.asarray(np.ones(3)), requires_grad=True)
    with pytest.raises(TypeError, match="backward: " + _MIX + r".*test_cupy.py:\d+"):
        (c * 2.0).backward(np.ones(3))
    assert c.grad is None  # nothing was accumulated
    n = dg.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match="backward: " + _MIX + r".*test_cupy.py:\d+"):
        (n * 2.0).backward(cp.asarray(np.ones(3)))


def test_a_rule_giving_a_numpy_cotangent_for_a_cupy_value_is_refused(cp, monkeypatch):
    """A faulty gradient rule (here exp's, replaced by one making a host array) must not leave a NumPy
    gradient on a CuPy tensor, nor fail inside the sweep with CuPy's bare message."""
    monkeypatch.setattr(dg.exp.op, "vjp", (lambda g, out, x: np.full(3, 2.0),))
    c = dg.tensor(cp.asarray(np.ones(3)), requires_grad=True)
    with pytest.raises(TypeError, match=r"backward: the gradient of a cupy ndarray leaf came out as a numpy ndarray"
                                        r".*like=g.*test_cupy.py:\d+"):
        dg.sum(dg.exp(c)).backward()
    assert c.grad is None
    d = dg.tensor(cp.asarray(np.ones(3)), requires_grad=True)
    with pytest.raises(TypeError, match=r"backward: a CuPy array met a NumPy array in the backward pass .*like=g.*"
                                        r"test_cupy.py:\d+"):
        dg.sum(dg.exp(d) + d * d).backward()  # the host cotangent meets the device one inside the sweep
    assert d.grad is None


def test_mixing_error_is_none_without_mixing(cp):
    c = cp.asarray(np.ones(2))
    assert mixing_error("add", (c, 2.0, np.float32(1.0))) is None  # numbers are no NumPy arrays
    assert mixing_error("add", (np.ones(2), np.ones(2))) is None
    assert mixing_error("add", (c, np.ones(2))) is not None
    assert array_type_name(c) == "cupy ndarray" and is_foreign(c) and not is_foreign(np.ones(2))


def test_cupy_with_dask_is_refused_in_the_op(cp, monkeypatch):
    """Dask registers CuPy as a chunk type, so it takes a CuPy operand lazily and CuPy's refusal would come
    only at compute time; dagrad refuses in the op. (The stand-in is registered as a chunk type for this.)"""
    da = pytest.importorskip("dask.array")
    from dask.array import chunk_types

    if getattr(cp, "_dagrad_stand_in", False):
        monkeypatch.setattr(chunk_types, "_HANDLED_CHUNK_TYPES", [*chunk_types._HANDLED_CHUNK_TYPES, cp.ndarray])
    lazy = dg.tensor(da.from_array(np.ones(4), chunks=2), requires_grad=True)
    gpu = cp.asarray(np.ones(4))
    with pytest.raises(TypeError, match=r"multiply: mixes a cupy ndarray \(GPU memory\) with a dask Array \(host "
                                        r"memory\).*test_cupy.py:\d+"):
        lazy * gpu
    with pytest.raises(TypeError, match=r"add: mixes a cupy ndarray .* with a dask Array .*test_cupy.py:\d+"):
        dg.tensor(gpu) + lazy


def test_cupy_with_dask_unregistered_is_refused_too(fake):
    da = pytest.importorskip("dask.array")
    lazy = dg.tensor(da.from_array(np.ones(4), chunks=2))
    with pytest.raises(TypeError, match=r"multiply: mixes a cupy ndarray .* with a dask Array .*test_cupy.py:\d+"):
        lazy * fake.asarray(np.ones(4))


def test_numpy_path_needs_no_cupy_import():
    """The checks ask sys.modules: without CuPy imported nothing changes for NumPy values."""
    if "cupy" in sys.modules:
        pytest.skip("CuPy is imported in this process")
    assert not is_cupy(np.ones(2)) and mixing_error("add", (np.ones(2), np.ones(2))) is None
    x = dg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    dg.sum(x * x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def _well_conditioned(n, seed):
    a = np.random.default_rng(seed).uniform(-1.0, 1.0, (n, n))
    return a @ a.T + n * np.eye(n)  # symmetric positive definite: every op below is defined there


@pytest.mark.parametrize("f", [dg.linalg.inv, dg.linalg.det, lambda a: dg.linalg.solve(a, dg.sum(a, axis=0) * 0.5)],
                         ids=["inv", "det", "solve"])
def test_linear_algebra_on_cupy_matrices(cp, f):
    a0 = _well_conditioned(3, 4)
    a = dg.tensor(cp.asarray(a0), requires_grad=True)
    expected = dg.tensor(a0, requires_grad=True)
    out, ref = f(a), f(expected)
    assert is_cupy(out._value)
    np.testing.assert_allclose(_host(out._value), ref.numpy(), rtol=1e-10, atol=1e-12)
    dg.sum(out * out).backward()
    dg.sum(ref * ref).backward()
    assert is_cupy(a.grad._value)
    np.testing.assert_allclose(_host(a.grad._value), expected.grad.numpy(), rtol=1e-8, atol=1e-10)
