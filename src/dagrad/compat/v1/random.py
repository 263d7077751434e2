"""TensorFlow's `tf.random` names (TF 1.13 and later): `tf.random.normal` is `tf.random_normal`, ...

>>> import dagrad.compat.v1 as tf
>>> tf.random.normal is tf.random_normal
True
"""

from __future__ import annotations

from ..._core.errors import missing_name as missing
from ._ops import random_normal as normal
from ._ops import random_uniform as uniform
from ._ops import set_random_seed, truncated_normal

__all__ = ["normal", "uniform", "truncated_normal", "set_random_seed"]


def __getattr__(name):
    raise missing(__name__, name, "TensorFlow's tf.random.{}", {}, "TensorFlow 1")
