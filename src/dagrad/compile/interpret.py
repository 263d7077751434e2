"""The reference interpreter: a Program run node by node with each op's own forward.

It is what generated code must compute (JAX's `eval_jaxpr` in spirit): `dg.compile(f,
optimize=False)` runs it, and the property tests compare the optimised, generated code with
it bit for bit. It is slow on purpose: nothing here but the ops.
"""

from __future__ import annotations

import operator

import numpy as np

from .._core.errors import caller_line, printable
from .._core.ir import Symbol, WeakScalar
from ..ops import elementwise

# Python's arithmetic on Python numbers (ir.WeakScalar nodes: `w * 2.0` for a float argument w) computed as
# eager code computes it, with Python's operators: the result is a Python number (weakly typed in NumPy),
# and its ** is C's pow, which can differ from NumPy's power by an ulp. Each: (function, source template).
PYTHON_ARITHMETIC = {f.op: entry for f, entry in (
    (elementwise.add, (operator.add, "({}) + ({})")), (elementwise.subtract, (operator.sub, "({}) - ({})")),
    (elementwise.multiply, (operator.mul, "({}) * ({})")), (elementwise.divide, (operator.truediv, "({}) / ({})")),
    (elementwise.power, (operator.pow, "({}) ** ({})")), (elementwise.negative, (operator.neg, "-({})")),
    (elementwise.positive, (operator.pos, "+({})")), (elementwise.abs, (operator.abs, "abs({})")))}


def python_arithmetic(node):
    """(function, source template) of a weakly typed node computed with Python's operator, else None."""
    return PYTHON_ARITHMETIC.get(node.op) if type(node) is WeakScalar else None


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
