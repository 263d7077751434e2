"""Issue 14, the habits of PyTorch users: loss modules, containers, activations, clip_grad_* and Module methods,
each against PyTorch (values and gradients, float32 and float64), central differences, static graphs, and the
errors a PyTorch user meets."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F
from dagrad import nn

RNG = np.random.default_rng(14)
DTYPES = (np.float32, np.float64)
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}
# logits and activations' inputs from far negative to far positive, with the kinks and thresholds themselves
EDGES = np.array([-1000.0, -50.0, -30.0, -20.0, -3.0, -1.0, -1e-3, 0.0, 1e-3, 1.0, 2.5, 3.0, 19.9, 20.0, 20.1, 50.0,
                  1000.0])


def _torch():
    return pytest.importorskip("torch", reason="the oracle tier needs torch (pip install -e '.[dev]')")


def _here(offset=1):
    """'test_nn_torch.py:N' for the caller's line plus `offset` (errors name the user's line)."""
    return f"test_nn_torch.py:{sys._getframe(1).f_lineno + offset}"


def _against_torch(ours, theirs, *arrays, diff=(0,), dtype=np.float64, rtol=None, atol=None):
    """ours(*dagrad tensors) and theirs(*torch tensors): the same values and dtype, and the same gradients of
    sum(out * u) (u random) with respect to the arrays at the positions `diff`. Integer arrays stay integers."""
    torch = _torch()
    tol = dict(TOL[dtype], **{k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None})
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
    ds = [dg.tensor(a, requires_grad=i in diff) if a.dtype.kind == "f" else a for i, a in enumerate(arrays)]
    ts = [torch.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    out_d, out_t = ours(*ds), theirs(*ts)
    assert out_d.dtype == out_t.detach().numpy().dtype
    np.testing.assert_allclose(out_d.numpy(), out_t.detach().numpy(), **tol)
    u = RNG.uniform(0.5, 1.5, out_d.shape).astype(out_d.dtype)
    dg.sum(out_d * u).backward()
    (out_t * torch.tensor(u)).sum().backward()
    for i in diff:
        np.testing.assert_allclose(ds[i].grad.numpy(), ts[i].grad.numpy(), err_msg=f"gradient of argument {i}", **tol)
    return out_d


# ---------------------------------------------------------------- activations
# (case, function name in both libraries, keyword arguments)
ACTIVATIONS = [
    ("gelu", "gelu", {}), ("gelu tanh", "gelu", {"approximate": "tanh"}), ("silu", "silu", {}),
    ("leaky_relu", "leaky_relu", {}), ("leaky_relu 0.2", "leaky_relu", {"negative_slope": 0.2}),
    ("elu", "elu", {}), ("elu 0.5", "elu", {"alpha": 0.5}), ("softplus", "softplus", {}),
    ("softplus beta 2 threshold 5", "softplus", {"beta": 2.0, "threshold": 5.0}),
    ("softplus beta 0.5", "softplus", {"beta": 0.5}), ("softmax 0", "softmax", {"dim": 0}),
    ("softmax -1", "softmax", {"dim": -1}), ("log_softmax 1", "log_softmax", {"dim": 1}),
]


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, kwargs", [a[1:] for a in ACTIVATIONS], ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_gradients_match_torch(name, kwargs, dtype):
    torch = _torch()
    x = np.concatenate([EDGES[None, :], RNG.standard_normal((3, EDGES.size)) * 4])
    if "softmax" in name:
        x = np.clip(x, -60, 60)  # the same rows, without the exp(1000) that overflows float32 in both
    out = _against_torch(lambda v: getattr(F, name)(v, **kwargs),
                         lambda v: getattr(torch.nn.functional, name)(v, **kwargs), x, dtype=dtype)
    assert out.dtype == dtype


@pytest.mark.oracle
@pytest.mark.parametrize("inplace", [False, True])
def test_activation_modules_match_torch_in_values_and_repr(inplace):
    torch = _torch()
    pairs = [
        (nn.GELU(), torch.nn.GELU()),
        (nn.GELU("tanh"), torch.nn.GELU("tanh")),
        (nn.SiLU(inplace=inplace), torch.nn.SiLU(inplace=inplace)),
        (nn.LeakyReLU(0.2, inplace), torch.nn.LeakyReLU(0.2, inplace)),
        (nn.ELU(0.7, inplace), torch.nn.ELU(0.7, inplace)),
        (nn.ReLU(inplace), torch.nn.ReLU(inplace)),
        (nn.Softplus(2, 4.0), torch.nn.Softplus(2, 4.0)),
        (nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
        (nn.LogSoftmax(dim=0), torch.nn.LogSoftmax(dim=0)),
        (nn.Identity(3, bias=False), torch.nn.Identity(3, bias=False)),
    ]
    x = RNG.standard_normal((4, 5)) * 3
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        # torch's inplace=True changes its input, so it gets a copy of its own; ours returns a new tensor
        xt = torch.tensor(x)
        expected = theirs(xt.clone()).numpy()
        got = ours(dg.tensor(x))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-15)
        assert isinstance(got, dg.Tensor)


def test_identity_returns_its_input_and_the_activations_builtin_points():
    x = dg.tensor([1.0, -2.0])
    assert nn.Identity()(x) is x
    # exact GELU is x * Phi(x) with Phi from the error function
    np.testing.assert_allclose(F.gelu(dg.tensor([-1.0, 0.0, 2.0])).numpy(),
                               [-0.15865525393145707, 0.0, 1.9544997361036416], rtol=1e-15)
    np.testing.assert_allclose(F.elu(dg.tensor([-np.log(2.0)]), alpha=2.0).numpy(), [-1.0], rtol=1e-15)
    np.testing.assert_array_equal(F.softplus(dg.tensor([30.0, 1000.0])).numpy(), [30.0, 1000.0])  # above threshold


@pytest.mark.oracle
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 2)])
def test_implicit_softmax_dim_is_torchs_with_its_warning_at_the_callers_line(shape):
    torch = _torch()
    x = RNG.standard_normal(shape)
    for ours, theirs in ((F.softmax, torch.nn.functional.softmax), (F.log_softmax, torch.nn.functional.log_softmax),
                         (lambda v: nn.Softmax()(v), lambda v: torch.nn.Softmax()(v))):
        with pytest.warns(UserWarning, match="Implicit dimension choice") as record:
            got = ours(dg.tensor(x))
        assert record[0].filename == __file__  # the line that called softmax, not dagrad's
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = theirs(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


@pytest.mark.oracle
def test_softmax_dtype_argument_casts_first():
    torch = _torch()
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    got = F.log_softmax(dg.tensor(x), dim=1, dtype=np.float64)
    expected = torch.nn.functional.log_softmax(torch.tensor(x), dim=1, dtype=torch.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-14)


# central differences: smooth points only (not the kinks of leaky_relu and elu at 0, nor softplus's threshold)
SMOOTH = [
    ("gelu", F.gelu, 2), ("gelu tanh", lambda x: F.gelu(x, approximate="tanh"), 2), ("silu", F.silu, 2),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.3), 1), ("elu", lambda x: F.elu(x, 1.5), 2),
    ("softplus", lambda x: F.softplus(x, 2.0, 10.0), 2), ("softmax", lambda x: F.softmax(x, dim=1), 2),
    ("log_softmax", lambda x: F.log_softmax(x, dim=0), 2),
]


@pytest.mark.parametrize("name, f, order", SMOOTH, ids=[s[0] for s in SMOOTH])
def test_activation_gradcheck(name, f, order):
    x = RNG.standard_normal((3, 4)) * 2
    x[np.abs(x) < 0.05] = 0.5  # away from the kinks at 0
    assert dg.gradcheck(f, x, order=order)


# ---------------------------------------------------------------- losses: functional forms
REDUCTIONS = ("mean", "sum", "none")


def _regression_data(dtype, beta=1.0):
    """input and target with equal entries (d = 0) and entries exactly beta apart (the kink)."""
    x, t = RNG.standard_normal((4, 5)) * 2, RNG.standard_normal((4, 5))
    x[0, :2] = t[0, :2]
    x[1, :2] = t[1, :2] + np.array([beta, -beta])
    return x.astype(dtype), t.astype(dtype)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("loss, option, values", [
    ("l1_loss", None, [None]), ("smooth_l1_loss", "beta", [1.0, 0.5, 0.0, 2.0]),
    ("huber_loss", "delta", [1.0, 0.3, 2.0]),
])
def test_regression_losses_match_torch(loss, option, values, reduction, dtype):
    torch = _torch()
    for value in values:
        kwargs = {"reduction": reduction, **({option: value} if option else {})}
        x, t = _regression_data(dtype, value or 1.0)
        _against_torch(lambda a, b: getattr(F, loss)(a, b, **kwargs),
                       lambda a, b: getattr(torch.nn.functional, loss)(a, b, **kwargs), x, t, diff=(0, 1), dtype=dtype)


def test_regression_loss_values_by_hand():
    x, t = dg.tensor([0.5, -3.0, 1.0]), dg.tensor([0.0, 0.0, 1.0])
    np.testing.assert_allclose(F.l1_loss(x, t, reduction="none").numpy(), [0.5, 3.0, 0.0])
    np.testing.assert_allclose(F.smooth_l1_loss(x, t, reduction="none", beta=2.0).numpy(), [0.0625, 2.0, 0.0])
    np.testing.assert_allclose(F.huber_loss(x, t, reduction="none", delta=2.0).numpy(), [0.125, 4.0, 0.0])
    np.testing.assert_allclose(F.smooth_l1_loss(x, t, beta=0.0).item(), F.l1_loss(x, t).item())  # beta 0: L1


def _distributions(shape, dtype, zeros=True):
    logits = RNG.standard_normal(shape) * 2
    target = RNG.dirichlet(np.ones(shape[-1]), size=shape[:-1])
    if zeros:
        target[..., 0] = 0.0  # 0 * log 0 counts as 0
        target /= target.sum(-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return logp.astype(dtype), target.astype(dtype)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ("mean", "batchmean", "sum", "none"))
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4)])
def test_kl_div_matches_torch(shape, reduction, dtype):
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # both warn about reduction='mean'
        logp, target = _distributions(shape, dtype)
        # with zeros in the target only the input's gradient is compared: PyTorch's target gradient there is NaN
        _against_torch(lambda a, b: F.kl_div(a, b, reduction=reduction),
                       lambda a, b: torch.nn.functional.kl_div(a, b, reduction=reduction), logp, target, dtype=dtype)
        logp, target = _distributions(shape, dtype, zeros=False)
        _against_torch(lambda a, b: F.kl_div(a, b, reduction=reduction),
                       lambda a, b: torch.nn.functional.kl_div(a, b, reduction=reduction), logp, target,
                       diff=(0, 1), dtype=dtype)
        _against_torch(lambda a, b: F.kl_div(a, b, reduction, log_target=True),
                       lambda a, b: torch.nn.functional.kl_div(a, b, reduction=reduction, log_target=True),
                       logp, np.log(target), diff=(0, 1), dtype=dtype)


def test_kl_div_batchmean_is_the_divergence_and_mean_warns_as_torch():
    p = np.array([[0.25, 0.75], [0.5, 0.5]])
    q = np.array([[0.5, 0.5], [0.1, 0.9]])
    expected = np.sum(p * np.log(p / q)) / 2
    got = F.kl_div(dg.tensor(np.log(q)), dg.tensor(p), reduction="batchmean")
    np.testing.assert_allclose(got.item(), expected, rtol=1e-14)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(dg.tensor(np.log(q)), dg.tensor(p))


def _logits_and_targets(dtype, shape=(4, 3)):
    x = RNG.standard_normal(shape) * 3
    x.flat[:6] = [-1000.0, -40.0, 0.0, 15.0, 40.0, 1000.0]
    t = RNG.uniform(0, 1, shape)
    t.flat[:6] = [0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    return x.astype(dtype), t.astype(dtype)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight", [None, "class", "element"])
@pytest.mark.parametrize("pos_weight", [None, "class"])
def test_bce_with_logits_matches_torch(pos_weight, weight, reduction, dtype):
    torch = _torch()
    x, t = _logits_and_targets(dtype)
    shapes = {None: None, "class": (3,), "element": (4, 3)}
    w = None if weight is None else RNG.uniform(0.5, 2, shapes[weight]).astype(dtype)
    pw = None if pos_weight is None else RNG.uniform(0.5, 3, shapes[pos_weight]).astype(dtype)
    opt = lambda v, tensor: None if v is None else tensor(v)  # noqa: E731
    # PyTorch rounds a loss or gradient of about 1e-18 (a logit of -40 or 40 on the right side) to 0: an atol
    _against_torch(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, opt(w, dg.tensor), reduction, opt(pw, dg.tensor)),
        lambda a, b: torch.nn.functional.binary_cross_entropy_with_logits(
            a, b, opt(w, torch.tensor), reduction=reduction, pos_weight=opt(pw, torch.tensor)),
        x, t, diff=(0, 1), dtype=dtype)


@pytest.mark.parametrize("t", [0.0, 1.0])
def test_bce_with_logits_is_exact_for_large_logits_where_torch_rounds(t):
    # softplus(x) - t x, exactly: log(1 + e^x) for t = 0 and log(1 + e^-x) for t = 1; the gradient sigmoid(x) - t
    x = np.array([-700.0, -40.0, -30.0, -20.0, -1.0, 0.0, 1.0, 20.0, 30.0, 40.0, 700.0])
    xt = dg.tensor(x, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(xt, dg.tensor(np.full_like(x, t)), reduction="none")
    dg.sum(loss).backward()
    side = x if t == 0 else -x
    np.testing.assert_allclose(loss.numpy(), np.logaddexp(0, side), rtol=1e-14, atol=0)
    sig = np.where(side >= 0, 1 / (1 + np.exp(-side)), np.exp(side) / (1 + np.exp(side)))  # sigmoid(side)
    np.testing.assert_allclose(xt.grad.numpy(), sig if t == 0 else -sig, rtol=1e-14, atol=0)


def test_bce_with_logits_pos_weight_by_hand():
    # at x = 0, t = 1: pos_weight * log 2; at t = 0 pos_weight plays no part
    got = F.binary_cross_entropy_with_logits(dg.tensor([[0.0, 0.0]]), dg.tensor([[1.0, 0.0]]), reduction="none",
                                             pos_weight=dg.tensor([3.0, 5.0]))
    np.testing.assert_allclose(got.numpy(), [[3 * np.log(2), np.log(2)]], rtol=1e-15)


LOSS_GRADCHECKS = [
    ("l1", lambda x, t: F.l1_loss(x, t)),
    ("smooth_l1", lambda x, t: F.smooth_l1_loss(x, t, reduction="sum", beta=0.7)),
    ("huber", lambda x, t: F.huber_loss(x, t, delta=0.7)),
    ("bce_with_logits", lambda x, t: F.binary_cross_entropy_with_logits(
        x, F.sigmoid(t), dg.tensor(np.linspace(0.5, 2, 4)), pos_weight=dg.tensor(np.linspace(1, 3, 4)))),
    ("kl_div", lambda x, t: F.kl_div(F.log_softmax(x, dim=1), F.softmax(t, dim=1), reduction="batchmean")),
    ("kl_div log_target", lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True)),
]


@pytest.mark.parametrize("name, f", LOSS_GRADCHECKS, ids=[g[0] for g in LOSS_GRADCHECKS])
def test_loss_gradcheck(name, f):
    x, t = RNG.standard_normal((3, 4)) * 2, RNG.standard_normal((3, 4))
    d = x - t
    x[np.abs(np.abs(d) - 0.7) < 0.05] += 0.2  # away from the kinks of l1, smooth_l1 and huber
    x[np.abs(x - t) < 0.05] += 0.2
    assert dg.gradcheck(f, x, t, order=1 if name in ("l1", "smooth_l1", "huber") else 2)


# ---------------------------------------------------------------- losses: modules
W3, PW3 = RNG.uniform(0.5, 2, 3), RNG.uniform(0.5, 3, 3)
# (case, class name in both libraries, positional and keyword arguments (arrays become each library's tensors),
# the kind of data)
LOSS_MODULES = [
    ("MSELoss", "MSELoss", (), {}, "real"),
    ("MSELoss sum", "MSELoss", (), {"reduction": "sum"}, "real"),
    ("L1Loss none", "L1Loss", (), {"reduction": "none"}, "real"),
    ("SmoothL1Loss", "SmoothL1Loss", (), {"beta": 0.5}, "real"),
    ("HuberLoss", "HuberLoss", ("sum", 0.4), {}, "real"),
    ("KLDivLoss", "KLDivLoss", (), {"reduction": "batchmean"}, "distribution"),
    ("KLDivLoss log_target", "KLDivLoss", (), {"reduction": "sum", "log_target": True}, "log distribution"),
    ("CrossEntropyLoss", "CrossEntropyLoss", (), {}, "classes"),
    ("CrossEntropyLoss all options", "CrossEntropyLoss", (W3,), {"ignore_index": 1, "label_smoothing": 0.2},
     "classes"),
    ("CrossEntropyLoss probabilities", "CrossEntropyLoss", (W3,), {"label_smoothing": 0.1}, "distribution"),
    ("NLLLoss", "NLLLoss", (W3,), {"ignore_index": 2, "reduction": "sum"}, "log classes"),
    ("BCELoss", "BCELoss", (W3,), {}, "probability"),
    ("BCEWithLogitsLoss", "BCEWithLogitsLoss", (W3,), {"pos_weight": PW3, "reduction": "sum"}, "binary"),
]


def _make(cls, args, kwargs, tensor, dtype):
    convert = lambda v: tensor(v.astype(dtype)) if isinstance(v, np.ndarray) else v  # noqa: E731
    return cls(*map(convert, args), **{k: convert(v) for k, v in kwargs.items()})


def _loss_data(kind):
    x = RNG.standard_normal((4, 3)) * 2
    if kind == "real":
        return x, RNG.standard_normal((4, 3)), (0, 1)
    if kind in ("distribution", "log distribution"):
        target = RNG.dirichlet(np.ones(3), size=4)
        return x, (np.log(target) if kind == "log distribution" else target), (0, 1)
    if kind in ("classes", "log classes"):
        logp = x - np.log(np.exp(x).sum(1, keepdims=True))
        return (logp if kind == "log classes" else x), np.array([0, 1, 2, 1]), (0,)
    if kind == "probability":  # p at exactly 0 and 1 too
        p = RNG.uniform(0.05, 0.95, (4, 3))
        p[0, :2] = [0.0, 1.0]
        t = RNG.uniform(0, 1, (4, 3))
        t[0, :2] = [0.0, 1.0]
        return p, t, (0, 1)
    return _logits_and_targets(np.float64) + ((0, 1),)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, args, kwargs, kind", [m[1:] for m in LOSS_MODULES], ids=[m[0] for m in LOSS_MODULES])
def test_loss_modules_match_torch(name, args, kwargs, kind, dtype):
    torch = _torch()
    ours = _make(getattr(nn, name), args, kwargs, np.asarray, dtype)  # dagrad takes arrays as well as tensors
    theirs = _make(getattr(torch.nn, name), args, kwargs, torch.tensor, dtype)
    assert repr(ours) == repr(theirs)
    x, t, diff = _loss_data(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _against_torch(ours, theirs, x, t, diff=diff, dtype=dtype)


@pytest.mark.oracle
def test_loss_weights_are_buffers_as_torchs():
    torch = _torch()
    w, pw = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 4.0])
    for ours, theirs in ((nn.CrossEntropyLoss(w), torch.nn.CrossEntropyLoss(torch.tensor(w))),
                         (nn.NLLLoss(w), torch.nn.NLLLoss(torch.tensor(w))),
                         (nn.BCELoss(), torch.nn.BCELoss()),
                         (nn.BCEWithLogitsLoss(w, pos_weight=pw),
                          torch.nn.BCEWithLogitsLoss(torch.tensor(w), pos_weight=torch.tensor(pw)))):
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert list(ours.parameters()) == []
        for key, value in theirs.state_dict().items():
            np.testing.assert_array_equal(ours.state_dict()[key], value.numpy())


def test_loss_modules_are_usable_in_a_model_and_train():
    dg.nn.init.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.Linear(8, 1))
    loss_fn = nn.HuberLoss(delta=0.5)
    x = dg.tensor(RNG.standard_normal((16, 3)))
    y = dg.tensor(x.numpy() @ np.array([[1.0], [-2.0], [0.5]]))
    first = loss_fn(model(x), y).item()
    for _ in range(50):
        model.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for p in model.parameters():
            p.value[...] -= 0.1 * p.grad.numpy()
    assert loss.item() < first / 4


# ---------------------------------------------------------------- static graphs and dg.compile
GRAPH_FUNCTIONS = [
    ("activations", lambda x, w: F.log_softmax(F.gelu(x @ w) + F.silu(x @ w) + F.elu(x @ w, 0.5)
                                               + F.leaky_relu(x @ w, 0.1) + F.softplus(x @ w, 2.0, 3.0), dim=1)[:, 0]),
    ("softmax", lambda x, w: F.softmax(F.gelu(x @ w, approximate="tanh"), dim=1)),
    ("regression losses", lambda x, w: dg.stack([F.l1_loss(x @ w, x[:, :2]), F.smooth_l1_loss(x @ w, x[:, 1:3]),
                                                 F.huber_loss(x @ w, x[:, :2], reduction="sum", delta=0.3)])),
    ("bce_with_logits", lambda x, w: F.binary_cross_entropy_with_logits(
        x @ w, F.sigmoid(x[:, :2]), pos_weight=np.array([2.0, 0.5]), reduction="sum")),
    ("kl_div", lambda x, w: F.kl_div(F.log_softmax(x @ w, dim=1), F.softmax(x[:, :2], dim=1), reduction="sum")),
]


@pytest.mark.parametrize("name, f", GRAPH_FUNCTIONS, ids=[g[0] for g in GRAPH_FUNCTIONS])
def test_new_functions_in_a_static_graph_and_compiled(name, f):
    X, W = RNG.standard_normal((5, 3)) * 2, RNG.standard_normal((3, 2))
    loss_of = lambda x, w: dg.sum(f(x, w))  # noqa: E731
    value, grad = dg.value_and_grad(loss_of, argnums=1)(X, W)
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        w = dg.Variable(W, name="w")
        loss = loss_of(x, w)
        (gw,) = dg.gradients(loss, [w])
    got, got_gw = dg.Session(g).run([loss, gw], feed_dict={x: X})
    np.testing.assert_allclose(got, value, rtol=1e-12)
    np.testing.assert_allclose(got_gw, grad, rtol=1e-10, atol=1e-14)
    fast_value, fast_grad = dg.compile(dg.value_and_grad(loss_of, argnums=1))(X, W)
    np.testing.assert_allclose(fast_value, value, rtol=1e-12)
    np.testing.assert_allclose(fast_grad, grad, rtol=1e-10, atol=1e-14)


# ---------------------------------------------------------------- containers
def _names(module):
    return [(name, tuple(p.shape)) for name, p in module.named_parameters()]


def _same_tree(ours, theirs):
    assert [(n, tuple(p.shape)) for n, p in theirs.named_parameters()] == _names(ours)
    assert [n for n, _ in theirs.named_modules()] == [n for n, _ in ours.named_modules()]
    assert [type(m).__name__ for m in theirs.modules()] == [type(m).__name__ for m in ours.modules()]


@pytest.mark.oracle
def test_module_list_operations_as_torch():
    torch = _torch()
    lists = []
    for lib in (nn, torch.nn):
        layers = lib.ModuleList([lib.Linear(1, 2), lib.Linear(2, 3)])
        layers.append(lib.Linear(3, 4))
        layers.extend([lib.Linear(4, 5), lib.ReLU()])
        layers.insert(1, lib.Linear(6, 7))
        del layers[0]
        layers[-1] = lib.Linear(8, 9)
        layers += [lib.Tanh()]
        popped = layers.pop(2)
        assert type(popped).__name__ == "Linear" and popped.weight.shape == (4, 3)
        lists.append(layers)
    ours, theirs = lists
    _same_tree(ours, theirs)
    assert len(ours) == len(theirs) == 5
    assert [type(m).__name__ for m in ours] == [type(m).__name__ for m in theirs]
    assert ours[-2] is list(ours)[3] and ours[1:3][0] is ours[1] and type(ours[1:3]) is nn.ModuleList
    assert [n for n, _ in ours[1:3].named_children()] == ["0", "1"]
    combined = ours + nn.ModuleList([nn.ReLU()])
    assert len(combined) == 6 and combined[0] is ours[0]


def test_module_list_registers_for_parameters_state_dict_and_train():
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
            self.heads = nn.ModuleDict({"a": nn.Linear(4, 1), "b": nn.Linear(4, 2)})

        def forward(self, x):
            for block in self.blocks:
                x = dg.tanh(block(x))
            return {name: head(x) for name, head in self.heads.items()}

    tower = Tower()
    assert [n for n, _ in tower.named_parameters()] == [
        "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias", "blocks.2.weight", "blocks.2.bias",
        "heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias"]
    out = tower(dg.tensor(RNG.standard_normal((2, 4))))
    dg.sum(out["a"]) .backward()
    assert all(p.grad is not None for p in tower.blocks.parameters())
    assert tower.heads["b"].weight.grad is None
    assert not any(m.training for m in tower.eval().modules())
    other = Tower()
    other.load_state_dict(tower.state_dict())
    np.testing.assert_array_equal(other.blocks[2].weight.numpy(), tower.blocks[2].weight.numpy())


@pytest.mark.oracle
def test_module_dict_operations_as_torch():
    torch = _torch()
    dicts = []
    for lib in (nn, torch.nn):
        heads = lib.ModuleDict({"cls": lib.Linear(4, 3), "box": lib.Linear(4, 2)})
        heads["act"] = lib.ReLU()
        heads["cls"] = lib.Linear(4, 5)  # replaced in place: the order stays
        heads.update([("extra", lib.Linear(1, 1)), ("box", lib.Linear(4, 6))])
        heads.update(lib.ModuleDict({"z": lib.Tanh()}))
        del heads["act"]
        assert type(heads.pop("z")).__name__ == "Tanh"
        assert "cls" in heads and "act" not in heads and len(heads) == 3
        dicts.append(heads)
    ours, theirs = dicts
    _same_tree(ours, theirs)
    assert list(ours) == list(theirs) == list(ours.keys()) == ["cls", "box", "extra"]
    assert [type(m).__name__ for m in ours.values()] == [type(m).__name__ for m in theirs.values()]
    assert [k for k, _ in ours.items()] == list(theirs.keys())
    ours.clear()
    assert len(ours) == 0 and list(ours.parameters()) == []


def test_container_errors_are_clear_and_change_nothing():
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    with pytest.raises(IndexError, match=r"ModuleList: index 2 is out of range for 2 modules .*" + _here()):
        layers[2]
    with pytest.raises(IndexError, match="index -3 is out of range"):
        layers[-3] = nn.ReLU()
    with pytest.raises(TypeError, match=r"ModuleList.extend: expected a dg.nn.Module, got int .*" + _here()):
        layers.extend([nn.ReLU(), 5])
    with pytest.raises(TypeError, match="ModuleList.extend: expected an iterable of modules, got int"):
        layers.extend(3)
    with pytest.raises(TypeError, match="ModuleList.append: expected a dg.nn.Module, got Tensor"):
        layers.append(dg.tensor(1.0))
    assert [type(m).__name__ for m in layers] == ["ReLU", "Tanh"]
    with pytest.raises(NotImplementedError, match="ModuleList: the module does not define forward"):
        layers(dg.tensor(1.0))

    heads = nn.ModuleDict({"a": nn.ReLU()})
    for key, kind, message in (("keys", KeyError, "attribute 'keys' already exists"),
                               ("training", KeyError, "attribute 'training' already exists"),
                               ("a.b", KeyError, "cannot be empty or contain a dot"),
                               ("", KeyError, "cannot be empty or contain a dot"),
                               (3, TypeError, "module name should be a string, got int")):
        with pytest.raises(kind, match=message):
            heads[key] = nn.Tanh()
    with pytest.raises(KeyError, match="attribute 'update' already exists"):
        heads.update({"b": nn.Tanh(), "update": nn.Tanh()})  # all checked first: "b" is not added either
    with pytest.raises(ValueError, match=r"element #1 has length 3; 2 is required"):
        heads.update([("b", nn.Tanh()), ("c", nn.Tanh(), 1)])
    with pytest.raises(TypeError, match="expected a dg.nn.Module, got float"):
        heads["b"] = 1.0
    with pytest.raises(KeyError):
        heads["missing"]
    assert list(heads) == ["a"] and callable(heads.update) and heads.training is True


# ---------------------------------------------------------------- Module methods
def _block(lib):
    """A user's Module subclass, written once for dagrad's nn and torch's."""
    class Block(lib.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.Linear(2, 3)
            self.act = lib.Tanh()

    return Block()


def _tree(lib):
    """The same tree of modules built from dagrad's nn or torch's, with a shared child (visited once)."""
    root = lib.Sequential(lib.Linear(2, 2), lib.ModuleList([lib.ReLU(), lib.Linear(2, 2)]))
    root.add_module("block", _block(lib))
    root.add_module("again", root[0])
    return root


@pytest.mark.oracle
def test_named_modules_children_and_apply_order_as_torch():
    torch = _torch()
    ours, theirs = _tree(nn), _tree(torch.nn)
    _same_tree(ours, theirs)
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()] == ["0", "1", "block"]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]
    assert [n for n, _ in ours.named_modules(prefix="net")] == [n for n, _ in theirs.named_modules(prefix="net")]
    seen = [], []
    assert ours.apply(lambda m: seen[0].append(type(m).__name__)) is ours
    theirs.apply(lambda m: seen[1].append(type(m).__name__))
    assert seen[0] == seen[1]
    assert seen[0][-1] == "Sequential" and seen[0][:2] == ["Linear", "ReLU"]  # children first, then the module


