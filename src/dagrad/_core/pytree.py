"""Pytrees: nested lists, tuples (namedtuples too) and dicts of leaves, flattened and rebuilt."""

from __future__ import annotations


def tree_flatten(tree):
    """Leaves of nested lists/tuples/dicts in order, and a description to rebuild it."""
    if not isinstance(tree, (list, tuple, dict)):
        return [tree], None
    leaves, defs = [], []
    for item in tree.values() if isinstance(tree, dict) else tree:
        sub_leaves, sub_def = tree_flatten(item)
        leaves.extend(sub_leaves)
        defs.append(sub_def)
    return leaves, (dict, list(zip(tree, defs))) if isinstance(tree, dict) else (type(tree), defs)


def tree_unflatten(treedef, leaves):
    return _rebuild(treedef, iter(leaves))


def _rebuild(treedef, it):
    if treedef is None:
        return next(it)
    kind, defs = treedef
    if kind is dict:
        return {key: _rebuild(sub, it) for key, sub in defs}
    items = [_rebuild(sub, it) for sub in defs]
    if kind is list:
        return items
    if kind is tuple:
        return tuple(items)
    return kind(*items)  # namedtuple
