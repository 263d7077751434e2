"""Axis, shape and count arguments are checked as NumPy checks them, across the op library.

An axis out of range is NumPy's AxisError (a ValueError and an IndexError), never wrapped
around; a repeated axis is a ValueError; floats and bools are a TypeError, never truncated;
Python and NumPy integers are accepted alike. Every error names the op, the input's shape
and the user's line: here the line of the table row whose one-line lambda made the call.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import dagrad as dg

AxisError = np.exceptions.AxisError
FILE = os.path.basename(__file__)


def _here(offset=1):
    """'test_axes.py:N' for the caller's line plus `offset`."""
    return f"{FILE}:{sys._getframe(1).f_lineno + offset}"


def _line_of(call):
    """'test_axes.py:N' for the line of a table row's one-line lambda: the line that calls dagrad."""
    return f"{FILE}:{call.__code__.co_firstlineno}"


def _values(out):
    if isinstance(out, (list, tuple)):
        return [_values(o) for o in out]
    return out.numpy() if isinstance(out, dg.Tensor) else np.asarray(out)


def _assert_same(got, expected):
    got, expected = _values(got), _values(expected)
    if isinstance(expected, list):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12)
    else:
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@dataclass
class Row:
    op: str  # the name the errors give
    call: object  # call(m, x, axis) with m = dagrad or numpy, on ONE line: its line is the user's line
    shape: tuple
    good: object  # a valid axis, to compare with NumPy
    repeated: object = None  # an axis argument that names one axis twice; None when the op takes one axis
    ref: object = None  # ref(x, axis), where NumPy has no such function
    method: bool = False  # a Tensor method (on an ndarray it would be NumPy's own)

    def __str__(self):
        return f"{self.op}@{self.call.__code__.co_firstlineno}"


