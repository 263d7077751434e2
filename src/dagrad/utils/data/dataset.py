"""Datasets, as `torch.utils.data`'s: `Dataset`, `TensorDataset`, `Subset`, `ConcatDataset`, `random_split`.

A `TensorDataset` holds arrays with one row per example: NumPy arrays, Tensors, or Dask arrays (read lazily: a
batch indexes each Dask array and computes the rows it needs, in one `dask.compute` for all of them). Besides
PyTorch's per-example `dataset[i]` and its batch protocol `dataset.__getitems__(indices)` (a list of examples), it
serves a whole batch already collated, one fancy index per array (`_collated`), which `DataLoader` takes with the
default collation: a batch costs a few microseconds whatever its size.
"""

from __future__ import annotations

import bisect
import math
import operator
import warnings
from itertools import accumulate

import numpy as np

from ..._core.backends import compute_together, is_dask
from ..._core.errors import user_error
from ..._core.random import default_generator
from ..._core.tensor import Tensor
from .sampler import checked_generator

__all__ = ["Dataset", "TensorDataset", "Subset", "ConcatDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclass it and define `__getitem__(index)` (one example) and `__len__`. `a + b` is
    their `ConcatDataset`.

    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, i):
    ...         return i, i * i
    >>> Squares()[3], len(Squares() + Squares())
    ((3, 9), 8)
    """

    def __getitem__(self, index):
        raise user_error(NotImplementedError, type(self).__name__, "a Dataset subclass defines __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


def _rows(array):
    """The number of rows of a dataset's array (a Dask array's must be known)."""
    n = array.shape[0]
    if isinstance(n, float) and math.isnan(n):
        raise user_error(ValueError, "TensorDataset", "a Dask array's number of rows is unknown (its chunk sizes are "
                         "unknown); call .compute_chunk_sizes() on it first", array)
    return int(n)


def _column(array, k):
    """A TensorDataset's array as it keeps it: a NumPy, Dask or Tensor value, anything else through np.asarray."""
    if isinstance(array, (np.ndarray, Tensor)) or is_dask(array):
        value = array
    else:
        try:
            value = np.asarray(array)
        except Exception as err:
            raise user_error(TypeError, "TensorDataset", f"argument {k} is a {type(array).__name__}, not an array: "
                             f"{err}") from None
    if not tuple(value.shape):
        raise user_error(ValueError, "TensorDataset", f"argument {k} is 0-d: each array needs one row per example",
                         value)
    return value


def _take(array, index):
    """Rows `index` (an int or an integer array) of a NumPy array, a Tensor (a Tensor that requires grad through the
    differentiable indexing, others by their values) or a Dask array (lazy)."""
    if isinstance(array, Tensor):
        if array.requires_grad:
            return array[index]
        return Tensor(array._value[index])
    return array[index]


class TensorDataset(Dataset):
    """Examples as rows of arrays of the same length (NumPy arrays, Tensors, Dask arrays), as
    `torch.utils.data.TensorDataset`: `dataset[i]` is the tuple of each array's row i.

    >>> import numpy as np
    >>> data = TensorDataset(np.arange(6.0).reshape(3, 2), np.array([0, 1, 0]))
    >>> len(data), data[1]
    (3, (array([2., 3.]), np.int64(1)))
    """

    def __init__(self, *tensors):
        if not tensors:
            raise user_error(ValueError, "TensorDataset", "needs at least one array")
        arrays = [_column(t, k) for k, t in enumerate(tensors)]
        lengths = [_rows(a) for a in arrays]
        if len(set(lengths)) != 1:
            sizes = ", ".join(f"argument {k}: {n} rows (shape {tuple(a.shape)})"
                              for k, (n, a) in enumerate(zip(lengths, arrays)))
            raise user_error(ValueError, "TensorDataset", f"the arrays must have the same number of rows (examples), "
                             f"got {sizes}", *arrays)
        self.tensors = tuple(arrays)
        self._length = lengths[0]
        self._lazy = any(is_dask(a) for a in arrays)

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        rows = [_take(a, index) for a in self.tensors]
        return tuple(compute_together(rows) if self._lazy else rows)

    def _collated(self, indices):
        """The batch of examples `indices` as the default collation gives it: a list with each array's rows."""
        index = np.asarray(indices, dtype=np.intp)
        rows = [_take(a, index) for a in self.tensors]
        return compute_together(rows) if self._lazy else rows

    def __getitems__(self, indices):
        """PyTorch's batch protocol: the list of examples `indices`, each array indexed once."""
        return list(zip(*self._collated(indices)))


