"""The op table: sample calls of every registered op, with NumPy (and PyTorch) references.

Every op in `dg.REGISTRY` must appear here (a test enforces it), so a new op is tested by
adding its rows. A row calls dagrad with float arguments of the given shapes; its
reference does the same with NumPy; `torch_ref` (optional) with PyTorch for the oracle tier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import dagrad as dg


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

    def inputs(self, seed=0, dtype=np.float64):
        rng = np.random.default_rng(seed)
        return [rng.uniform(self.low, self.high, size=s).astype(dtype) for s in self.shapes]

    def __str__(self):
        return self.name or f"{self.op}{self.shapes}"


CASES: list[Case] = []


def case(op, f, ref, *shapes, **kw):
    CASES.append(Case(op, f, ref, shapes, **kw))


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
}
for _name, (_f, _ref, _tref, _kw) in UNARY.items():
    for _shape in [(), (4,), (2, 3)]:
        case(_name, _f, _ref, _shape, torch_ref=_tref, **_kw)

# -- no gradient: sign and comparisons (bool results)
case("sign", dg.sign, np.sign, (5,), differentiable=False)
for _name in ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]:
    case(_name, getattr(dg, _name), getattr(np, _name), (2, 3), (3,), differentiable=False)
case("equal", lambda x: x == x, lambda x: x == x, (3,), differentiable=False, name="x == x")
case("greater", lambda x: x > 0, lambda x: x > 0, (3,), differentiable=False, name="x > 0")

# -- selection and casting
_COND = np.array([True, False, True])
case("where", lambda x, y: dg.where(_COND, x, y), lambda x, y: np.where(_COND, x, y), (3,), (3,),
     torch_ref=lambda x, y: _t("where")(_t("tensor")(_COND), x, y))
case("where", lambda x, y: dg.where(_COND, x, y), lambda x, y: np.where(_COND, x, y), (2, 3), (),
     torch_ref=lambda x, y: _t("where")(_t("tensor")(_COND), x, y), name="where broadcast")
case("astype", lambda x: dg.astype(x, np.float32) * 1.0, lambda x: x.astype(np.float32) * 1.0, (3,),
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

# -- linear algebra
for _a, _b in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
               ((2, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4))]:
    case("matmul", dg.matmul, np.matmul, _a, _b, torch_ref=_t("matmul"))
case("matmul", lambda a, b: a @ b, lambda a, b: a @ b, (2, 3), (3, 2), name="a @ b", torch_ref=lambda a, b: a @ b)

# -- shape
case("reshape", lambda x: dg.reshape(x, (3, 2)), lambda x: x.reshape(3, 2), (2, 3),
     torch_ref=lambda x: x.reshape(3, 2))
case("reshape", lambda x: x.reshape(2, -1), lambda x: x.reshape(2, -1), (6,), name="reshape -1")
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
case("index_add", lambda v: dg.index_add(v, slice(1, 3), (4,)),
     lambda v: np.concatenate([[0.0], v, [0.0]]), (2,))
case("index_add", lambda v: dg.index_add(v, np.array([0, 2, 0]), (3,)),
     lambda v: np.array([v[0] + v[2], 0.0, v[1]]), (3,), name="index_add repeated")

# -- joining
case("concatenate", lambda a, b: dg.concatenate([a, b]), lambda a, b: np.concatenate([a, b]), (2, 3), (1, 3),
     torch_ref=lambda a, b: _t("cat")([a, b]))
case("concatenate", lambda a, b: dg.concatenate([a, b], axis=-1), lambda a, b: np.concatenate([a, b], axis=-1),
     (2, 3), (2, 1))

# -- composites (no registry entry of their own; their derivatives come from primitives)
COMPOSITES = [
    Case("mean", lambda x: dg.mean(x, axis=(0, 2)), lambda x: np.mean(x, axis=(0, 2)), ((2, 3, 4),)),
    Case("mean", lambda x: x.mean(), lambda x: x.mean(), ((3, 2),)),
    Case("stack", lambda a, b: dg.stack([a, b], axis=1), lambda a, b: np.stack([a, b], axis=1), ((2, 3), (2, 3))),
    Case("swapaxes", lambda x: dg.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1), ((2, 3, 4),)),
    Case("flatten", lambda x: x.flatten(), lambda x: x.flatten(), ((2, 3),)),
]

# -- families kept in their own files (each appends rows with `case`)
import op_table_linalg  # noqa: E402, F401
