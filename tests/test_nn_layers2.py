"""Issue 29, nn's second part: the new layers (BatchNorm2d, GroupNorm, Conv1d, ConvTranspose2d, AvgPool2d,
AdaptiveAvgPool2d, MaxPool1d, Dropout2d) and the existing ones against PyTorch, each loaded with a PyTorch
module's `state_dict` as it is (`{k: v.numpy()}`): outputs, gradients with respect to the input and every
parameter (float64, 1e-10), in training and in eval, and the running statistics after a few training steps. Then
the functional forms, second derivatives, static graphs and dg.compile, and the errors of bad input."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F
from dagrad import nn

torch = pytest.importorskip("torch", reason="the oracle tier needs torch (pip install -e '.[dev]')")
pytestmark = pytest.mark.oracle

RNG = np.random.default_rng(29)
TOL = dict(rtol=1e-10, atol=1e-12)


def _here(offset=1):
    """'test_nn_layers2.py:N' for the caller's line plus `offset` (errors name the user's line)."""
    return f"test_nn_layers2.py:{sys._getframe(1).f_lineno + offset}"


def _state(module):
    """A PyTorch module's state_dict as PyTorch users save it for others: `{k: v.numpy()}`."""
    return {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}


def _loaded(ours, theirs):
    """`ours` with `theirs`' weights, loaded by their PyTorch names, unchanged."""
    assert ours.load_state_dict(_state(theirs)) == ([], [])
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return ours


def _step(ours, theirs, x, call=lambda m, x: m(x), diff=True):
    """One forward and backward of both with the same input and the same random output weights: the outputs,
    the input's gradient and every parameter's gradient agree."""
    xd = dg.tensor(x, requires_grad=diff) if x.dtype.kind == "f" else x
    xt = torch.tensor(x, requires_grad=diff) if x.dtype.kind == "f" else torch.tensor(x)
    ours.zero_grad()
    theirs.zero_grad()
    out_d, out_t = call(ours, xd), call(theirs, xt)
    assert out_d.shape == tuple(out_t.shape)
    np.testing.assert_allclose(out_d.numpy(), out_t.detach().numpy(), **TOL, err_msg="output")
    u = RNG.standard_normal(out_d.shape)
    dg.sum(out_d * u).backward()
    (out_t * torch.tensor(u)).sum().backward()
    if diff and x.dtype.kind == "f":
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), **TOL, err_msg="input gradient")
    params = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(params)
    for name, p in ours.named_parameters():
        if params[name].grad is None:
            assert p.grad is None or not np.any(p.grad.numpy()), name
        else:
            np.testing.assert_allclose(p.grad.numpy(), params[name].grad.numpy(), **TOL, err_msg=name)


def _same_state(ours, theirs):
    expected = _state(theirs)
    got = ours.state_dict()
    assert list(got) == list(expected)
    for k, v in expected.items():
        assert got[k].shape == v.shape and got[k].dtype == v.dtype, k
        np.testing.assert_allclose(got[k], v, **TOL, err_msg=k)


def _against(make, shape, call=lambda m, x: m(x), steps=3, ints=None):
    """`make(library)` builds the same layer from dg.nn or torch.nn; both, loaded alike, agree for `steps` training
    steps and as many in eval, and so do their states (running statistics) after each."""
    theirs = make(torch.nn).double()
    ours = _loaded(make(nn), theirs)
    for train in (True, False):
        ours.train(train)
        theirs.train(train)
        for _ in range(steps):
            x = RNG.integers(0, ints, shape) if ints else RNG.standard_normal(shape) * 2 + 0.5
            _step(ours, theirs, x, call)
            _same_state(ours, theirs)
    return ours


