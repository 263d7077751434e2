"""dg.optim: optimisers (eager step, static minimize), state dicts, schedulers; the oracle tier
compares every update and schedule with PyTorch's, step by step."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import dagrad as dg
from dagrad.optim.lr_scheduler import CosineAnnealingLR, StepLR

RNG = np.random.default_rng(0)
X = RNG.standard_normal((20, 4))
Y = (RNG.random(20) < 0.5).astype(np.float64)
W0 = RNG.standard_normal(4)
B0 = RNG.standard_normal(())
STEPS = 12

# (dagrad class name, options) for every option combination that changes the formulas
CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, weight_decay=0.05)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.6, 0.95), eps=1e-6)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.9))),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, betas=(0.9, 0.6), amsgrad=True)),
    ("Adam", dict(lr=0.05, betas=(0.9, 0.6), amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, betas=(0.8, 0.6), weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.4, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.05, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in opts.items())}" for name, opts in CONFIGS]


def dg_loss(w, b, sign=1.0):
    z = X @ w + b
    return sign * (dg.mean(dg.softplus(z) - Y * z) + 0.1 * dg.sum(w**4))


def sign_of(opts):
    return -1.0 if opts.get("maximize") else 1.0  # maximize the negated loss: the run converges


def eager_run(name, opts, steps=STEPS, dtype=np.float64):
    w = dg.tensor(W0.astype(dtype), requires_grad=True)
    b = dg.tensor(B0.astype(dtype), requires_grad=True)
    opt = getattr(dg.optim, name)([w, b], **opts)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        dg_loss(w, b, sign_of(opts)).backward()
        opt.step()
        history.append((w.numpy().copy(), b.numpy().copy()))
    assert np.isfinite(history[-1][0]).all()
    return history, opt, (w, b)


# ---------------------------------------------------------------- eager mode


def test_sgd_step_updates_the_same_array_in_place():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    array = w.value
    opt = dg.optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    assert w.value is array
    np.testing.assert_allclose(array, [0.0, 0.0])


def test_params_without_grad_are_skipped_and_get_no_state():
    a = dg.tensor([1.0], requires_grad=True)
    b = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.Adam([a, b], lr=0.1)
    (a * 2.0).sum().backward()
    opt.step()
    assert b.item() == 1.0 and b not in opt.state and a in opt.state


def test_zero_grad_to_none_and_to_zeros():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None


def test_param_groups_merge_defaults_and_use_their_own_options():
    a = dg.tensor([1.0], requires_grad=True)
    b = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([{"params": [a]}, {"params": b, "lr": 1.0, "momentum": 0.5}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0.0
    assert opt.param_groups[1]["lr"] == 1.0 and opt.param_groups[1]["momentum"] == 0.5
    ((a + b) * 1.0).sum().backward()
    opt.step()
    np.testing.assert_allclose([a.item(), b.item()], [0.9, 0.0])


def test_closure_is_called_and_its_loss_returned():
    w = dg.tensor([2.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 4.0 and w.item() == 1.0


@pytest.mark.parametrize("bad, message", [
    (lambda: dg.optim.SGD([dg.tensor([1.0])]), "require a gradient"),
    (lambda: dg.optim.SGD([dg.tensor([1.0], requires_grad=True) * 2.0]), "non-leaf"),
    (lambda: dg.optim.SGD(dg.tensor([1.0], requires_grad=True)), "iterable"),
    (lambda: dg.optim.SGD([]), "empty"),
    (lambda: dg.optim.SGD([np.ones(2)]), "parameters must be"),
    (lambda: dg.optim.SGD([dg.tensor([1.0], requires_grad=True)], lr=-1.0), "learning rate"),
    (lambda: dg.optim.SGD([dg.tensor([1.0], requires_grad=True)], nesterov=True), "Nesterov"),
    (lambda: dg.optim.Adam([dg.tensor([1.0], requires_grad=True)], betas=(0.9, 1.5)), "betas"),
    (lambda: dg.optim.RMSprop([dg.tensor([1.0], requires_grad=True)], alpha=-0.1), "alpha"),
])
def test_bad_construction_is_a_clear_error(bad, message):
    with pytest.raises((TypeError, ValueError), match=message):
        bad()


def test_a_parameter_twice_is_an_error():
    w = dg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="more than once"):
        dg.optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)


def test_float32_params_stay_float32():
    for name, opts in CONFIGS:
        history, opt, (w, b) = eager_run(name, opts, steps=3, dtype=np.float32)
        assert w.dtype == np.float32 and b.dtype == np.float32, name
        for entry in opt.state.values():
            for key, value in entry.items():
                if isinstance(value, np.ndarray):
                    assert value.dtype == np.float32, (name, key)


def test_optimisers_minimise_a_quadratic():
    for name, lr in [("SGD", 0.1), ("Adam", 0.1), ("AdamW", 0.1), ("RMSprop", 0.05), ("Adagrad", 0.5)]:
        w = dg.tensor([3.0, -2.0], requires_grad=True)
        opt = getattr(dg.optim, name)([w], lr=lr, **({"weight_decay": 0.0} if name == "AdamW" else {}))
        for _ in range(300):
            opt.zero_grad()
            ((w - 1.0) ** 2).sum().backward()
            opt.step()
        np.testing.assert_allclose(w.numpy(), [1.0, 1.0], atol=0.05, err_msg=name)


# ---------------------------------------------------------------- state dicts


@pytest.mark.parametrize("name, opts", CONFIGS, ids=IDS)
def test_state_dict_round_trip_continues_identically(name, opts):
    history, opt, (w, b) = eager_run(name, opts, steps=5)
    sd = opt.state_dict()
    for entry in sd["state"].values():
        for value in entry.values():
            assert isinstance(value, (np.ndarray, float))
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1]]
    # a new optimiser on copies of the parameters, loaded from the state dict
    w2 = dg.tensor(w.numpy(), requires_grad=True)
    b2 = dg.tensor(b.numpy(), requires_grad=True)
    opt2 = getattr(dg.optim, name)([w2, b2])
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == opts["lr"]
    for (p, q) in [(w, w2), (b, b2)]:
        for o in (opt, opt2):
            o.zero_grad()
        dg_loss(w, b, sign_of(opts)).backward()
        dg_loss(w2, b2, sign_of(opts)).backward()
        opt.step()
        opt2.step()
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    # the state dict holds copies: stepping did not change it
    sd_again = opt.state_dict()
    assert not sd["state"] or any(not np.array_equal(sd["state"][0][k], sd_again["state"][0][k])
               for k in sd["state"][0] if isinstance(sd["state"][0][k], np.ndarray))


def test_state_dict_structure_matches_pytorchs():
    torch = pytest.importorskip("torch")
    for name, opts in [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1, amsgrad=True)),
                       ("RMSprop", dict(lr=0.1, momentum=0.5, centered=True)), ("Adagrad", dict(lr=0.1))]:
        _, opt, _ = eager_run(name, opts, steps=2)
        tw = torch.tensor(W0, requires_grad=True)
        tb = torch.tensor(B0, requires_grad=True)
        topt = getattr(torch.optim, name)([tw, tb], **opts)
        (tw.sum() + tb).backward()
        topt.step()
        ours, theirs = opt.state_dict(), topt.state_dict()
        assert ours["state"].keys() == theirs["state"].keys()
        for k in theirs["state"]:
            assert set(ours["state"][k]) == set(theirs["state"][k]), name
        assert set(ours["param_groups"][0]) <= set(theirs["param_groups"][0]), name
        assert ours["param_groups"][0]["params"] == theirs["param_groups"][0]["params"]


def test_adagrad_has_state_before_its_first_step_as_in_pytorch():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.Adagrad([w], initial_accumulator_value=0.5)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 0.0
    np.testing.assert_array_equal(sd["state"][0]["sum"], [0.5, 0.5])


def _adam_state():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    return opt.state_dict()


@pytest.mark.parametrize("corrupt, message", [
    (lambda sd: sd.pop("state"), "'state' and 'param_groups'"),
    (lambda sd: sd["param_groups"].append(dict(sd["param_groups"][0])), "parameter group"),
    (lambda sd: sd["param_groups"][0].update(params=[0, 1]), "2 parameter"),
    (lambda sd: sd["state"][0].update(exp_avg=np.zeros(3)), "shape"),
    (lambda sd: sd["state"][0].pop("exp_avg_sq"), "entries"),
    (lambda sd: sd["state"].update({5: sd["state"][0]}), "parameter 5"),
    (lambda sd: sd["param_groups"][0].pop("betas"), "betas"),
    (lambda sd: sd["param_groups"][0].update(lr=-1.0), "learning rate"),
])
def test_a_mismatched_state_dict_is_refused_and_nothing_changes(corrupt, message):
    sd = _adam_state()
    corrupt(sd)
    w = dg.tensor([5.0, 6.0], requires_grad=True)
    opt = dg.optim.Adam([w], lr=0.01)
    (w * w).sum().backward()
    opt.step()
    before = opt.state_dict()
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(sd)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    for k in before["state"][0]:
        np.testing.assert_array_equal(after["state"][0][k], before["state"][0][k])


def test_a_state_dict_after_a_save_like_round_trip_loads():
    """After dg.save / dg.load, numbers come back as 0-d arrays, lists as arrays, keys as strings."""
    sd = _adam_state()
    flat = {
        "state": {str(k): {n: np.asarray(v) for n, v in e.items()} for k, e in sd["state"].items()},
        "param_groups": [{n: np.asarray(v) for n, v in g.items()} for g in sd["param_groups"]],
    }
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.Adam([w])
    opt.load_state_dict(flat)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["betas"] == (0.9, 0.999)
    assert opt.state[w]["step"] == 1.0


def test_state_dict_through_dg_save_and_load(tmp_path):
    if not hasattr(dg, "save"):
        pytest.skip("dg.save is not there yet")
    sd = _adam_state()
    dg.save(sd, tmp_path / "opt.npz")
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.Adam([w])
    opt.load_state_dict(dg.load(tmp_path / "opt.npz"))
    again = opt.state_dict()
    assert again["param_groups"] == sd["param_groups"]
    for key, value in sd["state"][0].items():
        np.testing.assert_array_equal(again["state"][0][key], value)


# ---------------------------------------------------------------- static graphs


def _static_run(name, opts, steps=STEPS, dtype=np.float64):
    with dg.Graph() as g:
        x = dg.placeholder((None, 4), dtype=dtype, name="x")
        y = dg.placeholder((None,), dtype=dtype, name="y")
        w = dg.Variable(W0.astype(dtype), name="w")
        b = dg.Variable(B0.astype(dtype), name="b")
        z = x @ w + b
        loss = sign_of(opts) * (dg.mean(dg.softplus(z) - y * z) + 0.1 * dg.sum(w**4))
        opt = getattr(dg.optim, name)([w, b], **opts)
        train = opt.minimize(loss)
    sess = dg.Session(g)
    n_nodes = len(g)
    history = []
    for _ in range(steps):
        sess.run(train, {x: X, y: Y})
        history.append((w.value.copy(), b.value.copy()))
    assert len(g) == n_nodes
    return history, opt, (w, b), g


@pytest.mark.parametrize("name, opts", CONFIGS, ids=IDS)
def test_static_minimize_equals_eager_steps(name, opts):
    eager, eager_opt, _ = eager_run(name, opts)
    static, static_opt, _, _ = _static_run(name, opts)
    for k, ((we, be), (ws, bs)) in enumerate(zip(eager, static)):
        np.testing.assert_allclose(ws, we, rtol=1e-12, atol=1e-14, err_msg=f"step {k + 1}")
        np.testing.assert_allclose(bs, be, rtol=1e-12, atol=1e-14, err_msg=f"step {k + 1}")
    # the same state dict, too
    a, s = eager_opt.state_dict(), static_opt.state_dict()
    assert a["param_groups"] == s["param_groups"]
    assert a["state"].keys() == s["state"].keys()
    for k in a["state"]:
        assert a["state"][k].keys() == s["state"][k].keys()
        for key in a["state"][k]:
            np.testing.assert_allclose(s["state"][k][key], a["state"][k][key], rtol=1e-12, atol=1e-14)


def test_static_float32_stays_float32():
    for name, opts in CONFIGS:
        history, opt, (w, b), g = _static_run(name, opts, steps=3, dtype=np.float32)
        eager, _, _ = eager_run(name, opts, steps=3, dtype=np.float32)
        assert w.value.dtype == np.float32, name
        for node in g.nodes:
            if node.kind == "op" and node.dtype.kind == "f" and node.ndim > 0:
                assert node.dtype == np.float32, (name, node)
        np.testing.assert_allclose(history[-1][0], eager[-1][0], rtol=1e-5, err_msg=name)


def test_static_state_is_non_trainable_variables_and_lr_follows_the_group():
    history, opt, (w, b), g = _static_run("Adam", dict(lr=0.05), steps=1)
    extra = [v for v in g.variables if v is not w and v is not b]
    assert extra and not any(v.trainable for v in extra)
    assert {v.name for v in extra} >= {"w/step", "w/exp_avg", "w/exp_avg_sq", "adam/lr0"}
    assert float(g["w/step"].value) == 1.0
    opt.param_groups[0]["lr"] = 0.01
    assert float(g["adam/lr0"].value) == 0.01


def test_static_scheduler_changes_the_graphs_learning_rate():
    with dg.Graph() as g:
        w = dg.Variable(np.array([1.0]), name="w")
        opt = dg.optim.SGD([w], lr=1.0)
        train = opt.minimize(dg.sum(w))  # gradient 1: each step subtracts the current lr
    sched = StepLR(opt, step_size=1, gamma=0.5)
    sess = dg.Session(g)
    for _ in range(3):
        sess.run(train)
        sched.step()
    np.testing.assert_allclose(w.value, [1.0 - 1.0 - 0.5 - 0.25])


def test_static_state_dict_loads_into_eager_and_back():
    _, static_opt, (w, b), _ = _static_run("RMSprop", dict(lr=0.01, momentum=0.9, centered=True), steps=4)
    eager, eager_opt, (we, be) = eager_run("RMSprop", dict(lr=0.01, momentum=0.9, centered=True), steps=4)
    fresh = dg.optim.RMSprop([dg.tensor(W0, requires_grad=True), dg.tensor(B0, requires_grad=True)],
                             momentum=0.9, centered=True)
    fresh.load_state_dict(static_opt.state_dict())
    for k, entry in eager_opt.state_dict()["state"].items():
        for key, value in entry.items():
            np.testing.assert_allclose(fresh.state_dict()["state"][k][key], value, rtol=1e-12)
    # and an eager state dict into the static optimiser (its Variables take the values)
    static_opt.load_state_dict(eager_opt.state_dict())
    np.testing.assert_allclose(static_opt.state[w]["square_avg"].value, eager_opt.state[we]["square_avg"])


def test_static_sgd_momentum_state_dict_before_and_after_a_step():
    with dg.Graph() as g:
        w = dg.Variable(np.array([1.0, 2.0]), name="w")
        opt = dg.optim.SGD([w], lr=0.1, momentum=0.9, dampening=0.5)
        train = opt.minimize(dg.sum(w * w))
    assert opt.state_dict()["state"] == {}
    dg.Session(g).run(train)
    np.testing.assert_allclose(opt.state_dict()["state"][0]["momentum_buffer"], [2.0, 4.0])  # the first gradient


def test_minimize_with_eager_tensors_says_to_use_backward_and_step():
    w = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.1)
    with pytest.raises(TypeError, match=r"backward\(\).*step\(\)"):
        opt.minimize((w * w).sum())


def test_step_on_static_variables_says_to_use_minimize():
    with dg.Graph():
        w = dg.Variable(np.array([1.0]), name="w")
    with pytest.raises(TypeError, match="minimize"):
        dg.optim.SGD([w], lr=0.1).step()


def test_mixing_eager_and_static_parameters_is_an_error():
    with dg.Graph():
        v = dg.Variable(np.array([1.0]), name="v")
    with pytest.raises(TypeError, match="all eager Tensors or all static-graph Variables"):
        dg.optim.SGD([v, dg.tensor([1.0], requires_grad=True)], lr=0.1)


def test_minimize_of_a_non_scalar_or_foreign_loss_is_an_error():
    with dg.Graph():
        w = dg.Variable(np.array([1.0, 2.0]), name="w")
        opt = dg.optim.SGD([w], lr=0.1)
        with pytest.raises(ValueError, match="scalar"):
            opt.minimize(w * w)
    with dg.Graph():
        other = dg.Variable(1.0, name="other")
    with pytest.raises(ValueError, match="another graph"):
        opt.minimize(other * 2.0)


# ---------------------------------------------------------------- schedulers


def test_step_lr_and_cosine_closed_forms():
    w = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.5)
    sched = CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    for epoch in range(1, 11):
        sched.step()
        want = 0.01 + (0.5 - 0.01) * (1 + math.cos(math.pi * epoch / 10)) / 2
        assert math.isclose(sched.get_last_lr()[0], want, rel_tol=1e-12, abs_tol=1e-15)
    opt2 = dg.optim.SGD([w], lr=1.0)
    sched2 = StepLR(opt2, step_size=3, gamma=0.1)
    lrs = []
    for _ in range(7):
        sched2.step()
        lrs.append(opt2.param_groups[0]["lr"])
    np.testing.assert_allclose(lrs, [1, 1, 0.1, 0.1, 0.1, 0.01, 0.01])


def test_scheduler_state_dict_round_trip():
    w = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=1.0)
    sched = CosineAnnealingLR(opt, T_max=8)
    for _ in range(3):
        sched.step()
    sd = sched.state_dict()
    opt2 = dg.optim.SGD([w], lr=1.0)
    opt2.load_state_dict(opt.state_dict())
    sched2 = CosineAnnealingLR(opt2, T_max=8)
    sched2.load_state_dict(sd)
    for _ in range(4):
        sched.step()
        sched2.step()
        assert sched.get_last_lr() == sched2.get_last_lr()


# ---------------------------------------------------------------- all or nothing, errors at the user's line


def _here(offset=1):
    return f"test_optim.py:{sys._getframe(1).f_lineno + offset}"


def _line_of(fn):
    """'test_optim.py:N' of a one-line lambda: the line a user_error raised inside it must name."""
    return f"test_optim.py:{fn.__code__.co_firstlineno}"


def _snapshot(opt, params):
    """Deep copies of the parameters, their .grad and versions, the optimiser's state and groups."""
    state = {id(p): {k: np.array(v, copy=True) for k, v in entry.items()} for p, entry in opt.state.items()}
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    grads = [p._grad for p in params]
    grads = [np.array(id(g)) if getattr(g, "_symbolic", False) else  # a node: the same one
             g.numpy().copy() if isinstance(g, dg.Tensor) else np.array(g, copy=True) for g in grads]
    return ([p.numpy().copy() for p in params], grads,
            [p._version for p in params], state, groups, [list(g["params"]) for g in opt.param_groups])


