"""The op table: sample calls of every registered op, with NumPy (and PyTorch) references.

Every op in `dg.REGISTRY` must appear here (a test enforces it), so a new op is tested by
adding its rows. A row calls dagrad with float arguments of the given shapes; its
reference does the same with NumPy; `torch_ref` (optional) with PyTorch for the oracle tier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import dagrad as dg
import dagrad.numpy as dnp
from dagrad.ops.reduce import sum_to
from dagrad.ops.shape import scatter_add, scatter_along_axis


@dataclass
class Case:
    op: str  # the registered op the row exercises
    f: object  # f(*float_args) with dagrad
    ref: object  # the same with NumPy
    shapes: tuple  # shapes of the float arguments
    low: float = -2.0  # inputs are drawn uniformly from [low, high]
    high: float = 2.0
    differentiable: bool = True
    torch_ref: object = None  # the same with torch, for the oracle tier
    eps: float = 1e-6  # central-difference step
    tol: dict = field(default_factory=dict)
    name: str = ""
    attrs: dict = field(default_factory=dict)  # for the shape-rule check of ops that record no node

    def inputs(self, seed=0, dtype=np.float64):
        rng = np.random.default_rng(seed)
        return [rng.uniform(self.low, self.high, size=s).astype(dtype) for s in self.shapes]

    def __str__(self):
        return self.name or f"{self.op}{self.shapes}"


CASES: list[Case] = []


def case(op, f, ref, *shapes, **kw):
    CASES.append(Case(op, f, ref, shapes, **kw))


def _torch_take(x, indices, axis):
    import torch

    return torch.index_select(x, axis, torch.tensor(indices) % x.shape[axis])


def _nnf(name):
    """A torch.nn.functional function by name, looked up only when the oracle tier runs."""
    import torch.nn.functional as F

    return getattr(F, name)


def _t(name):
    """A torch function by name, looked up only when the oracle tier runs."""

    def call(*args, **kwargs):
        import torch

        return getattr(torch, name)(*args, **kwargs)

    return call


# -- binary elementwise, across broadcasting pairs
BROADCAST_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2)), ((2, 3, 1), (3, 4))]
BINARY = {
    "add": (dg.add, np.add, _t("add"), {}),
    "subtract": (dg.subtract, np.subtract, _t("sub"), {}),
    "multiply": (dg.multiply, np.multiply, _t("mul"), {}),
    "divide": (dg.divide, np.divide, _t("div"), {"low": 0.5, "high": 2.0}),
    "maximum": (dg.maximum, np.maximum, _t("maximum"), {}),
    "minimum": (dg.minimum, np.minimum, _t("minimum"), {}),
    "power": (dg.power, np.power, _t("pow"), {"low": 0.5, "high": 2.0}),
    "mod": (dg.mod, np.mod, _t("remainder"), {"low": 0.5, "high": 2.0}),
    "arctan2": (dg.arctan2, np.arctan2, _t("atan2"), {}),
    "hypot": (dg.hypot, np.hypot, _t("hypot"), {"low": 0.5, "high": 2.0}),
    "logaddexp": (dnp.logaddexp, np.logaddexp, _t("logaddexp"), {}),
    "logaddexp2": (dnp.logaddexp2, np.logaddexp2, _t("logaddexp2"), {}),
    "fmax": (dg.fmax, np.fmax, _t("fmax"), {}),
    "fmin": (dg.fmin, np.fmin, _t("fmin"), {}),
}
for _name, (_f, _ref, _tref, _kw) in BINARY.items():
    for _a, _b in BROADCAST_PAIRS:
        case(_name, _f, _ref, _a, _b, torch_ref=_tref, **_kw)

# operators with Python scalars on either side
case("add", lambda x: x + 2.5, lambda x: x + 2.5, (3,), name="x + 2.5", torch_ref=lambda x: x + 2.5)
case("subtract", lambda x: 1.0 - x, lambda x: 1.0 - x, (3,), name="1 - x", torch_ref=lambda x: 1.0 - x)
case("multiply", lambda x: 3 * x, lambda x: 3 * x, (2, 2), name="3 * x", torch_ref=lambda x: 3 * x)
case("divide", lambda x: 2.0 / x, lambda x: 2.0 / x, (3,), low=0.5, name="2 / x", torch_ref=lambda x: 2.0 / x)
case("power", lambda x: x**3, lambda x: x**3, (3,), name="x ** 3", torch_ref=lambda x: x**3)
case("power", lambda x: x**0.5, lambda x: x**0.5, (3,), low=0.5, name="x ** 0.5", torch_ref=lambda x: x**0.5)
case("power", lambda x: 2.0**x, lambda x: 2.0**x, (3,), name="2 ** x", torch_ref=lambda x: 2.0**x)
case("power", lambda x: x**0, lambda x: x**0, (3,), name="x ** 0", torch_ref=lambda x: x**0)
case("cbrt", lambda x: dnp.cbrt(x), np.cbrt, (3,), low=0.5)
case("cbrt", lambda x: dnp.cbrt(x), np.cbrt, (2, 3), low=-2.0, high=-0.5, name="cbrt of negatives")
# float64 whatever the input (NumPy's rule): cast back, so that the row keeps float32 float32
case("float_power", lambda x: dg.astype(dnp.float_power(x, 1.7), x.dtype),
     lambda x: np.float_power(x, 1.7).astype(x.dtype), (3,), low=0.5,
     torch_ref=lambda x: (x.double() ** 1.7).to(x.dtype))

# -- unary elementwise
UNARY = {
    "negative": (dg.negative, np.negative, _t("neg"), {}),
    "positive": (dg.positive, np.positive, _t("positive"), {}),
    "abs": (dg.abs, np.abs, _t("abs"), {}),
    "exp": (dg.exp, np.exp, _t("exp"), {}),
    "log": (dg.log, np.log, _t("log"), {"low": 0.3, "high": 3.0}),
    "sqrt": (dg.sqrt, np.sqrt, _t("sqrt"), {"low": 0.3, "high": 3.0}),
    "sin": (dg.sin, np.sin, _t("sin"), {}),
    "cos": (dg.cos, np.cos, _t("cos"), {}),
    "tanh": (dg.tanh, np.tanh, _t("tanh"), {}),
    "sigmoid": (dg.sigmoid, lambda x: 1 / (1 + np.exp(-x)), _t("sigmoid"), {"low": -6.0, "high": 6.0}),
    "relu": (dg.relu, lambda x: np.maximum(x, 0), _t("relu"), {}),
    "reciprocal": (dg.reciprocal, np.reciprocal, _t("reciprocal"), {"low": 0.5, "high": 2.0}),
    "square": (dg.square, np.square, _t("square"), {}),
    "sign": (dg.sign, np.sign, _t("sign"), {}),
    "floor": (dg.floor, np.floor, _t("floor"), {}),
    "ceil": (dg.ceil, np.ceil, _t("ceil"), {}),
    "exp2": (dg.exp2, np.exp2, _t("exp2"), {}),
    "expm1": (dg.expm1, np.expm1, _t("expm1"), {}),
    "log2": (dg.log2, np.log2, _t("log2"), {"low": 0.3, "high": 3.0}),
    "log10": (dg.log10, np.log10, _t("log10"), {"low": 0.3, "high": 3.0}),
    "log1p": (dg.log1p, np.log1p, _t("log1p"), {"low": -0.5, "high": 3.0}),
    "tan": (dg.tan, np.tan, _t("tan"), {"low": -1.2, "high": 1.2}),
    "arcsin": (dg.arcsin, np.arcsin, _t("asin"), {"low": -0.9, "high": 0.9}),
    "arccos": (dg.arccos, np.arccos, _t("acos"), {"low": -0.9, "high": 0.9}),
    "arctan": (dg.arctan, np.arctan, _t("atan"), {}),
    "sinh": (dg.sinh, np.sinh, _t("sinh"), {}),
    "cosh": (dg.cosh, np.cosh, _t("cosh"), {}),
    "arcsinh": (dg.arcsinh, np.arcsinh, _t("asinh"), {}),
    "arccosh": (dg.arccosh, np.arccosh, _t("acosh"), {"low": 1.2, "high": 3.0}),
    "arctanh": (dg.arctanh, np.arctanh, _t("atanh"), {"low": -0.9, "high": 0.9}),
    "softplus": (dg.softplus, lambda x: np.log1p(np.exp(x)), lambda x: _nnf("softplus")(x), {}),
    "erf": (dg.erf, lambda x: np.vectorize(__import__("math").erf)(x), _t("erf"), {}),
}
for _name, (_f, _ref, _tref, _kw) in UNARY.items():
    for _shape in [(), (4,), (2, 3)]:
        case(_name, _f, _ref, _shape, torch_ref=_tref, **_kw)

# -- complex numbers, from real inputs (tests/test_complex.py checks them on complex inputs)
case("real", lambda x: dg.real(dg.exp(x * 1j) * x), lambda x: np.real(np.exp(x * 1j) * x), (2, 3))
case("real", dg.real, np.real, (4,), name="real of a real array")
case("imag", lambda x: dg.imag(dg.exp(x * 1j) * x), lambda x: np.imag(np.exp(x * 1j) * x), (2, 3))
case("imag", lambda x: dg.imag(x) + x, lambda x: np.imag(x) + x, (4,), name="imag of a real array")
case("conjugate", lambda x, y: dg.real(dg.conj(x + y * 1j) * (x * 2j)),
     lambda x, y: np.real(np.conj(x + y * 1j) * (x * 2j)), (3,), (3,))
case("angle", lambda x, y: dg.angle(x + y * 1j), lambda x, y: np.angle(x + y * 1j), (2, 3), (2, 3))
case("angle", dg.angle, np.angle, (4,), name="angle of a real array")
case("iscomplex", lambda x: dg.iscomplex(x * 1j + (x > 0)), lambda x: np.iscomplex(x * 1j + (x > 0)), (4,),
     differentiable=False)
case("isreal", lambda x: dg.isreal(x * 1j + (x > 0)), lambda x: np.isreal(x * 1j + (x > 0)), (4,),
     differentiable=False)

case("round", lambda x: dg.round(x * 10), lambda x: np.round(x * 10), (5,), torch_ref=lambda x: _t("round")(x * 10))
case("round", lambda x: dg.round(x, 2), lambda x: np.round(x, 2), (5,), name="round(x, 2)")

# -- no gradient: comparisons, tests and logic (bool results)
for _name in ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or"]:
    case(_name, getattr(dg, _name), getattr(np, _name), (2, 3), (3,), differentiable=False)
for _name in ["isfinite", "isnan", "logical_not"]:
    case(_name, getattr(dg, _name), getattr(np, _name), (4,), differentiable=False)
case("argmax", lambda x: dg.argmax(x, axis=1), lambda x: np.argmax(x, axis=1), (3, 4), differentiable=False,
     attrs={"axis": 1, "keepdims": False})
case("stop_gradient", dg.stop_gradient, lambda x: x, (2, 3), differentiable=False)
case("full_like", lambda x: dg.full_like(x, 2.5), lambda x: np.full_like(x, 2.5), (2, 3), differentiable=False,
     attrs={"fill_value": 2.5, "dtype": None})
case("argmin", lambda x: dg.argmin(x), lambda x: np.argmin(x), (3, 4), differentiable=False,
     attrs={"axis": None, "keepdims": False})
case("equal", lambda x: x == x, lambda x: x == x, (3,), differentiable=False, name="x == x")
case("greater", lambda x: x > 0, lambda x: x > 0, (3,), differentiable=False, name="x > 0")

# -- selection and casting
_COND = np.array([True, False, True])
_ONE_ZERO = np.array([[True, False], [True, True], [True, True]])  # column 0: no zero; column 1: one zero
case("where", lambda x, y: dg.where(_COND, x, y), lambda x, y: np.where(_COND, x, y), (3,), (3,),
     torch_ref=lambda x, y: _t("where")(_t("tensor")(_COND), x, y))
case("where", lambda x, y: dg.where(_COND, x, y), lambda x, y: np.where(_COND, x, y), (2, 3), (),
     torch_ref=lambda x, y: _t("where")(_t("tensor")(_COND), x, y), name="where broadcast")
case("clip", lambda x: dg.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), (6,),
     torch_ref=lambda x: _t("clamp")(x, -0.5, 0.5))
case("clip", lambda x, lo: dg.clip(x, lo, 1.0), lambda x, lo: np.clip(x, lo, 1.0), (2, 3), (3,),
     name="clip with tensor bound", torch_ref=lambda x, lo: _t("clamp")(x, lo, _t("tensor")(1.0, dtype=x.dtype)))
case("clip", lambda x: dg.clip(x, None, 0.3), lambda x: np.clip(x, None, 0.3), (4,), name="clip(x, None, 0.3)")
case("astype", lambda x: dg.astype(x, np.float32) * 1.0, lambda x: np.real(x).astype(np.float32) * 1.0, (3,),
     eps=1e-2, tol={"atol": 1e-4, "rtol": 1e-3})

# -- reductions
for _name, _npf, _torch in [("sum", np.sum, "sum"), ("max", np.max, "amax"), ("min", np.min, "amin")]:
    _dgf = getattr(dg, _name)
    for _axis, _keep in [(None, False), (0, False), (-1, True), ((0, 2), False), ((0, 2), True)]:
        case(_name, lambda x, f=_dgf, a=_axis, k=_keep: f(x, axis=a, keepdims=k),
             lambda x, f=_npf, a=_axis, k=_keep: f(x, axis=a, keepdims=k), (2, 3, 4),
             torch_ref=lambda x, t=_torch, a=_axis, k=_keep: _t(t)(x, dim=a if a is not None else tuple(range(x.ndim)),
                                                                  keepdim=k),
             name=f"{_name}(axis={_axis}, keepdims={_keep})")
case("sum", lambda x: x.sum(), lambda x: x.sum(), (), name="sum of 0-d")
for _axis in [None, 1, (0, 2)]:
    case("prod", lambda x, a=_axis: dg.prod(x, axis=a), lambda x, a=_axis: np.prod(x, axis=a), (2, 3, 2),
         low=0.5, high=1.5, name=f"prod(axis={_axis})",
         torch_ref=None if isinstance(_axis, tuple) else lambda x, a=_axis: _t("prod")(x) if a is None
         else _t("prod")(x, dim=a))
case("prod", lambda x: dg.prod(dg.where(_ONE_ZERO, x, 0), axis=0), lambda x: np.prod(np.where(_ONE_ZERO, x, 0), axis=0),
     (3, 2), name="prod with zeros",
     torch_ref=lambda x: _t("prod")(_t("where")(_t("tensor")(_ONE_ZERO), x, 0.0), dim=0))
case("sum_to", lambda x: sum_to(x, np.ones((3, 1))), lambda x: x.sum(axis=(0, 2), keepdims=True)[0], (2, 3, 4))
case("cumsum", lambda x: dg.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), (2, 4),
     torch_ref=lambda x: _t("cumsum")(x, dim=1))
case("cumsum", lambda x: dg.cumsum(x), lambda x: np.cumsum(x), (2, 3), name="cumsum flat")
case("std_sqrt", lambda x: dg.std(x, axis=0), lambda x: np.std(x, axis=0), (4, 3),
     torch_ref=lambda x: _t("std")(x, dim=0, correction=0))

# -- linear algebra
for _a, _b in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
               ((2, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4))]:
    case("matmul", dg.matmul, np.matmul, _a, _b, torch_ref=_t("matmul"))
case("matmul", lambda a, b: a @ b, lambda a, b: a @ b, (2, 3), (3, 2), name="a @ b", torch_ref=lambda a, b: a @ b)

# -- linear (x @ w.T + b as one op): batches of rows, more batch axes, one row, no bias
for _x in [(4, 3), (2, 4, 3), (3,)]:
    case("linear", lambda x, w, b: dg.nn.functional.linear(x, w, b), lambda x, w, b: x @ w.T + b, _x, (5, 3), (5,),
         torch_ref=_nnf("linear"))
case("linear", lambda x, w: dg.nn.functional.linear(x, w), lambda x, w: x @ w.T, (4, 3), (5, 3), name="linear, no bias",
     torch_ref=_nnf("linear"))


# -- the recurrent cells (one op per time step of an LSTM or GRU layer): broadcast biases, no biases, a batch of one
def _np_sig(x):
    return 1 / (1 + np.exp(-x))


def _lstm_ref(gx, gh, c, bx=0.0, bh=0.0):
    z, n = gx + gh + bx + bh, c.shape[-1]
    i, f, g, o = _np_sig(z[..., :n]), _np_sig(z[..., n:2 * n]), np.tanh(z[..., 2 * n:3 * n]), _np_sig(z[..., 3 * n:])
    c2 = f * c + i * g
    return np.concatenate(np.broadcast_arrays(o * np.tanh(c2), c2, i, f, g, o), axis=-1)


def _gru_ref(gx, gh, h, bx=0.0, bh=0.0):
    a, b, n = gx + bx, gh + bh, h.shape[-1]
    r, z = _np_sig(a[..., :n] + b[..., :n]), _np_sig(a[..., n:2 * n] + b[..., n:2 * n])
    new = np.tanh(a[..., 2 * n:] + r * b[..., 2 * n:])
    return np.concatenate(np.broadcast_arrays((1 - z) * new + z * h, r, z, new), axis=-1)


case("lstm_cell", dg.ops.recurrent.lstm_cell, _lstm_ref, (3, 8), (3, 8), (3, 2), (8,), (8,))
case("lstm_cell", dg.ops.recurrent.lstm_cell, _lstm_ref, (8,), (2, 3, 8), (3, 2), name="lstm_cell, broadcast, no bias")
case("gru_cell", dg.ops.recurrent.gru_cell, _gru_ref, (3, 6), (3, 6), (3, 2), (6,), (6,))
case("gru_cell", dg.ops.recurrent.gru_cell, _gru_ref, (2, 3, 6), (6,), (3, 2), name="gru_cell, broadcast, no bias")
case("lstm_cell", dg.ops.recurrent.lstm_cell, _lstm_ref, (8,), (8,), (3, 2), name="lstm_cell, the state broadcast")

# -- log_softmax (one op; its backward reads its output)
case("log_softmax", dg.log_softmax, lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)), (2, 3),
     torch_ref=lambda x: _nnf("log_softmax")(x, dim=-1))
case("log_softmax", lambda x: dg.log_softmax(x, axis=0), lambda x: x - np.log(np.exp(x).sum(0, keepdims=True)),
     (3, 2), name="log_softmax(axis=0)", torch_ref=lambda x: _nnf("log_softmax")(x, dim=0))
case("log_softmax", lambda x: dg.log_softmax(x, axis=(0, 2)),
     lambda x: x - np.log(np.exp(x).sum((0, 2), keepdims=True)), (2, 3, 2), name="log_softmax(axis=(0, 2))")
case("log_softmax", lambda x: dg.log_softmax(x * 500.0),
     lambda x: (x - x.max()) * 500.0 - np.log(np.exp((x - x.max()) * 500.0).sum()), (4,), low=0.9, high=1.0,
     name="log_softmax of large inputs",
     torch_ref=lambda x: _nnf("log_softmax")(x * 500.0, dim=-1))


# -- negative log-likelihood and softmax cross-entropy against class indices (one op for (N, C) input)
_CE_TARGET = np.array([0, 2, 1, 3, 2])


def _ce_ref(reduction):
    def ref(z):
        shifted = z - z.max(axis=1, keepdims=True)
        loss = -(shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))[np.arange(5), _CE_TARGET]
        return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]

    return ref


def _nll_ref(reduction):
    def ref(logp):
        loss = -logp[np.arange(5), _CE_TARGET]
        return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]

    return ref


for _reduction in ("mean", "sum", "none"):
    # cross_entropy is nll_loss(log_softmax(z)): two primitive nodes
    case("nll_loss", lambda z, r=_reduction: dg.nn.functional.cross_entropy(z, _CE_TARGET, reduction=r),
         _ce_ref(_reduction), (5, 4), name=f"cross_entropy(reduction={_reduction!r})",
         torch_ref=lambda z, r=_reduction: _nnf("cross_entropy")(z, _t("tensor")(_CE_TARGET), reduction=r))
    case("nll_loss", lambda p, r=_reduction: dg.nn.functional.nll_loss(p, _CE_TARGET, reduction=r),
         _nll_ref(_reduction), (5, 4), name=f"nll_loss(reduction={_reduction!r})",
         torch_ref=lambda p, r=_reduction: _nnf("nll_loss")(p, _t("tensor")(_CE_TARGET), reduction=r))

# binary_cross_entropy is being added to ops/nn.py (issue 12): its row, once it is registered
if "binary_cross_entropy" in dg.REGISTRY:
    _bce = dg.REGISTRY["binary_cross_entropy"].function
    for _shapes in [((2, 3), (2, 3)), ((2, 3), (3,))]:
        case("binary_cross_entropy", lambda p, t: _bce(p, t), lambda p, t: -(t * np.log(p) + (1 - t) * np.log1p(-p)),
             *_shapes, low=0.05, high=0.95)

# -- shape
case("reshape", lambda x: dg.reshape(x, (3, 2)), lambda x: x.reshape(3, 2), (2, 3),
     torch_ref=lambda x: x.reshape(3, 2))
case("reshape", lambda x: x.reshape(2, -1), lambda x: x.reshape(2, -1), (6,), name="reshape -1")
# NumPy integers as sizes and axes: accepted, and stored in the attrs as Python ints
case("reshape", lambda x: dg.reshape(x, (np.int64(3), np.int32(-1))), lambda x: x.reshape(3, -1), (2, 3),
     name="reshape(np.int64, np.int32)")
case("transpose", lambda x: dg.transpose(x, (np.int64(2), 0, np.intp(-2))), lambda x: x.transpose(2, 0, 1), (2, 3, 4),
     name="transpose(np.int64 axes)")
case("sum", lambda x: dg.sum(x, axis=np.int64(-1)), lambda x: x.sum(axis=-1), (2, 3), name="sum(axis=np.int64(-1))")
case("max", lambda x: dg.max(x, axis=(np.int64(0), 2)), lambda x: x.max(axis=(0, 2)), (2, 3, 4),
     name="max(axis=(np.int64(0), 2))")
case("transpose", lambda x: dg.transpose(x, (1, 0, 2)), lambda x: x.transpose(1, 0, 2), (2, 3, 4),
     torch_ref=lambda x: x.permute(1, 0, 2))
case("transpose", lambda x: x.T, lambda x: x.T, (2, 3), name="x.T")
case("broadcast_to", lambda x: dg.broadcast_to(x, (2, 3)), lambda x: np.broadcast_to(x, (2, 3)), (3,),
     torch_ref=lambda x: x.broadcast_to((2, 3)))
case("broadcast_to", lambda x: dg.broadcast_to(x, (2, 4, 3)), lambda x: np.broadcast_to(x, (2, 4, 3)), (2, 1, 3))
case("expand_dims", lambda x: dg.expand_dims(x, 0), lambda x: np.expand_dims(x, 0), (2, 3))
case("expand_dims", lambda x: dg.expand_dims(x, (0, 3)), lambda x: np.expand_dims(x, (0, 3)), (2, 3))
case("squeeze", lambda x: dg.squeeze(x), lambda x: np.squeeze(x), (1, 3, 1), torch_ref=lambda x: x.squeeze())
case("squeeze", lambda x: dg.squeeze(x, 0), lambda x: np.squeeze(x, 0), (1, 3, 1))

# -- indexing (repeated integer indices add up in the gradient)
for _label, _index in [("x[1:, ::2]", (slice(1, None), slice(None, None, 2))), ("x[0]", 0),
                       ("x[..., None]", (Ellipsis, None)), ("x[-1, 1]", (-1, 1)),
                       ("x[[0, 2, 0]]", [0, 2, 0]), ("x[mask]", np.array([True, False, True]))]:
    case("getitem", lambda x, i=_index: x[i], lambda x, i=_index: x[i], (3, 4), name=_label,
         torch_ref=(lambda x, i=_index: x[_t("tensor")(i)] if isinstance(i, (list, np.ndarray)) else x[i]))
case("gather", lambda x: dnp.take(x, np.array([2, 0, 2, -1]), axis=1), lambda x: np.take(x, [2, 0, 2, -1], axis=1),
     (3, 4), torch_ref=lambda x: _torch_take(x, [2, 0, 2, -1], 1))
case("gather", lambda x: dnp.take(x, np.array([[1], [0]]), axis=0), lambda x: np.take(x, [[1], [0]], axis=0), (2, 3),
     name="gather 2-d indices")
case("scatter_add", lambda v: scatter_add(v, (np.array([0, 2, 0]),), (None,), (0,), (3, 2)),
     lambda v: np.array([v[0] + v[2], np.zeros(2), v[1]]), (3, 2))
_ALONG = np.array([[1, 0, 1], [2, 2, 0]])
case("take_along_axis", lambda x: dnp.take_along_axis(x, _ALONG, 1), lambda x: np.take_along_axis(x, _ALONG, 1),
     (2, 3))
case("take_along_axis", lambda x: dnp.sort(x, axis=0), lambda x: np.sort(x, axis=0), (3, 4), name="sort(axis=0)")
case("take_along_axis", lambda x: dnp.sort(x, axis=None), lambda x: np.sort(x, axis=None), (3, 2),
     name="sort(axis=None)")
case("take_along_axis", lambda x: dnp.partition(x, 2), lambda x: np.partition(x, 2), (2, 5), name="partition")
case("scatter_along_axis", lambda v: scatter_along_axis(v, _ALONG, 1, (2, 3)),
     lambda v: np.array([[v[0, 1], v[0, 0] + v[0, 2], 0.0], [v[1, 2], 0.0, v[1, 0] + v[1, 1]]]), (2, 3))
case("argsort", lambda x: dnp.argsort(x), lambda x: np.argsort(x, kind="stable"), (2, 5), differentiable=False,
     attrs={"axis": 1})
case("argpartition", lambda x: dnp.argpartition(x, 1), lambda x: np.argpartition(x, 1), (2, 4),
     differentiable=False, attrs={"kth": 1, "axis": 1})
case("index_add", lambda v: dg.index_add(v, slice(1, 3), (4,)),
     lambda v: np.concatenate([[0.0], v, [0.0]]), (2,))
case("index_add", lambda v: dg.index_add(v, np.array([0, 2, 0]), (3,)),
     lambda v: np.array([v[0] + v[2], 0.0, v[1]]), (3,), name="index_add repeated")


def _np_setitem(x, index, v):
    out = x.copy()
    out[index] = v
    return out


# -- item assignment as a new value (the recorded form of t[index] = v)
for _label, _index, _vshape in [("x[1:, ::2] = v", (slice(1, None), slice(None, None, 2)), (2, 2)),
                                ("x[0] = v (broadcast row)", 0, (1, 4)), ("x[:, 1] = v", (slice(None), 1), (3,)),
                                ("x[[0, 2]] = v", [0, 2], (4,)),
                                ("x[mask] = v", np.array([True, False, True]), (2, 4))]:
    case("setitem", lambda x, v, i=_index: dg.setitem(x, i, v), lambda x, v, i=_index: _np_setitem(x, i, v),
         (3, 4), _vshape, name=_label)

# -- joining
case("concatenate", lambda a, b: dg.concatenate([a, b]), lambda a, b: np.concatenate([a, b]), (2, 3), (1, 3),
     torch_ref=lambda a, b: _t("cat")([a, b]))
case("concatenate", lambda a, b: dg.concatenate([a, b], axis=-1), lambda a, b: np.concatenate([a, b], axis=-1),
     (2, 3), (2, 1))

case("stack", lambda a, b: dg.stack([a, b], axis=1), lambda a, b: np.stack([a, b], axis=1), (2, 3), (2, 3),
     torch_ref=lambda a, b: _t("stack")([a, b], 1))
case("stack", lambda a, b, c: dg.stack([a, b, c], axis=-1), lambda a, b, c: np.stack([a, b, c], axis=-1), (2,), (2,),
     (2,), name="stack three, last axis")

# -- composites (no registry entry of their own; their derivatives come from primitives)
COMPOSITES = [
    Case("mean", lambda x: dg.mean(x, axis=(0, 2)), lambda x: np.mean(x, axis=(0, 2)), ((2, 3, 4),)),
    Case("mean", lambda x: x.mean(), lambda x: x.mean(), ((3, 2),)),
    Case("swapaxes", lambda x: dg.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1), ((2, 3, 4),)),
    Case("flatten", lambda x: x.flatten(), lambda x: x.flatten(), ((2, 3),)),
    Case("ravel", dg.ravel, np.ravel, ((2, 3),)),
    Case("var", lambda x: dg.var(x, axis=1, ddof=1), lambda x: np.var(x, axis=1, ddof=1), ((3, 4),)),
    Case("std", lambda x: x.std(keepdims=True), lambda x: x.std(keepdims=True), ((3, 4),)),
    Case("amax", lambda x: dg.amax(x, axis=0), lambda x: np.amax(x, axis=0), ((3, 4),)),
    Case("amin", lambda x: dg.amin(x, axis=-1), lambda x: np.amin(x, axis=-1), ((3, 4),)),
    Case("true_divide", dg.true_divide, np.true_divide, ((3,), (3,)), low=0.5),
    Case("softmax", lambda x: dg.softmax(x, axis=0), lambda x: np.exp(x) / np.exp(x).sum(0), ((3, 2),)),
    Case("logsumexp", lambda x: dg.logsumexp(x, axis=(0, 1)), lambda x: np.log(np.exp(x).sum((0, 1))), ((2, 3, 2),)),
    Case("flip", lambda x: dg.flip(x, 1), lambda x: np.flip(x, 1), ((2, 3),)),
    Case("flip", dg.flip, np.flip, ((2, 3),)),
    Case("moveaxis", lambda x: dg.moveaxis(x, [0, 1], [2, 0]), lambda x: np.moveaxis(x, [0, 1], [2, 0]), ((2, 3, 4),)),
    Case("split", lambda x: dg.split(x, [1, 3], axis=1)[1], lambda x: np.split(x, [1, 3], axis=1)[1], ((2, 4),)),
    Case("split", lambda x: dg.split(x, 2)[0] * dg.split(x, 2)[1], lambda x: np.split(x, 2)[0] * np.split(x, 2)[1],
         ((4, 2),)),
    Case("repeat", lambda x: dg.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, axis=1), ((2, 3),)),
    Case("repeat", lambda x: dg.repeat(x, [1, 0, 3]), lambda x: np.repeat(x, [1, 0, 3]), ((3,),)),
    Case("tile", lambda x: dg.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2)), ((2, 3),)),
    Case("pad", lambda x: dg.pad(x, ((1, 0), (2, 1)), constant_values=0.5),
         lambda x: np.pad(x, ((1, 0), (2, 1)), constant_values=0.5), ((2, 3),)),
    Case("pad", lambda x: dg.pad(x, 2, mode="reflect"), lambda x: np.pad(x, 2, mode="reflect"), ((4,),)),
    Case("pad", lambda x: dg.pad(x, 1, mode="edge"), lambda x: np.pad(x, 1, mode="edge"), ((2, 2),)),
    Case("triu", lambda x: dg.triu(x, 1), lambda x: np.triu(x, 1), ((2, 3, 3),)),
    Case("tril", dg.tril, np.tril, ((3, 4),)),
    Case("remainder", dg.remainder, np.remainder, ((3,), (3,)), low=0.5),
    Case("dot", lambda a, b: dg.Tensor.dot(a, b), lambda a, b: a.dot(b), ((2, 3), (3, 2)), name="Tensor.dot"),
    Case("trace", lambda a: dg.Tensor.trace(a), lambda a: a.trace(), ((3, 3),), name="Tensor.trace"),
]

# -- families kept in their own files (each appends rows with `case`)
# -- dagrad.scipy.special: SciPy computes the values (the [scipy] extra, part of [dev])
import scipy.special as _sps  # noqa: E402

import op_table_linalg  # noqa: E402, F401
from dagrad.scipy import special as _dsp  # noqa: E402

SPECIAL = {
    "gammaln": {"low": 0.5, "high": 4.0}, "digamma": {"low": 0.5, "high": 4.0}, "gamma": {"low": 0.5, "high": 3.0},
    "rgamma": {"low": 0.5, "high": 3.0}, "erfc": {}, "erfinv": {"low": -0.8, "high": 0.8},
    "erfcinv": {"low": 0.2, "high": 1.8}, "ndtr": {}, "log_ndtr": {}, "ndtri": {"low": 0.1, "high": 0.9},
    "i0": {}, "i1": {}, "i0e": {"low": 0.5, "high": 3.0}, "i1e": {"low": 0.5, "high": 3.0}, "j0": {}, "j1": {},
    "y0": {"low": 0.5, "high": 4.0}, "y1": {"low": 0.5, "high": 4.0},
}
for _name, _kw in SPECIAL.items():
    for _shape in [(), (4,)]:
        case(_name, getattr(_dsp, _name), getattr(_sps, _name), _shape, **_kw)
case("gammasgn", _dsp.gammasgn, _sps.gammasgn, (4,), low=-3.0, high=3.0, differentiable=False)
for _name, _order, _ref, _kw in [("polygamma", 1, _sps.polygamma, {"low": 0.5, "high": 3.0}),
                                 ("jn", 2, _sps.jv, {}), ("yn", 2, _sps.yv, {"low": 0.5, "high": 4.0}),
                                 ("gammainc", 2.5, _sps.gammainc, {"low": 0.5, "high": 3.0}),
                                 ("gammaincc", 2.5, _sps.gammaincc, {"low": 0.5, "high": 3.0}),
                                 ("iv", 1.5, _sps.iv, {"low": 0.5, "high": 3.0}),
                                 ("ive", 1.5, _sps.ive, {"low": 0.5, "high": 3.0})]:
    _fn = getattr(_dsp, _name)
    case(_name, lambda x, f=_fn, n=_order: f(n, x), lambda x, f=_ref, n=_order: f(n, x), (4,),
         name=f"{_name}({_order}, x)", **_kw)
case("betainc", lambda x: _dsp.betainc(2.0, 3.0, x), lambda x: _sps.betainc(2.0, 3.0, x), (4,), low=0.1, high=0.9)
for _name in ["xlogy", "xlog1py", "beta", "betaln"]:
    for _a, _b in [((4,), (4,)), ((2, 1), (3,))]:
        case(_name, getattr(_dsp, _name), getattr(_sps, _name), _a, _b, low=0.5, high=3.0)
case("stdtr", lambda t: _dsp.stdtr(3.5, t), lambda t: _sps.stdtr(3.5, t), (4,), name="stdtr(3.5, t)")
case("multigammaln", lambda a: _dsp.multigammaln(a, 3), lambda a: _sps.multigammaln(a, 3), (4,), low=1.5, high=4.0,
     name="multigammaln(a, 3)")

# -- dagrad.scipy.linalg, .signal, .integrate: SciPy computes the values
import scipy.integrate as _sci  # noqa: E402
import scipy.linalg as _scl  # noqa: E402
import scipy.signal as _scs  # noqa: E402

from dagrad.scipy import integrate as _din  # noqa: E402
from dagrad.scipy import linalg as _dli  # noqa: E402
from dagrad.scipy import signal as _dsi  # noqa: E402


def _well(a, k=3.0):
    """a + k*I (float32 I keeps float32 float32): well conditioned for |a| <= 1."""
    return a + k * np.eye(a.shape[-1], dtype=np.float32)


def _spd3(a):
    return a @ a.T + np.eye(a.shape[-1], dtype=np.float32)


for _kw in [{}, {"lower": True}, {"trans": 1}, {"lower": True, "trans": "T", "unit_diagonal": True}]:
    for _b in [(3,), (3, 2)]:
        case("solve_triangular", lambda a, b, kw=_kw: _dli.solve_triangular(_well(a), b, **kw),
             lambda a, b, kw=_kw: _scl.solve_triangular(_well(a), b, **kw), (3, 3), _b, low=-1.0, high=1.0,
             name=f"solve_triangular{_b} {_kw}")
for _lower in [False, True]:
    case("solve_triangular",
         lambda a, b, lo=_lower: _dli.cho_solve(_dli.cho_factor(_spd3(a), lower=lo), b),
         lambda a, b, lo=_lower: _scl.cho_solve(_scl.cho_factor(_spd3(a), lower=lo), b), (3, 3), (3, 2),
         low=-1.0, high=1.0, name=f"cho_factor/cho_solve lower={_lower}")
case("solve_sylvester", lambda a, b, q: _dli.solve_sylvester(_well(a), _well(b, 2.0), q),
     lambda a, b, q: _scl.solve_sylvester(_well(a), _well(b, 2.0), q), (3, 3), (2, 2), (3, 2), low=-1.0, high=1.0)
for _shape in [(1, 1), (3, 3)]:
    case("expm", _dli.expm, _scl.expm, _shape, low=-1.0, high=1.0, name=f"expm{_shape}")
    case("sqrtm", lambda a: _dli.sqrtm(_spd3(a)), lambda a: _scl.sqrtm(_spd3(a)), _shape, low=-1.0, high=1.0,
         name=f"sqrtm{_shape}")
case("getitem", lambda ab, b: _dli.solve_banded((1, 1), ab + np.array([[0], [4], [0]], np.float32), b),
     lambda ab, b: _scl.solve_banded((1, 1), ab + np.array([[0], [4], [0]], np.float32), b), (3, 4), (4,),
     low=-1.0, high=1.0, name="solve_banded((1, 1))")
for _a, _b in [((5,), (3,)), ((3,), (4,)), ((3, 4), (2, 2)), ((2, 3), (3, 2))]:
    for _mode in ["full", "valid", "same"]:
        if _mode == "valid" and _a == (2, 3):
            continue  # neither input is the larger along every axis: refused, as by SciPy
        case("convolve", lambda x, y, m=_mode: _dsi.convolve(x, y, m), lambda x, y, m=_mode: _scs.convolve(x, y, m),
             _a, _b, name=f"convolve{_a}{_b} {_mode!r}")

_T = np.array([0.0, 0.7])  # one interval: the full order-2 Jacobians take a few seconds


def _decay(y, t, k):
    return -k * y + 0.5 * y[::-1] * t


case("odeint", lambda y0, k: _din.odeint(_decay, y0, _T, k, rtol=1e-10, atol=1e-10),
     lambda y0, k: _sci.odeint(lambda y, t: _decay(y, t, k), y0, _T, rtol=1e-10, atol=1e-10).astype(y0.dtype),
     (2,), (), low=0.5, high=1.5, eps=1e-4, tol={"rtol": 1e-5, "atol": 1e-7})

# -- dagrad.numpy.fft: three ops (fftn complex to complex, rfftn, irfftn); rows take real parts so
# that every row is a real function of real inputs (tests/test_fft.py checks complex inputs)
import dagrad.numpy.fft as _dft  # noqa: E402


def _parts(z):
    return dg.real(z) - 2 * dg.imag(z)


def _np_parts(z):
    return np.real(z) - 2 * np.imag(z)


_FFT_ROWS = [
    ("fftn", lambda x: _dft.fft(x), lambda x: np.fft.fft(x), [(2, 5)], "fft(2, 5)"),
    ("fftn", lambda x, y: _dft.ifft(x + 1j * y, 7, axis=1, norm="ortho"),
     lambda x, y: np.fft.ifft(x + 1j * y, 7, axis=1, norm="ortho"), [(2, 5), (2, 5)], "ifft(x + iy, 7, ortho)"),
    ("fftn", lambda x: _dft.fftn(x * (1 + 0.5j), s=(3, 2), axes=(0, 2), norm="forward"),
     lambda x: np.fft.fftn(x * (1 + 0.5j), s=(3, 2), axes=(0, 2), norm="forward"), [(2, 3, 4)], "fftn s=(3, 2)"),
    ("rfftn", lambda x: _dft.rfft(x, 8), lambda x: np.fft.rfft(x, 8), [(2, 5)], "rfft(2, 5) n=8"),
    ("rfftn", lambda x: _dft.rfft2(x, s=(3, 3), axes=(0, 1), norm="ortho"),
     lambda x: np.fft.rfft2(x, s=(3, 3), axes=(0, 1), norm="ortho"), [(4, 5)], "rfft2 s=(3, 3) ortho"),
    ("rfftn", lambda x: _dft.ihfft(x), lambda x: np.fft.ihfft(x), [(3, 4)], "ihfft(3, 4)"),
    ("irfftn", lambda x, y: _dft.irfft(x + 1j * y), lambda x, y: np.fft.irfft(x + 1j * y), [(2, 4), (2, 4)],
     "irfft(x + iy)"),
    ("irfftn", lambda x, y: _dft.irfft(x + 1j * y, 5, norm="forward"),
     lambda x, y: np.fft.irfft(x + 1j * y, 5, norm="forward"), [(2, 4), (2, 4)], "irfft(x + iy, 5, forward)"),
    ("irfftn", lambda x: _dft.irfftn(x, s=(3, 7), axes=(1, 2)), lambda x: np.fft.irfftn(x, s=(3, 7), axes=(1, 2)),
     [(2, 4, 3)], "irfftn(real x, s=(3, 7))"),
    ("irfftn", lambda x: _dft.hfft(x * (1 - 1j), 6), lambda x: np.fft.hfft(x * (1 - 1j), 6), [(2, 3)], "hfft n=6"),
]
for _op, _f, _ref, _shapes, _name in _FFT_ROWS:
    _real_out = _name.startswith(("irfft", "hfft"))
    case(_op, _f if _real_out else (lambda *a, f=_f: _parts(f(*a))),
         _ref if _real_out else (lambda *a, r=_ref: _np_parts(r(*a))), *_shapes, name=_name)
