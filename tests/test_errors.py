"""Bad input gets a clear error naming the op, the shapes or dtypes and the user's line."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg


def _here(offset=1):
    """'test_errors.py:N' for the caller's line plus `offset`."""
    return f"test_errors.py:{sys._getframe(1).f_lineno + offset}"


def test_ragged_data():
    line = _here(2)
    with pytest.raises(ValueError, match="dg.tensor") as info:
        dg.tensor([[1.0, 2.0], [3.0]])
    assert line in str(info.value)


@pytest.mark.parametrize("data", ["abc", ["a", "b"], object(), [1.0, None]])
def test_non_numeric_data(data):
    with pytest.raises(TypeError, match="dg.tensor"):
        dg.tensor(data)


def test_shape_mismatch_names_op_shapes_and_line():
    a, b = dg.tensor(np.ones((2, 3)), requires_grad=True), dg.tensor(np.ones(4))
    line = _here()
    with pytest.raises(ValueError) as info: a + b  # noqa: E701, B018
    message = str(info.value)
    assert "add" in message and "(2, 3)" in message and "(4,)" in message
    assert line in message, message


def test_matmul_mismatch():
    line = _here()
    with pytest.raises(ValueError) as info: dg.tensor(np.ones((2, 3))) @ dg.tensor(np.ones((2, 3)))  # noqa: E701, B018
    message = str(info.value)
    assert "matmul" in message and "(2, 3)" in message and line in message, message


def test_errors_on_plain_arrays_name_the_op_too():
    with pytest.raises(ValueError, match=r"multiply.*\(2,\).*\(3,\)"):
        dg.multiply(np.ones(2), np.ones(3))


def test_reshape_mismatch():
    with pytest.raises(ValueError, match=r"reshape.*\(2, 3\).*\(4,\)"):
        dg.tensor(np.ones((2, 3))).reshape(4)


def test_index_out_of_range_is_an_index_error():
    with pytest.raises(IndexError, match="getitem"):
        dg.tensor([1.0, 2.0, 3.0])[5]


def test_bad_axis():
    with pytest.raises(ValueError, match="sum: axis 3 is out of bounds"):
        dg.sum(dg.tensor(np.ones((2, 2))), axis=3)


def test_failed_op_leaves_inputs_unchanged():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError):
        x * dg.tensor([1.0, 2.0, 3.0])
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_unsupported_dtype_in_op():
    with pytest.raises(TypeError, match="sin"):
        dg.sin(np.array(["a"]))
