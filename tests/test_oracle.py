"""The oracle tier: values, gradients and second derivatives compared with PyTorch.

Skipped when torch is not installed (the [dev] extra installs torch==2.13.0).
"""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
from op_table import CASES

torch = pytest.importorskip("torch", reason="the oracle tier needs torch (pip install -e '.[dev]')")
pytestmark = pytest.mark.oracle

ORACLE = [c for c in CASES if c.torch_ref is not None]


@pytest.mark.parametrize("c", ORACLE, ids=[str(c) for c in ORACLE])
def test_values_and_gradients_match_torch(c):
    xs = c.inputs(seed=7)
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    expected = c.torch_ref(*ts)
    ds = [dg.tensor(x, requires_grad=True) for x in xs]
    got = c.f(*ds)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    u = np.random.default_rng(8).standard_normal(got.shape)
    expected.backward(torch.tensor(u))
    got.backward(u)
    for d, t in zip(ds, ts):
        want = np.zeros(d.shape) if t.grad is None else t.grad.numpy()
        have = np.zeros(d.shape) if d.grad is None else d.grad.numpy()
        np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("c", ORACLE, ids=[str(c) for c in ORACLE])
def test_hessian_vector_products_match_torch(c):
    xs = c.inputs(seed=9)
    rng = np.random.default_rng(10)
    u = rng.standard_normal(np.shape(c.ref(*xs)))
    vs = [rng.standard_normal(np.shape(x)) for x in xs]
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    scalar = (c.torch_ref(*ts) * torch.tensor(u)).sum()
    grads = torch.autograd.grad(scalar, ts, create_graph=True, allow_unused=True)
    pairs = [(g, v) for g, v in zip(grads, vs) if g is not None and g.requires_grad]
    if not pairs:
        return  # linear: no second derivative
    dot = sum((g * torch.tensor(v)).sum() for g, v in pairs)
    want = torch.autograd.grad(dot, ts, allow_unused=True)
    ds = [dg.tensor(x, requires_grad=True) for x in xs]
    dg.sum(c.f(*ds) * u).backward(create_graph=True)
    first = [d.grad for d in ds]
    for d in ds:
        d.grad = None
    terms = [dg.sum(g * v) for g, v in zip(first, vs) if g is not None and g.requires_grad]
    if terms:  # otherwise dagrad knows the gradient is constant: its derivative is zero
        sum(terms).backward()
    for d, w in zip(ds, want):
        have = np.zeros(d.shape) if d.grad is None else d.grad.numpy()
        np.testing.assert_allclose(have, np.zeros(d.shape) if w is None else w.numpy(force=True), rtol=1e-9, atol=1e-11)
