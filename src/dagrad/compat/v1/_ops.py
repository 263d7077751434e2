"""TensorFlow 1's functions as thin names over dagrad's static graphs and ops (`dagrad.compat.v1` re-exports
them). Each takes TF1's arguments (`axis` and its old names `reduction_indices`, `dimension`; `keep_dims`;
`name`) and calls the dagrad function that computes the same thing. The differences that remain are in
docs/coming-from.md ("TensorFlow 1").

>>> import dagrad.compat.v1 as tf, numpy as np
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 2])
...     total = tf.reduce_sum(x, reduction_indices=1)
...     with tf.Session() as sess:
...         total.eval({x: np.ones((3, 2))})
array([2., 2., 2.], dtype=float32)
"""

from __future__ import annotations

import functools
import math
import weakref

import numpy as np

from ... import numpy as dnp
from ..._core.errors import user_error
from ..._core.ir import Symbol, get_default_graph, walk
from ..._core.op import Op, apply
from ..._core.random import default_generator
from ..._core.shapes import dtype_of
from ..._core.tensor import Tensor
from ...ops import elementwise as ew
from ...ops import linalg, reduce
from ...ops import shape as sh
from ...static import graph as static_graph
from ...static import session as static_session

# TensorFlow's names for dtypes that NumPy reads otherwise ("float" is float32 in TF, float64 in NumPy)
_TF_NAMES = {"float": np.dtype(np.float32), "double": np.dtype(np.float64), "half": np.dtype(np.float16)}


def as_dtype(dtype, where):
    """A dtype given as TF1 code gives it (tf.float32, "float", np.float64, Python's float) as a NumPy dtype."""
    if isinstance(dtype, str) and dtype in _TF_NAMES:
        return _TF_NAMES[dtype]
    try:
        return np.dtype(dtype)
    except TypeError as err:
        raise user_error(TypeError, where, f"{dtype!r} is not a dtype: {err}") from None


def _array(value, dtype, where):
    """A value as TF1 converts it to a tensor: Python floats are float32 and Python ints int32 (int64 when
    they do not fit), as `tf.constant` makes them; NumPy arrays and scalars keep their dtype."""
    if isinstance(value, Tensor):
        value = value.numpy()
    try:
        if dtype is not None:
            return np.array(value, dtype=as_dtype(dtype, where))
        data = np.array(value)
    except (TypeError, ValueError) as err:
        raise user_error(type(err), where, f"cannot make a tensor of the value: {err}") from None
    if not isinstance(value, (np.ndarray, np.generic)):
        if data.dtype == np.float64:
            data = data.astype(np.float32)
        elif data.dtype == np.int64 and (data.size == 0 or np.iinfo(np.int32).min <= data.min() and
                                         data.max() <= np.iinfo(np.int32).max):
            data = data.astype(np.int32)
    return data


def _shape(shape, where):
    """A TF1 shape (a list or tuple of ints, an int, or a 1-d array) as a tuple of ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    try:
        dims = tuple(int(n) for n in np.asarray(shape).reshape(-1))
    except (TypeError, ValueError):
        raise user_error(TypeError, where, f"shape must be a list of sizes, got {shape!r}") from None
    if any(n < 0 for n in dims):
        raise user_error(ValueError, where, f"shape {list(dims)}: a size cannot be negative")
    return dims


def node(function):
    """TF1's functions build a node whatever their inputs: a result computed from values alone (NumPy arrays,
    Python numbers) is made a constant node of the default graph, which `sess.run` can fetch."""

    @functools.wraps(function)
    def tf_function(*args, **kwargs):
        out = function(*args, **kwargs)
        return static_graph.constant(out) if isinstance(out, (np.ndarray, np.generic)) else out

    return tf_function


# -- graph inputs and state
def placeholder(dtype, shape=None, name=None):
    """`tf.placeholder(dtype, shape=None, name=None)`: `dg.placeholder` in TF1's order."""
    return static_graph.placeholder(as_dtype(dtype, "placeholder"), shape, name)


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """`tf.constant`: a constant node; a scalar `value` with a `shape` fills it, as TF1 does."""
    data = _array(value, dtype, "constant")
    if shape is not None:
        shape = _shape(shape, "constant")
        if data.size == 1:
            data = np.full(shape, data.reshape(()), data.dtype)
        elif data.size == math.prod(shape) and not verify_shape:
            data = data.reshape(shape)
        elif data.shape != shape:
            raise user_error(ValueError, "constant", f"a value of shape {data.shape} does not fit shape {shape}")
    return static_graph.constant(data, name=name)


