"""HIPS autograd's `autograd.extend` names, for users' own primitives: `primitive`, `defvjp`, `defjvp`,
`defvjp_argnum`, `defjvp_argnum` are dagrad's (`dg.primitive`, ...: see dagrad/custom.py), `vspace` and
`VSpace` those of dagrad/vspace.py.

>>> import numpy as np
>>> import dagrad as dg
>>> cube = primitive(lambda x: x ** 3)
>>> defvjp(cube, lambda ans, x: lambda g: 3 * x ** 2 * g)
>>> float(dg.grad(cube)(2.0))
12.0
"""

from __future__ import annotations

from .custom import defjvp, defjvp_argnum, defvjp, defvjp_argnum, primitive
from .vspace import VSpace, vspace

__all__ = ["primitive", "defvjp", "defjvp", "defvjp_argnum", "defjvp_argnum", "vspace", "VSpace"]
