"""Dask arrays through dg.compile, static graphs (Session.run, dg.gradients, minimize) and export (issue 17):
every differentiable row of the op table compiled on chunked Dask inputs stays lazy (the scheduler refuses any
compute while tracing and running) and equals NumPy's; the generated code for Dask arrays writes into no
buffer (no out=); bad input (in-place writes, unknown chunk sizes, NumPy-only ops) names the op and the line."""

from __future__ import annotations

import importlib.util
import inspect

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="Dask is an optional extra: pip install dagrad[dask]")
import dask  # noqa: E402

import dagrad as dg  # noqa: E402
from op_table import CASES, COMPOSITES  # noqa: E402
from test_dask import NOT_YET, _chunked, _lazy, _logistic_data, _logistic_loss  # noqa: E402
from test_dask import _logistic_gradient_by_hand as _by_hand  # noqa: E402

ROWS = [c for c in CASES + COMPOSITES if c.differentiable and c.op not in NOT_YET]
HERE = r"test_dask_graphs\.py:{}"


def _line(offset=0):
    """This file and the caller's line (+ offset), as an error message names it."""
    return HERE.format(inspect.currentframe().f_back.f_lineno + offset)


# ---------------------------------------------------------------- dg.compile


@pytest.mark.parametrize("c", ROWS, ids=[str(c) for c in ROWS])
def test_op_table_row_compiled_on_dask_values_and_gradients(c):
    xs = c.inputs(seed=2)
    dxs = [_chunked(x) for x in xs]
    u = np.random.default_rng(3).standard_normal(np.shape(c.ref(*xs)))

    def loss(*args):
        return dg.sum(c.f(*args) * u)

    argnums = tuple(range(len(xs)))
    value_of, grad_of = dg.compile(c.f), dg.compile(dg.grad(loss, argnums=argnums))
    with _lazy():  # tracing, generating and running: nothing computed
        value = value_of(*dxs)
        grads = grad_of(*dxs)
        source = value_of.source(*dxs) + grad_of.source(*dxs)
    assert isinstance(value, da.Array)
    assert "out=" not in source  # no buffer reuse in a Dask program
    np.testing.assert_allclose(value.compute(), c.ref(*xs), rtol=1e-12, atol=1e-12)
    expected = dg.grad(loss, argnums=argnums)(*xs)
    for g, e in zip(grads, expected):
        assert isinstance(g, da.Array)
        got = g.compute()
        assert got.shape == e.shape and got.dtype == e.dtype
        np.testing.assert_allclose(got, e, rtol=1e-10, atol=1e-12)


def _chain(x):
    return dg.sum(dg.exp(dg.tanh(x) * 2.0 + 1.0))


def test_numpy_and_dask_calls_get_programs_of_their_own():
    x0 = np.linspace(-1.0, 1.0, 8)
    f = dg.compile(_chain)
    numpy_value = f(x0)
    with _lazy():
        lazy_value = f(da.from_array(x0, chunks=4))
        lazy_source = f.source(da.from_array(x0, chunks=4))
    assert isinstance(numpy_value, np.floating | np.ndarray) and isinstance(lazy_value, da.Array)
    assert len(f._cache) == 2  # the signatures differ by array type (same shape and dtype)
    assert "out=" in f.source(x0) and "out=" not in lazy_source
    np.testing.assert_allclose(lazy_value.compute(), numpy_value, rtol=1e-15)
    with _lazy():  # a second call with other chunks reuses the Dask program
        f(da.from_array(x0, chunks=2))
    assert len(f._cache) == 2


