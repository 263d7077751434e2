"""Issue 29, sequence layers: RNN, LSTM, GRU, MultiheadAttention, TransformerEncoderLayer, TransformerEncoder and
F.scaled_dot_product_attention against PyTorch (float64, 1e-10): each PyTorch module's weights are copied in with
`load_state_dict({k: v.detach().numpy() ...})` as they are, and outputs and gradients with respect to the inputs, the
initial states and every parameter must agree, in training and evaluation modes; compiled training steps equal eager
ones; recurrences are one scan node per layer and direction; bad input is refused naming the layer, the expected
and actual shapes and the user's line, with nothing changed."""

from __future__ import annotations

import copy
import re
import sys

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F
from dagrad import nn

torch = pytest.importorskip("torch", reason="the oracle tier needs torch (pip install -e '.[dev]')")
TF = torch.nn.functional
RNG = np.random.default_rng(29)
TOL = dict(rtol=1e-10, atol=1e-10)


def _here(offset=1):
    """'test_nn_sequence.py:N' for the caller's line plus `offset` (errors name the user's line)."""
    return f"test_nn_sequence.py:{sys._getframe(1).f_lineno + offset}"


def _loaded(ours, theirs):
    """`ours` with `theirs`'s weights, loaded as a PyTorch user would (the same keys and shapes, NumPy arrays)."""
    assert ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()}) == ([], [])
    return ours


def _t(a):
    return None if a is None else torch.tensor(a)


def _same_gradients(ours, theirs, d_inputs, t_inputs, d_outputs, t_outputs):
    """The outputs agree, and so do the gradients of sum(out * u) (u random) with respect to every input and every
    parameter (a parameter PyTorch leaves without a gradient has none or zeros here)."""
    for d, t in zip(d_outputs, t_outputs):
        np.testing.assert_allclose(d.numpy(), t.detach().numpy(), **TOL)
    us = [RNG.uniform(0.5, 1.5, tuple(t.shape)) for t in t_outputs]
    sum((t * torch.tensor(u)).sum() for t, u in zip(t_outputs, us)).backward()
    sum(dg.sum(d * u) for d, u in zip(d_outputs, us)).backward()
    for k, (d, t) in enumerate(zip(d_inputs, t_inputs)):
        np.testing.assert_allclose(d.grad.numpy(), t.grad.numpy(), err_msg=f"gradient of input {k}", **TOL)
    theirs_params = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(theirs_params)
    for name, p in ours.named_parameters():
        expected = theirs_params[name].grad
        if expected is None:
            assert p.grad is None or not p.grad.numpy().any(), name
        else:
            np.testing.assert_allclose(p.grad.numpy(), expected.numpy(), err_msg=f"gradient of {name}", **TOL)


# ---------------------------------------------------------------- RNN, LSTM, GRU
RECURRENT = {"RNN": (nn.RNN, torch.nn.RNN), "LSTM": (nn.LSTM, torch.nn.LSTM), "GRU": (nn.GRU, torch.nn.GRU)}
OPTIONS = [
    ("plain", {}), ("2 layers", {"num_layers": 2}), ("bidirectional", {"bidirectional": True}),
    ("2 layers bidirectional", {"num_layers": 2, "bidirectional": True}),
    ("batch_first no bias", {"batch_first": True, "bias": False}),
    ("dropout 0.5 (evaluation)", {"num_layers": 2, "dropout": 0.5}),
]
CALLS = ["zero state", "given state", "unbatched", "lengths"]
L, N, IN, HID = 5, 3, 4, 6


def _recurrent_pair(kind, options):
    ours, theirs = RECURRENT[kind]
    t = theirs(IN, HID, **options).double()
    return _loaded(ours(IN, HID, **options), t), t


def _states(kind, module, unbatched, batch=N):
    layers = module.num_layers * (2 if module.bidirectional else 1)
    out = module.proj_size or module.hidden_size if kind == "LSTM" else module.hidden_size
    lead = (layers,) if unbatched else (layers, batch)
    if kind == "LSTM":
        return [RNG.standard_normal(lead + (out,)), RNG.standard_normal(lead + (module.hidden_size,))]
    return [RNG.standard_normal(lead + (out,))]


