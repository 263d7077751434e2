"""TF1's habits in static graphs (docs/static.md, "Coming from TF1"): placeholder(dtype, shape),
placeholders of any shape, `with Session() as sess`, minimize(loss) without a variable list,
global_variables_initializer; and TF1 programs written the TF1 way, checked against NumPy."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import dagrad as dg


def _here(offset=1):
    """'test_tf1_habits.py:N' for the caller's line plus `offset`."""
    return f"{Path(__file__).name}:{inspect.currentframe().f_back.f_lineno + offset}"


def _line_of(function):
    """'test_tf1_habits.py:N' for the line where `function` (a one-line lambda) is written."""
    return f"{Path(__file__).name}:{function.__code__.co_firstlineno}"


def _sum_to(a, shape):
    """`a` summed down to `shape` (undoing a broadcast), by hand."""
    a = np.sum(a, axis=tuple(range(a.ndim - len(shape))))
    return np.sum(a, axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True).reshape(shape)


# ---------------------------------------------------------------- placeholder(dtype, shape=None, name=None)


@pytest.mark.parametrize(
    ("args", "kwargs", "shape", "dtype"),
    [
        (("float",), {}, None, np.float32),  # TF's names: "float" is float32 (NumPy's is float64)
        (("double", [None, 3]), {}, (None, 3), np.float64),
        (("half", (2,)), {}, (2,), np.float16),
        (("float32", None), {}, None, np.float32),
        (("int32", [None]), {}, (None,), np.int32),
        (("int64",), {"shape": (None, 2)}, (None, 2), np.int64),
        (("bool", []), {}, (), np.bool_),
        ((np.float32, [None]), {}, (None,), np.float32),
        ((np.dtype("int16"), (4,)), {}, (4,), np.int16),
        ((float,), {}, None, np.float64),  # Python's types as NumPy reads them
        ((int, (3,)), {}, (3,), np.int64),
        ((bool,), {}, None, np.bool_),
        ((), {"dtype": "float", "shape": [None]}, (None,), np.float32),  # keywords, in either order
        ((), {"shape": [None], "dtype": "float64"}, (None,), np.float64),
        ((), {"dtype": np.float32}, None, np.float32),
        ((), {"shape": (2, 3)}, (2, 3), np.float64),
        # dagrad's order is unchanged: (shape, dtype="float64", name=None)
        (((None, 3),), {}, (None, 3), np.float64),
        (([None], "int64"), {}, (None,), np.int64),
        (((3,),), {"dtype": "float32"}, (3,), np.float32),
        ((None,), {}, None, np.float64),  # None is a shape: any shape
        ((None, "float"), {}, None, np.float32),
        (((2,), "float"), {}, (2,), np.float32),  # a dtype name means the same in both orders
    ],
)
def test_placeholder_takes_tf1s_order_and_dtype_names_beside_dagrads(args, kwargs, shape, dtype):
    with dg.Graph():
        x = dg.placeholder(*args, **kwargs)
    assert x.dtype == np.dtype(dtype)
    if shape is None:
        assert x.ndim is None and str(x.shape) == "<any shape>"
    else:
        assert tuple(x.shape) == shape and x.ndim == len(shape)
    assert x.requires_grad == (x.dtype.kind == "f")


def test_placeholder_names_in_both_orders():
    with dg.Graph() as g:
        a = dg.placeholder("float32", [None], "a")
        b = dg.placeholder([None], "float32", "b")
        c = dg.placeholder("float32", name="c")
    assert (a.name, b.name, c.name) == ("a", "b", "c") and g["c"] is c


