"""Looking at graphs: the typed listing, Graphviz DOT source, and drawings.

Everything here reads a graph without changing it. The same three views serve an eager
recording (the graph that produced a Tensor), a static `Graph`, and a static `Symbol`
(the part of its graph it depends on): `listing(x)` (numbered, typed assignments in creation
order; `str(graph)` is the same without location comments), `to_dot(x)` (deterministic DOT
source) and `draw(x, path)` (`.svg` drawn here, `.png` / `.pdf` through Graphviz's `dot`).

Every traversal is iterative (explicit stacks), and every order comes from creation order
or insertion order, never from ids or sets.
"""

from __future__ import annotations

import copy
import shutil
import subprocess  # nosec B404
from bisect import bisect_right
from pathlib import Path
from xml.sax.saxutils import escape  # nosec B406

import numpy as np

from ._core.autodiff import reverse_sweep
from ._core.errors import location, printable, short_location, user_error
from ._core.ir import Graph, Symbol, TooManyNodes, node_parts, show_value, walk
from ._core.tensor import Tensor, _new, enable_grad, next_seq
from .ops.elementwise import full_like

__all__ = ["listing", "to_dot", "to_svg", "draw"]


# ---------------------------------------------------------------- the view: what is shown, in order


class _Entry:
    """One node as shown: its label, listing text, kind and inputs (entry indices or literal text)."""

    __slots__ = ("node", "label", "body", "args", "type", "comment", "kind", "inputs", "backward", "output", "note")

    def __init__(self, node, label):
        self.node = node
        self.label = label
        self.body = self.type = self.comment = self.note = None
        self.args = ()  # the inputs as the listing shows them
        self.kind = "op"  # "op", "parameter", "input" or "constant"
        self.inputs = ()  # per input: an int (the entry it comes from) or the text of a literal value
        self.backward = self.output = False


class _View:
    """The entries of a graph in listing order (each input before its consumers), and the
    comment lines that head or close sections."""

    def __init__(self):
        self.entries = []
        self.index = {}  # node -> its entry's position
        self.headers = {}  # entry position -> comment lines printed before it
        self.footer = []  # comment lines printed after the last entry

    def add(self, node, label):
        self.index[node] = len(self.entries)
        self.entries.append(_Entry(node, label))
        return self.entries[-1]

    def lines(self):
        out = []
        for i, e in enumerate(self.entries):
            out.extend(printable(line) for line in self.headers.get(i, ()))
            out.append(_line(e))
        return out + [printable(line) for line in self.footer]


def _line(e):
    """The entry's listing line (also its tooltip in a drawing), escaped: a name (a placeholder's, an op's,
    a file's) forges no line and sends no terminal escape."""
    return printable(f"{e.label} = {e.body} : {e.type}" + (f"   # {e.comment}" if e.comment else ""))


def _view(obj, backward=False, limit=None):
    if isinstance(obj, Graph):
        return _static_view(obj, obj.nodes, None, limit)
    if isinstance(obj, Symbol):
        return _static_view(obj.graph, _symbol_nodes(obj, backward), obj, limit)
    if isinstance(obj, Tensor):
        return _eager_view(obj, backward, limit)
    raise user_error(TypeError, "listing/to_dot/draw", f"expected a dagrad Tensor, a static Graph or a Symbol, "
                     f"got {type(obj).__name__}")


# -- static graphs


def _static_label(node, position):
    # as Graph.listing: a name that is a number is quoted, so it cannot be read as another node's position
    name = node.name
    return f"%{position}" if not name else f'%"{name}"' if name.isdigit() else f"%{name}"


_STATIC_KINDS = {"placeholder": "input", "variable": "parameter", "constant": "constant"}


