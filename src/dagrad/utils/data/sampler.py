"""Samplers, as `torch.utils.data`'s: the order in which a `DataLoader` visits a dataset's examples, and how it
groups them into batches. Random ones draw from an `np.random.Generator` (by default dagrad's, which
`dg.manual_seed` reseeds): a new permutation at each pass over the data.

A sampler that knows its whole pass at once (`_order()`, an index array) lets `BatchSampler` cut batches out of it
as slices, instead of collecting indices one by one as PyTorch's does; iterating a sampler still yields Python ints
and a `BatchSampler` lists of them, as PyTorch's.
"""

from __future__ import annotations

import numpy as np

from ..._core.errors import user_error
from ..._core.random import default_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler"]


class Sampler:
    """Base class: `__iter__` yields indices (or, for a batch sampler, lists of them); `__len__` counts them."""

    def __iter__(self):
        raise user_error(NotImplementedError, type(self).__name__, "a Sampler subclass defines __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1.

    >>> list(SequentialSampler(range(3)))
    [0, 1, 2]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def _order(self):
        return np.arange(len(self.data_source))

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def checked_generator(generator, where):
    """`generator` as a sampler keeps it: an `np.random.Generator`, a seed (a new generator, made once) or None
    (dagrad's default generator, looked up at each pass, so that `dg.manual_seed` before a loop sets its order)."""
    if isinstance(generator, (bool, np.bool_)) or not (
            generator is None or isinstance(generator, (np.random.Generator, int, np.integer))):
        raise user_error(TypeError, where, f"generator must be a numpy.random.Generator, a seed or None, got "
                         f"{type(generator).__name__}")
    return np.random.default_rng(generator) if isinstance(generator, (int, np.integer)) else generator


def _count(value, name, where, positive=True):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < int(positive):
        raise user_error(ValueError, where, f"{name} should be a {'positive' if positive else 'non-negative'} "
                         f"integer value, but got {name}={value!r}")
    return int(value)


class RandomSampler(Sampler):
    """The examples in a random order (a permutation drawn anew at each pass), or `num_samples` drawn with
    replacement, as `torch.utils.data.RandomSampler`; `generator` is an `np.random.Generator` (by default dagrad's).

    >>> import numpy as np
    >>> sorted(RandomSampler(range(5), generator=np.random.default_rng(0)))
    [0, 1, 2, 3, 4]
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise user_error(TypeError, "RandomSampler", f"replacement should be a boolean value, but got "
                             f"replacement={replacement!r}")
        self.data_source, self.replacement = data_source, replacement
        self.generator = checked_generator(generator, "RandomSampler")
        self._num_samples = None if num_samples is None else _count(num_samples, "num_samples", "RandomSampler")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _order(self):
        generator = self.generator if self.generator is not None else default_generator()
        n = len(self.data_source)
        if self.replacement:
            return generator.integers(0, n, self.num_samples)
        whole, rest = divmod(self.num_samples, n) if n else (0, 0)
        order = [generator.permutation(n) for _ in range(whole)]
        if rest:
            order.append(generator.permutation(n)[:rest])
        return np.concatenate(order) if order else np.zeros(0, np.intp)

    def __iter__(self):
        return iter(self._order().tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler` (the last one shorter, or dropped with `drop_last`), as
    `torch.utils.data.BatchSampler`.

    >>> list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        self.batch_size = _count(batch_size, "batch_size", "BatchSampler")
        if not isinstance(drop_last, bool):
            raise user_error(ValueError, "BatchSampler", f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler, self.drop_last = sampler, drop_last

    def _batches(self):
        """The batches as index arrays: slices of the sampler's whole order when it has one."""
        order = getattr(self.sampler, "_order", None)
        size = self.batch_size
        if order is not None:
            order = order()
            end = len(order) - len(order) % size if self.drop_last else len(order)
            for start in range(0, end, size):
                yield order[start:start + size]
            return
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __iter__(self):
        for batch in self._batches():
            yield batch.tolist() if isinstance(batch, np.ndarray) else batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
