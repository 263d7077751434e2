"""JAX programs run with their imports changed to dagrad's and nothing else (`import jax.numpy as jnp` to
`import dagrad.numpy as jnp`, `from jax import grad` to `from dagrad import grad`, `import jax` to `import
dagrad as jax`), and JAX's names one by one: `grad(..., holomorphic=True)`, `jacfwd`/`jacrev`/`hessian`
with `holomorphic=`, `dagrad.tree_util` and key-based `dagrad.random` (docs/coming-from.md, "JAX").

The programs are in tests/programs/jax_*.txt: JAX's autodiff cookbook (its code cells; each `%timeit` magic
written as the plain call it times), the custom_jvp / custom_vjp examples of JAX's "Custom derivative
rules" and per-example gradients with vmap. The numbers are checked against closed forms, finite
differences and JAX's printed results.
"""

from __future__ import annotations

import collections
import math
import re
from pathlib import Path

import numpy as np
import pytest

import dagrad as dg
import dagrad.random as jr
import dagrad.tree_util as tu

PROGRAMS = Path(__file__).parent / "programs"


def _run(name, capsys):
    """Runs a JAX program with its import lines changed to dagrad's; returns (its names, what it printed)."""
    text = (PROGRAMS / f"jax_{name}.txt").read_text()
    source = re.sub(r"^import jax$", "import dagrad as jax", text, flags=re.M)
    source = re.sub(r"^(\s*)(import|from) jax\b", r"\1\2 dagrad", source, flags=re.M)
    changed = [(a, b) for a, b in zip(text.splitlines(), source.splitlines()) if a != b]
    assert changed and all(re.match(r"\s*(import|from) jax", a) for a, _ in changed)  # import lines only
    namespace = {"__name__": "jax_program"}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102  (the test's own program text)
    return namespace, capsys.readouterr().out.splitlines()


def _sigmoid(z):
    return 0.5 * (np.tanh(z / 2) + 1)


def test_the_autodiff_cookbook_runs_with_the_imports_changed(capsys):
    ns, printed = _run("autodiff_cookbook", capsys)
    t = math.tanh(2.0)
    derivatives = [1 - t ** 2, -2 * t * (1 - t ** 2), -2 * (1 - t ** 2) ** 2 + 4 * t ** 2 * (1 - t ** 2)]
    np.testing.assert_allclose([float(p) for p in printed[:3]], derivatives, rtol=1e-12)

    W, b, inputs = ns["W"], ns["b"], ns["inputs"]
    assert W.shape == (3,) and b.shape == () and W.dtype == np.float64  # from the keys of dagrad.random
    s = _sigmoid(inputs @ W + b)
    targets = np.array([1.0, 1.0, 0.0, 1.0])
    dloss_dz = -(targets - s)  # the gradient of the negative log-likelihood with respect to the logits
    np.testing.assert_allclose(ns["W_grad"], inputs.T @ dloss_dz, rtol=1e-10)
    np.testing.assert_allclose(ns["b_grad"], dloss_dz.sum(), rtol=1e-10)
    np.testing.assert_allclose(ns["b_grad_numerical"], ns["b_grad"], rtol=1e-6)
    np.testing.assert_allclose(ns["W_grad_numerical"], np.vdot(ns["W_grad"], ns["unitvec"]), rtol=1e-6)
    assert printed.count("True") == 1  # hvp (forward over reverse) equals the materialised Hessian's product

    jacobian = (s * (1 - s))[:, None] * inputs
    np.testing.assert_allclose(ns["J"], jacobian, rtol=1e-12)  # jacrev's (jacfwd's, printed before, is the same)
    np.testing.assert_allclose(ns["J_dict"]["W"], jacobian, rtol=1e-12)
    np.testing.assert_allclose(ns["J_dict"]["b"], s * (1 - s), rtol=1e-12)
    second = (s * (1 - s) * (1 - 2 * s))[:, None, None] * inputs[:, :, None] * inputs[:, None, :]
    np.testing.assert_allclose(ns["H"], second, rtol=1e-10, atol=1e-15)

    f, X, V = ns["f"], ns["X"], ns["V"]
    hvp = 2 * ((1 - np.tanh(X) ** 2) ** 2 - 2 * np.tanh(X) ** 2 * (1 - np.tanh(X) ** 2)) * V  # of sum(tanh(X)**2)
    for got in (ns["hvp"](_tanh_squared, (X,), (V,)), ns["hvp_revfwd"](_tanh_squared, (X,), (V,))[0],
                ns["hvp_revrev"](_tanh_squared, (X,), (V,))):
        np.testing.assert_allclose(got, hvp, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ns["ans2"], hvp, rtol=1e-10, atol=1e-12)
    assert ns["loop_vs"].shape == ns["vmap_vs"].shape == (128, 4)

    # Python control flow under vjp, then the complex numbers: JAX's printed results
    at = printed.index(f"({math.pi},)")
    assert complex(printed[at + 1]) == 6 - 8j
    np.testing.assert_allclose(complex(printed[at + 2]), np.cos(3 + 4j), rtol=1e-12)
    np.testing.assert_allclose(complex(printed[at + 3]), (1 - 1j) / math.sqrt(2), rtol=1e-12)
    cholesky_grad = dg.grad(f, holomorphic=True)(ns["A"])
    np.testing.assert_allclose(cholesky_grad, cholesky_grad.conj().T, rtol=1e-10)  # Hermitian, as JAX's
    np.testing.assert_allclose(np.diag(cholesky_grad).real, [-0.7534186, -8.904491, 0.01320427], rtol=2e-5)


def _tanh_squared(X):
    return dg.numpy.sum(dg.numpy.tanh(X) ** 2)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the example's nan, on purpose
def test_the_custom_derivative_examples_run_with_the_imports_changed(capsys):
    ns, printed = _run("custom_derivatives", capsys)
    values = [complex(p).real if not p.startswith("[") else None for p in printed]
    np.testing.assert_allclose(values[:5], [np.sin(2) * 3, np.sin(2) * 3, np.cos(2) * 3, np.cos(2) * 3,
                                            np.cos(2) * 3], rtol=1e-12)  # custom_jvp's f, jvp, grad; custom_vjp's
    assert values[10] == 1.0  # grad(log1pexp)(100.) with its custom_jvp rule
    assert printed[-2] == "nan" and printed[-1] == "1.0"  # f(x) = x / (1 + sqrt(x)) at 0: nan, then its rule
    t = ns["t"]
    np.testing.assert_allclose(ns["sin_grads"], np.cos(t), rtol=1e-12)
    # the incoming cotangent, 1, is clipped to 0.75, then multiplied by sin's derivative
    np.testing.assert_allclose(ns["clipped_grads"], 0.75 * np.cos(t), rtol=1e-12)


def test_per_example_gradients_with_vmap_run_with_the_imports_changed(capsys):
    ns, printed = _run("per_example_gradients", capsys)
    assert printed == ["[((8, 5, 2), (8, 2)), ((8, 2, 3), (8, 3))]", "True", "(8, 5) (8,)"]
    one = dg.grad(ns["loss"])(ns["params"], ns["inputs"][2:3], ns["targets"][2:3])
    for (gw, gb), (pw, pb) in zip(one, ns["per_example"]):
        np.testing.assert_allclose(pw[2], gw, rtol=1e-10)
        np.testing.assert_allclose(pb[2], gb, rtol=1e-10)


# ---------------------------------------------------------------- holomorphic differentiation


def test_holomorphic_transforms_give_the_complex_derivative():
    z = np.array([1 + 2j, 0.5 - 1j])
    np.testing.assert_allclose(dg.jacfwd(lambda z: z ** 2, holomorphic=True)(z), np.diag(2 * z))
    np.testing.assert_allclose(dg.jacrev(lambda z: z ** 2, holomorphic=True)(z), np.diag(2 * z))
    np.testing.assert_allclose(dg.jacobian(lambda z: dg.sin(z), holomorphic=True)(z), np.diag(np.cos(z)))
    np.testing.assert_allclose(dg.hessian(lambda z: dg.sum(z ** 3), holomorphic=True)(z), np.diag(6 * z))
    value, derivative = dg.value_and_grad(lambda z: z ** 3, holomorphic=True)(1 + 1j)
    assert value == (1 + 1j) ** 3 and derivative == 3 * (1 + 1j) ** 2
    (derivative, aux) = dg.grad(lambda z: (z ** 3, "aux"), has_aux=True, holomorphic=True)(1 + 1j)
    assert derivative == 3 * (1 + 1j) ** 2 and aux == "aux"
    assert dg.grad(lambda z: z ** 2, holomorphic=True)(2 + 0j) == 4 + 0j


@pytest.mark.parametrize("call, message", [
    (lambda: dg.grad(lambda z: z ** 2, holomorphic=True)(2.0), "grad: argument 0 has dtype float64: holomorphic "
                                                               "differentiation needs complex inputs"),
    (lambda: dg.grad(lambda z: dg.abs(z), holomorphic=True)(1j), "grad: the function's output has dtype float64"),
    (lambda: dg.jacfwd(lambda z: z * 2)(np.ones(2, complex)), "jacfwd: argument 0 has dtype complex128: jacfwd "
                                                              "needs real inputs; for a holomorphic function pass "
                                                              "holomorphic=True"),
    (lambda: dg.jacrev(lambda z: z * 2)(np.ones(2, complex)), "jacobian: the function's outputs must be real"),
    (lambda: dg.jacrev(lambda z: dg.abs(z), holomorphic=True)(np.ones(2, complex)), "jacobian: the function's "
                                                                                    "output has dtype float64"),
    (lambda: dg.jacfwd(lambda x: x, has_aux=True), "jacfwd: has_aux=True is not supported"),
])
def test_holomorphic_misuse_is_refused_as_jax_refuses_it(call, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        call()


def test_jacfwd_of_real_inputs_may_have_complex_outputs():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(dg.jacfwd(lambda x: x * (1 + 1j))(x), np.eye(2) * (1 + 1j))


# ---------------------------------------------------------------- dagrad.tree_util


def test_tree_util_follows_jax():
    Point = collections.namedtuple("Point", "x y")
    tree = {"b": [1, None, (2, 3)], "a": Point(4, 5), "c": collections.OrderedDict([("z", 6), ("y", 7)])}
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [4, 5, 1, 2, 3, 6, 7]  # sorted dict keys; None has no leaves; an OrderedDict keeps its order
    assert treedef.num_leaves == 7 and tu.tree_structure(tree) == treedef
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt == tree and type(rebuilt["a"]) is Point and type(rebuilt["c"]) is collections.OrderedDict
    assert tu.tree_leaves([1, [2, [3]]]) == [1, 2, 3] and tu.tree_leaves(None) == []
    assert tu.tree_map(lambda x, y: x * y, [1, (2, 3)], [10, (20, 30)]) == [10, (40, 90)]
    # the other trees may hold subtrees where the first has leaves
    assert tu.tree_map(lambda x, y: (x, y), {"a": 1}, {"a": [2, 3]}) == {"a": (1, [2, 3])}
    assert tu.tree_leaves([1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple)) == [1, (2, 3)]
    assert tu.tree_map(lambda t: sum(t), [(1, 2), (3, 4)], is_leaf=lambda x: isinstance(x, tuple)) == [3, 7]
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6 and tu.tree_reduce(max, [], 0) == 0
    assert tu.tree_all([True, (1, "x")]) and not tu.tree_all([True, 0])
    assert repr(tu.tree_structure({"a": [1, None], "b": (2,)})) == "PyTreeDef({'a': [*, None], 'b': (*,)})"
    assert dg.tree.map(lambda x: -x, (1, 2)) == (-1, -2) and dg.tree.leaves({"x": 1}) == [1]


@pytest.mark.parametrize("call, error, message", [
    (lambda: tu.tree_map(lambda x, y: x + y, [1, 2], [1, 2, 3]), ValueError, "does not match the structure of the "
                                                                             "first: found a list node of 3 children "
                                                                             "where the first has a list of 2"),
    (lambda: tu.tree_map(lambda x, y: x + y, {"a": 1}, {"b": 1}), ValueError, "keys ['b'] where the first has a dict "
                                                                              "with keys ['a']"),
    (lambda: tu.tree_unflatten(tu.tree_structure([1, 2]), [1]), ValueError, "has 2 leaves, got 1"),
    (lambda: tu.tree_unflatten([1], [1]), TypeError, "expects a PyTreeDef"),
    (lambda: tu.register_pytree_node, AttributeError, "JAX's jax.tree_util.register_pytree_node"),
])
def test_tree_util_errors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


# ---------------------------------------------------------------- dagrad.random


def test_keys_are_arrays_and_the_same_key_gives_the_same_numbers():
    key = jr.PRNGKey(42)
    assert isinstance(key, np.ndarray) and key.dtype == np.uint32 and key.shape == (2,)
    np.testing.assert_array_equal(jr.key(42), key)
    np.testing.assert_array_equal(jr.PRNGKey(-1), [0xFFFFFFFF, 0xFFFFFFFF])  # two's complement, as JAX
    functions = [lambda k: jr.normal(k, (3,)), lambda k: jr.uniform(k, (3,), minval=-2.0, maxval=2.0),
                 lambda k: jr.bernoulli(k, 0.3, (5,)), lambda k: jr.categorical(k, np.log([0.2, 0.3, 0.5]),
                                                                                shape=(4,)),
                 lambda k: jr.randint(k, (4,), 0, 10), lambda k: jr.permutation(k, 6),
                 lambda k: jr.choice(k, 10, (3,), replace=False), lambda k: jr.truncated_normal(k, -1.0, 1.0, (4,)),
                 lambda k: jr.gumbel(k, (2,)), lambda k: jr.exponential(k, (2,)), lambda k: jr.split(k, 3),
                 lambda k: jr.fold_in(k, 7)]
    for draw in functions:
        np.testing.assert_array_equal(draw(key), draw(jr.PRNGKey(42)))
        assert not np.array_equal(draw(key), draw(jr.PRNGKey(43))) or draw is functions[2]


def test_split_and_fold_in_make_independent_keys():
    key = jr.PRNGKey(0)
    keys = jr.split(key, 4)
    assert keys.shape == (4, 2) and keys.dtype == np.uint32
    draws = np.stack([jr.normal(k, (2000,)) for k in keys] + [jr.normal(key, (2000,))])
    correlations = np.corrcoef(draws)[np.triu_indices(5, 1)]
    assert np.all(np.abs(correlations) < 0.1)  # 2000 pairs of independent normals: |r| < 0.1 by far
    a, b = jr.split(key)  # unpacking rows, as JAX's
    np.testing.assert_array_equal(np.stack([a, b]), jr.split(key))
    assert not np.array_equal(jr.fold_in(key, 1), jr.fold_in(key, 2))
    assert not np.array_equal(jr.fold_in(key, 0), key)


def test_random_values_have_the_right_distributions():
    key = jr.PRNGKey(3)
    x = jr.normal(key, (100000,))
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02 and x.dtype == np.float64
    assert jr.normal(key, (2,), dtype=np.float32).dtype == np.float32
    u = jr.uniform(key, (100000,), minval=2.0, maxval=4.0)
    assert u.min() >= 2.0 and u.max() < 4.0 and abs(u.mean() - 3.0) < 0.02
    assert abs(jr.bernoulli(key, 0.3, (100000,)).mean() - 0.3) < 0.01
    counts = np.bincount(jr.categorical(key, np.log([0.2, 0.3, 0.5]), shape=(100000,)), minlength=3) / 100000
    np.testing.assert_allclose(counts, [0.2, 0.3, 0.5], atol=0.01)
    batched = jr.categorical(key, np.log(np.array([[0.999, 0.001], [0.001, 0.999]])))
    np.testing.assert_array_equal(batched, [0, 1])
    t = jr.truncated_normal(key, -1.0, 2.0, (100000,))
    assert t.min() >= -1.0 and t.max() <= 2.0 and abs(t.mean() - 0.2290) < 0.01  # the truncated normal's mean
    assert sorted(jr.permutation(key, 10).tolist()) == list(range(10))
    x = np.arange(12).reshape(3, 4)
    assert sorted(jr.permutation(key, x, axis=1)[0].tolist()) == [0, 1, 2, 3]
    assert len(set(jr.choice(key, 5, (5,), replace=False).tolist())) == 5
    r = jr.randint(key, (1000,), 3, 7)
    assert r.min() == 3 and r.max() == 6 and r.dtype == np.int64


@pytest.mark.parametrize("call, error, message", [
    (lambda: jr.normal(np.zeros(2), (2,)), TypeError, "expects a key (a uint32 array of shape (2,)"),
    (lambda: jr.normal(jr.split(jr.PRNGKey(0), 3), (2,)), TypeError, "expects a single key, got an array of 3 keys"),
    (lambda: jr.PRNGKey(1.5), TypeError, "PRNGKey: the seed must be an integer"),
    (lambda: jr.normal(jr.PRNGKey(0), (2,), dtype=np.int32), TypeError, "dtype must be a floating-point dtype"),
    (lambda: jr.randint(jr.PRNGKey(0), (2,), 5, 5), ValueError, "minval (5) must be less than maxval (5)"),
    (lambda: jr.split(jr.PRNGKey(0), -1), TypeError, "num must be an integer >= 0"),
    (lambda: jr.poisson, AttributeError, "JAX's jax.random.poisson"),
])
def test_random_errors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


# ---------------------------------------------------------------- shape mismatches: JAX's TypeError, NumPy's ValueError


def _placeholder_plus_four():
    with dg.Graph():
        return dg.placeholder((3,)) + np.ones(4)


@pytest.mark.parametrize("call, op", [
    (lambda: dg.numpy.add(np.ones(3), np.ones(4)), "add"),
    (lambda: dg.ones(3) + dg.ones(4), "add"),
    (lambda: dg.numpy.matmul(np.ones((2, 3)), np.ones((4, 5))), "matmul"),
    (lambda: dg.numpy.reshape(dg.ones(6), (4,)), "reshape"),
    (lambda: dg.numpy.concatenate([dg.ones((2, 3)), dg.ones((2, 4))]), "concatenate"),
    (lambda: dg.grad(lambda x: dg.sum(x + np.ones(4)))(np.ones(3)), "add"),
    (_placeholder_plus_four, "add"),
])
def test_a_shape_mismatch_is_a_type_error_as_in_jax_and_a_value_error_as_in_numpy(call, op):
    with pytest.raises(TypeError) as info:
        call()
    assert isinstance(info.value, ValueError) and type(info.value) is dg.ShapeError
    assert str(info.value).startswith(f"{op}:") and "test_jax_programs.py" in str(info.value)


def test_other_errors_keep_their_kind():
    with pytest.raises(TypeError) as info:
        dg.numpy.add(np.ones(2), "a")
    assert not isinstance(info.value, ValueError)
    with pytest.raises(ValueError) as info:  # the shapes fit; the value does not
        dg.numpy.reshape(dg.ones(6), (2, -1, -1))
    assert not isinstance(info.value, TypeError)
