"""HIPS autograd's `autograd.builtins` names: `list`, `tuple`, `dict` and `isinstance`.

autograd boxes a container it differentiates through, so it needs its own container types and an
`isinstance` that looks inside boxes. dagrad's transforms see a container as a pytree of traced leaves,
so a plain list, tuple or dict is already differentiable: these constructors return the plain
containers, the classes match plain containers in `isinstance`, and `isinstance` sees a traced or
eager array (a Tensor) as the `np.ndarray` it stands for.

>>> import numpy as np
>>> import dagrad as dg
>>> dg.grad(lambda x: sum(list((x, 2 * x))))(1.0)
np.float64(3.0)
>>> isinstance([], list), isinstance(dg.tensor([1.0]), np.ndarray)
(True, True)
"""

from __future__ import annotations

import builtins as _builtins

import numpy as np

from ._core.tensor import Tensor

__all__ = ["list", "tuple", "dict", "isinstance"]


class _PlainType(type):
    """A class whose instances are the plain containers of `_plain`."""

    def __instancecheck__(cls, instance):
        return _builtins.isinstance(instance, cls._plain)

    def __subclasscheck__(cls, subclass):
        return _builtins.issubclass(subclass, cls._plain)


class list(_builtins.list, metaclass=_PlainType):  # noqa: A001
    """`list(xs)`: a plain list of `xs`, differentiable in every item."""

    _plain = _builtins.list

    def __new__(cls, xs=()):
        return _builtins.list(xs)


class tuple(_builtins.tuple, metaclass=_PlainType):  # noqa: A001
    """`tuple(xs)`: a plain tuple of `xs`, differentiable in every item."""

    _plain = _builtins.tuple

    def __new__(cls, xs=()):
        return _builtins.tuple(xs)


class dict(_builtins.dict, metaclass=_PlainType):  # noqa: A001
    """`dict(...)`: a plain dict, built as the builtin `dict` builds one, differentiable in every value."""

    _plain = _builtins.dict

    def __new__(cls, *args, **kwargs):
        return _builtins.dict(*args, **kwargs)


def isinstance(obj, classinfo):  # noqa: A001
    """The builtin `isinstance`, except that a Tensor (eager, traced or a graph node) is also an instance of
    `np.ndarray`, as autograd's boxes of arrays are."""
    if _builtins.isinstance(obj, classinfo):
        return True
    return _builtins.isinstance(obj, Tensor) and _builtins.issubclass(np.ndarray, classinfo)