LAYERS = [
    ("Linear", lambda m: m.Linear(5, 3), (4, 5)),
    ("Linear no bias", lambda m: m.Linear(5, 3, bias=False), (2, 3, 5)),
    ("Conv2d", lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 6)),
    ("Conv2d groups dilation", lambda m: m.Conv2d(4, 6, (3, 2), padding=(2, 1), dilation=(2, 1), groups=2),
     (2, 4, 6, 5)),
    ("Conv2d same", lambda m: m.Conv2d(2, 3, 4, padding="same", bias=False), (2, 2, 5, 6)),
    ("Conv1d", lambda m: m.Conv1d(4, 6, 3), (3, 4, 11)),
    ("Conv1d stride padding dilation groups", lambda m: m.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
     (3, 4, 12)),
    ("Conv1d same", lambda m: m.Conv1d(3, 2, 4, padding="same", dilation=2), (2, 3, 9)),
    ("ConvTranspose2d", lambda m: m.ConvTranspose2d(3, 4, 3), (2, 3, 4, 5)),
    ("ConvTranspose2d stride padding output_padding", lambda m: m.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                                                                  output_padding=1, groups=2),
     (2, 4, 5, 4)),
    ("ConvTranspose2d dilation", lambda m: m.ConvTranspose2d(2, 3, (2, 3), stride=(1, 2), padding=(0, 2),
                                                             output_padding=(1, 0), dilation=(2, 1), bias=False),
     (2, 2, 4, 5)),
    ("BatchNorm1d", lambda m: m.BatchNorm1d(5), (8, 5)),
    ("BatchNorm1d 3-d", lambda m: m.BatchNorm1d(3, momentum=0.3), (4, 3, 6)),
    ("BatchNorm1d momentum None", lambda m: m.BatchNorm1d(3, momentum=None), (6, 3)),
    ("BatchNorm1d no affine", lambda m: m.BatchNorm1d(3, affine=False), (6, 3, 2)),
    ("BatchNorm1d no running stats", lambda m: m.BatchNorm1d(3, track_running_stats=False), (6, 3)),
    ("BatchNorm1d no bias", lambda m: m.BatchNorm1d(3, bias=False), (6, 3)),
    ("BatchNorm2d", lambda m: m.BatchNorm2d(3), (4, 3, 5, 6)),
    ("BatchNorm2d momentum None eps", lambda m: m.BatchNorm2d(2, eps=1e-3, momentum=None), (3, 2, 4, 4)),
    ("BatchNorm2d no affine", lambda m: m.BatchNorm2d(2, affine=False), (3, 2, 4, 4)),
    ("BatchNorm2d no running stats", lambda m: m.BatchNorm2d(2, track_running_stats=False), (3, 2, 3, 4)),
    ("GroupNorm", lambda m: m.GroupNorm(2, 6), (3, 6, 4, 5)),
    ("GroupNorm 3-d no affine", lambda m: m.GroupNorm(3, 3, eps=1e-3, affine=False), (2, 3, 7)),
    ("GroupNorm one group", lambda m: m.GroupNorm(1, 4), (2, 4, 3, 3)),
    ("LayerNorm", lambda m: m.LayerNorm((4, 5)), (3, 4, 5)),
    ("AvgPool2d", lambda m: m.AvgPool2d(2), (2, 3, 6, 7)),
    ("AvgPool2d padding", lambda m: m.AvgPool2d(3, stride=2, padding=1), (2, 2, 7, 6)),
    ("AvgPool2d no pad count", lambda m: m.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 2, 7, 6)),
    ("AvgPool2d ceil_mode", lambda m: m.AvgPool2d((3, 2), stride=2, padding=1, ceil_mode=True), (2, 2, 8, 7)),
    ("AvgPool2d ceil_mode no pad count", lambda m: m.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                                               count_include_pad=False), (1, 2, 8, 6)),
    ("AvgPool2d divisor_override", lambda m: m.AvgPool2d(2, stride=1, padding=1, divisor_override=3), (1, 2, 5, 4)),
    ("AdaptiveAvgPool2d", lambda m: m.AdaptiveAvgPool2d((3, 4)), (2, 3, 7, 9)),
    ("AdaptiveAvgPool2d divisible", lambda m: m.AdaptiveAvgPool2d(2), (2, 3, 6, 4)),
    ("AdaptiveAvgPool2d None", lambda m: m.AdaptiveAvgPool2d((5, None)), (2, 2, 7, 3)),
    ("AdaptiveAvgPool2d 1", lambda m: m.AdaptiveAvgPool2d(1), (2, 3, 5, 5)),
    ("AdaptiveAvgPool2d larger", lambda m: m.AdaptiveAvgPool2d((5, 7)), (1, 2, 3, 4)),
    ("MaxPool1d", lambda m: m.MaxPool1d(3), (2, 3, 10)),
    ("MaxPool1d stride padding dilation ceil", lambda m: m.MaxPool1d(3, stride=2, padding=1, dilation=2,
                                                                     ceil_mode=True), (2, 3, 12)),
    ("MaxPool2d", lambda m: m.MaxPool2d(2), (2, 3, 8, 6)),
    ("MaxPool2d overlapping", lambda m: m.MaxPool2d(3, stride=2, padding=1), (2, 2, 7, 8)),
    ("Dropout2d p=0", lambda m: m.Dropout2d(0.0), (2, 3, 4, 4)),
]


@pytest.mark.parametrize("make, shape", [c[1:] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layer_loads_torch_weights_and_matches_it(make, shape):
    _against(make, shape)


def test_embedding_loads_torch_weights_and_matches_it():
    _against(lambda m: m.Embedding(10, 4), (3, 5), ints=10)


def test_conv_transpose2d_output_size_as_torch():
    theirs = torch.nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1).double()
    ours = _loaded(nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1), theirs)
    for size in [(10, 10), (11, 12), (2, 3, 12, 10)]:
        _step(ours, theirs, RNG.standard_normal((2, 3, 4, 4)), lambda m, x: m(x, output_size=size))
    line = _here(3)
    with pytest.raises(ValueError, match=r"requested an output size of \(13, 10\), but valid sizes range from 10 to "
                                         r"12 for dimension 0") as info:
        ours(dg.tensor(np.zeros((2, 3, 4, 4))), output_size=(13, 10))
    assert line in str(info.value) and "ConvTranspose2d(3, 2" in str(info.value)