def test_compiled_value_and_grad_of_numpy_parameters_over_dask_data():
    x, y, w0, b0 = _logistic_data()
    dx, dy = da.from_array(x, chunks=(50, 3)), da.from_array(y, chunks=50)
    step = dg.compile(dg.value_and_grad(_logistic_loss, argnums=(0, 1)))
    with _lazy():
        value, (gw, gb) = step(w0, b0, dx, dy)
    assert isinstance(value, da.Array) and isinstance(gw, da.Array) and isinstance(gb, da.Array)
    value, gw, gb = dask.compute(value, gw, gb)  # one compute over the 4 chunks
    expected_w, expected_b = _by_hand(w0, b0, x, y)
    np.testing.assert_allclose(gw, expected_w, rtol=1e-12)
    np.testing.assert_allclose(gb, expected_b, rtol=1e-12)
    np.testing.assert_allclose(value, _logistic_loss(w0, b0, x, y), rtol=1e-12)
    np.testing.assert_allclose(dg.compile(dg.grad(_logistic_loss))(w0, b0, x, y), expected_w, rtol=1e-12)


def test_jitted_function_of_dask_backed_tensors_returns_lazy_tensors():
    x0 = np.array([[0.5, -1.0], [2.0, 0.25]])
    t = dg.tensor(da.from_array(x0, chunks=1))
    f = dg.jit(lambda a: dg.tanh(a) * 3.0)
    with _lazy():
        out = f(t)
    assert isinstance(out, dg.Tensor) and isinstance(out._value, da.Array)
    np.testing.assert_allclose(out.numpy(), np.tanh(x0) * 3.0, rtol=1e-15)


def test_backward_inside_a_compiled_function_leaves_a_lazy_grad():
    x, _, w0, _ = _logistic_data()
    w = dg.tensor(w0, requires_grad=True)

    def step(data):
        loss = dg.sum(dg.tanh(data @ w))
        loss.backward()
        return loss

    compiled = dg.compile(step)
    with _lazy():
        loss = compiled(da.from_array(x, chunks=(50, 3)))
    assert isinstance(loss, da.Array) and isinstance(w.grad._value, da.Array)
    np.testing.assert_allclose(w.grad.numpy(), x.T @ (1 / np.cosh(x @ w0) ** 2), rtol=1e-12)


def test_numpy_only_op_on_numpy_parameters_next_to_dask_data_runs():
    a0 = np.array([[2.0, 1.0], [0.5, 3.0]])
    x0 = np.arange(6.0).reshape(3, 2)
    f = dg.compile(lambda a, x: x * dg.linalg.det(a))  # det of the NumPy matrix: fine beside lazy data
    with _lazy():
        out = f(a0, da.from_array(x0, chunks=(2, 2)))
    np.testing.assert_allclose(out.compute(), x0 * np.linalg.det(a0), rtol=1e-14)


def test_numpy_only_op_on_a_dask_value_is_refused_when_compiling():
    f = dg.compile(lambda a: dg.linalg.det(a) * 2.0)
    built = _line(-1)
    with pytest.raises(TypeError, match=r"det: runs NumPy-only code .*whole Dask array: dg\.compile cannot run it "
                                        rf"lazily \(the op was built at .*{built}\).* at .*{_line(+1)}"), _lazy():
        f(da.from_array(np.eye(3) * 2.0, chunks=2))


def test_control_flow_over_a_dask_value_is_refused_when_compiling():
    def f(x):
        return dg.fori_loop(0, 3, lambda i, c: c * 2.0, x)

    with pytest.raises(TypeError, match=rf"(fori_loop|scan|while_loop).*control flow.*Dask.* at .*{_line(+1)}"):
        dg.compile(f)(da.from_array(np.ones(4), chunks=2))
    np.testing.assert_allclose(dg.compile(f)(np.ones(4)), np.full(4, 8.0))  # NumPy: unchanged


def test_unknown_chunk_sizes_are_refused_by_compile():
    x = da.from_array(np.arange(6.0), chunks=3)
    masked = x[x > 2.0]
    f = dg.compile(_chain)
    with pytest.raises(ValueError, match=r"dg\.compile: needs the shape of a Dask array whose chunk sizes are "
                                         rf"unknown .*compute_chunk_sizes.* at .*{_line(+1)}"), _lazy():
        f(masked)
    with pytest.raises(ValueError, match=rf"dg\.compile: needs the shape .* at .*{_line(+1)}"), _lazy():
        f(dg.tensor(masked))
    np.testing.assert_allclose(f(masked.compute_chunk_sizes()).compute(), _chain(np.arange(3.0, 6.0)).item())


