"""dg.checkpoint (issue 15, item 3): the backward pass recomputes f's intermediates, eagerly, under the
transforms, in static graphs and under dg.compile, with the gradients of the un-checkpointed f bit for bit."""

from __future__ import annotations

import gc
import importlib.util
import inspect
import os
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F
from dagrad._core.pytree import tree_flatten

FILE = os.path.basename(__file__)
RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 4))
W1, W2 = RNG.standard_normal((4, 5)) * 0.5, RNG.standard_normal((5, 4)) * 0.5
B1 = RNG.standard_normal(5)


def _here(offset=1):
    """'test_checkpoint.py:N' for the caller's line plus `offset`."""
    return f"{FILE}:{sys._getframe(1).f_lineno + offset}"


def block(x, p):
    """An MLP block: several intermediates (so there is something to recompute), params in a dict."""
    return x + dg.tanh(x @ p["w1"] + p["b1"]) @ p["w2"]


def loss(params, x, checkpointed):
    layer = dg.checkpoint(block) if checkpointed else block
    h = x
    for p in params:
        h = layer(h, p)
    return (dg.sin(h) ** 2).sum()


PARAMS = [{"w1": W1 * (k + 1) / 3, "b1": B1, "w2": W2} for k in range(3)]


def _equal_trees(a, b):
    la, lb = tree_flatten(a)[0], tree_flatten(b)[0]
    return len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb))


# ---------------------------------------------------------------- eager


def _modules():
    dg.manual_seed(0)
    return [dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.Tanh(), dg.nn.Linear(8, 4)) for _ in range(3)]


def _eager_grads(checkpointed):
    layers = _modules()
    x = dg.tensor(X, requires_grad=True)
    h = x
    for layer in layers:
        h = dg.checkpoint(layer)(h) if checkpointed else layer(h)
    F.mse_loss(h, dg.tensor(np.ones_like(X))).backward()
    return [x.grad.numpy()] + [p.grad.numpy() for layer in layers for p in layer.parameters()]


def test_eager_backward_gives_every_parameter_and_input_the_same_gradient_bit_for_bit():
    plain, checked = _eager_grads(False), _eager_grads(True)
    assert len(checked) == 1 + 3 * 4
    for a, b in zip(plain, checked):
        assert np.array_equal(a, b)


def test_eager_forward_keeps_no_intermediate_of_the_region():
    layer = _modules()[0]
    x = dg.tensor(X)
    out = dg.checkpoint(layer)(x)
    # one node whose inputs are what the recomputation needs: the input and the four parameters
    assert out.op.name == "checkpoint"
    assert [t.shape for t in out.inputs] == [(6, 4), (8, 4), (8,), (4, 8), (4,)]
    assert out.inputs[0] is x
    np.testing.assert_array_equal(out.numpy(), layer(x).numpy())


def test_the_regions_intermediates_are_freed_when_f_returns():
    seen = []

    def f(v):
        h = dg.tanh(v @ W1)
        seen.append(weakref.ref(h))
        return dg.sin(h)

    x = dg.tensor(X, requires_grad=True)
    kept = f(x)
    assert seen[-1]() is not None  # the plain graph keeps tanh's result for sin's gradient
    y = dg.checkpoint(f)(x)
    gc.collect()
    assert seen[-1]() is None
    y.sum().backward()
    kept.sum().backward()  # the same gradient again: x.grad doubles
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.cos(np.tanh(X @ W1)) * (1 - np.tanh(X @ W1) ** 2)) @ W1.T)


def test_an_nn_module_as_the_function_gets_its_parameters_gradients():
    layer = _modules()[0]
    x = dg.tensor(X)  # the input needs no gradient: the parameters still get theirs
    dg.checkpoint(layer)(x).sum().backward()
    grads = [p.grad.numpy() for p in layer.parameters()]
    layer.zero_grad()
    layer(x).sum().backward()
    for g, p in zip(grads, layer.parameters()):
        assert np.array_equal(g, p.grad.numpy())


