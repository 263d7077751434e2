"""`DataLoader` and its default collation, as `torch.utils.data`'s (in the main process: `num_workers=0`).

A batch of a `TensorDataset` (or a `Subset` of one) with the default collation is cut out of each array by one
fancy index (a Dask array's rows computed together, reading only the chunks that hold them), rather than fetched
example by example and stacked: the same arrays as PyTorch's per-example route gives, for a few microseconds a
batch. Any other dataset goes through PyTorch's protocol: `dataset.__getitems__(indices)` when it has one, else
`dataset[i]` for each index, then `collate_fn` of the list of examples.
"""

from __future__ import annotations

import collections.abc

import numpy as np

from ..._core.backends import compute_together, is_dask
from ..._core.errors import user_error
from ..._core.tensor import Tensor
from ...ops.shape import stack
from .sampler import BatchSampler, RandomSampler, SequentialSampler, checked_generator

__all__ = ["DataLoader", "default_collate", "default_convert"]

_COLLATE_TYPES = "Tensors, NumPy arrays, numbers, dicts or lists"


def _stacked(batch, what):
    """np.stack of arrays of one shape, else PyTorch's error naming the first two shapes that differ."""
    shapes = [np.shape(b) for b in batch]
    for k, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise user_error(RuntimeError, "default_collate", f"stack expects each {what} to be equal size, but got "
                             f"{shapes[0]} at entry 0 and {shape} at entry {k}")
    return np.stack(batch)


def default_collate(batch):
    """A list of examples as one batch, as `torch.utils.data.default_collate`: Tensors stacked into a Tensor,
    NumPy arrays stacked into an array, numbers into an array (floats as float64, ints as int64, bools as bool),
    strings kept as a list, and dicts, tuples (as lists, PyTorch's choice), lists and named tuples collated field by
    field. Dask arrays are computed together and stacked.

    >>> import numpy as np
    >>> batch = default_collate([(np.zeros(2), 1), (np.ones(2), 0)])
    >>> batch
    [array([[0., 0.],
           [1., 1.]]), array([1, 0])]
    >>> default_collate([{"x": 1.5, "name": "a"}, {"x": 2.5, "name": "b"}])
    {'x': array([1.5, 2.5]), 'name': ['a', 'b']}
    """
    if not isinstance(batch, collections.abc.Sequence) or not len(batch):
        got = f"{type(batch).__name__}{' of length 0' if isinstance(batch, collections.abc.Sized) else ''}"
        raise user_error(TypeError, "default_collate", f"expected a non-empty list of examples, got {got}")
    elem = batch[0]
    if isinstance(elem, Tensor):
        if any(t.requires_grad for t in batch):
            return stack(list(batch))  # differentiable
        return Tensor(_stacked([t._value for t in batch], "tensor"))
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "SUO":
            raise user_error(TypeError, "default_collate", f"batch must contain {_COLLATE_TYPES}; found an array of "
                             f"dtype {elem.dtype}")
        return _stacked(batch, "array")
    if is_dask(elem):
        return _stacked(compute_together(list(batch)), "array")
    if isinstance(elem, np.generic):
        return np.array(batch)
    if isinstance(elem, bool):
        return np.array(batch, dtype=bool)
    if isinstance(elem, float):
        return np.array(batch, dtype=np.float64)
    if isinstance(elem, int):
        return np.array(batch, dtype=np.int64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:  # a mapping type that cannot be made from a dict
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return type(elem)(*(default_collate(list(fields)) for fields in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise user_error(RuntimeError, "default_collate", "each element in list of batch should be of equal size")
        columns = [default_collate(list(fields)) for fields in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        try:
            return type(elem)(columns)
        except TypeError:
            return columns
    raise user_error(TypeError, "default_collate", f"batch must contain {_COLLATE_TYPES}; found "
                     f"{type(elem).__name__}")


def default_convert(data):
    """What a DataLoader without automatic batching (`batch_size=None`) does to each example: nothing but
    computing Dask arrays (PyTorch's turns NumPy arrays into tensors; dagrad computes with arrays as they are).

    >>> default_convert((1, 2.0))
    (1, 2.0)
    """
    if is_dask(data):
        return compute_together([data])[0]
    return data


class DataLoader:
    """Batches of a dataset, as `torch.utils.data.DataLoader` with `num_workers=0`: `batch_size` examples at a
    time (None: one example at a time, not collated), in order or shuffled (`shuffle=True`, a new order at each
    pass, drawn from `generator`, an `np.random.Generator` or a seed, by default dagrad's, which `dg.manual_seed`
    reseeds), or as a `sampler` or `batch_sampler` gives them; the last short batch dropped with `drop_last`;
    collated by `collate_fn` (by default `default_collate`). `len(loader)` is the number of batches.

    >>> import numpy as np
    >>> from dagrad.utils.data import TensorDataset
    >>> data = TensorDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
    >>> for x, y in DataLoader(data, batch_size=2):
    ...     print(x.shape, y)
    (2, 2) [0 1]
    (2, 2) [2 3]
    (1, 2) [4]
    >>> len(DataLoader(data, batch_size=2, drop_last=True, shuffle=True, generator=np.random.default_rng(0)))
    2
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        where = "DataLoader"
        if not hasattr(dataset, "__getitem__"):
            raise user_error(TypeError, where, f"dataset must be a map-style dataset (with __getitem__), got "
                             f"{type(dataset).__name__}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer)) or num_workers < 0:
            raise user_error(ValueError, where, f"num_workers option should be non-negative, got {num_workers!r}")
        if num_workers:
            raise user_error(NotImplementedError, where, f"num_workers={num_workers}: dagrad loads batches in the "
                             f"main process only (num_workers=0)")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise user_error(ValueError, where, f"timeout option should be non-negative, got {timeout!r}")
        # as PyTorch: these need worker processes (worker_init_fn, pin_memory and in_order are then unused)
        for name, value in (("prefetch_factor", prefetch_factor), ("multiprocessing_context", multiprocessing_context),
                            ("persistent_workers", persistent_workers or None)):
            if value is not None:
                raise user_error(ValueError, where, f"{name}={value!r} needs worker processes (num_workers > 0), "
                                 f"which dagrad does not start")
        if not isinstance(drop_last, bool):
            raise user_error(ValueError, where, f"drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.generator = checked_generator(generator, where)
        if sampler is not None and shuffle:
            raise user_error(ValueError, where, "sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise user_error(ValueError, where, "batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
        elif batch_size is None and drop_last:
            raise user_error(ValueError, where, "batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=self.generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
                raise user_error(ValueError, where, f"batch_size should be a positive integer value (or None), but "
                                 f"got batch_size={batch_size!r}")
            batch_sampler = BatchSampler(sampler, int(batch_size), drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.pin_memory, self.timeout = 0, pin_memory, timeout
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)

    def __len__(self):
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __iter__(self):
        dataset, collate = self.dataset, self.collate_fn
        if self.batch_sampler is None:  # no automatic batching: one example at a time
            for index in self.sampler:
                yield collate(dataset[index])
            return
        batches = (self.batch_sampler._batches() if isinstance(self.batch_sampler, BatchSampler)
                   else iter(self.batch_sampler))
        collated = getattr(dataset, "_collated", None) if collate is default_collate else None
        getitems = getattr(dataset, "__getitems__", None)
        for indices in batches:
            if collated is not None:
                batch = collated(indices)
                if batch is not None:
                    yield batch
                    continue
            if isinstance(indices, np.ndarray):
                indices = indices.tolist()
            data = getitems(indices) if callable(getitems) else [dataset[i] for i in indices]
            yield collate(data)
