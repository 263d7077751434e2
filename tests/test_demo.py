"""The demo: `dagrad demo` trains a CNN and an MLP on the 8x8 digits and writes its results."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

import dagrad as dg
from dagrad.__main__ import main
from dagrad.data import load_digits
from dagrad.demo import cnn, run, split


def test_the_split_is_stratified_and_disjoint():
    images, labels = load_digits()
    (x_train, y_train), (x_test, y_test) = split(images, labels)
    assert len(y_train) + len(y_test) == 1797
    assert np.all(np.abs(np.bincount(y_test) - 0.2 * np.bincount(labels)) <= 1)
    train_rows = {x.tobytes() for x in x_train}
    assert sum(x.tobytes() in train_rows for x in x_test) < 5  # (a few digits are drawn identically)


def test_a_short_run_writes_weights_curves_and_the_graph(tmp_path, capsys):
    results = run(tmp_path, epochs=(1, 1))
    assert set(results) == {"CNN", "MLP"} and all(0.5 < acc <= 1.0 for acc in results.values())
    out = capsys.readouterr().out
    assert "CNN: held-out accuracy" in out and "MLP: held-out accuracy" in out
    ET.parse(tmp_path / "cnn_graph.svg")  # a valid SVG
    assert (tmp_path / "loss_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    model = cnn()
    model.load_state_dict(dg.load(tmp_path / "cnn.npz"))  # the weights load back into the model


def test_the_full_demo_reaches_97_percent_with_the_cnn(tmp_path, capsys):
    results = run(tmp_path)  # the default epochs: what `dagrad demo` does (a few seconds)
    assert results["CNN"] >= 0.97, results
    assert results["MLP"] >= 0.95, results


def test_the_command_line(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--epochs", "1", "1"]) == 0
    assert (tmp_path / "mlp.npz").exists()
    assert main(["tour"]) == 0
    assert "gradcheck" in capsys.readouterr().out