class Subset(Dataset):
    """The examples of `dataset` at `indices`, in that order, as `torch.utils.data.Subset`.

    >>> import numpy as np
    >>> part = Subset(TensorDataset(np.arange(5)), [4, 0])
    >>> len(part), part[0]
    (2, (np.int64(4),))
    """

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    @property
    def indices(self):
        return self._indices

    @indices.setter
    def indices(self, indices):
        self._indices, self._array = indices, None

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        inner = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(inner)
        return [self.dataset[i] for i in inner]

    def _collated(self, indices):
        """The dataset's own collated batch of these examples, or None where it has none."""
        collated = getattr(self.dataset, "_collated", None)
        if collated is None:
            return None
        if self._array is None:  # made once: a batch then costs the batch, not the subset
            self._array = np.asarray(self._indices, dtype=np.intp)
        return collated(self._array[np.asarray(indices, dtype=np.intp)])

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after the other, as `torch.utils.data.ConcatDataset`.

    >>> import numpy as np
    >>> both = ConcatDataset([TensorDataset(np.arange(2)), TensorDataset(np.arange(10, 13))])
    >>> len(both), both[3]
    (5, (np.int64(11),))
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise user_error(ValueError, "ConcatDataset", "datasets should not be an empty iterable")
        self.cumulative_sizes = list(accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index = operator.index(index)
        if index < 0:
            if -index > len(self):
                raise user_error(IndexError, "ConcatDataset", f"index {index} is out of range for {len(self)} examples")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise user_error(IndexError, "ConcatDataset", f"index {index} is out of range for {len(self)} examples")
        return self.datasets[which][index - (self.cumulative_sizes[which - 1] if which else 0)]


def _split_lengths(lengths, n):
    """PyTorch's: integer lengths as they are; fractions summing to 1 as floor(f n), the remainder given one by one
    to the first splits (with its warning for a split left empty)."""
    lengths = list(lengths)
    if all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in lengths):
        return [int(k) for k in lengths]
    if not all(isinstance(f, (int, float, np.integer, np.floating)) and 0 <= f <= 1 for f in lengths) or \
            not math.isclose(sum(lengths), 1) or sum(lengths) > 1:
        raise user_error(ValueError, "random_split", f"lengths must be integers, or fractions in [0, 1] that sum to "
                         f"1, got {lengths}")
    sizes = [int(math.floor(n * f)) for f in lengths]
    for i in range(n - sum(sizes)):
        sizes[i % len(sizes)] += 1
    for i, size in enumerate(sizes):
        if size == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.", UserWarning,
                          stacklevel=3)
    return sizes


def random_split(dataset, lengths, generator=None):
    """`dataset` split at random into `Subset`s of the given lengths (integers summing to its length, or fractions
    summing to 1), as `torch.utils.data.random_split`; `generator` is an `np.random.Generator` (or a seed), by
    default dagrad's (`dg.manual_seed`).

    >>> import numpy as np
    >>> train, test = random_split(TensorDataset(np.arange(10)), [0.8, 0.2], generator=np.random.default_rng(0))
    >>> len(train), len(test), sorted(int(x[0]) for x in test)
    (8, 2, [1, 8])
    """
    n = len(dataset)
    sizes = _split_lengths(lengths, n)
    if any(k < 0 for k in sizes) or sum(sizes) != n:
        raise user_error(ValueError, "random_split", f"the lengths {sizes} must be non-negative and sum to the "
                         f"dataset's length, {n}")
    generator = checked_generator(generator, "random_split")
    order = (default_generator() if generator is None else generator).permutation(n).tolist()
    return [Subset(dataset, order[end - size:end]) for end, size in zip(accumulate(sizes), sizes)]

