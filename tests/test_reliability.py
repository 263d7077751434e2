"""The reliability table (issue 12): bad input across the public API.

Each row makes some state, calls the API once with a mistake, and asserts that
- the error has the expected type,
- its message names the op (or function, layer, optimiser) and the shapes or dtypes involved,
- its message names THIS file and the line of the call (the user's line),
- nothing changed: Variables, parameters and their `.grad`, optimiser state, running statistics,
  and the number of nodes of every static graph involved are as they were before the call.

A row's call is a one-line lambda: the line the error must name is the lambda's own line.
"""

from __future__ import annotations

import copy
import io
import os
import zipfile
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F
from dagrad.nn import Module

AxisError = np.exceptions.AxisError
HERE = os.path.basename(__file__)


@dataclass
class Row:
    name: str
    make: object  # () -> SimpleNamespace of the objects the call uses (their state is checked)
    call: object  # (c) -> anything; raises
    kind: type
    says: tuple = field(default_factory=tuple)  # fragments the message must contain (op, shapes, dtypes)


# -- the objects rows use
def _arrays():
    return SimpleNamespace(a=dg.tensor(np.ones((2, 3)), requires_grad=True), b=dg.tensor(np.ones(4)),
                           e=dg.tensor(np.zeros(0)), i=dg.tensor(np.array([1, 2])))


def _computed():
    c = _arrays()
    c.y = (c.a * 2.0).sum()
    return c


def _freed():
    c = _computed()
    c.y.backward()
    return c


def _static():
    c = SimpleNamespace(g=dg.Graph())
    with c.g:
        c.x = dg.placeholder((None, 3), name="x")
        c.t = dg.placeholder((None,), dtype="int64", name="t")
        c.w = dg.Variable(np.ones((3, 4)), name="w")
        c.v = dg.Variable(np.zeros(3), name="v")
        c.loss = F.cross_entropy(c.x @ c.w, c.t)
        c.train = dg.optim.SGD([c.w], lr=0.1).minimize(c.loss)
    c.sess = dg.Session(c.g)
    c.other = dg.Graph()
    with c.other:
        c.z = dg.placeholder((3,), name="z")
    return c


def _static_opt():
    c = SimpleNamespace(g=dg.Graph())
    with c.g:
        c.x = dg.placeholder((None, 3), name="x")
        c.w = dg.Variable(np.ones(3), name="w")
        c.loss = dg.sum(c.x @ c.w)
        c.vector = c.x @ c.w
    c.opt = dg.optim.Adam([c.w], lr=0.1)
    return c