def test_apply_initialises_weights():
    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)
            nn.init.zeros_(m.bias)

    model = nn.Sequential(nn.Linear(2, 3), nn.GELU(), nn.ModuleList([nn.Linear(3, 1)])).apply(init)
    assert all((p.numpy() == 0.5).all() for n, p in model.named_parameters() if n.endswith("weight"))
    assert all((p.numpy() == 0).all() for n, p in model.named_parameters() if n.endswith("bias"))


def test_requires_grad_freezes_and_unfreezes():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    assert model[0].requires_grad_(False) is model[0]
    assert [p.requires_grad for p in model.parameters()] == [False, False, True, True]
    dg.sum(model(dg.tensor([[1.0, 2.0]]))).backward()
    assert model[0].weight.grad is None and model[1].weight.grad is not None
    model.requires_grad_(requires_grad=True)
    assert all(p.requires_grad for p in model.parameters())


@pytest.mark.oracle
@pytest.mark.parametrize("value", ["tensor", "array"])
def test_assigning_a_plain_tensor_to_a_parameter_is_a_type_error_as_torch(value):
    torch = _torch()
    lin = nn.Linear(2, 2)
    before_weight, before_state = lin.weight, lin.state_dict()
    W = RNG.standard_normal((2, 2))
    new, kind = (dg.tensor(W, requires_grad=True), "dagrad.Tensor") if value == "tensor" else (W, "numpy.ndarray")
    with pytest.raises(TypeError, match=rf"Linear: cannot assign '{kind}' as parameter 'weight' \(dg.nn.Parameter "
                                        rf"or None expected\) at .*" + _here()):
        lin.weight = new
    assert lin.weight is before_weight and lin.__dict__["weight"] is before_weight
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    assert all((before_state[k] == v).all() for k, v in lin.state_dict().items())
    with pytest.raises(TypeError, match=r"cannot assign 'torch\..*' as parameter 'weight' \(torch.nn.Parameter"):
        torch.nn.Linear(2, 2).weight = torch.tensor(W)


