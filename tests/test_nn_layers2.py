"""Issue 29, nn's second part: the new layers (BatchNorm2d, GroupNorm, Conv1d, ConvTranspose2d, AvgPool2d,
AdaptiveAvgPool2d, MaxPool1d, Dropout2d) and the existing ones against PyTorch, each loaded with a PyTorch
module's `state_dict` as it is (`{k: v.numpy()}`): outputs, gradients with respect to the input and every
parameter (float64, 1e-10), in training and in eval, and the running statistics after a few training steps. Then
the functional forms, second derivatives, static graphs and dg.compile, and the errors of bad input."""

from __future__ import annotations

import sys
import warnings

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
    ("LayerNorm no bias", lambda m: m.LayerNorm(5, bias=False), (3, 5)),
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
