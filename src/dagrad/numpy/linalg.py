"""`dagrad.numpy.linalg`: the same functions as `dagrad.linalg`, at the path `numpy.linalg` has
(so `import dagrad.numpy.linalg as la` stands in for `import numpy.linalg as la`).

Beside NumPy's names it has two helpers of HIPS autograd's `autograd.numpy.linalg` that code
written for autograd calls: `T(x)`, the transpose of the last two axes, and `_dot(a, b)`, the
batched matrix product.

>>> import numpy as np
>>> _dot(T(np.array([[1.0, 2.0]])), np.array([[3.0, 4.0]]))
array([[3., 4.],
       [6., 8.]])
"""

from ..linalg import *  # noqa: F403
from ..linalg import __all__  # noqa: F401
from ..ops.linalg import einsum, swapaxes


def T(x):
    """The transpose of the last two axes (autograd's `linalg.T`)."""
    return swapaxes(x, -1, -2)


def _dot(a, b):
    """The matrix product of stacks, as autograd's `linalg._dot` (einsum '...ij,...jk->...ik')."""
    return einsum("...ij,...jk->...ik", a, b)
