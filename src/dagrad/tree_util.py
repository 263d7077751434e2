"""JAX's `jax.tree_util`: pytrees (nested tuples, lists, dicts, namedtuples and None) flattened, rebuilt and
mapped, with JAX's rules: a dict's leaves come in the order of its sorted keys (an OrderedDict's in its own
order), None is a node without leaves, and `is_leaf` stops the descent where it says True.

>>> import dagrad.tree_util as tu
>>> leaves, treedef = tu.tree_flatten({"b": (1, 2), "a": [3, None]})
>>> leaves, treedef
([3, 1, 2], PyTreeDef({'a': [*, None], 'b': (*, *)}))
>>> tu.tree_map(lambda x, y: x + y, {"a": 1, "b": 2}, {"a": 10, "b": 20})
{'a': 11, 'b': 22}
>>> tu.tree_unflatten(treedef, [30, 10, 20])
{'a': [30, None], 'b': (10, 20)}
"""

from __future__ import annotations

import collections
import functools

from ._core.errors import missing_name, user_error

__all__ = ["PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
           "tree_reduce", "tree_all", "all_leaves", "treedef_is_leaf"]

_LEAF = "*"
_NO_INITIALIZER = object()


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _keys(d):
    """A dict's keys in JAX's order: sorted (an OrderedDict keeps its own; unsortable keys keep theirs)."""
    if isinstance(d, collections.OrderedDict):
        return list(d)
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _node(tree, is_leaf):
    """(kind, metadata, children) of a node, or None for a leaf."""
    if is_leaf is not None and is_leaf(tree):
        return None
    if tree is None:
        return (type(None), None, ())
    if isinstance(tree, dict):
        keys = _keys(tree)
        kind = type(tree)
        meta = (tuple(keys), tree.default_factory) if isinstance(tree, collections.defaultdict) else tuple(keys)
        return (kind, meta, tuple(tree[k] for k in keys))
    if _is_namedtuple(tree) or type(tree) in (tuple, list):
        return (type(tree), None, tuple(tree))
    return None


class PyTreeDef:
    """The structure of a pytree (JAX's `PyTreeDef`): compares equal to the structure of another tree of the
    same shape, rebuilds a tree from leaves (`unflatten`), counts them (`num_leaves`)."""

    __slots__ = ("_kind", "_meta", "_children", "num_leaves")

    def __init__(self, kind, meta, children):
        self._kind, self._meta, self._children = kind, meta, tuple(children)
        self.num_leaves = 1 if kind is _LEAF else sum(c.num_leaves for c in self._children)

    def _key(self):
        return (self._kind, self._meta, tuple(c._key() for c in self._children))

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self._children)

    def unflatten(self, leaves):
        """The tree of this structure with `leaves` in its leaves' places."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise user_error(ValueError, "tree_unflatten", f"the structure {self} has {self.num_leaves} leaves, "
                             f"got {len(leaves)}")
        return self._build(iter(leaves))

    def _build(self, leaves):
        kind, meta = self._kind, self._meta
        if kind is _LEAF:
            return next(leaves)
        children = [c._build(leaves) for c in self._children]
        if kind is type(None):
            return None
        if issubclass(kind, dict):
            if kind is collections.defaultdict:
                keys, factory = meta
                return collections.defaultdict(factory, zip(keys, children))
            return kind(zip(meta, children))
        if kind in (tuple, list):
            return kind(children)
        return kind(*children)  # a namedtuple

    def flatten_up_to(self, tree):
        """The subtrees of `tree` at this structure's leaves (this structure must be a prefix of tree's)."""
        out = []
        self._up_to(tree, out)
        return out

    def _up_to(self, tree, out):
        if self._kind is _LEAF:
            out.append(tree)
            return
        node = _node(tree, None)
        if node is None or node[0] is not self._kind or node[1] != self._meta or len(node[2]) != len(self._children):
            what = "a leaf" if node is None else f"a {node[0].__name__} node" + (
                f" with keys {list(node[1])}" if isinstance(tree, dict) else f" of {len(node[2])} children")
            raise user_error(ValueError, "tree_map", f"a tree does not match the structure of the first: found "
                             f"{what} where the first has {self._describe()}")
        for child, sub in zip(self._children, node[2]):
            child._up_to(sub, out)

    def _describe(self):
        if isinstance(self._meta, tuple) and issubclass(self._kind, dict):
            return f"a {self._kind.__name__} with keys {list(self._meta)}"
        return f"a {self._kind.__name__} of {len(self._children)} children"

    def __repr__(self):
        return f"PyTreeDef({self._show()})"

    def _show(self):
        kind = self._kind
        if kind is _LEAF:
            return "*"
        if kind is type(None):
            return "None"
        parts = [c._show() for c in self._children]
        if issubclass(kind, dict):
            keys = self._meta[0] if kind is collections.defaultdict else self._meta
            inner = "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts)) + "}"
            return inner if kind is dict else f"{kind.__name__}({inner})"
        if kind is list:
            return "[" + ", ".join(parts) + "]"
        if kind is tuple:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return f"{kind.__name__}(" + ", ".join(f"{f}={p}" for f, p in zip(kind._fields, parts)) + ")"


def _flatten(tree, is_leaf, leaves):
    node = _node(tree, is_leaf)
    if node is None:
        leaves.append(tree)
        return PyTreeDef(_LEAF, None, ())
    kind, meta, children = node
    return PyTreeDef(kind, meta, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree, is_leaf=None):
    """(leaves, treedef) of `tree`, as `jax.tree_util.tree_flatten` (None has no leaves; `is_leaf(x)` True
    makes x a leaf)."""
    leaves = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def tree_unflatten(treedef, leaves):
    """The tree of structure `treedef` with `leaves`, as `jax.tree_util.tree_unflatten`."""
    if not isinstance(treedef, PyTreeDef):
        raise user_error(TypeError, "tree_unflatten", f"expects a PyTreeDef (from tree_flatten or tree_structure), "
                         f"got {type(treedef).__name__}")
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf=None):
    """The leaves of `tree`, in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The PyTreeDef of `tree`."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    """`f` applied to each leaf of `tree` (and the matching subtrees of each of `rest`, whose structure
    `tree`'s must be a prefix of), as `jax.tree_util.tree_map`.

    >>> tree_map(lambda x: x * 2, [1, (2, None), {"a": 3}])
    [2, (4, None), {'a': 6}]
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """`functools.reduce(function, tree_leaves(tree))` (from `initializer` if given).

    >>> tree_reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]})
    6
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        if not leaves:
            raise user_error(TypeError, "tree_reduce", "a tree without leaves needs an initializer")
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree):
    """Whether every leaf is truthy."""
    return all(tree_leaves(tree))


def all_leaves(iterable, is_leaf=None):
    """Whether every item of `iterable` is a leaf."""
    return all(_node(x, is_leaf) is None for x in iterable)


def treedef_is_leaf(treedef):
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


_HINTS = {
    "register_pytree_node": "dagrad's transforms take tuples, lists, dicts and namedtuples: turn a custom class "
                            "into one of them (a namedtuple keeps attribute access) before differentiating",
    "register_pytree_node_class": "dagrad's transforms take tuples, lists, dicts and namedtuples: turn a custom "
                                  "class into one of them (a namedtuple keeps attribute access)",
    "register_dataclass": "dagrad's transforms take tuples, lists, dicts and namedtuples: use a namedtuple",
    "Partial": "use functools.partial",
}


def __getattr__(name):
    raise missing_name(__name__, name, "JAX's jax.tree_util.{}", _HINTS, "JAX")