def test_retain_graph_lets_backward_recompute_twice():
    x = dg.tensor(X, requires_grad=True)
    y = dg.checkpoint(lambda v: dg.exp(v) * v)(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.exp(X) * X + np.exp(X)))


def test_create_graph_differentiates_the_recomputation_again():
    def f(v):
        return dg.tanh(v) ** 3

    grads = []
    for checkpointed in (False, True):
        x = dg.tensor(X, requires_grad=True)
        y = (dg.checkpoint(f) if checkpointed else f)(x).sum()
        (gx,) = dg.autograd.grad(y, [x], create_graph=True)
        (gx * gx).sum().backward()
        grads.append((gx.numpy().copy(), x.grad.numpy().copy()))
    assert np.array_equal(grads[0][0], grads[1][0]) and np.array_equal(grads[0][1], grads[1][1])
    t = np.tanh(X)  # d/dx of sum((3 t^2 (1 - t^2))^2), by hand
    first = 3 * t**2 * (1 - t**2)
    np.testing.assert_allclose(grads[1][1], 2 * first * (6 * t - 12 * t**3) * (1 - t**2), rtol=1e-10)


def test_dropout_inside_uses_the_mask_of_the_forward_pass():
    def f(v):
        return F.dropout(dg.tanh(v), p=0.5) * 3.0

    grads = []
    for checkpointed in (False, True):
        dg.manual_seed(7)
        x = dg.tensor(X, requires_grad=True)
        (dg.checkpoint(f) if checkpointed else f)(x).sum().backward()
        grads.append(x.grad.numpy())
    assert np.array_equal(grads[0], grads[1])
    assert (grads[1] == 0).any() and (grads[1] != 0).any()


def test_side_effects_of_f_happen_once():
    dg.manual_seed(0)
    bn = dg.nn.BatchNorm1d(4)
    x = dg.tensor(X, requires_grad=True)
    dg.checkpoint(bn)(x).sum().backward()
    # one running-average update (momentum 0.1), not a second one when the backward pass recomputes
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * X.mean(axis=0))
    assert x.grad is not None


def test_nested_checkpoints():
    inner = dg.checkpoint(lambda v, p: dg.tanh(v @ p["w1"] + p["b1"]))

    def outer(v, p):
        return inner(v, p) @ p["w2"] + v

    ref = dg.grad(lambda p: (block(X, p) ** 2).sum())(PARAMS[0])
    got = dg.grad(lambda p: (dg.checkpoint(outer)(X, p) ** 2).sum())(PARAMS[0])
    assert _equal_trees(ref, got)
    x = dg.tensor(X, requires_grad=True)
    (dg.checkpoint(outer)(x, PARAMS[0]) ** 2).sum().backward()
    assert np.array_equal(x.grad.numpy(), dg.grad(lambda v: (block(v, PARAMS[0]) ** 2).sum())(X))


def _write_after_read(v):
    h = v * 2.0
    e = dg.exp(h)
    h += 1.0  # exp read h (its gradient reads its output): the replay reads what h was, as the sweep does
    return e * h


def _write_to_the_argument(v):
    e = dg.exp(v) * 3.0
    v += 1.0  # v is the checkpointed function's input, written after exp read it
    return e * v


def _two_writes(v):
    h = v * 1.0
    e = dg.exp(h)
    h += 1.0
    s = dg.exp(h)
    h *= 3.0
    return e * h + s


def _eager_and_checkpointed(f, pre):
    """x.grad of sum(f(pre(x))) without and with the checkpoint."""
    grads = []
    for wrapped in (f, dg.checkpoint(f)):
        x = dg.tensor(X, requires_grad=True)
        wrapped(pre(x)).sum().backward()
        grads.append(x.grad.numpy())
    return grads


