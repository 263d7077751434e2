"""Code generation: a Program becomes the source of one Python function over NumPy.

One line per node (`t7 = tanh(t6, out=t6)  # model.py:12`), each name deleted after its
last use, and a memory plan: an elementwise NumPy ufunc writes its result into the buffer
of an input that dies at that node (same shape and dtype), so a chain of elementwise ops
reuses one buffer instead of allocating one per op. A buffer is reused only if the
generated code allocated it (never a caller's array, a Variable or a constant) and no
live value shares its memory (views are tracked).
"""

from __future__ import annotations

import builtins
import itertools
import keyword
import linecache
import math
import os
import re

import numpy as np

from ..static.graph import Symbol

# ops whose result is always a new array (when it has at least one dimension); ufuncs are too
FRESH_OPS = frozenset(("sum", "prod", "cumsum", "where", "full_like", "concatenate", "stack", "add_n", "multiply_n"))
COMMENT_COLUMN = 56

_counter = itertools.count(1)


class Generated:
    """The generated function, its source and its namespace, and which node each line computes."""

    def __init__(self, source, namespace, function, line_nodes, names, bindings, constants):
        self.source = source
        self.namespace = namespace
        self.function = function
        self.line_nodes = line_nodes  # line number in `source` -> node
        self.names = names  # node -> its name in the source
        self.bindings = bindings  # op -> the name its forward has in the source
        self.constants = constants  # name -> array, for the arrays the source names


def generate(program, name="f", grouped=False, reserved=()):
    """Writes `program` as a Python function `name(*inputs)` returning a tuple of the outputs.

    Each line ends with a comment naming the user's line that built the node; with `grouped`,
    consecutive lines from one user line are headed instead by one comment quoting that line.
    No name in the source is one of `reserved`.
    """
    source, line_nodes, names, bindings, constants, namespace, name = _write(program, name, grouped, reserved)
    filename = f"<dagrad.compile {name} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks show lines
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102  (our own generated source)
    function = namespace[name]
    function.__dagrad_filename__ = filename
    return Generated(source, namespace, function, line_nodes, names, bindings, constants.arrays)


def _write(program, name, grouped, reserved):
    nodes = program.nodes
    naming = _Naming()
    naming.taken.update(reserved)
    name = naming.claim(name)  # before the ops: a function called like an op it calls would call itself
    names = {}
    for node in program.inputs:
        names[node] = naming.claim(node.name or "x")
    bindings = {}
    for node in nodes:
        if node.op is not None and node.op not in bindings:
            bindings[node.op] = naming.claim(node.op.name)
    namespace = {"np": np}
    for op, binding in bindings.items():
        namespace[binding] = op.forward
    constants = _Constants(naming, namespace)
    for i, node in enumerate(nodes):
        if node.kind == "constant":
            names[node] = constants.literal(node._data)
        elif node.op is not None:
            names[node] = naming.claim(f"t{i}")

    plan = _MemoryPlan(program)
    lines = []
    heading = None
    line_nodes = {}
    for i, node in enumerate(nodes):
        if node.op is None:
            continue
        args = [names[a] if isinstance(a, Symbol) else constants.literal(a) for a in node.inputs]
        args += [f"{key}={constants.literal(value)}" for key, value in (node.attrs or {}).items()]
        target = plan.out_into.get(node)
        if target is not None:
            args.append(f"out={names[target]}")
        code = f"{names[node]} = {bindings[node.op]}({', '.join(args)})"
        dead = [names[d] for d in plan.dies_at.get(i, ()) if d.kind != "constant"]
        if dead:
            code += f"; del {', '.join(dead)}"
        if grouped:
            if node.where != heading:
                # the text of a line is quoted once; a following block from the same line names only its part
                same_line = heading is not None and _location(heading) == _location(node.where)
                heading = node.where
                lines.append(f"    # {_short(heading) if same_line else _quoted(heading)}")
            lines.append(f"    {code}")
        else:
            lines.append(f"    {code:<{COMMENT_COLUMN - 4}}  # {_short(node.where)}")
        line_nodes[len(lines) + 1] = node  # +1 for the def line (lines count from 1)

    results = []
    for o in program.outputs:
        if not isinstance(o, Symbol):
            literal = constants.literal(o)
            # an array is kept in the namespace: each call gets a copy, as it would get a new array from f
            if isinstance(o, np.ndarray):
                literal = f"{literal}.copy()" if o.ndim else f"np.array({literal})"
            results.append(literal)
        elif plan.shares_caller_memory(o):
            results.append(f"{names[o]}.copy()")  # never hand back the caller's array or a constant
        else:
            results.append(names[o])
    params = ", ".join(names[n] for n in program.inputs)
    returned = ", ".join(results) + ("," if len(results) == 1 else "")
    source = "\n".join([f"def {name}({params}):", *lines, f"    return ({returned})"])
    return source, line_nodes, names, bindings, constants, namespace, name


def _short(where):
    """'model.py:12 (backward of exp)' from '/home/me/model.py:12 (backward of exp)'."""
    if not where:
        return "?"
    path, sep, rest = where.partition(":")
    return os.path.basename(path) + sep + rest


