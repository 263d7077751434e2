"""Static graphs (issue 4): Graph, placeholder, Variable, constant, gradients, Session, assign.

Grouped by the issue's items: building (1), shape and dtype inference (2), symbolic
gradients (3), the Session and variable updates (4), the listing (5), the classic programs
(6) and the bad-input list. Per-op agreement with eager mode is in test_static_ops.py.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import threading
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import dagrad as dg
from dagrad.static import Symbol

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _next_line():
    """The line number after the caller's line: for asserting that an error names the user's line."""
    return inspect.currentframe().f_back.f_lineno + 1


@pytest.fixture
def calls(monkeypatch):
    """Counts the forward calls of a few ops (Session.run evaluates through `node.op.forward`).

    Building a node also calls its forward once, on one-element stand-ins, to find the output
    dtype as NumPy would; tests clear the counts after building.
    """
    counts = {}
    for name in ("exp", "sin", "add", "multiply"):
        op = dg.REGISTRY[name]

        def counting(*args, _forward=op.forward, _name=name, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            return _forward(*args, **kwargs)

        monkeypatch.setattr(op, "forward", counting)
    return counts


# -- 1. graphs, the default graph, placeholders, variables, constants


def test_graph_is_a_context_manager_and_the_innermost_one_receives_nodes():
    outer, inner = dg.Graph(), dg.Graph()
    with outer:
        a = dg.placeholder((2,), name="a")
        with inner as entered:
            assert entered is inner and dg.get_default_graph() is inner
            b = dg.placeholder((2,), name="b")
        assert dg.get_default_graph() is outer
        c = a * 2.0  # an op goes to its inputs' graph
    assert (a.graph, b.graph, c.graph) == (outer, inner, outer)
    assert list(outer.nodes) == [a, c] and list(inner.nodes) == [b]
    assert dg.get_default_graph() not in (outer, inner)


def test_the_default_graph_is_per_thread_and_reset_replaces_it():
    main_default = dg.get_default_graph()
    assert dg.get_default_graph() is main_default  # stable until reset
    seen = {}

    def other_thread():
        seen["default"] = dg.get_default_graph()
        seen["again"] = dg.get_default_graph()
        seen["node"] = dg.placeholder((1,))

    g = dg.Graph()
    with g:  # a `with` in this thread is invisible to the other thread
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert seen["default"] is seen["again"]
    assert seen["default"] is not main_default and seen["default"] is not g
    assert seen["node"].graph is seen["default"]

    before = len(main_default)
    fresh = dg.reset_default_graph()
    assert fresh is dg.get_default_graph() and fresh is not main_default and len(fresh) == 0
    x = dg.placeholder(())
    assert x.graph is fresh and len(main_default) == before
    with dg.Graph(), pytest.raises(RuntimeError, match="reset_default_graph"):
        dg.reset_default_graph()


def test_names_are_unique_and_look_up_nodes():
    with dg.Graph() as g:
        x = dg.placeholder((), name="x")
        x1 = dg.placeholder((), name="x")
        explicit = dg.Variable(1.0, name="x_2")
        x3 = dg.constant(2.0, name="x")
        unnamed = x + x1
    assert [x.name, x1.name, explicit.name, x3.name] == ["x", "x_1", "x_2", "x_3"]
    assert unnamed.name is None
    assert g["x"] is x and g["x_1"] is x1 and g["x_3"] is x3


def test_placeholder_shapes_may_have_unknown_sizes():
    with dg.Graph():
        x = dg.placeholder((None, 64), name="x")
        labels = dg.placeholder([None], dtype="int64", name="y")
        with pytest.raises(TypeError, match="tuple"):
            dg.placeholder(3)
    assert x.shape == (None, 64) and x.ndim == 2 and x.dtype == np.float64
    assert labels.shape == (None,) and labels.dtype == np.int64
    assert x.requires_grad and not labels.requires_grad  # integers are never differentiated
    with pytest.raises(TypeError, match="unknown"):
        _ = x.size
    with pytest.raises(TypeError, match="Session.run"):
        len(x)


def test_variable_value_is_readable_and_settable_with_checks():
    with dg.Graph() as g:
        w = dg.Variable(np.zeros((2, 3)), name="w")
        frozen = dg.Variable([1, 2], name="steps", trainable=False)
        y = w.sum()
    assert g.variables == [w, frozen]
    assert w.trainable and not frozen.trainable and frozen.dtype == np.int64
    np.testing.assert_array_equal(w.value, np.zeros((2, 3)))

    sess = dg.Session(g)
    w.value = np.ones((2, 3))  # the next run sees it, without rebuilding anything
    assert sess.run(y) == 6.0
    w.value = [[1, 2, 3], [4, 5, 6]]  # lists and integer values convert to the variable's dtype
    assert w.value.dtype == np.float64 and sess.run(y) == 21.0

    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        w.value = np.ones((3, 2))
    with pytest.raises(TypeError, match="dtype"):
        frozen.value = [0.5, 1.5]  # a float does not fit an int64 variable
    with pytest.raises(TypeError, match="Variable: unsupported dtype"):
        dg.Variable(np.array(["a"]))
    np.testing.assert_array_equal(w.value, [[1, 2, 3], [4, 5, 6]])  # failed sets changed nothing


def test_constant_has_a_value_but_no_setter():
    with dg.Graph() as g:
        c = dg.constant([[1.0, 2.0]], name="c")
        half = dg.constant(1, dtype=np.float32)
        y = c * half
    assert c.shape == (1, 2) and half.dtype == np.float32
    np.testing.assert_array_equal(c.value, [[1.0, 2.0]])
    with pytest.raises(TypeError, match="Variable"):
        c.value = [[3.0, 4.0]]
    np.testing.assert_array_equal(dg.Session(g).run(y), [[1.0, 2.0]])


def test_ops_on_symbolic_inputs_build_nodes_instead_of_computing(calls):
    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        nodes_before = len(g)
        built = [dg.exp(x), np.sin(x), x + 1.0, 2.0 * x, x.sum(), x[1:], np.ones(3) * x, dg.maximum(x, 0.0)]
    assert all(isinstance(t, Symbol) and t.graph is g for t in built)
    assert len(g) == nodes_before + len(built)
    assert sum(calls.values()) <= len(built)  # at most the dtype probe of each node, on a stand-in
    calls.clear()
    values = dg.Session(g).run(built, {x: [0.0, 1.0, -1.0]})
    np.testing.assert_allclose(values[0], np.exp([0.0, 1.0, -1.0]))
    np.testing.assert_allclose(values[-1], [0.0, 1.0, 0.0])


def test_an_eager_tensor_in_a_graph_becomes_a_constant():
    t = dg.tensor([1.0, 2.0], requires_grad=True)
    with dg.Graph() as g:
        x = dg.placeholder((2,), name="x")
        y = x * t
        (gx,) = dg.gradients(y.sum(), [x])
    assert isinstance(y, Symbol) and "[1., 2.]" in str(g)  # the value is shown inline in the listing
    value, grad = dg.Session(g).run([y, gx], {x: [3.0, 4.0]})
    np.testing.assert_allclose(value, [3.0, 8.0])
    np.testing.assert_allclose(grad, [1.0, 2.0])
    assert t.grad is None  # the eager tensor is not part of the static gradient


def test_inputs_from_two_graphs_are_an_error():
    with dg.Graph():
        a = dg.placeholder((2,))
    with dg.Graph():
        b = dg.placeholder((2,))
    with pytest.raises(ValueError, match="different graphs"):
        a + b


# -- 2. shape and dtype inference at build time


def test_shapes_and_dtypes_are_inferred_with_unknown_sizes_carried_through():
    with dg.Graph():
        x = dg.placeholder((None, 3), name="x")
        w = dg.Variable(np.zeros((3, 10), np.float32), name="w")
        i = dg.placeholder((None,), dtype="int64", name="i")
        h = x @ w
        assert (h.shape, h.dtype) == ((None, 10), np.float64)  # a float64 operand wins, as in NumPy
        assert (w.T @ w.T.T).shape == (10, 10) and (w * 2.0).dtype == np.float32  # a Python float does not upcast
        assert (h.sum(axis=1).shape, h.sum().shape, h.mean(axis=0, keepdims=True).shape) == ((None,), (), (1, 10))
        assert ((i * 2).dtype, (i / 2).dtype, (i > 0).dtype) == (np.int64, np.float64, np.bool_)
        assert (x[:, :2].shape, x[0].shape, x.T.shape, x.reshape(-1).shape) == ((None, 2), (3,), (3, None), (None,))
        assert (x + i[:, None]).shape == (None, 3)
        assert dg.concatenate([x, x], axis=1).shape == (None, 6)


def test_unknown_sizes_take_their_runtime_values():
    # one graph serves every batch size: mean and var count the rows when the graph runs
    with dg.Graph() as g:
        x = dg.placeholder((None, 2), name="x")
        stats = [x.mean(axis=0), dg.var(x, axis=0, ddof=1), x.reshape(-1), dg.zeros_like(x)]
    sess = dg.Session(g)
    for n in (2, 3, 7):
        data = np.arange(2.0 * n).reshape(n, 2) ** 1.5
        mean, var, flat, zeros = sess.run(stats, {x: data})
        np.testing.assert_allclose(mean, data.mean(axis=0))
        np.testing.assert_allclose(var, data.var(axis=0, ddof=1))
        np.testing.assert_array_equal(flat, data.reshape(-1))
        assert zeros.shape == (n, 2)


def test_selecting_columns_of_a_batch_of_unknown_size():
    with dg.Graph() as g:
        x = dg.placeholder((None, 4), name="x")
        columns = x[:, [0, 2]]
    assert columns.shape == (None, 2)
    data = np.arange(8.0).reshape(2, 4)
    np.testing.assert_array_equal(dg.Session(g).run(columns, {x: data}), data[:, [0, 2]])


def test_indexing_an_unknown_axis_keeps_an_integer_or_bool_dtype():
    with dg.Graph() as g:
        i = dg.placeholder((None,), "int64", name="i")
        b = dg.placeholder((None, 3), "bool", name="b")
        picked = [i[3], b[2]]
    values = dg.Session(g).run(picked, {i: np.arange(5), b: np.ones((4, 3), bool)})
    assert [v.dtype for v in values] == [np.int64, np.bool_]
    assert [t.dtype for t in picked] == [np.int64, np.bool_]  # inferred: float64, float64


def test_an_incompatible_shape_fails_at_build_time_naming_op_shapes_and_line():
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        w = dg.Variable(np.zeros((4, 5)), name="w")
        nodes = len(g)
        with pytest.raises(ValueError) as err:
            line = _next_line()
            x @ w
        message = str(err.value)
        assert "matmul" in message and "(None, 3)" in message and "(4, 5)" in message
        assert f"{__file__}:{line}" in message
        with pytest.raises(ValueError, match=r"add.*\(None, 3\).*\(4, 5\)") as err:
            line = _next_line()
            x + w
        assert f"{__file__}:{line}" in str(err.value)
    assert len(g) == nodes  # a failed build adds no node


# -- 3. symbolic gradients


def test_gradients_with_respect_to_inputs_variables_and_intermediates():
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        w = dg.Variable(np.array([1.0, -2.0, 0.5]), name="w")
        h = dg.tanh(x * w)
        loss = (h**2).sum()
        gx, gw, gh = dg.gradients(loss, [x, w, h])
        single = dg.gradients(loss, w)  # a single x gives a single gradient, not a list
    assert isinstance(single, Symbol) and gx.shape == (None, 3) and gw.shape == (3,)
    data = np.random.default_rng(0).standard_normal((4, 3))
    got = dg.Session(g).run([gx, gw, gh, single], {x: data})

    def f(data, w):
        return (dg.tanh(data * w) ** 2).sum()

    ex, ew = dg.grad(f, argnums=(0, 1))(data, w.value)
    np.testing.assert_allclose(got[0], ex)
    np.testing.assert_allclose(got[1], ew)
    np.testing.assert_allclose(got[2], 2 * np.tanh(data * w.value))  # d loss / d h
    np.testing.assert_allclose(got[3], ew)


def test_gradients_sum_the_ys_and_take_grad_ys():
    with dg.Graph() as g:
        x = dg.placeholder((2,), name="x")
        ys = [x**2, 3.0 * x]
        summed = dg.gradients(ys, [x])[0]
        seeded = dg.gradients(ys, [x], grad_ys=[dg.constant([1.0, 0.0]), dg.constant([0.0, 2.0])])[0]
    got = dg.Session(g).run([summed, seeded], {x: [1.0, 5.0]})
    np.testing.assert_allclose(got[0], [2.0 + 3.0, 10.0 + 3.0])
    np.testing.assert_allclose(got[1], [2.0, 6.0])
    with dg.Graph(), pytest.raises(ValueError, match="grad_ys"):
        x = dg.placeholder((2,))
        dg.gradients([x * 2, x * 3], [x], grad_ys=[np.ones(2)])


def test_an_unconnected_x_gets_zeros_of_its_runtime_shape():
    with dg.Graph() as g:
        x = dg.placeholder((None, 2), name="x")
        unused = dg.placeholder((None,), name="unused")
        count = dg.placeholder((), dtype="int64", name="count")
        y = (x * 3.0).sum()
        g_unused, g_count, g_x = dg.gradients(y, [unused, count, x])
    got = dg.Session(g).run([g_unused, g_count, g_x], {x: np.ones((2, 2)), unused: np.ones(5), count: 4})
    np.testing.assert_array_equal(got[0], np.zeros(5))
    assert np.shape(got[1]) == ()
    np.testing.assert_array_equal(got[2], np.full((2, 2), 3.0))


def test_gradients_of_gradients_give_hessian_vector_products():
    rng = np.random.default_rng(1)
    a, v = rng.standard_normal((3, 3)), rng.standard_normal(3)

    def f(x):
        return dg.sum(dg.tanh(a @ x) ** 2) + dg.sum(x**3)

    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        (gx,) = dg.gradients(f(x), [x])
        (hvp,) = dg.gradients(dg.sum(gx * v), [x])
        (third,) = dg.gradients(dg.sum(hvp * v), [x])
    x0 = rng.standard_normal(3)
    got_hvp, got_third = dg.Session(g).run([hvp, third], {x: x0})
    np.testing.assert_allclose(got_hvp, dg.hessian(f)(x0) @ v, rtol=1e-10)
    expected_third = dg.jvp(lambda y: dg.jvp(dg.grad(f), (y,), (v,))[1], (x0,), (v,))[1]
    np.testing.assert_allclose(got_third, expected_third, rtol=1e-9)


def test_the_gradient_of_an_unknown_size_broadcast_at_run_time_has_the_input_shape():
    with dg.Graph() as g:
        a = dg.placeholder((None, 3), name="a")
        b = dg.placeholder((None, 3), name="b")
        (gb,) = dg.gradients(dg.sum(a * b), [b])
    got = dg.Session(g).run(gb, {a: np.ones((2, 3)), b: np.ones((1, 3))})
    np.testing.assert_array_equal(got, np.full((1, 3), 2.0))


def test_second_order_with_unknown_sizes():
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        (gx,) = dg.gradients(dg.sum(dg.tanh(x)), [x])
        (hvp,) = dg.gradients(dg.sum(gx), [x])
    data = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    t = np.tanh(data)
    np.testing.assert_allclose(dg.Session(g).run(hvp, {x: data}), -2 * t * (1 - t**2))


def test_gradients_with_respect_to_a_constant():
    with dg.Graph() as g:
        c = dg.constant(2.0, name="c")
        h = c * 3.0
        x = dg.placeholder((), name="x")
        y = h * h * x
        gc, gh = dg.gradients(y, [c, h])
    got = dg.Session(g).run([gc, gh], {x: 1.0})
    np.testing.assert_allclose(got, [36.0, 12.0])  # dy/dc = 2 h * 3 x, dy/dh = 2 h x


def test_gradients_with_respect_to_an_integer_node_are_refused_as_by_grad():
    # it was a silent int64 zero (found by tests/test_paths.py); dg.grad refuses an integer input
    with dg.Graph() as g:
        n = dg.placeholder((), np.int64, name="n")
        x = dg.placeholder((), name="x")
        y = dg.exp(n) * x
        line = f"test_static.py:{inspect.currentframe().f_lineno + 2}"
        with pytest.raises(TypeError, match=rf"gradients: .*symbolic tensor 'n' of dtype int64.*{line}"):
            dg.gradients(y, [x, n])
        (gx,) = dg.gradients(y, [x])  # the failed call left nothing behind
    assert dg.Session(g).run(gx, {n: 1, x: 2.0}) == pytest.approx(np.e)


def test_gradients_are_always_nodes_of_the_graph():
    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        grad = dg.gradients(x * 2.0, x, grad_ys=np.array([1.0, 2.0, 3.0]))
    assert isinstance(grad, Symbol) and grad.graph is g
    np.testing.assert_allclose(dg.Session(g).run(grad, {x: np.zeros(3)}), [2.0, 4.0, 6.0])


# -- 4. Session.run: fetches, pruning, errors before anything runs, updates


def test_fetches_may_be_nested_lists_tuples_dicts_and_namedtuples():
    Pair = namedtuple("Pair", "double triple")
    with dg.Graph() as g:
        x = dg.placeholder((), name="x")
        double, triple = 2.0 * x, 3.0 * x
    sess = dg.Session(g)
    feed = {x: 2.0}
    assert sess.run(double, feed) == 4.0
    assert sess.run([double, (triple, {"x": x})], feed) == [4.0, (6.0, {"x": 2.0})]
    got = sess.run({"a": [double, double], "b": Pair(double, triple)}, feed)
    assert got == {"a": [4.0, 4.0], "b": Pair(4.0, 6.0)} and type(got["b"]) is Pair
    assert sess.run([], feed) == []
    assert sess.run(double, {"x": 5.0}) == 10.0  # a placeholder may be fed by name


def test_only_the_nodes_the_fetches_need_are_evaluated_each_once(calls):
    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        never_fed = dg.placeholder((3,), name="never_fed")
        shared = dg.exp(x)
        a, b = shared * 2.0, shared * 3.0
        other = dg.sin(never_fed)
    calls.clear()
    sess = dg.Session(g)
    got = sess.run([a, b, a, shared], {x: np.zeros(3)})  # never_fed is not needed: no feed required
    np.testing.assert_allclose(got[1], [3.0, 3.0, 3.0])
    assert calls == {"exp": 1, "multiply": 2}
    sess.run([a, b], {x: np.zeros(3)})
    assert calls == {"exp": 2, "multiply": 4}  # each run evaluates again (the feeds may differ)
    assert "sin" not in calls
    sess.run(other, {never_fed: np.zeros(3)})
    assert calls["sin"] == 1 and calls["exp"] == 2


@pytest.fixture
def counter_graph():
    """A graph with a Variable `v`, a training step and a few placeholders, for the error cases."""
    g = dg.Graph()
    with g:
        x = dg.placeholder((None, 2), name="x")
        k = dg.placeholder((), dtype="int64", name="k")
        v = dg.Variable(np.array([1.0, 2.0]), name="v")
        y = dg.exp(x) * v
        step = v.assign_add(y.sum(axis=0))
    return g, x, k, v, y, step


@pytest.mark.parametrize(
    "case",
    ["missing feed", "wrong shape", "wrong rank", "wrong dtype", "fed twice", "not a placeholder", "unknown name",
     "other graph fetch", "not a node", "other graph feed"],
)
def test_bad_runs_fail_before_anything_runs(counter_graph, calls, case):
    g, x, k, v, y, step = counter_graph
    with dg.Graph():
        stranger = dg.placeholder((2,), name="x")
    good = np.ones((3, 2))
    fetches, feed, error, match = {
        "missing feed": ([step, y], {}, ValueError, "'x'.*feed_dict does not feed"),
        "wrong shape": ([step], {x: np.ones((3, 3))}, ValueError, r"\(3, 3\).*\(None, 2\)"),
        "wrong rank": ([step], {x: np.ones(2)}, ValueError, r"\(2,\).*\(None, 2\)"),
        "wrong dtype": ([step], {x: good, k: 1.5}, TypeError, "float64.*int64"),
        "fed twice": ([step], {x: good, "x": good}, ValueError, "fed twice"),
        "not a placeholder": ([step], {x: good, v: np.zeros(2)}, TypeError, "only placeholders"),
        "unknown name": ([step], {x: good, "nope": 1.0}, ValueError, "no node named 'nope'"),
        "other graph fetch": ([step, stranger], {x: good}, ValueError, "another graph"),
        "not a node": ([step, np.ones(2)], {x: good}, TypeError, "not a node"),
        "other graph feed": ([step], {x: good, stranger: np.ones(2)}, ValueError, "not a node of this session"),
    }[case]
    nodes = len(g)
    calls.clear()
    with pytest.raises(error, match=match):
        dg.Session(g).run(fetches, feed)
    assert calls == {}, "nothing may be evaluated before the feeds and fetches are checked"
    np.testing.assert_array_equal(v.value, [1.0, 2.0])
    assert len(g) == nodes


def test_fetched_values_do_not_alias_variables_or_constants():
    with dg.Graph() as g:
        w = dg.Variable(np.zeros(3), name="w")
        c = dg.constant([1.0, 2.0], name="c")
    sess = dg.Session(g)
    fetched_w, fetched_c = sess.run([w, c])
    fetched_w += 1.0
    fetched_c[0] = 99.0
    np.testing.assert_array_equal(w.value, np.zeros(3))
    np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])


def test_sizes_that_do_not_fit_are_found_before_anything_runs(calls):
    with dg.Graph() as g:
        a = dg.placeholder((None,), name="a")
        b = dg.placeholder((None,), name="b")
        v = dg.Variable(np.zeros(2), name="v")
        early = v.assign(v + 1.0)
        bad = dg.exp(a) + b  # (3,) + (4,) is known not to fit once the feeds' sizes are
    calls.clear()
    sess = dg.Session(g)
    with pytest.raises(ValueError, match=r"add failed in Session.run.*\(3,\).*\(4,\).*test_static.py"):
        sess.run([early, bad], {a: np.zeros(3), b: np.zeros(4)})
    assert calls == {}  # the run's code is compiled for these sizes first: nothing was evaluated
    np.testing.assert_array_equal(v.value, [0.0, 0.0])


def test_a_failure_in_the_middle_of_a_run_changes_no_variable(calls):
    with dg.Graph() as g:
        m = dg.placeholder((2, 2), name="m")
        v = dg.Variable(np.zeros(2), name="v")
        w = dg.Variable(5.0, name="w")
        early = dg.group(v.assign(v + 1.0), w.assign(w * 2.0))  # evaluated before the failing node
        bad = dg.linalg.inv(dg.exp(m) - 1.0)  # singular for m = 0: fails only when it runs
    calls.clear()
    sess = dg.Session(g)
    with pytest.raises(np.linalg.LinAlgError, match=r"inv failed in Session.run.*\(2, 2\).*test_static.py"):
        sess.run([early, bad], {m: np.zeros((2, 2))})
    assert calls["exp"] == 1 and calls["add"] == 1  # it did get that far: v + 1.0, then the failing inv
    np.testing.assert_array_equal(v.value, [0.0, 0.0])
    assert w.value == 5.0


def test_a_bad_update_value_at_run_time_applies_no_update():
    with dg.Graph() as g:
        n = dg.placeholder((None,), name="n")
        v = dg.Variable(np.zeros(3), name="v")
        w = dg.Variable(1.0, name="w")
        train = dg.group(w.assign(w + 1.0), v.assign(n))  # n's size is known only when it runs
    sess = dg.Session(g)
    with pytest.raises(ValueError, match=r"update of Variable 'v'.*\(4,\)"):
        sess.run(train, {n: np.ones(4)})
    assert w.value == 1.0 and not v.value.any()  # w's valid update was not applied either
    sess.run(train, {n: np.ones(3)})
    assert w.value == 2.0 and v.value.tolist() == [1.0, 1.0, 1.0]


def test_all_reads_in_a_run_see_the_values_from_before_its_updates():
    with dg.Graph() as g:
        a = dg.Variable(1.0, name="a")
        b = dg.Variable(2.0, name="b")
        swap = dg.group(a.assign(b), b.assign(a))
        bump = a.assign_add(10.0)
        lower = b.assign_sub(a)
    sess = dg.Session(g)
    assert sess.run(swap) is None  # a group has no value
    assert (a.value, b.value) == (2.0, 1.0)  # swapped, not both 2.0
    old, new, difference = sess.run([a, bump, a * 1.0], {})
    assert (old, new, difference) == (2.0, 12.0, 2.0)  # a read in the run of its update sees the old value
    assert a.value == 12.0
    assert sess.run([lower, bump]) == [-11.0, 22.0]  # b - a with a's value before its update
    assert (a.value, b.value) == (22.0, -11.0)


def test_assign_checks_its_target_shape_and_dtype_at_build_time():
    with dg.Graph() as g:
        v = dg.Variable(np.zeros(3), name="v")
        count = dg.Variable(0, name="count")
        x = dg.placeholder((2,), name="x")
        with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
            v.assign(x)
        with pytest.raises(TypeError, match="dg.Variable"):
            dg.assign(x, v)
        with pytest.raises(TypeError, match="float64"):
            count.assign(count + 0.5)
        with pytest.raises(ValueError, match=r"\(2,\)"):
            v.assign(np.ones(2))
        constant_update = v.assign([1.0, 2.0, 3.0])  # plain values are checked and stored as constants
        incr = count.assign_add(1)
    sess = dg.Session(g)
    sess.run([constant_update, incr])
    assert v.value.tolist() == [1.0, 2.0, 3.0] and count.value == 1 and count.value.dtype == np.int64
    with pytest.raises(ValueError, match="assigned twice"):
        sess.run([incr, count.assign(5)])
    assert count.value == 1


def test_running_a_graph_many_times_builds_no_nodes():
    with dg.Graph() as g:
        x = dg.placeholder((None, 2), name="x")
        w = dg.Variable(np.zeros(2), name="w")
        loss = dg.mean((x @ w - 1.0) ** 2)
        (gw,) = dg.gradients(loss, [w])
        step = w.assign_sub(0.1 * gw)
    nodes = len(g)
    sess = dg.Session(g)
    data = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    expected = np.zeros(2)
    for i in range(1000):
        batch = data[: 1 + i % 3]  # batch sizes 1, 2, 3 through one graph
        sess.run(step, {x: batch})
        expected = expected - 0.1 * 2 * batch.T @ (batch @ expected - 1.0) / len(batch)  # the same step by hand
    assert len(g) == nodes
    np.testing.assert_allclose(w.value, expected, rtol=1e-12)


# -- 5. the listing


def test_the_listing_has_one_typed_line_per_node_with_names():
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        w = dg.Variable(np.zeros((3, 10)), name="w")
        b = dg.constant(np.zeros(10, np.float32))
        y = dg.tanh(x @ w + b)
        y.sum(axis=1)
        mask = x > 0
        dg.group(w.assign(w * 0.5), name="shrink")
        dg.placeholder((), "int64", name="x")
    assert mask.dtype == np.bool_
    assert str(g) == g.listing()
    assert g.listing().splitlines() == [
        "%x = placeholder : (None, 3) float64",
        "%w = variable : (3, 10) float64",
        "%2 = constant : (10,) float32",
        "%3 = matmul(%x, %w) : (None, 10) float64",
        "%4 = add(%3, %2) : (None, 10) float64",
        "%5 = tanh(%4) : (None, 10) float64",
        "%6 = sum(%5, axis=(1,), keepdims=False) : (None,) float64",
        "%7 = greater(%x, 0) : (None, 3) bool",
        "%8 = multiply(%w, 0.5) : (3, 10) float64",
        "%9 = assign(%w, %8) : (3, 10) float64",
        "%shrink = group(%9) : () bool",
        "%x_1 = placeholder : () int64",
    ]
    assert repr(g) == "<dagrad.Graph with 12 nodes>" and len(g) == 12
    assert repr(y) == "<Symbol tanh : (None, 10) float64>"
    assert repr(x) == "<Symbol 'x' placeholder : (None, 3) float64>"


def test_the_listing_shows_small_literals_inline_and_large_ones_by_shape():
    with dg.Graph() as g:
        x = dg.placeholder((2, 2), name="x")
        x + np.array([1.0, 2.0])
        x * np.float32(2)
        x + np.arange(6.0).reshape(3, 1, 2)
        x.sum(axis=0, keepdims=True)
    assert g.listing().splitlines()[1:] == [
        "%1 = add(%x, [1., 2.]) : (2, 2) float64",
        "%2 = multiply(%x, 2.0) : (2, 2) float64",
        "%3 = add(%x, array(3, 1, 2) float64) : (3, 2, 2) float64",
        "%4 = sum(%x, axis=(0,), keepdims=True) : (1, 2) float64",
    ]


def test_the_listing_has_one_line_per_node_even_with_a_2d_literal():
    with dg.Graph() as g:
        x = dg.placeholder((2, 5), name="x")
        x * np.array([[2.0], [3.0]])
    assert len(g.listing().splitlines()) == len(g)


def test_the_listing_labels_are_unique_when_a_name_is_a_number():
    with dg.Graph() as g:
        x = dg.placeholder((), name="x")
        x + 1.0
        x * 2.0
        dg.placeholder((), name="2")
        x - 1.0
    labels = [line.split(" = ")[0] for line in g.listing().splitlines()]
    assert len(set(labels)) == len(labels), labels


# -- bad input: a symbolic tensor where a concrete value is needed


@pytest.mark.parametrize(
    ("what", "use"),
    [
        ("bool", bool),
        ("if", lambda t: 1 if t.sum() > 0 else 0),
        ("float", float),
        ("int", int),
        ("numpy", lambda t: t.numpy()),
        ("item", lambda t: t.item()),
        ("np.asarray", np.asarray),
        ("tolist", lambda t: t.tolist()),
        ("value", lambda t: (t * 2).value),
    ],
)
def test_a_symbolic_tensor_has_no_concrete_value(what, use):
    with dg.Graph():
        t = dg.placeholder((), name="t")
        with pytest.raises(TypeError, match="Session.run") as err:
            use(t)
    if what != "value":
        assert f"{__file__}:" in str(err.value)  # it points at the user's line (here or the lambda's)
    if what == "bool":
        assert "dg.where" in str(err.value)  # and says what to use instead


def test_backward_on_a_symbolic_tensor_points_to_gradients():
    with dg.Graph():
        x = dg.placeholder((2,))
        with pytest.raises(TypeError, match="dg.gradients"):
            (x * x).sum().backward()


# -- 6. the classic programs, built once and run many times


def _load_example():
    spec = importlib.util.spec_from_file_location("static_classics", EXAMPLES / "static_classics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def classics():
    return _load_example()


def test_classic_minimise_log(classics):
    result = classics.minimise_log(steps=1000)
    assert result["x"] == pytest.approx(7.0, abs=1e-8)
    assert result["loss"] == pytest.approx(np.log(10.0))
    assert result["nodes_after"] == result["nodes_built"]  # 1,000 runs built nothing


def test_classic_minimise_quadratic(classics):
    result = classics.minimise_quadratic(steps=1000)
    assert (result["x"], result["y"]) == (pytest.approx(1.0), pytest.approx(1.0))
    assert result["loss"] == pytest.approx(-2.0)
    assert result["nodes_after"] == result["nodes_built"]
    # gradient descent keeps x - y fixed (the gradient is along (1, 1)) and reaches the line x + y = 2
    other = classics.minimise_quadratic(steps=1000, start=(3.0, -4.0))
    assert (other["x"], other["y"]) == (pytest.approx(4.5), pytest.approx(-2.5))


def test_classic_logistic_regression(classics):
    result = classics.logistic_regression()
    assert result["nodes_after"] == result["nodes_built"]
    assert result["test_accuracy"] > result["bayes_accuracy"] - 0.03  # about as good as the true weights
    np.testing.assert_allclose(result["w"], classics.TRUE_W, atol=0.5)
    # the trained weights are the maximum-likelihood estimate: the eager gradient there is ~0
    features, labels = classics.make_classification(400, seed=0)

    def loss(w, b):
        z = features @ w + b
        return dg.mean(dg.softplus(z) - labels * z)

    gw, gb = dg.grad(loss, argnums=(0, 1))(result["w"], result["b"])
    assert np.abs(gw).max() < 1e-3 and abs(gb) < 1e-3


def test_classic_sigmoid_of_half_squared_error(classics):
    result = classics.sigmoid_square_error()
    np.testing.assert_allclose(result["value"], result["eager_value"])
    np.testing.assert_allclose(result["gradient"], result["eager_gradient"])
    np.testing.assert_allclose(result["gradient"], result["by_hand"])


def test_the_example_script_runs(classics, capsys):
    classics.main()
    out = capsys.readouterr().out
    assert "x = 7.000000" in out and "(x, y) = (1.000000, 1.000000)" in out
    assert re.search(r"(\d+) nodes after building, \1 after 1,000 runs", out)


# -- bad input (issue 12): every error names the call, the shapes/dtypes and the user's line; nothing changes


def _here(offset=1):
    """'test_static.py:N' for the caller's line plus `offset`."""
    return f"{Path(__file__).name}:{inspect.currentframe().f_back.f_lineno + offset}"


