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