def _assert_same(a, b):
    values_a, grads_a, versions_a, state_a, groups_a, params_a = a
    values_b, grads_b, versions_b, state_b, groups_b, params_b = b
    for x, y in zip(values_a + grads_a, values_b + grads_b):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    assert versions_a == versions_b and groups_a == groups_b
    assert [list(map(id, g)) for g in params_a] == [list(map(id, g)) for g in params_b]
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert state_a[key].keys() == state_b[key].keys()
        for k in state_a[key]:
            np.testing.assert_array_equal(state_a[key][k], state_b[key][k])


STEP_CONFIGS = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1)),
                ("AdamW", dict(lr=0.1, amsgrad=True)), ("RMSprop", dict(lr=0.1, centered=True, momentum=0.5)),
                ("Adagrad", dict(lr=0.1))]


def _bad_grads():
    """(how to break the second parameter's gradient through the raw slot, error type, message)."""
    return [
        (lambda p: dg.tensor(1.0), ValueError, r"parameter 1 has shape \(3,\) but its \.grad has shape \(\)"),
        (lambda p: dg.tensor(np.ones(4)), ValueError, r"parameter 1 has shape \(3,\) but its \.grad has shape \(4,\)"),
        (lambda p: dg.tensor(np.ones((1, 3))), ValueError, r"shape \(1, 3\)"),
        (lambda p: dg.tensor(np.ones(3, np.float32)), TypeError, "has dtype float64 but its .grad has dtype float32"),
        (lambda p: np.ones(3), TypeError, r"parameter 1's \.grad is a ndarray, not a Tensor with values or None"),
        (lambda p: 1.0, TypeError, "is a float, not a Tensor"),
        (lambda p: dg.placeholder((3,), name="g"), TypeError, "is a static graph's node, not a Tensor with values"),
    ]