@pytest.mark.parametrize("f", [_write_after_read, _write_to_the_argument, _two_writes])
def test_an_in_place_write_after_a_read_inside_f_gives_eager_backward_s_gradient(f):
    # a recorded write keeps what the value was (as the reverse sweep reads it): the replay reads that too
    eager, checkpointed = _eager_and_checkpointed(f, lambda x: x * 1.5)
    np.testing.assert_array_equal(checkpointed, eager)
    if f is _write_after_read:
        np.testing.assert_allclose(eager, 1.5 * (2 * np.exp(3 * X) * (3 * X + 1) + 2 * np.exp(3 * X)))


def _saved_then_written(v):
    h = v * 2.0
    e = dg.sin(h)  # sin's gradient reads h
    h += 1.0
    return e * h


def test_a_write_to_a_value_a_rule_saved_is_refused_as_eager_backward_refuses():
    x = dg.tensor(X, requires_grad=True)
    y = _saved_then_written(x).sum()
    with pytest.raises(RuntimeError, match="that sin saved for its gradient"):
        y.backward()
    with pytest.raises(RuntimeError, match="that sin saved for its gradient"):
        dg.checkpoint(_saved_then_written)(x)


def test_a_write_under_no_grad_inside_f_is_refused_saying_why():
    def f(v):
        h = v * 2.0
        e = dg.exp(h)
        with dg.no_grad():
            h += 1.0  # not recorded: the replay, which computes h from v again, cannot repeat it
        return e * h

    x = dg.tensor(X, requires_grad=True)
    f(x).sum().backward()  # eager: exp saved its output, and e * h read h after the write
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * X) * (2 * X + 1) + 2 * np.exp(2 * X))
    with pytest.raises(RuntimeError, match=r"checkpoint: .* without being recorded .*cannot repeat that change"):
        dg.checkpoint(f)(x)


def test_an_array_closed_over_and_changed_before_backward_is_the_one_the_forward_read():
    a = np.array([1.0, 2.0])
    t = dg.tensor([3.0, 4.0], requires_grad=True)
    y = dg.checkpoint(lambda c: dg.sin(c + a))(t).sum()  # add saves nothing, but the replay reads a
    a[:] = 0.0
    y.backward()
    np.testing.assert_allclose(t.grad.numpy(), np.cos([4.0, 6.0]))


# ---------------------------------------------------------------- transforms


def test_grad_of_pytrees_equals_the_plain_gradient_bit_for_bit():
    ref = dg.grad(loss)(PARAMS, X, False)
    got = dg.grad(loss)(PARAMS, X, True)
    assert _equal_trees(ref, got)
    assert np.array_equal(dg.grad(loss, 1)(PARAMS, X, False), dg.grad(loss, 1)(PARAMS, X, True))


def test_pytree_outputs_and_a_closed_over_traced_value():
    def f(v, p):  # a dict of two outputs, one reading `scale` (traced by dg.grad for argnums=1) from outside
        return {"h": dg.tanh(v @ p["w1"]), "s": dg.sin(v) * scale}

    def total(p, s, checkpointed):
        nonlocal scale
        scale = s
        out = (dg.checkpoint(f) if checkpointed else f)(X, p)
        return (out["h"] ** 2).sum() + (out["s"] * out["s"]).sum()

    scale = None
    for argnums in (0, 1):
        ref = dg.grad(total, argnums)(PARAMS[0], 1.5, False)
        got = dg.grad(total, argnums)(PARAMS[0], 1.5, True)
        assert _equal_trees(ref, got)


def test_vjp_and_an_integer_output_beside_the_float_ones():
    def f(v):
        h = dg.tanh(v @ W1)
        return h, dg.argmax(h, axis=1), dg.exp(v).astype(np.float32)

    out, f_vjp = dg.vjp(dg.checkpoint(f), X)
    ref_out, ref_vjp = dg.vjp(f, X)
    for a, b in zip(out, ref_out):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    cts = (np.ones((6, 5)), np.zeros(6, np.int64), np.full((6, 4), 2.0, np.float32))
    assert np.array_equal(f_vjp(cts)[0], ref_vjp(cts)[0])


