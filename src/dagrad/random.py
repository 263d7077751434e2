"""JAX's key-based random numbers (`jax.random`): a key is an array, every function is a pure function of
its key (the same key gives the same numbers), and `split` / `fold_in` make new, independent keys.

The semantics are JAX's; the numbers are not: a key here is a NumPy uint32 array of shape (2,) (JAX's
`PRNGKey` layout) and the values come from NumPy's Philox counter-based generator keyed by it (JAX uses
Threefry), so a program gets different values than under JAX, with the same statistics. Floats are float64
by default (NumPy's; JAX's are float32 unless x64 is enabled). The results are NumPy arrays, which every
dagrad function takes. The stateful generator of the factories and layers is another thing: `dg.manual_seed`.

>>> import dagrad as dg
>>> key = dg.random.PRNGKey(0)
>>> key, subkey = dg.random.split(key)
>>> x = dg.random.normal(subkey, (3,))
>>> bool((x == dg.random.normal(subkey, (3,))).all())   # the same key: the same numbers
True
>>> bool((x == dg.random.normal(key, (3,))).any())      # another key: other numbers
False
"""

from __future__ import annotations

import math

import numpy as np

from ._core.errors import missing_name, user_error
from ._core.tensor import Tensor

__all__ = ["PRNGKey", "key", "key_data", "split", "fold_in", "normal", "uniform", "bernoulli", "categorical",
           "randint", "permutation", "choice", "truncated_normal", "gumbel", "exponential"]

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
# the second word of Philox's key: what the stream is for, so that split, fold_in and sampling from one key
# draw from unrelated streams
_SAMPLE, _SPLIT, _FOLD = 0, 1, 2