# ---------------------------------------------------------------- export


def _exported(path):
    """The public function of an exported module."""
    spec = importlib.util.spec_from_file_location(f"exported_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, module.__all__[0])


def test_exported_module_runs_on_dask_inputs(tmp_path):
    x, y, w0, b0 = _logistic_data()
    dx, dy = da.from_array(x, chunks=(50, 3)), da.from_array(y, chunks=50)
    grad = dg.compile(dg.grad(_logistic_loss, argnums=(0, 1)))
    with _lazy():
        path = grad.export(tmp_path / "lazy_grad.py", w0, b0, dx, dy)
    source = path.read_text()
    assert "out=" not in source and "import dask" not in source  # NumPy only, and no buffer writes
    function = _exported(path)
    with _lazy():
        gw, gb = function(w0, b0, dx, dy)
    assert isinstance(gw, da.Array)
    expected_w, expected_b = _by_hand(w0, b0, x, y)
    np.testing.assert_allclose(gw.compute(), expected_w, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gb), expected_b, rtol=1e-12)
    # the same module on NumPy arrays
    gw, gb = function(w0, b0, x, y)
    np.testing.assert_allclose(gw, expected_w, rtol=1e-12)


def test_module_exported_for_numpy_refuses_a_dask_array(tmp_path):
    x0 = np.linspace(-1.0, 1.0, 8)
    f = dg.compile(lambda x: dg.tanh(x) * 2.0 + 1.0)
    path = f.export(tmp_path / "numpy_f.py", x0)
    assert "out=" in path.read_text()  # NumPy's code reuses buffers
    function = _exported(path)
    with pytest.raises(TypeError, match=r"x: got a lazy Dask array, but this module was generated for a NumPy "
                                        r"array"), _lazy():
        function(da.from_array(x0, chunks=4))
    np.testing.assert_allclose(function(x0), np.tanh(x0) * 2.0 + 1.0, rtol=1e-15)


# ---------------------------------------------------------------- static graphs


def _graph():
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        y = dg.placeholder((None,), name="y")
        w = dg.Variable(np.array([0.1, -0.2, 0.3]), name="w")
        b = dg.Variable(0.3, name="b")
        loss = _logistic_loss(w, b, x, y)
        gw, gb = dg.gradients(loss, [w, b])
    return g, x, y, w, b, loss, gw, gb


def test_session_run_with_dask_feeds_returns_lazy_values():
    data, labels, _, _ = _logistic_data()
    g, x, y, w, b, loss, gw, gb = _graph()
    sess = dg.Session(g)
    with _lazy():
        value, grad_w, grad_b = sess.run([loss, gw, gb], {x: da.from_array(data, chunks=(50, 3)),
                                                          y: da.from_array(labels, chunks=50)})
    assert all(isinstance(v, da.Array) for v in (value, grad_w, grad_b))
    expected = sess.run([loss, gw, gb], {x: data, y: labels})
    for got, e in zip(dask.compute(value, grad_w, grad_b), expected):
        np.testing.assert_allclose(got, e, rtol=1e-12)
    np.testing.assert_allclose(expected[1], _by_hand(w.value, b.value, data, labels)[0], rtol=1e-12)
    sources = [generated.source for generated, _, _ in sess._code.values()]
    assert len(sources) == 2  # the NumPy feeds and the Dask feeds: two programs
    assert sum("out=" in s for s in sources) == 1


