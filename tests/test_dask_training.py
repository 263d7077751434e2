"""Training on Dask data with dagrad.nn and dagrad.optim (issue 17): NumPy parameters, a chunked Dask batch;
the forward and backward passes compute nothing, `opt.step()` computes every gradient (and the closure's
loss) with ONE `dask.compute`, and the losses equal the NumPy run's, also on a two-process LocalCluster."""

from __future__ import annotations

import importlib.util
import pathlib
import threading

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="Dask is an optional extra: pip install dagrad[dask]")
import dask  # noqa: E402
import dask.threaded  # noqa: E402

import dagrad as dg  # noqa: E402
from test_dask import _lazy  # noqa: E402  (a scheduler that refuses any compute)

HERE = __file__.rsplit("/", 1)[-1]


class _Counting:
    """A scheduler that counts its calls (one call is one `dask.compute`) and runs Dask's threaded one."""

    def __init__(self):
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, dsk, keys, **kwargs):
        with self._lock:
            self.calls += 1
        return dask.threaded.get(dsk, keys, **kwargs)


def _data(rows=120, features=4, chunk=30, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features))
    y = np.tanh(x @ np.linspace(-1.0, 1.0, features))[:, None] + 0.1 * rng.standard_normal((rows, 1))
    return x, y


def _mlp(features=4, hidden=5, seed=0):
    dg.manual_seed(seed)
    return dg.nn.Sequential(dg.nn.Linear(features, hidden), dg.nn.Tanh(), dg.nn.Linear(hidden, 1))


def _copy(model):
    twin = _mlp()
    twin.load_state_dict(model.state_dict())
    return twin


def _loss_and_backward(model, x, y):
    loss = dg.nn.MSELoss()(model(dg.tensor(x)), dg.tensor(y))
    loss.backward()
    return loss


OPTIMIZERS = [
    (dg.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    (dg.optim.SGD, {"lr": 0.1}),  # the stateless in-place fast path
    (dg.optim.Adam, {"lr": 0.01, "amsgrad": True}),
    (dg.optim.AdamW, {"lr": 0.01}),
    (dg.optim.RMSprop, {"lr": 0.01, "momentum": 0.5, "centered": True}),
    (dg.optim.Adagrad, {"lr": 0.1}),
]


@pytest.mark.parametrize("cls, options", OPTIMIZERS, ids=[f"{c.__name__}-{len(o)}" for c, o in OPTIMIZERS])
def test_step_computes_every_dask_gradient_with_one_compute_and_updates_as_numpy(cls, options):
    x, y = _data()
    model = _mlp()
    twin = _copy(model)
    opt, twin_opt = cls(model.parameters(), **options), cls(twin.parameters(), **options)
    counting = _Counting()
    for _ in range(3):
        opt.zero_grad()
        with _lazy():
            _loss_and_backward(model, da.from_array(x, chunks=(30, 4)), da.from_array(y, chunks=(30, 1)))
            assert all(isinstance(p.grad._value, da.Array) for p in model.parameters())
        with dask.config.set(scheduler=counting):
            opt.step()
        twin_opt.zero_grad()
        _loss_and_backward(twin, x, y)
        twin_opt.step()
    assert counting.calls == 3  # one per step, never one per parameter (4 parameters)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert type(p._value) is np.ndarray and type(p.grad._value) is np.ndarray  # .grad now in memory
        np.testing.assert_allclose(p._value, q._value, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(p.grad._value, q.grad._value, rtol=1e-10, atol=1e-13)


def test_step_closure_computes_the_loss_in_the_same_compute():
    x, y = _data()
    xd, yd = da.from_array(x, chunks=(30, 4)), da.from_array(y, chunks=(30, 1))
    model = _mlp()
    twin = _copy(model)
    opt = dg.optim.Adam(model.parameters(), lr=0.01)

    def closure():
        opt.zero_grad()
        return _loss_and_backward(model, xd, yd)

    counting = _Counting()
    with dask.config.set(scheduler=counting):
        loss = opt.step(closure)
        value = loss.item()  # already in memory: no second compute
    assert counting.calls == 1
    assert isinstance(loss, dg.Tensor) and type(loss._value) is np.ndarray
    expected = _loss_and_backward(twin, x, y)
    assert value == pytest.approx(expected.item(), rel=1e-12)
    grads = [p.grad._value for p in model.parameters()]
    assert all(type(g) is np.ndarray for g in grads)
    for g, q in zip(grads, twin.parameters()):
        np.testing.assert_allclose(g, q.grad._value, rtol=1e-10, atol=1e-13)


def test_step_with_numpy_gradients_and_a_dask_loss_computes_only_the_loss():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.5)

    def closure():
        opt.zero_grad()
        (w * w).sum().backward()
        return dg.tensor(da.ones(4, chunks=2)).sum()

    counting = _Counting()
    with dask.config.set(scheduler=counting):
        loss = opt.step(closure)
    assert counting.calls == 1 and loss.item() == 4.0
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])