def _run_recurrent(kind, options, call):
    ours, theirs = _recurrent_pair(kind, options)
    if "dropout" in options:
        ours.eval(), theirs.eval()
    unbatched = call == "unbatched"
    shape = (L, IN) if unbatched else ((N, L, IN) if options.get("batch_first") else (L, N, IN))
    arrays = [RNG.standard_normal(shape)] + (_states(kind, theirs, unbatched) if call in ("given state", "unbatched",
                                                                                          "lengths") else [])
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    d_in = [dg.tensor(a, requires_grad=True) for a in arrays]
    t_hx = None if len(t_in) == 1 else (tuple(t_in[1:]) if kind == "LSTM" else t_in[1])
    d_hx = None if len(d_in) == 1 else (tuple(d_in[1:]) if kind == "LSTM" else d_in[1])
    lengths = np.array([5, 2, 4]) if call == "lengths" else None
    if lengths is not None:  # PyTorch's packed sequences: what dagrad's lengths= stands for
        packed = torch.nn.utils.rnn.pack_padded_sequence(t_in[0], torch.tensor(lengths), enforce_sorted=False,
                                                         batch_first=bool(options.get("batch_first")))
        t_out, t_h = theirs(packed, t_hx)
        t_out = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=bool(options.get("batch_first")),
                                                       total_length=L)[0]
    else:
        t_out, t_h = theirs(t_in[0], t_hx)
    d_out, d_h = ours(d_in[0], d_hx, lengths=lengths)
    t_h, d_h = (t_h, d_h) if kind == "LSTM" else ((t_h,), (d_h,))
    assert d_out.shape == tuple(t_out.shape) and len(d_h) == len(t_h)
    _same_gradients(ours, theirs, d_in, t_in, [d_out, *d_h], [t_out, *t_h])


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("options", OPTIONS, ids=[o[0] for o in OPTIONS])
@pytest.mark.parametrize("kind", RECURRENT)
def test_recurrent_layers_equal_pytorch(kind, options, call):
    _run_recurrent(kind, options[1], call)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("options", [{"nonlinearity": "relu"}, {"nonlinearity": "relu", "num_layers": 2,
                                                                  "bidirectional": True}])
def test_rnn_relu_equals_pytorch(options, call):
    _run_recurrent("RNN", options, call)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("options", [{"proj_size": 3}, {"proj_size": 2, "num_layers": 2, "bidirectional": True}])
def test_lstm_projection_equals_pytorch(options, call):
    _run_recurrent("LSTM", options, call)


@pytest.mark.parametrize("kind", RECURRENT)
def test_recurrent_parameters_are_pytorchs_names_shapes_and_distribution(kind):
    options = {"num_layers": 2, "bidirectional": True, **({"proj_size": 2} if kind == "LSTM" else {})}
    ours, theirs = RECURRENT[kind][0](IN, HID, **options), RECURRENT[kind][1](IN, HID, **options)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: tuple(v.shape) for k, v in
                                                                   theirs.state_dict().items()}
    assert list(ours.state_dict()) == list(theirs.state_dict())
    values = np.concatenate([p.numpy().ravel() for p in ours.parameters()])
    bound = 1 / np.sqrt(HID)  # U(-1/sqrt(hidden), 1/sqrt(hidden)) for every weight and bias, as PyTorch
    assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 3
    assert repr(ours) == repr(theirs)


def test_recurrent_initialisation_follows_the_generator():
    a, b = nn.LSTM(3, 4, generator=np.random.default_rng(7)), nn.LSTM(3, 4, generator=np.random.default_rng(7))
    c = nn.LSTM(3, 4, generator=np.random.default_rng(8))
    assert all((x == y).all() for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not (a.weight_ih_l0.numpy() == c.weight_ih_l0.numpy()).all()


@pytest.mark.parametrize("kind", RECURRENT)
def test_recurrent_dropout_drops_between_layers_in_training_only(kind):
    model = RECURRENT[kind][0](IN, HID, num_layers=2, dropout=0.5, generator=np.random.default_rng(0))
    x = RNG.standard_normal((L, N, IN))
    model.eval()
    first, second = model(x)[0].numpy(), model(x)[0].numpy()
    assert (first == second).all()
    model.train()
    a, b = model(x)[0].numpy(), model(x)[0].numpy()
    assert not np.allclose(a, first) and not np.allclose(a, b)  # new masks at each call
    twin = RECURRENT[kind][0](IN, HID, num_layers=2, dropout=0.0)
    twin.load_state_dict(model.state_dict())
    np.testing.assert_allclose(twin.train()(x)[0].numpy(), first, **TOL)  # no dropout: training equals evaluation


def test_a_one_layer_recurrent_with_dropout_warns_as_pytorch():
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last recurrent layer"):
        nn.GRU(2, 3, dropout=0.5)


def _compiled_step(model, loss_of):
    def step(*arrays):
        model.zero_grad()
        loss = loss_of(*arrays)
        loss.backward()
        return loss

    return dg.compile(step)


@pytest.mark.parametrize("kind", RECURRENT)
def test_compiled_recurrent_training_step_equals_eager(kind):
    model = RECURRENT[kind][0](IN, HID, num_layers=2, bidirectional=True)
    x, u = RNG.standard_normal((L, N, IN)), RNG.standard_normal((L, N, 2 * HID))

    def loss_of(x, u):
        return dg.sum(model(x)[0] * u)

    loss = loss_of(x, u)
    model.zero_grad()
    loss.backward()
    eager = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
    fast = _compiled_step(model, loss_of)
    np.testing.assert_allclose(float(fast(x, u)), float(loss.numpy()), **TOL)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), eager[name], err_msg=name, **TOL)
    # lengths through a compiled step: the masks are constants of the trace
    lengths = np.array([5, 1, 3])
    masked = _compiled_step(model, lambda x, u: dg.sum(model(x, lengths=lengths)[0] * u))
    value = float(masked(x, u))
    model.zero_grad()
    np.testing.assert_allclose(value, float(dg.sum(model(x, lengths=lengths)[0] * u).numpy()), **TOL)