def _initial_value(value, dtype):
    """A Variable's initial value: a value, or a node computed once now (`tf.random_normal(...)`, `tf.zeros(...)`),
    which must not depend on a placeholder."""
    if not isinstance(value, Symbol):
        return _array(value, dtype, "Variable")
    fed = [n for n in walk([value]) if n.kind == "placeholder"]
    if fed:
        raise user_error(ValueError, "Variable", f"the initial value depends on placeholder {fed[0].name!r}; a "
                         "Variable's initial value is computed once, when it is made, from constants and other "
                         "Variables", value)
    data = static_session.Session(value.graph).run(value)
    return np.asarray(data, dtype=None if dtype is None else as_dtype(dtype, "Variable"))


def Variable(initial_value, trainable=True, collections=None, validate_shape=True, caching_device=None,
             name=None, variable_def=None, dtype=None, expected_shape=None, import_scope=None, constraint=None,
             use_resource=None, synchronization=None, aggregation=None, shape=None):
    """`tf.Variable(initial_value, trainable=True, ..., name=None, dtype=None)`: a `dg.Variable`, named
    "Variable" (then "Variable_1", ...) as TF1 names it when `name` is not given. An initial value that is a
    node (`tf.zeros(...)`, `tf.random_normal(...)`) is computed once, now: the initializer sets the Variable
    back to that value (TF1 computes it again)."""
    given = {"collections": collections, "variable_def": variable_def, "expected_shape": expected_shape,
             "import_scope": import_scope, "constraint": constraint, "shape": shape}
    for key, value in given.items():
        if value is not None:
            raise user_error(TypeError, "Variable", f"{key}= is not supported by dagrad.compat.v1 (see "
                             "docs/coming-from.md, 'TensorFlow 1')")
    data = _initial_value(initial_value, dtype)
    return static_graph.Variable(data, name=name or "Variable", trainable=trainable)


def zeros(shape, dtype=np.float32, name=None):
    """`tf.zeros(shape, dtype=tf.float32)`: a constant node."""
    return static_graph.constant(np.zeros(_shape(shape, "zeros"), as_dtype(dtype, "zeros")), name=name)


def ones(shape, dtype=np.float32, name=None):
    """`tf.ones(shape, dtype=tf.float32)`: a constant node."""
    return static_graph.constant(np.ones(_shape(shape, "ones"), as_dtype(dtype, "ones")), name=name)


def fill(dims, value, name=None):
    """`tf.fill(dims, value)`: a constant node of `value`'s dtype (TF1's conversion of Python numbers)."""
    data = _array(value, None, "fill")
    return static_graph.constant(np.full(_shape(dims, "fill"), data, data.dtype), name=name)


@node
def zeros_like(tensor, dtype=None, name=None, optimize=True):
    return dnp.zeros_like(tensor, None if dtype is None else as_dtype(dtype, "zeros_like"))


@node
def ones_like(tensor, dtype=None, name=None, optimize=True):
    return dnp.ones_like(tensor, None if dtype is None else as_dtype(dtype, "ones_like"))


def range_(start, limit=None, delta=1, dtype=None, name="range"):
    """`tf.range(start, limit=None, delta=1)`: a constant node (int32 for integers, float32 for floats)."""
    if limit is None:
        start, limit = 0, start
    data = np.arange(start, limit, delta)
    return static_graph.constant(_array(data.tolist(), dtype, "range") if data.size else data, name=name)


class Session(static_session.Session):
    """`tf.Session(target="", graph=None, config=None)`: a `dg.Session` of `graph` (the default graph)."""

    def __init__(self, target="", graph=None, config=None):
        _local_session(target, config, "Session")
        super().__init__(graph)


class InteractiveSession(static_session.InteractiveSession):
    """`tf.InteractiveSession()`: a `dg.InteractiveSession`, the default session until it is closed."""

    def __init__(self, target="", graph=None, config=None):
        _local_session(target, config, "InteractiveSession")
        super().__init__(graph)


