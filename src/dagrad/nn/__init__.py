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
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .layers import (
    ELU,
    GELU,
    Dropout,
    Dropout2d,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
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
from .norm import BatchNorm1d, BatchNorm2d, GroupNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool1d, MaxPool2d
from .recurrent import GRU, LSTM, RNN
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "Module", "Parameter", "Linear", "Conv2d", "MaxPool2d", "Dropout", "LayerNorm", "BatchNorm1d", "Embedding",
    "Sequential", "ModuleList", "ModuleDict", "Identity", "ReLU", "Tanh", "Sigmoid", "GELU", "SiLU", "LeakyReLU",
    "ELU", "Softplus", "Softmax", "LogSoftmax", "Flatten", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "StateDictError", "functional",
    "init", "utils", "Conv1d", "ConvTranspose2d", "BatchNorm2d", "GroupNorm", "AvgPool2d", "AdaptiveAvgPool2d",
    "MaxPool1d", "Dropout2d",
    "RNN", "LSTM", "GRU", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
]