@pytest.mark.parametrize("name, opts", STEP_CONFIGS, ids=[f"{n}-{o}" for n, o in STEP_CONFIGS])
@pytest.mark.parametrize("case", range(len(_bad_grads())))
def test_step_checks_every_gradient_before_updating_any(name, opts, case):
    make, kind, message = _bad_grads()[case]
    a = dg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = dg.tensor([0.5, 0.5, 0.5], requires_grad=True)
    opt = getattr(dg.optim, name)([a, b], **opts)
    for _ in range(2):  # state and step counts exist
        opt.zero_grad()
        (a * a * b).sum().backward()
        opt.step()
    opt.zero_grad()
    (a * a * b).sum().backward()
    b._grad = make(b)  # past the validating .grad setter, as internal code could
    before = _snapshot(opt, [a, b])
    line = _here(2)
    with pytest.raises(kind, match=message) as info:
        opt.step()
    assert f"{name}.step" in str(info.value) and line in str(info.value) and "nothing was updated" in str(info.value)
    _assert_same(before, _snapshot(opt, [a, b]))


def test_the_grad_setter_refuses_what_step_would_have_broadcast():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="shape"):
        w.grad = dg.tensor(1.0)  # a scalar gradient: silently broadcast by step before


def test_step_refuses_state_of_another_shape_than_a_replaced_value():
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    b = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    opt = dg.optim.Adam([a, b], lr=0.1)
    (a.sum() + b.sum()).backward()
    opt.step()
    b._value = np.zeros(4)  # internal code replaced the array
    b._grad = dg.tensor(np.ones(4))
    before = _snapshot(opt, [a, b])
    line = _here(2)
    with pytest.raises(ValueError, match=r"Adam.step: the state of parameter 1 has shape \(3,\)") as info:
        opt.step()
    assert line in str(info.value)
    _assert_same(before, _snapshot(opt, [a, b]))


