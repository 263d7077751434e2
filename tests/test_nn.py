"""dg.nn: modules, layers, functional, init; gradchecks; and an oracle tier against PyTorch."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F
from dagrad import nn

RNG = np.random.default_rng(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 5), nn.Tanh())
        self.bn = nn.BatchNorm1d(5)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        return self.head(self.bn(self.body(self.conv(x))))


# -- modules
def test_registration_order_and_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["conv.weight", "conv.bias", "body.1.weight", "body.1.bias", "bn.weight", "bn.bias",
                     "head.weight", "head.bias"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf for p in net.parameters())
    assert [n for n, _ in net.named_children()] == ["conv", "body", "bn", "head"]
    assert len(list(net.modules())) == 8
    assert [n for n, _ in net.named_buffers()] == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert list(net.state_dict())[:2] == ["conv.weight", "conv.bias"]
    assert "bn.running_var" in net.state_dict()


def test_shared_parameters_are_listed_once_and_reassignment_replaces():
    m = nn.Module()
    m.a = nn.Linear(2, 2)
    m.b = m.a
    assert len(list(m.parameters())) == 2
    m.a = nn.Parameter(np.zeros(3))
    assert [n for n, _ in m.named_parameters()] == ["a", "b.weight", "b.bias"]
    m.a = 5  # a plain attribute replaces the parameter
    assert [n for n, _ in m.named_parameters()] == ["b.weight", "b.bias"] and m.a == 5


def test_parameter_gradients_are_plain_arrays():
    # the reverse sweep must unbox a Tensor subclass like a Tensor (it once passed the Parameter itself to the
    # rules, so p.grad.value became a Tensor and the backward pass ran on Tensors)
    w, b = nn.Parameter(RNG.standard_normal((3, 2))), nn.Parameter(np.zeros(2))
    x = dg.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    dg.sum(dg.tanh(x @ w + b)).backward()
    for t in (w, b, x):
        assert type(t.grad.value) is np.ndarray and t.grad.op is None
    np.testing.assert_allclose(dg.grad(lambda w: dg.sum(x.detach() @ w))(w).numpy(),
                               np.broadcast_to(x.numpy().sum(0)[:, None], (3, 2)))


def test_assigning_to_a_buffer_or_absent_parameter():
    bn = nn.BatchNorm1d(2)
    bn.running_mean = dg.tensor([1.0, 2.0])
    assert list(bn.state_dict()["running_mean"]) == [1.0, 2.0]
    lin = nn.Linear(2, 2)
    lin.bias = None
    assert [n for n, _ in lin.named_parameters()] == ["weight"] and lin.bias is None
    assert lin(dg.tensor([[1.0, 0.0]])).shape == (1, 2)
    lin.bias = nn.Parameter(np.zeros(2))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    del lin.bias
    assert [n for n, _ in lin.named_parameters()] == ["weight"]


def test_module_without_super_init_is_a_clear_error():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter([1.0])

    with pytest.raises(AttributeError, match=r"super\(\)\.__init__\(\)"):
        Bad()


def test_zero_grad_train_eval_and_backward():
    net = Net()
    x = dg.tensor(RNG.standard_normal((4, 1, 4, 4)))
    loss = F.cross_entropy(net(x), np.array([0, 1, 2, 1]))
    loss.backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_repr_is_like_pytorch():
    text = repr(Net())
    assert text.splitlines()[:4] == [
        "Net(",
        "  (conv): Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))",
        "  (body): Sequential(",
        "    (0): Flatten(start_dim=1, end_dim=-1)",
    ]
    assert text.endswith("  (head): Linear(in_features=5, out_features=3, bias=True)\n)")


def test_state_dict_round_trip_and_copies():
    a, b = Net(), Net()
    sd = a.state_dict()
    sd["head.bias"][...] = 7.0  # a copy: the model is untouched
    assert not (a.head.bias.numpy() == 7.0).any()
    weight = b.head.weight
    assert b.load_state_dict(a.state_dict()) == ([], [])
    assert b.head.weight is weight  # loaded in place: optimisers keep their references
    for (k, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(va, vb, err_msg=k)


@pytest.mark.parametrize("change, message", [
    (lambda sd: sd.pop("head.bias"), "missing keys: head.bias"),
    (lambda sd: sd.__setitem__("extra.w", np.zeros(2)), "unexpected keys: extra.w"),
    (lambda sd: sd.__setitem__("head.weight", np.zeros((4, 5))), r"head.weight: shape mismatch.*\(3, 5\).*\(4, 5\)"),
])
def test_load_state_dict_errors_leave_the_model_unchanged(change, message):
    model, other = Net(), Net()
    before = model.state_dict()
    sd = other.state_dict()
    change(sd)
    with pytest.raises(RuntimeError, match=message) as info:
        model.load_state_dict(sd)
    assert "nothing was loaded" in str(info.value) and "test_nn.py" in str(info.value)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)


def test_load_state_dict_non_strict_reports_keys():
    model = nn.Linear(2, 2)
    sd = {"weight": np.ones((2, 2)), "other": np.zeros(1)}
    assert model.load_state_dict(sd, strict=False) == (["bias"], ["other"])
    np.testing.assert_array_equal(model.weight.numpy(), np.ones((2, 2)))


def test_load_state_dict_of_a_different_model():
    with pytest.raises(RuntimeError, match="missing keys: .*unexpected keys: "):
        Net().load_state_dict(nn.Sequential(nn.Linear(2, 2)).state_dict())


@pytest.mark.parametrize("layer, x, expected", [
    (nn.Linear(3, 2), np.zeros((4, 5)), r"Linear\(in_features=3.*expected input of shape \(\.\.\., 3\), got \(4, 5\)"),
    (nn.Conv2d(3, 2, 3), np.zeros((4, 1, 8, 8)), r"Conv2d\(3, 2.*expected .*\(N, 3, H, W\), got \(4, 1, 8, 8\)"),
    (nn.MaxPool2d(2), np.zeros((4, 8)), r"MaxPool2d.*\(N, C, H, W\), got \(4, 8\)"),
    (nn.LayerNorm(4), np.zeros((2, 3)), r"LayerNorm.*\(\*, 4\), got \(2, 3\)"),
    (nn.BatchNorm1d(4), np.zeros((2, 3)), r"BatchNorm1d.*\(N, 4\) or \(N, 4, L\), got \(2, 3\)"),
])
def test_wrong_input_shape_names_layer_shapes_and_line(layer, x, expected):
    with pytest.raises(ValueError, match=expected) as info:
        layer(dg.tensor(x))
    assert "test_nn.py" in str(info.value)


def test_cross_entropy_labels_out_of_range():
    logits = dg.tensor(np.zeros((3, 4)), requires_grad=True)
    with pytest.raises(IndexError, match=r"class indices in \[0, 3\].*got 4.*test_nn.py"):
        F.cross_entropy(logits, np.array([0, 4, 1]))
    with pytest.raises(IndexError, match=r"\[0, 3\].*got -1"):
        F.cross_entropy(logits, np.array([0, -1, 1]))
    with pytest.raises(TypeError, match="integers"):
        F.nll_loss(logits, np.array([0.5, 1.0, 1.0]))
    with pytest.raises(ValueError, match="target of shape"):
        F.cross_entropy(logits, np.array([0, 1]))


def test_cross_entropy_is_stable_and_takes_probabilities():
    x = dg.tensor([[1e4, 0.0, -1e4]], requires_grad=True)
    loss = F.cross_entropy(x, np.array([2]))
    loss.backward()
    assert np.isfinite(loss.item()) and loss.item() == pytest.approx(2e4)
    assert np.isfinite(x.grad.numpy()).all()
    logits = RNG.standard_normal((4, 3))
    labels = np.array([0, 2, 1, 1])
    one_hot = np.eye(3)[labels]
    np.testing.assert_allclose(F.cross_entropy(dg.tensor(logits), one_hot).item(),
                               F.cross_entropy(dg.tensor(logits), labels).item(), rtol=1e-12)


def test_embedding_out_of_range():
    with pytest.raises(IndexError, match=r"\[0, 4\]"):
        nn.Embedding(5, 2)(np.array([1, 5]))


_TABLE = np.arange(15.0).reshape(5, 3)


def _embedding_paths():
    """embedding of mapped indices on every path: eager and compiled vmap, of the lookup and of its gradient, a
    plain compiled lookup and a static graph's (each a function of (table, indices of 3 examples))."""
    lookup = dg.vmap(lambda w, i: F.embedding(i, w), in_axes=(None, 0))
    grad = dg.vmap(dg.grad(lambda w, i: (F.embedding(i, w) ** 2).sum()), in_axes=(None, 0))

    def session(w, i):
        with dg.Graph() as g:
            ids = dg.placeholder(i.shape, np.int64)
            out = F.embedding(ids, dg.tensor(w))
        return dg.Session(g).run(out, {ids: i})

    return {"vmap": lookup, "compile(vmap)": dg.compile(lookup), "vmap(grad)": grad,
            "compile(vmap(grad))": dg.compile(grad), "compile": dg.compile(lambda w, i: F.embedding(i, w)),
            "session": session}