@pytest.mark.parametrize("options", [{"num_layers": 1}, {"num_layers": 2}, {"num_layers": 3, "bidirectional": True}])
def test_a_compiled_recurrence_is_one_scan_node_per_layer_and_direction(options):
    model = nn.LSTM(IN, HID, **options)
    x = RNG.standard_normal((L, N, IN))
    fast = dg.compile(lambda x: model(x)[0])
    np.testing.assert_allclose(fast(x), model(x)[0].numpy(), **TOL)
    scans = [node for node in fast.graph(x).nodes if node.op is not None and node.op.name == "scan"]
    assert len(scans) == options["num_layers"] * (2 if options.get("bidirectional") else 1)
    longer = RNG.standard_normal((4 * L, N, IN))  # not unrolled: the graph does not grow with the length
    assert len(fast.graph(longer).nodes) == len(fast.graph(x).nodes)


def test_a_recurrent_layer_in_a_static_graph_needs_the_batch_size():
    with dg.Graph():
        p = dg.placeholder((L, None, IN), "float64")
        with pytest.raises(ValueError, match=r"LSTM: the sequence length and the batch size must be known .* got "
                                             r"input of shape \(5, None, 4\).*" + _here(1)):
            nn.LSTM(IN, HID)(p)


def test_recurrent_layer_in_a_static_graph():
    model = nn.GRU(IN, HID, batch_first=True)
    x = RNG.standard_normal((N, L, IN))
    with dg.Graph() as g:
        p = dg.placeholder((N, L, IN), "float64")
        out, h = model(p)
    session = dg.Session(g)
    got_out, got_h = session.run([out, h], feed_dict={p: x})
    want_out, want_h = model(x)
    np.testing.assert_allclose(got_out, want_out.numpy(), **TOL)
    np.testing.assert_allclose(got_h, want_h.numpy(), **TOL)


@pytest.mark.parametrize("kind", RECURRENT)
def test_recurrent_gradcheck(kind):
    model = RECURRENT[kind][0](2, 3, num_layers=2, bidirectional=True)
    x = RNG.standard_normal((3, 2, 2))
    states = _states(kind, model, False, batch=2)
    if kind == "LSTM":
        assert dg.gradcheck(lambda x, h, c: dg.sum(dg.sin(model(x, (h, c))[0])), x, *states)
    else:
        assert dg.gradcheck(lambda x, h: dg.sum(dg.sin(model(x, h)[0])), x, *states)


def test_recurrent_under_vmap_and_second_order():
    model = nn.LSTM(2, 3)
    xs = RNG.standard_normal((4, 3, 2))  # 4 unbatched sequences, mapped
    mapped = dg.vmap(lambda x: model(x)[0])(xs)
    np.testing.assert_allclose(mapped, np.stack([model(x)[0].numpy() for x in xs]), **TOL)
    x = RNG.standard_normal((3, 1, 2))
    assert dg.gradcheck(lambda x: dg.grad(lambda x: dg.sum(dg.sin(model(x)[0])))(x), x)


def test_recurrent_float32_computes_in_float32():
    model = nn.LSTM(IN, HID, dtype=np.float32)
    out, (h, c) = model(RNG.standard_normal((L, N, IN)).astype(np.float32))
    assert out.dtype == h.dtype == c.dtype == np.float32


# ---------------------------------------------------------------- scaled dot-product attention
def _sdpa_case(shapes, **kw):
    arrays = [RNG.standard_normal(s) for s in shapes]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    d_in = [dg.tensor(a, requires_grad=True) for a in arrays]
    mask = kw.pop("attn_mask", None)
    t_out = TF.scaled_dot_product_attention(*t_in, attn_mask=_t(mask), **kw)
    d_out = F.scaled_dot_product_attention(*d_in, attn_mask=mask, **kw)
    np.testing.assert_allclose(d_out.numpy(), t_out.detach().numpy(), **TOL)
    u = RNG.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(u)).sum().backward()
    dg.sum(d_out * u).backward()
    for d, t in zip(d_in, t_in):
        np.testing.assert_allclose(d.grad.numpy(), t.grad.numpy(), **TOL)
    return d_out, d_in


