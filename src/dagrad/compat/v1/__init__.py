"""TensorFlow 1's names over dagrad's static graphs: a TF1 program runs with `import tensorflow as tf`
changed to `import dagrad.compat.v1 as tf` (or `from dagrad import compat; tf = compat.v1`).

Graphs, placeholders, Variables and Sessions are dagrad's own (`dg.Graph`, `dg.placeholder`, ...), so
the nodes mix freely with dagrad's functions (`dg.sum(x)`, `x @ w`, `np.exp(x)`). `tf.train`'s optimizers
compute TF1's update formulas. A name TF1 has and this namespace lacks raises an AttributeError that
says what to use (docs/coming-from.md, "TensorFlow 1", lists the names and the differences).

>>> import dagrad.compat.v1 as tf, numpy as np
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 2])
...     w = tf.Variable(tf.zeros([2, 1]))
...     loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
...     train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         for _ in range(100):
...             _ = sess.run(train, {x: np.eye(2)})
...         print(np.round(loss.eval({x: np.eye(2)}), 4))
0.0
>>> tf.get_variable  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AttributeError: module 'dagrad.compat.v1' has no attribute 'get_variable' (TensorFlow 1's tf.get_variable): ...
"""

from __future__ import annotations

import numpy as np

from ... import numpy as dnp
from ..._core.errors import missing_name as missing
from ..._core.ir import Graph, get_default_graph, reset_default_graph
from ...ops import elementwise as ew
from ...ops.elementwise import stop_gradient
from ...static import (
    get_default_session,
    global_variables,
    global_variables_initializer,
    trainable_variables,
    variables_initializer,
)
from . import nn, random, train
from ._ops import (
    InteractiveSession,
    Session,
    Variable,
    _binary,
    _unary,
    add_n,
    argmax,
    argmin,
    assign,
    assign_add,
    assign_sub,
    cast,
    clip_by_value,
    concat,
    constant,
    disable_eager_execution,
    disable_v2_behavior,
    expand_dims,
    fill,
    gather,
    gradients,
    group,
    identity,
    matmul,
    no_op,
    node,
    one_hot,
    ones,
    ones_like,
    placeholder,
    random_normal,
    random_uniform,
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    reshape,
    rsqrt,
    set_random_seed,
    squeeze,
    stack,
    tile,
    transpose,
    truncated_normal,
    unstack,
    where,
    zeros,
    zeros_like,
)
from ._ops import range_ as range  # noqa: A001

# dtypes (NumPy's: `x.dtype == tf.float32` holds for a float32 node)
float16 = half = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = double = np.dtype(np.float64)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16 = np.dtype(np.uint8), np.dtype(np.uint16)
bool = np.dtype(np.bool_)  # noqa: A001
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

add, subtract, multiply = _binary(ew.add, "add"), _binary(ew.subtract, "subtract"), _binary(ew.multiply, "multiply")
divide, truediv, pow = _binary(ew.divide, "divide"), _binary(ew.divide, "truediv"), _binary(ew.power, "pow")  # noqa: A001
floordiv, mod = _binary(dnp.floor_divide, "floordiv"), _binary(ew.mod, "mod")
maximum, minimum = _binary(ew.maximum, "maximum"), _binary(ew.minimum, "minimum")
equal, not_equal = _binary(ew.equal, "equal"), _binary(ew.not_equal, "not_equal")
less, less_equal = _binary(ew.less, "less"), _binary(ew.less_equal, "less_equal")
greater, greater_equal = _binary(ew.greater, "greater"), _binary(ew.greater_equal, "greater_equal")
logical_and, logical_or = _binary(ew.logical_and, "logical_and"), _binary(ew.logical_or, "logical_or")
logical_not = _unary(ew.logical_not, "logical_not")
abs, negative, sign = _unary(ew.abs, "abs"), _unary(ew.negative, "negative"), _unary(ew.sign, "sign")  # noqa: A001
square, sqrt, exp, log = _unary(ew.square, "square"), _unary(ew.sqrt, "sqrt"), _unary(ew.exp, "exp"), _unary(
    ew.log, "log")
log1p, expm1, reciprocal = _unary(ew.log1p, "log1p"), _unary(ew.expm1, "expm1"), _unary(ew.reciprocal, "reciprocal")
sin, cos, tan = _unary(ew.sin, "sin"), _unary(ew.cos, "cos"), _unary(ew.tan, "tan")
tanh, sigmoid = _unary(ew.tanh, "tanh"), _unary(ew.sigmoid, "sigmoid")
floor, ceil, round = _unary(ew.floor, "floor"), _unary(ew.ceil, "ceil"), _unary(ew.round, "round")  # noqa: A001
einsum, tensordot = node(dnp.einsum), node(dnp.tensordot)

