"""Other libraries' namespaces over dagrad: `dagrad.compat.v1` is TensorFlow 1's (`import dagrad.compat.v1 as
tf`). See docs/coming-from.md.

>>> from dagrad import compat
>>> tf = compat.v1
>>> tf.reduce_sum is compat.v1.reduce_sum
True
"""

from . import v1

__all__ = ["v1"]
