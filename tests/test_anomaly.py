"""dg.detect_anomaly: the first NaN or Inf raises, naming the op, the line and the input."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg


def test_a_forward_op_that_makes_an_inf_from_finite_inputs_is_named_with_its_line():
    x = dg.tensor([1.0, 0.0], requires_grad=True)
    with dg.detect_anomaly(), np.errstate(divide="ignore"), pytest.raises(FloatingPointError,
                                            match=r"log produced -inf \(element 1\) from finite inputs.*test_anomaly"):
        dg.log(x)


def test_a_non_finite_input_is_named():
    with dg.detect_anomaly(), pytest.raises(FloatingPointError, match=r"exp produced nan.*input 0 was already"):
        dg.exp(dg.tensor([np.nan, 1.0]))


def test_a_backward_nan_names_the_op_its_forward_line_and_the_input():
    x = dg.tensor([4.0, 0.0], requires_grad=True)
    with dg.detect_anomaly():
        y = dg.sqrt(x).sum()  # finite forward: sqrt(0) = 0
        with pytest.raises(FloatingPointError, match=r"gradient of sqrt with respect to its input 0 is inf "
                                                     r"\(element 1\); the sqrt was run at .*test_anomaly.py:\d+"):
            with np.errstate(divide="ignore"):
                y.backward()


def test_under_transforms():
    with dg.detect_anomaly(), np.errstate(divide="ignore"):
        with pytest.raises(FloatingPointError, match="log produced -inf"):
            dg.grad(lambda x: dg.sum(dg.log(x)))(np.array([1.0, 0.0]))
        with pytest.raises(FloatingPointError, match="gradient of sqrt"):
            dg.grad(lambda x: dg.sum(dg.sqrt(x)))(np.array([1.0, 0.0]))


def test_off_by_default_and_after_the_block():
    assert not dg.is_anomaly_enabled()
    with dg.detect_anomaly():
        assert dg.is_anomaly_enabled()
    assert not dg.is_anomaly_enabled()
    with np.errstate(divide="ignore"):
        assert np.isneginf(dg.log(dg.tensor([0.0])).numpy()[0])  # no error outside the block
