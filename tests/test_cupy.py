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
_RULE_CONSTANTS = "its gradient rule (or forward) makes NumPy constants (np.eye, a triangular mask, FFT weights) " \
                  "that meet the CuPy values: refused as mixing; they need like="
NOT_ON_CUPY = {
    **dict.fromkeys(["where", "nll_loss", "gather", "take_along_axis", "scatter_add", "scatter_along_axis", "inv",
                     "inv_inf", "det", "logabsdet", "slogdet_phase", "solve", "cholesky", "cofactor", "eigh_w",
                     "eigh_v", "eig_w", "eig_v", "solve_triangular", "solve_sylvester", "sqrtm"], _OWN_DATA),
    **dict.fromkeys(["erf", "digamma", "polygamma", "i1", "i1e", "iv", "ive", "j1", "jn", "y1", "yn", "gammainc",
                     "gammaincc", "betainc", "binary_cross_entropy", "convolve", "expm", "odeint", "setitem"],
                    _NUMPY_CODE),
    **dict.fromkeys(["getitem", "index_add", "flip", "split", "pad", "trace"], _INDEX_ADD),
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
    **dict.fromkeys(["norm(3, 4) {'ord': 2}", "norm(3, 4) {'ord': -2}",
                     "norm(2, 3, 4) {'ord': 2, 'axis': (2, 0), 'keepdims': True}", "fftn s=(3, 2)",
                     "rfft2 s=(3, 3) ortho", "repeat((3,),)"], _INDEX_ADD),
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