def test_a_failing_compute_updates_nothing():
    x, y = _data()

    def broken(block):
        raise ValueError("a chunk could not be read")

    xd = da.from_array(x, chunks=(30, 4)).map_blocks(broken, dtype=x.dtype)
    model = _mlp()
    opt = dg.optim.Adam(model.parameters(), lr=0.1)
    before = [p.numpy().copy() for p in model.parameters()]
    _loss_and_backward(model, xd, da.from_array(y, chunks=(30, 1)))
    with pytest.raises(ValueError, match="could not be read"):
        opt.step()
    assert opt.state == {}
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)
        assert isinstance(p.grad._value, da.Array)  # still the lazy gradient: nothing half-done


def test_a_dask_parameter_is_refused_naming_the_line():
    w = dg.tensor(da.zeros(3, chunks=2), requires_grad=True)
    with pytest.raises(TypeError) as info:
        dg.optim.SGD([w], lr=0.1)
    text = str(info.value)
    assert "SGD" in text and "Dask array" in text and "fit in memory" in text and "(3,)" in text
    assert f"{HERE}:{info.tb.tb_lineno}" in text


def test_zero_grad_clears_dask_gradients_without_computing():
    x, y = _data()
    model = _mlp()
    opt = dg.optim.SGD(model.parameters(), lr=0.1)
    with _lazy():
        _loss_and_backward(model, da.from_array(x, chunks=(30, 4)), da.from_array(y, chunks=(30, 1)))
        opt.zero_grad(set_to_none=False)
        # gradients accumulate onto the zeros lazily
        _loss_and_backward(model, da.from_array(x, chunks=(30, 4)), da.from_array(y, chunks=(30, 1)))
    twin = _copy(model)
    _loss_and_backward(twin, x, y)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad._value.compute(), q.grad._value, rtol=1e-12, atol=1e-14)
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_gradients_accumulate_from_numpy_and_dask_batches():
    x, y = _data()
    model = _mlp()
    twin = _copy(model)
    _loss_and_backward(model, x[:60], y[:60])  # a NumPy gradient
    with _lazy():
        _loss_and_backward(model, da.from_array(x[60:], chunks=(30, 4)), da.from_array(y[60:], chunks=(30, 1)))
    _loss_and_backward(twin, x[:60], y[:60])
    _loss_and_backward(twin, x[60:], y[60:])
    opt, twin_opt = dg.optim.SGD(model.parameters(), lr=0.1), dg.optim.SGD(twin.parameters(), lr=0.1)
    opt.step()
    twin_opt.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p._value, q._value, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("max_norm, norm_type", [(0.05, 2.0), (1e6, 2.0), (0.05, float("inf")), (0.05, 1.0)])