@pytest.mark.parametrize("path", list(_embedding_paths()))
def test_embedding_of_mapped_or_traced_indices_agrees_on_every_path(path):
    # eager vmap raised TypeError (the mapped indices' values), dg.compile and static graphs NotImplementedError
    run, index = _embedding_paths()[path], np.array([[0, 4], [2, 2], [3, 1]])
    plain = lambda w, i: F.embedding(i, w)  # noqa: E731
    if "grad" in path:
        expected = np.stack([dg.grad(lambda w: (plain(w, i) ** 2).sum())(_TABLE) for i in index])
    else:
        expected = plain(_TABLE, index)
    np.testing.assert_array_equal(np.asarray(run(_TABLE, index)), expected)
    for bad in (np.array([[0, 5], [1, 1], [2, 2]]), np.array([[0, 1], [-1, 1], [2, 2]])):  # PyTorch refuses -1 too
        with pytest.raises(IndexError, match=r"indices must be in \[0, 4\]"):
            run(_TABLE, bad)


def test_dropout_seeded_scaled_and_identity_in_eval():
    x = dg.tensor(np.ones((100, 100)))
    d = nn.Dropout(0.25, generator=np.random.default_rng(3))
    y = d(x).numpy()
    assert set(np.unique(y)) == {0.0, 1 / 0.75}
    assert abs((y == 0).mean() - 0.25) < 0.02
    np.testing.assert_array_equal(nn.Dropout(0.25, generator=np.random.default_rng(3))(x).numpy(), y)
    assert d.eval()(x) is x
    nn.init.manual_seed(5)
    a = F.dropout(x).numpy()
    nn.init.manual_seed(5)
    np.testing.assert_array_equal(F.dropout(x).numpy(), a)


def test_batchnorm_train_and_eval():
    bn = nn.BatchNorm1d(3)
    x = RNG.standard_normal((8, 3)) * 2 + 1
    y = bn(dg.tensor(x)).numpy()
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.mean(0))
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * x.var(0, ddof=1))
    bn.eval()
    z = bn(dg.tensor(x)).numpy()
    expected = (x - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(z, expected)
    assert int(bn.num_batches_tracked.item()) == 1


def test_init_seeding_and_bounds():
    nn.init.manual_seed(1)
    a = nn.Linear(50, 40)
    nn.init.manual_seed(1)
    b = nn.Linear(50, 40)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    assert np.abs(a.weight.numpy()).max() <= 1 / np.sqrt(50)
    assert np.abs(a.weight.numpy()).max() > 0.9 / np.sqrt(50)
    c = nn.Conv2d(3, 4, 3, generator=np.random.default_rng(0))
    assert np.abs(c.bias.numpy()).max() <= 1 / np.sqrt(27)
    w = nn.init.kaiming_uniform_(dg.tensor(np.zeros((64, 32))), nonlinearity="relu", generator=np.random.default_rng(0))
    assert np.abs(w.numpy()).max() <= np.sqrt(6 / 32)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        nn.init.xavier_uniform_(np.zeros(3))
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(np.sqrt(2 / 1.04))


# -- gradients against central differences (first and second order, both modes)
def test_gradcheck_conv2d():
    x = RNG.standard_normal((2, 2, 5, 4))
    w = RNG.standard_normal((3, 2, 3, 2))
    b = RNG.standard_normal(3)
    assert dg.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1), x, w, b)
    assert dg.gradcheck(lambda x, w: F.conv2d(x, w, stride=2), x[:1, :, :4, :4], w[:1, :, :2], order=2)


def test_gradcheck_max_pool2d():
    x = RNG.permutation(72).reshape(2, 1, 6, 6) / 10.0  # distinct values: no ties
    assert dg.gradcheck(lambda x: F.max_pool2d(x, 2), x)
    assert dg.gradcheck(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), x[:1, :, :5, :5], order=2)


def test_gradcheck_layer_norm_batch_norm_cross_entropy():
    x = RNG.standard_normal((4, 3))
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    assert dg.gradcheck(lambda x, w, b: F.layer_norm(x, (3,), w, b), x, w, b)
    assert dg.gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, w, b)
    assert dg.gradcheck(lambda x: F.batch_norm(x[:, :, None] * np.ones(2), None, None, training=True), x, order=2)
    labels = np.array([0, 2, 1, 1])
    assert dg.gradcheck(lambda x: F.cross_entropy(x, labels), x, order=2)
    assert dg.gradcheck(lambda x: F.cross_entropy(x, labels, reduction="sum"), x)
    p = RNG.uniform(0.1, 0.9, (5,))
    assert dg.gradcheck(lambda p: F.binary_cross_entropy(p, np.array([0.0, 1, 1, 0, 0.5])), p)
    assert dg.gradcheck(lambda a: F.mse_loss(a, np.ones(5)), p)