@pytest.mark.parametrize(
    ("call", "error", "parts"),
    [
        (lambda: dg.placeholder("flaot"), TypeError, ["placeholder: 'flaot' is not a dtype"]),
        (lambda: dg.placeholder("bfloat16", [None]), TypeError, ["placeholder: 'bfloat16' is not a dtype"]),
        (lambda: dg.placeholder("string"), TypeError, ["'string' is not a dtype"]),
        (lambda: dg.placeholder("float32", (2.5, 3)), TypeError, ["shape (2.5, 3)", "got float"]),
        (lambda: dg.placeholder([2.0]), TypeError, ["got float"]),
        (lambda: dg.placeholder("float32", [None, -1]), ValueError, ["cannot be negative"]),
        (lambda: dg.placeholder("float32", "float32"), TypeError, ["shape must be a tuple of sizes", "got str"]),
        (lambda: dg.placeholder("float32", 3), TypeError, ["tuple of sizes"]),
        (lambda: dg.placeholder("float32", dtype="int64"), TypeError, ["got the dtype twice"]),
        (lambda: dg.placeholder((3,), "float32", dtype="int64"), TypeError, ["got the dtype twice"]),
        (lambda: dg.placeholder((3,), shape=(3,)), TypeError, ["got the shape twice"]),
        (lambda: dg.placeholder("float32", [3], shape=[3]), TypeError, ["got the shape twice"]),
        (lambda: dg.placeholder(), TypeError, ["needs a shape", "or a dtype"]),
    ],
)
def test_bad_placeholders_are_clear_errors_and_leave_the_graph_unchanged(call, error, parts):
    with dg.Graph() as g:
        dg.placeholder("float", name="ok")
        with pytest.raises(error) as info:
            call()
    message = str(info.value)
    assert type(info.value) is error and message.startswith("placeholder: ") and _line_of(call) in message, message
    for part in parts:
        assert part in message, (part, message)
    assert len(g) == 1 and list(g._names) == ["ok"]


# ---------------------------------------------------------------- placeholders of any shape (unknown rank)


def test_a_placeholder_of_any_shape_takes_any_rank_through_elementwise_ops_and_full_reductions():
    with dg.Graph() as g:
        x = dg.placeholder("float64", name="x")
        w = dg.Variable(np.array([1.0, -2.0, 0.5]), name="w")
        y = dg.sigmoid(x * w - 1.0)  # elementwise: the rank stays unknown
        total, average, spread, top = dg.sum(y), dg.mean(y), dg.std(y), dg.max(y)
        centred = y - dg.mean(y, keepdims=True)
    assert y.ndim is None and "<any shape>" in repr(y) and "%x = placeholder : <any shape> float64" in str(g)
    assert [t.shape for t in (total, average, spread, top)] == [(), (), (), ()]
    sess = dg.Session(g)
    for value in (np.array(0.5), np.arange(3.0), np.arange(12.0).reshape(2, 2, 3)):
        expect = 1.0 / (1.0 + np.exp(-(value * w.value - 1.0)))
        got = sess.run([y, total, average, spread, top, centred], {x: value})
        np.testing.assert_allclose(got[0], expect, rtol=1e-15)
        np.testing.assert_allclose(got[1:5], [expect.sum(), expect.mean(), expect.std(), expect.max()], rtol=1e-14)
        np.testing.assert_allclose(got[5], expect - expect.mean(), rtol=1e-14, atol=1e-16)


