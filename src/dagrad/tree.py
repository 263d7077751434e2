"""JAX's `jax.tree` names: `map`, `flatten`, `unflatten`, `leaves`, `structure`, `reduce`, `all` (the
functions of `dagrad.tree_util` under their short names).

>>> import dagrad as dg
>>> dg.tree.map(lambda x: x + 1, {"a": 1, "b": (2, 3)})
{'a': 2, 'b': (3, 4)}
"""

from __future__ import annotations

from ._core.errors import missing_name
from .tree_util import tree_all as all  # noqa: A004
from .tree_util import tree_flatten as flatten
from .tree_util import tree_leaves as leaves
from .tree_util import tree_map as map  # noqa: A004
from .tree_util import tree_reduce as reduce
from .tree_util import tree_structure as structure
from .tree_util import tree_unflatten as unflatten

__all__ = ["map", "flatten", "unflatten", "leaves", "structure", "reduce", "all"]


def __getattr__(name):
    raise missing_name(__name__, name, "JAX's jax.tree.{}", {}, "JAX")