@pytest.mark.oracle
def test_assigning_parameters_none_and_modules_keeps_the_order_as_torch():
    torch = _torch()
    trees = []
    for lib, Param, array in ((nn, nn.Parameter, np.zeros), (torch.nn, torch.nn.Parameter, torch.zeros)):
        m = lib.Module()
        m.a = lib.Linear(1, 1)
        m.b = lib.Linear(1, 2)
        m.w = Param(array(3))
        m.v = Param(array(4))
        m.a = lib.Linear(1, 3)  # replaced: stays first
        m.w = Param(array(5))  # replaced: stays before v
        m.v = None
        m.v = Param(array(6))
        trees.append(m)
    ours, theirs = trees
    _same_tree(ours, theirs)
    assert [n for n, _ in ours.named_parameters()] == ["w", "v", "a.weight", "a.bias", "b.weight", "b.bias"]


def test_add_module_errors_as_torch():
    m = nn.Module()
    m.add_module("fc", nn.Linear(1, 1))
    m.add_module("none", None)
    assert [n for n, _ in m.named_children()] == ["fc"] and m.none is None
    for name, module, kind, message in (("x", 3, TypeError, "int is not a dg.nn.Module subclass"),
                                        (1, nn.ReLU(), TypeError, "module name should be a string"),
                                        ("a.b", nn.ReLU(), KeyError, "cannot be empty or contain a dot"),
                                        ("forward", nn.ReLU(), KeyError, "attribute 'forward' already exists")):
        with pytest.raises(kind, match=message):
            m.add_module(name, module)
    assert [n for n, _ in m.named_children()] == ["fc"]


