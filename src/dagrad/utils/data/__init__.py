"""`dagrad.utils.data`: datasets, samplers and `DataLoader`, as `torch.utils.data` (without worker processes).

>>> import numpy as np
>>> from dagrad.utils.data import DataLoader, TensorDataset, random_split
>>> rng = np.random.default_rng(0)
>>> data = TensorDataset(rng.standard_normal((100, 3)), rng.integers(0, 2, 100))
>>> train, test = random_split(data, [0.8, 0.2], generator=rng)
>>> loader = DataLoader(train, batch_size=32, shuffle=True, generator=rng)
>>> [(x.shape, y.shape) for x, y in loader][-1], len(loader)
(((16, 3), (16,)), 3)
"""

from __future__ import annotations

from .dataloader import DataLoader, default_collate, default_convert
from .dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = [
    "Dataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "DataLoader", "default_collate",
    "default_convert", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
]