def test_gradients_through_a_placeholder_of_any_shape_are_built_when_the_session_runs():
    with dg.Graph() as g:
        x = dg.placeholder("float", name="x")  # float32, any shape
        w = dg.Variable(np.array([1.0, 2.0, 3.0]), name="w")
        loss = dg.mean((x * w - 1.0) ** 2)
        gx, gw = dg.gradients(loss, [x, w])
        hvp = dg.gradients(dg.sum(gx * x), x)  # second order through the deferred gradient
    assert gw.shape == (3,) and gx.ndim is None and gx.dtype == np.float64  # float32 x times a float64 Variable
    nodes = len(g)
    sess = dg.Session(g)
    for value in (np.arange(3.0), np.arange(6.0).reshape(2, 3), np.array(2.0)):
        xs = value.astype(np.float32).astype(np.float64)
        r = xs * w.value - 1.0
        n = r.size
        got_loss, got_gx, got_gw, got_hvp = sess.run([loss, gx, gw, hvp], {x: value})
        np.testing.assert_allclose(got_loss, np.mean(r**2), rtol=1e-14)
        expect_gx = _sum_to(2 * r * w.value / n, xs.shape)
        np.testing.assert_allclose(got_gx, expect_gx, rtol=1e-14)
        np.testing.assert_allclose(got_gw, _sum_to(2 * r * xs / n, (3,)), rtol=1e-14)
        curvature = _sum_to(np.broadcast_to(2 * w.value**2 / n, r.shape), xs.shape)
        np.testing.assert_allclose(got_hvp, expect_gx + xs * curvature, rtol=1e-14)
    assert len(g) == nodes  # the real gradients live in the session's copies, not in the graph


@pytest.mark.parametrize(
    ("build", "op", "what"),
    [
        (lambda x, w, xw: x @ w, "matmul", "symbolic tensor 'x'"),
        (lambda x, w, xw: dg.sum(x, axis=1), "sum", "symbolic tensor 'x'"),
        (lambda x, w, xw: dg.mean(x, axis=-1), "sum", "symbolic tensor 'x'"),
        (lambda x, w, xw: x.T, "transpose", "symbolic tensor 'x'"),
        (lambda x, w, xw: x.reshape(-1), "reshape", "symbolic tensor 'x'"),
        (lambda x, w, xw: x[0], "getitem", "symbolic tensor 'x'"),
        (lambda x, w, xw: dg.cumsum(x), "cumsum", "symbolic tensor 'x'"),
        (lambda x, w, xw: dg.expand_dims(xw, 0), "expand_dims", "a symbolic tensor"),  # x * w: any shape too
    ],
)
def test_ops_that_need_the_rank_refuse_a_placeholder_of_any_shape_when_built(build, op, what):
    with dg.Graph() as g:
        x = dg.placeholder("float64", name="x")
        w = dg.Variable(np.ones((3, 3)), name="w")
        xw = x * w
        nodes = len(g)
        with pytest.raises(ValueError) as info:
            build(x, w, xw)
    message = str(info.value)
    assert message.startswith(f"{op}: needs the rank of its input, but {what} has an unknown shape"), message
    assert "Give the placeholder a shape" in message and _line_of(build) in message, message
    assert len(g) == nodes