def test_clip_grad_norm_is_lazy_and_joins_the_step_compute(max_norm, norm_type):
    x, y = _data()
    model = _mlp()
    twin = _copy(model)
    opt, twin_opt = dg.optim.SGD(model.parameters(), lr=0.1), dg.optim.SGD(twin.parameters(), lr=0.1)
    with _lazy():
        _loss_and_backward(model, da.from_array(x, chunks=(30, 4)), da.from_array(y, chunks=(30, 1)))
        total = dg.nn.utils.clip_grad_norm_(model.parameters(), max_norm, norm_type)
        assert isinstance(total._value, da.Array)
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        opt.step()
    assert counting.calls == 1
    _loss_and_backward(twin, x, y)
    expected = dg.nn.utils.clip_grad_norm_(twin.parameters(), max_norm, norm_type)
    twin_opt.step()
    assert total.item() == pytest.approx(expected.item(), rel=1e-12)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad._value, q.grad._value, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(p._value, q._value, rtol=1e-10, atol=1e-14)


def test_clip_grad_norm_keeps_each_gradients_dtype_on_dask():
    def clipped(x):
        a = dg.tensor(np.ones(3, np.float32), requires_grad=True)
        b = dg.tensor(np.ones(2), requires_grad=True)
        x = dg.tensor(x)
        (a.sum() * x.sum() + b.sum() * x.sum().astype(np.float64)).backward()
        total = dg.nn.utils.clip_grad_norm_([a, b], 1.0)
        return total, a.grad._value, b.grad._value

    with _lazy():
        total, a, b = clipped(da.full(4, 3.0, chunks=2))
    assert a.dtype == np.float32 and b.dtype == np.float64
    total, a, b = dask.compute(total._value, a, b)
    expected = clipped(np.full(4, 3.0))
    assert total == expected[0].item() and a.dtype == np.float32
    np.testing.assert_allclose(a, expected[1], rtol=1e-6)
    np.testing.assert_allclose(b, expected[2], rtol=1e-12)
    np.testing.assert_allclose(b, 12.0 / (np.sqrt(5 * 144.0) + 1e-6), rtol=1e-7)  # every entry 12 before


def test_clip_grad_norm_error_if_nonfinite_computes_once_and_names_the_line():
    w = dg.tensor(np.ones(4), requires_grad=True)
    x = dg.tensor(da.from_array(np.array([1.0, np.inf, 2.0, 3.0]), chunks=2))
    (w * x).sum().backward()
    counting = _Counting()
    with dask.config.set(scheduler=counting), pytest.raises(RuntimeError) as info:
        dg.nn.utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)
    assert counting.calls == 1
    assert "non-finite" in str(info.value) and f"{HERE}:{info.tb.tb_lineno}" in str(info.value)
    np.testing.assert_array_equal(w.grad._value, [1.0, np.inf, 2.0, 3.0])  # computed, not clipped


def test_clip_grad_value_is_lazy():
    w = dg.tensor(np.ones(4), requires_grad=True)
    x = dg.tensor(da.from_array(np.array([-3.0, 0.5, 2.0, np.nan]), chunks=2))
    with _lazy():
        (w * x).sum().backward()
        dg.nn.utils.clip_grad_value_([w], 1.0)
        assert isinstance(w.grad._value, da.Array)
    np.testing.assert_array_equal(w.grad._value.compute(), [-1.0, 0.5, 1.0, np.nan])


LAYERS = [dg.nn.ReLU, dg.nn.Tanh, dg.nn.Sigmoid, dg.nn.GELU, dg.nn.SiLU, dg.nn.LeakyReLU, dg.nn.ELU,
          dg.nn.Softplus, dg.nn.Identity]
LOSSES = [(dg.nn.MSELoss, False), (dg.nn.L1Loss, False), (dg.nn.HuberLoss, False), (dg.nn.SmoothL1Loss, False),
          (dg.nn.BCEWithLogitsLoss, True)]