def test_conv_second_derivative_through_backward_create_graph():
    x = dg.tensor(RNG.standard_normal((1, 1, 4, 4)), requires_grad=True)
    w = dg.tensor(RNG.standard_normal((2, 1, 2, 2)), requires_grad=True)
    y = dg.sum(F.conv2d(x, w) ** 2)
    (gx,) = [dg.grad(lambda x: dg.sum(F.conv2d(x, w) ** 2))(x)]
    dg.sum(gx).backward()
    assert w.grad is not None and w.grad.shape == w.shape
    assert y.requires_grad


# -- static graphs and compile
def test_cross_entropy_in_a_static_graph_with_an_integer_placeholder():
    X = RNG.standard_normal((6, 4))
    Y = np.array([0, 1, 2, 0, 1, 2])
    W = RNG.standard_normal((4, 3))
    g = dg.Graph()
    with g:
        x = dg.placeholder(shape=(None, 4), name="x")
        y = dg.placeholder(shape=(None,), dtype="int64", name="y")
        w = dg.Variable(W, name="w")
        loss = F.cross_entropy(x @ w, y)
        (gw,) = dg.gradients(loss, [w])
    assert loss.shape == ()
    got, got_gw = dg.Session(g).run([loss, gw], feed_dict={x: X, y: Y})
    wt = dg.tensor(W, requires_grad=True)
    eager = F.cross_entropy(dg.tensor(X) @ wt, Y)
    eager.backward()
    np.testing.assert_allclose(got, eager.item(), rtol=1e-12)
    np.testing.assert_allclose(got_gw, wt.grad.numpy(), rtol=1e-10)


def test_cnn_in_a_static_graph_with_unknown_batch_size():
    W, V = RNG.standard_normal((4, 1, 3, 3)), RNG.standard_normal((3, 16))
    X, Y = RNG.standard_normal((5, 1, 4, 4)), np.array([0, 1, 2, 1, 0])

    def loss_of(x, w, y):
        h = F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 3, stride=2, padding=1)
        return F.cross_entropy(F.layer_norm(F.flatten(h), 16) @ V.T, y)

    g = dg.Graph()
    with g:
        x = dg.placeholder(shape=(None, 1, 4, 4), name="x")
        y = dg.placeholder(shape=(None,), dtype="int64", name="y")
        w = dg.Variable(W, name="w")
        loss = loss_of(x, w, y)
        (gw,) = dg.gradients(loss, [w])
    got, got_gw = dg.Session(g).run([loss, gw], feed_dict={x: X, y: Y})
    value, grad = dg.value_and_grad(lambda w: loss_of(X, w, Y))(W)
    np.testing.assert_allclose(got, value, rtol=1e-12)
    np.testing.assert_allclose(got_gw, grad, rtol=1e-10, atol=1e-14)


def test_compiled_cnn_matches_eager():
    w = RNG.standard_normal((2, 1, 3, 3))
    v = RNG.standard_normal((3, 8))

    def f(x, w):
        h = F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2)
        return F.cross_entropy(F.flatten(h) @ v.T, np.array([0, 1]))

    x = RNG.standard_normal((2, 1, 4, 4))
    fast = dg.compile(dg.value_and_grad(f, argnums=1))
    value, grad = fast(x, w)
    v0, g0 = dg.value_and_grad(f, argnums=1)(x, w)
    np.testing.assert_allclose(value, v0, rtol=1e-12)
    np.testing.assert_allclose(grad, g0, rtol=1e-10)


# -- the oracle tier: layers and losses against PyTorch, weights copied across
def _torch():
    return pytest.importorskip("torch", reason="the oracle tier needs torch (pip install -e '.[dev]')")


def _copy_weights(module, torch_module):
    torch = _torch()
    with torch.no_grad():
        for name, value in module.state_dict().items():
            dict(torch_module.state_dict(keep_vars=True))[name].copy_(torch.tensor(value))


def _compare(module, torch_module, x, rtol=1e-10, train=True):
    """Same output and same gradients (input and parameters) for a random cotangent."""
    torch = _torch()
    _copy_weights(module, torch_module)
    module.train(train)
    torch_module.train(train)
    xt = torch.tensor(x, requires_grad=x.dtype.kind == "f")
    xd = dg.tensor(x, requires_grad=x.dtype.kind == "f")
    out_t, out_d = torch_module(xt), module(xd)
    np.testing.assert_allclose(out_d.numpy(), out_t.detach().numpy(), rtol=rtol, atol=1e-12)
    u = np.random.default_rng(1).standard_normal(out_d.shape)
    out_t.backward(torch.tensor(u))
    out_d.backward(u)
    if x.dtype.kind == "f":
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=1e-12)
    tparams = dict(torch_module.named_parameters())
    for name, p in module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), rtol=rtol, atol=1e-12, err_msg=name)
    for name, b in torch_module.named_buffers():
        np.testing.assert_allclose(module.state_dict()[name], b.numpy(), rtol=rtol, atol=1e-12, err_msg=name)


@pytest.mark.oracle
@pytest.mark.parametrize("stride, padding", [(1, 0), (2, 1), ((1, 2), (2, 0))])
def test_oracle_conv2d(stride, padding):
    torch = _torch()
    conv = nn.Conv2d(3, 4, (3, 2), stride=stride, padding=padding)
    ref = torch.nn.Conv2d(3, 4, (3, 2), stride=stride, padding=padding).double()
    _compare(conv, ref, RNG.standard_normal((2, 3, 7, 6)))


@pytest.mark.oracle
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 2, 1), (2, 1, 0)])
def test_oracle_max_pool2d(kernel, stride, padding):
    torch = _torch()
    x = RNG.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 7.0
    _compare(nn.MaxPool2d(kernel, stride, padding), torch.nn.MaxPool2d(kernel, stride, padding), x)


@pytest.mark.oracle
def test_oracle_max_pool2d_ties_go_to_the_first_maximum():
    torch = _torch()
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = 1.0
    _compare(nn.MaxPool2d(2), torch.nn.MaxPool2d(2), x)


@pytest.mark.oracle
def test_oracle_linear_layernorm_embedding():
    torch = _torch()
    _compare(nn.Linear(5, 3), torch.nn.Linear(5, 3).double(), RNG.standard_normal((4, 5)))
    _compare(nn.Linear(5, 3, bias=False), torch.nn.Linear(5, 3, bias=False).double(), RNG.standard_normal((2, 4, 5)))
    ln, ref = nn.LayerNorm((3, 4)), torch.nn.LayerNorm((3, 4)).double()
    ln.weight.value[...] = RNG.standard_normal((3, 4))
    ln.bias.value[...] = RNG.standard_normal((3, 4))
    _compare(ln, ref, RNG.standard_normal((2, 3, 4)))
    _compare(nn.Embedding(6, 3), torch.nn.Embedding(6, 3).double(), np.array([[0, 5, 2], [2, 2, 1]]))


@pytest.mark.oracle
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)])
def test_oracle_batchnorm1d(shape):
    torch = _torch()
    bn, ref = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3).double()
    bn.weight.value[...] = RNG.standard_normal(3)
    bn.bias.value[...] = RNG.standard_normal(3)
    x = RNG.standard_normal(shape) * 3 + 2
    _compare(bn, ref, x, train=True)  # batch statistics, running stats updated as PyTorch
    _copy_weights(bn, ref)
    bn.zero_grad()
    ref.zero_grad()
    _compare(bn, ref, x, train=False)