def _static_view(graph, nodes, output, limit):
    if limit is not None and len(nodes) > limit:
        raise TooManyNodes(limit)
    positions = {node: i for i, node in enumerate(graph.nodes)}
    labels = {node: _static_label(node, positions[node]) for node in nodes}
    view = _View()
    for node in nodes:
        e = view.add(node, labels[node])
        e.body, e.type = node_parts(node, labels)  # exactly str(graph)'s line
        e.comment = short_location(getattr(node, "where", None))
        e.backward = node.grad_of is not None
        e.kind = _STATIC_KINDS.get(node.kind, "op") if node.op is None else "op"
        inputs = node.inputs or ()
        e.args = tuple(show_value(a, labels) for a in inputs)
        e.inputs = tuple(view.index[a] if isinstance(a, Symbol) else text for a, text in zip(inputs, e.args))
        e.output = node is output
    # the seeds dg.gradients makes (ones like the output) and zeros for what an output does not
    # depend on: full_like nodes whose every use is in the gradient computation
    users = {}
    for e in view.entries:
        for a in e.inputs:
            if isinstance(a, int):
                users.setdefault(a, []).append(e)
    for i, e in enumerate(view.entries):
        if not e.backward and e.node.op is full_like.op and i in users:
            e.backward = all(user.backward for user in users[i])
    return view


def _symbol_nodes(symbol, backward):
    """The nodes `symbol` depends on, in graph order; with `backward`, also the gradient nodes
    `dg.gradients` built from them (and what those depend on)."""
    wanted = walk([symbol])
    if backward:
        made = {}
        for node in symbol.graph.nodes:
            if node not in wanted and node.grad_of is not None and any(
                    isinstance(a, Symbol) and (a in wanted or a in made) for a in node.inputs or ()):
                made[node] = True
        wanted.update(walk(list(made)))
    return [node for node in symbol.graph.nodes if node in wanted]


# -- eager recordings


def _in_order(nodes):
    """Leaves first (in the order the listing first uses them), then the recorded nodes by creation."""
    ops = sorted((n for n in nodes if n.op is not None), key=lambda n: n._seq)
    leaves = {}
    for n in ops:
        for a in n.inputs or ():
            if isinstance(a, Tensor) and a.op is None and a in nodes:
                leaves[a] = True
    for n in nodes:  # leaves that no listed node uses (a root that is a leaf)
        if n.op is None:
            leaves[n] = True
    return list(leaves) + ops


def _eager_view(root, backward, limit):
    nodes = walk([root], limit=limit)
    view = _View()
    labels = {}
    for n in _in_order(nodes):
        _eager_entry(view, n, labels)
    view.entries[view.index[root]].output = True
    if backward:
        _add_backward(view, root, nodes, labels)
    return view


def _eager_entry(view, node, labels, inputs_of=None):
    """An eager node's entry, labelled by position; `inputs_of` maps a backward sweep's copy to its original."""
    labels[node] = f"%{len(view.entries)}"
    e = view.add(node, labels[node])
    e.type = f"{tuple(node.shape)} {node.dtype}"
    e.comment = short_location(location(node))
    if node.op is None:
        e.kind = "parameter" if node._requires_grad else "input"
        # the marker follows the type in the listing: `%0 = leaf : () float64  requires_grad`
        e.body = "leaf"
        if node._requires_grad:
            e.type += "  requires_grad"
        return e
    if node.inputs is None:
        e.args = ("<freed by backward()>",)
    else:
        inputs = [inputs_of.get(a, a) if inputs_of and isinstance(a, Tensor) else a for a in node.inputs]
        e.args = tuple(labels[a] if isinstance(a, Tensor) else show_value(a, labels) for a in inputs)
        e.inputs = tuple(view.index[a] if isinstance(a, Tensor) else text for a, text in zip(inputs, e.args))
    attrs = tuple(f"{k}={str(v) if isinstance(v, np.dtype) else repr(v)}" for k, v in (node.attrs or {}).items())
    e.body = f"{node.op.name}({', '.join(e.args + attrs)})"
    return e


def _raw_node(value, op, inputs, attrs, requires_grad, level, seq):
    """A recorded Tensor made directly, without running `op`."""
    t = _new(Tensor)
    t._value, t.op, t.inputs, t.attrs, t._grad = value, op, inputs, attrs, None
    t._requires_grad, t._level, t._seq, t._code = requires_grad, level, seq, None
    return t