def _local_session(target, config, where):
    if target not in ("", None) or config is not None:
        raise user_error(TypeError, where, "dagrad runs graphs in this process: target= and config= are not "
                         "supported (see docs/coming-from.md, 'TensorFlow 1')")


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False, gate_gradients=False,
              aggregation_method=None, stop_gradients=None):
    """`tf.gradients(ys, xs, grad_ys=None)`: a list of gradient nodes, one per x (a list even for one x, as
    TF1's). An x the ys do not depend on gets zeros (TF1: None)."""
    if stop_gradients is not None:
        raise user_error(TypeError, "gradients", "stop_gradients= is not supported: wrap those nodes in "
                         "tf.stop_gradient(...) where the ys are built")
    xs = [xs] if isinstance(xs, Symbol) else list(xs)
    return list(static_session.gradients(ys, xs, grad_ys))


def no_op(name=None):
    """`tf.no_op()`: a node that does nothing when run."""
    return static_graph.variables_initializer([], name=name)


def group(*inputs, name=None):
    return static_graph.group(*inputs, name=name)


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return static_graph.assign(ref, value)


def assign_add(ref, value, use_locking=None, name=None):
    return static_graph.assign(ref, ref + value)


def assign_sub(ref, value, use_locking=None, name=None):
    return static_graph.assign(ref, ref - value)


# -- random values: nodes that draw anew at each run, as TF1's
_seeds = weakref.WeakKeyDictionary()  # graph -> [graph-level seed, random ops made since]
_DEFAULT_GRAPH_SEED = 87654321  # TF1's, when only an op-level seed is given


def set_random_seed(seed):
    """`tf.set_random_seed(seed)`: the default graph's seed; every random op made after it draws the same
    values in each program run (each op its own stream)."""
    _seeds[get_default_graph()] = [int(seed), 0]


def _generator(seed):
    """The generator of a new random op: from the graph's seed and the op's (TF1's two-level rule), else
    dagrad's default generator (`dg.manual_seed`)."""
    entry = _seeds.get(get_default_graph())
    if entry is None and seed is None:
        return None
    if entry is None:
        return np.random.default_rng([_DEFAULT_GRAPH_SEED, int(seed)])
    entry[1] += 1
    return np.random.default_rng([entry[0], entry[1] if seed is None else int(seed)])


def _draw(like, shape, kind, args, generator):
    gen = generator if generator is not None else default_generator()
    dtype = like.dtype
    if kind == "normal":
        mean, stddev = args
        return (gen.standard_normal(shape) * stddev + mean).astype(dtype)
    if kind == "truncated":  # values past two standard deviations are drawn again, as TF1's
        mean, stddev = args
        z = gen.standard_normal(shape)
        far = np.abs(z) > 2
        while far.any():
            z[far] = gen.standard_normal(int(far.sum()))
            far = np.abs(z) > 2
        return (z * stddev + mean).astype(dtype)
    low, high = args
    if dtype.kind in "iu":
        return gen.integers(low, high, shape).astype(dtype)
    return (gen.random(shape) * (high - low) + low).astype(dtype)


# not in the op registry (like dropout's mask): only these functions build it, on a 0-d constant of the dtype
_RANDOM = Op("tf_random", _draw, None, None, lambda like, shape, kind, args, generator: shape, False, random=True,
             dtype=lambda like, **attrs: np.dtype(like))


def _random(where, shape, dtype, kind, args, seed):
    dtype = as_dtype(dtype, where)
    if dtype.kind not in "f" and kind != "uniform" or dtype.kind not in "fiu":
        raise user_error(TypeError, where, f"cannot draw values of dtype {dtype}")
    like = static_graph.constant(np.zeros((), dtype))
    return apply(_RANDOM, (like,), {"shape": _shape(shape, where), "kind": kind,
                                    "args": tuple(float(a) for a in args), "generator": _generator(seed)})


def _uniform_like(like, generator):
    gen = generator if generator is not None else default_generator()
    return gen.random(np.shape(like)).astype(like.dtype)