QKV = [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)]
SDPA = [
    ("plain", {}), ("causal", {"is_causal": True}), ("scale", {"scale": 0.3}),
    ("bool mask", {"attn_mask": RNG.random((5, 6)) > 0.5}),
    ("float mask per batch", {"attn_mask": RNG.standard_normal((2, 1, 5, 6))}),
    ("gqa", {"enable_gqa": True}),
]


@pytest.mark.parametrize("options", SDPA, ids=[o[0] for o in SDPA])
def test_scaled_dot_product_attention_equals_pytorch(options):
    shapes = [(2, 4, 5, 4), (2, 2, 6, 4), (2, 2, 6, 7)] if options[1].get("enable_gqa") else QKV
    _sdpa_case(shapes, **options[1])


def test_scaled_dot_product_attention_of_a_fully_masked_query_is_zero_without_nan():
    mask = np.ones((5, 6), bool)
    mask[2] = False  # query 2 may attend to nothing
    float_mask = np.where(mask, 0.0, -np.inf)
    for m in (mask, float_mask):
        out, inputs = _sdpa_case(QKV, attn_mask=m)  # PyTorch gives zeros there too
        assert not out.numpy()[:, :, 2].any()
        assert all(np.isfinite(t.grad.numpy()).all() for t in inputs)


def test_scaled_dot_product_attention_in_static_graphs_and_compiled():
    q, k, v = (RNG.standard_normal(s) for s in QKV)
    mask = RNG.random((5, 6)) > 0.3
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    fast = dg.compile(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
    np.testing.assert_allclose(fast(q, k, v, mask), want, **TOL)
    grad = dg.grad(lambda q: dg.sum(F.scaled_dot_product_attention(q, k, v, is_causal=True) ** 2))
    np.testing.assert_allclose(dg.compile(grad)(q), grad(q), **TOL)


def test_scaled_dot_product_attention_dropout_draws_from_the_generator():
    q, k, v = (RNG.standard_normal(s) for s in QKV)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, generator=np.random.default_rng(3))
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, generator=np.random.default_rng(3))
    plain = F.scaled_dot_product_attention(q, k, v)
    assert (a == b).all() and not np.allclose(a, plain)


# ---------------------------------------------------------------- MultiheadAttention
E, HEADS, S = 8, 2, 6
MHA_OPTIONS = [
    ("plain", {}), ("batch_first", {"batch_first": True}), ("no bias", {"bias": False}),
    ("bias_kv", {"add_bias_kv": True}), ("zero_attn", {"add_zero_attn": True}),
    ("kdim vdim", {"kdim": 5, "vdim": 7}), ("all", {"add_bias_kv": True, "add_zero_attn": True, "kdim": 5}),
    ("dropout (evaluation)", {"dropout": 0.5}),
]
PADDING = RNG.random((N, S)) > 0.6
MHA_CALLS = [
    ("plain", {}), ("key_padding_mask", {"key_padding_mask": PADDING}),
    ("bool attn_mask", {"attn_mask": RNG.random((L, S)) > 0.7}),
    ("float masks", {"attn_mask": RNG.standard_normal((L, S)), "key_padding_mask": np.where(PADDING, -2.0, 0.0)}),
    ("3-d attn_mask, no weights", {"attn_mask": RNG.random((N * HEADS, L, S)) > 0.7, "need_weights": False}),
    ("weights per head", {"average_attn_weights": False, "key_padding_mask": PADDING}),
    ("unbatched", {"key_padding_mask": PADDING[0], "attn_mask": RNG.random((HEADS, L, S)) > 0.7}),
]


@pytest.mark.parametrize("call", MHA_CALLS, ids=[c[0] for c in MHA_CALLS])
@pytest.mark.parametrize("options", MHA_OPTIONS, ids=[o[0] for o in MHA_OPTIONS])
def test_multihead_attention_equals_pytorch(options, call):
    options, (name, call) = options[1], call
    unbatched = name == "unbatched"
    theirs = torch.nn.MultiheadAttention(E, HEADS, **options).double()
    ours = _loaded(nn.MultiheadAttention(E, HEADS, **options), theirs)
    ours.eval(), theirs.eval()
    kd, vd = options.get("kdim", E), options.get("vdim", E)

    def shape(steps, size):
        return (steps, size) if unbatched else ((N, steps, size) if options.get("batch_first") else (steps, N, size))

    arrays = [RNG.standard_normal(shape(L, E)), RNG.standard_normal(shape(S, kd)), RNG.standard_normal(shape(S, vd))]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    d_in = [dg.tensor(a, requires_grad=True) for a in arrays]
    t_call = {k: _t(v) if isinstance(v, np.ndarray) else v for k, v in call.items()}
    t_out, t_w = theirs(*t_in, **t_call)
    d_out, d_w = ours(*d_in, **call)
    outs = ([d_out], [t_out]) if t_w is None else ([d_out, d_w], [t_out, t_w])
    assert (d_w is None) == (t_w is None)
    _same_gradients(ours, theirs, d_in, t_in, *outs)