@pytest.mark.parametrize("activation", LAYERS, ids=[c.__name__ for c in LAYERS])
@pytest.mark.parametrize("loss_cls, binary", LOSSES, ids=[c.__name__ for c, _ in LOSSES])
def test_modules_on_a_dask_batch_stay_lazy_and_equal_numpy(activation, loss_cls, binary):
    x, y = _data()
    y = (y > 0).astype(np.float64) if binary else y
    dg.manual_seed(1)
    model = dg.nn.Sequential(dg.nn.Linear(4, 6), activation(), dg.nn.Linear(6, 1))
    twin = dg.nn.Sequential(dg.nn.Linear(4, 6), activation(), dg.nn.Linear(6, 1))
    twin.load_state_dict(model.state_dict())
    with _lazy():
        loss = loss_cls()(model(dg.tensor(da.from_array(x, chunks=(30, 4)))), dg.tensor(da.from_array(y, (30, 1))))
        loss.backward()
        assert isinstance(loss._value, da.Array)
    expected = loss_cls()(twin(dg.tensor(x)), dg.tensor(y))
    expected.backward()
    values = dask.compute(loss._value, *(p.grad._value for p in model.parameters()))
    assert values[0] == pytest.approx(expected.item(), rel=1e-12)
    for got, q in zip(values[1:], twin.parameters()):
        np.testing.assert_allclose(got, q.grad._value, rtol=1e-10, atol=1e-14)


def _train(model, opt, x, y, steps, loss_fn):
    losses = []

    def closure():
        opt.zero_grad()
        loss = loss_fn(model(dg.tensor(x)), dg.tensor(y))
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(opt.step(closure).item())
    return losses


def _logistic_problem():
    x, y = _data(rows=400, seed=3)
    return x, (y > 0).astype(np.float64)


def _runs(x, y, make_data):
    """(Dask losses, NumPy losses) of a logistic regression (SGD) and an MLP regression (Adam)."""
    results = []
    for build, loss_fn, opt_cls, lr, target in [
            (lambda: dg.nn.Linear(4, 1), dg.nn.BCEWithLogitsLoss(), dg.optim.SGD, 0.5, (y > 0).astype(np.float64)),
            (_mlp, dg.nn.MSELoss(), dg.optim.Adam, 0.05, y)]:
        dg.manual_seed(7)
        model = build()
        twin = build()
        twin.load_state_dict(model.state_dict())
        xd, yd = make_data(x, target)
        lazy = _train(model, opt_cls(model.parameters(), lr=lr), xd, yd, 6, loss_fn)
        eager = _train(twin, opt_cls(twin.parameters(), lr=lr), x, target, 6, loss_fn)
        results.append((lazy, eager))
    return results


def _chunked(x, y):
    return da.from_array(x, chunks=(100, 4)), da.from_array(y, chunks=(100, 1))


def test_training_with_the_threaded_scheduler_gives_numpys_losses():
    x, y = _data(rows=400, seed=3)
    with dask.config.set(scheduler="threads"):
        for lazy, eager in _runs(x, y, _chunked):
            assert lazy[-1] < lazy[0]
            np.testing.assert_allclose(lazy, eager, rtol=1e-10)


def test_training_on_a_local_cluster_of_two_process_workers_gives_numpys_losses():
    distributed = pytest.importorskip("dask.distributed", reason="the cluster needs distributed (the [dask] extra)")
    x, y = _data(rows=400, seed=3)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        # the data lives on the workers (persisted in their memory); each step sends only the parameters
        def on_workers(x, y):
            return client.persist(list(_chunked(x, y)))

        runs = _runs(x, y, on_workers)
        assert len(client.scheduler_info()["workers"]) == 2
    for lazy, eager in runs:
        assert lazy[-1] < lazy[0]
        np.testing.assert_allclose(lazy, eager, rtol=1e-10)


PLATEAU = [dict(factor=0.5, patience=2), dict(mode="max", factor=0.3, patience=1, cooldown=2, min_lr=[0.01, 0.2]),
           dict(threshold=0.05, threshold_mode="abs", patience=0, eps=1e-3),
           dict(mode="max", threshold_mode="abs", threshold=0.1, patience=1)]


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", PLATEAU)
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    metrics = [5.0, 4.0, 4.0, 3.99, 4.1, 3.0, 3.0, 3.0, np.nan, 2.9, 2.95, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0] * 2
    opt = dg.optim.SGD([{"params": [dg.tensor([1.0], requires_grad=True)]},
                        {"params": [dg.tensor([1.0], requires_grad=True)], "lr": 0.3}], lr=1.0)
    topt = torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)]},
                            {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.3}], lr=1.0)
    ours = dg.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    for epoch, metric in enumerate(metrics):
        ours.step(dg.tensor(metric))
        theirs.step(metric)
        assert ours.get_last_lr() == theirs.get_last_lr(), f"epoch {epoch + 1}"
        assert (ours.best, ours.num_bad_epochs, ours.cooldown_counter) == \
            (theirs.best, theirs.num_bad_epochs, theirs.cooldown_counter) or np.isnan(metric)


