"""Dask arrays as a Tensor's value, in eager mode (issue 17's foundation): every differentiable row of the op
table on chunked Dask inputs stays lazy through the forward pass and `backward` (no compute happens: the
scheduler refuses), and equals NumPy's once computed."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="Dask is an optional extra: pip install dagrad[dask]")
import dask  # noqa: E402

import dagrad as dg  # noqa: E402
from op_table import CASES, COMPOSITES  # noqa: E402

ALL = [c for c in CASES + COMPOSITES if c.differentiable]

# Ops whose rows cannot run on Dask values yet, with the reason (docs/backends.md lists them too). Each of
# their rows raises an error naming the op and the Dask array type, without computing anything (tested below).
_NUMPY_ONLY = "NumPy-only code (LAPACK, SciPy, a write into a NumPy array): refused (Op.numpy_only)"
_DASK_LINALG = "Dask's linalg needs 2-d arrays in one square chunk (LU, Cholesky); its svd has no compute_uv"
_FFT = "Dask's FFT needs one chunk along each transformed axis (rechunk first)"
NOT_YET = {
    **dict.fromkeys(["eigh_w", "eigh_v", "eig_w", "eig_v", "det", "logabsdet", "slogdet_phase", "pinv", "cofactor",
                     "solve_triangular", "solve_sylvester", "expm", "sqrtm", "odeint", "polygamma", "digamma",
                     "multigammaln", "convolve", "binary_cross_entropy", "qr_q", "qr_r"], _NUMPY_ONLY),
    **dict.fromkeys(["svd_s", "svd_u", "svd_vt", "cholesky", "inv", "inv_inf", "solve"], _DASK_LINALG),
    **dict.fromkeys(["fftn", "rfftn", "irfftn"], _FFT),
    "einsum": "a repeated letter (a diagonal, 'ii->') goes through Dask's einsum, which refuses it",
    "reshape": "Dask reshapes only by merging or splitting axes evenly across chunks",
    # its indexing rows run lazily (tests/test_dask_indexing.py runs each with its gradient); one row of the op is
    # solve_banded, which goes through solve: Dask's linalg
    "getitem": _DASK_LINALG,
}

ROWS = [c for c in ALL if c.op not in NOT_YET]
REFUSED = [c for c in ALL if c.op in NOT_YET]


def _forbidden(*args, **kwargs):
    raise AssertionError("a Dask array was computed where it should have stayed lazy")


def _lazy():
    """Inside: any compute of a Dask array fails the test (the scheduler itself refuses)."""
    return dask.config.set(scheduler=_forbidden)


def _chunked(x):
    """`x` as a Dask array of at least 2 chunks along its first axis of size 2 or more (one chunk if none)."""
    chunks = list(x.shape)
    for axis, n in enumerate(x.shape):
        if n >= 2:
            chunks[axis] = (n + 1) // 2
            break
    return da.from_array(x, chunks=tuple(chunks) or ())


@pytest.mark.parametrize("c", ROWS, ids=[str(c) for c in ROWS])
def test_op_table_row_on_dask_values_and_backward(c):
    xs = c.inputs(seed=2)
    ts = [dg.tensor(_chunked(x), requires_grad=True) for x in xs]
    cotangent = np.random.default_rng(3).standard_normal(np.shape(c.ref(*xs)))
    with _lazy():
        out = c.f(*ts)
        assert isinstance(out._value, da.Array)
        out.backward(cotangent)
        for t in ts:
            assert t.grad is None or isinstance(t.grad._value, da.Array)
    np.testing.assert_allclose(out._value.compute(), c.ref(*xs), rtol=1e-12, atol=1e-12)
    expected = [dg.tensor(x, requires_grad=True) for x in xs]
    c.f(*expected).backward(cotangent)
    for t, e in zip(ts, expected):
        assert (t.grad is None) == (e.grad is None)
        if t.grad is not None:
            got = t.grad._value.compute()
            assert got.shape == e.grad.shape and got.dtype == e.grad.dtype
            np.testing.assert_allclose(got, e.grad.numpy(), rtol=1e-10, atol=1e-12)


def _logistic_loss(w, b, x, y):
    p = dg.sigmoid(x @ w + b)
    return -dg.mean(y * dg.log(p) + (1 - y) * dg.log(1 - p))


def _logistic_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 3))
    y = (rng.uniform(size=200) < 0.5).astype(np.float64)
    return x, y, rng.standard_normal(3) * 0.1, 0.3


def _logistic_gradient_by_hand(w, b, x, y):
    """The gradient in plain NumPy: mean over rows of (p - y) x, and of (p - y)."""
    r = 1 / (1 + np.exp(-(x @ w + b))) - y
    return (x * r[:, None]).mean(axis=0), r.mean()


def test_logistic_regression_gradient_of_numpy_parameters_over_dask_data():
    x, y, w0, b0 = _logistic_data()
    dx, dy = da.from_array(x, chunks=(50, 3)), da.from_array(y, chunks=50)  # 4 chunks of rows
    w, b = dg.tensor(w0, requires_grad=True), dg.tensor(b0, requires_grad=True)
    with _lazy():
        loss = _logistic_loss(w, b, dx, dy)
        loss.backward()
    # the gradients of NumPy parameters over Dask data are Dask reductions over the chunks: one compute
    assert isinstance(loss._value, da.Array) and isinstance(w.grad._value, da.Array)
    assert w.grad._value.dask is not None and len(dx.chunks[0]) == 4
    value, gw, gb = dask.compute(loss._value, w.grad._value, b.grad._value)
    expected_w, expected_b = _logistic_gradient_by_hand(w0, b0, x, y)
    np.testing.assert_allclose(gw, expected_w, rtol=1e-12)
    np.testing.assert_allclose(gb, expected_b, rtol=1e-12)
    np.testing.assert_allclose(value, _logistic_loss(w0, b0, x, y), rtol=1e-12)


def test_grad_and_value_and_grad_on_dask_arrays():
    x, y, w0, b0 = _logistic_data()
    dx = da.from_array(x, chunks=(50, 3))
    with _lazy():
        gx = dg.grad(lambda a: dg.sum(dg.tanh(a) * 2.0))(dx)  # the gradient of a Dask input is a Dask array
        value, (gw, gb) = dg.value_and_grad(_logistic_loss, argnums=(0, 1))(w0, b0, dx, y)
    assert isinstance(gx, da.Array) and isinstance(gw, da.Array)
    np.testing.assert_allclose(gx.compute(), 2 / np.cosh(x) ** 2, rtol=1e-12)
    expected_w, expected_b = _logistic_gradient_by_hand(w0, b0, x, y)
    np.testing.assert_allclose(gw.compute(), expected_w, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gb), expected_b, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(value), _logistic_loss(w0, b0, x, y), rtol=1e-12)


def test_numpy_with_dask_gives_dask():
    t = dg.tensor(np.arange(3.0), requires_grad=True)
    d = dg.tensor(da.from_array(np.ones(3), chunks=2))
    with _lazy():
        out = t * d + np.ones(3)
        (out * out).sum().backward()
    assert isinstance(out._value, da.Array) and isinstance(t.grad._value, da.Array)
    np.testing.assert_allclose(t.grad.numpy(), 2 * (np.arange(3.0) + 1))


def test_tensor_keeps_a_dask_array_without_computing_or_copying():
    x = da.from_array(np.arange(6.0).reshape(2, 3), chunks=(1, 3))
    with _lazy():
        for t in (dg.tensor(x), dg.tensor(x, requires_grad=True), dg.Tensor(x), dg.tensor(x, dtype=np.float32)):
            assert isinstance(t._value, da.Array) and t.shape == (2, 3)
            text = repr(t)  # Dask's summary: printing computes nothing
            assert text.startswith("tensor(dask.array<") and "chunksize=(1, 3)" in text
    assert dg.tensor(x, dtype=np.float32).dtype == np.float32
    assert dg.tensor(x)._value.dask.keys() >= x.dask.keys()  # the same chunks: no data was copied


def test_explicit_conversions_compute():
    x = np.array([[1.5, -2.0], [3.0, 4.0]])
    t = dg.tensor(da.from_array(x, chunks=1))
    np.testing.assert_array_equal(t.numpy(), x)
    one = dg.sum(t)
    assert float(one) == x.sum() and one.item() == x.sum() and bool(one) is True
    with pytest.raises(ValueError, match=r"bool\(\): .*ambiguous.*shape \(2, 2\).*test_dask.py:\d+"), _lazy():
        bool(t)
    with pytest.raises(ValueError, match=r"item\(\): .*one-element.*test_dask.py:\d+"), _lazy():
        t.item()  # refused from the shape: nothing computed


def test_unknown_chunk_sizes_are_refused_where_a_shape_is_needed():
    x = da.from_array(np.arange(6.0), chunks=3)
    masked = x[x > 2.0]  # sizes known only after a compute
    t = dg.tensor(masked, requires_grad=True)
    with pytest.raises(ValueError, match=r"backward: needs the shape of a Dask array whose chunk sizes are unknown "
                                         r".*compute_chunk_sizes.*test_dask.py:\d+"):
        (t * 2.0).backward(np.ones(3))
    with pytest.raises(ValueError, match=r"Tensor.size: needs the shape .*unknown"):
        t.size  # noqa: B018
    y = dg.tensor(masked.compute_chunk_sizes(), requires_grad=True)
    (y * 2.0).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0, 2.0])


def test_writing_into_a_dask_value_is_refused_naming_the_line():
    t = dg.tensor(da.zeros(4, chunks=2))
    with pytest.raises(TypeError, match=r"Tensor.value: cannot write into a Dask array in place .*test_dask.py:\d+"):
        t.value = np.ones(4)


def test_an_op_refusing_a_dask_value_names_the_op_and_the_array_type():
    t = dg.tensor(da.from_array(np.ones((3, 3)), chunks=2))
    with pytest.raises(ValueError, match=r"einsum: .*\(3, 3\) float64 dask Array.*test_dask.py:\d+"):
        dg.einsum("ii->", t)  # (x[rows, cols] works lazily now: tests/test_dask_indexing.py)


@pytest.mark.parametrize("c", REFUSED, ids=[str(c) for c in REFUSED])
def test_op_table_rows_not_yet_on_dask_refuse_without_computing(c):
    ts = [dg.tensor(_chunked(x), requires_grad=True) for x in c.inputs(seed=2)]
    cotangent = np.random.default_rng(3).standard_normal(np.shape(c.ref(*c.inputs(seed=2))))
    try:
        with _lazy():
            out = c.f(*ts)
            out.backward(cotangent)
    except (TypeError, ValueError, NotImplementedError) as err:
        text = str(err)
        assert "should have stayed lazy" not in text  # refused, not computed
        assert "dask Array" in text  # names the array type
        assert ".py:" in text  # and the user's line
    else:  # a row of a listed op that works (another row of the op does not): its values must be right
        np.testing.assert_allclose(out._value.compute(), c.ref(*c.inputs(seed=2)), rtol=1e-10, atol=1e-12)


def test_grad_accumulates_and_create_graph_stays_lazy():
    x0 = np.array([0.5, -1.0, 2.0, 1.5])
    x = dg.tensor(da.from_array(x0, chunks=2), requires_grad=True)
    with _lazy():
        (x**3).sum().backward()
        (x * 2.0).sum().backward()  # .grad accumulates: 3 x^2 + 2
        assert isinstance(x.grad._value, da.Array)
    np.testing.assert_allclose(x.grad.numpy(), 3 * x0**2 + 2, rtol=1e-12)
    x.grad = None
    with _lazy():
        (x**3).sum().backward(create_graph=True)  # the gradient 3 x^2, recorded
        first = x.grad
        x.grad = None
        first.sum().backward()  # its gradient: 6 x
        assert isinstance(x.grad._value, da.Array)
    np.testing.assert_allclose(x.grad.numpy(), 6 * x0, rtol=1e-12)


def test_jvp_on_dask_arrays_stays_lazy():
    x0 = np.array([0.5, -1.0, 2.0])
    x = da.from_array(x0, chunks=2)
    with _lazy():
        out, tangent = dg.jvp(lambda a: dg.sin(a) * a, (x,), (np.ones(3),))
    assert isinstance(out, da.Array) and isinstance(tangent, da.Array)
    np.testing.assert_allclose(tangent.compute(), np.cos(x0) * x0 + np.sin(x0), rtol=1e-12)