class _Net:
    """The same model in both libraries: nested Sequential, ModuleList and ModuleDict, so that the state_dict's
    keys nest as PyTorch's (features.0.weight, heads.cls.bias, blocks.1.running_mean, ...)."""

    def __new__(cls, m):
        class Net(m.Module):
            def __init__(self):
                super().__init__()
                self.features = m.Sequential(m.Conv2d(1, 4, 3, padding=1), m.BatchNorm2d(4), m.ReLU(), m.MaxPool2d(2),
                                             m.Conv2d(4, 6, 3, padding=1, groups=2), m.GroupNorm(2, 6), m.ReLU(),
                                             m.AdaptiveAvgPool2d((2, 2)))
                self.blocks = m.ModuleList([m.Linear(24, 16), m.BatchNorm1d(16), m.LayerNorm(16)])
                self.heads = m.ModuleDict({"cls": m.Linear(16, 3), "up": m.ConvTranspose2d(6, 2, 2, stride=2)})

            def forward(self, x):
                h = self.features(x)
                flat = h.reshape(h.shape[0], -1)
                for block in self.blocks:
                    flat = block(flat)
                up = self.heads["up"](h)
                return self.heads["cls"](flat).sum() * 0.5 + (up * up).sum() * 0.1

        return Net()


def test_nested_model_loads_torch_weights_by_its_keys_and_trains_alike():
    theirs = _Net(torch.nn).double()
    ours = _Net(nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _loaded(ours, theirs)
    assert "blocks.1.num_batches_tracked" in ours.state_dict()
    opt_d, opt_t = dg.optim.SGD(ours.parameters(), lr=0.05), torch.optim.SGD(theirs.parameters(), lr=0.05)
    for train in (True, True, True, False):
        ours.train(train)
        theirs.train(train)
        x = RNG.standard_normal((5, 1, 8, 8))
        _step(ours, theirs, x, lambda m, x: m(x).reshape(1))
        opt_d.step()
        opt_t.step()
        _same_state(ours, theirs)  # the weights after the step, and the running statistics


# ---------------------------------------------------------------- the functional forms against torch.nn.functional
def _functional(ours, theirs, *arrays, diff=None):
    """ours(*dagrad tensors) and theirs(*torch tensors) agree, and so do the gradients of sum(out * u) with
    respect to the floating-point arrays (or those at the positions `diff`)."""
    diff = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"] if diff is None else diff
    ds = [dg.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    ts = [torch.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    out_d, out_t = ours(*ds), theirs(*ts)
    assert out_d.shape == tuple(out_t.shape) and out_d.dtype == out_t.detach().numpy().dtype
    np.testing.assert_allclose(out_d.numpy(), out_t.detach().numpy(), **TOL)
    u = RNG.standard_normal(out_d.shape)
    dg.sum(out_d * u).backward()
    (out_t * torch.tensor(u)).sum().backward()
    for i in diff:
        np.testing.assert_allclose(ds[i].grad.numpy(), ts[i].grad.numpy(), **TOL, err_msg=f"gradient of argument {i}")


FUNCTIONAL = [
    ("conv1d", lambda F, x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=3),
     [(2, 6, 13), (9, 2, 3), (9,)]),
    ("conv1d valid", lambda F, x, w: F.conv1d(x, w, padding="valid"), [(1, 2, 5), (3, 2, 5)]),
    ("conv_transpose2d", lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0),
                                                               output_padding=(1, 2), groups=2, dilation=(1, 2)),
     [(2, 4, 3, 4), (4, 3, 3, 2), (6,)]),
    ("conv_transpose2d plain", lambda F, x, w: F.conv_transpose2d(x, w), [(1, 2, 3, 3), (2, 5, 2, 2)]),
    ("avg_pool2d", lambda F, x: F.avg_pool2d(x, (3, 2), stride=(2, 1), padding=(1, 0), ceil_mode=True,
                                             count_include_pad=False), [(2, 3, 7, 6)]),
    ("avg_pool2d divisor", lambda F, x: F.avg_pool2d(x, 2, divisor_override=5), [(1, 2, 4, 5)]),
    ("adaptive_avg_pool2d", lambda F, x: F.adaptive_avg_pool2d(x, (4, 3)), [(2, 2, 9, 7)]),
    ("max_pool1d", lambda F, x: F.max_pool1d(x, 4, stride=3, padding=2, ceil_mode=True), [(2, 3, 14)]),
    ("max_pool2d dilation", lambda F, x: F.max_pool2d(x, 2, stride=1, dilation=2), [(2, 2, 6, 6)]),
    ("group_norm", lambda F, x, w, b: F.group_norm(x, 3, w, b, eps=1e-3), [(4, 6, 3, 5), (6,), (6,)]),
    ("group_norm 2-d", lambda F, x: F.group_norm(x, 2), [(5, 4)]),
    ("batch_norm 4-d train", lambda F, x, m, v, w, b: F.batch_norm(x, m, v, w, b, True),
     [(3, 4, 5, 2), (4,), (4,), (4,), (4,)], [0, 3, 4]),
    ("batch_norm 5-d eval", lambda F, x, m, v, w, b: F.batch_norm(x, m, v * v, w, b),
     [(2, 3, 2, 2, 3), (3,), (3,), (3,), (3,)], [0, 3, 4]),
]