# ---------------------------------------------------------------- clip_grad_norm_ and clip_grad_value_
def _with_grads(lib, grads, dtype):
    """Parameters (dagrad or torch) with the given gradients, the last one without."""
    torch = _torch() if lib == "torch" else None
    params = []
    for g in grads:
        if lib == "torch":
            p = torch.nn.Parameter(torch.zeros(g.shape, dtype=getattr(torch, np.dtype(dtype).name)))
            p.grad = torch.tensor(g.astype(dtype))
        else:
            p = nn.Parameter(np.zeros(g.shape, dtype))
            p.grad = g.astype(dtype)
        params.append(p)
    params.append(torch.nn.Parameter(torch.zeros(2)) if lib == "torch" else nn.Parameter(np.zeros(2)))
    return params


GRADS = [RNG.standard_normal((3, 4)) * 3, RNG.standard_normal(5), np.array(2.5)]


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf"), "inf", 0.5, 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 5.0, 1e6])
def test_clip_grad_norm_matches_torch(max_norm, norm_type, dtype):
    torch = _torch()
    ours, theirs = _with_grads("dagrad", GRADS, dtype), _with_grads("torch", GRADS, dtype)
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert isinstance(total, dg.Tensor) and total.shape == () and total.dtype == dtype
    np.testing.assert_allclose(total.item(), expected.item(), **TOL[dtype])
    for p, q in zip(ours[:-1], theirs[:-1]):
        assert p.grad.dtype == dtype
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), **TOL[dtype])
    assert ours[-1].grad is None


