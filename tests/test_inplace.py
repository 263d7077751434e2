"""In-place operations and PyTorch's tensor methods, with PyTorch's rules (SPEC: "In-place operations and
the habits of PyTorch users"): values, gradients and errors, compared with torch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg

RNG = np.random.default_rng(0)


def _torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------- the standard training loop


def _mlp_losses(update, steps=30):
    """Losses of a small MLP trained by `update(params)` after each backward."""
    dg.nn.init.manual_seed(3)
    model = dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.Tanh(), dg.nn.Linear(8, 3))
    x = np.random.default_rng(1).standard_normal((16, 4))
    y = np.random.default_rng(2).integers(0, 3, 16)
    losses = []
    for _ in range(steps):
        loss = dg.nn.functional.cross_entropy(model(dg.tensor(x)), y)
        losses.append(loss.item())
        loss.backward()
        update(list(model.parameters()))
    return losses


def test_the_pytorch_loop_trains_and_matches_optim_sgd_bit_for_bit():
    def by_hand(params):
        with dg.no_grad():
            for p in params:
                p -= 0.5 * p.grad
                p.grad = None

    optimizers = {}

    def by_sgd(params):
        opt = optimizers.setdefault("sgd", dg.optim.SGD(params, lr=0.5))
        opt.step()
        opt.zero_grad()

    hand, sgd = _mlp_losses(by_hand), _mlp_losses(by_sgd)
    assert hand[-1] < 0.85 * hand[0]  # it trains
    assert hand == sgd  # the same floats, bit for bit


def test_in_place_updates_keep_the_parameters_registered_and_bump_versions():
    lin = dg.nn.Linear(2, 2)
    w = lin.weight
    before = w._version
    with dg.no_grad():
        w -= 1.0
        w.add_(2.0, alpha=0.5).mul_(2.0).div_(4.0)
    assert lin.weight is w and w in list(lin.parameters())
    assert w._version == before + 4


# ---------------------------------------------------------------- recorded writes, against PyTorch


def test_recorded_in_place_chain_matches_torch():
    torch = _torch()
    x0, y0, v0 = RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.standard_normal(4)

    def run(lib, x, y, v):
        h = x * 2
        h += y
        h *= x
        h /= 3.0
        h -= y
        h[1] = v
        h[:, 0] = 0.5
        h.clamp_(-1.0, 1.5)
        return (h * h).sum()

    dx, dy, dv = (dg.tensor(a, requires_grad=True) for a in (x0, y0, v0))
    tx, ty, tv = (torch.tensor(a, requires_grad=True) for a in (x0, y0, v0))
    ours, theirs = run(dg, dx, dy, dv), run(torch, tx, ty, tv)
    ours.backward()
    theirs.backward()
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-14)
    for a, b in ((dx, tx), (dy, ty), (dv, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-13, atol=1e-15)


def test_a_tensor_that_needs_no_grad_becomes_part_of_the_graph_when_written_from_one_that_does():
    torch = _torch()
    w0 = RNG.standard_normal(3)
    buf, w = dg.zeros(3) if hasattr(dg, "zeros") else dg.tensor(np.zeros(3)), dg.tensor(w0, requires_grad=True)
    tbuf, tw = torch.zeros(3, dtype=torch.float64), torch.tensor(w0, requires_grad=True)
    buf += w * w
    tbuf += tw * tw
    assert buf.requires_grad and not buf.is_leaf
    buf.sum().backward()
    tbuf.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


def test_fill_zero_copy_give_zero_gradient_to_the_old_values_and_flow_to_the_source():
    x = dg.tensor(RNG.standard_normal(3), requires_grad=True)
    src = dg.tensor(RNG.standard_normal(3), requires_grad=True)
    a, b, c = x * 1, x * 1, x * 1
    a.fill_(2.0)
    b.zero_()
    c.copy_(src)
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(c.numpy(), src.numpy())
    (a.sum() + b.sum() + (c * 3.0).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(src.grad.numpy(), [3.0, 3.0, 3.0])


def test_setitem_gradient_with_broadcast_value_matches_torch():
    torch = _torch()
    x0, v0 = RNG.standard_normal((3, 4)), RNG.standard_normal((1, 4))
    x, v = dg.tensor(x0, requires_grad=True), dg.tensor(v0, requires_grad=True)
    tx, tv = torch.tensor(x0, requires_grad=True), torch.tensor(v0, requires_grad=True)
    h, th = x * 1.0, tx * 1.0
    h[np.array([True, False, True])] = v
    th[torch.tensor([True, False, True])] = tv
    (h * x).sum().backward()
    (th * tx).sum().backward()
    np.testing.assert_array_equal(h.numpy(), th.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-15)


def test_a_zero_dim_result_can_be_written():
    x = dg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    loss = (x * x).sum()
    loss += 1.0
    assert loss.item() == 6.0
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


# ---------------------------------------------------------------- PyTorch's errors, nothing changed


def test_a_leaf_that_requires_grad_refuses_a_recorded_write_and_keeps_its_values():
    w = dg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    for write in (lambda: w.__iadd__(1.0), lambda: w.add_(1.0), lambda: w.__setitem__(0, 5.0), lambda: w.zero_()):
        with pytest.raises(RuntimeError, match=r"leaf tensor that requires grad .*no_grad.*test_inplace\.py"):
            write()
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    assert w._version == 0 and w.is_leaf


@pytest.mark.parametrize("other, kind, message", [
    (np.ones((2, 3)), ValueError, r"\+=: the result has shape \(2, 3\), but the tensor written in place has shape "
                                  r"\(3,\).*test_inplace\.py"),
    (np.ones(4), ValueError, r"add: operands could not be broadcast together with shapes \(3,\) \(4,\)"),
])
def test_a_write_that_would_change_the_shape_raises_and_changes_nothing(other, kind, message):
    t = dg.tensor(np.zeros(3))
    with pytest.raises(kind, match=message):
        t += other
    np.testing.assert_array_equal(t.numpy(), np.zeros(3))
    assert t._version == 0


def test_a_write_that_would_change_the_dtype_kind_raises_as_numpy():
    t = dg.tensor(np.arange(3))
    with pytest.raises(TypeError, match=r"dtype float64.* int64 .*same_kind"):
        t += 0.5
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2])
    t.fill_(2.7)  # item assignment casts, as NumPy's a[...] = 2.7 and torch's fill_
    np.testing.assert_array_equal(t.numpy(), [2, 2, 2])


def test_a_read_only_broadcast_refuses_writes():
    t = dg.broadcast_to(dg.tensor(np.zeros(3)), (2, 3))
    with pytest.raises(ValueError, match="read-only"):
        t += 1.0


def test_backward_through_an_overwritten_saved_value_raises_naming_the_line():
    x = dg.tensor(RNG.standard_normal(3), requires_grad=True)
    e = dg.exp(x)
    y = (e * e).sum()  # saved e before the write
    e += 1.0
    with pytest.raises(RuntimeError, match=r"modified in place .*test_inplace\.py"):
        y.backward()


def test_a_node_written_in_place_keeps_its_old_values_for_its_own_gradient():
    # exp's gradient uses its output; PyTorch raises here, dagrad kept a copy of the old values
    x0 = RNG.standard_normal(3)
    x = dg.tensor(x0, requires_grad=True)
    e = dg.exp(x)
    e += 1.0
    (e * 1.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x0), rtol=1e-15)


def test_a_write_under_no_grad_before_a_recorded_one_is_not_hidden_by_the_copy():
    # the copy a recorded write keeps holds the values after the unrecorded write: exp's gradient, which reads
    # its output, would use them silently (it gave exp(x) * 2 + 2); PyTorch raises, so does dagrad
    x = dg.tensor(RNG.standard_normal(2), requires_grad=True)
    h = dg.exp(x)
    with dg.no_grad():
        h += 1.0
    h *= 2.0
    with pytest.raises(RuntimeError, match=r"its output that exp saved .*modified in place .*test_inplace\.py"):
        h.sum().backward()


def test_two_recorded_writes_with_reads_between_them_match_torch_in_one_backward():
    # the first write's copy is reached through the second's, which the sweep frees before it visits the
    # reader of the first: it used to raise "freed by a backward()" on the first backward
    torch = _torch()
    x0 = RNG.standard_normal(3)

    def run(lib, x):
        h = x * 1.0
        e = lib.exp(h)
        h += 1.0
        s = lib.exp(h)
        h *= 3.0
        return (e * h + s).sum()

    dx, tx = dg.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    run(dg, dx).backward()
    run(torch, tx).backward()
    np.testing.assert_allclose(dx.grad.numpy(), tx.grad.numpy(), rtol=1e-14)


def test_the_modified_error_escapes_a_custom_function_s_name():
    class Saves(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2.0 + 0 * x

    named = type("Evil\n\x1b[31mline", (Saves,), {})  # a user's class name: no line break or escape reaches the text
    x = dg.tensor(RNG.standard_normal(3), requires_grad=True)
    h = x * 1.0
    y = named.apply(h).sum()
    h += 1.0
    with pytest.raises(RuntimeError, match="modified in place") as raised:
        y.backward()
    text = str(raised.value)
    assert "\n" not in text and "\x1b" not in text and "Evil\\n\\x1b[31mline" in text


def test_a_write_through_a_view_is_seen_by_the_nodes_that_saved_the_base():
    x = dg.tensor(RNG.standard_normal(4), requires_grad=True)
    h = x * 2.0
    y = (h * h).sum()  # saves h
    view = h[1:]
    with dg.no_grad():
        view[0] = 100.0  # changes h's memory
    assert h.numpy()[1] == 100.0
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_data_shares_storage_and_writes_through_it_are_not_recorded():
    w = dg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    w.data -= 1.0  # allowed outside no_grad, as in PyTorch
    np.testing.assert_array_equal(w.numpy(), [0.0, 1.0])
    assert w.is_leaf and w.requires_grad
    w.data = np.array([5.0, 6.0])
    np.testing.assert_array_equal(w.numpy(), [5.0, 6.0])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        w.data = np.zeros(3)


def test_graph_nodes_and_traced_values_rebind_on_augmented_assignment_and_refuse_in_place_methods():
    with dg.Graph():
        p = dg.placeholder((3,))
        q = p
        p += 1.0
        assert p is not q and q.op is None  # a new node bound to the name, as TF1 and JAX
        with pytest.raises(TypeError, match=r"t\[index\] = value: .*dg\.setitem.*test_inplace\.py"):
            p[0] = 1.0
        with pytest.raises(TypeError, match="cannot change in place"):
            p.add_(1.0)

    def f(x):
        x += 1.0
        x *= x
        return x.sum()

    np.testing.assert_allclose(dg.grad(f)(np.array([1.0, 2.0])), [4.0, 6.0])


# ---------------------------------------------------------------- PyTorch's methods and keywords


def test_torch_methods_match_torch():
    torch = _torch()
    a = RNG.standard_normal((2, 3, 4))
    t, x = torch.tensor(a), dg.tensor(a)
    idx = np.array([[[0, 2, 1, 0]], [[1, 1, 0, 2]]])
    pairs = [
        (x.pow(2), t.pow(2)), (x.unsqueeze(1), t.unsqueeze(1)), (x.view(6, 4), t.view(6, 4)),
        (x.view(-1), t.view(-1)), (x.permute(2, 0, 1), t.permute(2, 0, 1)), (x.flatten(1), t.flatten(1)),
        (x.flatten(0, 1), t.flatten(0, 1)), (x.clamp(-0.5, 0.5), t.clamp(-0.5, 0.5)), (x.clamp(min=0), t.clamp(min=0)),
        (x[0].t(), t[0].t()), (x[:, :1].expand(2, 5, 4), t[:, :1].expand(2, 5, 4)),
        (x[:, :1].expand(-1, 3, -1), t[:, :1].expand(-1, 3, -1)),
        (x.masked_fill(x > 0, 0.0), t.masked_fill(t > 0, 0.0)),
        (x.gather(1, idx), t.gather(1, torch.tensor(idx))),
        (x.index_select(2, np.array([3, 0, 3])), t.index_select(2, torch.tensor([3, 0, 3]))),
        (x.sum(dim=1), t.sum(dim=1)), (x.mean(dim=(0, 2), keepdim=True), t.mean(dim=(0, 2), keepdim=True)),
        (x.std(dim=2, unbiased=True), t.std(dim=2)), (x.var(dim=0, correction=0), t.var(dim=0, correction=0)),
        (x.amax(dim=-1), t.amax(dim=-1)), (x.amin(dim=(0, 1)), t.amin(dim=(0, 1))),
        (dg.sum(x, dim=0), torch.sum(t, dim=0)), (dg.mean(x, 1, keepdim=True), torch.mean(t, 1, keepdim=True)),
        (x.float(), t.float()), (x.double(), t.double()), (x.to(np.float32), t.to(torch.float32)),
    ]
    for ours, theirs in pairs:
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6 if ours.dtype == np.float32 else 1e-14)
    assert x.size() == tuple(t.size()) and x.size(1) == t.size(1) and x.size(-1) == t.size(-1)
    assert x.numel() == t.numel() and x.dim() == t.dim() and x.size == a.size
    assert x.tolist() == t.tolist() and x.to("cpu") is x


def test_torch_method_errors():
    x = dg.tensor(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"t\(\): expects a tensor with at most 2 dimensions"):
        x.t()
    with pytest.raises(ValueError, match=r"reshape.*test_inplace\.py"):
        x.view(5, 5)
    with pytest.raises(TypeError, match="got both axis and dim"):
        x.sum(0, dim=1)
    with pytest.raises(ValueError, match="expand"):
        x.expand(3, 4)
    with pytest.raises(ValueError, match="gather"):
        x.gather(1, np.zeros((3, 3, 4), dtype=int))  # larger than x on an axis other than dim


# ---------------------------------------------------------------- torch.autograd's names, dtypes, device


def test_autograd_grad_matches_torch_at_first_and_second_order():
    torch = _torch()
    x0, w0 = RNG.standard_normal(3), RNG.standard_normal(3)
    x, w = dg.tensor(x0, requires_grad=True), dg.tensor(w0, requires_grad=True)
    tx, tw = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    h, th = dg.tanh(x * w), torch.tanh(tx * tw)
    gx, gw = dg.autograd.grad(h, (x, w), grad_outputs=np.ones(3), create_graph=True)
    tgx, tgw = torch.autograd.grad(th, (tx, tw), grad_outputs=torch.ones(3, dtype=torch.float64), create_graph=True)
    np.testing.assert_allclose(gx.numpy(), tgx.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(gw.numpy(), tgw.detach().numpy(), rtol=1e-14)
    (hxx,) = dg.autograd.grad(gx.sum(), x)
    (thxx,) = torch.autograd.grad(tgx.sum(), tx)
    np.testing.assert_allclose(hxx.numpy(), thxx.numpy(), rtol=1e-13)
    assert x.grad is None and w.grad is None  # nothing accumulated


def test_autograd_grad_errors_and_allow_unused():
    x, unused = dg.tensor([1.0, 2.0], requires_grad=True), dg.tensor([3.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match="not used.*allow_unused"):
        dg.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = dg.autograd.grad(y, [x, unused], allow_unused=True)
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0])
    assert gu is None
    with pytest.raises(RuntimeError, match="one-element"):
        dg.autograd.grad(x * 2, x)


def test_torch_dtype_names_and_the_one_device():
    torch = _torch()
    for ours, theirs in ((dg.float, torch.float), (dg.double, torch.double), (dg.long, torch.long),
                         (dg.int, torch.int), (dg.half, torch.half), (dg.bool, torch.bool)):
        assert np.dtype(ours).itemsize == theirs.itemsize
    assert dg.device("cpu") == "cpu"
    with pytest.raises(ValueError, match="CPU only"):
        dg.device("cuda:0")