def test_a_value_of_any_shape_assigned_to_a_variable_is_checked_when_it_runs():
    with dg.Graph() as g:
        x = dg.placeholder("float64", name="x")
        v = dg.Variable(np.zeros(2), name="v")
        step = v.assign(x * 2.0)
    sess = dg.Session(g)
    sess.run(step, {x: [1.0, 2.0]})
    np.testing.assert_array_equal(v.value, [2.0, 4.0])
    with pytest.raises(ValueError, match=r"update of Variable 'v': a value of shape \(3,\) does not fit"):
        sess.run(step, {x: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(v.value, [2.0, 4.0])


# ---------------------------------------------------------------- with dg.Session() as sess


def test_session_is_a_context_manager_and_a_closed_session_refuses_to_run():
    with dg.Graph() as g:
        x = dg.placeholder("float64", [None], name="x")
        y = dg.sum(x * 2.0)
        with dg.Session() as sess:  # the default graph: here g
            assert sess.graph is g
            assert sess.run(y, {x: [1.0, 2.0]}) == 6.0
    nodes = len(g)
    line = _here(2)
    with pytest.raises(RuntimeError) as info:
        sess.run(y, {x: [1.0, 2.0]})
    message = str(info.value)
    assert message.startswith("Session.run: Attempted to use a closed Session.") and line in message, message
    assert len(g) == nodes and len(sess._code) == 0  # closing released the compiled code
    sess.close()  # again: nothing happens
    explicit = dg.Session(g)
    assert explicit.run(y, {x: [1.0]}) == 2.0
    explicit.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        explicit.run(y, {x: [1.0]})


# ---------------------------------------------------------------- minimize(loss) without a variable list


def _linear_graph():
    with dg.Graph() as g:
        x = dg.placeholder("float64", [None, 2], name="x")
        y = dg.placeholder("float64", [None], name="y")
        w = dg.Variable(np.array([0.5, -0.5]), name="w")
        b = dg.Variable(0.1, name="b")
        frozen = dg.Variable(np.array(2.0), name="frozen", trainable=False)
        unused = dg.Variable(np.array(3.0), name="unused")
        loss = dg.mean((x @ w + b * frozen - y) ** 2)
    return g, x, y, w, b, frozen, unused, loss


def _same(nodes, expected):
    """Whether two lists hold the same nodes (`==` of nodes builds a node: compare identities)."""
    return len(nodes) == len(expected) and all(a is b for a, b in zip(nodes, expected))


_X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
_Y = np.array([1.0, 0.0, 2.0])


def test_minimize_without_a_list_trains_the_trainable_variables_the_loss_depends_on():
    results = []
    for make in (lambda w, b: dg.optim.SGD(lr=0.1, momentum=0.9), lambda w, b: dg.optim.SGD([w, b], lr=0.1,
                                                                                              momentum=0.9)):
        g, x, y, w, b, frozen, unused, loss = _linear_graph()
        with g:
            opt = make(w, b)
            train = opt.minimize(loss)
        assert _same(dg.trainable_variables(g)[:3], [w, b, unused]) and _same(dg.global_variables(g)[:4],
                                                                              [w, b, frozen, unused])
        assert _same(opt.param_groups[0]["params"], [w, b])  # not frozen (trainable=False), not unused
        sess = dg.Session(g)
        for _ in range(5):
            sess.run(train, {x: _X, y: _Y})
        assert frozen.value == 2.0 and unused.value == 3.0
        results.append((w.value.copy(), b.value.copy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])  # the same arithmetic: bit for bit
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_var_list_limits_what_minimize_trains():
    g, x, y, w, b, frozen, unused, loss = _linear_graph()
    with g:
        only_w = dg.optim.SGD(lr=0.1).minimize(loss, var_list=[w])
        opt = dg.optim.Adam([w, b], lr=0.1)
        only_b = opt.minimize(loss, var_list=[b])
        frozen_too = dg.optim.SGD(lr=0.1).minimize(loss, var_list=[frozen])  # a list overrides trainable
    sess = dg.Session(g)
    sess.run(only_w, {x: _X, y: _Y})
    assert b.value == 0.1 and not np.array_equal(w.value, [0.5, -0.5])
    w_after = w.value.copy()
    sess.run(only_b, {x: _X, y: _Y})
    np.testing.assert_array_equal(w.value, w_after)
    assert b.value != 0.1 and _same(list(opt.state), [b])  # Adam made state for b only
    sess.run(frozen_too, {x: _X, y: _Y})
    assert frozen.value != 2.0


@pytest.mark.parametrize(
    ("call", "error", "parts"),
    [
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.no_variables), ValueError,
         ["SGD.minimize: no Variables to optimize: the loss depends on no trainable"]),
        (lambda c: dg.optim.Adam(lr=0.1).minimize(c.only_frozen), ValueError, ["Adam.minimize: no Variables"]),
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.loss, var_list=[c.x]), TypeError,
         ["var_list must hold dg.Variables, got Symbol"]),
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.loss, var_list=[]), ValueError, ["var_list is empty"]),
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.loss, var_list=[c.w, c.w]), ValueError, ["more than once"]),
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.loss, var_list=5), TypeError,
         ["var_list must be a list of dg.Variables, got int"]),
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.loss, var_list=np.ones(2)), TypeError,
         ["var_list must hold dg.Variables, got float64"]),
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.loss, var_list=[c.steps]), TypeError,
         ["can only optimize floating-point Variables"]),
        (lambda c: dg.optim.SGD(lr=0.1).minimize(c.other_loss), ValueError, ["the loss must be a scalar"]),
        (lambda c: dg.optim.SGD([c.w], lr=0.1).minimize(c.loss, var_list=[c.foreign]), ValueError,
         ["Variable 'foreign' belongs to another graph"]),
    ],
)
def test_minimize_errors_are_clear_and_change_nothing(call, error, parts):
    class Case:
        pass

    c = Case()
    with dg.Graph() as other:
        c.foreign = dg.Variable(1.0, name="foreign")
    with dg.Graph() as g:
        c.x = dg.placeholder("float64", [None], name="x")
        c.w = dg.Variable(np.array(1.0), name="w")
        c.frozen = dg.Variable(np.array(1.0), name="frozen", trainable=False)
        c.steps = dg.Variable(0, name="steps")
        c.loss = dg.sum(c.x * c.w)
        c.no_variables = dg.sum(c.x * 2.0)
        c.only_frozen = dg.sum(c.x * c.frozen)
        c.other_loss = c.x * c.w
        nodes, names, values = len(g), dict(g._names), [v.value for v in g.variables]
        with pytest.raises(error) as info:
            call(c)
    message = str(info.value)
    assert type(info.value) is error and _line_of(call) in message, message
    for part in parts:
        assert part in message, (part, message)
    assert len(g) == nodes and g._names == names and len(other) == 1
    assert all(v.value is old for v, old in zip(g.variables, values))