initialize_all_variables = global_variables_initializer  # TF1's older name
all_variables = global_variables


def local_variables_initializer():
    """`tf.local_variables_initializer()`: dagrad has no local Variables, so an op that does nothing."""
    return variables_initializer([], name="init_local")


_HINTS = {
    "get_variable": "use tf.Variable(initial_value, name=...) (tf.random_normal(...), tf.zeros(...) as initial "
                    "values); dagrad has no variable scopes to share Variables through",
    "variable_scope": "no variable scopes: keep the Variables in Python variables and name them with name=",
    "name_scope": "no name scopes: name nodes with name= (placeholders, Variables, constants)",
    "control_dependencies": "no counterpart: every update of one Session.run reads the values from before the run",
    "layers": "dagrad's layers are PyTorch's (dg.nn.Linear, ...), eager; in a graph write tf.matmul(x, W) + b",
    "contrib": "tf.contrib has no counterpart",
    "summary": "no TensorBoard summaries: fetch the values with sess.run and log them",
    "estimator": "no Estimators: write the training loop with tf.Session",
    "keras": "dagrad.nn is PyTorch's nn (dg.nn.Sequential, dg.nn.Linear, ...)",
    "data": "no tf.data pipelines: feed NumPy arrays with feed_dict (dg.utils.data.DataLoader batches them)",
    "shape": "a node's shape is known when it is built: x.shape (None for a size known only at run time)",
    "size": "x.size for a node of known shape",
    "while_loop": "dg.while_loop(cond, body, init_val) (JAX's argument order, on graph nodes too)",
    "cond": "dg.cond(pred, true_fun, false_fun, *operands) (JAX's), or tf.where for elementwise choices",
    "ConfigProto": "dagrad runs graphs in this process: tf.Session() takes no config",
    "GPUOptions": "dagrad runs graphs in this process: tf.Session() takes no config",
    "py_func": "write a dg.Function (docs/custom-ops.md)",
    "sparse_placeholder": "no sparse tensors",
    "string": "no string tensors",
    "app": "no tf.app: use argparse",
    "flags": "no tf.flags: use argparse",
    "logging": "no tf.logging: use Python's logging",
    "gfile": "no tf.gfile: use open()",
    "Print": "no printing node: fetch the value with sess.run",
    "print": "no printing node: fetch the value with sess.run",
    "math": "tf.math's functions are here by their TF1 names (tf.log, tf.reduce_sum, ...) and in dagrad.numpy",
    "image": "no image functions",
    "enable_eager_execution": "dagrad's eager mode is dagrad itself (import dagrad as dg; dg.tensor, backward)",
}


def __getattr__(name):
    raise missing(__name__, name, "TensorFlow 1's tf.{}", _HINTS, "TensorFlow 1")


__all__ = [
    "nn", "random", "train", "Graph", "get_default_graph", "reset_default_graph", "Session", "InteractiveSession",
    "get_default_session", "placeholder", "Variable", "constant", "zeros", "ones", "fill", "zeros_like", "ones_like",
    "range", "random_normal", "random_uniform", "truncated_normal", "set_random_seed", "global_variables_initializer",
    "initialize_all_variables", "local_variables_initializer", "variables_initializer", "global_variables",
    "all_variables", "trainable_variables", "gradients", "group", "no_op", "assign", "assign_add", "assign_sub",
    "stop_gradient", "identity", "cast", "matmul", "einsum", "tensordot", "add_n", "clip_by_value", "where",
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_logsumexp", "reduce_any",
    "reduce_all", "argmax", "argmin", "reshape", "transpose", "concat", "stack", "unstack", "expand_dims", "squeeze",
    "tile", "gather", "one_hot", "add", "subtract", "multiply", "divide", "truediv", "pow", "floordiv", "mod",
    "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_not", "abs", "negative", "sign", "square", "sqrt", "rsqrt", "exp", "log", "log1p", "expm1",
    "reciprocal", "sin", "cos", "tan", "tanh", "sigmoid", "floor", "ceil", "round", "float16", "half", "float32",
    "float64", "double", "int8", "int16", "int32", "int64", "uint8", "uint16", "bool", "complex64", "complex128",
    "disable_v2_behavior", "disable_eager_execution",
]