def test_reduce_lr_on_plateau_reads_a_dask_loss_and_restores_its_state():
    w = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=1.0)
    sched = dg.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        sched.step(dg.tensor(da.full(4, 2.0, chunks=2)).mean())  # a lazy loss: computed here, once
        sched.step(dg.tensor(da.full(4, 3.0, chunks=2)).mean())
    assert counting.calls == 2 and sched.best == 2.0 and sched.get_last_lr() == [0.5]
    saved = sched.state_dict()
    other = dg.optim.lr_scheduler.ReduceLROnPlateau(dg.optim.SGD([w], lr=1.0), mode="max")
    other.load_state_dict(saved)
    assert (other.mode, other.best, other.get_last_lr()) == ("min", 2.0, [0.5])
    with pytest.raises(ValueError) as info:
        other.load_state_dict(dict(saved, mode="lowest"))
    assert "'mode'" in str(info.value) and f"{HERE}:{info.tb.tb_lineno}" in str(info.value)
    with pytest.raises(TypeError):
        other.load_state_dict(dict(saved, num_bad_epochs="two"))
    assert other.mode == "min" and other.num_bad_epochs == saved["num_bad_epochs"]  # nothing changed


@pytest.mark.parametrize("kwargs, message", [
    (dict(factor=1.0), "factor must be < 1"), (dict(mode="lowest"), "mode must be one of"),
    (dict(patience=-1), "patience must be an int >= 0"), (dict(min_lr=[0.1, 0.2]), "min_lr has 2 entries"),
    (dict(threshold_mode="relative"), "threshold_mode must be one of")])
def test_reduce_lr_on_plateau_refuses_bad_options_naming_the_line(kwargs, message):
    opt = dg.optim.SGD([dg.tensor([1.0], requires_grad=True)], lr=1.0)
    with pytest.raises((TypeError, ValueError)) as info:
        dg.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    text = str(info.value)
    assert text.startswith("ReduceLROnPlateau") and message in text and f"{HERE}:{info.tb.tb_lineno}" in text
    sched = dg.optim.lr_scheduler.ReduceLROnPlateau(opt)
    with pytest.raises(TypeError) as info:
        sched.step(dg.tensor([1.0, 2.0]))
    assert "one-element" in str(info.value) and sched.last_epoch == 0


def test_the_examples_optim_path_gives_the_same_losses_with_one_compute_per_step():
    path = pathlib.Path(__file__).parent.parent / "examples" / "dask_logistic_regression.py"
    spec = importlib.util.spec_from_file_location("dask_logistic_regression", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    data = example.make_data(rows=2_000, chunk=500)
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        with_optim = example.main(steps=8, data=data, optim=True)
    assert counting.calls == 8
    np.testing.assert_allclose(with_optim, example.main(steps=8, data=data), rtol=1e-10)


@pytest.mark.parametrize("shape", [(120, 4), (60, 4, 3)])
def test_batch_norm_computes_its_statistics_once_over_a_dask_batch(shape):
    """The running mean and variance are updated from the batch's statistics: both computed by ONE
    `dask.compute` (two read every chunk of the batch twice), equal to the NumPy run's; the output stays lazy."""
    x0 = np.random.default_rng(4).standard_normal(shape)
    lazy, eager = dg.nn.BatchNorm1d(4), dg.nn.BatchNorm1d(4)
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        out = lazy(dg.tensor(da.from_array(x0, chunks=(shape[0] // 4,) + shape[1:])))
    assert counting.calls == 1 and isinstance(out._value, da.Array)
    expected = eager(dg.tensor(x0))
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(lazy, name).numpy(), getattr(eager, name).numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