def test_clip_grad_norm_scales_by_torchs_coefficient_only_when_below_one():
    (p,) = _with_grads("dagrad", [np.array([3.0, 4.0])], np.float64)[:1]
    version = p.grad._version
    assert nn.utils.clip_grad_norm_(p, 5.0).item() == 5.0  # coefficient 5 / (5 + 1e-6) < 1: scaled
    np.testing.assert_allclose(p.grad.numpy(), np.array([3.0, 4.0]) * 5 / (5 + 1e-6), rtol=1e-15)
    assert p.grad._version == version + 1  # an in-place write of the gradient's own array
    q = nn.Parameter(np.zeros(2))
    q.grad = np.array([3.0, 4.0])
    nn.utils.clip_grad_norm_(iter([q]), 6.0)  # coefficient above 1: untouched (any iterable of parameters)
    np.testing.assert_array_equal(q.grad.numpy(), [3.0, 4.0])
    assert q.grad._version == 0
    total = nn.utils.clip_grad_norm_([nn.Parameter(np.zeros(2))], 1.0)  # no gradients at all
    assert total.item() == 0.0


@pytest.mark.oracle
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_clip_grad_norm_nonfinite_as_torch(bad):
    torch = _torch()
    grads = [np.array([1.0, bad, 2.0]), np.array([3.0, 4.0])]
    ours, theirs = _with_grads("dagrad", grads, np.float64), _with_grads("torch", grads, np.float64)
    with pytest.raises(RuntimeError, match=r"clip_grad_norm_: the total norm of order 2.0 of the gradients is "
                                           r"non-finite .* at .*" + _here()):
        nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(ours[0].grad.numpy(), grads[0])  # nothing was scaled
    np.testing.assert_array_equal(ours[1].grad.numpy(), grads[1])
    total = nn.utils.clip_grad_norm_(ours, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    np.testing.assert_array_equal(total.numpy(), expected.numpy())
    for p, q in zip(ours[:-1], theirs[:-1]):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())  # NaN where torch has NaN


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("clip_value", [0.0, 0.7, 100.0])
def test_clip_grad_value_matches_torch(clip_value, dtype):
    torch = _torch()
    grads = [g if g.ndim else g.reshape(1) for g in GRADS] + [np.array([np.nan, -np.inf, np.inf])]
    ours, theirs = _with_grads("dagrad", grads, dtype), _with_grads("torch", grads, dtype)
    assert nn.utils.clip_grad_value_(ours, clip_value) is None
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    for p, q in zip(ours[:-1], theirs[:-1]):
        assert p.grad.dtype == dtype
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_clip_grad_errors_are_clear_and_change_nothing():
    p = nn.Parameter(np.zeros(2))
    p.grad = np.array([3.0, 4.0])
    for call, kind, message in (
        (lambda: nn.utils.clip_grad_norm_([p], -1.0), ValueError, "max_norm must be a non-negative number, got -1.0"),
        (lambda: nn.utils.clip_grad_norm_([p], "1"), ValueError, "max_norm must be a non-negative number"),
        (lambda: nn.utils.clip_grad_norm_([p], 1.0, norm_type="two"), ValueError, "norm_type must be a number"),
        (lambda: nn.utils.clip_grad_norm_([p, np.ones(2)], 1.0), TypeError, "parameters must be Tensors, got a "
                                                                            "ndarray"),
        (lambda: nn.utils.clip_grad_norm_(5, 1.0), TypeError, "must be a Tensor or an iterable of Tensors, got int"),
        (lambda: nn.utils.clip_grad_value_([p], -0.5), ValueError, "clip_value must be a non-negative number"),
    ):
        with pytest.raises(kind, match=message) as info:
            call()
        assert "test_nn_torch.py:" in str(info.value)
        np.testing.assert_array_equal(p.grad.numpy(), [3.0, 4.0])


