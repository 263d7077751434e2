"""`dagrad.numpy.random`: NumPy's own `numpy.random`, at the path `import dagrad.numpy.random as npr`
expects. Random draws are data, not functions of differentiable inputs, so they are plain NumPy
arrays (as HIPS autograd's `autograd.numpy.random`).

>>> import dagrad.numpy.random as npr
>>> npr.seed(0); npr.randn(2).shape
(2,)
"""

import numpy.random as _random
from numpy.random import *  # noqa: F403


def __getattr__(name):
    return getattr(_random, name)


def __dir__():
    return dir(_random)
