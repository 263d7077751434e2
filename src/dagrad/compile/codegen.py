"""Code generation: a Program becomes the source of one Python function over NumPy.

One line per node (`t7 = tanh(t6, out=t6)  # model.py:12`), each name deleted after its
last use, and a memory plan: an elementwise NumPy ufunc writes its result into the buffer
of an input that dies at that node (same shape and dtype), so a chain of elementwise ops
reuses one buffer instead of allocating one per op. A buffer is reused only if the
generated code allocated it (never a caller's array, a Variable or a constant) and no
live value shares its memory (views are tracked).

Generated source never holds a user's string verbatim (the names of placeholders, ops,
dict keys and files may come from untrusted data, such as a checkpoint's keys): every
identifier comes from one naming table (`_Naming`: NFKC-normalised, plain ASCII, never a
keyword, builtin, `np` or dunder name, unique), every value is a literal dagrad writes
itself for a few known types (`literal`) or a named constant of the namespace, and any
other text appears only in a `#` comment, escaped by `comment`.
"""

from __future__ import annotations

import builtins
import itertools
import keyword
import linecache
import math
import os
import re
import unicodedata
import weakref

import numpy as np

from .._core.errors import GENERATED_PREFIX, printable, short_location
from .._core.ir import Symbol, WeakScalar
from .interpret import POWER, PYTHON_POWER, python_arithmetic

COMMENT_COLUMN = 56
MAX_IDENTIFIER = 40  # a longer name (a user's dict key may be any text) is cut: names stay readable
FILENAME_PREFIX = GENERATED_PREFIX  # the file name of generated code, in tracebacks and linecache

_counter = itertools.count(1)
# Numbers of generated files whose function was collected, the latest used again first: CPython
# keeps every file name it has compiled alive for good (~80 bytes each), so a new number per trace
# would grow memory without bound over a long loop of new shapes (benchmark (f) measures it).
_free_numbers = []


def _file_number():
    try:
        return _free_numbers.pop()
    except IndexError:
        return next(_counter)


def _release(filename, number):
    linecache.cache.pop(filename, None)
    _free_numbers.append(number)


class Generated:
    """The generated function, its source and its namespace, and which node each line computes."""

    def __init__(self, source, namespace, function, line_nodes, bindings, constants):
        self.source = source
        self.namespace = namespace
        self.function = function
        self.line_nodes = line_nodes  # line number in `source` -> node
        self.bindings = bindings  # op -> the name its forward has in the source
        self.constants = constants  # name -> array, for the arrays the source names


def generate(program, name="f", grouped=False, reserved=(), reuse_buffers=True):
    """Writes `program` as a Python function `name(*inputs)` returning a tuple of the outputs.

    Each line ends with a comment naming the user's line that built the node; with `grouped`,
    consecutive lines from one user line are headed instead by one comment quoting that line.
    No name in the source is one of `reserved`. Without `reuse_buffers` no line writes into an
    array (`out=`): the code for lazy arrays (Dask), which have no buffers to write into. The
    source is registered with `linecache` (tracebacks show its lines) for as long as the function lives.
    """
    source, line_nodes, bindings, constants, namespace, name = _write(program, name, grouped, reserved,
                                                                      reuse_buffers)
    number = _file_number()
    filename = f"{FILENAME_PREFIX}{name} #{number}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # the source is dagrad's own: identifiers from _Naming, values from `literal` or named constants
    # of `namespace`, a user's text only escaped in comments (tests/test_security.py tries each way in)
    code = compile(source, filename, "exec")
    exec(code, namespace)  # nosec B102  # runs only the source written above
    function = namespace.pop(name)  # not left in its own globals: without that cycle it dies by refcount, at once
    function.__dagrad_filename__ = filename
    weakref.finalize(function, _release, filename, number)  # the entry and the number go with the function
    return Generated(source, namespace, function, line_nodes, bindings, constants.arrays)


