"""PyTorch's function names (dg.cat, dg.mm, dg.clamp, ...) and methods (view_as, type_as, ...) against torch."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def _pair(a):
    return dg.tensor(a, requires_grad=a.dtype.kind == "f"), torch.tensor(a, requires_grad=a.dtype.kind == "f")


CASES = [
    ("mm", lambda lib, a, b: lib.mm(a, b), [(3, 4), (4, 2)]),
    ("bmm", lambda lib, a, b: lib.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    ("cat dim=1", lambda lib, a, b: lib.cat([a, b], dim=1), [(2, 3), (2, 1)]),
    ("clamp", lambda lib, a: lib.clamp(a, min=-0.5, max=0.5), [(3, 4)]),
    ("clamp min only", lambda lib, a: lib.clamp(a, min=0.0), [(3, 4)]),
    ("flatten(1)", lambda lib, a: lib.flatten(a, 1), [(2, 3, 4)]),
    ("unsqueeze", lambda lib, a: lib.unsqueeze(a, -1), [(2, 3)]),
    ("t", lambda lib, a: lib.t(a), [(2, 3)]),
    ("permute", lambda lib, a: lib.permute(a, (2, 0, 1)), [(2, 3, 4)]),
    ("narrow", lambda lib, a: lib.narrow(a, 1, 1, 2), [(2, 4)]),
    ("narrow negative start", lambda lib, a: lib.narrow(a, 0, -2, 2), [(5, 2)]),
    ("chunk", lambda lib, a: lib.chunk(a, 3, dim=1)[1], [(2, 7)]),
    ("chunk last", lambda lib, a: lib.chunk(a, 3, dim=1)[-1], [(2, 7)]),
    ("neg", lambda lib, a: lib.neg(a), [(3,)]),
    ("pow", lambda lib, a: lib.pow(a, 3), [(3,)]),
    ("softmax dim", lambda lib, a: lib.softmax(a, dim=1), [(2, 5)]),
    ("log_softmax dim", lambda lib, a: lib.log_softmax(a, dim=0), [(4, 3)]),
    ("logsumexp dim", lambda lib, a: lib.logsumexp(a, dim=1), [(2, 5)]),
    ("x.softmax(dim)", lambda lib, a: a.softmax(dim=-1), [(2, 5)]),
    ("x.view_as", lambda lib, a, b: a.view_as(b) * b, [(2, 6), (3, 4)]),
    ("x.expand_as", lambda lib, a, b: a.expand_as(b) * b, [(1, 4), (3, 4)]),
    ("x.mm", lambda lib, a, b: a.mm(b), [(3, 4), (4, 2)]),
    ("masked_fill", lambda lib, a: lib.masked_fill(a, a > 0, 0.0) if lib is dg else a.masked_fill(a > 0, 0.0),
     [(3, 4)]),
    ("index_select", lambda lib, a: lib.index_select(a, 1, (np if lib is dg else torch).asarray([2, 0, 2])), [(3, 4)]),
]


@pytest.mark.parametrize("name, f, shapes", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, f, shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    ours, theirs = zip(*(_pair(a) for a in arrays))
    out, ref = f(dg, *ours), f(torch, *theirs)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-13, atol=1e-15)
    u = RNG.standard_normal(ref.shape)
    (out * u).sum().backward()
    (ref * torch.tensor(u)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-13, atol=1e-15)


def test_from_numpy_shares_memory_and_as_tensor_copies_only_when_it_must():
    a = np.arange(3.0)
    t = dg.from_numpy(a)
    a[0] = 7.0
    assert t.numpy()[0] == 7.0
    assert dg.as_tensor(a).numpy()[0] == 7.0 and dg.as_tensor(t) is t
    assert dg.as_tensor(a, dtype=np.float32).dtype == np.float32
    with pytest.raises(TypeError, match="from_numpy: expected a NumPy array"):
        dg.from_numpy([1.0])
    assert dg.is_tensor(t) and not dg.is_tensor(a)


def test_set_grad_enabled_as_a_call_and_as_a_context():
    x = dg.tensor([1.0], requires_grad=True)
    with dg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    dg.set_grad_enabled(False)
    try:
        assert not dg.is_grad_enabled()
    finally:
        dg.set_grad_enabled(True)
    assert dg.is_grad_enabled()


def test_type_as_numel_and_allclose():
    x, y = dg.ones(2, 3), dg.ones(2, dtype=np.float32)
    assert x.type_as(y).dtype == np.float32 and dg.numel(x) == 6
    assert dg.allclose(x, np.ones((2, 3))) is True


def test_errors_name_the_function_and_the_users_line():
    with pytest.raises(ValueError, match=r"mm: expects 2-D inputs, got shapes \(3,\), \(3, 2\).*test_torch_names"):
        dg.mm(dg.ones(3), dg.ones(3, 2))
    with pytest.raises(IndexError, match="narrow: start 3 and length 2 exceed dimension 0 of size 4"):
        dg.narrow(dg.ones(4), 0, 3, 2)
    with pytest.raises(ValueError, match="t: expects a tensor with at most 2 dimensions"):
        dg.t(dg.ones(2, 2, 2))


def test_to_refuses_other_devices_and_unknown_dtypes_at_the_users_line():
    x = dg.ones(2)
    with pytest.raises(ValueError, match=r"to: dagrad computes on the CPU only, got device 'cuda:0'.*test_torch_names"):
        x.to("cuda:0")
    with pytest.raises(TypeError, match=r"astype: 'bogus' is not a dtype.*test_torch_names"):
        x.to("bogus")
    assert x.to("cpu") is x and x.to(np.float64) is x and x.to(device="cpu", dtype=np.float32).dtype == np.float32
