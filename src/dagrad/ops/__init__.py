"""The op library: one module per family. Importing it declares every primitive and gives
Tensor its operators and methods. The public names live in `dagrad` and `dagrad.numpy`."""

from __future__ import annotations

from . import elementwise, linalg, nn, reduce, shape  # noqa: F401  (declares the ops)
from . import _methods  # noqa: F401  (binds Tensor operators and methods)