def _write(program, name, grouped, reserved, reuse_buffers):
    naming = _Naming(reserved)
    name = naming.claim(name)  # before the ops: a function called like an op it calls would call itself
    names = {node: naming.claim(node.name or "x") for node in program.inputs}
    writer = _Writer(naming, grouped, reuse_buffers)
    writer.bind(program.nodes)
    constants = writer.constants
    block, plan = writer.block(program, names, keep_inputs=False)
    lines = []
    line_nodes = {}
    for text, node in block:
        lines.append(f"    {text}")
        if node is not None:
            line_nodes[len(lines) + 1] = node  # +1 for the def line (lines count from 1)

    results = []
    for o in program.outputs:
        if not isinstance(o, Symbol):
            literal = constants.literal(o)
            # an array is kept in the namespace: each call gets a copy, as it would get a new array from f
            if isinstance(o, np.ndarray):
                literal = f"{literal}.copy()" if o.ndim else f"np.array({literal})"
            results.append(literal)
        elif plan.shares_caller_memory(o) and not isinstance(o, WeakScalar):  # (a Python number: immutable)
            results.append(f"{names[o]}.copy()")  # never hand back the caller's array or a constant
        else:
            results.append(names[o])
    params = ", ".join(names[n] for n in program.inputs)
    returned = ", ".join(results) + ("," if len(results) == 1 else "")
    source = "\n".join([f"def {name}({params}):", *lines, f"    return ({returned})"])
    return source, line_nodes, writer.bindings, constants, writer.namespace, name


class _Writer:
    """Writes nodes as lines of code, for a function and for the bodies that control-flow nodes hold
    (an op's `emit` hook gets the writer): one naming table, one namespace of op forwards and constants."""

    def __init__(self, naming, grouped, reuse_buffers=True):
        self.naming = naming
        self.grouped = grouped
        self.reuse_buffers = reuse_buffers  # whether ufuncs may write into dead buffers (`out=`)
        self.bindings = {}  # op -> the name its forward has in the source
        self.namespace = {"np": np}
        self.constants = _Constants(naming, self.namespace)

    def bind(self, nodes):
        """Names the forwards of the ops of `nodes` and of the bodies they hold."""
        for node in nodes:
            op = node.op
            if op is None:
                continue
            for key in op.bodies or ():
                self.bind(node.attrs[key].nodes)
            if op.emit is None and not python_arithmetic(node):  # (Python's operators need no binding)
                self.binding(op)

    def binding(self, op):
        """The name `op`'s forward has in the source (bound on first use)."""
        if op not in self.bindings:
            self.bindings[op] = self.naming.claim(op.name)
            self.namespace[self.bindings[op]] = op.forward
        return self.bindings[op]

    def name(self, wanted):
        """A new identifier from the naming table."""
        return self.naming.claim(wanted)

    def literal(self, value):
        """Source for a value: a literal, or a named constant."""
        return self.constants.literal(value)

    def block(self, program, names, keep_inputs=True):
        """The lines computing `program`'s nodes (something with `nodes`, `inputs` and `outputs`) from `names`
        {input node: its name or source}, as [(text, node)], unindented; and the memory plan. A body's
        inputs (`keep_inputs`) are never deleted: a loop reads them again."""
        nodes = program.nodes
        for i, node in enumerate(nodes):
            if node.kind == "constant":
                names[node] = self.constants.literal(node._data)
            elif node.op is not None:
                names[node] = self.naming.claim(f"t{i}")
        plan = _MemoryPlan(program, self.reuse_buffers)
        lines = []
        heading = None
        for i, node in enumerate(nodes):
            if node.op is None:
                continue
            args = [names[a] if isinstance(a, Symbol) else self.constants.literal(a) for a in node.inputs]
            dead = [names[d] for d in plan.dies_at.get(i, ())
                    if d.kind != "constant" and not (keep_inputs and d.op is None)]
            if node.op.emit is not None:
                code = [line if isinstance(line, tuple) else (line, node)
                        for line in node.op.emit(self, node, args, names[node])]
                if dead:
                    code.append((f"del {', '.join(dead)}", node))
            elif python_arithmetic(node):  # Python's operator on Python numbers, as eager code computes it
                template = python_arithmetic(node)[1]
                if node.op is POWER:  # its type depends on the values: python_power checks it
                    template = template.replace("{power}", self.binding(PYTHON_POWER))
                text = f"{names[node]} = {template.format(*args)}"
                code = [(text + (f"; del {', '.join(dead)}" if dead else ""), node)]
            else:
                args += _keyword_arguments(node.attrs or {}, self.constants)
                target = plan.out_into.get(node)
                if target is not None:
                    args.append(f"out={names[target]}")
                text = f"{names[node]} = {self.bindings[node.op]}({', '.join(args)})"
                if dead:
                    text += f"; del {', '.join(dead)}"
                code = [(text, node)]
            if self.grouped:
                if node.where != heading:
                    # the text of a line is quoted once; a following block from the same line names only its part
                    same_line = heading is not None and _location(heading) == _location(node.where)
                    heading = node.where
                    lines.append((f"# {printable(_short(heading) if same_line else _quoted(heading))}", None))
                lines += code
            else:
                first, owner = code[0]
                lines.append((f"{first:<{COMMENT_COLUMN - 4}}  # {printable(_short(node.where))}", owner))
                lines += code[1:]
        return lines, plan