def test_jvp_just_runs_f():
    t = RNG.standard_normal(X.shape)
    ref = dg.jvp(lambda v: block(v, PARAMS[0]), (X,), (t,))
    got = dg.jvp(dg.checkpoint(lambda v: block(v, PARAMS[0])), (X,), (t,))
    assert np.array_equal(ref[0], got[0]) and np.array_equal(ref[1], got[1])


def test_hessian_through_a_checkpointed_function():
    def f(v, checkpointed):
        layer = dg.checkpoint(block) if checkpointed else block
        return (layer(v.reshape(2, 4), PARAMS[1]) ** 2).sum()

    v = X[:2].ravel()
    ref = dg.hessian(f)(v, False)
    got = dg.hessian(f)(v, True)
    assert np.array_equal(ref, got)
    eps = 1e-6  # and against central differences of the gradient
    g = dg.grad(f)
    fd = np.stack([(g(v + eps * e, True) - g(v - eps * e, True)) / (2 * eps) for e in np.eye(v.size)])
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)
    assert np.array_equal(dg.grad(dg.grad(lambda s: f(X[:2].ravel() * s, True)))(1.3),
                          dg.grad(dg.grad(lambda s: f(X[:2].ravel() * s, False)))(1.3))


def test_composes_with_vmap_both_ways_and_compiled():
    def per_example(w, x, checkpointed):
        return ((dg.checkpoint(block) if checkpointed else block)(x, {**PARAMS[0], "w1": w}) ** 2).sum()

    mapped = dg.vmap(dg.grad(per_example), in_axes=(None, 0, None))
    ref = mapped(W1, X, False)
    assert np.array_equal(mapped(W1, X, True), ref)
    assert np.array_equal(dg.compile(mapped)(W1, X, True), ref)
    outer = dg.grad(lambda w, c: dg.vmap(lambda x: per_example(w, x, c))(X).sum())
    assert np.array_equal(outer(W1, True), outer(W1, False))


def test_inside_a_scan_body():
    def loss_of(h0, checkpointed):
        def body(carry, x):
            step = dg.checkpoint(lambda c: dg.tanh(c @ W1[:, :4] + x)) if checkpointed else \
                (lambda c: dg.tanh(c @ W1[:, :4] + x))
            h = step(carry)
            return h, h.sum()

        carry, ys = dg.scan(body, h0, X)
        return (carry ** 2).sum() + ys.sum()

    h0 = X[0] * 0.5
    ref = dg.grad(loss_of)(h0, False)
    assert np.array_equal(dg.grad(loss_of)(h0, True), ref)
    assert np.array_equal(dg.compile(dg.grad(loss_of))(h0, True), dg.compile(dg.grad(loss_of))(h0, False))
    np.testing.assert_allclose(dg.compile(dg.grad(loss_of))(h0, True), ref, rtol=1e-13)


def test_decorator_keeps_the_signature():
    @dg.checkpoint
    def layer(x, p, *, scale=1.0):
        return dg.tanh(x @ p["w1"]) * scale

    assert list(inspect.signature(layer).parameters) == ["x", "p", "scale"]
    assert "checkpoint" in layer.__name__
    np.testing.assert_array_equal(layer(X, PARAMS[0], scale=2.0), np.tanh(X @ PARAMS[0]["w1"]) * 2.0)


# ---------------------------------------------------------------- static graphs and dg.compile


def test_static_gradients_equal_the_plain_ones_with_known_and_unknown_batch_sizes():
    for batch in (6, None):
        results = []
        for checkpointed in (False, True):
            with dg.Graph() as g:
                x = dg.placeholder((batch, 4), name="x")
                w = dg.Variable(W1, name="w")
                v = dg.Variable(W2, name="v")

                def two(h):  # two outputs, closing over the Variables
                    a = dg.tanh(h @ w)
                    return a @ v, dg.sin(a)

                run = dg.checkpoint(two) if checkpointed else two
                y, s = run(x)
                total = (y ** 2).sum() + s.sum()
                grads = dg.gradients(total, [x, w, v])
            results.append(dg.Session(g).run(grads, {x: X}))
        for a, b in zip(*results):
            if batch is None:  # unknown sizes: one checkpoint per output, whose gradients add up in another order
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
            else:
                assert np.array_equal(a, b)


