"""Control flow: dg.cond, dg.fori_loop, dg.while_loop, dg.scan, eagerly (Python loops) and as graph nodes
holding their bodies (dg.compile, static graphs), their derivatives in both modes, and their errors."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import dagrad as dg

FILE = os.path.basename(__file__)
RNG = np.random.default_rng(0)
W = RNG.normal(size=(3, 3)) * 0.6
XS = RNG.normal(size=(6, 3))
H0 = RNG.normal(size=3)


def _here(offset=0):
    return f"{FILE}:{sys._getframe(1).f_lineno + offset}"


def numeric_grad(fun, x, eps=1e-6):
    """Central differences of a scalar function of one array."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        g.flat[k] = (float(fun(x + e)) - float(fun(x - e))) / (2 * eps)
    return g


def rnn(w, h, xs):
    """An RNN over xs: the final state and every state, with scan."""
    def step(h, x):
        h = dg.tanh(w @ h + x)
        return h, h * 2.0
    return dg.scan(step, h, xs)


def rnn_python(w, h, xs):
    ys = []
    for x in xs:
        h = np.tanh(w @ h + x)
        ys.append(h * 2.0)
    return h, np.stack(ys)


def rnn_loss(w, h, xs):
    h, ys = rnn(w, h, xs)
    return dg.sum(ys ** 2) + dg.sum(h)


# ---------------------------------------------------------------- eager: plain Python


def test_eager_scan_is_the_python_loop():
    h, ys = rnn(W, H0, XS)
    h_ref, ys_ref = rnn_python(W, H0, XS)
    assert np.array_equal(h, h_ref) and np.array_equal(ys, ys_ref)


def test_eager_scan_pytrees_reverse_and_no_xs():
    def step(carry, x):
        total, count = carry["total"], carry["count"]
        return {"total": total + x["a"] * 2.0, "count": count + 1}, (total, x["b"])

    xs = {"a": np.arange(4.0), "b": np.arange(8.0).reshape(4, 2)}
    carry, (totals, bs) = dg.scan(step, {"total": 0.0, "count": 0}, xs, reverse=True)
    assert carry == {"total": 12.0, "count": 4}
    assert np.array_equal(totals, [12.0, 10.0, 6.0, 0.0]) and np.array_equal(bs, xs["b"])
    carry, ys = dg.scan(lambda c, x: (c * 2.0, c), 1.0, None, length=3)
    assert carry == 8.0 and np.array_equal(ys, [1.0, 2.0, 4.0])


def test_eager_fori_while_cond_are_python():
    expected = ((1.0 * 2 + 1) * 3 + 1) * 4 + 1
    assert np.array_equal(dg.fori_loop(2, 5, lambda i, v: v * i + 1.0, np.ones(2)), np.full(2, expected))
    assert dg.while_loop(lambda v: v[0] < 5, lambda v: (v[0] + 1, v[1] * 2.0), (0, 1.0)) == (5, 32.0)
    assert np.array_equal(dg.cond(np.array(False), lambda a, b: a + b, lambda a, b: a - b, np.ones(2), 3.0),
                          np.full(2, -2.0))


def test_eager_tensors_record_through_control_flow():
    w = dg.tensor(W, requires_grad=True)
    loss = rnn_loss(w, H0, XS)
    loss.backward()
    expected = numeric_grad(lambda v: rnn_loss(v, H0, XS), W)
    assert np.allclose(w.grad.numpy(), expected, atol=1e-6)
    assert dg.gradcheck(lambda h: dg.fori_loop(0, 3, lambda i, v: dg.sin(v) * v, h), H0, order=2)
    assert dg.gradcheck(lambda h: dg.cond(dg.sum(h) > 0, dg.tanh, lambda v: v ** 3, h), H0, order=2)


# ---------------------------------------------------------------- one node in graphs and dg.compile


