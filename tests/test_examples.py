"""The examples run and reach their stated results."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fit_with_scipy_uses_gradient_and_hessian_vector_products():
    pytest.importorskip("scipy", reason="the example needs scipy (the [examples] extra)")
    example = _load("fit_with_scipy")
    result = example.main()
    assert result.success and result.nhev > 0
    np.testing.assert_allclose(result.x, example.TRUE_PARAMS, atol=0.03)


def test_sigmoid_gate_reproduces_the_lecture_numbers():
    value, dw, dx = _load("sigmoid_gate").main()
    assert float(value) == pytest.approx(0.7310585786)
    np.testing.assert_allclose(dw, [-0.196612, -0.393224, 0.196612], atol=1e-6)
    np.testing.assert_allclose(dx, [0.393224, -0.589836], atol=1e-6)


def test_tape_printout_reaches_the_classic_gradient(capsys):
    value, d1, d2 = _load("tape_printout").main()
    assert value == pytest.approx(np.log(2.0) + 10.0 - np.sin(5.0))
    assert d1 == pytest.approx(5.5) and d2 == pytest.approx(1.716337814536774)
    out = capsys.readouterr().out
    assert "%6 = subtract(%4, %5) : () float64   # tape_printout.py:" in out and "# d%6/d%0 = %15" in out


def test_draw_mlp_writes_the_forward_and_backward_pictures(tmp_path, capsys):
    import xml.etree.ElementTree as ET

    written = _load("draw_mlp").main(tmp_path / "img")
    assert [p.name for p in written] == ["mlp_graph.svg", "mlp_backward.svg"]
    sizes = [len(ET.parse(p).getroot().findall("{http://www.w3.org/2000/svg}g")) for p in written]
    assert 10 < sizes[0] < sizes[1]
    assert "# backward of %14" in capsys.readouterr().out


def test_per_example_gradients_match_a_loop_and_train_privately(capsys):
    result = _load("per_example_gradients").main(epochs=3)
    assert result["max_difference"] < 1e-12  # vmap(grad) is the loop of grad calls, example by example
    assert result["accuracy"] > 0.8  # DP-SGD-style clipped, noised steps still learn the digits
    assert "vmap(grad) vs a loop of 64 grad calls" in capsys.readouterr().out


def test_rnn_scan_trains_compiled_with_one_loop_whatever_the_length(capsys):
    result = _load("rnn_scan").main(steps=150)
    assert result["loss"] < 0.5 * result["trivial"]  # learns more than "the next value is this one"
    lengths = sorted(result["nodes"])
    assert result["nodes"][lengths[0]] == result["nodes"][lengths[1]]  # the scan is one node, not unrolled
    assert "for " in result["source"]
    assert "held-out loss" in capsys.readouterr().out


def test_mle_student_t_fits_with_scipy_optimize_and_exact_gradients(capsys):
    pytest.importorskip("scipy", reason="the example needs scipy (the [scipy] extra)")
    out = _load("mle_student_t").main()
    assert out["result"].success
    assert out["nll"] <= out["scipy_nll"] + 1e-9  # at least as likely as SciPy's own (derivative-free) fit
    est = out["estimate"]
    assert abs(est["loc"] - 1.5) < 0.1 and abs(est["scale"] - 0.8) < 0.1 and abs(est["df"] - 4.0) < 1.5
    assert "mean negative log-likelihood" in capsys.readouterr().out


def test_spectral_loss_descends_to_the_closed_form_minimiser(capsys):
    result = _load("spectral_loss").main()
    losses = result["losses"]
    assert all(a > b for a, b in zip(losses, losses[1:3])) and losses[-1] <= min(losses)
    np.testing.assert_allclose(result["x"], result["exact"], atol=1e-10)
    clean = result["clean"]
    assert np.mean((result["x"] - clean) ** 2) < 0.5 * np.mean((result["y"] - clean) ** 2)
    assert "distance to the closed-form minimiser" in capsys.readouterr().out


def test_dask_logistic_regression_trains_as_numpy_does():
    da = pytest.importorskip("dask.array", reason="the example needs dask (the [dask] extra)")
    example = _load("dask_logistic_regression")
    x, y = example.make_data(rows=2_000, chunk=500)
    losses = example.main(steps=12, data=(x, y))
    assert isinstance(x, da.Array) and losses[-1] < 0.8 * losses[0]
    # the same steps on the computed data in NumPy give the same losses, to rounding
    xs, ys = x.compute(), y.compute()
    w, b, expected = np.zeros(xs.shape[1]), 0.0, []
    for _ in range(12):
        p = 1 / (1 + np.exp(-(xs @ w + b)))
        expected.append(-np.mean(ys * np.log(p) + (1 - ys) * np.log(1 - p)))
        w, b = w - 0.5 * (xs * (p - ys)[:, None]).mean(axis=0), b - 0.5 * (p - ys).mean()
    np.testing.assert_allclose(losses, expected, rtol=1e-10)


def test_dask_logistic_regression_on_a_local_cluster_of_two_workers():
    pytest.importorskip("dask.array", reason="the example needs dask (the [dask] extra)")
    distributed = pytest.importorskip("dask.distributed", reason="the cluster needs distributed (the [dask] extra)")
    example = _load("dask_logistic_regression")
    data = example.make_data(rows=2_000, chunk=500)
    local = example.main(steps=5, data=data)
    # in-process workers keep the test fast; the scheduler and its task placement are dask.distributed's
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        on_cluster = example.main(steps=5, data=data, address=c.scheduler_address)
    np.testing.assert_allclose(on_cluster, local, rtol=1e-12)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "dg.compile"])
def test_out_of_core_gradient_equals_numpy_in_pieces_and_holds_few_chunks(capsys, compiled):
    pytest.importorskip("dask.array", reason="the example needs dask (the [dask] extra)")
    import tracemalloc

    import dask

    example = _load("out_of_core")
    # 128 MB of data in 16 chunks of 8 MB, one task at a time (the synchronous scheduler): tracemalloc sees
    # NumPy's buffers, so its peak shows how many chunks were alive at once (3 here; all 16 when the
    # backward of every chunk waited for the whole forward pass)
    x, y = example.make_data(1 / 8, chunk_mb=8)
    w = 0.1 * example.truth()
    value_and_grad = example.dg.value_and_grad(example.loss)
    value, grad = (example.dg.compile(value_and_grad) if compiled else value_and_grad)(w, x, y)
    tracemalloc.start()
    try:
        value, grad = dask.compute(value, grad, scheduler="synchronous")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert x.numblocks[0] == 16 and peak < 5 * 8 * 2**20, f"peak {peak / 2**20:.1f} MB for 8 MB chunks"
    ref_value, ref_grad = example.gradient_in_pieces(w, 1 / 8, chunk_mb=8)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-12)
    np.testing.assert_allclose(value, ref_value, rtol=1e-12)
    # the command line: the same check, and its exit status
    assert example.main(["--gigabytes", "0.01", "--chunk-mb", "1", "--scheduler", "synchronous"]) == 0
    assert "equals NumPy's, computed in pieces: True" in capsys.readouterr().out