@pytest.mark.parametrize(
    ("case", "error", "parts"),
    [
        ("missing feed", ValueError, ["'x'", "does not feed"]),
        ("wrong shape", ValueError, ["'x'", "(3, 3)", "(None, 2)"]),
        ("wrong dtype", TypeError, ["'k'", "float64", "int64"]),
        ("complex feed", TypeError, ["'x'", "complex128", "float64"]),
        ("ragged feed", ValueError, ["'x'", "cannot be made an array"]),
        ("unknown name", ValueError, ["'nope'"]),
        ("not a placeholder", TypeError, ["only placeholders"]),
        ("fed twice", ValueError, ["fed twice"]),
        ("fetch of another graph", ValueError, ["another graph"]),
        ("fetch that is not a node", TypeError, ["ndarray", "not a node"]),
        ("feed_dict a list", TypeError, ["feed_dict must be a dict", "list"]),
        ("feed_dict key an int", TypeError, ["key of type int"]),
    ],
)
def test_session_feed_errors_name_the_run_and_the_users_line(counter_graph, calls, case, error, parts):
    g, x, k, v, y, step = counter_graph
    with dg.Graph():
        stranger = dg.placeholder((2,), name="s")
    good = np.ones((3, 2))
    fetches, feed = {
        "missing feed": ([step, y], {}),
        "wrong shape": ([step], {x: np.ones((3, 3))}),
        "wrong dtype": ([step], {x: good, k: 1.5}),
        "complex feed": ([step], {x: good + 1j}),
        "ragged feed": ([step], {x: [[1.0, 2.0], [3.0]]}),
        "unknown name": ([step], {x: good, "nope": 1.0}),
        "not a placeholder": ([step], {x: good, v: np.zeros(2)}),
        "fed twice": ([step], {x: good, "x": good}),
        "fetch of another graph": ([step, stranger], {x: good}),
        "fetch that is not a node": ([step, np.ones(2)], {x: good}),
        "feed_dict a list": ([step], [(x, good)]),
        "feed_dict key an int": ([step], {x: good, 3: good}),
    }[case]
    sess = dg.Session(g)
    nodes = len(g)
    calls.clear()
    line = _here(2)
    with pytest.raises(error) as info:
        sess.run(fetches, feed)
    message = str(info.value)
    assert message.startswith("Session.run: ") and line in message, message
    for part in parts:
        assert part in message, (part, message)
    assert calls == {} and len(g) == nodes
    np.testing.assert_array_equal(v.value, [1.0, 2.0])