S3 = (2, 3, 4)
AXIS_ROWS = [
    # reductions
    Row("sum", lambda m, x, a: m.sum(x, axis=a), S3, 1, (0, -3)),
    Row("mean", lambda m, x, a: m.mean(x, axis=a), S3, 1, (0, -3)),
    Row("prod", lambda m, x, a: m.prod(x, axis=a), S3, 1, (0, -3)),
    Row("max", lambda m, x, a: m.max(x, axis=a), S3, 1, (0, -3)),
    Row("min", lambda m, x, a: m.min(x, axis=a), S3, 1, (0, -3)),
    Row("max", lambda m, x, a: m.amax(x, axis=a), S3, -1, (2, -1)),
    Row("min", lambda m, x, a: m.amin(x, axis=a), S3, -1, (2, -1)),
    Row("var", lambda m, x, a: m.var(x, axis=a), S3, 1, (0, -3)),
    Row("std", lambda m, x, a: m.std(x, axis=a), S3, 1, (0, -3)),
    Row("cumsum", lambda m, x, a: m.cumsum(x, axis=a), S3, 1),
    Row("argmax", lambda m, x, a: m.argmax(x, axis=a), S3, 1),
    Row("argmin", lambda m, x, a: m.argmin(x, axis=a), S3, 2),
    Row("linalg.norm", lambda m, x, a: m.linalg.norm(x, axis=a), S3, 1, (0, -3)),
    Row("linalg.norm", lambda m, x, a: m.linalg.norm(x, ord=1, axis=(a, 0)), S3, 2, 0),
    # ops/nn.py's softmax family goes through the same check
    Row("softmax", lambda m, x, a: m.softmax(x, axis=a), S3, 1, (0, -3), ref=_softmax),
    Row("log_softmax", lambda m, x, a: m.log_softmax(x, axis=a), S3, 1, (0, -3),
        ref=lambda x, a: np.log(_softmax(x, a))),
    Row("logsumexp", lambda m, x, a: m.logsumexp(x, axis=a), S3, 1, (0, -3),
        ref=lambda x, a: np.log(np.exp(x).sum(a))),
    # shape ops
    Row("transpose", lambda m, x, a: m.transpose(x, (a, 0, 1)), S3, 2, 0),
    Row("transpose", lambda m, x, a: m.transpose(x, (1, a, 0)), S3, -1, -2),
    Row("swapaxes", lambda m, x, a: m.swapaxes(x, a, 0), S3, 2),
    Row("swapaxes", lambda m, x, a: m.swapaxes(x, 1, a), S3, -1),
    Row("moveaxis", lambda m, x, a: m.moveaxis(x, a, 0), S3, 2, (0, -3)),
    Row("moveaxis", lambda m, x, a: m.moveaxis(x, 0, a), S3, -1, (1, -2)),
    Row("expand_dims", lambda m, x, a: m.expand_dims(x, a), S3, 3, (0, -5)),
    Row("squeeze", lambda m, x, a: m.squeeze(x, axis=a), (2, 1, 3, 1), 1, (1, -3)),
    Row("flip", lambda m, x, a: m.flip(x, a), S3, 1, (0, -3)),
    Row("concatenate", lambda m, x, a: m.concatenate([x, x], axis=a), S3, 1),
    Row("stack", lambda m, x, a: m.stack([x, x], axis=a), S3, 3),
    Row("split", lambda m, x, a: m.split(x, 2, axis=a), S3, -3),
    Row("repeat", lambda m, x, a: m.repeat(x, 2, axis=a), S3, 1),
    # linear algebra
    Row("tensordot", lambda m, x, a: m.tensordot(x, x, axes=(a, a)), S3, 1, (0, -3)),
    Row("trace", lambda m, x, a: m.trace(x, axis1=a, axis2=0), S3, 2),
    Row("diagonal", lambda m, x, a: m.diagonal(x, axis1=1, axis2=a), S3, -1),
    # Tensor methods (ndarray has them too)
    Row("sum", lambda m, x, a: x.sum(axis=a), S3, 1, (1, 1), method=True),
    Row("max", lambda m, x, a: x.max(axis=a), S3, 1, (1, 1), method=True),
    Row("argmin", lambda m, x, a: x.argmin(axis=a), S3, 0, method=True),
    Row("cumsum", lambda m, x, a: x.cumsum(axis=a), S3, 0, method=True),
    Row("swapaxes", lambda m, x, a: x.swapaxes(a, 0), S3, 2, method=True),
    Row("transpose", lambda m, x, a: x.transpose(a, 0, 1), S3, 2, 0, method=True),
    Row("squeeze", lambda m, x, a: x.squeeze(a), (2, 1, 3, 1), 3, (3, -1), method=True),
    Row("any", lambda m, x, a: (x > 0).any(axis=a), S3, 1, (0, -3), method=True),
    Row("all", lambda m, x, a: (x > 0).all(axis=a), S3, -1, (1, 1), method=True),
]
INPUTS = {"array": lambda x: x, "Tensor": lambda x: dg.tensor(x, requires_grad=True)}
# (row, input kind): each function on an ndarray and on a Tensor, each method on a Tensor
ROW_INPUTS = [pytest.param(row, wrap, id=f"{row}-{kind}") for row in AXIS_ROWS for kind, wrap in INPUTS.items()
              if not (row.method and kind == "array")]
WITH_REPEATS = [p for p in ROW_INPUTS if p.values[0].repeated is not None]


def _data(shape):
    return np.random.default_rng(0).uniform(0.5, 2.0, size=shape)


def _raises(kind, row, x, axis, *texts):
    """The error `row` raises for `axis`: of `kind`, naming the op, the shape and the row's line."""
    with pytest.raises(kind) as info:
        row.call(dg, x, axis)
    message = str(info.value)
    assert f"{row.op}: " in message, message
    assert str(row.shape) in message, message
    assert _line_of(row.call) in message, message
    for text in texts:
        assert text in message, message
    return info.value


@pytest.mark.parametrize("axis", [7, -7])
@pytest.mark.parametrize("row, wrap", ROW_INPUTS)
def test_out_of_range_axis_is_numpys_axis_error(row, wrap, axis):
    x = _data(row.shape)
    err = _raises(AxisError, row, wrap(x), axis, f"axis {axis} is out of bounds")
    assert isinstance(err, ValueError) and isinstance(err, IndexError)
    if row.ref is None:  # NumPy refuses the same call: AxisError (a plain IndexError from split and tensordot)
        with pytest.raises(IndexError):
            row.call(np, x, axis)


@pytest.mark.parametrize("axis", [1.0, 1.5, np.float64(1.0)])
@pytest.mark.parametrize("row", AXIS_ROWS, ids=str)
def test_float_axis_is_a_type_error(row, axis):
    _raises(TypeError, row, dg.tensor(_data(row.shape)), axis, "object cannot be interpreted as an integer")