@pytest.mark.parametrize("name, opts", STEP_CONFIGS, ids=[f"{n}-{o}" for n, o in STEP_CONFIGS])
def test_step_bumps_the_version_of_each_updated_parameter(name, opts):
    a = dg.tensor([1.0, 2.0], requires_grad=True)
    b = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = getattr(dg.optim, name)([a, b], **opts)
    (a * a).sum().backward()
    saved = (a * a).sum()  # saves a for its backward
    versions = a._version, b._version
    opt.step()
    assert a._version == versions[0] + 1 and b._version == versions[1]  # b had no gradient: untouched
    with pytest.raises(RuntimeError, match="modified in place"):
        saved.backward()  # as PyTorch: a step between forward and backward invalidates the saved values


@pytest.mark.parametrize("bad, kind, message", [
    (lambda p: dg.optim.SGD(p, lr=-1.0), ValueError, r"SGD: invalid learning rate -1.0 \(lr must be >= 0\)"),
    (lambda p: dg.optim.Adam(p, lr=-1), ValueError, "Adam: invalid learning rate -1 "),
    (lambda p: dg.optim.Adam(p, lr=float("nan")), ValueError, "Adam: invalid learning rate nan"),
    (lambda p: dg.optim.SGD(p, lr=float("inf")), ValueError, "must be finite"),
    (lambda p: dg.optim.SGD(p, lr="0.1"), TypeError, "SGD: lr must be a real number, got str '0.1'"),
    (lambda p: dg.optim.SGD(p, lr=True), TypeError, "SGD: lr must be a real number, got bool"),
    (lambda p: dg.optim.SGD(p, lr=dg.tensor(0.1)), TypeError, "lr must be a real number, got Tensor"),
    (lambda p: dg.optim.SGD(p, momentum=-0.5), ValueError, "SGD: invalid momentum -0.5"),
    (lambda p: dg.optim.SGD(p, weight_decay=-1e-4), ValueError, "SGD: invalid weight_decay -0.0001"),
    (lambda p: dg.optim.SGD(p, dampening="a"), TypeError, "SGD: dampening must be a real number"),
    (lambda p: dg.optim.SGD(p, nesterov=True), ValueError, "SGD: nesterov=True.*requires.*momentum=0"),
    (lambda p: dg.optim.SGD(p, momentum=0.9, nesterov="yes"), TypeError, "SGD: nesterov must be True or False"),
    (lambda p: dg.optim.Adam(p, betas=(0.9, 1.0)), ValueError, r"Adam: invalid betas \(0.9, 1.0\)"),
    (lambda p: dg.optim.Adam(p, betas=(0.9,)), TypeError, "Adam: betas must be a pair"),
    (lambda p: dg.optim.Adam(p, betas=0.9), TypeError, "Adam: betas must be a pair.*float 0.9"),
    (lambda p: dg.optim.Adam(p, betas=(0.9, "x")), TypeError, "Adam: betas must be a real number"),
    (lambda p: dg.optim.AdamW(p, eps=-1e-8), ValueError, "AdamW: invalid epsilon -1e-08"),
    (lambda p: dg.optim.AdamW(p, amsgrad=1), TypeError, "AdamW: amsgrad must be True or False, got int 1"),
    (lambda p: dg.optim.RMSprop(p, alpha=-0.1), ValueError, "RMSprop: invalid alpha -0.1"),
    (lambda p: dg.optim.RMSprop(p, centered=None), TypeError, "RMSprop: centered must be True or False"),
    (lambda p: dg.optim.Adagrad(p, lr_decay=-1), ValueError, "Adagrad: invalid lr_decay -1"),
    (lambda p: dg.optim.Adagrad(p, initial_accumulator_value=-1), ValueError, "invalid initial_accumulator_value"),
    (lambda p: dg.optim.Adam(p, maximize="no"), TypeError, "Adam: maximize must be True or False"),
    (lambda p: dg.optim.SGD([{"params": p, "lr": -1.0}], lr=0.1), ValueError, "SGD: invalid learning rate -1.0"),
    (lambda p: dg.optim.SGD([{"params": p}, {"params": [dg.tensor(1.0, requires_grad=True)], "momentum": -1}]),
     ValueError, "SGD: invalid momentum -1"),
    (lambda p: dg.optim.SGD([{"lr": 0.1}]), ValueError, 'SGD: a parameter group needs a "params" entry'),
    (lambda p: dg.optim.SGD([{"params": set(p)}]), TypeError, "SGD: parameters must be an ordered collection"),
    (lambda p: dg.optim.SGD([{"params": 3}]), TypeError, "SGD: a group's \"params\" must be a Tensor or an iterable"),
    (lambda p: dg.optim.SGD(p + p), ValueError, "SGD: some parameters appear more than once"),
    (lambda p: dg.optim.SGD(p[0]), TypeError, "SGD: params must be an iterable of Tensors"),
    (lambda p: dg.optim.SGD(5), TypeError, "SGD: params must be an iterable of Tensors.*int"),
    (lambda p: dg.optim.SGD([]), ValueError, "SGD: got an empty parameter list"),
    (lambda p: dg.optim.SGD(["w"]), TypeError, "SGD: parameters must be leaf dg.Tensors.*got str"),
    (lambda p: dg.optim.SGD([dg.tensor([1.0])]), ValueError, r"SGD: a parameter does not require a gradient"),
    (lambda p: dg.optim.SGD([p[0] * 2.0]), ValueError, r"SGD: can't optimize a non-leaf Tensor.*\(inputs: \(2,\)"),
])
def test_option_and_parameter_errors_name_the_optimizer_the_value_and_the_line(bad, kind, message):
    p = [dg.tensor([1.0, 2.0], requires_grad=True)]
    with pytest.raises(kind, match=message) as info:
        bad(p)
    assert type(info.value) is kind and _line_of(bad) in str(info.value), str(info.value)