# uniform values in [0, 1) in the shape its input has when the graph runs (a batch of unknown size): dropout's
_UNIFORM_LIKE = Op("tf_uniform_like", _uniform_like, None, None, lambda like, generator: like, False, random=True,
                   dtype=lambda like, **attrs: np.dtype(like))


def uniform_like(x, seed=None):
    """A node drawing uniform values in [0, 1) of x's shape and dtype at each run."""
    return apply(_UNIFORM_LIKE, (x,), {"generator": _generator(seed)})


def random_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    """`tf.random_normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None)`: a node drawing new values
    at each run (as a Variable's initial value: drawn once, when the Variable is made)."""
    return _random("random_normal", shape, dtype, "normal", (mean, stddev), seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    """`tf.truncated_normal`: normal values, those more than two standard deviations from the mean drawn again."""
    return _random("truncated_normal", shape, dtype, "truncated", (mean, stddev), seed)


def random_uniform(shape, minval=0, maxval=None, dtype=np.float32, seed=None, name=None):
    """`tf.random_uniform(shape, minval=0, maxval=None, dtype=tf.float32)`: uniform in [minval, maxval) (maxval
    1 for floats; needed for integers)."""
    if maxval is None:
        if as_dtype(dtype, "random_uniform").kind in "iu":
            raise user_error(ValueError, "random_uniform", "an integer dtype needs maxval")
        maxval = 1
    return _random("random_uniform", shape, dtype, "uniform", (minval, maxval), seed)


# -- arithmetic and reductions
def _axis(axis, old, old_name, where):
    """TF1's axis, or its deprecated name for it (reduction_indices, dimension, squeeze_dims)."""
    if old is not None:
        if axis is not None:
            raise user_error(ValueError, where, f"got both axis and {old_name} (its old name): pass one")
        axis = old
    if isinstance(axis, (list, np.ndarray)):
        axis = tuple(int(a) for a in np.asarray(axis).reshape(-1))
    return axis


def _keepdims(keepdims, keep_dims):
    return bool(keepdims if keepdims is not None else keep_dims)


def _reduction(function, label, integer_mean=False):
    @node
    def reduce_(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
        axis = _axis(axis, reduction_indices, "reduction_indices", f"reduce_{label}")
        out = function(input_tensor, axis=axis, keepdims=_keepdims(keepdims, keep_dims))
        dtype = np.dtype(dtype_of(input_tensor))
        if integer_mean and dtype.kind in "iu":  # TF1's mean of integers is an integer (truncated)
            out = ew.astype(out, dtype)
        return out

    reduce_.__name__ = reduce_.__qualname__ = f"reduce_{label}"
    reduce_.__doc__ = f"`tf.reduce_{label}(input_tensor, axis=None, keepdims=None)` (and TF1's old names " \
                      f"reduction_indices= and keep_dims=): `dg.{function.__name__}`."
    return reduce_


reduce_sum = _reduction(reduce.sum, "sum")
reduce_mean = _reduction(reduce.mean, "mean", integer_mean=True)
reduce_max = _reduction(reduce.max, "max")
reduce_min = _reduction(reduce.min, "min")
reduce_prod = _reduction(reduce.prod, "prod")
reduce_logsumexp = _reduction(dnp.logsumexp, "logsumexp")
reduce_any = _reduction(dnp.any, "any")
reduce_all = _reduction(dnp.all, "all")


def _arg(function, label):
    @node
    def arg_(input, axis=None, name=None, dimension=None, output_type=np.int64):
        axis = _axis(axis, dimension, "dimension", label)
        out = function(input, axis=0 if axis is None else axis)  # TF1's default axis is 0
        dtype = as_dtype(output_type, label)
        return out if dtype == np.int64 else ew.astype(out, dtype)

    arg_.__name__ = arg_.__qualname__ = label
    arg_.__doc__ = f"`tf.{label}(input, axis=None, output_type=tf.int64)`: axis 0 when not given, as TF1."
    return arg_


argmax = _arg(reduce.argmax, "argmax")
argmin = _arg(reduce.argmin, "argmin")


@node
def cast(x, dtype, name=None):
    """`tf.cast(x, dtype)`: `dg.astype` (floats to integers truncate, as TF1)."""
    return ew.astype(x, as_dtype(dtype, "cast"))


@node
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    """`tf.matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False)`."""
    if transpose_a or adjoint_a:
        a = sh.swapaxes(ew.conj(a) if adjoint_a else a, -1, -2)
    if transpose_b or adjoint_b:
        b = sh.swapaxes(ew.conj(b) if adjoint_b else b, -1, -2)
    return linalg.matmul(a, b)


def _binary(function, label):
    @node
    def binary(x, y, name=None):
        return function(x, y)

    binary.__name__ = binary.__qualname__ = label
    binary.__doc__ = f"`tf.{label}(x, y)`: `dg.{function.__name__}`."
    return binary


def _unary(function, label):
    @node
    def unary(x, name=None):
        return function(x)

    unary.__name__ = unary.__qualname__ = label
    unary.__doc__ = f"`tf.{label}(x)`: `dg.{function.__name__}`."
    return unary


@node
def rsqrt(x, name=None):
    return ew.reciprocal(ew.sqrt(x))


@node
def add_n(inputs, name=None):
    """`tf.add_n(inputs)`: the sum of a list of tensors of one shape."""
    if not inputs:
        raise user_error(ValueError, "add_n", "expects a non-empty list of tensors")
    return functools.reduce(ew.add, inputs)


@node
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    return ew.clip(t, clip_value_min, clip_value_max)


@node
def where(condition, x=None, y=None, name=None):
    """`tf.where(condition, x, y)`; TF1's one-argument form (the indices of the true entries) has no static
    shape, so it is refused."""
    if x is None or y is None:
        raise user_error(TypeError, "where", "needs x and y: the one-argument form (indices) is not supported")
    return ew.where(condition, x, y)


@node
def identity(input, name=None):
    return ew.positive(input)


# -- shapes
@node
def reshape(tensor, shape, name=None):
    return sh.reshape(tensor, tuple(int(n) for n in np.asarray(shape).reshape(-1)))  # -1: the size that fits


@node
def transpose(a, perm=None, name="transpose", conjugate=False):
    out = sh.transpose(a, None if perm is None else tuple(int(p) for p in perm))
    return ew.conj(out) if conjugate else out


@node
def concat(values, axis, name="concat"):
    return sh.concatenate(list(values), axis=int(axis))


@node
def stack(values, axis=0, name="stack"):
    return sh.stack(list(values), axis=int(axis))


def unstack(value, num=None, axis=0, name="unstack"):
    """`tf.unstack(value, axis=0)`: the slices along `axis` (its size must be known)."""
    n = value.shape[axis] if num is None else num
    if n is None:
        raise user_error(ValueError, "unstack", f"the size of axis {axis} is unknown until Session.run; pass num=")
    index = (slice(None),) * (axis % len(value.shape))
    return [sh.getitem(value, index + (i,)) for i in range(n)]


@node
def expand_dims(input, axis=None, name=None, dim=None):
    return sh.expand_dims(input, _axis(axis, dim, "dim", "expand_dims"))


@node
def squeeze(input, axis=None, name=None, squeeze_dims=None):
    return sh.squeeze(input, _axis(axis, squeeze_dims, "squeeze_dims", "squeeze"))


@node
def tile(input, multiples, name=None):
    return sh.tile(input, tuple(int(m) for m in multiples))


@node
def gather(params, indices, validate_indices=None, name=None, axis=0):
    return dnp.take(params, indices, axis=axis)


@node
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """`tf.one_hot(indices, depth)`: float32 ones at the indices (an index out of [0, depth) gives a row of
    zeros, as TF1's)."""
    dtype = as_dtype(np.float32 if dtype is None else dtype, "one_hot")
    hot = ew.equal(sh.expand_dims(indices, -1), np.arange(int(depth)))
    if on_value is None and off_value is None:
        out = ew.astype(hot, dtype)
    else:
        out = ew.where(hot, np.asarray(1 if on_value is None else on_value, dtype),
                       np.asarray(0 if off_value is None else off_value, dtype))
    return out if axis in (None, -1) else sh.moveaxis(out, -1, axis)


def disable_v2_behavior():
    """`tf.disable_v2_behavior()` (of `tensorflow.compat.v1`): dagrad.compat.v1 is TF1's graph mode already."""


disable_eager_execution = disable_v2_behavior

