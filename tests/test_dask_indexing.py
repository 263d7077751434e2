"""Integer-array indexing and its scatter-adds on Dask values (issue 17): x[idx], take_along_axis, gather, nll_loss
and cross_entropy on row-chunked logits, diagonal/trace, setitem, sort. Each stays lazy through the forward pass and
`backward` (the scheduler refuses any compute there), and equals NumPy's values and gradients, repeated indices
included."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="Dask is an optional extra: pip install dagrad[dask]")
import dask  # noqa: E402

import dagrad as dg  # noqa: E402
import dagrad.nn.functional as F  # noqa: E402
from op_table import CASES  # noqa: E402
from test_dask import _lazy  # noqa: E402  (a scheduler that refuses any compute)


def _both(f, x0, chunks, cotangent_seed=3):
    """f on a Dask-backed tensor (lazily, with backward) and on a NumPy one: (value, gradient) of each."""
    t = dg.tensor(da.from_array(x0, chunks=chunks), requires_grad=True)
    with _lazy():
        out = f(t)
        assert isinstance(out._value, da.Array)
        ct = np.random.default_rng(cotangent_seed).standard_normal(out.shape)
        out.backward(ct)
        assert isinstance(t.grad._value, da.Array)
    e = dg.tensor(x0, requires_grad=True)
    expected = f(e)
    expected.backward(ct)
    return (out._value.compute(), t.grad._value.compute()), (expected.numpy(), e.grad.numpy())


def _assert_same(got, expected):
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


GETITEM_ROWS = [c for c in CASES if c.op == "getitem" and "solve_banded" not in str(c)]


@pytest.mark.parametrize("c", GETITEM_ROWS, ids=[str(c) for c in GETITEM_ROWS])
def test_op_table_getitem_rows_on_dask(c):
    (x0,) = c.inputs(seed=2)
    _assert_same(*_both(c.f, x0, 2))


X3 = np.random.default_rng(0).standard_normal((5, 4, 6))
INDICES = {
    "x[[0, 2, 0]]": [0, 2, 0],
    "x[:, [3, 1, 3, 3]]": (slice(None), [3, 1, 3, 3]),
    "x[..., [5, -1, 0]]": (Ellipsis, [5, -1, 0]),
    "x[0, :, [1, 2]] (NumPy moves the array axis first; Dask alone would not)": (0, slice(None), [1, 2]),
    "x[-1, [1, -1]] (adjacent)": (-1, [1, -1]),
    "x[[0, 4, 0], [1, 1, 1]] (repeated pairs)": ([0, 4, 0], [1, 1, 1]),
    "x[[[0, 1], [1, 1]]] (2-d indices)": np.array([[0, 1], [1, 1]]),
    "x[:, [[1], [0]], 2:5]": (slice(None), np.array([[1], [0]]), slice(2, 5)),
    "x[[1, 3], :, [0, 0]] (apart)": ([1, 3], slice(None), [0, 0]),
    "x[1:, None, [2, 2]]": (slice(1, None), None, [2, 2]),
    "x[mask]": np.array([True, False, True, True, False]),
    "x[::2, mask]": (slice(None, None, 2), np.array([False, True, True, False])),
    "x[..., None]": (Ellipsis, None),
}


@pytest.mark.parametrize("index", INDICES.values(), ids=INDICES.keys())
def test_integer_array_indexing_values_and_gradients_equal_numpys(index):
    _assert_same(*_both(lambda t: t[index], X3, (2, 3, 4)))


def test_the_gradient_of_many_repeated_rows_adds_up_across_many_chunks():
    x0 = np.random.default_rng(1).standard_normal((1000, 3))
    idx = np.random.default_rng(2).integers(0, 1000, 3000)  # about 3 picks a row, spread over all chunks
    (value, grad), (ev, eg) = _both(lambda t: t[idx], x0, (97, 2))
    _assert_same((value, grad), (ev, eg))
    by_hand = np.zeros_like(x0)
    np.add.at(by_hand, idx, np.random.default_rng(3).standard_normal((3000, 3)))  # the cotangent, added in a loop
    np.testing.assert_allclose(grad, by_hand, rtol=1e-12, atol=1e-12)


def test_take_and_index_out_of_bounds():
    _assert_same(*_both(lambda t: dg.numpy.take(t, np.array([[1, 1], [0, 3]]), axis=1), X3, 2))
    t = dg.tensor(da.from_array(X3, chunks=2), requires_grad=True)
    with pytest.raises(IndexError, match=r"getitem: index 9 is out of bounds for axis 1 with size 4 .*dask Array.*"
                                         r"test_dask_indexing.py:\d+"), _lazy():
        t[:, [0, 9], [1, 1]]


# -- the classifier case: logits chunked along rows, integer targets (NumPy or chunked the same way)
LOGITS = np.random.default_rng(4).standard_normal((40, 5)) * 3
TARGETS = np.random.default_rng(5).integers(0, 5, 40)


@pytest.mark.parametrize("loss", [F.cross_entropy, F.nll_loss])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dask_targets", [False, True])
def test_losses_on_row_chunked_logits(loss, reduction, dask_targets):
    target = da.from_array(TARGETS, chunks=10) if dask_targets else TARGETS
    inputs = LOGITS if loss is F.cross_entropy else LOGITS - np.log(np.exp(LOGITS).sum(1, keepdims=True))
    got = _both(lambda t: loss(t, target, reduction=reduction), inputs, (10, 5))  # 4 chunks of rows
    expected = (-(inputs - np.log(np.exp(inputs).sum(1, keepdims=True)))[np.arange(40), TARGETS]
                if loss is F.cross_entropy else -inputs[np.arange(40), TARGETS])
    _assert_same(*got)
    np.testing.assert_allclose(got[0][0], {"mean": expected.mean(), "sum": expected.sum(), "none": expected}[reduction],
                               rtol=1e-12)


def test_cross_entropy_with_dask_targets_and_ignore_index_weight_and_smoothing():
    target = TARGETS.copy()
    target[[3, 17]] = -100
    dtarget = da.from_array(target, chunks=10)
    weight = np.linspace(0.5, 2.0, 5)
    for kw in ({}, {"weight": weight}, {"label_smoothing": 0.1}):
        got = _both(lambda t, kw=kw: F.cross_entropy(t, dtarget, **kw), LOGITS, (10, 5))
        expected = _both(lambda t, kw=kw: F.cross_entropy(t, target, **kw), LOGITS, (10, 5))[1]
        _assert_same(got[0], expected)


def test_dask_targets_are_checked_lazily_naming_the_loss_and_the_line():
    bad = TARGETS.copy()
    bad[33] = 7
    t = dg.tensor(da.from_array(LOGITS, chunks=(10, 5)), requires_grad=True)
    with _lazy():  # building the loss and its gradient reads no label
        loss = F.cross_entropy(t, da.from_array(bad, chunks=10))
        loss.backward()
    with pytest.raises(IndexError, match=r"cross_entropy: target labels must be class indices in \[0, 4\] .*got 7 "
                                         r"\(checked as the Dask array was computed\) at .*test_dask_indexing.py:\d+"):
        dask.compute(loss._value, t.grad._value)
    with pytest.raises(TypeError, match=r"nll_loss: class-index targets must be integers, got dtype float64"):
        F.nll_loss(t, da.from_array(TARGETS.astype(float), chunks=10))


def test_training_step_gradients_of_numpy_parameters_over_dask_examples():
    rng = np.random.default_rng(6)
    x0, w0 = rng.standard_normal((60, 3)), rng.standard_normal((3, 4)) * 0.5
    y0 = rng.integers(0, 4, 60)
    x, y = da.from_array(x0, chunks=(15, 3)), da.from_array(y0, chunks=15)
    w = dg.tensor(w0, requires_grad=True)
    with _lazy():
        loss = F.cross_entropy(x @ w, y)
        loss.backward()
    value, gw = dask.compute(loss._value, w.grad._value)
    logits = x0 @ w0
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(4)[y0]
    np.testing.assert_allclose(value, -np.log(p[np.arange(60), y0]).mean(), rtol=1e-12)
    np.testing.assert_allclose(gw, x0.T @ (p - onehot) / 60, rtol=1e-10, atol=1e-14)  # the softmax gradient by hand


# -- take_along_axis / gather / sort
ALONG = np.array([[1, 0, 1, 1], [2, 2, 0, -1], [0, 0, 0, 0]])


def test_take_along_axis_with_repeated_indices():
    x0 = np.random.default_rng(7).standard_normal((3, 5))
    _assert_same(*_both(lambda t: dg.numpy.take_along_axis(t, ALONG, 1), x0, (1, 2)))
    _assert_same(*_both(lambda t: dg.numpy.take_along_axis(t, ALONG.T[:, :1], 0), x0, 2))  # broadcast over columns
    b0 = np.random.default_rng(8).standard_normal((1, 5))  # x broadcast along the rows: its gradient sums them
    _assert_same(*_both(lambda t: dg.numpy.take_along_axis(t, ALONG, 1), b0, (1, 2)))


def test_take_along_axis_with_dask_indices():
    x0 = np.random.default_rng(9).standard_normal((6, 5))
    idx = np.random.default_rng(10).integers(0, 5, (6, 3))
    _assert_same(*_both(lambda t: dg.numpy.take_along_axis(t, da.from_array(idx, chunks=2), 1), x0, (3, 5)))


def test_gather_torch_style():
    x0 = np.random.default_rng(11).standard_normal((4, 3))
    index = np.array([[0, 0], [2, 0], [1, 1]])
    _assert_same(*_both(lambda t: dg.gather(t, 1, index), x0, 2))


@pytest.mark.parametrize("f", [lambda t: dg.numpy.sort(t, axis=0), lambda t: dg.numpy.sort(t, axis=None),
                               lambda t: dg.numpy.partition(t, 2, axis=1)], ids=["sort0", "sortNone", "partition"])
def test_sort_and_partition(f):
    x0 = np.random.default_rng(12).standard_normal((6, 5))
    _assert_same(*_both(f, x0, (2, 3)))


def test_argsort_is_lazy_and_stable():
    x0 = np.array([[3.0, 1.0, 3.0, 0.0], [2.0, 2.0, 2.0, 1.0]])
    with _lazy():
        out = dg.numpy.argsort(dg.tensor(da.from_array(x0, chunks=(1, 2))))
    np.testing.assert_array_equal(out._value.compute(), np.argsort(x0, kind="stable"))


# -- diagonal / trace / diag
@pytest.mark.parametrize("f", [dg.diagonal, lambda t: dg.diagonal(t, offset=2), lambda t: dg.diagonal(t, -1, 1, 0),
                               dg.trace, lambda t: dg.trace(t, offset=-2)],
                         ids=["diagonal", "offset2", "axes10", "trace", "trace-2"])
def test_diagonal_and_trace(f):
    x0 = np.random.default_rng(13).standard_normal((5, 6))
    _assert_same(*_both(f, x0, (2, 4)))


def test_diag_of_a_vector_and_batched_diagonal():
    _assert_same(*_both(lambda t: dg.diag(t, 1), np.arange(1.0, 5.0), 3))
    _assert_same(*_both(lambda t: dg.diagonal(t, 0, 1, 2), X3, (2, 3, 4)))


# -- setitem: a new lazy array, the original unchanged
@pytest.mark.parametrize("index", [(slice(1, None), 2), [0, 3, 0], np.array([True, False, True, True, False]),
                                   (Ellipsis, slice(None, None, 2))], ids=["basic", "repeated", "mask", "ellipsis"])
def test_setitem_values_and_gradients(index):
    v0 = np.random.default_rng(14).standard_normal(np.zeros((5, 4))[index].shape)
    x0 = np.random.default_rng(15).standard_normal((5, 4))
    x = dg.tensor(da.from_array(x0, chunks=2), requires_grad=True)
    v = dg.tensor(da.from_array(v0, chunks=3), requires_grad=True)
    ct = np.random.default_rng(16).standard_normal((5, 4))
    with _lazy():
        out = dg.setitem(x, index, v)
        out.backward(ct)
    ex, ev = dg.tensor(x0, requires_grad=True), dg.tensor(v0, requires_grad=True)
    expected = dg.setitem(ex, index, ev)
    expected.backward(ct)
    _assert_same((out.numpy(), x.grad.numpy(), v.grad.numpy()), (expected.numpy(), ex.grad.numpy(), ev.grad.numpy()))
    np.testing.assert_array_equal(x.numpy(), x0)  # x itself unchanged


def test_setitem_refuses_an_index_dasks_assignment_would_treat_otherwise():
    x = dg.tensor(da.from_array(np.zeros((3, 4)), chunks=2))
    with pytest.raises(TypeError, match=r"setitem: on a Dask array only basic indices and one 1-d integer array .*"
                                        r"dask Array.*test_dask_indexing.py:\d+"), _lazy():
        dg.setitem(x, ([0, 1], [1, 2]), 1.0)


def test_scatter_at_dask_indices_refuses_naming_the_op():
    x = dg.tensor(da.from_array(np.arange(6.0), chunks=3), requires_grad=True)
    idx = da.from_array(np.array([0, 2, 2]), chunks=2)
    with _lazy():
        out = x[idx]  # Dask's own indexing by a Dask array
    with pytest.raises(TypeError, match=r"index_add: the scatter-add at integer indices held in a Dask array needs "
                                        r"their values.*test_dask_indexing.py:\d+"), _lazy():
        out.sum().backward()


def test_numpy_path_unchanged():
    x = dg.tensor(X3, requires_grad=True)
    out = x[0, :, [1, 2]]
    out.sum().backward()
    assert type(out._value) is np.ndarray and type(x.grad._value) is np.ndarray
    np.testing.assert_array_equal(out.numpy(), X3[0, :, [1, 2]])


def test_in_place_writes_with_dask_values_are_refused_not_computed():
    t = dg.tensor(da.from_array(np.zeros(4), chunks=2))
    with pytest.raises(TypeError, match=r"t\[index\] = value: cannot write into a Dask array in place: this leaf "
                                        r".*dg.setitem.*dask Array.*test_dask_indexing.py:\d+"), _lazy():
        t[[0, 2]] = 1.0
    with pytest.raises(TypeError, match=r"\+=: cannot write into a Dask array in place"), _lazy():
        t += 1.0
    n = dg.tensor(np.zeros(4))
    with pytest.raises(TypeError, match=r"\+=: the result is a lazy Dask array"), _lazy():
        n += da.ones(4, chunks=2)  # into a NumPy tensor: it would compute the Dask operand
    assert isinstance(t._value, da.Array) and not n.numpy().any()


# ---------------------------------------------------------------- a Dask mask stays lazy (issue 24)

XM = np.random.default_rng(5).standard_normal((12, 6))
MASKED = {  # f on a tensor; its value's NumPy form; the gradient by hand
    "t[t > 0].sum()": (lambda t: t[t > 0].sum(), lambda x: x[x > 0].sum(), lambda x: (x > 0) * 1.0),
    "(t[t > 0] ** 2).sum()": (lambda t: (t[t > 0] ** 2).sum(), lambda x: (x[x > 0] ** 2).sum(),
                              lambda x: np.where(x > 0, 2 * x, 0.0)),
    "t[t > 0].mean()": (lambda t: t[t > 0].mean(), lambda x: x[x > 0].mean(), lambda x: (x > 0) / (x > 0).sum()),
    "(exp(t[m]) * t[m]).sum()": (lambda t: (dg.exp(t[t > 0]) * t[t > 0]).sum(),
                                 lambda x: (np.exp(x[x > 0]) * x[x > 0]).sum(),
                                 lambda x: np.where(x > 0, np.exp(x) * (1 + x), 0.0)),
    "rows: (t[t[:, 0] > 0] ** 2).sum()": (lambda t: (t[t[:, 0] > 0] ** 2).sum(),
                                          lambda x: (x[x[:, 0] > 0] ** 2).sum(),
                                          lambda x: np.where(x[:, :1] > 0, 2 * x, 0.0)),
    "columns: t[:, t[0] > 0].sum()": (lambda t: t[:, t[0] > 0].sum(), lambda x: x[:, x[0] > 0].sum(),
                                      lambda x: np.where(x[:1] > 0, 1.0, 0.0) + 0 * x),
    "t[..., t[0] > 0]": (lambda t: (t[..., t[0] > 0] ** 3).sum(), lambda x: (x[..., x[0] > 0] ** 3).sum(),
                         lambda x: np.where(x[:1] > 0, 3 * x * x, 0.0)),
    "(t[rows].sum(axis=1) ** 2).sum()": (lambda t: (t[t[:, 0] > 0].sum(axis=1) ** 2).sum(),
                                         lambda x: (x[x[:, 0] > 0].sum(axis=1) ** 2).sum(),
                                         lambda x: np.where(x[:, :1] > 0, 2 * x.sum(1, keepdims=True) + 0 * x, 0.0)),
}


@pytest.mark.parametrize("f, value, grad", MASKED.values(), ids=MASKED.keys())
def test_indexing_by_a_dask_mask_is_lazy_forward_and_backward(f, value, grad):
    """x[x > 0] on a Dask tensor: the mask stays a Dask array (its result's size is unknown until computed),
    and its gradient is scattered back block by block: nothing is computed in either pass."""
    t = dg.tensor(da.from_array(XM, chunks=(5, 4)), requires_grad=True)
    with _lazy():
        out = f(t)
        out.backward()
        assert isinstance(out._value, da.Array) and isinstance(t.grad._value, da.Array)
    np.testing.assert_allclose(out.numpy(), value(XM), rtol=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), grad(XM), rtol=1e-12, atol=1e-15)
    e = dg.tensor(XM, requires_grad=True)  # the NumPy path gives the same
    f(e).backward()
    np.testing.assert_allclose(t.grad.numpy(), e.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_a_dask_mask_under_the_transforms_stays_lazy():
    x = da.from_array(XM, chunks=(5, 4))

    def f(w):
        return (w[w > 0] ** 3).sum()

    with _lazy():
        g = dg.grad(f)(x)
        _, tangent = dg.jvp(f, (x,), (da.ones_like(x),))
        t = dg.tensor(x, requires_grad=True)
        (first,) = dg.autograd.grad(f(t), [t], create_graph=True)
        first.sum().backward()
    np.testing.assert_allclose(np.asarray(g), np.where(XM > 0, 3 * XM ** 2, 0.0), rtol=1e-12)
    np.testing.assert_allclose(float(np.asarray(tangent)), (3 * XM ** 2 * (XM > 0)).sum(), rtol=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), np.where(XM > 0, 6 * XM, 0.0), rtol=1e-12)


def test_dask_mask_forms_whose_result_or_gradient_would_differ_are_refused():
    x = dg.tensor(da.from_array(XM, chunks=(5, 4)), requires_grad=True)
    rows, cols = x[:, 0] > 0, x[0] > 0
    for index in [(rows, cols), (rows, 0), (rows, np.array([1, 2])), (None, cols)]:
        with pytest.raises(TypeError, match=r"getitem: a Dask array as an index goes with slices only .*"
                                            r"test_dask_indexing.py:\d+"), _lazy():
            x[index]  # Dask would index two arrays orthogonally where NumPy pairs them
    other = dg.tensor(da.from_array(XM > 0, chunks=(6, 6)))  # a mask whose blocks are not x's
    with _lazy():
        out = x[other].sum()
    with pytest.raises(TypeError, match=r"index_add: the gradient of indexing by a Dask array is computed lazily "
                                        r"only .*when the mask's blocks match x's"), _lazy():
        out.backward()
    with pytest.raises(TypeError, match=r"index_add: the gradient .* \(full slices elsewhere\)"), _lazy():
        x[rows, 1:3].sum().backward()
    computed = dg.tensor(XM, requires_grad=True)  # computed first, as the messages say: the gradient follows
    computed[dg.tensor((XM > 0).astype(bool))].sum().backward()
    np.testing.assert_array_equal(computed.grad.numpy(), (XM > 0) * 1.0)


@pytest.mark.parametrize("index", [slice(None, None, 2), slice(1, 3), 0, -1, np.array([0, 1])],
                         ids=["::2", "1:3", "0", "-1", "array"])
def test_indexing_the_unknown_axis_of_a_masked_value_names_getitem_and_the_line(index):
    # Dask's own error (unknown chunks, a link to its documentation) came out raw; and a full slice still works
    t = dg.tensor(da.from_array(XM, chunks=(5, 4)))
    masked = t[t > 0]  # one axis of unknown (nan) size
    with pytest.raises(ValueError, match=r"^getitem: axis 0 of this Dask array has a size known only once it is "
                                         r"computed .*compute the masked values first .*test_dask_indexing\.py:\d+$"), \
            _lazy():
        masked[index]
    rows = t[t[:, 0] > 0]  # unknown rows, known columns: the columns can be indexed, the rows kept whole
    with pytest.raises(ValueError, match=r"^getitem: axis 0 of this Dask array"), _lazy():
        rows[index, 1:3]
    with _lazy():
        picked = rows[:, 1:3]
    np.testing.assert_array_equal(picked.numpy(), XM[XM[:, 0] > 0][:, 1:3])
    np.testing.assert_array_equal(masked[:].numpy(), XM[XM > 0])


def _traced_peak(fn):
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_masking_a_dask_tensor_holds_no_array_in_memory():
    """t[t > 0] over 8 MB of generated data: the forward and backward passes allocate well under the mask's
    1 MB (they computed the mask, about 65 MB at their peak, before), and the gradient is computed chunk by
    chunk (half the array's size at most)."""

    def run(rows):
        x = da.random.default_rng(0).standard_normal((rows, 500), chunks=(100, 500))
        t = dg.tensor(x, requires_grad=True)
        passes = _traced_peak(lambda: (t[t > 0] ** 2).sum().backward())
        total = []
        gradient = _traced_peak(lambda: total.append(float(t.grad._value.sum().compute())))
        return x, passes, gradient, total[0]

    with dask.config.set(scheduler="sync"):
        run(300)  # warm-up: Dask's and NumPy's first-call allocations are not the passes'
        x, passes, gradient, total = run(2000)  # 8 MB
    assert passes < 1_000_000, passes
    assert gradient < 4_000_000, gradient
    x0 = x.compute()
    np.testing.assert_allclose(total, 2 * x0[x0 > 0].sum(), rtol=1e-12)


def test_setitem_by_a_dask_row_mask_is_lazy_and_differentiates_the_value():
    """dg.setitem(x, rows, v): the mask stays lazy, and v's gradient sums x[rows]'s cotangent (of unknown size)
    down to v's shape: summing an unknown size into a size 1 or away is unambiguous."""
    x = dg.tensor(da.from_array(XM, chunks=(5, 3)), requires_grad=True)
    v = dg.tensor(np.array([2.0, -1.0, 0.5, 0.0, 1.0, 3.0]), requires_grad=True)
    with _lazy():
        out = dg.setitem(x, x[:, 0] > 0, v)
        (out * out).sum().backward()
    rows = XM[:, 0] > 0
    expected = XM.copy()
    expected[rows] = v.numpy()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.where(rows[:, None], 0.0, 2 * XM), rtol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), 2 * v.numpy() * rows.sum(), rtol=1e-12)


def test_a_dask_mask_of_a_numpy_tensor_is_computed_as_before():
    """The mask stays lazy only for a Dask array: a NumPy tensor indexed by a Dask mask is NumPy's indexing (its
    result's size known), and its gradient a NumPy scatter."""
    t = dg.tensor(XM, requires_grad=True)
    mask = dg.tensor(da.from_array(XM > 0, chunks=(5, 3)))
    y = t[mask]
    assert type(y._value) is np.ndarray and y.shape == (int((XM > 0).sum()),)
    (y * y).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.where(XM > 0, 2 * XM, 0.0), rtol=1e-12)
    np.testing.assert_array_equal(dg.setitem(t, mask, 0.0).numpy(), np.where(XM > 0, 0.0, XM))