def test_an_optimizer_without_parameters_says_so_when_stepped_eagerly():
    opt = dg.optim.SGD(lr=0.1)
    with pytest.raises(TypeError, match=r"SGD.step: the optimizer was given no parameters.*minimize\(loss\)"):
        opt.step()
    assert opt.param_groups == []


def test_a_failed_minimize_leaves_a_parameterless_optimizer_without_parameters():
    class Fails(dg.optim.SGD):
        def _update(self, p, g, state, group):
            raise ValueError("boom")

    with dg.Graph() as g:
        w = dg.Variable(np.array([1.0, 2.0]), name="w")
        loss = dg.sum(w * w)
        opt = Fails(lr=0.1)
        nodes = len(g)
        with pytest.raises(ValueError, match="boom"):
            opt.minimize(loss)
    assert len(g) == nodes and opt.param_groups == [] and opt.state == {}


# ---------------------------------------------------------------- global_variables_initializer


def test_global_variables_initializer_resets_every_variable_and_the_optimizers_state():
    with dg.Graph() as g:
        w = dg.Variable(np.array([1.0, -2.0]), name="w")
        steps = dg.Variable(0, name="steps", trainable=False)
        loss = dg.sum(w * w)
        opt = dg.optim.Adam(lr=0.1)
        train = dg.group(opt.minimize(loss), steps.assign(steps + 1))
        init = dg.global_variables_initializer()
        later = dg.Variable(5.0, name="later")  # made after the initializer: not reset by it
        bump = later.assign(later + 1.0)
    assert "%init = initialize(%w, %steps, " in str(g)
    sess = dg.Session(g)
    assert sess.run(init) is None
    sess.run([train, bump])
    first_step = w.value.copy()
    for _ in range(2):
        sess.run([train, bump])
    assert steps.value == 3 and opt.state[w]["step"].value == 3.0 and later.value == 8.0
    trained = w.value.copy()
    nodes = len(g)
    assert sess.run([init, loss])[1] == np.sum(trained * trained)  # reads see the values from before the run
    np.testing.assert_array_equal(w.value, [1.0, -2.0])
    assert steps.value == 0 and opt.state[w]["step"].value == 0.0 and later.value == 8.0
    np.testing.assert_array_equal(opt.state[w]["exp_avg"].value, [0.0, 0.0])
    sess.run(train)
    np.testing.assert_array_equal(w.value, first_step)  # Adam's first step again
    assert len(g) == nodes
    w.value[...] = 7.0  # changing a value in place does not change the initial value
    np.testing.assert_array_equal(w.initial_value, [1.0, -2.0])
    with pytest.raises(ValueError):
        w.initial_value[0] = 3.0  # read-only