def _keyword_arguments(attrs, constants):
    """`key=value` for each attribute; a key that is not a plain identifier (an op declared with
    any string as an attribute name) is passed as `**{'key': value}`, its name a string literal."""
    plain, other = [], []
    for key, value in attrs.items():
        if type(key) is str and key.isascii() and key.isidentifier() and not keyword.iskeyword(key):
            plain.append(f"{key}={constants.literal(value)}")
        else:
            other.append(f"{constants.literal(key)}: {constants.literal(value)}")
    return plain + ([f"**{{{', '.join(other)}}}"] if other else [])


def _short(where):
    return short_location(where) or "?"


def _location(where):
    return (where or "").split(" ", 1)[0]


def _quoted(where):
    """'model.py:12 (backward of exp):  h = dg.exp(x)': a location with the text of its line."""
    match = re.match(r"^(.*):(\d+)(.*)$", where or "", re.DOTALL)
    if not match:
        return where or "?"
    path, number, rest = match.groups()
    text = linecache.getline(path, int(number)).strip()
    return f"{os.path.basename(path)}:{number}{rest}" + (f":  {text}" if text else "")


# names a generated identifier never takes: the code reads them (builtins, np), Python reserves them
_FORBIDDEN = frozenset(keyword.kwlist) | {"np"}
_BUILTINS = frozenset(dir(builtins))


def identifier(wanted):
    """A plain ASCII identifier readable as `wanted`: NFKC-normalised as Python normalises names
    (so 'ｃ1' is 'c1', never a second spelling of it), each run of other characters one '_',
    never a leading digit or a dunder name. Not yet unique: `_Naming.claim` makes it so.

    >>> identifier("ｃ1"), identifier('w"; import os'), identifier("1st"), identifier("__class__")
    ('c1', 'w_import_os', 'x1st', 'class')
    """
    text = unicodedata.normalize("NFKC", wanted if isinstance(wanted, str) else str(wanted))
    text = re.sub(r"^[^A-Za-z0-9_]+|[^A-Za-z0-9_]+$", "", text)  # e.g. the brackets of '<lambda>'
    name = re.sub(r"[^A-Za-z0-9_]+", "_", text)[:MAX_IDENTIFIER]
    if name.startswith("__") and name.endswith("__"):
        name = name.strip("_")
    return "x" + name if not name or name[0].isdigit() else name


class _Naming:
    """The one naming table of a generated function or module: every identifier the source
    binds comes from `claim`, unique, plain ASCII, never a keyword, a builtin, `np` or a dunder."""

    def __init__(self, reserved=()):
        self.taken = {*_FORBIDDEN, *reserved}

    def claim(self, wanted, builtin_ok=False):
        """A new identifier for `wanted`. `builtin_ok` allows a builtin's name (a parameter of a
        function whose body reads no builtin: a caller may pass it by keyword, as `input=`)."""
        base = identifier(wanted)
        name = base
        k = 1
        while name in self.taken or (not builtin_ok and name in _BUILTINS):
            name = f"{base}_" if k == 1 else f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


# NumPy scalar types written as `np.<name>(<Python literal>)`, exactly (not longdouble: its
# value has no exact Python literal); the type must be NumPy's own, found by that name
_SCALARS = {t: np.dtype(t).name for t in (np.dtype(c).type for c in "?bhilqBHILQefdFD")
            if getattr(np, np.dtype(t).name, None) is t}