def _location(where):
    return (where or "").split(" ", 1)[0]


def _quoted(where):
    """'model.py:12 (backward of exp):  h = dg.exp(x)': a location with the text of its line."""
    match = re.match(r"^(.*):(\d+)(.*)$", where or "")
    if not match:
        return where or "?"
    path, number, rest = match.groups()
    text = linecache.getline(path, int(number)).strip()
    return f"{os.path.basename(path)}:{number}{rest}" + (f":  {text}" if text else "")


class _Naming:
    """Unique Python identifiers, never a keyword, a builtin or `np`."""

    def __init__(self):
        self.taken = set(keyword.kwlist) | set(dir(builtins)) | {"np"}

    def claim(self, wanted):
        base = re.sub(r"\W", "_", str(wanted)) or "x"
        if base[0].isdigit():
            base = "x" + base
        name = base
        if name in self.taken:
            name = base + "_"
        k = 2
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


class _Constants:
    """Renders values as Python literals; arrays (and anything without a literal) become named
    constants of the namespace: c1, c2, ..."""

    def __init__(self, naming, namespace):
        self.naming = naming
        self.namespace = namespace
        self.arrays = {}  # name -> value, in order of first use

    def literal(self, value):
        if isinstance(value, np.generic):  # first: np.float64 is also a float
            if isinstance(value, np.floating) and not np.isfinite(value):
                return f"np.{type(value).__name__}(float('{float(value)}'))"
            if isinstance(value, (np.bool_, np.number)):
                return repr(value)
        if value is None or value is Ellipsis or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float('{value}')"
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
            return self.literal(value[()])
        if isinstance(value, tuple):
            inner = ", ".join(self.literal(v) for v in value)
            return f"({inner}{',' if len(value) == 1 else ''})"
        if isinstance(value, list):
            return f"[{', '.join(self.literal(v) for v in value)}]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.literal(k)}: {self.literal(v)}" for k, v in value.items()) + "}"
        if isinstance(value, slice):
            return f"slice({self.literal(value.start)}, {self.literal(value.stop)}, {self.literal(value.step)})"
        if isinstance(value, np.dtype):
            return f"np.dtype({value.name!r})" if np.dtype(value.name) == value else f"np.dtype({value.str!r})"
        for existing, stored in self.arrays.items():
            if stored is value:
                return existing
        name = self.naming.claim(f"c{len(self.arrays) + 1}")
        self.arrays[name] = value
        self.namespace[name] = value
        return name


def _in_place_ufunc(node):
    forward = node.op.forward
    # elementwise ufuncs only: a generalized ufunc (matmul) writing over an input would make
    # NumPy copy that input first
    return (
        isinstance(forward, np.ufunc) and forward.signature is None and forward.nout == 1 and not node.attrs
        and forward.nin == len(node.inputs) and len(node._shape) > 0
    )


class _MemoryPlan:
    """Which buffer each elementwise node may overwrite, and after which node each name dies.

    `roots[v]`: the allocations whose memory value v may share (itself if fresh; the
    inputs' roots for a view or an op that may return its input; the caller's arrays,
    Variables and constants are roots too, never overwritten). `buffer[v]`: the allocation
    that is exactly v's array. A buffer may be overwritten at node i when no value sharing
    it is read after i.
    """

    def __init__(self, program):
        nodes = program.nodes
        end = len(nodes)
        last_use = {}
        for i, node in enumerate(nodes):
            for a in node.inputs or ():
                if isinstance(a, Symbol):
                    last_use[a] = i
        for o in program.symbol_outputs():
            last_use[o] = end
        self.roots = {}
        self.out_into = {}
        buffer = {}
        death = {}
        for i, node in enumerate(nodes):
            if node.op is None:
                roots = (node,)
            else:
                target = self._target(node, i, buffer, death) if _in_place_ufunc(node) else None
                if target is not None:
                    buffer[node] = buffer[target]
                    self.out_into[node] = target
                    roots = (buffer[target],)
                elif len(node._shape) > 0 and (isinstance(node.op.forward, np.ufunc) or node.op.name in FRESH_OPS):
                    buffer[node] = node
                    roots = (node,)
                else:
                    roots = tuple(dict.fromkeys(r for a in node.inputs if isinstance(a, Symbol) for r in self.roots[a]))
            self.roots[node] = roots
            for r in roots:
                death[r] = max(death.get(r, -1), last_use.get(node, i))
        self.dies_at = {}
        for node, i in last_use.items():
            if i < end:
                self.dies_at.setdefault(i, []).append(node)
        order = {node: k for k, node in enumerate(nodes)}
        for dying in self.dies_at.values():
            dying.sort(key=order.__getitem__)

    @staticmethod
    def _target(node, i, buffer, death):
        for a in node.inputs:
            if not isinstance(a, Symbol):
                continue
            b = buffer.get(a)
            if b is not None and death[b] == i and a._shape == node._shape and a._dtype == node._dtype:
                return a
        return None

    def shares_caller_memory(self, node):
        return any(r.op is None for r in self.roots[node])