def _add_backward(view, root, nodes, labels):
    """Appends the gradient computation of `root` (seeded with ones): the reverse sweep is run in
    graph mode on a copy of the recorded nodes, so that the user's graph and `.grad` stay as they were."""
    if root.op is None or not root._requires_grad:
        view.footer.append(f"# no backward: {labels[root]} has no recorded graph")
        return
    if root._level != 0:
        raise user_error(ValueError, "listing", "backward=True of a value traced by a transform: list the "
                         "transform's result")
    ops = [n for n in nodes if n.op is not None]
    for n in ops:
        if n.inputs is None:
            raise user_error(RuntimeError, "listing", f"backward=True: this graph was freed by a backward() "
                             f"({labels[n]} = {n.op.name}(...) no longer holds its inputs); pass retain_graph=True to "
                             "that backward(), or look before calling it")
    # copies of the recorded nodes whose ops mark, each time one of their vjp rules runs, which
    # forward node the nodes made from then on differentiate
    marks = []  # (sequence number, forward node) in the order the sweep ran the rules
    copies = {}
    for n in sorted(ops, key=lambda n: n._seq):
        inputs = tuple(copies.get(a, a) if isinstance(a, Tensor) else a for a in n.inputs)
        copies[n] = _raw_node(n._value, _marking_op(n.op, n, marks), inputs, n.attrs, n._requires_grad, n._level,
                              n._seq)
    originals = {c: n for n, c in copies.items()}
    top = copies[root]
    # the seed as dg.gradients makes it: ones shaped like the output; it requires grad so that
    # every rule that uses it records its result
    seed = _raw_node(np.ones(root.shape, root.dtype), full_like.op, (top,), {"fill_value": 1, "dtype": None}, True, 0,
                     next_seq())
    with enable_grad():
        grads = reverse_sweep([top], [seed], 0, graph_mode=True)
    # the new nodes: what the gradients depend on, short of the forward graph
    made = walk([ct for ct in grads.values() if isinstance(ct, Tensor)], stop={**originals, **nodes})
    marks_at = [seq for seq, _ in marks]
    start = len(view.entries)
    for n in _in_order(made):
        e = _eager_entry(view, n, labels, originals)
        e.backward = True
        e.comment = "seed" if n is seed else None
        k = bisect_right(marks_at, n._seq) - 1
        if n.op is None:
            e.kind = "constant"  # a value a rule made, such as the transpose of an input
        elif n is not seed and k >= 0:
            forward = marks[k][1]
            where = short_location(location(forward))
            e.comment = f"{where} (backward of {forward.op.name})" if where else f"backward of {forward.op.name}"
    if start < len(view.entries):
        view.headers[start] = [f"# backward of {labels[root]}"]
    for e in view.entries[start:]:  # a leaf a rule made (a constant) says which rule used it first
        for a in e.inputs:
            if isinstance(a, int) and a >= start:
                used = view.entries[a]
                if used.node.op is None and used.comment is None and e.comment != "seed":
                    used.comment = e.comment
    for leaf in sorted(grads, key=lambda a: view.index[a]):
        ct, name = grads[leaf], f"d{labels[root]}/d{labels[leaf]}"
        if isinstance(ct, Tensor):
            ct = originals.get(ct, ct)
            e = view.entries[view.index[ct]]
            e.note = name if e.note is None else f"{e.note}, d/d{labels[leaf]}"
        view.footer.append(f"# {name} = {labels[ct] if isinstance(ct, Tensor) else show_value(ct, labels)}")


def _marking_op(op, node, marks):
    """A copy of `op` whose vjp rules note (a fresh sequence number, `node`) each time they run."""
    marked = copy.copy(op)

    def mark(rule):
        if rule is None:
            return None

        def rule_of_node(*args, **kwargs):
            marks.append((next_seq(), node))
            return rule(*args, **kwargs)

        return rule_of_node

    rules = op.vjp
    marked.vjp = tuple(mark(r) for r in rules) if type(rules) is tuple else mark(rules)
    return marked


# ---------------------------------------------------------------- the listing


