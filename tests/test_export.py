"""`Compiled.export`: standalone modules that need only NumPy and compute what dagrad does."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import dagrad as dg
from dagrad.compile.export import ExportError, _Definitions
from op_table import CASES, COMPOSITES
from test_static_ops import _ids, _unique

# odeint holds the user's Python function as an attribute: an exported module cannot hold it, and
# export says so (test_odeint_is_refused_by_export)
ROWS = [c for c in _unique(CASES + COMPOSITES) if c.op != "odeint"]


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(dg.REGISTRY))
def test_every_op_forward_has_a_standalone_definition(name):
    definitions = _Definitions()
    definitions.define("forward", dg.REGISTRY[name].forward, f"op {name}")
    namespace = {}
    exec("import numpy as np\n" + "\n".join(definitions.imports) + "\n" + definitions.source(), namespace)
    assert callable(namespace["forward"])


@pytest.mark.parametrize("case", ROWS, ids=_ids(ROWS))
def test_exported_module_computes_what_dagrad_computes(case, tmp_path):
    inputs = case.inputs(seed=3)
    fast = dg.compile(case.f)
    expected = fast(*inputs)
    path = tmp_path / "exported.py"
    fast.export(path, *inputs)
    module = _load(path)
    got = getattr(module, module.__all__[0])(*inputs)
    for e, g in zip(np.atleast_1d(expected) if not isinstance(expected, tuple) else expected,
                    np.atleast_1d(got) if not isinstance(got, tuple) else got):
        np.testing.assert_array_equal(g, e)
        assert np.asarray(g).dtype == np.asarray(e).dtype


def test_odeint_is_refused_by_export(tmp_path):
    (row,) = [c for c in CASES if c.op == "odeint"]
    inputs = row.inputs(seed=3)
    fast = dg.compile(row.f)
    np.testing.assert_allclose(fast(*inputs), row.ref(*inputs), rtol=1e-12)  # compiled, it runs
    with pytest.raises(ExportError, match="no standalone form"):
        fast.export(tmp_path / "exported.py", *inputs)


def _mlp_step(params, x, y, lr=0.1):
    def loss(params):
        h = dg.tanh(x @ params["w1"] + params["b1"])
        return -dg.mean(dg.sum(y * dg.log_softmax(h @ params["w2"] + params["b2"], axis=1), axis=1))

    value, grads = dg.value_and_grad(loss)(params)
    return {k: params[k] - lr * grads[k] for k in params}, value


@pytest.fixture
def mlp():
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((4, 32)), "b1": np.zeros(32), "w2": rng.standard_normal((32, 3)),
              "b2": np.zeros(3)}
    x = rng.standard_normal((50, 4))
    y = np.eye(3)[rng.integers(0, 3, 50)]
    return params, x, y


def test_an_exported_training_step_takes_and_returns_the_same_structures(mlp, tmp_path):
    params, x, y = mlp
    fast = dg.compile(_mlp_step)
    path = fast.export(tmp_path / "step.py", params, x, y)
    module = _load(path)
    assert module.__all__ == ["mlp_step"]
    new, loss = module.mlp_step(params, x, y)
    expected_new, expected_loss = _mlp_step(params, x, y)
    assert list(new) == ["w1", "b1", "w2", "b2"]
    for key in new:
        np.testing.assert_array_equal(new[key], fast(params, x, y)[0][key])
        np.testing.assert_allclose(new[key], expected_new[key], rtol=1e-13, atol=1e-15)
    assert loss == pytest.approx(expected_loss, rel=1e-14)


def test_an_exported_module_needs_only_numpy(mlp, tmp_path):
    params, x, y = mlp
    path = dg.compile(_mlp_step).export(tmp_path / "step.py", params, x, y)
    source = path.read_text()
    assert "import dagrad" not in source and "from dagrad " not in source
    np.savez(tmp_path / "data.npz", x=x, y=y, **params)
    script = (  # after the run, every module loaded is NumPy's, the standard library's or step's own
        "import sys\n"
        "import numpy as np\n"
        "import step\n"
        "d = np.load('data.npz')\n"
        "params = {k: d[k] for k in ('w1', 'b1', 'w2', 'b2')}\n"
        "print(step.mlp_step(params, d['x'], d['y'])[1])\n"
        "others = {m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - {'numpy', 'step'}\n"
        "assert not {m for m in others if not m.startswith('_')}, others\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == pytest.approx(_mlp_step(params, x, y)[1], rel=1e-14)


def test_exported_lines_quote_the_source_lines_that_built_them(mlp, tmp_path):
    params, x, y = mlp
    source = dg.compile(_mlp_step).export(tmp_path / "step.py", params, x, y).read_text()
    assert "# test_export.py:" in source
    assert "h = dg.tanh(x @ params[\"w1\"] + params[\"b1\"])" in source
    assert "(backward of tanh)" in source
    compile(source, "step.py", "exec")  # valid Python


def test_an_exported_module_refuses_other_shapes_and_dtypes(mlp, tmp_path):
    params, x, y = mlp
    module = _load(dg.compile(_mlp_step).export(tmp_path / "step.py", params, x, y))
    with pytest.raises(ValueError, match=r"x: expected shape \(50, 4\) and dtype float64, got shape \(49, 4\)"):
        module.mlp_step(params, x[:49], y)
    with pytest.raises(ValueError, match=r"dtype float32"):
        module.mlp_step(params, x.astype(np.float32), y)


def test_static_arguments_are_checked_and_large_constants_survive(tmp_path):
    table = np.random.default_rng(1).standard_normal((40, 3))  # a captured array: a base64 constant

    def f(x, power):
        return dg.sum((x @ table.T) ** power, axis=1)

    x = np.random.default_rng(2).standard_normal((5, 3))
    fast = dg.compile(f)
    module = _load(fast.export(tmp_path / "f.py", x, 3))
    np.testing.assert_array_equal(module.f(x, 3), fast(x, 3))
    with pytest.raises(ValueError, match="power must be 3"):
        module.f(x, 2)