def literal(value, other=None):
    """Python source for `value` when dagrad can write it itself, else `other(value)` (a value
    without a literal, e.g. an array, anywhere inside it), else None.

    Only exact built-in types (None, Ellipsis, bool, int, float, complex, str; tuples, lists,
    dicts and slices of them), NumPy's numeric scalars, 0-d numeric arrays and plain dtypes:
    never the `repr` of an arbitrary object (or of a subclass, whose `__repr__` could be anything).

    >>> literal((1, 2.5, "a")), literal(float("inf")), literal(np.float32(0.5)), literal(object())
    ("(1, 2.5, 'a')", "float('inf')", 'np.float32(0.5)', None)
    """
    kind = type(value)
    if value is None or value is Ellipsis or kind is bool or kind is int:
        return repr(value)
    if kind is str:
        return str.__repr__(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else f"float('{value}')"
    if kind is complex:
        if math.isfinite(value.real) and math.isfinite(value.imag):
            return repr(value)
        return f"complex({literal(value.real)}, {literal(value.imag)})"
    if kind in _SCALARS:
        return f"np.{_SCALARS[kind]}({literal(value.item())})"
    if kind is np.ndarray and value.ndim == 0 and value.dtype.kind in "biuf":
        return literal(value[()])
    if kind is tuple or kind is list or kind is dict or kind is slice:
        parts = [literal(v, other) for v in _parts(value)]
        if None in parts:
            return None
        if kind is list:
            return f"[{', '.join(parts)}]"
        if kind is tuple:
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        if kind is slice:
            return f"slice({', '.join(parts)})"
        return "{" + ", ".join(f"{k}: {v}" for k, v in zip(parts[::2], parts[1::2])) + "}"
    if isinstance(value, np.dtype) and value.names is None and value.subdtype is None:
        for text in (value.name, value.str):
            if type(text) is str and np.dtype(text) == value:
                return f"np.dtype({str.__repr__(text)})"
    return None if other is None else other(value)


def _parts(value):
    if type(value) is slice:
        return (value.start, value.stop, value.step)
    if type(value) is dict:
        return [part for item in value.items() for part in item]
    return value


class _Constants:
    """Renders values as Python literals (`literal`); arrays and anything else without one become
    named constants of the namespace: c1, c2, ..."""

    def __init__(self, naming, namespace):
        self.naming = naming
        self.namespace = namespace
        self.arrays = {}  # name -> value, in order of first use

    def literal(self, value):
        return literal(value, self._named)

    def _named(self, value):
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
    return (isinstance(forward, np.ufunc) and forward.signature is None and forward.nout == 1 and not node.attrs
            and forward.nin == len(node.inputs) and len(node._shape) > 0)


class _MemoryPlan:
    """Which buffer each elementwise node may overwrite, and after which node each name dies.

    `roots[v]`: the allocations whose memory value v may share (itself if fresh; the
    inputs' roots for a view or an op that may return its input; the caller's arrays,
    Variables and constants are roots too, never overwritten). `buffer[v]`: the allocation
    that is exactly v's array. A buffer may be overwritten at node i when no value sharing
    it is read after i.
    """

    def __init__(self, program, reuse_buffers=True):
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
                target = self._target(node, i, buffer, death) if reuse_buffers and _in_place_ufunc(node) else None
                if target is not None:
                    buffer[node] = buffer[target]
                    self.out_into[node] = target
                    roots = (buffer[target],)
                elif len(node._shape) > 0 and (isinstance(node.op.forward, np.ufunc) or node.op.fresh):
                    buffer[node] = node
                    roots = (node,)
                else:
                    roots = tuple(dict.fromkeys(r for a in node.inputs if isinstance(a, Symbol) for r in self.roots[a]))
            self.roots[node] = roots
            for r in roots:
                death[r] = max(death.get(r, -1), last_use.get(node, i))
        self.dies_at = {}  # node index -> the nodes last read there, in program order
        for node in nodes:
            if last_use.get(node, end) < end:
                self.dies_at.setdefault(last_use[node], []).append(node)

    @staticmethod
    def _target(node, i, buffer, death):
        for a in node.inputs:
            if isinstance(a, Symbol) and a in buffer and death[buffer[a]] == i and a._shape == node._shape \
                    and a._dtype == node._dtype:
                return a
        return None

    def shares_caller_memory(self, node):
        return any(r.op is None for r in self.roots[node])