@pytest.mark.parametrize(
    ("shape", "dtype", "error", "part"),
    [
        ((-1, 3), "float64", ValueError, "cannot be negative"),
        ((2.5, 3), "float64", TypeError, "got float"),
        (("3",), "float64", TypeError, "got str"),
        ((True, 3), "float64", TypeError, "got bool"),
        (3, "float64", TypeError, "tuple of sizes"),
        ((2,), object, TypeError, "unsupported dtype object"),
        ((2,), "U3", TypeError, "unsupported dtype <U3"),
        ((2,), "no such dtype", TypeError, "is not a dtype"),
    ],
)
def test_bad_placeholders_are_refused_where_they_are_declared(shape, dtype, error, part):
    with dg.Graph() as g:
        dg.placeholder((None,), name="ok")
        line = _here(2)
        with pytest.raises(error) as info:
            dg.placeholder(shape, dtype, name="p")
    message = str(info.value)
    assert message.startswith("placeholder: ") and part in message and line in message, message
    assert len(g) == 1 and "p" not in g._names


@pytest.mark.parametrize("make", [dg.constant, dg.Variable])
@pytest.mark.parametrize(("data", "part"), [(np.array([None, 1]), "object"),
                                            ("abc", "<U3"), ([[1.0], [2.0, 3.0]], "cannot make an array")])