def listing(t_or_graph, backward=False, locations=True) -> str:
    """The graph as numbered, typed assignments, one line per node.

    For a Tensor: the graph that produced it, leaves first, then each recorded node once in
    creation order; for a `Graph`: every node (as `str(graph)`); for a `Symbol`: what it depends
    on. With `locations`, a comment gives the line of your code that made each node.

    `backward=True` also lists the gradient computation (for a Tensor, run on a copy from a seed
    of ones: your graph and every `.grad` stay as they are), each node commented with the forward
    line and op it differentiates, and closing lines naming each gradient (`# d%6/d%0 = %15`).

    >>> import dagrad as dg
    >>> x = dg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = dg.exp(x * 2.0).sum()
    >>> print(dg.listing(y, locations=False))
    %0 = leaf : (2,) float64  requires_grad
    %1 = multiply(%0, 2.0) : (2,) float64
    %2 = exp(%1) : (2,) float64
    %3 = sum(%2, axis=None, keepdims=False) : () float64
    >>> print(dg.listing(dg.exp(x), backward=True, locations=False))
    %0 = leaf : (2,) float64  requires_grad
    %1 = exp(%0) : (2,) float64
    # backward of %1
    %2 = full_like(%1, fill_value=1, dtype=None) : (2,) float64
    %3 = multiply(%2, %1) : (2,) float64
    # d%1/d%0 = %3
    """
    view = _view(t_or_graph, backward)
    if not locations:
        for e in view.entries:
            e.comment = None
    return "\n".join(view.lines())


# ---------------------------------------------------------------- DOT

_STYLE = {  # kind -> (DOT attributes, SVG fill, SVG stroke, SVG corner radius)
    "op": ('shape=box, style="rounded,filled", fillcolor="#ffffff", color="#455a64"', "#ffffff", "#455a64", 5),
    "backward": ('shape=box, style="rounded,filled", fillcolor="#ffe0b2", color="#e65100"', "#ffe0b2", "#e65100", 5),
    "parameter": ('shape=box, style="filled,bold", fillcolor="#c8e6c9", color="#2e7d32"', "#c8e6c9", "#2e7d32", 0),
    "input": ('shape=ellipse, style=filled, fillcolor="#bbdefb", color="#1565c0"', "#bbdefb", "#1565c0", 16),
    "constant": ('shape=note, style=filled, fillcolor="#eeeeee", color="#757575"', "#eeeeee", "#757575", 0),
}
_MAX_LABEL = 44  # characters of the first line of a drawn node; the tooltip has the whole line


def _style_of(e):
    return "backward" if e.backward and e.kind == "op" else e.kind


def _drawn_lines(e):
    """What a drawn node says: its label and op with its inputs (not its attributes), its type, and
    which gradient it is (with backward=True)."""
    head = f"{e.label} {e.body}" if e.node.op is None else f"{e.label} {e.node.op.name}({', '.join(e.args)})"
    head = printable(head)
    if len(head) > _MAX_LABEL:
        head = head[: _MAX_LABEL - 1] + "\u2026"
    return [head, printable(e.type)] + ([printable(e.note)] if e.note else [])


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(t_or_graph, backward=False) -> str:
    """Graphviz DOT source of the graph (the nodes `listing` shows), deterministic.

    A node is labelled with its label, op, inputs and type (its whole listing line is the
    tooltip). Ops are rounded white boxes (orange in the gradient computation), parameters
    green boxes, inputs blue ellipses, constants grey notes; the output has a bold border.

    >>> import dagrad as dg
    >>> x = dg.tensor(2.0, requires_grad=True)
    >>> print(dg.to_dot(dg.sin(x)))  # doctest: +ELLIPSIS
    digraph dagrad {
      rankdir=TB;
      ...
      n0 [label="%0 leaf\\n() float64  requires_grad", shape=box, style="filled,bold", ...];
      n1 [label="%1 sin(%0)\\n() float64", shape=box, ..., penwidth=2.5, tooltip=...];
      n0 -> n1;
    }
    <BLANKLINE>
    """
    view = _view(t_or_graph, backward)
    lines = [
        "digraph dagrad {",
        "  rankdir=TB;",
        '  node [fontname="monospace", fontsize=10, margin="0.1,0.05"];',
        '  edge [color="#546e7a", arrowsize=0.7];',
    ]
    for i, e in enumerate(view.entries):
        bold = ", penwidth=2.5" if e.output else ""
        label = _quote("\n".join(_drawn_lines(e)))
        lines.append(f"  n{i} [label={label}, {_STYLE[_style_of(e)][0]}{bold}, tooltip={_quote(_line(e))}];")
    for i, e in enumerate(view.entries):
        lines.extend(f"  n{a} -> n{i};" for a in e.inputs if isinstance(a, int))
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- SVG: a small layered layout