def test_compiled_scan_is_the_eager_scan_bit_for_bit():
    expected = rnn(W, H0, XS)
    for optimize in (True, False):
        got = dg.compile(rnn, optimize=optimize)(W, H0, XS)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def test_compiled_fori_while_cond_are_the_eager_ones():
    def f(x):
        a = dg.fori_loop(1, 4, lambda i, v: dg.sin(v) * i + x, x)
        count, b = dg.while_loop(lambda s: dg.sum(s[1]) < 50.0, lambda s: (s[0] + 1, s[1] * 1.5 + 1.0), (0, a))
        return dg.cond(count > 3, lambda u, v: u * v, lambda u, v: u - v, a, b), count

    for x in (H0, np.abs(H0) * 20.0):
        expected = f(x)
        for optimize in (True, False):
            got = dg.compile(f, optimize=optimize)(x)
            assert np.array_equal(got[0], expected[0]) and int(got[1]) == expected[1]


def test_one_node_whatever_the_trip_count():
    sizes = []
    for n in (3, 300):
        xs = np.ones((n, 3))
        graph = dg.compile(lambda h, xs: rnn(W, h, xs)).graph(H0, xs)
        sizes.append(len(graph.nodes))
        assert sum(node.op is not None and node.op.name == "scan" for node in graph.nodes) == 1
    assert sizes[0] == sizes[1]
    count = [len(dg.compile(lambda h, n=n: dg.fori_loop(0, n, lambda i, v: v * 2.0, h)).graph(H0).nodes)
             for n in (2, 2000)]
    assert count[0] == count[1]


def test_listing_shows_the_body_indented_under_its_node():
    text = str(dg.compile(lambda h, xs: rnn(W, h, xs)).graph(H0, XS))
    lines = text.splitlines()
    at = next(k for k, line in enumerate(lines) if " = scan(" in line)
    assert lines[at + 1] == "  body:"
    assert lines[at + 2].startswith("    %carry = placeholder : (3,) float64")
    assert any(line.startswith("    %") and "tanh(" in line for line in lines[at + 2:])
    assert any(line.startswith("    return %") for line in lines[at + 2:])
    cond_text = str(dg.compile(lambda x: dg.cond(dg.sum(x) > 0, dg.sin, dg.cos, x)).graph(H0))
    assert "  true:" in cond_text and "  false:" in cond_text and "    %" in cond_text


def test_generated_source_has_real_loops():
    source = dg.compile(lambda h, xs: rnn(W, h, xs)).source(H0, XS)
    assert "    for k in range(6):" in source and "tanh(" in source
    source = dg.compile(lambda x: dg.while_loop(lambda v: dg.sum(v) < 9.0, lambda v: v * 2.0, x)).source(np.ones(2))
    assert "while True:" in source and "break" in source
    source = dg.compile(lambda x: dg.cond(dg.sum(x) > 0, dg.sin, dg.cos, x)).source(H0)
    assert "    if " in source and "    else:" in source


def test_session_runs_control_flow_nodes():
    with dg.Graph() as graph:
        p = dg.placeholder((3,), name="p")
        h, ys = dg.scan(lambda c, x: (dg.tanh(c + x * p), c), np.zeros(3), XS)
        v = dg.fori_loop(0, 4, lambda i, c: c * 0.5 + p, p)
        count, w = dg.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] + p), (0, p))
        c = dg.cond(dg.sum(p) > 0, lambda a: a * 2.0, lambda a: -a, p)
        (dp,) = dg.gradients(dg.sum(ys) + dg.sum(v) + dg.sum(c), [p])
    got = dg.Session(graph).run([h, ys, v, count, w, c, dp], {p: H0})
    expected_h, expected_ys = dg.scan(lambda c, x: (dg.tanh(c + x * H0), c), np.zeros(3), XS)
    assert np.array_equal(got[0], expected_h) and np.array_equal(got[1], expected_ys)
    assert np.array_equal(got[2], dg.fori_loop(0, 4, lambda i, c: c * 0.5 + H0, H0))
    assert int(got[3]) == 3 and np.array_equal(got[4], H0 * 4)
    assert np.array_equal(got[5], dg.cond(H0.sum() > 0, lambda a: a * 2.0, lambda a: -a, H0))

    def total(q):
        _, ys = dg.scan(lambda c, x: (dg.tanh(c + x * q), c), np.zeros(3), XS)
        v = dg.fori_loop(0, 4, lambda i, c: c * 0.5 + q, q)
        return dg.sum(ys) + dg.sum(v) + dg.sum(dg.cond(dg.sum(q) > 0, lambda a: a * 2.0, lambda a: -a, q))

    assert np.allclose(got[6], numeric_grad(total, H0), atol=1e-6)