def PRNGKey(seed):
    """A key from an integer seed: a uint32 array of shape (2,), (seed >> 32, seed & 0xFFFFFFFF), JAX's layout.

    >>> PRNGKey(0), PRNGKey(2 ** 32 + 5)
    (array([0, 0], dtype=uint32), array([1, 5], dtype=uint32))
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        if isinstance(seed, (np.ndarray, Tensor)) and np.ndim(seed) == 0 and np.asarray(seed).dtype.kind in "iu":
            seed = int(np.asarray(seed))
        else:
            raise user_error(TypeError, "PRNGKey", f"the seed must be an integer, got {type(seed).__name__}")
    seed = int(seed) & _MASK64  # a negative seed as its two's complement, as JAX
    return np.array([seed >> 32, seed & _MASK32], dtype=np.uint32)


key = PRNGKey  # JAX's newer name (its typed key arrays are plain uint32 arrays here)


def key_data(keys):
    """The uint32 data of a key (here the key itself)."""
    return _keys(keys, "key_data")


def _keys(k, where):
    """A key array (uint32, last axis 2), checked."""
    data = np.asarray(k.numpy() if isinstance(k, Tensor) else k)
    if data.dtype != np.uint32 or data.ndim < 1 or data.shape[-1] != 2:
        raise user_error(TypeError, where, f"expects a key (a uint32 array of shape (2,), from PRNGKey or split), "
                         f"got an array of shape {data.shape} and dtype {data.dtype}")
    return data


def _key(k, where):
    """One key, checked."""
    data = _keys(k, where)
    if data.shape != (2,):
        raise user_error(TypeError, where, f"expects a single key, got an array of {data.shape[0]} keys (shape "
                         f"{data.shape}); split it or index it (keys[0]), or map over them")
    return data


def _generator(k, purpose, where, counter=0):
    data = _key(k, where)
    word = (int(data[0]) << 32) | int(data[1])
    return np.random.Generator(np.random.Philox(key=np.array([word, purpose], dtype=np.uint64),
                                                counter=np.array([counter & _MASK64, 0, 0, 0], dtype=np.uint64)))


def split(key, num=2):
    """`num` new keys (shape (num, 2)), independent of each other and of `key`.

    >>> keys = split(PRNGKey(0), 3)
    >>> keys.shape, keys.dtype
    ((3, 2), dtype('uint32'))
    """
    num = _count(num, "split", "num")
    return _generator(key, _SPLIT, "split").integers(0, 2 ** 32, size=(num, 2), dtype=np.uint32)


def fold_in(key, data):
    """A new key from `key` and an integer `data` (a step number, a worker's index): the same pair gives the
    same key, different data independent ones."""
    if isinstance(data, (bool, np.bool_)) or not isinstance(data, (int, np.integer)):
        raise user_error(TypeError, "fold_in", f"data must be an integer, got {type(data).__name__}")
    return _generator(key, _FOLD, "fold_in", counter=int(data)).integers(0, 2 ** 32, size=2, dtype=np.uint32)


def _count(n, where, name):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise user_error(TypeError, where, f"{name} must be an integer >= 0, got {n!r}")
    return int(n)


def _shape(shape, where):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(_count(n, where, "a size") for n in shape)
    except TypeError:
        raise user_error(TypeError, where, f"shape must be a tuple of sizes, got {shape!r}") from None
    return shape


def _float(dtype, where):
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype.kind != "f":
        raise user_error(TypeError, where, f"dtype must be a floating-point dtype, got {dtype}")
    return dtype


def _values(x):
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def normal(key, shape=(), dtype=None):
    """Standard normal values of `shape` (float64 unless `dtype` says otherwise)."""
    dtype = _float(dtype, "normal")
    draw = _generator(key, _SAMPLE, "normal").standard_normal(_shape(shape, "normal"))
    return draw.astype(dtype)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform values in [minval, maxval) of `shape`."""
    dtype = _float(dtype, "uniform")
    draw = _generator(key, _SAMPLE, "uniform").random(_shape(shape, "uniform"))
    low, high = _values(minval), _values(maxval)
    return (low + draw * (high - low)).astype(dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal values truncated to [lower, upper] (by the inverse CDF, as JAX computes them)."""
    dtype = _float(dtype, "truncated_normal")
    lower, upper = _values(lower), _values(upper)
    shape = np.broadcast_shapes(lower.shape, upper.shape) if shape is None else _shape(shape, "truncated_normal")
    u = _generator(key, _SAMPLE, "truncated_normal").random(shape)
    erf = np.vectorize(math.erf)
    a, b = erf(lower / math.sqrt(2)), erf(upper / math.sqrt(2))
    out = math.sqrt(2) * _erfinv(a + u * (b - a))
    return np.clip(out, lower, upper).astype(dtype)


def _erfinv(y):
    """The inverse error function (a Newton refinement of Giles' approximation; NumPy has none)."""
    y = np.clip(np.asarray(y, np.float64), -1 + 1e-16, 1 - 1e-16)
    w = -np.log((1.0 - y) * (1.0 + y))
    x = np.where(w < 5, y * (1.5 + 0.25 * (w - 2.5)), y * (3.0 + 0.3 * (np.sqrt(w) - 3.0)))
    erf = np.vectorize(math.erf)
    for _ in range(60):
        step = (erf(x) - y) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
        x = x - step
        if np.all(np.abs(step) < 1e-15 * np.maximum(1.0, np.abs(x))):
            break
    return x


def bernoulli(key, p=0.5, shape=None):
    """Booleans, True with probability `p` (broadcast to `shape`; p's shape when not given)."""
    p = _values(p)
    shape = p.shape if shape is None else _shape(shape, "bernoulli")
    return _generator(key, _SAMPLE, "bernoulli").random(shape) < p


def gumbel(key, shape=(), dtype=None):
    """Standard Gumbel values of `shape`."""
    dtype = _float(dtype, "gumbel")
    u = _generator(key, _SAMPLE, "gumbel").random(_shape(shape, "gumbel"))
    return (-np.log(-np.log1p(-u))).astype(dtype)


def exponential(key, shape=(), dtype=None):
    """Standard exponential values of `shape`."""
    dtype = _float(dtype, "exponential")
    return _generator(key, _SAMPLE, "exponential").standard_exponential(_shape(shape, "exponential")).astype(dtype)


def categorical(key, logits, axis=-1, shape=None):
    """Class indices drawn with probabilities softmax(logits) along `axis` (the Gumbel-max trick, as JAX);
    `shape` (the batch shape, default: logits' without `axis`) may add leading axes."""
    logits = _values(logits)
    if logits.ndim == 0:
        raise user_error(ValueError, "categorical", "logits must have at least one axis (the classes)")
    axis = axis % logits.ndim
    logits = np.moveaxis(logits, axis, -1)
    batch = logits.shape[:-1]
    shape = batch if shape is None else _shape(shape, "categorical")
    try:
        np.broadcast_shapes(shape, batch)
    except ValueError:
        raise user_error(ValueError, "categorical", f"shape {shape} is not compatible with the logits' batch shape "
                         f"{batch}") from None
    noise = -np.log(-np.log1p(-_generator(key, _SAMPLE, "categorical").random(shape + logits.shape[-1:])))
    return np.argmax(logits + noise, axis=-1)


def randint(key, shape, minval, maxval, dtype=np.int64):
    """Integers in [minval, maxval) of `shape`."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise user_error(TypeError, "randint", f"dtype must be an integer dtype, got {dtype}")
    low, high = _values(minval), _values(maxval)
    if np.any(low >= high):
        raise user_error(ValueError, "randint", f"minval ({minval}) must be less than maxval ({maxval})")
    return _generator(key, _SAMPLE, "randint").integers(low, high, size=_shape(shape, "randint")).astype(dtype)


def permutation(key, x, axis=0, independent=False):
    """A shuffled `arange(x)` for an integer x, else x's entries shuffled along `axis` (each slice on its own
    with `independent=True`)."""
    gen = _generator(key, _SAMPLE, "permutation")
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return gen.permutation(int(x))
    x = _values(x)
    if x.ndim == 0:
        raise user_error(TypeError, "permutation", "x must be an integer or an array of at least one axis")
    if independent:
        return gen.permuted(x, axis=axis)
    return np.take(x, gen.permutation(x.shape[axis]), axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Entries of `a` (or of arange(a) for an integer) along `axis`, `shape` of them, with probabilities `p`
    (uniform by default), with or without replacement."""
    gen = _generator(key, _SAMPLE, "choice")
    shape = _shape(shape, "choice")
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        return gen.choice(int(a), size=shape, replace=replace, p=None if p is None else _values(p))
    a = _values(a)
    picks = gen.choice(a.shape[axis], size=shape, replace=replace, p=None if p is None else _values(p))
    return np.take(a, picks, axis=axis)


_HINTS = {
    "threefry2x32": "dagrad's keys drive NumPy's Philox generator (the numbers differ from JAX's)",
    "wrap_key_data": "a key here is its uint32 data: use the array itself",
}


def __getattr__(name):
    raise missing_name(__name__, name, "JAX's jax.random.{}", _HINTS, "JAX")
