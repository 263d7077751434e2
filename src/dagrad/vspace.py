"""HIPS autograd's vector spaces (`autograd.core.vspace`): the space a value lives in, with its zero, its
basis, random draws, and the linear operations, for arrays, numbers and nested lists, tuples and dicts.

dagrad's transforms do not need them (pytrees are flattened to leaves instead); they serve code written
for autograd, such as its `check_grads`. The operations are written with dagrad's functions, so they are
differentiable (`dg.grad(vs.inner_prod)` works), and random draws come from NumPy's global generator, as
autograd's do (`np.random.seed` repeats them).

>>> import numpy as np
>>> vs = vspace({"w": np.zeros((2, 2)), "b": 0.0})
>>> vs.size, vs == vspace({"w": np.ones((2, 2)), "b": 1.0})
(5, True)
>>> vs.inner_prod(vs.ones(), vs.ones())
np.float64(5.0)
"""

from __future__ import annotations

import numpy as np

from ._core.backends import is_dask
from ._core.errors import user_error
from ._core.shapes import dtype_of, shape_of
from ._core.tensor import Tensor
from .ops.elementwise import multiply
from .ops.linalg import dot
from .ops.shape import ravel

__all__ = ["VSpace", "ArrayVSpace", "ComplexArrayVSpace", "ListVSpace", "TupleVSpace", "DictVSpace", "vspace"]


class VSpace:
    """A vector space; `vspace(value)` makes the right one. Two are equal when they hold the same values."""

    iscomplex = False

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self), repr(self._key())))

    def __repr__(self):
        return f"{type(self).__name__}({self._key()!r})"


class ArrayVSpace(VSpace):
    """Real arrays (and real numbers) of one shape and dtype."""

    def __init__(self, value):
        self.shape, self.dtype = tuple(shape_of(value)), np.dtype(dtype_of(value))

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self):
        return len(self.shape)

    def zeros(self):
        return np.zeros(self.shape, self.dtype)

    def ones(self):
        return np.ones(self.shape, self.dtype)

    def standard_basis(self):
        for index in np.ndindex(*self.shape):
            vector = self.zeros()
            vector[index] = 1
            yield vector

    def randn(self):
        return np.asarray(np.random.randn(*self.shape)).astype(self.dtype)

    def _key(self):
        return self.shape, self.dtype

    def add(self, x, y):
        return x + y

    def scalar_mul(self, x, a):
        return multiply(x, a)

    def inner_prod(self, x, y):
        return dot(ravel(x), ravel(y))

    def covector(self, x):
        """The covector of `x` (its complex conjugate; `x` itself for a real space)."""
        return x


class ComplexArrayVSpace(ArrayVSpace):
    """Complex arrays: twice the real size; the inner product is Re <x, y> = Re sum(conj(x) y)."""

    iscomplex = True

    @property
    def size(self):
        return 2 * super().size

    def ones(self):
        return np.ones(self.shape, self.dtype) * (1 + 1j)

    def standard_basis(self):
        for index in np.ndindex(*self.shape):
            for unit in (1.0, 1.0j):
                vector = self.zeros()
                vector[index] = unit
                yield vector

    def randn(self):
        draw = np.random.randn(*self.shape) + 1j * np.random.randn(*self.shape)
        return np.asarray(draw).astype(self.dtype)

    # NumPy's functions, so a traced value reaches dagrad's complex ops through __array_function__
    def inner_prod(self, x, y):
        return np.real(np.dot(np.conj(np.ravel(x)), np.ravel(y)))

    def covector(self, x):
        return np.conj(x)


class _ContainerVSpace(VSpace):
    """A list, tuple or dict: the direct sum of its items' spaces."""

    def __init__(self, value):
        self.spaces = self._map_items(vspace, value)

    @property
    def size(self):
        return sum(vs.size for vs in self._values(self.spaces))

    def zeros(self):
        return self._map(lambda vs: vs.zeros())

    def ones(self):
        return self._map(lambda vs: vs.ones())

    def randn(self):
        return self._map(lambda vs: vs.randn())

    def standard_basis(self):
        for key, space in self._items(self.spaces):
            for vector in space.standard_basis():
                basis = self._map_items(lambda vs: vs.zeros(), self.spaces)
                basis[key] = vector
                yield self._finish(basis)

    def _key(self):
        return self.spaces

    def _map(self, f, *values):
        """`f(space, *items)` for each item's space and the items of `values` at it, as a container."""
        return self._finish(self._map_items(f, self.spaces, *values))

    def add(self, x, y):
        return self._map(lambda vs, a, b: vs.add(a, b), x, y)

    def scalar_mul(self, x, a):
        return self._map(lambda vs, v: vs.scalar_mul(v, a), x)

    def inner_prod(self, x, y):
        return sum(self._values(self._map(lambda vs, a, b: vs.inner_prod(a, b), x, y)))

    def covector(self, x):
        return self._map(lambda vs, v: vs.covector(v), x)


class ListVSpace(_ContainerVSpace):
    def _items(self, x):
        return enumerate(x)

    def _values(self, x):
        return list(x)

    def _map_items(self, f, first, *rest):
        return [f(*items) for items in zip(first, *rest)]

    def _finish(self, items):
        return list(items)


class TupleVSpace(ListVSpace):
    def _key(self):
        return tuple(self.spaces)

    def _finish(self, items):
        return tuple(items)


class DictVSpace(_ContainerVSpace):
    def _items(self, x):
        return x.items()

    def _values(self, x):
        return list(x.values())

    def _map_items(self, f, first, *rest):
        return {key: f(value, *[other[key] for other in rest]) for key, value in first.items()}

    def _finish(self, items):
        return dict(items)


def vspace(value):
    """The vector space of `value`: an array or number (real or complex; a Tensor or a traced value by its
    shape and dtype), or a list, tuple or dict of such values. Other types raise TypeError, as in autograd.

    >>> import numpy as np
    >>> vspace(np.zeros((3, 2)))
    ArrayVSpace(((3, 2), dtype('float64')))
    >>> vspace([1.0, np.zeros(2)]).size
    3
    """
    if isinstance(value, (list, tuple, dict)):
        return (DictVSpace if isinstance(value, dict) else TupleVSpace if isinstance(value, tuple)
                else ListVSpace)(value)
    kind = np.dtype(dtype_of(value)).kind if isinstance(value, (Tensor, np.ndarray)) or is_dask(value) else None
    if kind == "c" or isinstance(value, (complex, np.complexfloating)):
        return ComplexArrayVSpace(value)
    if kind in ("b", "i", "u", "f") or isinstance(value, (float, np.floating)):  # as autograd: arrays of any dtype
        return ArrayVSpace(value)
    raise user_error(TypeError, "vspace", f"no vector space for a value of type {type(value).__name__}"
                     f"{' and dtype ' + str(dtype_of(value)) if hasattr(value, 'dtype') else ''}: arrays, "
                     "floating-point and complex numbers, and lists, tuples and dicts of them have one")