@pytest.mark.parametrize("f, shapes, diff", [(c + (None,))[1:4] for c in FUNCTIONAL], ids=[c[0] for c in FUNCTIONAL])
def test_functional_forms_match_torch(f, shapes, diff):
    import torch.nn.functional as TF

    arrays = [RNG.standard_normal(s) for s in shapes]
    _functional(lambda *a: f(F, *a), lambda *a: f(TF, *a), *arrays, diff=diff)


def test_batch_norm_updates_4d_running_statistics_as_torch():
    import torch.nn.functional as TF

    x = RNG.standard_normal((4, 3, 5, 6))
    rm, rv = np.zeros(3), np.ones(3)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    F.batch_norm(dg.tensor(x), rm, rv, training=True, momentum=0.3)
    TF.batch_norm(torch.tensor(x), trm, trv, training=True, momentum=0.3)
    np.testing.assert_allclose(rm, trm.numpy(), **TOL)
    np.testing.assert_allclose(rv, trv.numpy(), **TOL)


def test_dropout2d_drops_whole_channels_and_is_the_identity_in_eval():
    x = dg.tensor(np.ones((200, 8, 3, 3)))
    y = F.dropout2d(x, 0.25, generator=np.random.default_rng(0)).numpy()
    per_channel = y.reshape(200, 8, 9)
    assert np.all(per_channel.min(axis=2) == per_channel.max(axis=2))  # a channel is kept or dropped whole
    assert set(np.unique(y)) == {0.0, 1 / 0.75} and abs((per_channel[:, :, 0] == 0).mean() - 0.25) < 0.03
    layer = nn.Dropout2d(0.25, generator=np.random.default_rng(0))
    np.testing.assert_array_equal(layer(x).numpy(), y)
    assert layer.eval()(x) is x and F.dropout2d(x, 0.5, training=False) is x
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        z = F.dropout2d(dg.tensor(np.ones((50, 4, 6))), 0.5, generator=np.random.default_rng(1)).numpy()
    assert np.all(z.min(axis=2) == z.max(axis=2))  # (N, C, L): each (example, channel) whole, as PyTorch
    with dg.Graph() as g:  # a static graph draws a mask per channel at each run
        p = dg.placeholder((None, 4, 2, 2), name="x")
        out = F.dropout2d(p, 0.5, generator=np.random.default_rng(2))
    sess = dg.Session(g)
    a, b = (sess.run(out, {p: np.ones((30, 4, 2, 2))}) for _ in range(2))
    assert np.all(a.reshape(30, 4, 4).min(axis=2) == a.reshape(30, 4, 4).max(axis=2)) and not np.array_equal(a, b)


# ---------------------------------------------------------------- higher orders, transforms, graphs, compile
def test_gradcheck_to_second_order():
    x = RNG.standard_normal((2, 4, 5, 4))
    w, b = RNG.standard_normal((4, 3, 2, 3)), RNG.standard_normal(6)
    assert dg.gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1,
                                                           groups=2), x, w, b, order=2)
    assert dg.gradcheck(lambda x, w: F.conv1d(x, w, stride=2, padding="valid", dilation=2), x[:, :, 0],
                        RNG.standard_normal((3, 4, 2)), order=2)
    assert dg.gradcheck(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                        x, order=2)
    assert dg.gradcheck(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), x, order=2)
    assert dg.gradcheck(lambda x: F.max_pool1d(x, 3, stride=2, padding=1), x[:, :, 0], order=2)
    assert dg.gradcheck(lambda x, w: F.group_norm(x, 2, w), x, RNG.standard_normal(4), order=2)
    assert dg.gradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, training=True), x, RNG.standard_normal(4),
                        order=2)


def _hvp_against_torch(ours, theirs, *arrays):
    """Eager backward with create_graph through dagrad's one-node forms (batch norm, max pool) and PyTorch's double
    backward: the same gradients, and the same gradient of <gradient, v> (a Hessian-vector product)."""
    ds = [dg.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_d, out_t = ours(*ds), theirs(*ts)
    u = RNG.standard_normal(out_d.shape)
    grads_d = dg.autograd.grad(dg.sum(out_d * out_d * u), ds, create_graph=True)
    grads_t = torch.autograd.grad((out_t * out_t * torch.tensor(u)).sum(), ts, create_graph=True)
    vs = [RNG.standard_normal(a.shape) for a in arrays]
    dg.sum(dg.stack([dg.sum(g * v) for g, v in zip(grads_d, vs)])).backward()
    torch.stack([(g * torch.tensor(v)).sum() for g, v in zip(grads_t, vs)]).sum().backward()
    for k, (a, b) in enumerate(zip(grads_d, grads_t)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), **TOL, err_msg=f"gradient {k}")
    for k, (a, b) in enumerate(zip(ds, ts)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL, err_msg=f"second derivative {k}")