_FONT = 12
_CHAR = 7.25  # the width of a monospace character at _FONT px
_LINE = 15
_PAD_X, _PAD_Y = 8, 5
_NODE_GAP = 18
_LAYER_GAP = 42
_DUMMY_W = 8  # the width a passing edge takes in a layer
_MAX_ROW = 2400  # a layer wider than this wraps onto more rows
_MAX_DUMMIES = 40000  # beyond this many bends, long edges are drawn straight
_MARGIN = 12


def to_svg(t_or_graph, backward=False) -> str:
    """SVG source of the graph, laid out here without any system dependency.

    A layered layout (barycenter ordering, long edges bent through one column per source, wide
    layers wrapped); each node is a `<g class="node KIND">` with a `<title>` (its listing line).

    >>> import dagrad as dg
    >>> x = dg.tensor(2.0, requires_grad=True)
    >>> svg = to_svg(dg.sin(x) * x)
    >>> svg.startswith("<svg") and svg.count('<g class="node') == 3
    True
    """
    return _svg(_view(t_or_graph, backward))


def _mean(values, default):
    return sum(values) / len(values) if values else default


def _pack(row, width, x, center):
    """Places the boxes of `row` side by side, _NODE_GAP apart, centred on `center`."""
    left = center - (sum(width[it] for it in row) + _NODE_GAP * (len(row) - 1)) / 2
    for it in row:
        x[it] = left + width[it] / 2
        left += width[it] + _NODE_GAP