def test_a_large_int_carry_survives_packing_among_floats():
    big = 2**60 + 1  # not a float64
    f = lambda x: dg.while_loop(lambda s: s[0] < big + 3, lambda s: (s[0] + 1, s[1] * 2.0), (np.int64(big), x))
    count, x = dg.compile(f)(np.ones(2))
    assert int(count) == big + 3 and count.dtype == np.int64 and np.array_equal(x, [8.0, 8.0])


def test_nested_control_flow_compiles_as_nested_loops():
    def f(x):
        def outer(c, row):
            inner = dg.fori_loop(0, 3, lambda i, v: v * 0.5 + row, c)
            return inner, dg.cond(dg.sum(inner) > 0, lambda a: a, lambda a: -a, inner)
        return dg.scan(outer, x, XS)

    expected = f(H0)
    fast = dg.compile(f)
    got = fast(H0)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    source = fast.source(H0)
    assert "for k in range(6):" in source and "for k_ in range(3):" in source
    assert np.allclose(dg.compile(dg.grad(lambda x: dg.sum(f(x)[1])))(H0),
                       numeric_grad(lambda x: dg.sum(f(x)[1]), H0), atol=1e-6)


def test_export_writes_the_loops():
    def f(xs):
        h, ys = rnn(W, H0, xs)
        return dg.while_loop(lambda v: dg.sum(v) < 10.0, lambda v: v * 2.0 + 1.0, dg.abs(h)), ys

    path = dg.compile(f).export(os.path.join(os.path.dirname(__file__), "..", "build_control_export.py"), XS)
    try:
        spec = importlib.util.spec_from_file_location("control_export", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        got, expected = module.f(XS), f(XS)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    finally:
        os.remove(path)


# ---------------------------------------------------------------- derivatives


def test_grad_through_scan_matches_central_differences_and_eager():
    grad = dg.compile(dg.grad(rnn_loss, argnums=(0, 1, 2)))(W, H0, XS)
    eager = dg.grad(rnn_loss, argnums=(0, 1, 2))(W, H0, XS)
    for k, x in enumerate((W, H0, XS)):
        def loss_k(v, k=k):
            args = [W, H0, XS]
            args[k] = v
            return rnn_loss(*args)
        assert np.allclose(grad[k], numeric_grad(loss_k, x), atol=1e-6)
        assert np.allclose(grad[k], eager[k], rtol=1e-12, atol=1e-12)


def test_forward_mode_and_second_order_through_scan():
    def loss(h):
        return rnn_loss(W, h, XS)

    t = RNG.normal(size=3)
    value, tangent = dg.compile(lambda h, t: dg.jvp(loss, (h,), (t,)))(H0, t)
    assert np.isclose(tangent, numeric_grad(loss, H0) @ t, atol=1e-6)
    grad = dg.compile(dg.grad(loss))
    hessian = dg.compile(dg.hessian(loss))(H0)  # jacfwd(grad): forward mode over the reverse scan
    numeric = np.stack([numeric_grad(lambda h, k=k: grad(h)[k], H0) for k in range(3)])
    assert np.allclose(hessian, numeric, atol=1e-5) and np.allclose(hessian, dg.hessian(loss)(H0), atol=1e-10)
    grad_of_grad = dg.compile(dg.grad(lambda h: dg.sum(dg.grad(loss)(h) ** 2)))(H0)
    assert np.allclose(grad_of_grad, numeric_grad(lambda h: np.sum(grad(h) ** 2), H0), atol=1e-5)


def test_grads_through_fori_loop_and_cond_in_both_modes():
    def loss(x):
        v = dg.fori_loop(0, 4, lambda i, v: dg.sin(v) * x + i, x)
        return dg.sum(dg.cond(dg.sum(v) > 0, lambda a: a ** 2, lambda a: dg.exp(a), v))

    for x in (H0, -np.abs(H0) - 3.0):
        numeric = numeric_grad(loss, x)
        assert np.allclose(dg.compile(dg.grad(loss))(x), numeric, atol=1e-6)
        jac = dg.compile(dg.jacfwd(loss))(x)
        assert np.allclose(jac, numeric, atol=1e-6)
        hess = dg.compile(dg.hessian(loss))(x)
        assert np.allclose(hess, dg.hessian(loss)(x), atol=1e-8)


def test_forward_mode_through_while_loop():
    def loss(x):
        return dg.sum(dg.while_loop(lambda v: dg.sum(v) < 20.0, lambda v: v * 1.5 + dg.sin(v), x))

    x = np.array([1.0, 2.0])
    jac = dg.compile(dg.jacfwd(loss))(x)
    assert np.allclose(jac, numeric_grad(loss, x), atol=1e-6)
    bounded = lambda x, n: dg.sum(dg.fori_loop(0, n, lambda i, v: v * 1.5, x))  # bounds traced: a while_loop
    _, tangent = dg.compile(lambda x, n, t: dg.jvp(lambda x: bounded(x, n), (x,), (t,)))(x, np.int64(3), np.ones(2))
    assert np.isclose(tangent, 2 * 1.5**3)


def test_captured_weights_receive_gradients_under_compile():
    def loss(w, h):  # w is captured by the body, not passed as an operand
        def step(c, x):
            return dg.tanh(w @ c + x), dg.sum(c ** 2)
        c, ys = dg.scan(step, h, XS)
        return dg.sum(ys) + dg.sum(c)

    grad = dg.compile(dg.grad(loss))(W, H0)
    assert np.allclose(grad, numeric_grad(lambda w: loss(w, H0), W), atol=1e-6)

    weight = dg.tensor(W, requires_grad=True)  # a parameter a compiled training step reads

    @dg.compile
    def step(h):
        weight.grad = None
        c, _ = dg.scan(lambda c, x: (dg.tanh(weight @ c + x), None), h, XS)
        loss = dg.sum(c ** 2)
        loss.backward()
        return loss

    step(H0)
    expected = numeric_grad(lambda w: np.sum(rnn_python(w, H0, XS)[0] ** 2), W)
    assert np.allclose(weight.grad.numpy(), expected, atol=1e-6)


# ---------------------------------------------------------------- errors at the user's line


def _raises(kind, call, *needles):
    with pytest.raises(kind) as info:
        call()
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


def test_cond_branches_of_different_shapes_or_dtypes():
    x = np.ones(3)
    line = _here(1)
    bad = lambda x: dg.cond(dg.sum(x) > 0, lambda a: a, lambda a: a[:2], x)
    _raises(TypeError, lambda: bad(x), "cond:", "(3,) float64", "(2,) float64", line)
    _raises(TypeError, lambda: dg.compile(bad)(x), "cond:", "(3,) float64", "(2,) float64", line)
    line = _here(1)
    bad_dtype = lambda x: dg.cond(True, lambda a: a, lambda a: dg.astype(a, np.float32), x)
    _raises(TypeError, lambda: bad_dtype(x), "cond:", "(3,) float64", "(3,) float32", line)
    _raises(TypeError, lambda: dg.compile(bad_dtype)(x), "cond:", "(3,) float32", line)


def test_a_body_changing_its_carry_is_refused():
    x = np.ones(3)
    line = _here(1)
    grows = lambda x: dg.scan(lambda c, _: (dg.concatenate([c, c]), None), x, None, length=2)
    _raises(TypeError, lambda: grows(x), "scan:", "carry", "(3,) float64", "(6,) float64", line)
    _raises(TypeError, lambda: dg.compile(grows)(x), "scan:", "(3,) float64", "(6,) float64", line)
    line = _here(1)
    casts = lambda x: dg.fori_loop(0, 2, lambda i, c: dg.astype(c, np.float32), x)
    _raises(TypeError, lambda: casts(x), "fori_loop:", "(3,) float64", "(3,) float32", line)
    _raises(TypeError, lambda: dg.compile(casts)(x), "fori_loop:", "(3,) float32", line)
    line = _here(1)
    loops = lambda x: dg.while_loop(lambda c: dg.sum(c) < 10, lambda c: dg.sum(c) + 1.0, x)
    _raises(TypeError, lambda: loops(x), "while_loop:", "(3,) float64", "() float64", line)
    _raises(TypeError, lambda: dg.compile(loops)(x), "while_loop:", "() float64", line)


def test_reverse_mode_through_while_loop_is_refused_while_tracing():
    def loss(x):
        return dg.sum(dg.while_loop(lambda v: dg.sum(v) < 10.0, lambda v: v * 2.0, x))

    built = _here(-2)
    line = _here(1)
    message = _raises(ValueError, lambda: dg.compile(dg.grad(loss))(np.ones(2)), "while_loop:",
                      "reverse-mode differentiation does not work for while_loop",
                      "fori_loop with static bounds or scan")
    assert line in message and built in message, message
    with dg.Graph():
        p = dg.placeholder((2,))
        out = dg.sum(dg.fori_loop(0, p.shape[0] + dg.sum(dg.astype(p, np.int64)), lambda i, v: v * 2.0, p))
        line = _here(1)
        _raises(ValueError, lambda: dg.gradients(out, [p]), "reverse-mode differentiation", line)


def test_python_control_flow_on_a_traced_value_suggests_the_control_flow_functions():
    message = _raises(TypeError, lambda: dg.compile(lambda x: x if dg.sum(x) > 0 else -x)(np.ones(2)), "dg.where")
    assert "dg.cond" in message and "dg.fori_loop" in message and "dg.while_loop" in message and "dg.scan" in message


def test_bad_arguments():
    line = _here(1)
    _raises(ValueError, lambda: dg.scan(lambda c, x: (c, x), 0.0, np.ones((3, 2)), length=4), "scan:", "[3, 4]", line)
    _raises(TypeError, lambda: dg.fori_loop(0.0, 3, lambda i, c: c, 1.0), "fori_loop:", "integer", _here())
    _raises(TypeError, lambda: dg.cond(np.ones(2) > 0, dg.sin, dg.cos, 1.0), "cond:", "scalar bool", _here())
    _raises(TypeError, lambda: dg.scan(lambda c, x: c, 0.0, np.ones(3)), "scan:", "pair (carry, y)", _here())


def test_unknown_sizes_are_refused_with_the_reason():
    with dg.Graph():
        p = dg.placeholder((None, 3))
        line = _here(1)
        _raises(ValueError, lambda: dg.scan(lambda c, x: (c + x, None), np.zeros(3), p), "scan:", "(None, 3)",
                "known", line)
        q = dg.placeholder((None,))
        line = _here(1)
        _raises(ValueError, lambda: dg.fori_loop(0, 2, lambda i, c: c * 2.0, q), "fori_loop:", "(None,) float64",
                "known shapes", line)


def test_cse_keeps_nodes_with_different_bodies_apart():
    def f(x):
        a = dg.fori_loop(0, 3, lambda i, v: v * 2.0, x)
        b = dg.fori_loop(0, 3, lambda i, v: v * 3.0, x)
        return a, b

    a, b = dg.compile(f)(np.ones(2))
    assert np.array_equal(a, [8.0, 8.0]) and np.array_equal(b, [27.0, 27.0])


def test_a_python_number_carry_names_its_dtype():
    xs = np.ones(3)
    line = _here(1)
    bad = lambda xs: dg.scan(lambda c, x: (c + x, None), 0, xs)  # an int carry becomes a float
    for call in (lambda: bad(xs), lambda: dg.compile(bad)(xs)):
        _raises(TypeError, call, "scan:", "() int64", "() float64", "np.float32(0.0)", line)


def test_a_variable_read_in_a_body_trains_in_a_session():
    with dg.Graph() as graph:
        w = dg.Variable(np.zeros(3), name="w")
        c, _ = dg.scan(lambda c, x: (c * 0.5 + x * w, None), np.zeros(3), XS)
        loss = dg.sum((c - 1.0) ** 2)
        (dw,) = dg.gradients(loss, [w])
        train = dg.optim.SGD([w], lr=0.1).minimize(loss)
    session = dg.Session(graph)

    def numpy_loss(v):
        c = np.zeros(3)
        for x in XS:
            c = c * 0.5 + x * v
        return np.sum((c - 1.0) ** 2)

    assert np.allclose(session.run(dw), numeric_grad(numpy_loss, np.zeros(3)), atol=1e-6)
    before = session.run(loss)
    for _ in range(20):
        session.run(train)
    assert np.isclose(session.run(loss), numpy_loss(w.value)) and session.run(loss) < before / 2


def test_transforms_inside_a_body_and_forward_mode_for_a_captured_weight():
    def f(x):
        step = lambda c, x: (c + dg.grad(lambda u: dg.sum(dg.sin(u) * x))(c), c)
        return dg.scan(step, x, XS)[0]

    assert np.allclose(dg.compile(f)(H0), f(H0), rtol=1e-12, atol=1e-12)
    loss = lambda w: rnn_loss(w, H0, XS)  # the weight is read by the body: captured
    assert np.allclose(dg.compile(dg.jacfwd(loss))(W), numeric_grad(loss, W), atol=1e-6)


def test_zero_steps_give_the_initial_carry_and_empty_ys():
    f = lambda c, x: (c + x, {"twice": c * 2.0})
    for scan in (dg.scan, lambda *a: dg.compile(lambda xs: dg.scan(f, np.zeros(2), xs))(a[2])):
        carry, ys = scan(f, np.zeros(2), np.ones((0, 2)))
        assert np.array_equal(carry, np.zeros(2)) and ys["twice"].shape == (0, 2)
    assert dg.fori_loop(3, 1, lambda i, c: c + 1.0, 0.5) == 0.5


# ---------------------------------------------------------------- weakly typed indices and carries (issue 24)


def _every_path(f, *args):
    """f's results eagerly, compiled, and by the reference interpreter (optimize=False)."""
    return [f(*args), dg.compile(f)(*args), dg.compile(f, optimize=False)(*args)]


def test_a_loop_index_is_a_python_int_so_a_float32_carry_stays_float32():
    # eagerly the index is a Python int, as a Python loop's; traced it is a weakly typed int whose code gets one,
    # so c * w + i keeps float32 (an int64 index made it float64, and the loop refused its own body)
    body = lambda i, c: dg.sin(c * np.float32(0.7) + i)
    seen = []
    dg.fori_loop(0, 2, lambda i, c: seen.append(type(i)) or c, 0.0)
    assert seen == [int, int]
    expected = np.ones(3, np.float32)
    for i in range(4):
        expected = np.sin(expected * np.float32(0.7) + i)
    for f in (lambda c: dg.fori_loop(0, 4, body, c),  # static bounds: a scan
              lambda c: dg.fori_loop(np.int64(0), np.int64(4), body, c)):  # traced bounds: a while_loop
        for out in _every_path(f, np.ones(3, np.float32)):
            assert out.dtype == np.float32
            np.testing.assert_allclose(out, expected, rtol=1e-6)
    traced = lambda c, n: dg.fori_loop(np.int64(0), n, body, c)  # the bound an argument: traced
    assert dg.compile(traced)(np.ones(3, np.float32), np.int64(4)).dtype == np.float32
    # the index in the body's arithmetic stays a Python number: i * 2 is an int, i / 2 a float
    idx = lambda c: dg.fori_loop(1, 4, lambda i, c: c + (i * 2) * np.float32(1) + i / 2, c)
    for out in _every_path(idx, np.zeros(2, np.float32)):
        assert out.dtype == np.float32 and np.array_equal(out, np.full(2, 15.0, np.float32))
    # and in the gradient's scan: the body replayed on the index
    grad = dg.grad(lambda c: dg.sum(dg.fori_loop(0, 3, body, c)))
    assert grad(np.ones(3, np.float32)).dtype == dg.compile(grad)(np.ones(3, np.float32)).dtype == np.float32


def test_the_gradient_of_a_captured_float32_value_is_float32_on_every_path():
    # a float32 parameter a body captures, a float64 carry: the gradient has the parameter's dtype (PyTorch's and
    # JAX's rule); eagerly dg.grad gave float64, and dg.compile refused its own cotangent carry (float64 for float32)
    xs = np.ones((3, 2), np.float32)
    w = np.float32(0.3)
    programs = {
        "scan": lambda w: dg.scan(lambda c, x: (dg.sin(c * w + x), None), np.zeros(2), xs)[0],
        "fori_loop": lambda w: dg.fori_loop(0, 3, lambda i, c: dg.sin(c * w + 1.0), np.zeros(2)),
        "cond": lambda w: dg.cond(w > 0, lambda c: dg.sin(c * w), lambda c: c * 2.0, np.array([0.5, -0.2])),
    }
    for name, f in programs.items():
        loss = lambda w, f=f: dg.sum(f(w))
        eager = dg.grad(loss)(w)
        leaf = dg.tensor(w, requires_grad=True)
        loss(leaf).backward()
        for got in (eager, leaf.grad, dg.compile(dg.grad(loss))(w), dg.compile(dg.grad(loss), optimize=False)(w)):
            got = np.asarray(got)
            assert got.dtype == np.float32, name
            np.testing.assert_allclose(got, eager, rtol=1e-5, err_msg=name)
        tangent = dg.jvp(f, (w,), (np.float32(1.0),))[1]
        assert tangent.dtype == f(w).dtype == np.float64, name  # a tangent has its output's dtype
        np.testing.assert_allclose(np.sum(tangent), eager, rtol=1e-5)


def test_a_python_number_carry_stays_weakly_typed_where_the_body_keeps_it_so():
    # Python arithmetic on a Python float carry gives a Python float eagerly; compiled too (not a float64 NumPy
    # value, which would make float32 data it meets afterwards float64)
    f32 = np.ones(2, np.float32)
    weak = {
        "fori_loop": lambda w: dg.fori_loop(0, 3, lambda i, v: v * 1.5 + i, w),
        "while_loop": lambda w: dg.while_loop(lambda v: abs(v) < 3, lambda v: v * 1.5, w),
        "scan": lambda w: dg.scan(lambda c, x: (c * 2.0, c), w, None, length=3)[0],
        "cond": lambda w: dg.cond(w > 0, lambda v: v * 1.5, lambda v: -v, w),
        "tuple": lambda w: dg.while_loop(lambda v: v[0] < 5, lambda v: (v[0] + 1, v[1] * w), (0, 1.0))[1],
    }
    for name, f in weak.items():
        for w in (1.0, -0.5):
            outs = _every_path(f, w)
            assert all(type(o) is float for o in outs), (name, outs)
            assert outs[0] == outs[1] == outs[2], name
            assert all((o * f32).dtype == np.float32 for o in outs), name
    # where the body makes it a NumPy value (dg.sin), it is one on every path: traced again strongly typed
    strong = {
        "fori_loop": lambda w: dg.fori_loop(0, 3, lambda i, v: dg.sin(v) * 1.5, w),
        "while_loop": lambda w: dg.while_loop(lambda v: v < 3, lambda v: dg.exp(v), w),
        "cond": lambda w: dg.cond(w > 0, lambda v: v * 1.5, lambda v: dg.sin(v), w),
    }
    for name, f in strong.items():
        outs = _every_path(f, 1.0)
        assert all(type(o) is np.float64 for o in outs), (name, outs)
        assert outs[0] == outs[1] == outs[2], name
        assert all((o * f32).dtype == np.float64 for o in outs), name


def test_an_unread_index_in_a_body_still_raises():
    # the body's gather is unread (only its shape is): its bounds are checked all the same, as eagerly
    body = lambda x, i: dg.scan(lambda c, k: (c + dg.ones_like(x[i]), None), 0.0, np.arange(3.0))[0]
    x = np.arange(5.0)
    for f in (body, dg.compile(body), dg.compile(body, optimize=False)):
        with pytest.raises(IndexError, match="out of bounds"):
            f(x, np.int64(7))
        assert f(x, np.int64(-5)) == 3.0