def test_one_node_batch_norm_and_max_pool_differentiate_again_as_torch():
    import torch.nn.functional as TF

    x = RNG.standard_normal((3, 4, 6, 5))
    _hvp_against_torch(lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
                       lambda x, w, b: TF.batch_norm(x, None, None, w, b, True), x, RNG.standard_normal(4),
                       RNG.standard_normal(4))
    _hvp_against_torch(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), lambda x: TF.max_pool2d(x, 3, 2, 1), x)
    _hvp_against_torch(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), x)


def test_jvp_through_the_one_node_forms():
    x, t = RNG.standard_normal((3, 2, 4, 4)), RNG.standard_normal((3, 2, 4, 4))
    for f in (lambda x: F.max_pool2d(x, 2, stride=1), lambda x: F.batch_norm(x, None, None, training=True)):
        _, tangent = dg.jvp(f, (x,), (t,))
        eps = 1e-6
        numeric = (f(dg.tensor(x + eps * t)).numpy() - f(dg.tensor(x - eps * t)).numpy()) / (2 * eps)
        np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=1e-5, atol=1e-7)


def test_max_pool_ties_and_nan_as_torch():
    import torch.nn.functional as TF

    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = 1.0  # a tie in the first window: the first maximum takes the gradient
    x[0, 0, 2, 3] = np.nan  # a NaN is the maximum of its window, and takes its gradient
    xd, xt = dg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_d, out_t = F.max_pool2d(xd, 2), TF.max_pool2d(xt, 2)
    np.testing.assert_array_equal(out_d.numpy(), out_t.detach().numpy())
    dg.sum(out_d).backward()
    out_t.sum().backward()
    np.testing.assert_array_equal(xd.grad.numpy(), xt.grad.numpy())


def _model():
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4, track_running_stats=False), nn.ReLU(),
                         nn.MaxPool2d(2), nn.ConvTranspose2d(4, 3, 2, stride=2), nn.GroupNorm(3, 3),
                         nn.AvgPool2d(2, count_include_pad=False), nn.AdaptiveAvgPool2d((3, 1)), nn.Flatten())