@pytest.mark.parametrize("axis", [True, np.True_])
@pytest.mark.parametrize("row", AXIS_ROWS, ids=str)
def test_bool_axis_is_a_type_error(row, axis):
    _raises(TypeError, row, dg.tensor(_data(row.shape)), axis, "bool")


@pytest.mark.parametrize("kind", [np.int64, np.int32, np.intp, np.uint8, np.array])
@pytest.mark.parametrize("row", AXIS_ROWS, ids=str)
def test_numpy_integer_axis_gives_numpys_result(row, kind):
    x = _data(row.shape)
    if kind is np.uint8 and row.good < 0:
        kind = np.int8
    axis = kind(row.good)
    expected = row.ref(x, row.good) if row.ref is not None else row.call(np, x, row.good)
    _assert_same(row.call(dg, x, axis), expected)
    _assert_same(row.call(dg, dg.tensor(x), axis), expected)
    _assert_same(row.call(dg, x, row.good), expected)  # and a Python int gives the same


@pytest.mark.parametrize("row, wrap", WITH_REPEATS)
def test_repeated_axis_is_a_value_error(row, wrap):
    err = _raises(ValueError, row, wrap(_data(row.shape)), row.repeated, "repeated axis")
    assert not isinstance(err, AxisError)


@pytest.mark.parametrize("axes", [(0, 5), (5, 0), (0, -3)])
def test_transpose_no_longer_wraps_axes_around(axes):
    # issue 12: (0, 5) returned x and (5, 0) returned x.T
    x = dg.tensor(np.ones((2, 3)))
    line = _here()
    with pytest.raises(AxisError) as info: dg.transpose(x, axes)  # noqa: E701
    message = str(info.value)
    assert "transpose: axis" in message and "(2, 3) float64" in message and line in message, message


def test_transpose_axes_must_be_a_permutation():
    x = dg.tensor(np.ones((2, 3)))
    line = _here()
    with pytest.raises(ValueError, match=r"transpose: axes \(0,\) do not match an array of dimension 2") as info: dg.transpose(x, (0,))  # noqa: E501, E701
    assert line in str(info.value)


def test_float_shape_is_refused_not_truncated():
    # issue 12: reshape(x, (2.5, 3)) gave a (2, 3) result
    line = _here()
    with pytest.raises(TypeError, match=r"reshape: size 2.5 in \(2.5, 3\): 'float' object cannot be interpreted") as info: dg.reshape(dg.tensor(np.ones(6)), (2.5, 3))  # noqa: E501, E701
    assert line in str(info.value) and "(6,) float64" in str(info.value)


def test_numpy_integer_axis_was_not_iterable():
    # issue 12: axis=np.int64(0) failed with "'numpy.int64' object is not iterable"
    np.testing.assert_array_equal(dg.sum(dg.tensor(np.ones((2, 3))), axis=np.int64(0)).numpy(), [2.0, 2.0, 2.0])


def test_static_graph_axis_errors_name_the_line_where_the_node_is_built():
    g = dg.Graph()
    with g:
        p = dg.placeholder(shape=(None, 3), dtype="float64", name="p")
        with pytest.raises(AxisError) as info:
            dg.sum(p, axis=2)
        assert _here(-1) in str(info.value) and "(None, 3)" in str(info.value)
        with pytest.raises(ValueError, match="repeated axis 1") as info:
            dg.transpose(p, (1, -1))
        assert _here(-1) in str(info.value)
        with pytest.raises(TypeError, match="reshape") as info:
            dg.reshape(p, (-1, 1.5))
        assert _here(-1) in str(info.value)
        assert dg.sum(p, axis=np.int64(1)).shape == (None,)


def test_compiled_function_axis_error_names_the_line_inside_it():
    def f(x):
        return dg.sum(x, axis=5)

    line = f"{FILE}:{f.__code__.co_firstlineno + 1}"
    with pytest.raises(AxisError) as info:
        dg.compile(f)(np.ones((2, 3)))
    assert "sum: axis 5" in str(info.value) and line in str(info.value)