def test_self_attention_with_one_tensor_equals_pytorch():
    theirs = torch.nn.MultiheadAttention(E, HEADS, batch_first=True).double()
    ours = _loaded(nn.MultiheadAttention(E, HEADS, batch_first=True), theirs)
    x = RNG.standard_normal((N, L, E))
    tx, dx = torch.tensor(x, requires_grad=True), dg.tensor(x, requires_grad=True)
    t_out, t_w = theirs(tx, tx, tx)
    d_out, d_w = ours(dx, dx, dx)
    _same_gradients(ours, theirs, [dx], [tx], [d_out, d_w], [t_out, t_w])


def test_multihead_attention_parameters_and_initialisation_are_pytorchs():
    for options in ({}, {"kdim": 5, "vdim": 7, "add_bias_kv": True}, {"bias": False}):
        ours, theirs = nn.MultiheadAttention(E, HEADS, **options), torch.nn.MultiheadAttention(E, HEADS, **options)
        assert {k: v.shape for k, v in ours.state_dict().items()} == {k: tuple(v.shape) for k, v in
                                                                       theirs.state_dict().items()}
    ours = nn.MultiheadAttention(64, 4, add_bias_kv=True)
    assert not ours.in_proj_bias.numpy().any() and not ours.out_proj.bias.numpy().any()
    bound = np.sqrt(6 / (64 + 192))  # xavier_uniform of (3E, E)
    w = ours.in_proj_weight.numpy()
    assert np.abs(w).max() <= bound and w.std() > bound / 3
    assert ours.bias_k.numpy().std() > 0  # xavier_normal


def test_multihead_attention_dropout_in_training_only():
    mha = nn.MultiheadAttention(E, HEADS, dropout=0.5, generator=np.random.default_rng(1))
    x = RNG.standard_normal((L, N, E))
    train_a, train_b = mha(x, x, x)[1].numpy(), mha(x, x, x)[1].numpy()
    mha.eval()
    evaluation = mha(x, x, x)[1].numpy()
    assert not np.allclose(train_a, train_b) and np.allclose(evaluation.sum(-1), 1)


def test_compiled_attention_training_step_equals_eager():
    model = nn.MultiheadAttention(E, HEADS, batch_first=True, dropout=0.0)
    x, mask = RNG.standard_normal((N, L, E)), PADDING[:, :L]

    def loss_of(x):
        out, w = model(x, x, x, key_padding_mask=mask)
        return dg.sum(out ** 2) + dg.sum(w)

    loss = loss_of(x)
    model.zero_grad()
    loss.backward()
    eager = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
    np.testing.assert_allclose(float(_compiled_step(model, loss_of)(x)), float(loss.numpy()), **TOL)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), eager[name], err_msg=name, **TOL)


# ---------------------------------------------------------------- TransformerEncoderLayer and TransformerEncoder
TEL_OPTIONS = [
    ("post-norm", {}), ("batch_first", {"batch_first": True}), ("norm_first", {"norm_first": True}),
    ("gelu, no bias", {"activation": "gelu", "bias": False}), ("eps", {"layer_norm_eps": 1e-3}),
]
CAUSAL = np.triu(np.full((L, L), -np.inf), 1)
TEL_CALLS = [
    ("plain", {}), ("causal", {"mask": CAUSAL, "is_causal": True}),
    ("padding", {"src_key_padding_mask": np.array([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])}),
    ("bool mask", {"mask": RNG.random((L, L)) > 0.8}), ("unbatched", {}),
]


def _encoder_pair(options, layers, norm):
    theirs_layer = torch.nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, **options).double()
    ours_layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, **options)
    with torch.no_grad():  # biases and norms away from their initial zeros and ones
        for p in theirs_layer.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    if not layers:
        return _loaded(ours_layer, theirs_layer), theirs_layer
    theirs = torch.nn.TransformerEncoder(theirs_layer, layers, norm=torch.nn.LayerNorm(E).double() if norm else None,
                                         enable_nested_tensor=False)
    ours = nn.TransformerEncoder(ours_layer, layers, norm=nn.LayerNorm(E) if norm else None)
    return _loaded(ours, theirs), theirs


@pytest.mark.parametrize("stack", [0, 2], ids=["layer", "encoder"])
@pytest.mark.parametrize("call", TEL_CALLS, ids=[c[0] for c in TEL_CALLS])
@pytest.mark.parametrize("options", TEL_OPTIONS, ids=[o[0] for o in TEL_OPTIONS])
def test_transformer_encoder_equals_pytorch(options, call, stack):
    options, (name, call) = options[1], call
    ours, theirs = _encoder_pair(options, stack, norm=bool(stack))
    ours.eval(), theirs.eval()  # dropout 0.1 (the default) is off in evaluation, in both
    x = RNG.standard_normal((L, E) if name == "unbatched" else (N, L, E) if options.get("batch_first") else (L, N, E))
    tx, dx = torch.tensor(x, requires_grad=True), dg.tensor(x, requires_grad=True)
    if stack:
        call = {{"src_key_padding_mask": "src_key_padding_mask"}.get(k, k): v for k, v in call.items()}
    else:
        call = {{"mask": "src_mask"}.get(k, k): v for k, v in call.items()}
    t_out = theirs(tx, **{k: _t(v) if isinstance(v, np.ndarray) else v for k, v in call.items()})
    d_out = ours(dx, **call)
    _same_gradients(ours, theirs, [dx], [tx], [d_out], [t_out])


