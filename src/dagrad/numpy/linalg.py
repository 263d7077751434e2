"""`dagrad.numpy.linalg`: the same functions as `dagrad.linalg`, at the path `numpy.linalg` has
(so `import dagrad.numpy.linalg as la` stands in for `import numpy.linalg as la`)."""

from ..linalg import *  # noqa: F403
from ..linalg import __all__  # noqa: F401
