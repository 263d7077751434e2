"""Generated and exported code never runs data; dagrad's caches of generated code stay bounded
and are safe to share between threads.

Every string a user (or a checkpoint) controls is tried as an attack at every place it can
reach generated source: a dict key of the arguments, a keyword argument's name, a
`dg.Function` or `dg.defop` name, a `defop` attribute name, a source file's name, a
function's `__name__`/`__qualname__`, a placeholder's name, a static argument's `repr`.
Each goes through `dg.compile`, `Session.run` and `export` + importing the exported module.
The attack would create a marker file: it must never appear, and the results must be the
eager ones. Names that look alike after Unicode normalisation, or equal a builtin, a
keyword, `np` or a name of dagrad's own (`c1`, `t3`), must neither collide nor shadow.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import io
import linecache
import sys
import threading
import tokenize

import numpy as np
import pytest

import dagrad as dg
from dagrad.compile import trace as trace_module
from dagrad.compile.cache import LRUCache
from dagrad.compile.codegen import FILENAME_PREFIX
from dagrad.compile.export import ExportError
from dagrad.static import session as session_module

# ---------------------------------------------------------------- the attacks


def _payloads(marker):
    """Strings that would create `marker` if they were spliced into source, each ending what it
    would be spliced into in another way."""
    p = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    q = p.replace("'", '"')
    return {
        "triple quotes": f'w"""; {q}; """',
        "single triple quotes": f"w'''; {p}; '''",
        "newline": f"w\n{p}\n#",
        "carriage return": f"w\r{p}\r#",
        "crlf": f"w\r\n{p}\r\n#",
        "nul": f"w\x00\n{p}\n#",
        "backslash newline": f"w\\\n{p}\n#",
        "hash": f"w#\n{p}",
        "unicode line separators": f"w\u2028{p}\u2029#\x85",
        "vertical tab and form feed": f"w\x0b\x0c\x1c{p}\n",
        "string end": f"w'); {p}; ('",
        "double string end": f'w"); {q}; ("',
        "def line": f"w=1): pass\n{p}\ndef g(x",
        "escaped quote": f"w\\'); {p}; #",
    }


KINDS = list(_payloads("M"))


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists(), "a string reaching generated code was executed"


def _attack(marker, kind):
    return _payloads(marker)[kind]


def _inert(source):
    """The source is valid Python whose every name is a plain ASCII identifier and which calls no
    `__import__`: the attacks survive only in comments and string literals."""
    tree = ast.parse(source)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME:
            assert token.string.isascii() and token.string.isidentifier(), token
            assert token.string != "__import__", token
    for node in ast.walk(tree):
        assert not (isinstance(node, ast.Attribute) and node.attr == "touch"), ast.unparse(node)
    return source


def _load(path):
    _inert(path.read_text(encoding="utf-8"))
    spec = importlib.util.spec_from_file_location("exported", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _session_sources(sess):
    return [generated.source for generated, *_ in sess._code.values()]


def _same(got, expected):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    assert np.asarray(got).dtype == np.asarray(expected).dtype


X = np.array([0.5, -1.0, 2.0])


# ---------------------------------------------------------------- dict keys and keyword names


@pytest.mark.parametrize("kind", KINDS)
def test_a_dict_key_of_the_arguments(kind, marker, tmp_path):
    key = _attack(marker, kind)
    params = {key: np.array([1.0, 2.0, 3.0]), "b": np.ones(3)}

    def f(params, x):
        return dg.sum(params[key] * x + params["b"]), params[key] * 2.0

    fast = dg.compile(f)
    expected = f(params, X)
    for got, e in zip(fast(params, X), expected):
        _same(got, e)
    _inert(fast.source(params, X))
    module = _load(fast.export(tmp_path / "exported.py", params, X))
    for got, e in zip(module.f(params, X), expected):
        _same(got, e)


@pytest.mark.parametrize("kind", KINDS)
def test_a_keyword_argument_name(kind, marker, tmp_path):
    key = _attack(marker, kind)

    def f(x, **options):
        return x * options[key] + options["shift"]

    fast = dg.compile(f)
    kwargs = {key: np.full(3, 2.0), "shift": np.ones(3)}
    _same(fast(X, **kwargs), f(X, **kwargs))
    _inert(fast.source(X, **kwargs))
    module = _load(fast.export(tmp_path / "exported.py", X, **kwargs))
    _same(module.f(X, **kwargs), f(X, **kwargs))
    with pytest.raises(TypeError, match="keyword arguments"):
        module.f(X, shift=np.ones(3))  # the odd key is still required


def test_plain_keyword_arguments_stay_keyword_parameters(tmp_path):
    def f(x, *, input, scale=1.0):  # noqa: A002  (a builtin's name, as PyTorch's `input`)
        return x * input * scale

    fast = dg.compile(f)
    source = fast.export(tmp_path / "exported.py", X, input=np.ones(3), scale=2.0).read_text()
    assert "def f(x, *, input, scale):" in source
    module = _load(tmp_path / "exported.py")
    _same(module.f(X, input=np.ones(3), scale=2.0), X * 2.0)
    _same(module.f(X, input=np.ones(3), scale=3.0), X * 3.0)  # a Python float is traced
    with pytest.raises(ValueError, match="scale: expected a Python float"):
        module.f(X, input=np.ones(3), scale=3)
    # a static one is checked against the value traced
    static = dg.compile(f, static_argnames="scale")
    static.export(tmp_path / "static.py", X, input=np.ones(3), scale=2.0)
    with pytest.raises(ValueError, match="scale must be 2.0"):
        _load(tmp_path / "static.py").f(X, input=np.ones(3), scale=3.0)


# ---------------------------------------------------------------- names of functions, ops and files


def _cube_class(name):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g

    return type(name, (dg.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "nul"])  # Python refuses a NUL in a class name
def test_a_function_name_in_compiled_gradients_and_sessions(kind, marker):
    cube = _cube_class(_attack(marker, kind))

    def loss(x):
        return dg.sum(cube.apply(x) * 2.0)

    fast = dg.compile(dg.grad(loss))
    _same(fast(X), dg.grad(loss)(X))
    source = _inert(fast.source(X))
    assert "(backward of " in source  # the name is there, escaped, in a comment

    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        (dx,) = dg.gradients(loss(x), [x])
    sess = dg.Session(g)
    _same(sess.run(dx, {x: X}), 6 * X ** 2)
    for source in _session_sources(sess):
        _inert(source)


@pytest.fixture
def defop():
    """dg.defop for the test only: the ops it declares leave the registry afterwards."""
    declared = []

    def declare(name, forward, **rules):
        op = dg.defop(name, forward, **rules)
        declared.append(name)
        return op

    yield declare
    for name in declared:
        dg.REGISTRY.pop(name, None)


def _total(factors):
    return sum(v for v in factors.values() if not isinstance(v, str))  # a string attribute is a label


def scale_forward(x, **factors):
    return x * _total(factors)


def _scale_op(defop, name):
    return defop(name, scale_forward, shape=lambda s, **factors: s,
                 vjp=(lambda g, out, x, **factors: g * _total(factors),),
                 jvp=(lambda t, out, x, **factors: t * _total(factors),))


@pytest.mark.parametrize("kind", KINDS)
def test_a_defop_name_and_attribute_names(kind, marker, defop, tmp_path):
    attack = _attack(marker, kind)
    op = _scale_op(defop, attack)
    # an attribute named by the attack, a keyword (not `lambda=0.5`), a plain one, and the attack as a value
    factors = {attack: 2.0, "lambda": 0.5, "plain": 1.0, "label": attack}

    def f(x):
        return dg.sum(op.function(x, **factors) * x)

    fast = dg.compile(f)
    _same(fast(X), f(X))
    source = _inert(fast.source(X))
    assert "plain=1.0" in source and "**{" in source
    gradient = dg.compile(dg.grad(f))
    _same(gradient(X), dg.grad(f)(X))
    _inert(gradient.source(X))
    module = _load(fast.export(tmp_path / "exported.py", X))
    _same(module.f(X), f(X))

    with dg.Graph() as g:
        x = dg.placeholder((None,), name=attack)
        y = f(x)
        (dx,) = dg.gradients(y, [x])
    sess = dg.Session(g)
    got = sess.run([y, dx], {attack: X})
    _same(got[0], f(X))
    _same(got[1], dg.grad(f)(X))
    for source in _session_sources(sess):
        _inert(source)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "nul"])  # compile() refuses a NUL in a file name
def test_a_source_file_name(kind, marker, tmp_path):
    code = (
        "import dagrad as dg\n"
        "def f(x):\n"
        "    return dg.sum(dg.exp(x) * 2.0)\n"
        "def build(x):\n"
        "    return dg.gradients(f(x), [x])[0]\n"
    )
    namespace = {}
    exec(compile(code, _attack(marker, kind), "exec"), namespace)  # noqa: S102  (the test's own code)
    f = namespace["f"]
    fast = dg.compile(dg.value_and_grad(f))
    value, grad = fast(X)
    _same(value, f(X))
    _same(grad, 2.0 * np.exp(X))
    _inert(fast.source(X))
    module = _load(dg.compile(f).export(tmp_path / "exported.py", X))
    _same(module.f(X), f(X))

    with dg.Graph() as g:
        x = dg.placeholder((3,), name="x")
        dx = namespace["build"](x)
    sess = dg.Session(g)
    _same(sess.run(dx, {x: X}), 2.0 * np.exp(X))
    for source in _session_sources(sess):
        _inert(source)


@pytest.mark.parametrize("kind", KINDS)
def test_a_function_name_and_qualname(kind, marker, tmp_path):
    def f(x):
        return dg.tanh(x) * 3.0

    f.__name__ = f.__qualname__ = _attack(marker, kind)
    fast = dg.compile(f)
    _same(fast(X), f(X))
    _inert(fast.source(X))
    module = _load(fast.export(tmp_path / "exported.py", X))
    _same(getattr(module, module.__all__[0])(X), f(X))


# ---------------------------------------------------------------- values that are not literals


class _Sneaky:
    """A static argument whose repr is code."""

    def __init__(self, marker):
        self.marker = marker

    def __repr__(self):
        return f"__import__('pathlib').Path({str(self.marker)!r}).touch()"

    def __hash__(self):
        return 7

    def __eq__(self, other):
        return isinstance(other, _Sneaky)


class _SneakyFloat(float):
    def __repr__(self):
        return "__import__('os').getcwd() and 2.0"


def test_a_static_argument_with_a_custom_repr_is_not_exported(marker, tmp_path):
    def f(x, option):
        return x * 2.0

    fast = dg.compile(f)
    _same(fast(X, _Sneaky(marker)), X * 2.0)
    with pytest.raises(ExportError, match="static argument"):
        fast.export(tmp_path / "exported.py", X, _Sneaky(marker))
    assert not (tmp_path / "exported.py").exists()


def test_a_dict_key_with_a_custom_repr_is_not_exported(marker, tmp_path):
    key = _Sneaky(marker)
    params = {key: np.ones(3)}

    def f(params):
        return params[key] * 2.0

    fast = dg.compile(f)
    _same(fast(params), np.full(3, 2.0))
    _inert(fast.source(params))
    with pytest.raises(ExportError, match="dict key"):
        fast.export(tmp_path / "exported.py", params)


def test_an_attribute_of_a_subclass_of_float_is_a_named_constant(defop, tmp_path):
    op = _scale_op(defop, "scale_sneaky")

    def f(x):
        return op.function(x, factor=_SneakyFloat(2.0))

    fast = dg.compile(f)
    source = _inert(fast.source(X))
    assert "getcwd" not in source and "factor=c1" in source  # the object itself, from the namespace
    _same(fast(X), X * 2.0)
    with pytest.raises(ExportError, match="_SneakyFloat"):
        fast.export(tmp_path / "exported.py", X)


# ---------------------------------------------------------------- names that look alike or are taken


NAMES = ["c1", "ｃ1", "np", "ｎｐ", "x", "ｘ", "t3", "t1", "sum", "lambda", "class", "__builtins__", "__import__",
         "_checked", "_f", "f", "run", "kwargs", "x_", "1x", "", "_", "ℌ", "ﬁ", "日本"]


def _weighted(inputs, table):
    total = 0.0
    for i, value in enumerate(inputs):
        total = total + (i + 1.5) * value * table  # a different weight per input: a swap would show
    return total


def test_lookalike_and_reserved_names_in_compiled_and_exported_code(tmp_path):
    rng = np.random.default_rng(0)
    params = {name: rng.standard_normal(3) for name in NAMES}
    table = np.array([0.25, 3.0, -1.5])  # a captured array: the constant c1 of the generated code

    def f(params):
        return _weighted(list(params.values()), table) + dg.sum(params["ｃ1"])

    expected = f(params)
    fast = dg.compile(f)
    _same(fast(params), expected)
    source = _inert(fast.source(params))
    params_line = source.splitlines()[0]
    assert "c1," not in params_line.replace("params_c1", "")  # the constant's name is not a parameter's
    module = _load(fast.export(tmp_path / "exported.py", params))
    _same(module.f(params), expected)


def test_lookalike_and_reserved_placeholder_names_in_a_session():
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(3) for _ in NAMES]
    table = np.array([0.25, 3.0, -1.5])
    with dg.Graph() as g:
        placeholders = [dg.placeholder((3,), name=name or None) for name in NAMES]
        c = dg.constant(table, name="ｃ1")
        y = _weighted(placeholders, c)
    sess = dg.Session(g)
    _same(sess.run(y, dict(zip(placeholders, values))), _weighted(values, table))
    for source in _session_sources(sess):
        _inert(source)


def test_the_lookalike_of_a_constant_does_not_shadow_it():
    # a placeholder named "ｃ1" once became the parameter `ｃ1`, which Python reads as `c1`: the
    # name of the first constant, silently replaced by the fed value
    with dg.Graph() as g:
        x = dg.placeholder((2,), name="ｃ1")
        y = x + np.array([10.0, 20.0])
    assert dg.Session(g).run(y, {x: np.array([1.0, 2.0])}).tolist() == [11.0, 22.0]


def test_generated_names_are_plain_and_readable():
    def f(x, weights):
        return dg.sum(x * weights["layer 1"] + weights["b"])

    source = dg.compile(f).source(X, {"layer 1": X, "b": X})
    assert source.splitlines()[0] == "def f(x, weights_layer_1, weights_b):"


# ---------------------------------------------------------------- caches: bounded, released, thread-safe


def _generated_entries():
    gc.collect()
    return sum(1 for name in list(linecache.cache) if name.startswith(FILENAME_PREFIX))


def test_compiled_signatures_are_bounded_and_their_source_is_released(monkeypatch):
    monkeypatch.setattr(trace_module, "CACHE_SIZE", 8)
    before = _generated_entries()
    fast = dg.compile(lambda x: dg.exp(x) * 2.0)
    for n in range(1, 41):
        _same(fast(np.ones(n)), np.exp(np.ones(n)) * 2.0)
    assert len(fast._cache) == 8
    assert _generated_entries() - before <= 8  # one linecache entry per live generated function
    del fast
    assert _generated_entries() <= before


def test_evicted_code_is_freed_at_once_and_its_file_name_used_again(monkeypatch):
    # CPython keeps every file name it compiled for good: a long loop over new shapes must not make
    # new ones. An evicted function dies by reference counting (no cycle through its globals), so
    # its number is free again before the next trace, without waiting for the garbage collector.
    monkeypatch.setattr(trace_module, "CACHE_SIZE", 2)

    def doubled_exp(x):
        return dg.exp(x) * 2.0

    fast = dg.compile(doubled_exp)
    gc.disable()
    try:
        names = set()
        for n in range(1, 31):
            fast(np.ones(n))
            names.update(name for name in linecache.cache if name.startswith(FILENAME_PREFIX + "doubled_exp "))
    finally:
        gc.enable()
    assert 2 <= len(names) <= 3, sorted(names)


def test_session_code_and_fetch_sets_are_bounded(monkeypatch):
    monkeypatch.setattr(session_module, "CACHE_SIZE", 8)
    monkeypatch.setattr(session_module, "FETCH_SETS", 4)
    before = _generated_entries()
    with dg.Graph() as g:
        x = dg.placeholder((None,), name="x")
        outputs = [dg.sum(dg.exp(x) * float(k)) for k in range(1, 11)]
    sess = dg.Session(g)
    for n in range(1, 41):  # a new batch size each run
        assert sess.run(outputs[0], {x: np.ones(n)}) == pytest.approx(n * np.e)
    for k, out in enumerate(outputs, 1):  # a new fetch set each run
        assert sess.run(out, {x: np.ones(2)}) == pytest.approx(2 * np.e * k)
    assert len(sess._code) == 8 and len(sess._fetch_sets) == 4
    assert _generated_entries() - before <= 8
    del sess
    assert _generated_entries() <= before


@pytest.fixture
def busy_threads():
    """Threads switching as often as Python allows, so that unlocked cache updates would collide."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _in_threads(work, count=8):
    errors = []

    def run(k):
        try:
            work(k)
        except Exception as err:  # every error counts, whatever it is
            errors.append(err)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_the_cache_of_generated_code_is_safe_under_threads(busy_threads):
    # an unlocked dict with the same eviction (del d[next(iter(d))]) raised KeyError here within
    # these 160,000 operations
    cache = LRUCache(8)
    wrong = []

    def work(k):
        for i in range(20_000):
            key = (i * 7 + k) % 50
            value = cache.get(key)
            if value is None:
                value = cache.put(key, key * 3)
            if value != key * 3:
                wrong.append((key, value))

    assert _in_threads(work) == [] and wrong == []
    assert len(cache) == 8