def test_new_layers_in_a_static_graph_and_compiled_give_the_eager_values_and_gradients():
    # in a static graph and dg.compile batch norm and max pooling are composites of dagrad's ops; eagerly one node
    x = RNG.standard_normal((5, 2, 6, 6))
    dg.manual_seed(0)
    model = _model()

    def loss(x):
        return dg.sum(model(x) ** 2)

    xd = dg.tensor(x, requires_grad=True)
    eager = loss(xd)
    eager.backward()
    with dg.Graph() as g:
        p = dg.placeholder((None, 2, 6, 6), name="x")
        out = loss(p)
        (grad,) = dg.gradients(out, [p])
    value, gx = dg.Session(g).run([out, grad], {p: x})
    np.testing.assert_allclose(value, eager.item(), rtol=1e-12)
    np.testing.assert_allclose(gx, xd.grad.numpy(), rtol=1e-9, atol=1e-12)
    value, gx = dg.compile(dg.value_and_grad(loss))(x)
    np.testing.assert_allclose(value, eager.item(), rtol=1e-12)
    np.testing.assert_allclose(gx, xd.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_conv1d_max_pool1d_model_in_a_static_graph():
    x = RNG.standard_normal((3, 2, 11))
    dg.manual_seed(1)
    model = nn.Sequential(nn.Conv1d(2, 4, 3, padding="same"), nn.ReLU(), nn.MaxPool1d(2, ceil_mode=True),
                          nn.Conv1d(4, 2, 2, stride=2, groups=2))
    eager = model(dg.tensor(x)).numpy()
    with dg.Graph() as g:
        p = dg.placeholder((None, 2, 11), name="x")
        out = model(p)
    np.testing.assert_allclose(dg.Session(g).run(out, {p: x}), eager, rtol=1e-12)


def test_float32_layers_stay_float32_and_match_torch():
    x = RNG.standard_normal((4, 3, 6, 6)).astype(np.float32)
    for make in (lambda m: m.BatchNorm2d(3), lambda m: m.ConvTranspose2d(3, 2, 3, stride=2),
                 lambda m: m.AdaptiveAvgPool2d(4), lambda m: m.AvgPool2d(3, padding=1), lambda m: m.GroupNorm(1, 3),
                 lambda m: m.MaxPool2d(2)):
        theirs = make(torch.nn)
        ours = make(nn).to(np.float32)
        ours.load_state_dict(_state(theirs))
        xd, xt = dg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out_d, out_t = ours(xd), theirs(xt)
        assert out_d.dtype == np.float32
        np.testing.assert_allclose(out_d.numpy(), out_t.detach().numpy(), rtol=2e-5, atol=2e-5)
        dg.sum(out_d * out_d).backward()
        (out_t * out_t).sum().backward()
        assert xd.grad.dtype == np.float32
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_layers_as_torch_initialise_and_print():
    for make, shapes in [(lambda m: m.Conv1d(4, 6, 3, groups=2), {"weight": (6, 2, 3), "bias": (6,)}),
                         (lambda m: m.ConvTranspose2d(4, 6, (2, 3), groups=2), {"weight": (4, 3, 2, 3), "bias": (6,)}),
                         (lambda m: m.GroupNorm(2, 4), {"weight": (4,), "bias": (4,)}),
                         (lambda m: m.BatchNorm2d(3, affine=False), {})]:
        ours, theirs = make(nn), make(torch.nn)
        assert {n: p.shape for n, p in ours.named_parameters()} == shapes
        assert {n: tuple(p.shape) for n, p in theirs.named_parameters()} == shapes
        assert repr(ours) == repr(theirs)
    # kaiming_uniform(a=sqrt(5)) on fan_in = weight.shape[1] * kernel, for the transposed layer too (PyTorch's)
    up = nn.ConvTranspose2d(8, 16, 3, generator=np.random.default_rng(0))
    bound = 1 / np.sqrt(16 * 9)
    assert np.abs(up.weight.numpy()).max() <= bound and np.abs(up.weight.numpy()).max() > 0.9 * bound
    assert np.abs(up.bias.numpy()).max() <= bound
    gn = nn.GroupNorm(2, 4)
    np.testing.assert_array_equal(gn.weight.numpy(), np.ones(4))


# ---------------------------------------------------------------- bad input: clear errors, nothing changed
LAYER_INPUTS = [
    (nn.BatchNorm2d(3), (2, 3, 4), r"BatchNorm2d\(3, .*expected input of shape \(N, 3, H, W\), got \(2, 3, 4\)"),
    (nn.BatchNorm2d(3), (2, 4, 5, 5), r"BatchNorm2d\(3, .*\(N, 3, H, W\), got \(2, 4, 5, 5\)"),
    (nn.BatchNorm1d(3), (2, 3, 4, 4), r"BatchNorm1d\(3, .*\(N, 3\) or \(N, 3, L\), got \(2, 3, 4, 4\)"),
    (nn.GroupNorm(2, 4), (2, 6, 3), r"GroupNorm\(2, 4, .*\(N, 4, \.\.\.\), got \(2, 6, 3\)"),
    (nn.GroupNorm(2, 4), (4,), r"GroupNorm\(2, 4, .*got \(4,\)"),
    (nn.Conv1d(2, 3, 3), (1, 2, 5, 5), r"Conv1d\(2, 3, .*\(N, 2, L\), got \(1, 2, 5, 5\)"),
    (nn.Conv1d(2, 3, 3), (1, 3, 5), r"Conv1d\(2, 3, .*\(N, 2, L\), got \(1, 3, 5\)"),
    (nn.Conv1d(2, 3, 3), (1, 2, 2), r"conv1d: the input's spatial size \(1, 2\) with padding \(0, 0\) is smaller "
                                    r"than the kernel's extent \(1, 3\)"),
    (nn.ConvTranspose2d(2, 3, 3), (1, 3, 4, 4), r"ConvTranspose2d\(2, 3, .*\(N, 2, H, W\), got \(1, 3, 4, 4\)"),
    (nn.ConvTranspose2d(2, 3, 3), (2, 4, 4), r"ConvTranspose2d\(2, 3, .*got \(2, 4, 4\)"),
    (nn.AvgPool2d(2), (2, 4, 4), r"AvgPool2d\(kernel_size=2.*\(N, C, H, W\), got \(2, 4, 4\)"),
    (nn.AvgPool2d(3), (1, 1, 2, 2), r"avg_pool2d: the input's spatial size \(2, 2\) .* smaller than the kernel's"),
    (nn.AdaptiveAvgPool2d(2), (4, 4), r"AdaptiveAvgPool2d\(output_size=2\).*\(N, C, H, W\), got \(4, 4\)"),
    (nn.MaxPool1d(2), (1, 2, 4, 4), r"MaxPool1d\(kernel_size=2.*\(N, C, L\), got \(1, 2, 4, 4\)"),
    (nn.Dropout2d(), (4, 4), r"Dropout2d\(p=0.5, inplace=False\).*\(N, C, H, W\) \(or \(N, C, L\)\), got \(4, 4\)"),
]


@pytest.mark.parametrize("layer, shape, says", LAYER_INPUTS, ids=[str(k) for k in range(len(LAYER_INPUTS))])
def test_wrong_input_names_the_layer_the_shapes_and_the_line_and_changes_nothing(layer, shape, says):
    before = {k: v.copy() for k, v in layer.state_dict().items()}
    line = _here(2)
    with pytest.raises(ValueError, match=says) as info:
        layer(dg.tensor(np.ones(shape)))
    assert line in str(info.value)
    after = layer.state_dict()
    assert all(np.array_equal(after[k], v) for k, v in before.items())  # running statistics, the batch count


FUNCTION_ERRORS = [
    (lambda x: F.conv1d(x[..., 0], np.ones((4, 1, 2)), groups=3), ValueError,
     "conv1d: groups must be a positive divisor of the 4 output channels, got 3"),
    (lambda x: F.conv1d(x[..., 0], np.ones((4, 2, 2)), groups=2), ValueError,
     r"conv1d: expected input of shape \(N, 4, L\), got \(2, 3, 5\)"),
    (lambda x: F.conv_transpose2d(x, np.ones((3, 2, 2, 2)), stride=2, output_padding=2), ValueError,
     r"conv_transpose2d: output_padding \(2, 2\) must be smaller than either the stride \(2, 2\) or the dilation"),
    (lambda x: F.conv_transpose2d(x, np.ones((4, 2, 2, 2))), ValueError,
     r"conv_transpose2d: expected input of shape \(N, 4, H, W\), got \(2, 3, 5, 5\)"),
    (lambda x: F.conv_transpose2d(x, np.ones((3, 2, 2, 2)), groups=2), ValueError,
     "groups must be a positive divisor of the 3 input channels, got 2"),
    (lambda x: F.conv_transpose2d(x, np.ones((3, 2, 2, 2)), padding=4), ValueError,
     r"the output size \(-2, -2\) is not positive"),
    (lambda x: F.conv_transpose2d(x, np.ones((3, 2, 2, 2)), bias=np.ones(3)), ValueError,
     r"bias must have shape \(2,\), got \(3,\)"),
    (lambda x: F.avg_pool2d(x, 2, padding=2), ValueError, r"avg_pool2d: padding \(2, 2\) must be non-negative and at "
                                                          r"most half the kernel"),
    (lambda x: F.avg_pool2d(x, 2, divisor_override=0), ValueError, "divisor_override must not be zero"),
    (lambda x: F.adaptive_avg_pool2d(x, (0, 2)), ValueError, "output_size must be positive"),
    (lambda x: F.adaptive_avg_pool2d(x, (1, 2, 3)), ValueError, "output_size must be an int, None or a pair"),
    (lambda x: F.max_pool1d(x, 2), ValueError, r"max_pool1d: expected input of shape \(N, C, L\), got \(2, 3, 5, 5\)"),
    (lambda x: F.max_pool2d(x, 2, return_indices=True), NotImplementedError, "return_indices=True is not implemented"),
    (lambda x: F.group_norm(x, 2), ValueError, "group_norm: num_groups must be a positive divisor of the input's 3 "
                                               "channels, got 2"),
    (lambda x: F.group_norm(x, 3, weight=np.ones(2)), ValueError, r"weight must hold one value per channel, shape "
                                                                  r"\(3,\), got \(2,\)"),
    (lambda x: F.batch_norm(x, np.zeros(2), np.ones(2)), ValueError, r"running_mean must hold one value per channel"),
    (lambda x: F.dropout2d(x[0, 0], 0.5), ValueError, r"dropout2d: expected input of shape .*, got \(5, 5\)"),
    (lambda x: F.dropout2d(x, 1.5), ValueError, r"dropout2d: p must be in \[0, 1\], got 1.5"),
]


@pytest.mark.parametrize("call, kind, says", FUNCTION_ERRORS, ids=[str(k) for k in range(len(FUNCTION_ERRORS))])
def test_functional_errors_are_clear_and_at_the_users_line(call, kind, says):
    with pytest.raises(kind, match=says) as info:
        call(dg.tensor(np.ones((2, 3, 5, 5))))
    assert f"test_nn_layers2.py:{call.__code__.co_firstlineno}" in str(info.value)


OPTION_ERRORS = [
    (lambda: nn.Conv1d(4, 6, 3, groups=4), ValueError, r"Conv1d: groups \(4\) must divide in_channels \(4\) and "
                                                       r"out_channels \(6\)"),
    (lambda: nn.ConvTranspose2d(3, 4, 3, groups=2), ValueError, r"ConvTranspose2d: groups \(2\) must divide"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=2), ValueError,
     r"ConvTranspose2d: output_padding \(2, 2\) must be smaller than either the stride \(2, 2\) or the dilation "
     r"\(1, 1\)"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, output_padding=1), ValueError, "output_padding"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, padding="same"), ValueError, "padding must be an int or a pair"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, output_padding=-1), ValueError, "must not be negative"),
    (lambda: nn.Conv1d(2, 2, (3, 3)), ValueError, "Conv1d: kernel_size must be an int or a 1-tuple"),
    (lambda: nn.Conv1d(2, 2, 3, padding_mode="reflect"), NotImplementedError, "padding_mode='reflect'"),
    (lambda: nn.Conv1d(2, 2, 3, padding_mode="mirror"), ValueError, "padding_mode must be"),
    (lambda: nn.Conv1d(2, 2, 3, stride=2, padding="same"), ValueError, "padding='same' needs stride 1"),
    (lambda: nn.GroupNorm(3, 4), ValueError, r"GroupNorm: num_channels \(4\) must be divisible by num_groups \(3\)"),
    (lambda: nn.GroupNorm(0, 4), ValueError, "GroupNorm: num_groups must be positive"),
    (lambda: nn.BatchNorm2d(0), ValueError, "BatchNorm2d: num_features must be positive"),
    (lambda: nn.BatchNorm2d(3, momentum=2.0), ValueError, r"BatchNorm2d: momentum must be in \[0, 1\]"),
    (lambda: nn.AvgPool2d(2, padding=2), ValueError, "AvgPool2d: padding"),
    (lambda: nn.AvgPool2d(2, divisor_override=0), ValueError, "AvgPool2d: divisor_override must not be zero"),
    (lambda: nn.AdaptiveAvgPool2d(-1), ValueError, "AdaptiveAvgPool2d: output_size must be positive"),
    (lambda: nn.MaxPool1d(0), ValueError, r"MaxPool1d: kernel_size \(0,\)"),
    (lambda: nn.MaxPool1d(2, return_indices=True), NotImplementedError, "return_indices"),
    (lambda: nn.Dropout2d(-0.1), ValueError, r"Dropout2d: p must be in \[0, 1\]"),
]