@pytest.mark.oracle
def test_oracle_sequential_cnn():
    torch = _torch()
    tnn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 10), nn.Sigmoid(), nn.Linear(10, 3), nn.Tanh())
    ref = tnn.Sequential(tnn.Conv2d(1, 4, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Flatten(),
                         tnn.Linear(4 * 4 * 4, 10), tnn.Sigmoid(), tnn.Linear(10, 3), tnn.Tanh()).double()
    _compare(model, ref, RNG.standard_normal((5, 1, 8, 8)))


@pytest.mark.oracle
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_oracle_losses(reduction):
    torch = _torch()
    tf = torch.nn.functional
    logits = RNG.standard_normal((5, 4)) * 3
    labels = np.array([0, 3, 1, 1, 2])
    probs = np.random.default_rng(2).dirichlet(np.ones(4), 5)
    p = RNG.uniform(0.05, 0.95, (5, 4))
    tgt = RNG.uniform(0, 1, (5, 4))
    cases = [
        (lambda a: F.cross_entropy(a, labels, reduction=reduction), lambda a: tf.cross_entropy(a, torch.tensor(labels),
                                                                                       reduction=reduction), logits),
        (lambda a: F.cross_entropy(a, probs, reduction=reduction), lambda a: tf.cross_entropy(a, torch.tensor(probs),
                                                                                      reduction=reduction), logits),
        (lambda a: F.nll_loss(dg.log_softmax(a, axis=1), labels, reduction=reduction),
         lambda a: tf.nll_loss(torch.log_softmax(a, 1), torch.tensor(labels), reduction=reduction), logits),
        (lambda a: F.mse_loss(a, tgt, reduction), lambda a: tf.mse_loss(a, torch.tensor(tgt), reduction=reduction),
         logits),
        (lambda a: F.binary_cross_entropy(a, tgt, reduction=reduction),
         lambda a: tf.binary_cross_entropy(a, torch.tensor(tgt), reduction=reduction), p),
    ]
    spatial = RNG.standard_normal((2, 4, 3))
    spatial_labels = np.array([[0, 3, 1], [2, 2, 0]])
    cases.append((lambda a: F.cross_entropy(a, spatial_labels, reduction=reduction),
                  lambda a: tf.cross_entropy(a, torch.tensor(spatial_labels), reduction=reduction), spatial))
    for ours, theirs, x in cases:
        xt = torch.tensor(x, requires_grad=True)
        xd = dg.tensor(x, requires_grad=True)
        out_t, out_d = theirs(xt), ours(xd)
        np.testing.assert_allclose(out_d.numpy(), out_t.detach().numpy(), rtol=1e-12, atol=1e-12)
        u = np.random.default_rng(3).standard_normal(out_d.shape)
        out_t.backward(torch.tensor(u))
        out_d.backward(u)
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.oracle
def test_oracle_binary_cross_entropy_clamps_log_at_minus_100():
    torch = _torch()
    p = np.array([0.0, 1.0, 0.5])
    t = np.array([1.0, 0.0, 1.0])
    want = torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(t), reduction="none").numpy()
    with np.errstate(divide="ignore"):
        got = F.binary_cross_entropy(dg.tensor(p), dg.tensor(t), reduction="none").numpy()
    np.testing.assert_allclose(got, want)


@pytest.mark.oracle
def test_oracle_default_initialisation_distributions():
    """PyTorch's default bounds: weights and biases in +-1/sqrt(fan_in) (kaiming_uniform with a=sqrt(5))."""
    torch = _torch()
    for ours, theirs, fan_in in [(nn.Linear(40, 30), torch.nn.Linear(40, 30), 40),
                                 (nn.Conv2d(4, 8, 3), torch.nn.Conv2d(4, 8, 3), 36)]:
        bound = 1 / np.sqrt(fan_in)
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert p.shape == tuple(q.shape), name
            for values in (p.numpy(), q.detach().numpy()):
                assert np.abs(values).max() <= bound * (1 + 1e-6), name
                if name == "weight":
                    assert np.abs(values).max() > 0.95 * bound, name


# -- class weights, ignore_index and label smoothing (PyTorch's options of cross_entropy / nll_loss)
def _weighted_ce_reference(x, t, weight, ignore_index, reduction, smoothing):
    """PyTorch's formulas, in NumPy, for (N, C) logits and class indices."""
    logp = x - x.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight
    counted = t != ignore_index
    safe = np.where(counted, t, 0)
    tw = np.where(counted, w[safe], 0.0)
    nll = np.where(counted, -logp[np.arange(len(t)), safe] * tw, 0.0)
    spread = np.where(counted, -(logp * w).sum(1), 0.0)
    if reduction == "mean":
        nll, spread = nll.sum() / tw.sum(), spread.sum() / tw.sum()
    elif reduction == "sum":
        nll, spread = nll.sum(), spread.sum()
    return (1 - smoothing) * nll + smoothing / c * spread


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_options_match_pytorchs_formulas(reduction, weighted, ignore_index, smoothing):
    x = RNG.standard_normal((6, 4))
    t = np.array([0, 3, ignore_index, 1, 2, 3])
    weight = np.array([0.5, 1.0, 2.0, 1.5]) if weighted else None
    got = F.cross_entropy(dg.tensor(x), t, None if weight is None else dg.tensor(weight),
                          ignore_index=ignore_index, reduction=reduction, label_smoothing=smoothing)
    expected = _weighted_ce_reference(x, t, weight, ignore_index, reduction, smoothing)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-15)
    if not smoothing:
        logp = dg.log_softmax(dg.tensor(x), axis=1)
        nll = F.nll_loss(logp, t, None if weight is None else dg.tensor(weight), ignore_index=ignore_index,
                         reduction=reduction)
        np.testing.assert_allclose(nll.numpy(), expected, rtol=1e-12, atol=1e-15)


def test_cross_entropy_options_are_differentiable_twice():
    t = np.array([0, 3, -100, 1, 2])
    weight = dg.tensor([0.5, 1.0, 2.0, 1.5])
    x = dg.tensor(RNG.standard_normal((5, 4)), requires_grad=True)
    assert dg.gradcheck(lambda z: F.cross_entropy(z, t, weight, label_smoothing=0.1), x, order=2)
    x3 = dg.tensor(RNG.standard_normal((2, 4, 3)), requires_grad=True)  # (N, C, d): classes on axis 1
    t3 = np.array([[0, 3, -100], [1, 1, 2]])
    assert dg.gradcheck(lambda z: F.cross_entropy(z, t3, weight, reduction="sum", label_smoothing=0.2), x3, order=2)