def test_the_learning_rate_is_not_reset_and_a_run_may_not_both_reset_and_assign():
    with dg.Graph() as g:
        w = dg.Variable(np.array([1.0]), name="w")
        opt = dg.optim.SGD(lr=0.1)
        train = opt.minimize(dg.sum(w))  # gradient 1: each step subtracts the current rate
        init = dg.global_variables_initializer()
    sess = dg.Session(g)
    opt.param_groups[0]["lr"] = 0.25  # e.g. a scheduler: the rate is the group's option, not state
    sess.run(init)
    sess.run(train)
    np.testing.assert_array_equal(w.value, [0.75])
    line = _here(2)
    with pytest.raises(ValueError) as info:
        sess.run([init, train])
    message = str(info.value)
    assert "Variable 'w' is both assigned and reset" in message and line in message, message
    np.testing.assert_array_equal(w.value, [0.75])


def test_initializer_and_variable_lists_of_a_given_graph():
    with dg.Graph() as g:
        a = dg.Variable(1.0, name="a")
        b = dg.Variable(2.0, name="b", trainable=False)
    empty = dg.Graph()
    with dg.Graph():  # another default graph: the graph given wins
        init = dg.global_variables_initializer(g)
        assert _same(dg.global_variables(g), [a, b]) and _same(dg.trainable_variables(g), [a])
        assert dg.global_variables() == [] and dg.trainable_variables(empty) == []
    assert init.graph is g and init.name == "init"
    a.value = 10.0
    dg.Session(g).run(init)
    assert a.value == 1.0
    with pytest.raises(TypeError, match="global_variables_initializer: expects a dg.Graph, got str"):
        dg.global_variables_initializer("g")
    dg.Session(empty).run(dg.global_variables_initializer(empty))  # no Variables: nothing to do


# ---------------------------------------------------------------- TF1 programs, the TF1 way
# Each is checked against the same model trained in NumPy by hand, doing the graph's arithmetic in
# the graph's order (d mean / d x is (1/n) * ..., softplus and sigmoid in their stable forms), so
# the results agree bit for bit.


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, 3))
    target = features @ np.array([1.5, -2.0, 0.5]) + 0.3 + 0.1 * rng.normal(size=n)
    return features, target


def test_tf1_linear_regression_matches_numpy():
    features, target = _data()
    learning_rate, epochs, batch = 0.05, 30, 10

    with dg.Graph():
        X = dg.placeholder("double", [None, 3], name="X")
        Y = dg.placeholder("double", [None], name="Y")
        W = dg.Variable(np.zeros(3), name="weight")
        b = dg.Variable(0.0, name="bias")
        pred = X @ W + b
        cost = dg.mean((pred - Y) ** 2)
        optimizer = dg.optim.SGD(lr=learning_rate).minimize(cost)
        init = dg.global_variables_initializer()
        costs = []
        with dg.Session() as sess:
            sess.run(init)
            for _ in range(epochs):
                for start in range(0, len(features), batch):
                    feed = {X: features[start:start + batch], Y: target[start:start + batch]}
                    _, c = sess.run([optimizer, cost], feed_dict=feed)
                    costs.append(c)

    w, bias, expect = np.zeros(3), 0.0, []
    for _ in range(epochs):
        for start in range(0, len(features), batch):
            x, y = features[start:start + batch], target[start:start + batch]
            r = x @ w + bias - y
            expect.append(np.mean(r**2))
            g = (1.0 / len(y)) * (2 * r)  # d cost / d pred, in the order the graph's rules compute it
            grad_w, grad_b = x.T @ g, np.sum(g)
            w, bias = w + -learning_rate * grad_w, bias + -learning_rate * grad_b
    np.testing.assert_array_equal(costs, expect)
    np.testing.assert_array_equal(W.value, w)
    np.testing.assert_array_equal(b.value, bias)
    assert costs[-1] < 0.02