def test_add_param_group_errors_name_it_and_change_nothing():
    a, b = dg.tensor([1.0], requires_grad=True), dg.tensor([2.0], requires_grad=True)
    opt = dg.optim.Adagrad([a], lr=0.1)
    before = _snapshot(opt, [a])
    for group, kind, message in [({"params": [b], "lr": -1.0}, ValueError, "learning rate"),
                                 ({"params": [a]}, ValueError, "more than once"),
                                 ([b], TypeError, "a parameter group is a dict"),
                                 ({"params": [b], "eps": "x"}, TypeError, "eps must be a real number")]:
        line = _here(2)
        with pytest.raises(kind, match=f"Adagrad.add_param_group: .*{message}") as info:
            opt.add_param_group(group)
        assert line in str(info.value)
        _assert_same(before, _snapshot(opt, [a]))
        assert b not in opt.state


def test_defaults_are_checked_even_when_every_group_sets_its_own():
    w = dg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="Adam: invalid learning rate -1.0"):
        dg.optim.Adam([{"params": [w], "lr": 0.1}], lr=-1.0)
    opt = dg.optim.Adam([w], betas=[0.8, 0.9])  # a list, as a user may write: kept as a tuple, as PyTorch's default
    assert opt.param_groups[0]["betas"] == (0.8, 0.9)


@pytest.mark.parametrize("corrupt, kind, message", [
    (lambda sd: sd.update(param_groups={"a": {}}), ValueError, "not group indices"),
    (lambda sd: sd.update(param_groups=[3]), ValueError, "must be a list of dicts"),
    (lambda sd: sd.update(state=[1]), ValueError, "'state' must be a dict"),
    (lambda sd: sd["state"].update({0: 5}), ValueError, "the state of parameter 0 is a int, not a dict"),
    (lambda sd: sd["param_groups"][0].update(params=["a"]), ValueError, "not parameter indices"),
    (lambda sd: sd["param_groups"][0].update(params=[0, 0]), ValueError, "parameter index 0 appears more than once"),
    (lambda sd: sd["param_groups"][0].update(eps="x"), TypeError, "eps must be a real number"),
    (lambda sd: sd["param_groups"][0].update(amsgrad="no"), TypeError, "amsgrad must be True or False"),
    (lambda sd: sd["state"][0].update(step=float("nan")), ValueError, "the step of parameter 0 must be a number >= 0"),
    (lambda sd: sd["state"][0].update(step=-1.0), ValueError, "the step of parameter 0 must be a number >= 0"),
    (lambda sd: sd["state"][0].update(exp_avg=np.array(["a", "b"])), TypeError, "has dtype <U1"),
    (lambda sd: sd["state"][1].update(exp_avg_sq=np.zeros(3)), ValueError, r"state 'exp_avg_sq' of parameter 1 has "
                                                                             r"shape \(3,\), the parameter \(2,\)"),
])
def test_a_bad_optimizer_state_dict_names_the_line_and_changes_nothing(corrupt, kind, message):
    a, b = dg.tensor([1.0, 2.0], requires_grad=True), dg.tensor([3.0, 4.0], requires_grad=True)
    opt = dg.optim.Adam([a, b], lr=0.1)
    (a * b).sum().backward()
    opt.step()
    sd = opt.state_dict()
    corrupt(sd)
    before = _snapshot(opt, [a, b])
    line = _here(2)
    with pytest.raises(kind, match=message) as info:
        opt.load_state_dict(sd)
    assert "Adam.load_state_dict" in str(info.value) and line in str(info.value), str(info.value)
    _assert_same(before, _snapshot(opt, [a, b]))