def test_compiled_gradient_equals_the_plain_one_and_its_source_recomputes():
    fast = dg.compile(dg.grad(loss))
    got = fast(PARAMS, X, True)
    assert _equal_trees(got, dg.grad(loss)(PARAMS, X, False))
    plain_source = dg.compile(dg.grad(loss)).source(PARAMS, X, False)
    source = fast.source(PARAMS, X, True)
    # each block's tanh runs twice: in the forward pass and again, recomputed, before its gradient
    assert plain_source.count("tanh(") == 3 and source.count("tanh(") == 6
    assert source.count("(recomputed)") >= 9
    lines = source.splitlines()
    recomputed = [k for k, line in enumerate(lines) if "tanh(" in line and "(recomputed)" in line]
    backward = [k for k, line in enumerate(lines) if "backward of tanh" in line]
    assert len(recomputed) == 3 and all(any(r < b for b in backward) for r in recomputed)
    # the forward's intermediates are dropped at once: each forward tanh's result dies by the next block
    forward_tanh = [line.split(" = ")[0].strip() for line in lines if "tanh(" in line and "recomputed" not in line]
    assert all(f"del {name}" in source or f", {name}" in source for name in forward_tanh)
    assert "checkpoint(" not in source and "optimization_barrier" not in source  # aliases: `t9 = x`


def test_compiled_pytorch_style_step_equals_the_eager_plain_step_bit_for_bit():
    def setup(checkpointed):
        layers = _modules()
        params = [p for layer in layers for p in layer.parameters()]
        run = [dg.checkpoint(layer) if checkpointed else layer for layer in layers]
        return run, params, dg.optim.SGD(params, lr=0.1, momentum=0.9)

    def step_of(run, params, opt):
        def step(x, y):
            opt.zero_grad()
            h = x
            for layer in run:
                h = layer(h)
            loss_value = F.mse_loss(h, y)
            loss_value.backward()
            opt.step()
            return loss_value

        return step

    Y = np.cos(X)
    eager = setup(False)
    compiled = setup(True)
    step_e, step_c = step_of(*eager), dg.compile(step_of(*compiled))
    for _ in range(3):
        loss_e = step_e(dg.tensor(X), dg.tensor(Y))
        loss_c = step_c(X, Y)
        assert float(loss_c) == loss_e.item()
        for p, q in zip(eager[1], compiled[1]):
            assert np.array_equal(p.numpy(), q.numpy()) and np.array_equal(p.grad.numpy(), q.grad.numpy())
    assert step_c.source(X, Y).count("(recomputed)") > 0


def test_dropout_in_a_compiled_step_reuses_the_forward_mask():
    results = []
    for checkpointed in (False, True):
        generator = np.random.default_rng(5)  # the same draws for both

        def f(v, generator=generator):
            return F.dropout(dg.tanh(v @ W1), p=0.5, generator=generator)

        fast = dg.compile(dg.value_and_grad(lambda v: ((dg.checkpoint(f) if checkpointed else f)(v) ** 2).sum()))
        results.append(fast(X))
        assert fast.source(X).count("dropout_mask(") == 1  # drawn once: the recomputation reads that mask
    assert results[0][0] == results[1][0] and np.array_equal(results[0][1], results[1][1])
    assert (results[1][1] != 0).any()


