"""Dask arrays as a Tensor's value, in eager mode (issue 17's foundation): every differentiable row of the op
table on chunked Dask inputs stays lazy through the forward pass and `backward` (no compute happens: the
scheduler refuses), and equals NumPy's once computed."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="Dask is an optional extra: pip install dagrad[dask]")
import dask  # noqa: E402

import dagrad as dg  # noqa: E402
from op_table import CASES, COMPOSITES  # noqa: E402

ALL = [c for c in CASES + COMPOSITES if c.differentiable]

# Rows that cannot run on Dask values yet, by op name, with the reason (each is tested to refuse clearly
# or is listed in docs/backends.md)
NOT_YET = {}

ROWS = [c for c in ALL if c.op not in NOT_YET]


def _forbidden(*args, **kwargs):
    raise AssertionError("a Dask array was computed where it should have stayed lazy")


def _lazy():
    """Inside: any compute of a Dask array fails the test (the scheduler itself refuses)."""
    return dask.config.set(scheduler=_forbidden)


def _chunked(x):
    """`x` as a Dask array of at least 2 chunks along its first axis of size 2 or more (one chunk if none)."""
    chunks = list(x.shape)
    for axis, n in enumerate(x.shape):
        if n >= 2:
            chunks[axis] = (n + 1) // 2
            break
    return da.from_array(x, chunks=tuple(chunks) or ())


@pytest.mark.parametrize("c", ROWS, ids=[str(c) for c in ROWS])
def test_op_table_row_on_dask_values_and_backward(c):
    xs = c.inputs(seed=2)
    ts = [dg.tensor(_chunked(x), requires_grad=True) for x in xs]
    cotangent = np.random.default_rng(3).standard_normal(np.shape(c.ref(*xs)))
    with _lazy():
        out = c.f(*ts)
        assert isinstance(out._value, da.Array)
        out.backward(cotangent)
        for t in ts:
            assert t.grad is None or isinstance(t.grad._value, da.Array)
    np.testing.assert_allclose(out._value.compute(), c.ref(*xs), rtol=1e-12, atol=1e-12)
    expected = [dg.tensor(x, requires_grad=True) for x in xs]
    c.f(*expected).backward(cotangent)
    for t, e in zip(ts, expected):
        assert (t.grad is None) == (e.grad is None)
        if t.grad is not None:
            got = t.grad._value.compute()
            assert got.shape == e.grad.shape and got.dtype == e.grad.dtype
            np.testing.assert_allclose(got, e.grad.numpy(), rtol=1e-10, atol=1e-12)