class _Broken(dg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        raise ValueError("this backward always fails")


def _static_broken():
    c = SimpleNamespace(g=dg.Graph())
    with c.g:
        c.x = dg.placeholder((3,), name="x")
        c.y = dg.sum(_Broken.apply(c.x * 3.0))
    return c


def _layers():
    c = SimpleNamespace(linear=dg.nn.Linear(3, 2), conv=dg.nn.Conv2d(2, 4, 3), pool=dg.nn.MaxPool2d(2),
                        bn=dg.nn.BatchNorm1d(3), ln=dg.nn.LayerNorm(3), emb=dg.nn.Embedding(5, 2))
    c.bn.train()
    c.x = dg.tensor(np.ones((4, 3)))
    return c


def _static_model():
    c = SimpleNamespace(g=dg.Graph(), model=dg.nn.Sequential(dg.nn.Linear(3, 4), dg.nn.Tanh(), dg.nn.Linear(5, 2)))
    with c.g:
        c.x = dg.placeholder((None, 3), name="x")
    return c


def _optimizers():
    c = SimpleNamespace(p=dg.tensor(np.ones(3), requires_grad=True), q=dg.tensor(np.ones((2, 2)), requires_grad=True))
    c.opt = dg.optim.Adam([c.p, c.q], lr=0.1)
    (dg.sum(c.p * c.p) + dg.sum(c.q * c.q)).backward()
    c.opt.step()  # some state to keep unchanged
    (dg.sum(c.p * c.p) + dg.sum(c.q * c.q)).backward()
    c.q._grad = dg.tensor(np.ones(3))  # wrong shape, set behind the setter's back
    return c


def _logits():
    return SimpleNamespace(z=dg.tensor(np.zeros((2, 3)), requires_grad=True), t=np.array([0, 7]))


def _files(tmp=[None]):  # noqa: B006  (one temporary directory for the module's files)
    import tempfile

    if tmp[0] is None:
        tmp[0] = tempfile.mkdtemp()
    c = SimpleNamespace(dir=tmp[0])
    c.garbage = os.path.join(c.dir, "garbage.npz")
    with open(c.garbage, "wb") as fh:
        fh.write(b"not a zip file at all")
    c.truncated = os.path.join(c.dir, "truncated.npz")
    buffer = io.BytesIO()
    np.savez(buffer, w=np.ones(100))
    with open(c.truncated, "wb") as fh:
        fh.write(buffer.getvalue()[:150])
    c.big = os.path.join(c.dir, "big.npz")
    with zipfile.ZipFile(c.big, "w", zipfile.ZIP_DEFLATED) as archive:
        arr = io.BytesIO()
        np.save(arr, np.zeros(1_000_000))
        archive.writestr("w.npy", arr.getvalue())
    return c


def _compiled():
    return SimpleNamespace(ce=dg.compile(lambda z, t: F.cross_entropy(z, t)), double=dg.compile(lambda x: x * 2.0),
                           branch=dg.compile(lambda x: x if dg.sum(x) > 0 else -x))


ROWS = [
    # -- eager ops
    Row("add shapes", _arrays, lambda c: c.a + c.b, ValueError, ("add", "(2, 3)", "(4,)")),
    Row("matmul shapes", _arrays, lambda c: c.a @ c.a, ValueError, ("matmul", "(2, 3)")),
    Row("transpose axis 5", _arrays, lambda c: dg.transpose(c.a, (0, 5)), AxisError, ("transpose", "5")),
    Row("transpose axis first", _arrays, lambda c: dg.transpose(c.a, (5, 0)), AxisError, ("transpose", "5")),
    Row("transpose not a permutation", _arrays, lambda c: dg.transpose(c.a, (0, 0)), ValueError, ("transpose",)),
    Row("reshape float size", _arrays, lambda c: dg.reshape(c.a, (2.5, 3)), TypeError, ("reshape",)),
    Row("reshape size", _arrays, lambda c: dg.reshape(c.a, (4,)), ValueError, ("reshape", "(2, 3)", "(4,)")),
    Row("reshape negative", _arrays, lambda c: dg.reshape(c.a, (-2, -3)), ValueError, ("reshape",)),
    Row("sum axis", _arrays, lambda c: dg.sum(c.a, axis=3), AxisError, ("sum", "3")),
    Row("sum negative axis", _arrays, lambda c: dg.sum(c.a, axis=-3), AxisError, ("sum", "-3")),
    Row("sum float axis", _arrays, lambda c: dg.sum(c.a, axis=1.0), TypeError, ("sum",)),
    Row("mean repeated axis", _arrays, lambda c: dg.mean(c.a, axis=(0, 0)), ValueError, ("mean",)),
    Row("max of empty", _arrays, lambda c: dg.max(c.e), ValueError, ("max", "(0,)")),
    Row("min of empty", _arrays, lambda c: dg.min(c.e), ValueError, ("min", "(0,)")),
    Row("argmax of empty", _arrays, lambda c: dg.argmax(c.e), ValueError, ("argmax", "(0,)")),
    Row("swapaxes", _arrays, lambda c: dg.swapaxes(c.a, 0, 2), AxisError, ("swapaxes",)),
    Row("moveaxis", _arrays, lambda c: dg.moveaxis(c.a, 0, 4), AxisError, ("moveaxis",)),
    Row("expand_dims", _arrays, lambda c: dg.expand_dims(c.a, 5), AxisError, ("expand_dims",)),
    Row("squeeze size", _arrays, lambda c: dg.squeeze(c.a, 1), ValueError, ("squeeze", "(2, 3)")),
    Row("concatenate shapes", _arrays, lambda c: dg.concatenate([c.a, c.b]), ValueError, ("concatenate",)),
    Row("stack shapes", _arrays, lambda c: dg.stack([c.a, c.b]), ValueError, ("stack",)),
    Row("split unequal", _arrays, lambda c: dg.split(c.a, 2, axis=1), ValueError, ("split",)),
    Row("cumsum axis", _arrays, lambda c: dg.cumsum(c.a, axis=2), AxisError, ("cumsum",)),
    Row("repeat axis", _arrays, lambda c: dg.repeat(c.a, 2, axis=2), AxisError, ("repeat",)),
    Row("flip axis", _arrays, lambda c: dg.flip(c.a, axis=2), AxisError, ("flip",)),
    Row("tile float", _arrays, lambda c: dg.tile(c.a, 1.5), TypeError, ("tile",)),
    Row("getitem range", _arrays, lambda c: c.b[7], IndexError, ("getitem",)),
    Row("string operand", _arrays, lambda c: c.a + "a", TypeError, ("add",)),
    Row("object operand", _arrays, lambda c: c.a * np.array([None]), TypeError, ("multiply", "object")),
    Row("text astype", _arrays, lambda c: dg.astype(c.a, str), TypeError, ("astype", "<U")),
    Row("clip no bounds", _arrays, lambda c: dg.clip(c.a), ValueError, ("clip",)),
    Row("pad negative", _arrays, lambda c: dg.pad(c.b, -1), ValueError, ("pad",)),
    Row("inv not square", _arrays, lambda c: dg.linalg.inv(c.a), ValueError, ("inv", "(2, 3)")),
    Row("tensordot axes", _arrays, lambda c: dg.tensordot(c.a, c.b, axes=([1], [0])), ValueError, ("tensordot",)),
    Row("trace axes", _arrays, lambda c: dg.trace(c.a, axis1=0, axis2=3), AxisError, ("trace",)),
    Row("norm axis", _arrays, lambda c: dg.linalg.norm(c.a, axis=4), AxisError, ("norm",)),
    Row("ragged tensor", _arrays, lambda c: dg.tensor([[1.0, 2.0], [3.0]]), ValueError, ("dg.tensor",)),
    Row("object tensor", _arrays, lambda c: dg.tensor(np.array([None])), TypeError, ("dg.tensor", "object")),
    Row("int requires grad", _arrays, lambda c: dg.tensor([1, 2], requires_grad=True), TypeError, ("int64",)),
    Row("backward non-scalar", _computed, lambda c: (c.a * 2.0).backward(), ValueError, ("backward", "(2, 3)")),
    Row("backward twice", _freed, lambda c: c.y.backward(), RuntimeError, ("retain_graph",)),
    Row("backward grad shape", _computed, lambda c: c.y.backward(np.ones(3)), ValueError, ("backward", "(3,)")),
    Row("grad setter shape", _freed, lambda c: setattr(c.a, "grad", np.ones(3)), ValueError, ("Tensor.grad", "(3,)")),
    Row("grad setter scalar", _freed, lambda c: setattr(c.a, "grad", dg.tensor(1.0)), ValueError, ("Tensor.grad",)),
    Row("grad setter graph node", _static, lambda c: setattr(c.v, "grad", c.z), TypeError,
        ("Tensor.grad", "static graph's node")),
    Row("graph node values", _static, lambda c: c.z._raw(), TypeError, ("Session.run",)),
    Row("value setter shape", _arrays, lambda c: setattr(c.a, "value", np.ones(3)), ValueError, ("Tensor.value",)),
    Row("item", _arrays, lambda c: c.a.item(), ValueError, ("item", "(2, 3)")),
    Row("len of 0-d", _computed, lambda c: len(c.y), TypeError, ("len",)),
    Row("bool of many", _arrays, lambda c: bool(c.a), ValueError, ("bool",)),
    Row("numpy function", _arrays, lambda c: np.resize(c.a, 3), TypeError, ("numpy.resize",)),
    # -- transforms
    Row("grad of None", _arrays, lambda c: dg.grad(lambda x: None)(1.0), TypeError, ("grad", "NoneType")),
    Row("grad of a string", _arrays, lambda c: dg.grad(lambda x: "s")(1.0), TypeError, ("grad", "str")),
    Row("grad of a bool", _arrays, lambda c: dg.grad(lambda x: x > 0)(1.0), TypeError, ("grad", "bool")),
    Row("grad of a vector", _arrays, lambda c: dg.grad(lambda x: x * 2)(np.ones(3)), TypeError, ("grad", "(3,)")),
    Row("grad of int input", _arrays, lambda c: dg.grad(lambda x: x * 2.0)(1), TypeError, ("grad", "int")),
    Row("grad argnums", _arrays, lambda c: dg.grad(lambda x: x * 2.0, argnums=3)(1.0), ValueError, ("grad", "3")),
    Row("jvp tangent", _arrays, lambda c: dg.jvp(dg.sin, (np.ones(2),), (np.ones(3),)), ValueError, ("jvp", "(3,)")),
    Row("vjp cotangent", _arrays, lambda c: dg.vjp(dg.sin, np.ones(2))[1](np.ones(3)), ValueError, ("vjp", "(3,)")),
    Row("jacobian of None", _arrays, lambda c: dg.jacobian(lambda x: None)(np.ones(2)), TypeError, ("jacobian",)),
    Row("gradcheck mode", _arrays, lambda c: dg.gradcheck(dg.sin, np.ones(2), modes=("x",)), ValueError,
        ("gradcheck",)),
    # -- static graphs and feeds
    Row("static shapes", _static, lambda c: c.x + dg.placeholder((4,)), ValueError, ("add", "(None, 3)", "(4,)")),
    Row("missing feed", _static, lambda c: c.sess.run(c.loss, {c.x: np.ones((2, 3))}), ValueError,
        ("Session.run", "t")),
    Row("feed shape", _static, lambda c: c.sess.run(c.train, {c.x: np.ones((2, 4)), c.t: np.zeros(2, int)}),
        ValueError, ("x", "(2, 4)", "(None, 3)")),
    Row("feed dtype", _static, lambda c: c.sess.run(c.train, {c.x: np.ones((2, 3)) * 1j, c.t: np.zeros(2, int)}),
        TypeError, ("x", "complex128")),
    Row("feed labels", _static, lambda c: c.sess.run(c.train, {c.x: np.ones((2, 3)), c.t: np.array([0, 7])}),
        IndexError, ("7",)),
    Row("feed list", _static, lambda c: c.sess.run(c.loss, [np.ones((2, 3))]), TypeError, ("feed_dict", "list")),
    Row("feed a variable", _static, lambda c: c.sess.run(c.loss, {c.w: np.ones((3, 4))}), TypeError, ("w",)),
    Row("feed unknown name", _static, lambda c: c.sess.run(c.loss, {"nope": np.ones(3)}), ValueError, ("nope",)),
    Row("fetch other graph", _static, lambda c: c.sess.run(c.z, {}), ValueError, ("Session.run",)),
    Row("fetch non-node", _static, lambda c: c.sess.run(np.ones(3)), TypeError, ("Session.run",)),
    Row("placeholder text", _static, lambda c: dg.placeholder((3,), dtype=str), TypeError,
        ("placeholder", "<U")),
    Row("placeholder object", _static, lambda c: dg.placeholder((3,), dtype=object), TypeError, ("placeholder",)),
    Row("placeholder negative", _static, lambda c: dg.placeholder((-1, 3)), ValueError, ("placeholder", "-1")),
    Row("variable object", _static, lambda c: dg.Variable(np.array([None])), TypeError, ("Variable", "object")),
    Row("variable value shape", _static, lambda c: setattr(c.w, "value", np.ones(3)), ValueError, ("w", "(3,)")),
    Row("assign shape", _static, lambda c: c.w.assign(np.ones(5)), ValueError, ("assign", "(5,)")),
    Row("gradients of non-node", _static, lambda c: dg.gradients(c.loss, [np.ones(3)]), TypeError, ("gradients",)),
    Row("gradients fails inside", _static_broken, lambda c: dg.gradients(c.y, [c.x]), ValueError,
        ("_Broken.backward",)),
    Row("minimize non-scalar", _static_opt, lambda c: c.opt.minimize(c.vector), ValueError, ("minimize", "(None,)")),
    # -- dg.compile
    Row("compiled labels", _compiled, lambda c: c.ce(np.zeros((2, 3)), np.array([0, 7])), IndexError, ("7",)),
    Row("compiled negative label", _compiled, lambda c: c.ce(np.zeros((2, 3)), np.array([0, -1])), IndexError,
        ("-1",)),
    Row("compiled text input", _compiled, lambda c: c.double(np.array(["a", "b"])), TypeError, ("<U1",)),
    Row("compiled control flow", _compiled, lambda c: c.branch(np.ones(2)), TypeError, ("dg.where",)),
    # -- nn layers
    Row("Linear features", _layers, lambda c: c.linear(dg.tensor(np.ones((4, 5)))), ValueError,
        ("Linear", "(4, 5)")),
    Row("Conv2d kernel 0", _layers, lambda c: dg.nn.Conv2d(1, 1, 0), ValueError, ("Conv2d", "kernel")),
    Row("Conv2d channels", _layers, lambda c: c.conv(dg.tensor(np.ones((1, 3, 5, 5)))), ValueError,
        ("Conv2d", "(1, 3, 5, 5)")),
    Row("MaxPool2d rank", _layers, lambda c: c.pool(c.x), ValueError, ("MaxPool2d", "(4, 3)")),
    Row("BatchNorm features", _layers, lambda c: c.bn(dg.tensor(np.ones((4, 5)))), ValueError,
        ("BatchNorm1d", "(4, 5)")),
    Row("BatchNorm one value", _layers, lambda c: c.bn(dg.tensor(np.ones((1, 3)))), ValueError,
        ("batch_norm", "(1, 3)")),
    Row("LayerNorm shape", _layers, lambda c: c.ln(dg.tensor(np.ones((4, 5)))), ValueError, ("LayerNorm", "(4, 5)")),
    Row("Embedding range", _layers, lambda c: c.emb(np.array([0, 9])), IndexError, ("embedding", "9")),
    Row("Embedding floats", _layers, lambda c: c.emb(np.array([0.5])), TypeError, ("embedding", "float64")),
    Row("Dropout p", _layers, lambda c: dg.nn.Dropout(2.0), ValueError, ("Dropout", "2.0")),
    Row("Flatten dims", _layers, lambda c: dg.nn.Flatten(5)(c.x), AxisError, ("flatten", "5")),
    Row("Sequential item", _layers, lambda c: dg.nn.Sequential(c.linear, 3), TypeError, ("Sequential",)),
    Row("load_state_dict shape", _layers, lambda c: c.linear.load_state_dict({"weight": np.ones((3, 3)),
        "bias": np.ones(2)}), ValueError, ("weight", "(3, 3)")),
    Row("layer call in a graph", _static_model, lambda c: c.model(c.x), ValueError, ("Linear", "(None, 4)")),
    # -- losses
    Row("cross_entropy label", _logits, lambda c: F.cross_entropy(c.z, c.t), IndexError, ("cross_entropy", "7")),
    Row("cross_entropy negative", _logits, lambda c: F.cross_entropy(c.z, np.array([0, -1])), IndexError,
        ("cross_entropy", "-1")),
    Row("cross_entropy targets", _logits, lambda c: F.cross_entropy(c.z, np.zeros((2, 4))), ValueError,
        ("cross_entropy", "(2, 4)")),
    Row("cross_entropy weight", _logits, lambda c: F.cross_entropy(c.z, np.array([0, 1]), np.ones(4)), ValueError,
        ("cross_entropy", "(4,)")),
    Row("cross_entropy smoothing", _logits, lambda c: F.cross_entropy(c.z, np.array([0, 1]), label_smoothing=2.0),
        ValueError, ("cross_entropy", "2.0")),
    Row("nll_loss targets", _logits, lambda c: F.nll_loss(c.z, np.array([0, 1, 2])), ValueError, ("nll_loss", "(3,)")),
    Row("mse_loss shapes", _logits, lambda c: F.mse_loss(c.z, np.zeros(3)), ValueError, ("mse_loss", "(2, 3)")),
    Row("bce range", _logits, lambda c: F.binary_cross_entropy(c.z + 2.0, np.zeros((2, 3))), ValueError,
        ("binary_cross_entropy",)),
    # -- optimisers
    Row("SGD lr", _optimizers, lambda c: dg.optim.SGD([c.p], lr=-1.0), ValueError, ("SGD", "-1.0")),
    Row("Adam betas", _optimizers, lambda c: dg.optim.Adam([c.p], betas=(1.5, 0.9)), ValueError, ("Adam", "1.5")),
    Row("SGD nesterov", _optimizers, lambda c: dg.optim.SGD([c.p], lr=0.1, nesterov=True), ValueError,
        ("SGD", "nesterov")),
    Row("no parameters", _optimizers, lambda c: dg.optim.SGD([], lr=0.1), ValueError, ("SGD",)),
    Row("step bad grad", _optimizers, lambda c: c.opt.step(), ValueError, ("Adam", "(3,)", "(2, 2)")),
    Row("optimizer state dict", _optimizers, lambda c: c.opt.load_state_dict({"state": {}}), ValueError, ("Adam",)),
    Row("StepLR", _optimizers, lambda c: dg.optim.lr_scheduler.StepLR(c.opt, step_size=0), ValueError,
        ("StepLR", "0")),
    # -- dg.load
    Row("load garbage", _files, lambda c: dg.load(c.garbage), ValueError, ("dg.load", "garbage.npz")),
    Row("load truncated", _files, lambda c: dg.load(c.truncated), ValueError, ("dg.load", "truncated.npz")),
    Row("load too big", _files, lambda c: dg.load(c.big, max_bytes=1000), ValueError, ("dg.load", "big.npz")),
]


# -- the state a failed call must leave as it was
def _snapshot(c):
    state = {}
    for key, obj in vars(c).items():
        _describe(obj, key, state)
    return state


def _describe(obj, key, state):
    if isinstance(obj, dg.Graph):
        state[key] = ("graph", len(obj.nodes), tuple(obj.nodes))
    elif isinstance(obj, dg.Tensor) and getattr(obj, "_symbolic", False):
        if obj.kind == "variable":
            state[key] = ("variable", obj.value.copy())
    elif isinstance(obj, dg.Tensor):
        grad = obj._grad
        state[key] = ("tensor", obj._value.copy(), None if grad is None else grad._value.copy())
    elif isinstance(obj, Module):
        state[key] = ("module", {k: v.copy() for k, v in obj.state_dict().items()},
                      {n: None if p.grad is None else p.grad.numpy().copy() for n, p in obj.named_parameters()})
    elif isinstance(obj, dg.optim.Optimizer):
        state[key] = ("optimizer", copy.deepcopy(obj.state_dict()))
    elif isinstance(obj, dg.Session):
        _describe(obj.graph, key + ".graph", state)


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b if not isinstance(a, dg.Tensor) else a is b


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_bad_input_is_refused_clearly_at_the_users_line_and_changes_nothing(row):
    c = row.make()
    before = _snapshot(c)
    with pytest.raises(row.kind) as info:
        row.call(c)
    message = str(info.value)
    for fragment in row.says:
        assert fragment in message, f"{fragment!r} not in: {message}"
    line = f"{HERE}:{row.call.__code__.co_firstlineno}"
    assert line in message, f"{line} not in: {message}"
    after = _snapshot(c)
    for key in before:
        assert _same(before[key], after[key]), f"{key} changed: {before[key]} -> {after[key]}"


def test_every_row_has_a_distinct_name():
    names = [r.name for r in ROWS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("create_graph", [False, True])
def test_accumulated_grad_keeps_the_leafs_dtype(create_graph):
    w = dg.tensor(np.ones(2, np.float32), requires_grad=True)
    for _ in range(2):  # a float64 constant promotes the cotangent; .grad stays float32 (as PyTorch's)
        (w * np.ones(2)).sum().backward(create_graph=create_graph)
    assert w.grad.dtype == np.float32
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])
