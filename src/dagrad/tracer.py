"""HIPS autograd's `autograd.tracer` names: `primitive` (dagrad's `dg.primitive`), `isbox` and `getval`.

In dagrad a transform's traced value (autograd's "box") is a Tensor at a transform's level, or a static
graph's node (a Symbol) traced by `dg.compile`.

>>> import dagrad as dg
>>> dg.grad(lambda x: x * isbox(x))(3.0), isbox(3.0)
(np.float64(1.0), False)
"""

from __future__ import annotations

from ._core.tensor import Tensor, is_symbolic
from .custom import primitive

__all__ = ["primitive", "isbox", "getval"]


def isbox(x):
    """Whether `x` is traced: a value boxed by a transform (`dg.grad`, `dg.jvp`, ...) or a graph's node."""
    return isinstance(x, Tensor) and (x._level > 0 or is_symbolic(x))


def getval(x):
    """The values under every box of `x` as a NumPy array (`x` itself when it is not a Tensor)."""
    return x.numpy() if isinstance(x, Tensor) else x
