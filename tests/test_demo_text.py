"""The second demo: `dagrad demo text` trains a character-level Transformer and an LSTM on dagrad's docs."""

from __future__ import annotations

import importlib.machinery
import math
import sys
import types

import numpy as np
import pytest

import dagrad as dg
from dagrad.__main__ import main
from dagrad.data import load_docs
from dagrad.demo_text import (
    CONTEXT,
    CharLSTM,
    CharTransformer,
    decode,
    generate,
    problem,
    run,
    split,
    unigram_loss,
    vocabulary,
    windows,
)

TINY = (16, 16)  # the widths of a quick run


def test_the_text_encodes_splits_and_cuts_into_windows():
    text = load_docs()
    chars, ids = vocabulary(text)
    assert decode(chars, ids) == text
    train, test = split(ids)
    assert len(train) + len(test) == len(ids) and 0.08 < len(test) / len(ids) < 0.12
    assert decode(chars, test[:4096]) == text[9 * 4096:10 * 4096]  # the tenth block is held out
    x, y = windows(train, CONTEXT, offset=5)
    assert x.shape == y.shape == ((len(train) - 5) // (CONTEXT + 1), CONTEXT)
    assert np.array_equal(x[:, 1:], y[:, :-1]) and np.array_equal(x[0], train[5:5 + CONTEXT])
    # the baseline: the training text's character frequencies, scored on the held-out text
    assert 2.5 < unigram_loss(train, test, len(chars)) < math.log(len(chars))


def test_the_transformer_sees_no_later_character_and_compiles_to_the_same_logits():
    dg.nn.init.manual_seed(0)
    chars, ids = vocabulary(load_docs())
    model = CharTransformer(len(chars), width=16)
    a = ids[None, :CONTEXT]
    b = a.copy()
    b[0, 20:] = ids[1000:1000 + CONTEXT - 20]  # other characters from position 20 on
    logits_a, logits_b = model(a).numpy(), model(b).numpy()
    np.testing.assert_allclose(logits_a[0, :20], logits_b[0, :20], rtol=1e-12, atol=1e-12)
    assert not np.allclose(logits_a[0, 20:], logits_b[0, 20:])
    np.testing.assert_allclose(dg.compile(model)(a), logits_a, rtol=1e-12, atol=1e-12)


def test_a_short_run_writes_weights_curves_and_samples_and_the_loss_decreases(tmp_path, capsys):
    results = run(tmp_path, steps=6, widths=TINY)
    chars, ids = vocabulary(load_docs())
    for name in ("Transformer", "LSTM"):
        losses, held = results[name]["losses"], results[name]["held_out"]
        assert len(losses) == 6 and len(held) == 1
        assert np.mean(losses[-2:]) < losses[0] - 0.2, losses  # from log(110) = 4.7 on
        assert held[0] < losses[0]
    assert results["unigram"]["held_out"] == [unigram_loss(*split(ids), len(chars))]
    out = capsys.readouterr().out
    assert "Transformer: held-out loss" in out and "LSTM:        held-out loss" in out and "perplexity" in out
    assert out.count("\nThe gradient of ") == 2  # a sample of each model, from the prompt
    assert (tmp_path / "loss_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the weights load back into the models
    CharTransformer(len(chars), TINY[0]).load_state_dict(dg.load(tmp_path / "transformer.npz"))
    CharLSTM(len(chars), TINY[1]).load_state_dict(dg.load(tmp_path / "lstm.npz"))


def test_a_sample_continues_the_prompt_with_the_texts_characters():
    dg.nn.init.manual_seed(0)
    chars, _ = vocabulary(load_docs())
    model = CharLSTM(len(chars), 8)
    sample = generate(model, chars, "dg.", length=50, temperature=0.5, seed=1)
    assert sample.startswith("dg.") and len(sample) == 53 and set(sample) <= set(map(chr, chars))
    assert sample == generate(model, chars, "dg.", length=50, temperature=0.5, seed=1)  # the seed decides


def _fake_cupy(gpus):
    module = types.ModuleType("cupy")
    module.__spec__ = importlib.machinery.ModuleSpec("cupy", None)

    def count():
        if isinstance(gpus, Exception):
            raise gpus
        return gpus

    module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=count))
    return module


@pytest.mark.parametrize("cupy, kind, words", [
    (None, ImportError, "pip install 'dagrad[cupy]'"),
    (_fake_cupy(0), RuntimeError, "CuPy sees no CUDA GPU"),
    (_fake_cupy(RuntimeError("cudaErrorNoDevice")), RuntimeError, "CuPy sees no CUDA GPU (or no driver)"),
    (_fake_cupy(1), NotImplementedError, "dagrad's nn layers cannot run on the GPU yet"),
])
def test_device_cuda_says_what_is_missing(monkeypatch, tmp_path, cupy, kind, words):
    monkeypatch.setitem(sys.modules, "cupy", cupy)  # None: `import cupy` raises ImportError
    with pytest.raises(kind, match="dagrad demo text: --device cuda") as info:
        run(tmp_path / "out", device="cuda")
    assert words in str(info.value) and "test_demo_text.py" in str(info.value)  # the caller's line
    assert not (tmp_path / "out").exists()  # refused before anything is made


@pytest.mark.parametrize("arguments, words", [
    ({"device": "tpu"}, "--device must be cpu or cuda, got 'tpu'"),
    ({"prompt": "x€y"}, "the prompt has characters that dagrad's docs never use: '€'"),
    ({"prompt": ""}, "the prompt is empty"),
    ({"steps": 0}, "steps must be an integer of at least 1, got 0"),
    ({"epochs": (3, 0)}, "epochs must be two integers of at least 1"),
    ({"epochs": 3}, "(the Transformer's, the LSTM's), got 3"),
    ({"temperature": 0.0}, "the temperature must be positive, got 0.0"),
    ({"seed": -1}, "the seed must be an integer of at least 0, got -1"),
    ({"steps": True}, "steps must be an integer of at least 1, got True"),
])
def test_bad_arguments_are_refused_before_anything_is_made(tmp_path, arguments, words):
    with pytest.raises(ValueError, match="dagrad demo text") as info:
        run(tmp_path / "out", **arguments)
    assert words in str(info.value)
    assert not (tmp_path / "out").exists()
    assert words in problem(**arguments)[1]  # what the command line prints


def test_the_command_line(tmp_path, capsys, monkeypatch):
    assert main(["demo", "text", "--out", str(tmp_path), "--steps", "1", "--seed", "3", "--prompt", "Tensor",
                 "--temperature", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "\nTensor" in out and "at temperature 0.5" in out and (tmp_path / "lstm.npz").exists()
    monkeypatch.setitem(sys.modules, "cupy", None)
    for argv, words in [(["demo", "text", "--device", "cuda"], "pip install 'dagrad[cupy]'"),
                        (["demo", "--out", str(tmp_path), "text"], "the text demo's options go after `text`"),
                        (["demo", "text", "--steps", "0"], "steps must be an integer of at least 1")]:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2 and words in capsys.readouterr().err
