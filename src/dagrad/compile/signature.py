"""How the arguments of a compiled function are named: by its parameters and the keys and
indices under them (`params['w']` in messages, `params_w` as the seed of an identifier)."""

from __future__ import annotations

import inspect


def parameter_names(f):
    """(positional parameter names, the name of *args or None) of `f`'s signature."""
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    return positional, variadic


def _walk_leaves(f, treedef, join):
    """One label per leaf of the arguments: `join(prefix, key, is_dict_key)` builds a child's label
    from its parent's; a top-level argument's label is its parameter name (or key for **kwargs)."""
    positional, variadic = parameter_names(f)
    _, (args_def, kwargs_def) = treedef
    labels = []
    stack = []
    for k, sub in enumerate(args_def[1]):
        stack.append((sub, positional[k] if k < len(positional) else f"{variadic or 'arg'}{k}"))
    for key, sub in kwargs_def[1]:
        stack.append((sub, key))
    stack.reverse()
    while stack:  # depth first, in the order of tree_flatten
        sub, label = stack.pop()
        if sub is None:
            labels.append(label)
            continue
        kind, defs = sub
        items = [(item, join(label, key, True)) for key, item in defs] if kind is dict else \
                [(item, join(label, k, False)) for k, item in enumerate(defs)]
        stack.extend(reversed(items))
    return labels


def leaf_names(f, treedef, count):
    """Names for the placeholders after f's parameters: `x`, `params_w`, `batch_0`, ... (any text:
    the naming table of codegen makes identifiers of them)."""
    return _walk_leaves(f, treedef, lambda prefix, key, _: f"{prefix}_{key}")[:count]


def leaf_paths(f, treedef):
    """How a user would write each leaf: `x`, `params['w']`, `batch[0]` (for messages)."""
    return _walk_leaves(f, treedef, lambda prefix, key, is_key: f"{prefix}[{key!r}]" if is_key else f"{prefix}[{key}]")