def test_transformer_encoder_layer_takes_a_callable_activation():
    theirs = torch.nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, activation=TF.silu).double()
    ours = _loaded(nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, activation=F.silu), theirs)
    module = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, activation=nn.GELU())
    assert [name for name, _ in module.named_children()][-1] == "activation"  # a Module is a child, as PyTorch's
    ours.eval(), theirs.eval()
    x = RNG.standard_normal((L, N, E))
    tx, dx = torch.tensor(x, requires_grad=True), dg.tensor(x, requires_grad=True)
    _same_gradients(ours, theirs, [dx], [tx], [ours(dx)], [theirs(tx)])


def test_transformer_encoder_copies_the_layer():
    layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12)
    encoder = nn.TransformerEncoder(layer, 3)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12), 3,
                                         enable_nested_tensor=False)
    assert list(encoder.state_dict()) == list(theirs.state_dict())
    weights = [m.linear1.weight for m in encoder.layers]
    assert len({id(w) for w in weights} | {id(layer.linear1.weight)}) == 4  # each layer its own copy
    assert all((w.numpy() == layer.linear1.weight.numpy()).all() for w in weights)  # of the same values
    with dg.no_grad():
        encoder.layers[0].linear1.weight.fill_(0.0)
    assert layer.linear1.weight.numpy().any() and encoder.layers[1].linear1.weight.numpy().any()


def test_transformer_encoder_copies_share_the_layers_generator():
    rng = np.random.default_rng(5)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, generator=rng), 2)
    # copies of the generator would draw the same masks in every layer
    assert all(m.generator is rng for layer in encoder.layers for m in layer.modules() if hasattr(m, "generator"))


def test_attention_gradcheck():
    mha = nn.MultiheadAttention(4, 2, kdim=3, add_bias_kv=True)
    q, k, v = RNG.standard_normal((3, 2, 4)), RNG.standard_normal((5, 2, 3)), RNG.standard_normal((5, 2, 4))
    mask = np.array([[False] * 5, [False, False, True, True, True]])
    assert dg.gradcheck(lambda q, k, v: dg.sum(dg.sin(mha(q, k, v, key_padding_mask=mask)[0])), q, k, v)
    causal = np.tri(3, 5, dtype=bool)
    assert dg.gradcheck(lambda q, k, v: dg.sum(dg.sin(F.scaled_dot_product_attention(q, k, v, attn_mask=causal))),
                        q[:, 0, :3], k[:, 0, :3], v[:, 0, :3], order=2)


def test_transformer_layers_train_with_dropout_and_compile():
    layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, dropout=0.0, batch_first=True)
    x = RNG.standard_normal((N, L, E))

    def loss_of(x):
        return dg.sum(layer(x, src_key_padding_mask=PADDING[:, :L]) ** 2)

    loss = loss_of(x)
    layer.zero_grad()
    loss.backward()
    eager = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    np.testing.assert_allclose(float(_compiled_step(layer, loss_of)(x)), float(loss.numpy()), **TOL)
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), eager[name], err_msg=name, **TOL)
    dropping = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=12, generator=np.random.default_rng(0))
    x = RNG.standard_normal((L, N, E))
    a, b = dropping(x).numpy(), dropping(x).numpy()
    dropping.eval()
    assert not np.allclose(a, b) and np.allclose(dropping(x).numpy(), dropping(x).numpy())


def test_layer_norm_without_bias_equals_pytorch():
    theirs, ours = torch.nn.LayerNorm(4, bias=False).double(), nn.LayerNorm(4, bias=False)
    assert list(ours.state_dict()) == ["weight"] and ours.bias is None
    x = RNG.standard_normal((3, 4))
    tx, dx = torch.tensor(x, requires_grad=True), dg.tensor(x, requires_grad=True)
    _same_gradients(_loaded(ours, theirs), theirs, [dx], [tx], [ours(dx)], [theirs(tx)])