def test_clip_grad_refuses_a_gradient_in_a_static_graph_or_traced():
    with dg.Graph():
        v = dg.Variable(np.ones(2), name="v")
    p = nn.Parameter(np.zeros(2))
    p._grad = v  # set behind the setter, which refuses it too
    with pytest.raises(TypeError, match="clip_grad_norm_: expected an eager Tensor or a NumPy array"):
        nn.utils.clip_grad_norm_([p], 1.0)


# ---------------------------------------------------------------- bad input: clear errors at the user's line
ERRORS = [
    (lambda x: F.l1_loss(x, x, reduction="avg"), ValueError, "l1_loss: reduction must be 'mean', 'sum' or 'none', "
                                                             "got 'avg'"),
    (lambda x: F.smooth_l1_loss(x, x[:1]), ValueError, r"smooth_l1_loss: input shape \(2, 3\) and target shape "
                                                       r"\(1, 3\) differ"),
    (lambda x: F.smooth_l1_loss(x, x, beta=-1.0), ValueError, "smooth_l1_loss: beta must be a non-negative number"),
    (lambda x: F.huber_loss(x, x, delta=0.0), ValueError, "huber_loss: delta must be a positive number, got 0.0"),
    (lambda x: F.huber_loss(x, x.T), ValueError, r"huber_loss: input shape \(2, 3\) and target shape \(3, 2\)"),
    (lambda x: F.kl_div(x, x, reduction="batch"), ValueError, "kl_div: reduction must be 'mean', 'batchmean', 'sum' "
                                                              "or 'none', got 'batch'"),
    (lambda x: F.kl_div(x, x[0], reduction="sum"), ValueError, r"kl_div: input shape \(2, 3\) and target shape \(3,\)"),
    (lambda x: F.binary_cross_entropy_with_logits(x, x[0]), ValueError, r"binary_cross_entropy_with_logits: target "
                                                                        r"size \(3,\) must be the same as input size"),
    (lambda x: F.binary_cross_entropy_with_logits(x, x, pos_weight=np.ones(2)), ValueError,
     r"pos_weight of shape \(2,\) does not broadcast to the input's shape \(2, 3\)"),
    (lambda x: F.binary_cross_entropy_with_logits(x, x, weight=np.ones((3, 2, 3))), ValueError,
     r"weight of shape \(3, 2, 3\) does not broadcast"),
    (lambda x: F.binary_cross_entropy_with_logits(x, x, reduction=None), ValueError, "reduction must be"),
    (lambda x: F.gelu(x, approximate="fast"), ValueError, "gelu: approximate must be 'none' or 'tanh', got 'fast'"),
    (lambda x: F.leaky_relu(x, "0.1"), TypeError, "leaky_relu: negative_slope must be a real number, got '0.1'"),
    (lambda x: F.softplus(x, beta=None), TypeError, "softplus: beta must be a real number"),
    (lambda x: F.softmax(x, dim=2), np.exceptions.AxisError, "softmax"),
    (lambda x: nn.MSELoss(reduction="elementwise"), ValueError, "MSELoss: reduction must be one of 'mean', 'sum', "
                                                                "'none', got 'elementwise'"),
    (lambda x: nn.KLDivLoss(reduction="avg"), ValueError, "KLDivLoss: reduction must be one of 'mean', 'sum', 'none', "
                                                          "'batchmean'"),
    (lambda x: nn.CrossEntropyLoss(label_smoothing=1.5), ValueError, "CrossEntropyLoss: label_smoothing must be in"),
    (lambda x: nn.NLLLoss(ignore_index=1.5), TypeError, "NLLLoss: ignore_index must be an integer"),
    (lambda x: nn.SmoothL1Loss(beta=-0.1), ValueError, "SmoothL1Loss: beta must be a non-negative number"),
    (lambda x: nn.HuberLoss(delta=-1), ValueError, "HuberLoss: delta must be a positive number"),
    (lambda x: nn.GELU("erf"), ValueError, "GELU: approximate must be 'none' or 'tanh', got 'erf'"),
    (lambda x: nn.ELU(alpha="1"), TypeError, "ELU: alpha must be a real number"),
    (lambda x: nn.L1Loss()(x, x[:, :2]), ValueError, r"l1_loss: input shape \(2, 3\) and target shape \(2, 2\)"),
]


@pytest.mark.parametrize("call, kind, message", ERRORS, ids=[str(k) for k in range(len(ERRORS))])
def test_bad_input_is_a_clear_error_at_the_users_line(call, kind, message):
    x = dg.tensor(RNG.standard_normal((2, 3)))
    with pytest.raises(kind, match=message) as info:
        call(x)
    assert "test_nn_torch.py:" in str(info.value)


def test_loss_arguments_after_weight_are_keyword_only():
    # PyTorch's constructors take the deprecated size_average there: a positional value is refused, not misread
    with pytest.raises(TypeError):
        nn.CrossEntropyLoss(None, -100)
    with pytest.raises(TypeError):
        nn.MSELoss("sum")
    assert nn.HuberLoss("sum", 2.0).reduction == "sum"  # PyTorch's HuberLoss has no deprecated arguments