@pytest.mark.parametrize("bad, kind, message", [
    (lambda opt: StepLR(opt, step_size=0), ValueError, "StepLR: step_size must be a positive integer, got 0"),
    (lambda opt: StepLR(opt, step_size=1.5), ValueError, "step_size must be a positive integer, got 1.5"),
    (lambda opt: StepLR(opt, step_size="2"), ValueError, "step_size must be a positive integer, got '2'"),
    (lambda opt: StepLR(opt, step_size=2, gamma=-0.1), ValueError, "StepLR: invalid gamma -0.1"),
    (lambda opt: StepLR(opt, step_size=2, gamma=None), TypeError, "StepLR: gamma must be a real number"),
    (lambda opt: StepLR(opt, step_size=2, last_epoch=-2), ValueError, "StepLR: last_epoch must be an int >= -1"),
    (lambda opt: StepLR(opt, step_size=2, last_epoch=3), KeyError, "StepLR: param 'initial_lr' is not specified"),
    (lambda opt: StepLR("opt", step_size=2), TypeError, "StepLR: str is not a dg.optim Optimizer"),
    (lambda opt: CosineAnnealingLR(opt, T_max=0), ValueError, "CosineAnnealingLR: T_max must be positive, got 0"),
    (lambda opt: CosineAnnealingLR(opt, T_max="10"), TypeError, "CosineAnnealingLR: T_max must be a real number"),
    (lambda opt: CosineAnnealingLR(opt, T_max=10, eta_min=-1e-3), ValueError, "invalid eta_min -0.001"),
])
def test_scheduler_argument_errors_name_it_the_value_and_the_line_and_change_nothing(bad, kind, message):
    w = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.5)
    with pytest.raises(kind, match=message) as info:
        bad(opt)
    assert _line_of(bad) in str(info.value), str(info.value)
    assert dict(opt.param_groups[0]) == {**opt.defaults, "params": [w]}  # no initial_lr, lr unchanged


def test_scheduler_load_state_dict_checks_every_entry_first():
    w = dg.tensor([1.0], requires_grad=True)
    sched = StepLR(dg.optim.SGD([w], lr=0.5), step_size=2)
    sched.step()
    before = sched.state_dict()
    for sd, kind, message in [({"last_epoch": 3, "base_lrs": [0.1, 0.2]}, TypeError, "'base_lrs' must be a list of 1"),
                              ({"last_epoch": 3, "gamma": "x"}, TypeError, "'gamma' must be a real number"),
                              ({"last_epoch": 2.5}, TypeError, "'last_epoch' must be an int"),
                              ({"_initial": 1}, TypeError, "'_initial' must be True or False"),
                              ({"last_epoch": 3, "optimizer": None}, ValueError, "unknown entries 'optimizer'"),
                              ({"epoch": 3}, ValueError, "unknown entries"),
                              ([("last_epoch", 3)], TypeError, "expects a dict")]:
        line = _here(2)
        with pytest.raises(kind, match=f"StepLR.load_state_dict: .*{message}") as info:
            sched.load_state_dict(sd)
        assert line in str(info.value)
        assert sched.state_dict() == before
    sched.load_state_dict({"last_epoch": np.int64(5), "base_lrs": np.array([0.25])})  # as dg.load may give them
    assert sched.last_epoch == 5 and sched.base_lrs == [0.25]


class _FailsOnSecond(dg.optim.Adam):
    """Adam whose update fails for its second parameter: a failure after minimize made state Variables."""

    def _update(self, p, g, state, group):
        if p.name == "b":
            raise ValueError("boom")
        return super()._update(p, g, state, group)