def test_deepcopy_of_a_module_copies_parameters_buffers_and_grads():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    model[0].weight.grad = np.ones((3, 2))
    twin = copy.deepcopy(model)
    assert twin[0].weight is not model[0].weight and isinstance(twin[0].weight, nn.Parameter)
    assert twin[1].running_mean is not model[1].running_mean
    assert (twin[0].weight.grad.numpy() == 1).all()
    assert all((a == b).all() for a, b in zip(twin.state_dict().values(), model.state_dict().values()))
    with dg.no_grad():
        twin[0].weight.fill_(0.0)
    assert model[0].weight.numpy().any()
    shared = nn.Linear(2, 2)
    pair = copy.deepcopy(nn.Sequential(shared, shared))
    assert pair[0] is pair[1]  # shared stays shared


# -------------------------------------------------------- bad input: named, at the user's line, nothing changed
def _unchanged(model, call):
    before = {k: v.copy() for k, v in model.state_dict().items()}
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    after = model.state_dict()
    assert all((before[k] == after[k]).all() for k in before)
    return str(info.value)


BAD_CALLS = [
    (lambda: nn.LSTM(4, 6), lambda m: m(np.zeros((2, 3, 4, 4))), r"LSTM: expected input to be 2-D .* got 4-D"),
    (lambda: nn.LSTM(4, 6), lambda m: m(np.zeros((5, 3, 7))), r"LSTM.*expected input of shape \(\.\.\., 4\).*got "
                                                                r"\(5, 3, 7\)"),
    (lambda: nn.GRU(4, 6), lambda m: m(np.zeros((5, 3, 4)), np.zeros((2, 3, 6))),
     r"GRU: expected hx of shape \(1, 3, 6\), got \(2, 3, 6\)"),
    (lambda: nn.LSTM(4, 6), lambda m: m(np.zeros((5, 3, 4)), np.zeros((1, 3, 6))), r"LSTM: hx must be a pair"),
    (lambda: nn.RNN(4, 6), lambda m: m(np.zeros((5, 4)), np.zeros((1, 3, 6))),
     r"RNN: for unbatched 2-D input, hx should be 2-D \(1, 6\), got shape \(1, 3, 6\)"),
    (lambda: nn.LSTM(4, 6), lambda m: m(np.zeros((5, 3, 4)), lengths=[5, 6, 1]),
     r"LSTM: lengths must be in \[0, 5\].*from 1 to 6"),
    (lambda: nn.LSTM(4, 6), lambda m: m(np.zeros((5, 3, 4)), lengths=[5, 2]),
     r"LSTM: lengths must have shape \(3,\).*got \(2,\)"),
    (lambda: nn.LSTM(4, 6), lambda m: m(np.zeros((5, 3, 4)), lengths=[5.0, 2.0, 1.0]), r"lengths must be integers"),
    (lambda: nn.GRU(4, 6), lambda m: m(np.zeros((5, 3, 4), np.int64)), r"GRU: expected a floating-point input"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(np.zeros((5, 3, 8)), np.zeros((6, 3, 8)), np.zeros((6, 3, 8)),
                                                      key_padding_mask=np.zeros((3, 5), bool)),
     r"MultiheadAttention: key_padding_mask must have shape \(3, 6\), got \(3, 5\)"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(np.zeros((5, 3, 8)), np.zeros((6, 3, 8)), np.zeros((6, 3, 8)),
                                                      attn_mask=np.zeros((5, 6), np.int64)),
     r"MultiheadAttention: attn_mask must be a bool or floating-point mask, got dtype int64"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(np.zeros((5, 3, 8)), np.zeros((6, 3, 8)), np.zeros((6, 3, 8)),
                                                      attn_mask=np.zeros((3, 5, 6), bool)),
     r"attn_mask must have shape \(5, 6\) or \(6, 5, 6\), got \(3, 5, 6\)"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(np.zeros((5, 3, 7)), np.zeros((5, 3, 8)), np.zeros((5, 3, 8))),
     r"MultiheadAttention \(query\): expected input of shape \(\.\.\., 8\), got \(5, 3, 7\)"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(np.zeros((5, 8)), np.zeros((5, 3, 8)), np.zeros((5, 3, 8))),
     r"all 3-D \(batched\) or all 2-D \(unbatched\)"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(np.zeros((5, 3, 8)), np.zeros((5, 3, 8)), np.zeros((5, 3, 8)),
                                                      is_causal=True), r"is_causal=True is a hint"),
    (lambda: nn.TransformerEncoderLayer(8, 2, 16), lambda m: m(np.zeros((5, 3, 6))),
     r"TransformerEncoderLayer: expected input of shape .*8\), got \(5, 3, 6\)"),
]


@pytest.mark.parametrize("make, call, message", BAD_CALLS)
def test_bad_input_names_the_layer_shapes_and_line(make, call, message):
    model = make()
    text = _unchanged(model, lambda: call(model))
    assert re.search(message, text), text
    assert "test_nn_sequence.py" in text, text


def test_packed_sequences_are_refused_with_the_way_to_pass_lengths():
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(5, 2, 4), torch.tensor([5, 3]))
    with pytest.raises(TypeError, match=r"LSTM: PackedSequence input is not supported.*lengths=lengths"):
        nn.LSTM(4, 6)(packed)