def test_constants_and_variables_of_unsupported_data_are_refused(make, data, part):
    with dg.Graph() as g:
        line = _here(2)
        with pytest.raises((TypeError, ValueError)) as info:
            make(data)
    message = str(info.value)
    assert message.startswith(f"{make.__name__}: ") and part in message and line in message, message
    assert len(g) == 0


@pytest.mark.parametrize("op", ["size", "len", "backward"])
def test_symbolic_sizes_and_backward_errors_name_the_users_line(op):
    with dg.Graph():
        x = dg.placeholder((None, 3), name="x")
        y = x.sum()
        line = _here(2)
        with pytest.raises(TypeError) as info:
            x.size if op == "size" else len(x) if op == "len" else y.backward()  # noqa: B018
    assert str(info.value).startswith(f"{op}: ") and line in str(info.value), str(info.value)


@pytest.mark.parametrize("case", ["shape", "target", "value", "group"])
def test_assign_and_group_errors_name_the_users_line(case):
    with dg.Graph() as g:
        v = dg.Variable(np.zeros(3), name="v")
        x = dg.placeholder((2,), name="x")
    function, args, error, part = {
        "shape": (dg.assign, (v, x), ValueError, "(2,)"),
        "target": (dg.assign, (x, v), TypeError, "dg.Variable"),
        "value": (dg.assign, (v, np.ones(2)), ValueError, "(2,)"),
        "group": (dg.group, (np.ones(2),), TypeError, "nodes of a static graph"),
    }[case]
    nodes = len(g)
    line = _here(2)
    with pytest.raises(error) as info:
        function(*args)
    message = str(info.value)
    assert message.startswith(f"{function.__name__}: ") and part in message and line in message, message
    assert len(g) == nodes