def _layout(view):
    """Positions: per entry (x center, y top, width, height), per edge its polyline points."""
    entries = view.entries
    n = len(entries)
    preds = [[a for a in e.inputs if isinstance(a, int)] for e in entries]
    succs = [[] for _ in range(n)]
    for v in range(n):
        for u in preds[v]:
            succs[u].append(v)
    # the entries come in a topological order: each node goes one layer below its deepest input,
    # then as low as its consumers allow (just above the first one)
    layer = [0] * n
    for v in range(n):
        if preds[v]:
            layer[v] = 1 + max(layer[u] for u in preds[v])
    for v in reversed(range(n)):
        if succs[v]:
            layer[v] = max(layer[v], min(layer[s] for s in succs[v]) - 1)
    # long edges: one column of bend points ("dummies") per source, shared by its consumers
    spans = [max((layer[s] for s in succs[u]), default=0) - layer[u] - 1 for u in range(n)]
    text = [_drawn_lines(e) for e in entries]
    width = [max(len(s) for s in lines) * _CHAR + 2 * _PAD_X for lines in text]
    height = [len(lines) * _LINE + 2 * _PAD_Y for lines in text]
    item_layer = list(layer)
    trunk = [None] * n
    if sum(s for s in spans if s > 0) <= _MAX_DUMMIES:
        for u in range(n):
            if spans[u] > 0:
                trunk[u] = list(range(len(item_layer), len(item_layer) + spans[u]))
                item_layer.extend(range(layer[u] + 1, layer[u] + 1 + spans[u]))
    items = len(item_layer)
    width += [_DUMMY_W] * (items - n)
    height += [0] * (items - n)

    def source(u, v):  # where the edge u -> v leaves from: u, or the bend of u's trunk just above v
        gap = layer[v] - layer[u]
        return trunk[u][gap - 2] if gap > 1 and trunk[u] is not None else u

    up = [[source(u, v) for u in preds[v]] for v in range(n)] + [[] for _ in range(items - n)]
    layers = [[] for _ in range(max(item_layer) + 1 if items else 0)]
    for u in range(n):  # a trunk starts next to its source
        column = [u] + (trunk[u] or [])
        for a, b in zip(column, column[1:]):
            up[b].append(a)
        for it in column:
            layers[item_layer[it]].append(it)
    down = [[] for _ in range(items)]
    for b in range(items):
        for a in up[b]:
            down[a].append(b)
    pos = [0] * items
    for row in layers:
        for i, it in enumerate(row):
            pos[it] = i
    # the barycenter heuristic: sort each layer by the mean position of its neighbours in the last one
    depth = len(layers)
    for downward in (True, False, True, False):
        neighbours = up if downward else down
        for lay in range(1, depth) if downward else range(depth - 2, -1, -1):
            row = layers[lay]
            keys = {it: (_mean([pos[a] for a in neighbours[it]], pos[it]), pos[it]) for it in row}
            row.sort(key=keys.__getitem__)
            for i, it in enumerate(row):
                pos[it] = i
    # rows: a wide layer wraps
    rows = []
    for row in layers:
        current, used = [], 0.0
        for it in row:
            if current and used + width[it] > _MAX_ROW:
                rows.append(current)
                current, used = [], 0.0
            current.append(it)
            used += width[it] + _NODE_GAP
        rows.append(current)
    x = [0.0] * items
    for row in rows:
        _pack(row, width, x, 0.0)
    # x: each row pulled towards its neighbours above, then below, then above again
    for downward in (True, False, True):
        neighbours = up if downward else down
        for row in rows if downward else reversed(rows):
            wanted = [_mean([x[a] for a in neighbours[it]], x[it]) for it in row]
            for it, value in zip(row, _spread(wanted, [width[it] for it in row])):
                x[it] = value
    # a drawing no wider than its widest row: a row that spread wider is packed, and rows that
    # drifted apart are moved into one band (edges slant more, the page stays readable)
    band = max([_MAX_ROW] + width[:n])
    extents = []
    for row in rows:
        if not row:
            continue
        left, right = min(x[it] - width[it] / 2 for it in row), max(x[it] + width[it] / 2 for it in row)
        if right - left > band:
            _pack(row, width, x, sum(x[it] for it in row) / len(row))
            left, right = x[row[0]] - width[row[0]] / 2, x[row[-1]] + width[row[-1]] / 2
        extents.append((row, left, right))
    if extents and max(e[2] for e in extents) - min(e[1] for e in extents) > band:
        centers = sorted((e[1] + e[2]) / 2 for e in extents)
        low = centers[len(centers) // 2] - band / 2
        for row, left, right in extents:
            shift = low - left if left < low else low + band - right if right > low + band else 0.0
            for it in row:
                x[it] += shift
    # y: rows stacked; a bend spans its row's height (the edge passes the row from top to bottom)
    y = [0.0] * items
    top = _MARGIN
    for row in rows:
        tall = max([_LINE] + [height[it] for it in row])
        for it in row:
            y[it] = top
            if it >= n:
                height[it] = tall
        top += tall + _LAYER_GAP
    bottom = top - _LAYER_GAP + _MARGIN
    shift = _MARGIN - min((x[it] - width[it] / 2 for it in range(items)), default=0.0)
    right = max((x[it] + width[it] / 2 for it in range(items)), default=0.0) + shift + _MARGIN
    x = [value + shift for value in x]
    # a source's column of bends is drawn once (a trunk); each edge runs from the bottom of its
    # input, or from the trunk's bend just above the consumer, to the top of the consumer, where
    # the inputs of a node arrive side by side in input order
    trunks = []
    for u in range(n):
        if trunk[u]:
            points = [(x[u], y[u] + height[u])]
            for d in trunk[u]:
                points.extend(((x[d], y[d]), (x[d], y[d] + height[d])))
            trunks.append((u, points))
    edges = []
    for v in range(n):
        m = len(preds[v])
        step = min(14.0, width[v] / (m + 1)) if m > 1 else 0.0
        for k, u in enumerate(preds[v]):
            s = source(u, v)
            edges.append((u, v, [(x[s], y[s] + height[s]), (x[v] + (k - (m - 1) / 2) * step, y[v])]))
    boxes = [(x[v], y[v], width[v], height[v]) for v in range(n)]
    return boxes, text, trunks, edges, right, bottom


def _spread(wanted, widths):
    """Centers as near `wanted` as the order and the gaps between the boxes allow."""
    count = len(wanted)
    sep = [(widths[i] + widths[i + 1]) / 2 + _NODE_GAP for i in range(count - 1)]
    right = list(wanted)
    for i in range(1, count):
        right[i] = max(wanted[i], right[i - 1] + sep[i - 1])
    left = list(wanted)
    for i in range(count - 2, -1, -1):
        left[i] = min(wanted[i], left[i + 1] - sep[i])
    out = [(a + b) / 2 for a, b in zip(left, right)]
    for i in range(1, count):
        out[i] = max(out[i], out[i - 1] + sep[i - 1])
    return out


def _svg(view):
    entries = view.entries
    boxes, text, trunks, edges, width, height = _layout(view)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="{_FONT}" '
        'style="background-color:#ffffff">',
        '<defs><marker id="dagrad-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="#546e7a"/></marker></defs>',
        '<g class="edges" fill="none" stroke="#546e7a" stroke-width="1.1">',
    ]
    for u, points in trunks:
        d = " L ".join(f"{px:.1f} {py:.1f}" for px, py in points)
        out.append(f'<path class="trunk" data-from="n{u}" d="M {d}"/>')
    for u, v, points in edges:
        d = " L ".join(f"{px:.1f} {py:.1f}" for px, py in points)
        out.append(f'<path class="edge" data-from="n{u}" data-to="n{v}" d="M {d}" marker-end="url(#dagrad-arrow)"/>')
    out.append("</g>")
    for i, e in enumerate(entries):
        cx, top, w, h = boxes[i]
        style = _style_of(e)
        _, fill, stroke, radius = _STYLE[style]
        stroke_width = 2.5 if e.output else 1.8 if e.kind == "parameter" else 1.1
        dash = ' stroke-dasharray="4 2"' if e.kind == "constant" else ""
        out.append(f'<g class="node {style}" id="n{i}"><title>{escape(_line(e))}</title>')
        out.append(
            f'<rect x="{cx - w / 2:.1f}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{min(radius, h / 2):.1f}" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{stroke_width}"{dash}/>'
        )
        for k, line in enumerate(text[i]):
            colour = "#263238" if k == 0 else "#607d8b"
            out.append(
                f'<text x="{cx:.1f}" y="{top + _PAD_Y + (k + 0.8) * _LINE:.1f}" text-anchor="middle" '
                f'fill="{colour}">{escape(line)}</text>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- files and Jupyter


def draw(t_or_graph, path, backward=False):
    """Writes a picture of the graph to `path`, by its suffix, and returns the path.

    `.svg`: drawn by dagrad (`to_svg`); `.png` and `.pdf`: through Graphviz's `dot` program,
    which must be installed; `.dot` / `.gv`: the DOT source (`to_dot`).

    >>> import dagrad as dg, tempfile, os
    >>> x = dg.tensor([1.0, 2.0], requires_grad=True)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = dg.draw((x * x).sum(), os.path.join(folder, "graph.svg"), backward=True)
    ...     path.read_text().startswith("<svg")
    True
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        path.write_text(to_svg(t_or_graph, backward), encoding="utf-8")
    elif suffix in (".dot", ".gv"):
        path.write_text(to_dot(t_or_graph, backward), encoding="utf-8")
    elif suffix in (".png", ".pdf"):
        dot = shutil.which("dot")
        if dot is None:
            raise user_error(RuntimeError, "draw", f"writing {suffix} needs Graphviz's `dot` program, which is not "
                             "installed; install Graphviz (e.g. `apt-get install graphviz` or `brew install graphviz`),"
                             " or write an .svg, which needs nothing")
        source = to_dot(t_or_graph, backward)
        # bandit B404/B603: no shell; dot found by shutil.which; a fixed argument list but for the output path,
        # passed as one argument. (B406 on `escape`: it only escapes text we write into SVG; nothing is parsed.)
        command = [dot, f"-T{suffix[1:]}", "-o", str(path)]
        done = subprocess.run(command, input=source.encode("utf-8"), capture_output=True, check=False)  # nosec B603
        if done.returncode != 0:
            raise user_error(RuntimeError, "draw", f"Graphviz's dot failed (exit status {done.returncode}): "
                             f"{done.stderr.decode(errors='replace').strip()}")
    else:
        raise user_error(ValueError, "draw", f"cannot write a {suffix or 'suffix-less'} file {str(path)!r}; use "
                         ".svg (no dependency), .png or .pdf (with Graphviz installed), or .dot / .gv (the DOT source)")
    return path


_REPR_LIMIT = 600  # nodes; a larger graph shows as text in Jupyter (draw it to a file instead)


def repr_svg(self):
    """Jupyter's picture of a graph or of the graph that made a tensor (None: show the text)."""
    empty = not self.nodes if isinstance(self, Graph) else self.op is None  # a leaf has no graph to show
    if empty:
        return None
    try:
        return _svg(_view(self, False, _REPR_LIMIT))
    except TooManyNodes:
        return None
