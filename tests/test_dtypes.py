"""Declared dtype rules (src/dagrad/_core/dtypes.py) against what the ops really return.

Every op declares the dtype of its result beside its shape rule, so a static graph's node knows its
dtype without running anything. Here every row of the op table is built as a graph from placeholders
of each dtype, run node by node with the ops' own forwards, and each node's declared dtype must be
the dtype of the value it computes. A rule that refuses some dtypes must refuse only what eager mode
refuses too.
"""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
from dagrad._core.ir import Symbol
from dagrad._core.op import REGISTRY
from op_table import CASES

DTYPES = [np.bool_, np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64, np.complex64,
          np.complex128]


def _run(graph, feeds):
    """Each node's value, computed node by node with the ops' own forwards."""
    env = dict(feeds)
    for node in graph.nodes:
        if node not in env:
            if node.op is None:
                env[node] = node._data
            else:
                args = [env[a] if isinstance(a, Symbol) else a for a in node.inputs]
                env[node] = node.op.forward(*args, **(node.attrs or {}))
    return env


def _inputs(case, dtype):
    values = case.inputs(seed=1, dtype=np.float64)
    if dtype is np.bool_:
        return [v > 0 for v in values]
    if np.dtype(dtype).kind in "iu":
        return [np.round(np.abs(v) if np.dtype(dtype).kind == "u" else v).astype(dtype) for v in values]
    if np.dtype(dtype).kind == "c":
        return [(v + 0.5j * v[::-1] if v.ndim else v + 0.5j).astype(dtype) for v in values]
    return [v.astype(dtype) for v in values]


def _checked(case, dtype):
    """(op, declared, actual) for each node the row builds, or None when eager mode refuses the dtype."""
    values = _inputs(case, dtype)
    with dg.Graph() as g:
        xs = [dg.placeholder(v.shape, v.dtype) for v in values]
        try:
            case.f(*xs)
        except (TypeError, ValueError) as err:
            # refused while building: eager mode must refuse these values too
            with pytest.raises((TypeError, ValueError)), np.errstate(all="ignore"):
                case.f(*[dg.tensor(v) for v in values])
            return [("refused", str(err))]
    try:
        with np.errstate(all="ignore"):
            env = _run(g, zip(xs, values))
    except Exception:
        return None  # the op has no loop or no meaning for these values: nothing to compare
    return [(n.op.name, n.dtype, np.asarray(env[n]).dtype) for n in g.nodes if n.op is not None]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_declared_dtypes_match_the_forward(case):
    wrong = []
    for dtype in DTYPES:
        for row in _checked(case, dtype) or ():
            if row[0] != "refused" and row[1] != row[2]:
                wrong.append(f"{np.dtype(dtype)} inputs: {row[0]} declares {row[1]}, computes {row[2]}")
    assert not wrong, "\n".join(wrong)


BINARY = [dg.add, dg.subtract, dg.multiply, dg.divide, dg.power, dg.maximum, dg.minimum, dg.mod, dg.arctan2,
          dg.hypot, dg.fmax, dg.fmin, dg.equal, dg.less, dg.logical_and]


@pytest.mark.parametrize("f", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("scalar", [2, 2.5, True])
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32])
def test_python_numbers_are_weakly_typed(f, scalar, dtype):
    """float32 + 2.5 is float32 in NumPy 2 (a Python number takes the array's type): so is the declared rule."""
    x = np.ones(3, dtype)
    with np.errstate(all="ignore"):
        try:
            expected = np.asarray(f.op.forward(x, scalar)).dtype
        except Exception:
            expected = None  # NumPy refuses (e.g. int8 ** 2.5 is fine, but a bool with some ufuncs is not)
    with dg.Graph():
        p = dg.placeholder((3,), dtype)
        if expected is None:
            with pytest.raises(TypeError):
                f(p, scalar)
            return
        assert f(p, scalar).dtype == expected
        assert f(scalar, p).dtype == np.asarray(f.op.forward(scalar, x)).dtype


def test_every_registered_op_declares_a_dtype_rule():
    assert [name for name, op in REGISTRY.items() if op.dtype is None] == []


def test_a_refused_dtype_is_refused_where_the_graph_is_built():
    with dg.Graph():
        x = dg.placeholder((2,), np.bool_)
        with pytest.raises(TypeError, match=r"sign: .*bool.* at .*test_dtypes\.py"):
            dg.sign(x)
