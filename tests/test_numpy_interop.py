"""dagrad.numpy as a stand-in for NumPy, and NumPy's own functions on Tensors."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp

# The SPEC's "Operations" list: each is a function in dagrad and dagrad.numpy and, where
# ndarray has the method, a Tensor method.
SPEC_OPS = """
add subtract multiply divide true_divide power negative positive abs absolute sign reciprocal square sqrt exp exp2
expm1 log log2 log10 log1p maximum minimum fmax fmin clip where mod floor ceil round
sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh hypot
sigmoid relu softplus softmax log_softmax logsumexp erf
sum mean prod max min amax amin var std norm cumsum argmax argmin
matmul dot vdot inner outer tensordot einsum trace diag
reshape ravel transpose swapaxes moveaxis expand_dims squeeze broadcast_to concatenate stack split repeat tile flip
pad triu tril
equal not_equal less less_equal greater greater_equal isfinite isnan
""".split()
SPEC_LINALG = ["inv", "det", "slogdet", "solve", "cholesky", "norm"]


@pytest.mark.parametrize("name", SPEC_OPS)
def test_every_spec_op_is_in_both_namespaces_and_a_method_where_numpy_has_one(name):
    assert callable(getattr(dg, name)), name
    assert getattr(dnp, name) is getattr(dg, name)
    if hasattr(np.ndarray, name):
        assert hasattr(dg.Tensor, name), f"ndarray.{name} exists but Tensor.{name} does not"


@pytest.mark.parametrize("name", SPEC_LINALG)
def test_linalg_namespace(name):
    assert callable(getattr(dg.linalg, name))
    assert getattr(dnp.linalg, name) is getattr(dg.linalg, name)


def test_numerical_code_differentiates_unchanged():
    def model(params, x):  # written against NumPy's API, only the import changed
        w, b = params
        hidden = dnp.tanh(dnp.dot(x, w) + b)
        return dnp.mean(dnp.log1p(dnp.exp(hidden)) ** 2) + 0.1 * dnp.sum(w**2)

    rng = np.random.default_rng(0)
    params = (rng.standard_normal((3, 2)), rng.standard_normal(2))
    x = rng.standard_normal((5, 3))
    gw, gb = dg.grad(model)(params, x)
    assert gw.shape == (3, 2) and gb.shape == (2,)
    assert dg.gradcheck(lambda w, b: model((w, b), x), *params)
    # with plain arrays it is plain NumPy
    assert isinstance(model(params, x), (float, np.floating))


def test_array_stacks_tensors_differentiably():
    def f(x):
        v = dnp.array([x[0] ** 2, x[0] * x[1], 3.0 * x[1]])
        return dnp.sum(v * dnp.array([1.0, 2.0, 3.0]))

    np.testing.assert_allclose(dg.grad(f)(np.array([1.0, 2.0])), [2 + 4, 2 + 9])


def test_constants_and_helpers_pass_through():
    assert dnp.pi == np.pi and dnp.newaxis is None and dnp.float64 is np.float64
    np.testing.assert_array_equal(dnp.arange(3), np.arange(3))
    np.testing.assert_array_equal(dnp.eye(2), np.eye(2))
    np.testing.assert_array_equal(dnp.linspace(0, 1, 3), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(dnp.zeros(2), np.zeros(2))


def test_numpy_ufuncs_on_tensors_record():
    t = dg.tensor([0.5, 1.0], requires_grad=True)
    a = np.array([2.0, 3.0])
    for y in (np.sin(t), a * t, t * a, np.exp(t) + a, np.maximum(t, a / 4), np.hypot(t, a)):
        assert isinstance(y, dg.Tensor) and y.requires_grad


def test_numpy_functions_on_tensors_record():
    t = dg.tensor([[0.5, 1.0], [2.0, 3.0]], requires_grad=True)
    a = np.ones((2, 2))
    y = np.sum(t, axis=0) + np.mean(t) + np.concatenate([t, a]).sum(0) + np.dot(t, a).sum(0)
    assert isinstance(y, dg.Tensor)
    y.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 1 + 2 * 0.25 + 1 + 2)  # the mean is broadcast to both entries
    assert np.shape(t) == (2, 2) and np.ndim(t) == 2
    np.testing.assert_allclose(np.linalg.norm(dg.tensor([3.0, 4.0])).item(), 5.0)


def test_asarray_gives_the_values():
    t = dg.tensor([1.0, 2.0], requires_grad=True) * 2
    arr = np.asarray(t)
    assert type(arr) is np.ndarray
    np.testing.assert_array_equal(arr, [2.0, 4.0])


def test_value_only_numpy_functions_work():
    t = dg.tensor([3.0, 1.0, 2.0])
    assert np.allclose(t, [3.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.argsort(t), [1, 2, 0])


def test_unsupported_numpy_function_is_a_clear_error():
    t = dg.tensor([3.0, 1.0])
    with pytest.raises(TypeError, match="numpy.resize has no differentiable dagrad version"):
        np.resize(t, 3)
    assert np.array_equal(np.sort(t).numpy(), [1.0, 3.0])  # np.sort dispatches to dagrad's (differentiable)
    assert float(np.median(t)) == 2.0  # and np.median to dagrad.numpy.median (issue 16)
    with pytest.raises(TypeError, match="numpy.add.*not supported"):
        np.add(t, 1.0, out=np.empty(2))


def test_unsupported_dtypes_name_the_op():
    with pytest.raises(TypeError, match="sin"):
        dg.sin(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="exp"):
        dg.exp(np.array([object()]))


def test_integer_and_boolean_indexing_out_of_range():
    t = dg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(IndexError):
        t[np.array([0, 3])]
    with pytest.raises(IndexError):
        t[np.array([True, False])]


def test_numpy_functions_on_tensors_check_axes_as_numpy():
    # np.sum(t, axis=...) runs dagrad's sum: NumPy integer axes work, bad axes are NumPy's errors
    t = dg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    out = np.sum(t, axis=np.int64(-1))
    assert isinstance(out, dg.Tensor)
    np.testing.assert_array_equal(out.numpy(), [3.0, 12.0])
    line = f"test_numpy_interop.py:{sys._getframe().f_lineno + 1}"
    with pytest.raises(np.exceptions.AxisError) as info: np.sum(t, axis=2)  # noqa: E701
    assert "sum: axis 2 is out of bounds" in str(info.value) and "(2, 3) float64" in str(info.value)
    assert line in str(info.value)
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        np.moveaxis(t, 1.0, 0)


def test_size_along_axes():
    x = np.ones((2, 3, 4))
    t = dg.tensor(x)
    assert np.size(t, 1) == dnp.size(x, 1) == np.size(x, 1) == 3
    assert np.size(t, (0, -1)) == np.size(x, (0, -1)) == 8
    assert dnp.size(t, np.int64(2)) == 4 and dnp.size(t) == 24
    with pytest.raises(np.exceptions.AxisError, match=r"size: axis 3 is out of bounds .*\(2, 3, 4\) float64"):
        dnp.size(t, 3)
