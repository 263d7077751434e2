"""`dg.nn.init`: in-place initialisers, as `torch.nn.init`.

Each fills a Tensor (or Parameter, or NumPy array) in place (for a Tensor, an in-place write that bumps its version
counter) and returns it. Random ones take an optional `generator` (an `np.random.Generator`), else draw from this
module's default generator, as the layers' initialisations and `Dropout` do; `manual_seed(n)` resets it. The
kaiming initialisers leave a tensor with no elements as it is, with PyTorch's warning (so `Linear(0, 3)` works).

>>> import dagrad as dg
>>> dg.nn.init.manual_seed(0)
>>> a = dg.nn.Linear(3, 2).weight.numpy()
>>> dg.nn.init.manual_seed(0)
>>> bool((a == dg.nn.Linear(3, 2).weight.numpy()).all())
True
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._core.errors import user_error
from .._core.random import as_generator as _generator
from .._core.random import default_generator, manual_seed
from .._core.tensor import Tensor, mark_written

__all__ = [
    "manual_seed", "default_generator", "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
]


def _array(t, where="dg.nn.init"):
    """The array to fill: an eager Tensor's own (a traced or static-graph value has none) or a writable NumPy array."""
    if isinstance(t, Tensor):
        if t._level or t._symbolic:
            raise user_error(TypeError, where, "expected an eager Tensor or a NumPy array to fill, got a value traced "
                             "by a transform or a static graph's node", t)
        arr = t._value
    elif isinstance(t, np.ndarray):
        arr = t
    else:
        raise user_error(TypeError, where, f"expected a Tensor or NumPy array to fill, got {type(t).__name__}")
    if type(arr) is np.ndarray and not arr.flags.writeable:
        raise user_error(ValueError, where, "the array to fill is read-only", arr)
    return arr


def _fill(t, values):
    arr = _array(t)
    arr[...] = values
    if isinstance(t, Tensor):
        mark_written(t)
    return t


def _empty(t):
    """Whether t has no elements (then a kaiming initialiser does nothing, with PyTorch's warning)."""
    if _array(t).size:
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
    return True


_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "sigmoid")  # gain 1
_GAINS = {**dict.fromkeys(_LINEAR, 1.0), "tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 3.0 / 4}


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity, as `torch.nn.init.calculate_gain`.

    >>> calculate_gain("tanh"), calculate_gain("relu") ** 2
    (1.6666666666666667, 2.0000000000000004)
    """
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if isinstance(nonlinearity, str) and nonlinearity in _GAINS:
        return _GAINS[nonlinearity]
    raise user_error(ValueError, "calculate_gain", f"unsupported nonlinearity {nonlinearity!r}")


def _fans(t):
    shape = _array(t).shape
    if len(shape) < 2:
        raise user_error(ValueError, "dg.nn.init", f"fan in and fan out need a tensor of 2 or more dimensions, got "
                         f"shape {shape}", t)
    receptive = int(np.prod(shape[2:], dtype=np.int64)) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def uniform_(t, a=0.0, b=1.0, generator=None):
    """Fills `t` with draws from U(a, b).

    >>> import numpy as np
    >>> uniform_(np.zeros(3), -1, 1, generator=np.random.default_rng(0)).round(3)
    array([ 0.274, -0.46 , -0.918])
    """
    return _fill(t, _generator(generator).uniform(a, b, _array(t).shape))


def normal_(t, mean=0.0, std=1.0, generator=None):
    """Fills `t` with draws from N(mean, std^2).

    >>> import numpy as np
    >>> normal_(np.zeros(2), generator=np.random.default_rng(0)).round(3)
    array([ 0.126, -0.132])
    """
    return _fill(t, _generator(generator).normal(mean, std, _array(t).shape))


def constant_(t, value):
    """Fills `t` with `value`.

    >>> import dagrad as dg
    >>> constant_(dg.tensor([1.0, 2.0]), 0.5)
    tensor([0.5, 0.5])
    """
    return _fill(t, value)


def zeros_(t):
    """Fills `t` with zeros.

    >>> import numpy as np
    >>> zeros_(np.ones(2))
    array([0., 0.])
    """
    return _fill(t, 0)


def ones_(t):
    """Fills `t` with ones.

    >>> import numpy as np
    >>> ones_(np.zeros(2))
    array([1., 1.])
    """
    return _fill(t, 1)


def xavier_uniform_(t, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot).

    >>> import numpy as np
    >>> w = xavier_uniform_(np.zeros((30, 20)), generator=np.random.default_rng(0))
    >>> bool(np.abs(w).max() <= np.sqrt(6 / 50))
    True
    """
    fan_in, fan_out = _fans(t)
    if not fan_in + fan_out:
        return t  # no elements to fill
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -a, a, generator)


def xavier_normal_(t, gain=1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot).

    >>> import numpy as np
    >>> w = xavier_normal_(np.zeros((300, 200)), generator=np.random.default_rng(0))
    >>> round(float(w.std() / np.sqrt(2 / 500)), 1)
    1.0
    """
    fan_in, fan_out = _fans(t)
    if not fan_in + fan_out:
        return t  # no elements to fill
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(t, a, mode, nonlinearity):
    fan_in, fan_out = _fans(t)
    if mode not in ("fan_in", "fan_out"):
        raise user_error(ValueError, "kaiming", f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0  # no fan: no elements to fill


def kaiming_uniform_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He). `a=sqrt(5)` gives PyTorch's Linear/Conv default,
    b = 1/sqrt(fan_in).

    >>> import numpy as np
    >>> w = kaiming_uniform_(np.zeros((10, 4)), a=np.sqrt(5), generator=np.random.default_rng(0))
    >>> bool(np.abs(w).max() <= 0.5)
    True
    """
    bound = math.sqrt(3.0) * _kaiming_std(t, a, mode, nonlinearity)
    return t if _empty(t) else uniform_(t, -bound, bound, generator)


def kaiming_normal_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2) with std = gain / sqrt(fan) (He).

    >>> import numpy as np
    >>> w = kaiming_normal_(np.zeros((400, 300)), nonlinearity="relu", generator=np.random.default_rng(0))
    >>> round(float(w.std() * np.sqrt(300 / 2)), 1)
    1.0
    """
    std = _kaiming_std(t, a, mode, nonlinearity)
    return t if _empty(t) else normal_(t, 0.0, std, generator)