@pytest.mark.parametrize("make, kind, says", OPTION_ERRORS, ids=[str(k) for k in range(len(OPTION_ERRORS))])
def test_layer_options_are_checked_when_the_layer_is_made(make, kind, says):
    with pytest.raises(kind, match=says) as info:
        make()
    assert f"test_nn_layers2.py:{make.__code__.co_firstlineno}" in str(info.value)


def test_a_torch_state_dict_with_missing_unexpected_or_misshapen_keys_names_each_and_loads_nothing():
    theirs = _Net(torch.nn).double()
    ours = _Net(nn)
    before = {k: v.copy() for k, v in ours.state_dict().items()}
    state = _state(theirs)
    del state["features.1.num_batches_tracked"], state["heads.up.bias"]
    state["features.9.weight"] = np.ones(3)
    state["blocks.0.weight"] = state["blocks.0.weight"].T.copy()
    line = _here(2)
    with pytest.raises(nn.StateDictError) as info:
        ours.load_state_dict(state)
    message = str(info.value)
    assert "missing keys: features.1.num_batches_tracked, heads.up.bias" in message
    assert "unexpected keys: features.9.weight" in message
    assert "blocks.0.weight: shape mismatch, the model has (16, 24), the state dict (24, 16)" in message
    assert "nothing was loaded" in message and line in message
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
    after = ours.state_dict()
    assert all(np.array_equal(after[k], v) for k, v in before.items())
    # strict=False loads what fits and reports the rest, as PyTorch's
    state = _state(theirs)
    del state["heads.up.bias"]
    state["extra"] = np.zeros(1)
    assert ours.load_state_dict(state, strict=False) == (["heads.up.bias"], ["extra"])
    np.testing.assert_array_equal(ours.state_dict()["features.0.weight"], state["features.0.weight"])