def test_tf1_linear_regression_on_scalar_feeds_of_a_placeholder_without_shape():
    # the classic TF1 example: X = tf.placeholder("float"), fed one sample at a time
    rng = np.random.default_rng(1)
    train_x = rng.uniform(0, 10, size=17)
    train_y = 0.25 * train_x + 0.8 + 0.05 * rng.normal(size=17)
    learning_rate, epochs = 0.01, 20

    with dg.Graph() as g:
        X = dg.placeholder("double")
        Y = dg.placeholder("double")
        W = dg.Variable(0.5, name="weight")
        b = dg.Variable(-0.1, name="bias")
        pred = X * W + b
        cost = dg.sum((pred - Y) ** 2) / (2 * len(train_x))
        optimizer = dg.optim.SGD(lr=learning_rate).minimize(cost)
        init = dg.global_variables_initializer()
    nodes = len(g)
    with dg.Session(g) as sess:
        sess.run(init)
        for _ in range(epochs):
            for x, y in zip(train_x, train_y):
                sess.run(optimizer, feed_dict={X: x, Y: y})
        final = sess.run(cost, feed_dict={X: train_x, Y: train_y})  # the same graph on whole vectors
    assert len(g) == nodes

    w, bias = 0.5, -0.1
    for _ in range(epochs):
        for x, y in zip(train_x, train_y):
            r = x * w + bias - y
            w, bias = w + -learning_rate * (2 * r * x / 34), bias + -learning_rate * (2 * r / 34)
    np.testing.assert_array_equal([W.value, b.value], [w, bias])
    np.testing.assert_array_equal(final, np.sum((train_x * w + bias - train_y) ** 2) / 34)


def test_tf1_logistic_regression_matches_numpy():
    rng = np.random.default_rng(2)
    features = rng.normal(size=(60, 2))
    labels = (features @ np.array([2.0, -1.0]) + 0.5 + 0.3 * rng.normal(size=60) > 0).astype(np.float64)
    learning_rate, steps = 0.5, 200

    with dg.Graph():
        X = dg.placeholder("double", [None, 2], name="X")
        Y = dg.placeholder("double", [None], name="Y")
        W = dg.Variable(np.zeros(2), name="weights")
        b = dg.Variable(0.0, name="bias")
        logits = X @ W + b
        loss = dg.mean(dg.softplus(logits) - Y * logits)  # sigmoid cross-entropy
        accuracy = dg.mean(dg.astype(dg.equal(logits > 0, Y > 0.5), "float64"))
        train = dg.optim.SGD(lr=learning_rate).minimize(loss)
        init = dg.global_variables_initializer()
        with dg.Session() as sess:
            sess.run(init)
            for _ in range(steps):
                _, final_loss = sess.run([train, loss], feed_dict={X: features, Y: labels})
            final_accuracy = sess.run(accuracy, {X: features, Y: labels})

    w, bias, share = np.zeros(2), 0.0, 1.0 / len(labels)
    for _ in range(steps):  # softplus and sigmoid as dagrad computes them (stable for any z)
        z = features @ w + bias
        e = np.exp(-np.abs(z))
        expect_loss = np.mean(np.maximum(z, 0) + np.log1p(e) - labels * z)
        err = share * np.where(z >= 0, 1 / (1 + e), e / (1 + e)) + -share * labels  # d loss / d z
        w, bias = w + -learning_rate * (features.T @ err), bias + -learning_rate * np.sum(err)
    np.testing.assert_array_equal(final_loss, expect_loss)
    np.testing.assert_array_equal(W.value, w)
    np.testing.assert_array_equal(b.value, bias)
    assert final_accuracy > 0.85
