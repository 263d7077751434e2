"""The reference interpreter: a Program run node by node with each op's own forward.

It is what generated code must compute (JAX's `eval_jaxpr` in spirit): `dg.compile(f,
optimize=False)` runs it, and the property tests compare the optimised, generated code with
it bit for bit. It is slow on purpose: nothing here but the ops.
"""

from __future__ import annotations

import operator

import numpy as np

from .._core.dtypes import of_ufunc
from .._core.errors import caller_line, printable
from .._core.ir import Symbol, WeakScalar
from .._core.op import Op
from .._core.shapes import broadcast_shapes
from ..ops import elementwise

# Python's `//` on Python numbers (a weakly typed node: `w // 2` for a float argument w), as one node; NumPy's
# floor_divide is its forward (what a graph of it runs outside generated code), and its gradient is zero
FLOOR_DIVIDE = Op("floor_divide", np.floor_divide, None, None, broadcast_shapes, False, dtype=of_ufunc(np.floor_divide))

# Python's arithmetic on Python numbers (ir.WeakScalar nodes: `w * 2.0` for a float argument w) computed as
# eager code computes it, with Python's operators: the result is a Python number (weakly typed in NumPy),
# and its ** is C's pow, which can differ from NumPy's power by an ulp. Each: (function, source template).
PYTHON_ARITHMETIC = {op: entry for op, entry in (
    (elementwise.add.op, (operator.add, "({}) + ({})")), (elementwise.subtract.op, (operator.sub, "({}) - ({})")),
    (elementwise.multiply.op, (operator.mul, "({}) * ({})")),
    (elementwise.divide.op, (operator.truediv, "({}) / ({})")),
    (elementwise.mod.op, (operator.mod, "({}) % ({})")), (FLOOR_DIVIDE, (operator.floordiv, "({}) // ({})")),
    (elementwise.negative.op, (operator.neg, "-({})")), (elementwise.positive.op, (operator.pos, "+({})")),
    (elementwise.abs.op, (operator.abs, "abs({})")))}
POWER = elementwise.power.op
_PYTHON_TYPES = {"b": "bool", "i": "int", "f": "float", "c": "complex"}


def python_power(base, exponent, kind):
    """Python's `base ** exponent`, whose type depends on the values (a negative float to a fractional power is
    complex, an int to a negative power a float): a result not of the type `kind` ('float', ...) dg.compile
    traced raises TypeError (dg.compile then runs the function itself for that call, as eagerly)."""
    out = base ** exponent
    if type(out).__name__ != kind:
        raise TypeError(f"{base!r} ** {exponent!r} is a Python {type(out).__name__}, traced as a {kind}: its type "
                        "depends on the values (pass the number in static_argnames to make it a constant)")
    return out


PYTHON_POWER = Op("python_power", python_power, None, None, broadcast_shapes, False)  # how generated code calls it


def python_arithmetic(node):
    """(function, source template) of a weakly typed node computed with Python's operator, else None. A power's
    template has `{power}` where its function's name goes (python_power: its type depends on the values)."""
    if type(node) is not WeakScalar:
        return None
    if node.op is POWER:
        kind = _PYTHON_TYPES[node._dtype.kind]
        return (lambda base, exponent: python_power(base, exponent, kind)), f"{{power}}({{}}, {{}}, {kind!r})"
    return PYTHON_ARITHMETIC.get(node.op)


def eval_graph(program, args, where="the reference interpreter"):
    """The outputs of `program` for the input values `args` (one per `program.inputs`), as a tuple
    of arrays none of which shares memory with an input. A failing op raises its error naming
    the op, its inputs, the line that built its node and the caller's line.

    >>> import dagrad as dg, numpy as np
    >>> plain = dg.compile(lambda x: dg.exp(x) * 2.0, optimize=False)  # runs eval_graph
    >>> plain(np.zeros(2))
    array([2., 2.])
    """
    env = dict(zip(program.inputs, args))
    for node in program.nodes:
        if node in env:
            continue
        if node.op is None:  # a constant (or a Variable not fed as an input)
            env[node] = node._data
            continue
        values = [env[a] if isinstance(a, Symbol) else a for a in node.inputs]
        arithmetic = python_arithmetic(node)
        try:
            env[node] = arithmetic[0](*values) if arithmetic else node.op.forward(*values, **(node.attrs or {}))
        except Exception as err:
            raise node_error(node, err, where) from err
    # every array is the caller's own: not an input, a view of one, or a constant the program keeps
    return tuple(_own(env[o] if isinstance(o, Symbol) else o) for o in program.outputs)


def _own(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def _dtype(value):
    return getattr(value, "dtype", type(value).__name__)


def node_error(node, err, where):
    """`err`, raised running `node` in `where`, as an error naming the op, its inputs and two lines."""
    inputs = ", ".join(f"{tuple(a._shape)} {a._dtype}" if isinstance(a, Symbol) else f"{np.shape(a)} {_dtype(a)}"
                       for a in node.inputs)
    # two lines of the user's: the one that built the failing node (a gradient's: its forward's line),
    # and the call that ran the code
    message = printable(f"{node.op.name} failed in {where}: {err} (inputs: {inputs}; node built at {node.where}) "
                        f"at {caller_line()}")
    try:
        return type(err)(message)
    except Exception:
        return RuntimeError(message)