def test_several_lazy_fetches_compute_together_reading_each_chunk_once():
    data = np.random.default_rng(1).standard_normal((40, 3))
    reads = []

    def read(block):
        if block.size:  # Dask calls it on an empty block to learn the result's type
            reads.append(block.shape)
        return block

    chunked = da.from_array(data, chunks=(10, 3)).map_blocks(read, dtype=data.dtype)
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        total, squares = dg.sum(x, axis=0), dg.sum(x * x)
    with _lazy():
        a, s = dg.Session(g).run([total, squares], {x: chunked})
    assert reads == []
    a, s = dask.compute(a, s, scheduler="sync")
    assert len(reads) == 4  # each of the 4 chunks read once for both fetches
    np.testing.assert_allclose(a, data.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(s, (data * data).sum(), rtol=1e-12)


def test_minimize_over_dask_feeds_trains_as_numpy_one_compute_per_step():
    data, labels, _, _ = _logistic_data()
    losses = {}
    for kind in ("numpy", "dask"):
        g, x, y, w, b, loss, _, _ = _graph()
        with g:
            train = dg.optim.SGD(lr=0.5).minimize(loss)
        sess = dg.Session(g)
        feeds = {x: data, y: labels} if kind == "numpy" else \
            {x: da.from_array(data, chunks=(50, 3)), y: da.from_array(labels, chunks=50)}
        computes = []
        scheduler = dask.get  # counts dask.compute calls of the run
        with dask.config.set(scheduler=lambda *a, **k: computes.append(1) or scheduler(*a, **k)):
            losses[kind] = [float(sess.run([loss, train], feeds)[0]) for _ in range(5)]
        assert computes == ([] if kind == "numpy" else [1] * 5)  # the fetches with the updates, once per step
        assert type(w.value) is np.ndarray  # a Variable holds values
        losses[kind + " w"] = w.value
    np.testing.assert_allclose(losses["dask"], losses["numpy"], rtol=1e-12)
    np.testing.assert_allclose(losses["dask w"], losses["numpy w"], rtol=1e-12)
    assert losses["numpy"][-1] < losses["numpy"][0]


def test_session_refuses_bad_dask_feeds_naming_the_line():
    g, x, y, w, b, loss, gw, gb = _graph()
    sess = dg.Session(g)
    good = da.from_array(np.ones(4), chunks=2)
    with pytest.raises(ValueError, match=r"Session\.run: feed_dict: the value for placeholder 'x': "
                                         rf"needs the shape of a Dask array whose chunk sizes are unknown .* at "
                                         rf".*{_line(+2)}"), _lazy():
        masked = da.from_array(np.ones((4, 3)), chunks=2)
        sess.run(loss, {x: masked[masked[:, 0] > 0], y: good})
    with pytest.raises(TypeError, match=rf"placeholder 'x': a value of dtype complex128 does not fit dtype float64"
                                        rf".* at .*{_line(+1)}"), _lazy():
        sess.run(loss, {x: da.from_array(np.ones((4, 3), complex), chunks=2), y: good})
    with pytest.raises(ValueError, match=rf"placeholder 'x': a value of shape \(4, 2\) does not fit shape "
                                         rf"\(None, 3\).* at .*{_line(+1)}"), _lazy():
        sess.run(loss, {x: da.from_array(np.ones((4, 2)), chunks=2), y: good})


def test_session_refuses_a_numpy_only_op_on_a_dask_feed():
    with dg.Graph() as g:
        a = dg.placeholder((3, 3), name="a")
        d = dg.linalg.det(a) * 2.0
    sess = dg.Session(g)
    with pytest.raises(TypeError, match=rf"det: runs NumPy-only code .*Session\.run cannot run it lazily .*"
                                        rf"at .*{_line(+1)}"), _lazy():
        sess.run(d, {a: da.from_array(np.eye(3), chunks=2)})
    np.testing.assert_allclose(sess.run(d, {a: np.eye(3) * 2.0}), 16.0)


def test_session_gradients_with_int_feed_cast_lazily():
    with dg.Graph() as g:
        x = dg.placeholder((None,), name="x")
        y = dg.sum(dg.sin(x) * x)
        (dx,) = dg.gradients(y, [x])
    with _lazy():
        got = dg.Session(g).run(dx, {x: da.from_array(np.arange(4), chunks=2)})  # int64 fits float64
    assert isinstance(got, da.Array) and got.dtype == np.float64
    t = np.arange(4.0)
    np.testing.assert_allclose(got.compute(), np.cos(t) * t + np.sin(t), rtol=1e-14)


# ---------------------------------------------------------------- in-place writes on lazy values


def test_in_place_on_a_dask_leaf_is_refused_before_anything_runs():
    x0 = np.arange(4.0)
    t = dg.tensor(da.from_array(x0, chunks=2))
    before = t._value
    leaf = r"cannot write into a Dask array in place: this leaf .*\(4,\) float64 dask Array.* at .*"
    with pytest.raises(TypeError, match=rf"\+=: {leaf}{_line(+1)}"), _lazy():
        t += 1.0
    with pytest.raises(TypeError, match=rf"mul_: {leaf}{_line(+1)}"), _lazy():
        t.mul_(2.0)
    with pytest.raises(TypeError, match=rf"zero_: {leaf}{_line(+1)}"), _lazy():
        t.zero_()
    assert t._value is before  # unchanged
    p = dg.tensor(da.from_array(x0, chunks=2), requires_grad=True)
    with pytest.raises(TypeError, match=r"cannot write into a Dask array in place"), _lazy(), dg.no_grad():
        p -= 0.1


def test_in_place_on_a_dask_non_leaf_rebinds_it_lazily_with_gradients():
    x0 = np.array([0.5, -1.0, 2.0, 1.5])
    x = dg.tensor(da.from_array(x0, chunks=2), requires_grad=True)
    with _lazy():
        h = x * 2.0
        saved = h._value
        h += 1.0  # h = 2x + 1, recorded
        h *= x  # (2x + 1) x
        h.sum().backward()
    assert isinstance(h._value, da.Array) and h._value is not saved
    np.testing.assert_allclose(h.numpy(), (2 * x0 + 1) * x0, rtol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), 4 * x0 + 1, rtol=1e-15)
    np.testing.assert_allclose(saved.compute(), 2 * x0)  # a value saved before the write keeps its values