def test_threads_share_a_compiled_function_whose_cache_evicts(monkeypatch, busy_threads):
    monkeypatch.setattr(trace_module, "CACHE_SIZE", 3)  # 6 shapes: entries are evicted all the time
    fast = dg.compile(lambda x: dg.tanh(x) * 2.0 + 1.0)
    wrong = []

    def work(k):
        rng = np.random.default_rng(k)
        for i in range(150):
            x = rng.standard_normal(1 + (i + k) % 6)
            if not np.array_equal(fast(x), np.tanh(x) * 2.0 + 1.0):
                wrong.append((k, i))

    assert _in_threads(work) == [] and wrong == []
    assert len(fast._cache) <= 3


def test_threads_share_a_session_whose_cache_evicts(monkeypatch, busy_threads):
    monkeypatch.setattr(session_module, "CACHE_SIZE", 3)
    monkeypatch.setattr(session_module, "FETCH_SETS", 2)
    with dg.Graph() as g:
        x = dg.placeholder((None,), name="x")
        fetches = [dg.tanh(x) * 2.0, dg.sum(x * x), dg.exp(x) - 1.0]
    sess = dg.Session(g)
    expected = [lambda v: np.tanh(v) * 2.0, lambda v: np.sum(v * v), lambda v: np.exp(v) - 1.0]
    wrong = []

    def work(k):
        rng = np.random.default_rng(k)
        for i in range(100):
            x_value = rng.standard_normal(1 + (i + k) % 4)
            j = (i * 7 + k) % 3
            if not np.array_equal(sess.run(fetches[j], {x: x_value}), expected[j](x_value)):
                wrong.append((k, i))

    assert _in_threads(work) == [] and wrong == []
    assert len(sess._code) <= 3 and len(sess._fetch_sets) <= 2