BAD_OPTIONS = [
    (lambda: nn.LSTM(4, 0), ValueError, r"LSTM: hidden_size must be greater than zero, got 0"),
    (lambda: nn.GRU(4, 3.0), TypeError, r"GRU: hidden_size must be an integer"),
    (lambda: nn.RNN(4, 3, num_layers=0), ValueError, r"RNN: num_layers must be greater than zero"),
    (lambda: nn.RNN(4, 3, nonlinearity="sigmoid"), ValueError, r"RNN: unknown nonlinearity 'sigmoid'"),
    (lambda: nn.LSTM(4, 3, dropout=1.5), ValueError, r"LSTM: dropout should be a number in range \[0, 1\]"),
    (lambda: nn.LSTM(4, 3, proj_size=3), ValueError, r"proj_size \(3\) has to be smaller than hidden_size \(3\)"),
    (lambda: nn.GRU(4, 3, proj_size=1), ValueError, r"proj_size argument is only supported for LSTM"),
    (lambda: nn.MultiheadAttention(10, 3), ValueError, r"embed_dim must be divisible by num_heads, got embed_dim=10 "
                                                       r"and num_heads=3"),
    (lambda: nn.MultiheadAttention(0, 1), ValueError, r"embed_dim and num_heads must be greater than 0"),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"), ValueError, r"activation should be relu/gelu"),
]


@pytest.mark.parametrize("make, error, message", BAD_OPTIONS)
def test_bad_options_are_refused_at_construction(make, error, message):
    with pytest.raises(error, match=message) as info:
        make()
    assert "test_nn_sequence.py" in str(info.value)


def test_sdpa_bad_input():
    q, k, v = (np.zeros(s) for s in QKV)
    with pytest.raises(ValueError, match=r"attn_mask of shape \(4, 6\) does not broadcast to the scores' shape "
                                         r"\(2, 3, 5, 6\).*" + _here(1)):
        F.scaled_dot_product_attention(q, k, v, attn_mask=np.zeros((4, 6), bool))
    with pytest.raises(TypeError, match=r"attn_mask must be a bool or floating-point mask, got dtype int64"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=np.zeros((5, 6), np.int64))
    with pytest.raises(ValueError, match=r"attn_mask and is_causal=True both given"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=np.ones((5, 6), bool), is_causal=True)
    with pytest.raises(ValueError, match=r"expected query \(\.\.\., L, E\), key \(\.\.\., S, E\).*\(2, 3, 6, 5\)"):
        F.scaled_dot_product_attention(q, np.zeros((2, 3, 6, 5)), v)


STATE_DICT_ERRORS = [
    ("missing", lambda sd: sd.pop("bias_hh_l0"), r"LSTM.load_state_dict: missing keys: bias_hh_l0"),
    ("unexpected", lambda sd: sd.update(weight_hr_l0=np.zeros((2, 6))), r"unexpected keys: weight_hr_l0"),
    ("wrong shape", lambda sd: sd.update(weight_ih_l0=np.zeros((24, 5))),
     r"weight_ih_l0: shape mismatch, the model has \(24, 4\), the state dict \(24, 5\)"),
]


@pytest.mark.parametrize("name, edit, message", STATE_DICT_ERRORS, ids=[e[0] for e in STATE_DICT_ERRORS])
def test_a_bad_state_dict_is_refused_naming_the_key(name, edit, message):
    model = nn.LSTM(4, 6)
    state = {k: v.detach().numpy() for k, v in torch.nn.LSTM(4, 6).double().state_dict().items()}
    edit(state)
    before = {k: v.copy() for k, v in model.state_dict().items()}
    with pytest.raises(nn.StateDictError, match=message + r".*nothing was loaded.*" + _here(1)):
        model.load_state_dict(state)
    assert all((before[k] == v).all() for k, v in model.state_dict().items())


# ---------------------------------------------------------------- Linear on 3-D input: one matrix product backward
def test_linear_weight_gradient_of_a_batch_of_sequences_is_one_matrix_product():
    layer = nn.Linear(4, 3)
    x = RNG.standard_normal((2, 5, 4))

    def loss_of(x):
        return dg.sum(layer(x) ** 2)

    step = _compiled_step(layer, loss_of)
    step(x)
    ops = [node.op.name for node in step.graph(x).nodes if node.op is not None]
    assert "einsum" not in ops  # NumPy's einsum over two batch axes was 77 of 140 ms of a Transformer's backward
    theirs = torch.nn.Linear(4, 3).double()
    _loaded(layer, theirs)
    tx, dx = torch.tensor(x, requires_grad=True), dg.tensor(x, requires_grad=True)
    layer.zero_grad()
    _same_gradients(layer, theirs, [dx], [tx], [layer(dx)], [theirs(tx)])