def test_writing_a_lazy_result_into_a_numpy_tensor_is_refused():
    w = dg.tensor(np.ones(4))
    lazy = dg.tensor(da.from_array(np.arange(4.0), chunks=2))
    with pytest.raises(TypeError, match=rf"-=: the result is a lazy Dask array: writing it into this tensor's NumPy "
                                        rf"array would compute it here.* at .*{_line(+1)}"), _lazy():
        w -= lazy * 0.1
    np.testing.assert_array_equal(w.numpy(), np.ones(4))  # unchanged


def test_compiled_training_step_over_dask_data_computes_once_per_step():
    x, y, _, _ = _logistic_data()
    runs = {}
    for kind in ("numpy", "dask"):
        dg.manual_seed(0)
        model = dg.nn.Sequential(dg.nn.Linear(3, 4), dg.nn.Tanh(), dg.nn.Linear(4, 1))
        opt = dg.optim.Adam(model.parameters(), lr=0.05)

        @dg.compile
        def step(data, target, model=model, opt=opt):
            opt.zero_grad()
            loss = dg.nn.functional.mse_loss(model(data)[:, 0], target)
            loss.backward()
            opt.step()
            return loss

        args = (x, y) if kind == "numpy" else (da.from_array(x, chunks=(50, 3)), da.from_array(y, chunks=50))
        computes = []
        with dask.config.set(scheduler=lambda *a, **k: computes.append(1) or dask.get(*a, **k)):
            runs[kind] = [float(step(*args)) for _ in range(4)]
        assert computes == ([] if kind == "numpy" else [1] * 4)  # the loss, the parameters and the state: once
        assert all(type(p._value) is np.ndarray for p in model.parameters())
        runs[kind + " parameters"] = [p.numpy().copy() for p in model.parameters()]
    np.testing.assert_allclose(runs["dask"], runs["numpy"], rtol=1e-12)
    for a, b in zip(runs["dask parameters"], runs["numpy parameters"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)
    assert runs["numpy"][-1] < runs["numpy"][0]
