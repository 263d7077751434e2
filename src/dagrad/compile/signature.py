"""How the arguments of a compiled function are named: by its parameters and the keys and
indices under them (`params['w']` in messages, `params_w` as the seed of an identifier)."""

from __future__ import annotations

import inspect


def arguments(f, treedef):
    """The positional and the keyword arguments of a call, two lists of (label, subtree): a label is
    a parameter's name (`args1` for the second of *args) or a keyword."""
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    _, (args_def, kwargs_def) = treedef
    return ([(positional[k] if k < len(positional) else f"{variadic or 'arg'}{k}", sub)
             for k, sub in enumerate(args_def[1])], list(kwargs_def[1]))


def walk_leaves(roots, join):
    """One label per leaf under `roots` [(label, subtree)], in the order of tree_flatten:
    `join(label, key, is_dict_key)` builds a child's label from its parent's."""
    labels = []
    stack = list(reversed(roots))
    while stack:  # depth first
        label, sub = stack.pop()
        if sub is None:
            labels.append(label)
            continue
        kind, defs = sub
        items = [(join(label, key, True), item) for key, item in defs] if kind is dict else \
                [(join(label, k, False), item) for k, item in enumerate(defs)]
        stack.extend(reversed(items))
    return labels


def leaf_names(f, treedef, count):
    """Names for the placeholders after f's parameters: `x`, `params_w`, `batch_0`, ... (any text:
    the naming table of codegen makes identifiers of them)."""
    positional, keywords = arguments(f, treedef)
    return walk_leaves(positional + keywords, lambda prefix, key, _: f"{prefix}_{key}")[:count]


def leaf_paths(f, treedef):
    """How a user would write each leaf: `x`, `params['w']`, `batch[0]` (for messages)."""
    positional, keywords = arguments(f, treedef)
    return walk_leaves(positional + keywords,
                       lambda prefix, key, is_key: f"{prefix}[{key!r}]" if is_key else f"{prefix}[{key}]")
