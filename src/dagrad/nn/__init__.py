"""dg.nn: modules, layers, losses and initialisers, in the style of `torch.nn`.

>>> import dagrad as dg, numpy as np
>>> dg.nn.init.manual_seed(0)
>>> model = dg.nn.Sequential(dg.nn.Linear(4, 8), dg.nn.Tanh(), dg.nn.Linear(8, 3))
>>> x, y = np.random.default_rng(0).standard_normal((5, 4)), np.array([0, 1, 2, 1, 0])
>>> loss = dg.nn.functional.cross_entropy(model(dg.tensor(x)), y)
>>> loss.backward()
>>> for p in model.parameters():          # plain SGD by hand
...     p.value[...] -= 0.1 * p.grad.numpy()
>>> model.zero_grad()
"""

from __future__ import annotations

from . import functional, init
from .layers import (
    BatchNorm1d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    Linear,
    MaxPool2d,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from .module import Module, Parameter, StateDictError

__all__ = [
    "Module", "Parameter", "Linear", "Conv2d", "MaxPool2d", "Dropout", "LayerNorm", "BatchNorm1d", "Embedding",
    "Sequential", "ReLU", "Tanh", "Sigmoid", "Flatten", "StateDictError", "functional", "init",
]