# -- shape, size and count arguments
@dataclass
class SizeRow:
    op: str
    call: object  # call(m, x, n) on ONE line
    good: object  # a valid integer
    negative: object = None  # a negative value the op refuses (None: negative values are valid or not tried)
    shape: tuple = (2, 3)

    def __str__(self):
        return f"{self.op}@{self.call.__code__.co_firstlineno}"


SIZE_ROWS = [
    SizeRow("reshape", lambda m, x, n: m.reshape(x, (n, 3)), 2, -2),
    SizeRow("reshape", lambda m, x, n: m.reshape(x, n), 6, -6),
    SizeRow("reshape", lambda m, x, n: x.reshape(3, n), 2, -2),
    SizeRow("broadcast_to", lambda m, x, n: m.broadcast_to(x, (n, 2, 3)), 4, -1),
    SizeRow("tile", lambda m, x, n: m.tile(x, (n, 1)), 2, -1),
    SizeRow("tile", lambda m, x, n: m.tile(x, n), 3, -1),
    SizeRow("repeat", lambda m, x, n: m.repeat(x, n, axis=0), 2, -1),
    SizeRow("repeat", lambda m, x, n: m.repeat(x, [n, 1], axis=0), 2, -1),
    SizeRow("repeat", lambda m, x, n: m.repeat(x, n), 0, -2),
    SizeRow("split", lambda m, x, n: m.split(x, n, axis=1), 3, -1),
    SizeRow("split", lambda m, x, n: m.split(x, [n], axis=1), 1),
    SizeRow("pad", lambda m, x, n: m.pad(x, n), 1, -1),
    SizeRow("pad", lambda m, x, n: m.pad(x, ((n, 0), (0, 1))), 2, -1),
    SizeRow("diag", lambda m, x, n: m.diag(x, n), 1),
    SizeRow("diagonal", lambda m, x, n: m.diagonal(x, n), -1),
    SizeRow("trace", lambda m, x, n: m.trace(x, n), 1),
    SizeRow("triu", lambda m, x, n: m.triu(x, n), 1),
    SizeRow("tril", lambda m, x, n: m.tril(x, n), -1),
    SizeRow("tensordot", lambda m, x, n: m.tensordot(x, x, axes=n), 0, -1),
]
NEGATIVE_ROWS = [r for r in SIZE_ROWS if r.negative is not None]


def _size_raises(kind, row, x, n, *texts):
    with pytest.raises(kind) as info:
        row.call(dg, x, n)
    message = str(info.value)
    assert f"{row.op}: " in message and str(row.shape) in message and _line_of(row.call) in message, message
    for text in texts:
        assert text in message, message


@pytest.mark.parametrize("kind", [float, np.float64])
@pytest.mark.parametrize("row", SIZE_ROWS, ids=str)
def test_float_sizes_are_a_type_error_not_truncated(row, kind):
    # an exact float too: NumPy refuses 2.0 as a size, whatever its value
    for n in (kind(row.good), kind(row.good) + 0.5):
        _size_raises(TypeError, row, dg.tensor(_data(row.shape)), n, "float")


@pytest.mark.parametrize("row", SIZE_ROWS, ids=str)
def test_bool_sizes_are_a_type_error(row):
    _size_raises(TypeError, row, dg.tensor(_data(row.shape)), True, "bool")


@pytest.mark.parametrize("row", NEGATIVE_ROWS, ids=str)
def test_negative_sizes_are_a_value_error(row):
    _size_raises(ValueError, row, dg.tensor(_data(row.shape)), row.negative, str(row.negative))


@pytest.mark.parametrize("kind", [np.int64, np.int32, np.uint8, np.array])
@pytest.mark.parametrize("row", SIZE_ROWS, ids=str)
def test_numpy_integer_sizes_give_numpys_result(row, kind):
    x = _data(row.shape)
    if kind is np.uint8 and row.good < 0:
        kind = np.int8
    expected = row.call(np, x, row.good)
    _assert_same(row.call(dg, x, kind(row.good)), expected)
    _assert_same(row.call(dg, dg.tensor(x), kind(row.good)), expected)


@pytest.mark.parametrize("shape", [(-1, -1), (-1, 2, -1), (-1, -2)])
def test_reshape_takes_one_minus_one_only(shape):
    x = dg.tensor(np.ones((2, 3)))
    line = _here()
    with pytest.raises(ValueError) as info: dg.reshape(x, shape)  # noqa: E701
    message = str(info.value)
    assert "reshape: " in message and "(2, 3) float64" in message and line in message, message