@pytest.mark.parametrize("loaded", [False, True])
def test_a_failing_minimize_leaves_the_graph_and_the_optimizer_unchanged(loaded):
    with dg.Graph() as g:
        w = dg.Variable(np.array([1.0, 2.0]), name="w")
        b = dg.Variable(np.array(0.5), name="b")
        loss = (w * w).sum() + b * b
        opt = _FailsOnSecond([w, b], lr=0.1)
        if loaded:  # state from an eager optimiser's state dict: NumPy arrays, which must stay
            opt.load_state_dict(_eager_adam(steps=1)[2].state_dict())
        nodes, names = list(g.nodes), dict(g._names)
        state = {p: dict(entry) for p, entry in opt.state.items()}
        with pytest.raises(ValueError, match="boom"):
            opt.minimize(loss)
        assert g.nodes == nodes and g._names == names  # no gradient, update or state node is left
        assert opt.param_groups[0]._lr_variable is None
        assert opt.state.keys() == state.keys()
        for p in state:
            assert opt.state[p].keys() == state[p].keys()
            assert all(opt.state[p][k] is state[p][k] for k in state[p])  # the same arrays, no Variables
        opt.__class__ = dg.optim.Adam  # the same optimiser, now able to build its step
        train = opt.minimize(loss)
    dg.Session(g).run(train)
    reference = _eager_adam(steps=1)
    if loaded:  # the static step continues from the loaded state, at the Variables' values
        reference[0].value[...], reference[1].value[...] = [1.0, 2.0], 0.5
        reference = _eager_adam(steps=1, start=reference)
    np.testing.assert_allclose(w.value, reference[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.value, reference[1].numpy(), rtol=1e-12)


def _eager_adam(steps, start=None):
    """(w, b, optimizer) after `steps` eager Adam steps on the loss above, from (1, 2), 0.5 or `start`."""
    if start is None:
        w = dg.tensor([1.0, 2.0], requires_grad=True)
        b = dg.tensor(0.5, requires_grad=True)
        opt = dg.optim.Adam([w, b], lr=0.1)
    else:
        w, b, opt = start
    for _ in range(steps):
        opt.zero_grad()
        ((w * w).sum() + b * b).backward()
        opt.step()
    return w, b, opt


def test_minimize_errors_name_the_line():
    with dg.Graph():
        w = dg.Variable(np.array([1.0, 2.0]), name="w")
        opt = dg.optim.SGD([w], lr=0.1)
        line = _here(2)
        with pytest.raises(ValueError, match=r"SGD.minimize: the loss must be a scalar, got shape \(2,\)") as info:
            opt.minimize(w * w)
        assert line in str(info.value)
        line = _here(2)
        with pytest.raises(TypeError, match="SGD.minimize: the loss must be a node") as info:
            opt.minimize(1.0)
        assert line in str(info.value)


# a later group's option set to a bad value after construction (by hand, or as a state dict or a
# scheduler would): step checks every group before it updates any (issue 24)
BAD_OPTIONS = [("lr", None, TypeError, "lr must be a real number, got NoneType None"),
               ("lr", "x", TypeError, "lr must be a real number, got str 'x'"),
               ("lr", float("nan"), ValueError, "invalid learning rate nan"),
               ("lr", -0.1, ValueError, r"invalid learning rate -0.1 \(lr must be >= 0\)"),
               ("weight_decay", "x", TypeError, "weight_decay must be a real number"),
               ("maximize", 1, TypeError, "maximize must be True or False")]


def _two_groups(name, opts, steps=2):
    a = dg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = dg.tensor([0.5, 0.5, 0.5], requires_grad=True)
    opt = getattr(dg.optim, name)([{"params": [a]}, {"params": [b]}], **opts)
    for _ in range(steps):
        opt.zero_grad()
        (a * a * b).sum().backward()
        opt.step()
    opt.zero_grad()
    (a * a * b).sum().backward()
    return a, b, opt


@pytest.mark.parametrize("name, opts", STEP_CONFIGS, ids=[f"{n}-{o}" for n, o in STEP_CONFIGS])
@pytest.mark.parametrize("key, value, kind, message", BAD_OPTIONS, ids=[f"{k}={v!r}" for k, v, *_ in BAD_OPTIONS])
@pytest.mark.parametrize("steps", [0, 2])  # before any state exists, and after
def test_step_checks_every_groups_options_before_updating_any(name, opts, key, value, kind, message, steps):
    a, b, opt = _two_groups(name, opts, steps)
    opt.param_groups[1][key] = value
    before = _snapshot(opt, [a, b])
    closure_calls = []
    line = _here(2)
    with pytest.raises(kind, match=message) as info:
        opt.step(lambda: closure_calls.append(1))
    assert f"{name}.step: param_groups[1]" in str(info.value) and line in str(info.value), str(info.value)
    _assert_same(before, _snapshot(opt, [a, b]))
    assert closure_calls == []  # refused before the closure ran
    opt.param_groups[1][key] = opts.get(key, opt.defaults[key])  # repaired: the step goes on as usual
    opt.step()
    assert not np.array_equal(a.numpy(), before[0][0])


def test_step_refuses_a_group_that_lacks_an_option():
    a, b, opt = _two_groups("Adam", dict(lr=0.1))
    del opt.param_groups[1]["betas"]
    before = _snapshot(opt, [a, b])
    with pytest.raises(ValueError, match=r"Adam.step: param_groups\[1\]: lacks option\(s\) \['betas'\]"):
        opt.step()
    _assert_same(before, _snapshot(opt, [a, b]))


@pytest.mark.parametrize("name, opts", STEP_CONFIGS, ids=[f"{n}-{o}" for n, o in STEP_CONFIGS])
def test_a_bad_option_in_a_state_dicts_later_group_changes_nothing(name, opts):
    a, b, opt = _two_groups(name, opts)
    opt.step()
    sd = opt.state_dict()
    sd["param_groups"][1]["lr"] = None
    before = _snapshot(opt, [a, b])
    with pytest.raises(TypeError, match=f"{name}.load_state_dict: lr must be a real number"):
        opt.load_state_dict(sd)
    _assert_same(before, _snapshot(opt, [a, b]))


def _make_scheduler(kind, opt):
    return {"step": lambda: StepLR(opt, step_size=1, gamma=0.5), "cosine": lambda: CosineAnnealingLR(opt, T_max=4),
            "plateau": lambda: dg.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)}[kind]()


@pytest.mark.parametrize("kind", ["step", "cosine", "plateau"])
def test_a_scheduler_step_checks_every_groups_rate_before_setting_any(kind):
    a, b, opt = _two_groups("SGD", dict(lr=0.1))
    sched = _make_scheduler(kind, opt)
    step = (lambda: sched.step(1.0)) if kind == "plateau" else sched.step
    step()
    opt.param_groups[1]["lr"] = "x"
    state, lr0 = dict(sched.state_dict()), opt.param_groups[0]["lr"]
    with pytest.raises(TypeError, match=r"\.step: param_groups\[1\]: lr must be a real number, got str 'x'") as info:
        step()
    assert " at " in str(info.value) and "test_optim.py:" in str(info.value)
    assert sched.state_dict() == state and opt.param_groups[0]["lr"] == lr0
    with pytest.raises(TypeError, match=r"StepLR: param_groups\[1\]: lr must be a real number"):
        StepLR(opt, step_size=1)
    assert ("initial_lr" in opt.param_groups[0]) == (kind != "plateau") and opt.param_groups[1]["lr"] == "x"


def test_a_static_groups_rate_is_checked_before_it_reaches_the_graph():
    with dg.Graph() as g:
        w = dg.Variable(np.array([1.0, 2.0]), name="w")
        v = dg.Variable(np.array([3.0]), name="v")
        opt = dg.optim.SGD([{"params": [w]}, {"params": [v]}], lr=0.1)
        train = opt.minimize((w * w).sum() + (v * v).sum())
    opt.param_groups[1]["lr"] = 0.2
    with pytest.raises(TypeError, match=r"param_group\['lr'\]: lr must be a real number, got NoneType None"):
        opt.param_groups[1]["lr"] = None
    assert opt.param_groups[1]["lr"] == 0.2
    dg.Session(g).run(train)
    np.testing.assert_allclose(v.value, [3.0 - 0.2 * 6.0])
    opt.param_groups[1].__class__.__bases__[0].__setitem__(opt.param_groups[1], "momentum", "x")  # past the check
    with dg.Graph():
        u = dg.Variable(np.array([1.0]), name="u")
        with pytest.raises(TypeError, match=r"SGD.minimize: param_groups\[1\]: momentum must be a real number"):
            opt.minimize((u * u).sum())


