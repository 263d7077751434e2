"""The op library: one module per family. Importing it declares every primitive (Tensor's
operators and methods are bound by dagrad/_methods.py). The public names live in `dagrad`
and `dagrad.numpy`."""

from __future__ import annotations

from . import elementwise, linalg, nn, recurrent, reduce, shape  # noqa: F401  (declares the ops)