def test_reshape_minus_one_beside_a_zero_size_is_an_error_not_a_division_by_zero():
    line = _here()
    with pytest.raises(ValueError, match=r"reshape: cannot reshape shape \(6,\) into shape \(0, -1\)") as info: dg.reshape(np.ones(6), (0, -1))  # noqa: E501, E701
    assert line in str(info.value)
    assert dg.reshape(np.ones(0), (3, 0)).shape == (3, 0)


def test_size_arguments_accept_integer_arrays_as_numpy():
    x = np.arange(6.0)
    _assert_same(dg.reshape(dg.tensor(x), np.array([3, 2])), x.reshape(3, 2))
    _assert_same(dg.tile(x, np.array([2, 1])), np.tile(x, np.array([2, 1])))
    _assert_same(dg.repeat(x, np.arange(6)), np.repeat(x, np.arange(6)))
    _assert_same(dg.pad(x, np.array([1, 2])), np.pad(x, np.array([1, 2])))


def test_split_into_zero_sections_and_repeats_of_the_wrong_length():
    x = dg.tensor(np.ones((2, 4)))
    line = _here()
    with pytest.raises(ValueError, match="split: the number of sections must be larger than 0") as info: dg.split(x, 0)  # noqa: E501, E701
    assert line in str(info.value)
    line = _here()
    with pytest.raises(ValueError, match="repeat: 3 repeats do not match axis 1 of size 4") as info: dg.repeat(x, [1, 2, 3], axis=1)  # noqa: E501, E701
    assert line in str(info.value)


# -- max, min, argmax, argmin of nothing
EXTREMA = ["max", "min", "amax", "amin", "argmax", "argmin"]
_OP_NAME = {"amax": "max", "amin": "min"}  # NumPy's aliases


@pytest.mark.parametrize("wrap", INPUTS.values(), ids=INPUTS.keys())
@pytest.mark.parametrize("axis", [None, 0, -2])
@pytest.mark.parametrize("name", EXTREMA)
def test_extremum_of_an_empty_axis_is_a_clear_error(name, axis, wrap):
    x = np.ones((0, 3))
    with pytest.raises(ValueError):  # NumPy refuses too
        getattr(np, name)(x, axis=axis)
    line = _here()
    with pytest.raises(ValueError) as info: getattr(dg, name)(wrap(x), axis=axis)  # noqa: E701
    message = str(info.value)
    assert f"{_OP_NAME.get(name, name)}: zero-size reduction" in message, message
    assert "(0, 3) float64" in message and line in message, message


@pytest.mark.parametrize("name", EXTREMA)
def test_extremum_over_a_non_empty_axis_of_an_empty_array_is_empty_as_numpy(name):
    x = np.ones((0, 3))
    _assert_same(getattr(dg, name)(dg.tensor(x), axis=1), getattr(np, name)(x, axis=1))


def test_extremum_method_of_an_empty_tensor_names_the_line():
    t = dg.tensor(np.ones((2, 0)))
    line = _here()
    with pytest.raises(ValueError, match=r"max: zero-size reduction over axis 1 of size 0") as info: t.max(axis=1)  # noqa: E701
    assert line in str(info.value)


def test_numpy_integers_are_recorded_as_python_ints():
    # the recorded attrs are what static graphs, the compile cache and generated source see
    t = dg.tensor(np.ones((2, 3, 4)), requires_grad=True)
    recorded = [
        (dg.sum(t, axis=np.int64(1)), "axis", (1,)),
        (dg.max(t, axis=(np.int32(-1), np.int64(0))), "axis", (0, 2)),
        (dg.transpose(t, np.array([2, 0, 1])), "axes", (2, 0, 1)),
        (dg.reshape(t, (np.int64(4), np.int64(-1))), "shape", (4, 6)),
        (dg.broadcast_to(t, (np.uint8(5), 2, 3, 4)), "shape", (5, 2, 3, 4)),
        (dg.cumsum(t, axis=np.array(2)), "axis", 2),
    ]
    for out, name, expected in recorded:
        value = out.attrs[name]
        assert value == expected, (out.op.name, value)
        assert all(type(v) is int for v in (value if isinstance(value, tuple) else (value,))), (out.op.name, value)