def test_ignored_labels_only_are_allowed_outside_the_class_range():
    logits = dg.tensor(np.zeros((3, 4)))
    assert F.cross_entropy(logits, np.array([0, -100, 1])).item() == pytest.approx(np.log(4))
    with pytest.raises(IndexError, match=r"class indices in \[0, 3\].*got -1"):
        F.cross_entropy(logits, np.array([0, -1, -100]))
    with pytest.raises(ValueError, match="weight must hold one value per class, shape \\(4,\\)"):
        F.cross_entropy(logits, np.array([0, 1, 2]), dg.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="label_smoothing must be in \\[0, 1\\]"):
        F.cross_entropy(logits, np.array([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(TypeError, match="reduction by keyword"):
        F.cross_entropy(logits, np.array([0, 1, 2]), "sum")  # PyTorch's third argument is the weight
    with pytest.raises(ValueError, match="ignore_index applies to class-index targets"):
        F.cross_entropy(logits, np.full((3, 4), 0.25), ignore_index=1)


def test_ignore_index_in_a_static_graph_is_read_when_it_runs():
    X = RNG.standard_normal((5, 4))
    Y = np.array([0, -100, 2, 3, -100])
    g = dg.Graph()
    with g:
        x = dg.placeholder(shape=(None, 4), name="x")
        y = dg.placeholder(shape=(None,), dtype="int64", name="y")
        loss = F.cross_entropy(x, y)
        (gx,) = dg.gradients(loss, [x])
    got, got_gx = dg.Session(g).run([loss, gx], feed_dict={x: X, y: Y})
    xt = dg.tensor(X, requires_grad=True)
    eager = F.cross_entropy(xt, Y)
    eager.backward()
    np.testing.assert_allclose(got, eager.item(), rtol=1e-12)
    np.testing.assert_allclose(got_gx, xt.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert np.all(got_gx[[1, 4]] == 0)


def test_cross_entropy_options_against_pytorch():
    torch = _torch()
    x = RNG.standard_normal((6, 4))
    x3 = RNG.standard_normal((2, 4, 3))
    w = np.array([0.5, 1.0, 2.0, 1.5])
    probs = RNG.random((6, 4))
    probs /= probs.sum(1, keepdims=True)
    cases = [
        (x, np.array([0, 3, -100, 1, 2, 3]), {"weight": w, "label_smoothing": 0.2}),
        (x, np.array([0, 3, 2, 1, 2, 3]), {"weight": w, "ignore_index": 3, "reduction": "sum"}),
        (x3, np.array([[0, 3, -100], [1, 1, 2]]), {"weight": w, "reduction": "none", "label_smoothing": 0.1}),
        (x, probs, {"weight": w, "label_smoothing": 0.3}),
    ]
    for logits, target, options in cases:
        weight = options.pop("weight")
        xd, xt = dg.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
        ours = F.cross_entropy(xd, target, dg.tensor(weight), **options)
        theirs = torch.nn.functional.cross_entropy(xt, torch.tensor(target), torch.tensor(weight), **options)
        ours.sum().backward()
        theirs.sum().backward()
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-15)


# -- conv2d dilation, groups and 'same'/'valid' padding; max_pool2d dilation and ceil_mode
def test_gradcheck_dilated_grouped_conv_and_ceil_mode_pool():
    x = dg.tensor(RNG.standard_normal((1, 2, 4, 3)), requires_grad=True)
    w = dg.tensor(RNG.standard_normal((2, 1, 2, 2)), requires_grad=True)
    assert dg.gradcheck(lambda x, w: F.conv2d(x, w, dilation=(2, 1), groups=2, padding="same"), x, w, order=2)
    assert dg.gradcheck(lambda x: F.max_pool2d(x, 2, stride=2, dilation=(1, 2), ceil_mode=True), x, order=2)


def test_grouped_conv_in_a_static_graph_with_unknown_batch_size():
    X = RNG.standard_normal((3, 4, 6, 6))
    W = RNG.standard_normal((6, 2, 3, 3))
    g = dg.Graph()
    with g:
        x = dg.placeholder(shape=(None, 4, 6, 6), name="x")
        out = F.max_pool2d(F.conv2d(x, dg.constant(W), groups=2, dilation=2, padding=1), 2, ceil_mode=True)
    got = dg.Session(g).run(out, feed_dict={x: X})
    eager = F.max_pool2d(F.conv2d(dg.tensor(X), dg.tensor(W), groups=2, dilation=2, padding=1), 2, ceil_mode=True)
    np.testing.assert_allclose(got, eager.numpy(), rtol=1e-12)


def test_conv_options_give_clear_errors():
    with pytest.raises(ValueError, match=r"groups \(3\) must divide in_channels \(4\)"):
        nn.Conv2d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")(dg.tensor(np.zeros((1, 1, 5, 5))))
    with pytest.raises(ValueError, match=r"smaller than the kernel's extent \(5, 5\)"):
        F.conv2d(dg.tensor(np.zeros((1, 1, 4, 4))), dg.tensor(np.zeros((1, 1, 3, 3))), dilation=2)


@pytest.mark.parametrize("groups, dilation, padding, stride", [
    (2, 1, 1, 1), (4, 2, "same", 1), (1, (2, 1), "valid", 2), (2, 2, (1, 2), (1, 2)),
])
def test_oracle_conv2d_dilation_groups(groups, dilation, padding, stride):
    torch = _torch()
    x = RNG.standard_normal((2, 4, 7, 8))
    conv = nn.Conv2d(4, 8, (3, 2), stride=stride, padding=padding, dilation=dilation, groups=groups)
    ref = torch.nn.Conv2d(4, 8, (3, 2), stride=stride, padding=padding, dilation=dilation, groups=groups).double()
    _compare(conv, ref, x)


@pytest.mark.parametrize("kernel, stride, padding, dilation, size", [
    (2, 2, 0, 1, (7, 8)), (3, 2, 1, 1, (6, 6)), (2, 1, 0, 2, (5, 9)), (3, 2, 1, 2, (9, 7)),
])
def test_oracle_max_pool2d_ceil_mode_and_dilation(kernel, stride, padding, dilation, size):
    torch = _torch()
    x = RNG.standard_normal((2, 3) + size)
    _compare(nn.MaxPool2d(kernel, stride, padding, dilation, ceil_mode=True),
             torch.nn.MaxPool2d(kernel, stride, padding, dilation, ceil_mode=True), x)


# -- dropout in training mode in static graphs and dg.compile: a node that draws a new mask each run
def test_dropout_in_a_static_graph_draws_a_new_mask_at_each_run():
    X = np.ones((50, 40), dtype=np.float32)
    with dg.Graph() as g:
        x = dg.placeholder((None, 40), dtype="float32", name="x")
        w = dg.Variable(np.ones((40, 3), dtype=np.float32), name="w")
        dropped = F.dropout(x, 0.25, generator=np.random.default_rng(0))
        (gw,) = dg.gradients(dg.sum(dropped @ w), [w])
    sess = dg.Session(g)
    first, first_gw = sess.run([dropped, gw], {x: X})
    second = sess.run(dropped, {x: X})
    assert first.dtype == np.float32 and first.shape == (50, 40)
    assert set(np.unique(first)) == {np.float32(0), np.float32(1 / 0.75)}
    assert 0.15 < np.mean(first == 0) < 0.35  # p = 0.25 of 2000 entries
    assert not np.array_equal(first, second)
    # the gradient uses the same run's mask as the value
    np.testing.assert_allclose(first_gw, np.repeat(first.sum(0)[:, None], 3, axis=1), rtol=1e-6)


def test_dropout_under_compile_is_not_folded_or_merged_and_refuses_export(tmp_path):
    from dagrad.compile.export import ExportError

    @dg.compile
    def two_dropouts(x):
        gen = np.random.default_rng(1)
        return F.dropout(x, 0.5, generator=gen), F.dropout(x, 0.5, generator=gen)

    a, b = two_dropouts(np.ones((8, 8)))
    c, _ = two_dropouts(np.ones((8, 8)))
    assert not np.array_equal(a, b)  # two nodes, two draws (no common-subexpression merge)
    assert not np.array_equal(a, c)  # a new draw at each call
    with pytest.raises(ExportError, match="draws random numbers"):
        two_dropouts.export(tmp_path / "m.py", np.ones((8, 8)))


# -- issue 12: clear errors at the user's line, all or nothing, edges as PyTorch
def _here(offset=1):
    """'test_nn.py:N' for the caller's line plus `offset`."""
    return f"test_nn.py:{sys._getframe(1).f_lineno + offset}"


@pytest.mark.parametrize("call", [lambda x: nn.Flatten(5)(x), lambda x: F.flatten(x, 0, 2),
                                  lambda x: F.flatten(x, -3), lambda x: nn.Flatten()(dg.tensor(np.zeros(3)))])
def test_flatten_dimension_out_of_range_is_an_axis_error(call):
    x = dg.tensor(np.zeros((2, 3)))
    with pytest.raises(np.exceptions.AxisError, match=r"flatten: (start|end)_dim: axis -?\d+ is out of bounds") as info:
        call(x)
    assert isinstance(info.value, IndexError) and isinstance(info.value, ValueError)  # as torch's and NumPy's
    assert "test_nn.py" in str(info.value)
    with pytest.raises(IndexError):  # PyTorch agrees
        torch = pytest.importorskip("torch")
        call(torch.zeros(2, 3))


def test_flatten_edges_as_torch():
    assert F.flatten(dg.tensor(np.float64(3.0)), 0).shape == (1,)  # a 0-d input counts as 1-d
    assert F.flatten(dg.tensor(np.zeros((2, 3, 4))), -2, -1).shape == (2, 12)
    line = _here(2)
    with pytest.raises(ValueError, match="flatten: start_dim 2 comes after end_dim 1") as info:
        F.flatten(dg.tensor(np.zeros((2, 3, 4))), 2, 1)
    assert line in str(info.value)
    with pytest.raises(TypeError, match="Flatten: start_dim must be an integer"):
        nn.Flatten(1.5)


@pytest.mark.parametrize("make, kind, says", [
    (lambda: nn.Conv2d(1, 1, 0), ValueError, r"Conv2d: kernel_size \(0, 0\)"),
    (lambda: nn.Conv2d(1, 1, 3, stride=0), ValueError, r"Conv2d: .*stride \(0, 0\)"),
    (lambda: nn.Conv2d(1, 1, 3, dilation=(1, 0)), ValueError, r"Conv2d: .*dilation \(1, 0\)"),
    (lambda: nn.Conv2d(1, 1, 3, padding=-1), ValueError, r"Conv2d: padding \(-1, -1\) must not be negative"),
    (lambda: nn.Conv2d(1, 0, 3), ValueError, "Conv2d: out_channels must be positive, got 0"),
    (lambda: nn.Conv2d(-2, 2, 3), ValueError, "Conv2d: in_channels must be non-negative, got -2"),
    (lambda: nn.Conv2d(2, 2, 3, groups=0), ValueError, "Conv2d: groups must be positive"),
    (lambda: nn.Conv2d(1, 1, 2.5), TypeError, "Conv2d: kernel_size must be an integer, got 2.5"),
    (lambda: nn.Conv2d(1, 1, (3, 3, 3)), ValueError, "Conv2d: kernel_size must be an int or a pair"),
    (lambda: nn.Conv2d(1, 1, 3, stride=2, padding="same"), ValueError, "Conv2d: padding='same' needs stride 1"),
    (lambda: nn.Linear(-1, 3), ValueError, "Linear: in_features must be non-negative, got -1"),
    (lambda: nn.Linear(3, 2.0), TypeError, "Linear: out_features must be an integer"),
    (lambda: nn.MaxPool2d(0), ValueError, r"MaxPool2d: kernel_size \(0, 0\)"),
    (lambda: nn.MaxPool2d(2, padding=-1), ValueError, "MaxPool2d: padding"),
    (lambda: nn.MaxPool2d(2, padding=2), ValueError, "MaxPool2d: padding .* at most half the kernel"),
    (lambda: nn.Embedding(-1, 3), ValueError, "Embedding: num_embeddings must be non-negative"),
    (lambda: nn.BatchNorm1d(0), ValueError, "BatchNorm1d: num_features must be positive"),
    (lambda: nn.BatchNorm1d(3, momentum=1.5), ValueError, r"BatchNorm1d: momentum must be in \[0, 1\]"),
    (lambda: nn.BatchNorm1d(3, eps=0.0), ValueError, "BatchNorm1d: eps must be a positive number"),
    (lambda: nn.LayerNorm(-3), ValueError, "LayerNorm: normalized_shape must be non-negative"),
    (lambda: nn.LayerNorm(3, eps=-1e-5), ValueError, "LayerNorm: eps must be a positive number"),
    (lambda: nn.Dropout(2.0), ValueError, r"Dropout: p must be in \[0, 1\], got 2.0"),
    (lambda: nn.Dropout("0.5"), ValueError, r"Dropout: p must be in \[0, 1\], got '0.5'"),
    (lambda: F.dropout(dg.tensor(np.ones(2)), None), ValueError, r"dropout: p must be in \[0, 1\], got None"),
    (lambda: F.cross_entropy(dg.tensor(np.ones((1, 2))), np.array([0]), label_smoothing=None), ValueError,
     "cross_entropy: label_smoothing must be in"),
    (lambda: nn.Sequential(nn.ReLU(), 3), TypeError, "Sequential: argument 1 is a int"),
])
def test_layer_options_are_checked_when_the_layer_is_made(make, kind, says):
    with pytest.raises(kind, match=says) as info:
        make()
    assert f"test_nn.py:{make.__code__.co_firstlineno}" in str(info.value)  # the lambda's line: the user's


def test_zero_sized_layers_work_as_in_torch():
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning, match="zero-element"):
        layer = nn.Linear(0, 3)  # PyTorch warns too: initialising nothing is a no-op
    out = layer(dg.tensor(np.zeros((2, 0))))
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(layer.bias.numpy(), (2, 3)))
    with pytest.warns(UserWarning):
        assert nn.Linear(3, 0)(dg.tensor(np.ones((2, 3)))).shape == (2, 0)
        assert tuple(torch.nn.Linear(3, 0)(torch.ones(2, 3)).shape) == (2, 0)
    assert nn.Embedding(0, 3).weight.shape == (0, 3)
    assert nn.init.xavier_uniform_(np.zeros((0, 0))).shape == (0, 0)


def test_layer_shape_errors_name_the_layer_shapes_dtype_and_line():
    conv = nn.Conv2d(3, 2, 3)
    x = dg.tensor(np.zeros((1, 2, 5, 5), np.float32))
    line = _here()
    with pytest.raises(ValueError) as info: conv(x)  # noqa: E701
    message = str(info.value)
    assert message.startswith("Conv2d(3, 2,") and "(N, 3, H, W), got (1, 2, 5, 5)" in message
    assert "float32" in message and line in message
    line = _here(2)
    with pytest.raises(ValueError, match=r"linear: bias must have shape \(2,\), got \(3,\)") as info:
        F.linear(dg.tensor(np.ones((4, 3))), dg.tensor(np.ones((2, 3))), dg.tensor(np.ones(3)))
    assert line in str(info.value)
    line = _here(2)
    with pytest.raises(ValueError, match=r"layer_norm: weight must have the normalized shape \(3,\)") as info:
        F.layer_norm(dg.tensor(np.ones((2, 3))), 3, weight=dg.tensor(np.ones(4)))
    assert line in str(info.value)
    line = _here(2)
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'avg'") as info:
        F.mse_loss(dg.tensor(np.ones(2)), np.ones(2), reduction="avg")
    assert line in str(info.value)


def _bn_state(bn):
    return {k: v.copy() for k, v in bn.state_dict().items()}


def _assert_same_state(bn, before):
    after = bn.state_dict()
    assert after.keys() == before.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


@pytest.mark.parametrize("x, kind, says", [
    (np.ones((1, 3)), ValueError, r"batch_norm: expected more than 1 value per channel .*\(1, 3\)"),
    (np.ones((4, 5)), ValueError, r"BatchNorm1d\(3.*\(N, 3\) or \(N, 3, L\), got \(4, 5\)"),
    (np.ones((4, 3), np.int64), TypeError, "batch_norm: the input must be floating point, got dtype int64"),
    (np.ones((2, 3, 4, 5)), ValueError, r"got \(2, 3, 4, 5\)"),
])
def test_batchnorm_validates_before_it_touches_running_statistics(x, kind, says):
    bn = nn.BatchNorm1d(3)
    bn(dg.tensor(RNG.standard_normal((4, 3))))  # some state
    before, version = _bn_state(bn), bn.running_mean._version
    line = _here(2)
    with pytest.raises(kind, match=says) as info:
        bn(dg.tensor(x))
    assert line in str(info.value)
    _assert_same_state(bn, before)  # num_batches_tracked too
    assert bn.running_mean._version == version


def test_functional_batch_norm_validates_every_argument_first():
    x = dg.tensor(RNG.standard_normal((4, 2)))
    rm, rv = np.zeros(2), np.ones(2)
    cases = [
        (dict(running_mean=np.zeros(3), running_var=rv), ValueError, r"running_mean must hold one value per channel"),
        (dict(running_mean=rm, running_var=np.ones((2, 1))), ValueError, "running_var must hold"),
        (dict(running_mean=rm, running_var=rv, weight=np.ones(3)), ValueError, "weight must hold"),
        (dict(running_mean=rm, running_var=rv, momentum=2.0), ValueError, r"momentum must be in \[0, 1\]"),
        (dict(running_mean=rm, running_var=rv, momentum=None), ValueError, "momentum"),
        (dict(running_mean=rm, running_var=rv, eps=0.0), ValueError, "eps must be a positive number"),
        (dict(running_mean=rm, running_var=dg.tensor(rv).numpy()), TypeError, "running_var must be a writable"),
        (dict(running_mean=rm, running_var=np.ones(2, np.int64)), TypeError, "int64"),
        (dict(running_mean=rm, running_var=[1.0, 1.0]), TypeError, "a Tensor or a NumPy array"),
    ]
    for kwargs, kind, says in cases:
        kwargs = {"weight": None, "bias": None, "momentum": 0.1, "eps": 1e-5, **kwargs}
        line = _here(2)
        with pytest.raises(kind, match=says) as info:
            F.batch_norm(x, training=True, **kwargs)
        assert line in str(info.value) and "batch_norm" in str(info.value)
        np.testing.assert_array_equal(rm, np.zeros(2))  # the running mean is never updated before its variance fails
        np.testing.assert_array_equal(rv, np.ones(2))


def test_batchnorm_on_an_empty_batch_as_torch():
    torch = pytest.importorskip("torch")
    for shape in [(0, 3), (0, 3, 4)]:
        bn, tbn = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3).double()
        x = dg.tensor(np.zeros(shape), requires_grad=True)
        out = bn(x)
        tout = tbn(torch.zeros(shape, dtype=torch.float64))
        assert out.shape == tuple(tout.shape) == shape
        np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3))
        np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3))
        assert int(bn.num_batches_tracked.item()) == int(tbn.num_batches_tracked) == 1  # the batch counts
        dg.sum(out).backward()
        np.testing.assert_array_equal(bn.weight.grad.numpy(), np.zeros(3))
        assert x.grad.shape == shape