def test_compiled_forward_alone_drops_the_checkpoint_nodes():
    fast = dg.compile(dg.checkpoint(lambda v: block(v, PARAMS[0])))
    assert np.array_equal(fast(X), block(X, PARAMS[0]))
    # the node that would have carried the recomputation is dropped by the optimiser
    assert "checkpoint (returns an input) -> the input" in str(fast.report(X))
    assert all(node.op is None or node.op.name != "checkpoint" for node in fast.graph(X).nodes)


def test_export_of_a_checkpointed_gradient(tmp_path):
    fast = dg.compile(dg.grad(lambda v: (block(dg.checkpoint(block)(v, PARAMS[0]), PARAMS[1]) ** 2).sum()))
    path = fast.export(tmp_path / "ckpt_grad.py", X)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert np.array_equal(module.grad_f(X) if hasattr(module, "grad_f") else getattr(module, module.__all__[0])(X),
                          fast(X))


def test_compile_without_optimisation_runs_the_checkpoint_nodes():
    plain = dg.compile(dg.grad(loss), optimize=False)
    assert _equal_trees(plain(PARAMS, X, True), dg.grad(loss)(PARAMS, X, False))


# ---------------------------------------------------------------- memory


def _peak_of_step(checkpointed, compiled):
    """tracemalloc's peak over one training step of 10 MLP blocks (width 16, hidden 64, batch 512)."""
    dg.manual_seed(0)
    layers = [dg.nn.Sequential(dg.nn.Linear(16, 64), dg.nn.Tanh(), dg.nn.Linear(64, 16)) for _ in range(10)]
    params = [p for layer in layers for p in layer.parameters()]
    run = [dg.checkpoint(layer) if checkpointed else layer for layer in layers]
    data = np.random.default_rng(1).standard_normal((512, 16))

    def step(x):
        for p in params:
            p.grad = None
        h = x
        for layer in run:
            h = layer(h)
        (h ** 2).mean().backward()
        return h

    x = data
    if compiled:
        step = dg.compile(step)
    else:
        x = dg.tensor(data)
    step(x)
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        step(x)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return peak, [p.grad.numpy().copy() for p in params]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_checkpointed_step_takes_less_than_half_the_peak_memory_with_the_same_gradients(compiled):
    plain, grads = _peak_of_step(False, compiled)
    checked, grads_checked = _peak_of_step(True, compiled)
    assert all(np.array_equal(a, b) for a, b in zip(grads, grads_checked))
    assert checked < 0.5 * plain, (checked, plain)


# ---------------------------------------------------------------- bad input


def test_a_function_that_is_not_callable_is_refused_at_the_users_line():
    with pytest.raises(TypeError) as err:
        dg.checkpoint(np.ones(3))
    assert "checkpoint" in str(err.value) and "ndarray" in str(err.value) and _here(-1) in str(err.value)


@pytest.mark.parametrize("result", ["a string", None, {"h": "text"}], ids=["str", "None", "dict of str"])
def test_a_function_returning_a_non_array_is_refused_at_the_users_line(result):
    f = dg.checkpoint(lambda x: result)
    with pytest.raises(TypeError) as err:
        f(X)
    message = str(err.value)
    assert message.startswith("checkpoint:") and "output" in message and _here(-2) in message


def test_jax_and_torch_spellings():
    x = np.array([0.3, -1.2])
    want = dg.grad(lambda t: (dg.tanh(t) * t).sum())(x)
    t = dg.tensor(x, requires_grad=True)
    dg.checkpoint(lambda v: dg.tanh(v) * v, t, use_reentrant=False).sum().backward()  # torch: calls at once
    assert np.array_equal(t.grad.numpy(), want)

    @dg.checkpoint(prevent_cse=True)  # jax.checkpoint's keyword, as a decorator factory
    def layer(v):
        return dg.tanh(v) * v

    assert np.array_equal(dg.grad(lambda v: layer(v).sum())(x), want)
    with pytest.raises(NotImplementedError, match=r"checkpoint: only policy=None.*test_checkpoint\.py"):
        dg.checkpoint(layer, policy="dots_saveable")
