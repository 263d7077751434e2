"""The layers of ../shared/DESIGN.md, checked on the source: a module imports only from its own
layer or below, never in a loop, and never from inside a function to dodge one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "dagrad"

# (module name prefix, layer), the most specific prefix wins
LAYERS = [
    ("dagrad._core", 0), ("dagrad._version", 0),
    ("dagrad.ops", 1),
    ("dagrad.transforms", 2), ("dagrad.control", 2), ("dagrad.remat", 2), ("dagrad.lax", 3), ("dagrad.compile", 2),
    ("dagrad.static", 3), ("dagrad.numpy", 3), ("dagrad.numpy.fft", 3), ("dagrad.numpy_more", 3),
    ("dagrad.scipy", 3), ("dagrad.scipy.special", 3), ("dagrad.scipy.stats", 3), ("dagrad.scipy.linalg", 3),
    ("dagrad.scipy.signal", 3), ("dagrad.scipy.integrate", 3), ("dagrad.linalg", 3),
    ("dagrad.function", 3), ("dagrad.custom", 3),
    ("dagrad.check", 3), ("dagrad.viz", 3), ("dagrad._methods", 3), ("dagrad._inplace", 3), ("dagrad.autograd", 3),
    ("dagrad.factories", 3), ("dagrad.torch_names", 3), ("dagrad.differential", 3),
    ("dagrad.cuda", 3), ("dagrad.tree_util", 3), ("dagrad.tree", 3), ("dagrad.random", 3),  # torch's and JAX's names
    # HIPS autograd's module names (issue 16): thin layers over the modules above
    ("dagrad.vspace", 3), ("dagrad.wrap_util", 3), ("dagrad.test_util", 3), ("dagrad.builtins", 3),
    ("dagrad.tracer", 3), ("dagrad.core", 3), ("dagrad.extend", 3), ("dagrad.misc", 3), ("dagrad.util", 3),
    ("dagrad.nn", 4), ("dagrad.nn.recurrent", 4), ("dagrad.nn.attention", 4), ("dagrad.nn.transformer", 4),
    ("dagrad.optim", 4), ("dagrad.io", 4), ("dagrad.data", 4), ("dagrad.utils", 4),
    ("dagrad.compat", 4),  # other libraries' namespaces (TF1's tf) over static graphs, nn and optim
    ("dagrad.demo", 5), ("dagrad.demo_text", 5), ("dagrad.__main__", 5),  # applications of the whole library
    ("dagrad", 5),  # the package's face: it re-exports everything
]
# Function-level imports that do not dodge a cycle: the command line loads the demo only when asked
LAZY_OK = {"dagrad.__main__", "dagrad.demo"}


def _layer(module):
    for prefix, layer in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise AssertionError(f"{module} has no layer: add it to LAYERS")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _imports(name, path):
    """(imported module, line, at module level) for every import of a dagrad module in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("dagrad"):
                continue
            folder = SRC / target.replace(".", "/")
            submodules = {f"{target}.{a.name}" for a in node.names
                          if (folder / f"{a.name}.py").exists() or (folder / a.name / "__init__.py").exists()}
            # `from . import numpy` imports the module dagrad.numpy; `from . import x` of a name, the package
            modules = submodules if len(submodules) == len(node.names) else submodules | {target}
            for m in modules:
                found.append((m, node.lineno, id(node) in top))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("dagrad"):
                    found.append((alias.name, node.lineno, id(node) in top))
    return found


MODULES = dict(_modules())
IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def test_every_module_has_a_layer():
    for name in MODULES:
        _layer(name)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_upward_and_no_function_level_imports(name):
    for target, line, at_top in IMPORTS[name]:
        where = f"{MODULES[name].relative_to(SRC)}:{line}"
        if target == "dagrad" and _layer(name) < 5:
            raise AssertionError(f"{where}: imports the package's face `dagrad`; import the module itself")
        if _layer(target) > _layer(name):
            raise AssertionError(f"{where}: {name} (layer {_layer(name)}) imports {target} (layer {_layer(target)})")
        if not at_top and name not in LAZY_OK:
            raise AssertionError(f"{where}: a function-level import of {target}; import it at the top")


def test_no_import_cycles():
    graph = {name: sorted({t for t, _, _ in IMPORTS[name] if t in MODULES and t != name}) for name in MODULES}
    # a package's __init__ importing its own submodules is how a package is made, not a cycle
    def edges(name):
        return [t for t in graph[name] if not t.startswith(name + ".")]

    state, path = {}, []

    def visit(name):
        state[name] = "open"
        path.append(name)
        for t in edges(name):
            if state.get(t) == "open":
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t)
        path.pop()
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name)


# ---------------------------------------------------------------- ops by identity, not by name

def _op_names():
    import dagrad  # noqa: F401  (declares every op)
    from dagrad._core.op import REGISTRY

    return set(REGISTRY)


def _named_ops(tree, names):
    """(line, name) where code picks an op by its name: REGISTRY["x"], op.name == "x", op.name in ("x", ...)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "REGISTRY":
            key = node.slice
            if isinstance(key, ast.Constant) and key.value in names:
                found.append((node.lineno, key.value))
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "name":
            for comparator in node.comparators:
                values = comparator.elts if isinstance(comparator, (ast.Tuple, ast.List, ast.Set)) else [comparator]
                found += [(node.lineno, v.value) for v in values if isinstance(v, ast.Constant) and v.value in names]
    return found


def test_ops_are_named_by_identity_outside_their_declarations():
    names = _op_names()
    places = set()
    for path in MODULES.values():
        for line, op in _named_ops(ast.parse(path.read_text(encoding="utf-8")), names):
            places.add((str(path.relative_to(SRC)), op, line))
    assert not places, sorted(places)


# ---------------------------------------------------------------- no module writes into another


BINDER = "dagrad._methods"  # the one module that attaches methods to the core's classes


def _writes_into_imports(tree):
    """(line, target) for each assignment to an attribute of an imported name (`tensor._backward = f`,
    `Tensor.method = f`), at any depth of the module."""
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            base = target
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(target, ast.Attribute) and isinstance(base, ast.Name) and base.id in imported:
                found.append((node.lineno, ast.unparse(target)))
    return found


@pytest.mark.parametrize("name", sorted(set(MODULES) - {BINDER}))
def test_no_module_writes_into_another(name):
    found = _writes_into_imports(ast.parse(MODULES[name].read_text(encoding="utf-8")))
    assert not found, [f"{MODULES[name].relative_to(SRC)}:{line}: {target}" for line, target in found]