def test_batchnorm_momentum_none_is_a_cumulative_average_as_torch():
    torch = pytest.importorskip("torch")
    bn, tbn = nn.BatchNorm1d(2, momentum=None), torch.nn.BatchNorm1d(2, momentum=None).double()
    for batch in (np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 2.0], [3.0, 8.0]]), RNG.standard_normal((5, 2))):
        bn(dg.tensor(batch))
        tbn(torch.tensor(batch))
    np.testing.assert_allclose(bn.running_mean.numpy(), tbn.running_mean.numpy(), rtol=1e-14)
    np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(), rtol=1e-14)
    assert int(bn.num_batches_tracked.item()) == 3


def test_batchnorm_running_statistics_writes_are_counted():
    bn = nn.BatchNorm1d(2)
    saved = dg.sum(bn.running_mean.detach() * dg.tensor(np.ones(2), requires_grad=True))  # holds running_mean's values
    versions = bn.running_mean._version, bn.running_var._version, bn.num_batches_tracked._version
    bn(dg.tensor(RNG.standard_normal((4, 2))))
    assert (bn.running_mean._version, bn.running_var._version, bn.num_batches_tracked._version) == \
        tuple(v + 1 for v in versions)
    with pytest.raises(RuntimeError, match="modified"):
        saved.backward()


