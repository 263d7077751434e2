"""A PyTorch-style training step under dg.compile (issue 14): `opt.zero_grad(); loss.backward(); opt.step()`
traced once, then each call leaves the parameters, their `.grad` and the optimiser's state exactly as the
eager step would."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F

RNG = np.random.default_rng(0)
X, Y = RNG.standard_normal((32, 8)), RNG.integers(0, 3, 32)


def _model():
    dg.manual_seed(0)
    return dg.nn.Sequential(dg.nn.Linear(8, 16), dg.nn.Tanh(), dg.nn.Linear(16, 3))


def _compiled_step(model, opt):
    """The training step as torch.compile users write it."""

    @dg.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _eager_step(model, opt):
    opt.zero_grad()
    loss = F.cross_entropy(model(dg.tensor(X)), Y)
    loss.backward()
    opt.step()
    return loss


def _same(a, b):
    return all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(a.parameters(), b.parameters()))


def _same_grads(a, b):
    return all((p.grad is None and q.grad is None) or np.array_equal(p.grad.numpy(), q.grad.numpy())
               for p, q in zip(a.parameters(), b.parameters()))


@pytest.mark.parametrize("make_opt", [
    lambda ps: dg.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: dg.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda ps: dg.optim.Adam(ps, lr=0.01),
    lambda ps: dg.optim.AdamW(ps, lr=0.01, amsgrad=True),
    lambda ps: dg.optim.RMSprop(ps, lr=0.01, momentum=0.5),
], ids=["SGD momentum", "SGD nesterov + weight decay", "Adam", "AdamW amsgrad", "RMSprop momentum"])
def test_twenty_compiled_steps_equal_the_eager_steps_bit_for_bit(make_opt):
    eager, compiled = _model(), _model()
    opt_e, opt_c = make_opt(eager.parameters()), make_opt(compiled.parameters())

    step = _compiled_step(compiled, opt_c)

    for _ in range(20):
        loss_e = _eager_step(eager, opt_e)
        loss_c = step(X, Y)
        assert float(loss_c) == loss_e.item()
        assert _same(eager, compiled) and _same_grads(eager, compiled)
    state_e, state_c = opt_e.state_dict(), opt_c.state_dict()
    for entry_e, entry_c in zip(state_e["state"].values(), state_c["state"].values()):
        assert entry_e.keys() == entry_c.keys()
        for key in entry_e:
            np.testing.assert_array_equal(entry_e[key], entry_c[key])
    assert len(step._cache.keys()) == 1  # one trace served every step


def test_gradients_accumulate_across_calls_as_eager_backward_does():
    eager, compiled = _model(), _model()

    @dg.compile
    def accumulate(x, y):  # no zero_grad: each call adds to .grad
        F.cross_entropy(compiled(x), y).backward()

    for k in range(3):
        F.cross_entropy(eager(dg.tensor(X[k:k + 8])), Y[k:k + 8]).backward()
        accumulate(X[k:k + 8], Y[k:k + 8])
        assert _same_grads(eager, compiled)
    eager.zero_grad()
    compiled.zero_grad()
    F.cross_entropy(eager(dg.tensor(X[:8])), Y[:8]).backward()
    accumulate(X[:8], Y[:8])  # a .grad cleared between calls is started afresh
    assert _same_grads(eager, compiled)


def test_changes_between_calls_are_read_at_each_call():
    model = _model()
    opt = dg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = dg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    twin = _model()
    opt_t = dg.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    sched_t = dg.optim.lr_scheduler.StepLR(opt_t, step_size=1, gamma=0.5)

    step = _compiled_step(model, opt)

    for _ in range(3):
        step(X, Y)
        sched.step()  # the learning rate changes between calls
        _eager_step(twin, opt_t)
        sched_t.step()
        assert _same(model, twin)
    with dg.no_grad():  # parameters changed outside the compiled step are what it reads next
        for p, q in zip(model.parameters(), twin.parameters()):
            p *= 0.5
            q *= 0.5
    step(X, Y)
    _eager_step(twin, opt_t)
    assert _same(model, twin)


def test_a_parameter_cast_to_another_dtype_is_traced_again():
    model = _model()
    opt = dg.optim.SGD(model.parameters(), lr=0.1)

    step = _compiled_step(model, opt)

    step(X, Y)
    model.float()
    loss = step(X.astype(np.float32), Y)
    assert loss.dtype == np.float32 and all(p.dtype == np.float32 for p in model.parameters())


def test_tracing_alone_changes_no_gradient_and_export_refuses_a_training_step():
    model = _model()
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    F.cross_entropy(model(dg.tensor(X)), Y).backward()
    before = [p.grad.numpy().copy() for p in model.parameters()]
    values = [p.numpy().copy() for p in model.parameters()]

    @dg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    assert "param" in step.source(X, Y)  # traced, not run
    for p, g, v in zip(model.parameters(), before, values):
        np.testing.assert_array_equal(p.grad.numpy(), g)
        np.testing.assert_array_equal(p.numpy(), v)
    with pytest.raises(ValueError, match="export: the function reads parameters"):
        step.export("never_written.py", X, Y)


def test_backward_of_a_non_scalar_inside_compile_is_refused_at_the_users_line():
    model = _model()

    @dg.compile
    def bad(x):
        model(x).backward()

    with pytest.raises(ValueError, match=r"backward: grad can be created implicitly only for a one-element output.*"
                                         r"test_compiled_step\.py"):
        bad(X)


def test_tracing_alone_leaves_the_optimiser_state_as_it_was():
    model = _model()
    opt = dg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, dampening=0.5)

    @dg.compile
    def step(x, y):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    step.source(X, Y)
    assert opt.state == {}
    twin = _model()
    opt_t = dg.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9, dampening=0.5)
    for o, m in ((opt, model), (opt_t, twin)):  # an eager first step after the trace is an eager first step
        o.zero_grad()
        F.cross_entropy(m(dg.tensor(X)), Y).backward()
        o.step()
    assert _same(model, twin)
    step(X, Y)  # and compiled steps go on from the eager state
    opt_t.zero_grad()
    F.cross_entropy(twin(dg.tensor(X)), Y).backward()
    opt_t.step()
    assert _same(model, twin)


class _Affine(dg.nn.Module):
    """A module computing with its parameters alone before meeting the input (W.T, 2 * b)."""

    def __init__(self):
        super().__init__()
        dg.manual_seed(1)
        self.W = dg.nn.Parameter(dg.randn(3, 8) * 0.1)
        self.b = dg.nn.Parameter(dg.zeros(3))

    def forward(self, x):
        return x @ self.W.T + self.b * 2.0


def test_values_computed_eagerly_from_parameters_are_recomputed_at_each_call():
    # traced once, `self.W.T` and `self.b * 2.0` would be constants: no gradient would reach W and b, and
    # the step would silently stop training. They are recorded from the parameters instead.
    eager, compiled = _Affine(), _Affine()
    opt_e, opt_c = dg.optim.SGD(eager.parameters(), lr=0.5), dg.optim.SGD(compiled.parameters(), lr=0.5)
    step = _compiled_step(compiled, opt_c)
    for _ in range(5):
        assert float(step(X, Y)) == _eager_step(eager, opt_e).item()
        assert _same(eager, compiled) and _same_grads(eager, compiled)


def test_an_in_place_write_to_a_parameter_inside_a_compiled_function_is_refused():
    model = _model()
    weight = model[0].weight
    before = weight.numpy().copy()

    @dg.compile
    def update(x):
        with dg.no_grad():
            weight.sub_(0.1)  # would run once, while tracing
        return x

    with pytest.raises(TypeError, match=r"sub_: dg.compile traces update\(\) once.*optimiser's step\(\).*"
                                        r"test_compiled_step\.py"):
        update(X)
    np.testing.assert_array_equal(weight.numpy(), before)