def _compiled_training(opt_name, opts):
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    v = dg.tensor([3.0], requires_grad=True)
    opt = getattr(dg.optim, opt_name)([{"params": [w]}, {"params": [v]}], **opts)

    def step(x):
        opt.zero_grad()
        loss = (w * w * x).sum() + (v * v).sum()
        loss.backward()
        opt.step()
        return loss

    return w, v, opt, step


@pytest.mark.parametrize("name, opts", STEP_CONFIGS, ids=[f"{n}-{o}" for n, o in STEP_CONFIGS])
def test_a_compiled_step_follows_changed_options_and_refuses_bad_ones(name, opts):
    """Options a traced step built in (momentum, betas, ...) are checked at each call: a change traces
    again, as torch.compile's guards do, so the compiled step equals the eager one; a bad value raises
    before anything is written."""
    runs = []
    for compiled in (False, True):
        w, v, opt, step = _compiled_training(name, opts)
        step = dg.compile(step) if compiled else step
        for k in range(4):
            if k == 2:  # every option but lr changed: the traced code must not keep the old ones
                for group in opt.param_groups:
                    group["weight_decay"] = 0.25
                    group["maximize"] = True
                    if "momentum" in group:
                        group["momentum"] = 0.5 if group["momentum"] == 0 else 0.0
                    if "nesterov" in group:
                        group["nesterov"] = False
                    if "betas" in group:
                        group["betas"] = (0.5, 0.75)
                opt.param_groups[1]["lr"] = 0.05
            step(np.ones(2))
        runs.append((w.numpy().copy(), v.numpy().copy()))
        opt.param_groups[1]["lr"] = None
        before = _snapshot(opt, [w, v])
        with pytest.raises(TypeError, match=rf"{name}.step: param_groups\[1\]: lr must be a real number"):
            step(np.ones(2))
        after = _snapshot(opt, [w, v])
        _assert_same(before, (after[0], before[1], *after[2:]))  # (.grad aside: the eager function set it)
        opt.param_groups[1]["lr"] = 0.05
        opt.param_groups[1]["weight_decay"] = "x"  # an option the trace built in: traced again, and refused
        before = _snapshot(opt, [w, v])
        with pytest.raises(TypeError, match=rf"{name}.step: param_groups\[1\]: weight_decay must be a real number"):
            step(np.ones(2))
        after = _snapshot(opt, [w, v])
        _assert_same(before, (after[0], before[1], *after[2:]))
        opt.param_groups[1]["weight_decay"] = 0.25  # repaired: the step goes on
        step(np.ones(2))
        runs[-1] += (w.numpy().copy(), v.numpy().copy())
    for eager, fast in zip(*runs):
        np.testing.assert_allclose(fast, eager, rtol=1e-12)


# ---------------------------------------------------------------- the oracle tier: PyTorch


def torch_run(torch, name, opts, steps=STEPS, dtype=np.float64):
    tdtype = torch.float64 if dtype == np.float64 else torch.float32
    w = torch.tensor(W0.astype(dtype), dtype=tdtype, requires_grad=True)
    b = torch.tensor(B0.astype(dtype), dtype=tdtype, requires_grad=True)
    tx, ty = torch.tensor(X.astype(dtype)), torch.tensor(Y.astype(dtype))
    opt = getattr(torch.optim, name)([w, b], foreach=False, **opts)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        z = tx @ w + b
        loss = sign_of(opts) * (torch.mean(torch.nn.functional.softplus(z) - ty * z) + 0.1 * torch.sum(w**4))
        loss.backward()
        opt.step()
        history.append((w.detach().numpy().copy(), b.detach().numpy().copy()))
    return history, opt


@pytest.mark.oracle
@pytest.mark.parametrize("name, opts", CONFIGS, ids=IDS)
def test_updates_match_torch_step_by_step(name, opts):
    torch = pytest.importorskip("torch")
    ours, opt = eager_run(name, opts)[:2]
    theirs, topt = torch_run(torch, name, opts)
    for k, ((w, b), (tw, tb)) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(w, tw, rtol=1e-10, atol=1e-13, err_msg=f"{name} step {k + 1}")
        np.testing.assert_allclose(b, tb, rtol=1e-10, atol=1e-13, err_msg=f"{name} step {k + 1}")
    # and the optimiser states
    tsd = topt.state_dict()
    for k, entry in opt.state_dict()["state"].items():
        for key, value in entry.items():
            want = tsd["state"][k][key]
            want = float(want) if key == "step" else want.numpy()
            np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-13, err_msg=f"{name} {key}")


@pytest.mark.oracle
@pytest.mark.parametrize("name, opts", CONFIGS, ids=IDS)
def test_float32_updates_match_torch(name, opts):
    torch = pytest.importorskip("torch")
    ours = eager_run(name, opts, steps=STEPS, dtype=np.float32)[0]
    theirs = torch_run(torch, name, opts, dtype=np.float32)[0]
    for k, ((w, b), (tw, tb)) in enumerate(zip(ours, theirs)):
        assert w.dtype == np.float32
        np.testing.assert_allclose(w, tw, rtol=2e-4, atol=1e-5, err_msg=f"{name} step {k + 1}")
        np.testing.assert_allclose(b, tb, rtol=2e-4, atol=1e-5, err_msg=f"{name} step {k + 1}")


@pytest.mark.oracle
@pytest.mark.parametrize("kind, kwargs", [
    ("StepLR", dict(step_size=4, gamma=0.5)),
    ("StepLR", dict(step_size=1, gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=10)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.05)),
])
def test_schedulers_match_torch_over_30_epochs(kind, kwargs):
    torch = pytest.importorskip("torch")
    w = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([{"params": [w]}, {"params": [dg.tensor([1.0], requires_grad=True)], "lr": 0.3}], lr=1.0)
    tw = torch.zeros(1, requires_grad=True)
    topt = torch.optim.SGD([{"params": [tw]}, {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.3}], lr=1.0)
    ours = getattr(dg.optim.lr_scheduler, kind)(opt, **kwargs)
    theirs = getattr(torch.optim.lr_scheduler, kind)(topt, **kwargs)
    assert ours.get_last_lr() == theirs.get_last_lr()
    for epoch in range(30):
        opt.step()
        topt.step()
        ours.step()
        theirs.step()
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-13, atol=1e-15,
                                   err_msg=f"epoch {epoch + 1}")
        assert [g["lr"] for g in opt.param_groups] == ours.get_last_lr()