def test_a_failing_layer_call_in_a_static_graph_builds_nothing():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(5, 2))
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        n = len(g)
        line = _here(2)
        with pytest.raises(ValueError, match=r"Linear\(in_features=5.*got \(None, 4\)") as info:
            model(x)
        assert line in str(info.value)
        assert len(g) == n
        good = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
        y = good(x)  # a call that succeeds keeps its nodes, nested calls included
        assert len(g) > n and y.shape == (None, 4)
        before = len(g)
        with pytest.raises(ValueError):
            with dg.static.graph.atomic():
                good(x)  # its nodes go into the outer block's journal ...
                model(x)
        assert len(g) == before  # ... which rolls them back with the rest


def test_init_and_load_state_dict_count_as_in_place_writes():
    layer = nn.Linear(2, 2)
    # x needs a gradient, so linear's rule for x reads the weight (as in PyTorch, the weight is saved
    # only then: without it the weight's own gradient reads x alone, and a write to the weight is fine)
    x = dg.tensor(np.ones((1, 2)), requires_grad=True)
    for write in (lambda: nn.init.zeros_(layer.weight), lambda: nn.init.xavier_uniform_(layer.weight),
                  lambda: layer.load_state_dict(nn.Linear(2, 2).state_dict())):
        loss = dg.sum(layer(x) * layer(x))
        version = layer.weight._version
        write()
        assert layer.weight._version == version + 1
        with pytest.raises(RuntimeError, match="modified"):
            loss.backward()
        layer.zero_grad()