# ---------------------------------------------------------------- the fast forms give the composites' bits
def test_where_against_zero_is_numpys_bit_for_bit():
    # where(mask, x, 0) (a ReLU's gradient, a max pool's, a clip's) is made on x's bits for large arrays
    for dtype in (np.float64, np.float32):
        x = RNG.standard_normal(5000).astype(dtype)
        x[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-310 if dtype == np.float64 else 1e-40, -1.0, 2.0]
        mask = RNG.random(5000) > 0.5
        mask[:8] = True
        for a, b in ((x, 0), (0, x), (x, 0.0), (0.0, x), (x, -0.0), (x.reshape(50, 100), 0)):
            m = mask if np.shape(a) != (50, 100) else mask.reshape(50, 100)
            got, expected = dg.where(m, a, b), np.where(m, a, b)
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
    x = dg.tensor(RNG.standard_normal((40, 40)), requires_grad=True)
    dg.sum(dg.relu(x) * 3.0).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(x.numpy() > 0, 3.0, 0.0))


@pytest.mark.parametrize("kernel, stride, padding, ceil_mode", [(2, 2, 0, False), (3, 2, 1, True), (3, 1, 1, False)])
def test_eager_max_pool_gives_the_static_graphs_values(kernel, stride, padding, ceil_mode):
    # the same sums in the same order: equal, but for the sign of a zero (the composite's maximum of -0.0 is
    # 0.0 + -0.0, the one node's, as PyTorch's, -0.0 itself)
    x = np.round(RNG.standard_normal((3, 4, 9, 8)), 1)  # rounded: ties in many windows
    g = RNG.standard_normal(F.max_pool2d(dg.tensor(x), kernel, stride, padding, ceil_mode=ceil_mode).shape)
    xd = dg.tensor(x, requires_grad=True)
    out = F.max_pool2d(xd, kernel, stride, padding, ceil_mode=ceil_mode)
    out.backward(g)
    with dg.Graph() as graph:
        p = dg.placeholder(x.shape, name="x")
        y = F.max_pool2d(p, kernel, stride, padding, ceil_mode=ceil_mode)
        (gx,) = dg.gradients(y, [p], [dg.constant(g)])
    value, grad = dg.Session(graph).run([y, gx], {p: x})
    np.testing.assert_array_equal(value, out.numpy())
    np.testing.assert_array_equal(grad, xd.grad.numpy())
