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

from . import functional, init, utils
from .attention import MultiheadAttention
from .layers import (
    ELU,
    GELU,
    BatchNorm1d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MaxPool2d,
    ModuleDict,
    ModuleList,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, Parameter, StateDictError
from .recurrent import GRU, LSTM, RNN
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "Module", "Parameter", "Linear", "Conv2d", "MaxPool2d", "Dropout", "LayerNorm", "BatchNorm1d", "Embedding",
    "Sequential", "ModuleList", "ModuleDict", "Identity", "ReLU", "Tanh", "Sigmoid", "GELU", "SiLU", "LeakyReLU",
    "ELU", "Softplus", "Softmax", "LogSoftmax", "Flatten", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "StateDictError", "RNN", "LSTM",
    "GRU", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "functional", "init", "utils",
]