def test_init_refuses_what_it_cannot_fill():
    line = _here(2)
    with pytest.raises(ValueError, match="dg.nn.init: the array to fill is read-only") as info:
        nn.init.ones_(dg.tensor(np.zeros(2)).numpy())
    assert line in str(info.value)
    with pytest.raises(TypeError, match="expected a Tensor or NumPy array to fill, got list"):
        nn.init.zeros_([1.0, 2.0])


def test_load_state_dict_errors_are_runtime_and_value_errors():
    layer = nn.Linear(2, 2)
    before = layer.state_dict()
    line = _here(2)
    with pytest.raises(ValueError, match=r"weight: shape mismatch") as info:
        layer.load_state_dict({"weight": np.ones((3, 3)), "bias": np.ones(2)})
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, nn.StateDictError)
    assert line in str(info.value)
    bn = nn.BatchNorm1d(2)
    with pytest.raises(RuntimeError, match="num_batches_tracked: the model holds int64, the state dict float64"):
        bn.load_state_dict({**bn.state_dict(), "num_batches_tracked": np.array(2.5)})
    with pytest.raises(TypeError, match="load_state_dict: expected a dict"):
        layer.load_state_dict([("weight", np.ones((2, 2)))])
    for k, v in layer.state_dict().items():
        np.testing.assert_array_equal(v, before[k])


def test_a_failing_loss_in_a_static_graph_builds_nothing():
    with dg.Graph() as g:
        z = dg.placeholder((None, 3), name="z")
        t = dg.placeholder((None,), dtype="int64", name="t")
        t2 = dg.placeholder((None, 2), dtype="int64", name="t2")
        f = dg.placeholder((None,), name="f")
        n = len(g)
        for call, kind in [(lambda: F.cross_entropy(z, t, np.ones(4)), ValueError),
                           (lambda: F.cross_entropy(z, t, label_smoothing=0.1, reduction="avg"), ValueError),
                           (lambda: F.cross_entropy(z, t2), ValueError),
                           (lambda: F.nll_loss(z, f), TypeError),
                           (lambda: F.cross_entropy(z, np.array([0, 5])), IndexError),
                           (lambda: F.binary_cross_entropy(z, np.ones(4)), ValueError),
                           (lambda: F.flatten(z, 3), IndexError)]:
            with pytest.raises(kind) as info:
                call()
            assert f"test_nn.py:{call.__code__.co_firstlineno}" in str(info.value)
            assert len(g) == n, str(info.value)


def test_a_layer_call_that_fails_inside_another_is_rolled_back_alone():
    class Fallback(nn.Module):
        def __init__(self):
            super().__init__()
            self.wide, self.narrow = nn.Sequential(nn.Tanh(), nn.Linear(5, 2)), nn.Linear(3, 2)

        def forward(self, x):
            try:
                return self.wide(x)  # builds tanh, then fails: its node goes, the caller carries on
            except ValueError:
                return self.narrow(x)

    model = Fallback()
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        y = model(x)
    assert [n.op.name for n in g.nodes if n.op is not None] == ["linear"]
    value = dg.Session(g).run(y, feed_dict={x: np.ones((2, 3))})
    np.testing.assert_allclose(value, model.narrow(dg.tensor(np.ones((2, 3)))).numpy())


def test_softmax_and_log_softmax_refuse_complex_as_pytorch_does():
    # torch: "softmax_lastdim_kernel_impl" not implemented for 'ComplexDouble'; they computed SciPy's complex one
    z = np.array([[1 + 1j, 2 - 0.5j, 0.3j], [5 + 3j, -1 + 2j, 0.5 + 4j]])
    for name, f in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        for arg in (z, dg.tensor(z)):
            with pytest.raises(TypeError, match=rf"{name}: is computed for real dtypes only, as PyTorch's, got dtype "
                               r"complex128 .*test_nn.py:\d+"):
                f(arg, dim=1)
        with pytest.raises(TypeError, match="got dtype complex64"):
            f(z.real, dim=1, dtype=np.complex64)
    with pytest.raises(TypeError, match="softmax: is computed for real dtypes only"):
        nn.Softmax(dim=1)(dg.tensor(z))
    with pytest.raises(TypeError, match="log_softmax: is computed for real dtypes only"):
        nn.LogSoftmax(dim=1)(dg.tensor(z))
    e = np.exp(z.real)
    np.testing.assert_allclose(F.softmax(dg.tensor(z.real), dim=1).numpy(), e / e.sum(1, keepdims=True))


def test_complex_softmax_log_softmax_and_logsumexp_are_scipys_with_torchs_gradients():
    torch = pytest.importorskip("torch")
    special = pytest.importorskip("scipy.special")
    z = np.array([[1 + 1j, 2 - 0.5j, 0.3j], [5 + 3j, -1 + 2j, 0.5 + 4j]])
    v = np.array([[0.3 - 0.2j, 1.1 + 0.5j, -0.4j], [0.7, -0.2 + 0.1j, 0.5 - 0.5j]])

    def torch_lse(t):
        return torch.logsumexp(t, 1, keepdim=True)

    cases = [(dg.softmax, special.softmax, lambda t: torch.exp(t - torch_lse(t)), v),
             (dg.log_softmax, special.log_softmax, lambda t: t - torch_lse(t), v),
             (dg.logsumexp, special.logsumexp, lambda t: torch.logsumexp(t, 1), v[:, 0])]
    for ours, scipys, torchs, ct in cases:
        out, vjp = dg.vjp(lambda z: ours(z, axis=1), z)  # noqa: B023
        np.testing.assert_allclose(out, scipys(z, axis=1), rtol=1e-12)
        t = torch.tensor(z, requires_grad=True)
        # torch's gradient of a holomorphic function is the conjugate of dagrad's (JAX's) for the conjugate cotangent
        torchs(t).backward(torch.tensor(np.conj(ct)))
        np.testing.assert_allclose(vjp(ct)[0], np.conj(t.grad.numpy()), rtol=1e-10, atol=1e-14)