def test_a_group_of_updates_from_two_graphs_is_refused():
    with dg.Graph():
        v = dg.Variable(1.0, name="v")
    with dg.Graph():
        w = dg.Variable(1.0, name="w")
    with pytest.raises(ValueError, match="group: the nodes belong to different graphs"):
        dg.group(v.assign(2.0), w.assign(2.0))


class _NoBackward(dg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError("no gradient here")


@pytest.mark.parametrize("case", ["bad grad_ys", "failing rule", "not a node"])
def test_a_failing_gradients_leaves_the_graph_as_it_was(case):
    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        a = dg.exp(x).sum()
        b = _NoBackward.apply(dg.tanh(x)).sum() + dg.sin(x).sum()
        names = dict(g._names)
        twice = a * 2.0
        args = {
            "bad grad_ys": ([a, twice], [x], [1.0, np.ones(2)]),  # the first seed's node is built, then it fails
            "failing rule": (b, [x], None),  # sin's and add's gradients are built before the rule fails
            "not a node": (a, [x, np.ones(3)], None),
        }[case]
        nodes = len(g)
        line = _here(2)
        with pytest.raises((ValueError, TypeError, NotImplementedError)) as info:
            dg.gradients(*args)
    assert len(g) == nodes and g._names == names
    if case != "failing rule":
        assert str(info.value).startswith("gradients: ") and line in str(info.value), str(info.value)


def test_assign_on_a_node_that_is_not_a_variable_is_a_clear_error():
    with dg.Graph():
        x = dg.placeholder((2,), name="x")
        for call in (lambda: x.assign(1.0), lambda: (x * 2.0).assign_add(1.0), lambda: x.assign_sub(1.0)):
            with pytest.raises(TypeError, match=r"assign: the target must be a dg.Variable, got <Symbol .*test_static"):
                call()


def test_a_numpy_array_is_copied_when_it_becomes_a_constant_of_a_node():
    # TF1's tf.constant copies at build; the node read the caller's array at each run (a later write changed it)
    a, index, t = np.array([1.0, 2.0]), np.array([1, 0]), dg.tensor([1.0, 2.0])
    with dg.Graph() as g:
        x = dg.placeholder((2,))
        y, picked, z = dg.sum(x * a), x[index], dg.sum(x * t)
    a[:], index[:] = 0.0, 1
    t += 1.0
    y, picked, z = dg.Session(g).run([y, picked, z], {x: np.array([5.0, 6.0])})
    assert y == 17.0 and np.array_equal(picked, [6.0, 5.0]) and z == 17.0
