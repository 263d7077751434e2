"""Compilation: trace a function into a graph, optimise it, and generate Python/NumPy code."""

from .trace import Compiled, compile

__all__ = ["Compiled", "compile"]
