"""`dagrad.scipy`: SciPy's special functions, distributions and matrix functions, differentiable, for
code written with `scipy` (or `jax.scipy`, `autograd.scipy`) to run with the namespace swapped. SciPy
computes the values: it is the optional extra `dagrad[scipy]`, and a function called without it
raises an ImportError naming the extra."""

from __future__ import annotations

from . import integrate, linalg, signal, special, stats

__all__ = ["integrate", "linalg", "signal", "special", "stats"]
