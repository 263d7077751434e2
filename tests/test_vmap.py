"""dg.vmap against loops over examples: table-driven over every op-table row (values, compile, gradients
in both orders, jacfwd, jvp, nested vmap, Tensors), then static graphs, pytrees, mapped integer indices,
per-example gradients of an MLP, the ops that loop, and bad input."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

import dagrad as dg
from op_table import CASES, COMPOSITES

ALL = CASES + COMPOSITES
DIFFERENTIABLE = [c for c in ALL if c.differentiable]
B = 3  # examples per batch
FILE = "test_vmap.py"

# Batched forms that may round differently from a loop (another summation order or BLAS kernel):
# compared with allclose. Every other row of CASES must equal the loop bit for bit.
INEXACT = {"matmul", "einsum", "linear", "sum", "prod", "cumsum", "std_sqrt", "l2_norm", "log_softmax", "nll_loss",
           "inv", "det", "logabsdet", "solve", "cholesky", "abs"}
# Registered ops without a batching rule: vmap runs them once per example (op.py's batch_loop)
# SciPy's solvers, matrix functions, convolution and odeint take one problem at a time: they loop
LOOPING = {"setitem", "solve_triangular", "solve_sylvester", "expm", "sqrtm", "convolve", "odeint"}


def _here(offset=1):
    """'test_vmap.py:N' for the caller's line plus `offset`."""
    return f"{FILE}:{sys._getframe(1).f_lineno + offset}"


def _ids(cases):
    return [str(c) for c in cases]


def _specs(c):
    """in_axes to try for a row: every non-empty subset of its inputs mapped on axis 0, then all mapped on
    their last axis (positive and negative) and, where every input has an axis, on axis 1."""
    specs = [tuple(0 if m else None for m in mask) for mask in itertools.product((False, True), repeat=len(c.shapes))
             if any(mask)]
    specs.append(tuple(len(s) for s in c.shapes))
    specs.append((-1,) * len(c.shapes))
    if all(c.shapes):
        specs.append((1,) * len(c.shapes))
    return list(dict.fromkeys(specs))


def _batch(c, axes):
    """(the batched arguments for `axes`, the per-example arguments): B examples drawn from the row; an
    unmapped argument is example 0's, the same for all."""
    examples = [c.inputs(seed=k) for k in range(B)]
    args = [examples[0][i] if a is None else np.stack([e[i] for e in examples], axis=a) for i, a in enumerate(axes)]
    per = [[examples[k][i] if a is not None else examples[0][i] for i, a in enumerate(axes)] for k in range(B)]
    return args, per


def _same(got, expected, exact=False):
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if exact:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def _exact(c):
    return c in CASES and c.op not in INEXACT and not str(c).startswith("norm")


# -- values, eager and compiled


@pytest.mark.parametrize("c", ALL, ids=_ids(ALL))
def test_values_match_numpy_and_the_loop(c):
    for axes in _specs(c):
        args, per = _batch(c, axes)
        got = dg.vmap(c.f, in_axes=axes)(*args)
        _same(got, np.stack([np.asarray(c.ref(*p)) for p in per]))
        _same(got, np.stack([np.asarray(c.f(*p)) for p in per]), exact=_exact(c))


@pytest.mark.parametrize("c", ALL, ids=_ids(ALL))
def test_compiled_values_match_the_loop(c):
    for axes in _specs(c):
        args, per = _batch(c, axes)
        got = dg.compile(dg.vmap(c.f, in_axes=axes))(*args)
        _same(got, np.stack([np.asarray(c.ref(*p)) for p in per]))


@pytest.mark.parametrize("c", ALL, ids=_ids(ALL))
def test_nested_vmap_maps_two_axes(c):
    axes = (0,) * len(c.shapes)
    args, _ = _batch(c, axes)
    outer = [np.stack([a, a[::-1]]) for a in args]  # 2 x B examples
    expected = [np.stack([np.asarray(c.ref(*[a[j][k] for a in outer])) for k in range(B)]) for j in range(2)]
    _same(dg.vmap(dg.vmap(c.f))(*outer), np.stack(expected))


# -- derivatives


def _sum_grad(c):
    return dg.grad(lambda *a: c.f(*a).sum(), argnums=tuple(range(len(c.shapes))))


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_vmap_of_grad_gives_per_example_gradients(c):
    g = _sum_grad(c)
    for axes in _specs(c):
        args, per = _batch(c, axes)
        got = dg.vmap(g, in_axes=axes)(*args)
        loop = [g(*p) for p in per]
        for i in range(len(axes)):
            _same(got[i], np.stack([grads[i] for grads in loop]))


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_compiled_vmap_of_grad(c):
    g = _sum_grad(c)
    axes = (0,) + (None,) * (len(c.shapes) - 1)
    args, per = _batch(c, axes)
    got = dg.compile(dg.vmap(g, in_axes=axes))(*args)
    loop = [g(*p) for p in per]
    for i in range(len(axes)):
        _same(got[i], np.stack([grads[i] for grads in loop]))


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_grad_of_vmap_sums_the_examples(c):
    g = _sum_grad(c)
    for axes in _specs(c):
        args, per = _batch(c, axes)
        argnums = tuple(range(len(axes)))
        got = dg.grad(lambda *a: dg.vmap(c.f, in_axes=axes)(*a).sum(), argnums=argnums)(*args)
        loop = [g(*p) for p in per]
        for i, a in enumerate(axes):
            # a mapped input gets each example's gradient where it lies; an unmapped one their sum
            expected = sum(grads[i] for grads in loop) if a is None else np.stack([grads[i] for grads in loop], a)
            _same(got[i], expected)


def _loop(f, axes):
    """f over the examples with dagrad ops, stacked: what a vmapped f must equal, to differentiate."""
    def looped(*args):
        rows = [f(*[a if ax is None else dg.moveaxis(a, ax, 0)[k] for a, ax in zip(args, axes)]) for k in range(B)]
        return dg.stack(rows)

    return looped


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_jacfwd_of_vmap_matches_jacfwd_of_the_loop(c):
    axes = (0,) * len(c.shapes)
    args, _ = _batch(c, axes)
    _same(dg.jacfwd(dg.vmap(c.f))(*args), dg.jacfwd(_loop(c.f, axes))(*args))


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_vmap_of_jvp(c):
    n = len(c.shapes)
    axes = (0,) * n
    args, per = _batch(c, axes)
    tangents = [np.cos(np.arange(a.size, dtype=a.dtype)).reshape(a.shape) for a in args]
    out, tangent = dg.vmap(lambda *a: dg.jvp(c.f, a[:n], a[n:]))(*args, *tangents)
    loop = [dg.jvp(c.f, tuple(p), tuple(t[k] for t in tangents)) for k, p in enumerate(per)]
    _same(out, np.stack([o for o, _ in loop]))
    _same(tangent, np.stack([t for _, t in loop]))


@pytest.mark.parametrize("c", DIFFERENTIABLE, ids=_ids(DIFFERENTIABLE))
def test_backward_through_vmap_of_tensors(c):
    axes = (0,) + (None,) * (len(c.shapes) - 1)
    args, _ = _batch(c, axes)
    mapped = [dg.tensor(a, requires_grad=True) for a in args]
    out = dg.vmap(c.f, in_axes=axes)(*mapped)
    assert isinstance(out, dg.Tensor)
    weights = np.linspace(0.5, 1.5, out.size).reshape(out.shape)
    (out * weights).sum().backward()
    looped = [dg.tensor(a, requires_grad=True) for a in args]
    (_loop(c.f, axes)(*looped) * weights).sum().backward()
    for t, u in zip(mapped, looped):
        _same(t.grad.numpy(), u.grad.numpy())


# -- every op batches by a rule or by the loop


def test_every_registered_op_has_a_batching_rule_or_loops():
    looping = {name for name, op in dg.REGISTRY.items() if op.batch is None}
    assert looping == LOOPING, "declare a batch= rule, or list the op in LOOPING (and check its rows)"


LOOPING_ROWS = [c for c in CASES if c.op in LOOPING]


@pytest.mark.parametrize("c", LOOPING_ROWS, ids=_ids(LOOPING_ROWS))
def test_looping_ops_give_the_loops_values_and_gradients(c):
    assert LOOPING_ROWS and len({c.op for c in LOOPING_ROWS}) == len(LOOPING)
    args, per = _batch(c, (0,) * len(c.shapes))
    _same(dg.vmap(c.f)(*args), np.stack([c.ref(*p) for p in per]), exact=True)
    g = _sum_grad(c)
    got, loop = dg.vmap(g)(*args), [g(*p) for p in per]
    for i in range(len(c.shapes)):
        _same(got[i], np.stack([grads[i] for grads in loop]))


class Cube(dg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g


def test_a_custom_function_without_a_rule_loops():
    x = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    _same(dg.vmap(Cube.apply)(x), x**3, exact=True)
    _same(dg.vmap(dg.grad(lambda v: Cube.apply(v).sum()))(x), 3 * x**2)


# -- static graphs


def _per_example(x, w):
    return dg.tanh(dg.reshape(x, (2, 3)) @ w).sum()


def _static_case(batch):
    rng = np.random.default_rng(5)
    X, W = rng.normal(size=(4, 6)), rng.normal(size=(3, 2))
    with dg.Graph() as g:
        x = dg.placeholder((batch, 6), name="x")
        w = dg.Variable(W, name="w")
        y = dg.vmap(_per_example, in_axes=(0, None))(x, w)
        (gw,) = dg.gradients(y.sum(), [w])
        per_example = dg.vmap(dg.grad(_per_example, argnums=1), in_axes=(0, None))(x, w)
    out, gw_value, per_value = dg.Session(g).run([y, gw, per_example], {x: X})
    _same(out, np.stack([_per_example(X[k], W) for k in range(4)]))
    grads = [dg.grad(_per_example, argnums=1)(X[k], W) for k in range(4)]
    _same(gw_value, sum(grads))
    _same(per_value, np.stack(grads))


@pytest.mark.parametrize("batch", [4, None], ids=["known batch", "batch known at run time"])
def test_vmap_in_a_static_graph(batch):
    _static_case(batch)


# scatter_along_axis's result shape holds the batch size: with an unknown one it loops (and says so), as LOOPING ops
STATIC_ROWS = [c for c in ALL if c.op not in LOOPING | {"scatter_along_axis"}
               and not str(c).startswith(("x[mask]", "norm"))][::4]


@pytest.mark.parametrize("c", STATIC_ROWS, ids=_ids(STATIC_ROWS))
def test_rows_in_a_static_graph_of_unknown_batch_size(c):
    args, per = _batch(c, (0,) * len(c.shapes))
    with dg.Graph() as g:
        xs = [dg.placeholder((None, *s)) for s in c.shapes]
        y = dg.vmap(c.f)(*xs)
    _same(dg.Session(g).run(y, dict(zip(xs, args))), np.stack([np.asarray(c.ref(*p)) for p in per]))


def test_an_op_that_loops_needs_a_known_batch_size_in_a_static_graph():
    with dg.Graph():
        x = dg.placeholder((None, 3))
        line = _here(2)
        with pytest.raises(ValueError, match=r"vmap: setitem has no batching rule.*batch size is unknown") as info:
            dg.vmap(lambda v: dg.setitem(v, 0, 1.0))(x)
    assert line in str(info.value)


# -- in_axes, out_axes, pytrees, keywords


X = np.arange(12.0).reshape(4, 3) / 7
W = np.linspace(-1.0, 1.0, 6).reshape(3, 2)


def test_pytrees_in_and_out_with_prefixes():
    params = {"w": W, "b": np.ones(2)}
    targets = np.cos(np.arange(8.0)).reshape(4, 2)

    def f(p, batch):
        x, y = batch
        pred = x @ p["w"] + p["b"]
        return {"loss": ((pred - y) ** 2).sum(), "pred": pred, "bias": p["b"] * 2}

    out = dg.vmap(f, in_axes=(None, (0, 0)), out_axes={"loss": 0, "pred": 1, "bias": None})(params, (X, targets))
    pred = X @ W + 1
    _same(out["loss"], ((pred - targets) ** 2).sum(1))
    _same(out["pred"], pred.T)
    _same(out["bias"], np.full(2, 2.0))
    ensemble = {"w": np.stack([W * k for k in range(4)]), "b": np.ones(2)}
    got = dg.vmap(lambda p, x: x @ p["w"] + p["b"], in_axes=({"w": 0, "b": None}, 0))(ensemble, X)
    _same(got, np.stack([X[k] @ (W * k) + 1 for k in range(4)]))


def test_negative_axes_keywords_and_unmapped_outputs():
    _same(dg.vmap(lambda a: a.sum(), in_axes=-1)(X), X.sum(0))
    _same(dg.vmap(lambda a: a * 2, out_axes=-1)(X), (X * 2).T)
    _same(dg.vmap(lambda a, b: a * b)(X, b=X[:, ::-1]), X * X[:, ::-1])  # keywords are mapped on axis 0
    _same(dg.vmap(lambda a, s: a * s, in_axes=(0, None))(X, 3.0), X * 3.0)
    _same(dg.vmap(lambda a: (a * 0 + 1).sum() * 0 + np.ones(2))(X), np.ones((4, 2)))
    _same(dg.vmap(lambda a: np.ones(2), out_axes=None)(X), np.ones(2))  # the same for every example
    _same(dg.vmap(lambda a: a * 2, in_axes=None, axis_size=3)(np.ones(2)), np.full((3, 2), 2.0))
    _same(dg.vmap(lambda a: a + 1, axis_size=4)(X), X + 1)


def test_tensor_inputs_give_tensors_and_backward_reaches_unmapped_ones():
    x, w = dg.tensor(X.T.copy(), requires_grad=True), dg.tensor(W, requires_grad=True)
    out = dg.vmap(lambda xi, w: dg.tanh(xi @ w), in_axes=(1, None))(x, w)
    assert isinstance(out, dg.Tensor) and out.shape == (4, 2)
    (out**2).sum().backward()
    x2, w2 = dg.tensor(X, requires_grad=True), dg.tensor(W, requires_grad=True)
    sum((dg.tanh(x2[k] @ w2) ** 2).sum() for k in range(4)).backward()
    _same(x.grad.numpy(), x2.grad.numpy().T)
    _same(w.grad.numpy(), w2.grad.numpy())


def test_detach_and_values_of_a_mapped_value():
    _same(dg.vmap(lambda v: v.detach() * 2)(X), X * 2)
    _same(dg.vmap(dg.grad(lambda v: (v.detach() * v).sum()))(X), X)
    for convert in (lambda v: v.numpy(), lambda v: v.item(), lambda v: v.tolist(), lambda v: dg.tensor(v)):
        with pytest.raises(TypeError, match=r"vmap: a value mapped by vmap \(shape \(\) per example\)") as info:
            dg.vmap(convert)(X[:, 0])
        assert f"{FILE}:{convert.__code__.co_firstlineno}" in str(info.value)  # the line that converts
    line = _here(2)
    with pytest.raises(TypeError, match=r"vmap:.*bool.*dg\.where") as info:
        dg.vmap(lambda v: v if v > 0 else -v)(X[:, 0])
    assert line in str(info.value)


# -- mapped integer indices


LABELS = np.array([[0, 2], [1, 1], [2, 0], [1, 0]])


def _take(x, labels):
    return x[labels] * 2


def _loss_at(x, labels):
    return (dg.sin(x[labels]) ** 2).sum()


@pytest.mark.parametrize("make", [np.asarray, dg.tensor], ids=["array", "Tensor"])
def test_mapped_labels_index_a_mapped_or_shared_array(make):
    _same(np.asarray(dg.vmap(_take)(make(X), LABELS)), np.stack([X[k][LABELS[k]] * 2 for k in range(4)]), exact=True)
    shared = make(X[1])  # an unmapped NumPy array reaches _take as a Tensor, whose indexing takes mapped labels
    _same(np.asarray(dg.vmap(_take, in_axes=(None, 0))(shared, LABELS)), np.stack([X[1][lab] * 2 for lab in LABELS]))
    g = dg.grad(_loss_at)
    _same(np.asarray(dg.vmap(g)(make(X), LABELS)), np.stack([g(X[k], LABELS[k]) for k in range(4)]))
    _same(np.asarray(dg.vmap(g, in_axes=(None, 0))(make(X[1]), LABELS)), np.stack([g(X[1], lab) for lab in LABELS]))


def _pick(x, i):
    return x[i]


@pytest.mark.parametrize("index", [np.array([0, -1, 1, 2]), np.array([[0, -4], [3, 1], [-2, 2], [1, 1]])],
                         ids=["negative", "rows"])
def test_an_unmapped_numpy_array_indexed_by_a_mapped_index_agrees_on_every_path(index):
    # eager vmap raised TypeError here (NumPy's own indexing met the mapped index) where dg.compile gave the rows
    x = np.arange(12.0).reshape(4, 3)
    mapped = dg.vmap(_pick, in_axes=(None, 0))
    expected = np.stack([x[i] for i in index])
    eager, compiled = mapped(x, index), dg.compile(mapped)(x, index)
    assert type(eager) is np.ndarray and type(compiled) is np.ndarray  # arrays in, arrays out
    _same(eager, expected, exact=True)
    _same(compiled, expected, exact=True)
    g = dg.vmap(dg.grad(lambda x, i: (x[i] ** 2).sum()), in_axes=(None, 0))
    want = np.stack([dg.grad(lambda x: (x[i] ** 2).sum())(x) for i in index])
    _same(g(x, index), want)
    _same(dg.compile(g)(x, index), want)


def test_an_unmapped_numpy_array_indexed_out_of_range_raises_index_error_on_every_path():
    x, index = np.arange(12.0).reshape(4, 3), np.array([0, 4, 1])
    mapped = dg.vmap(_pick, in_axes=(None, 0))
    for run in (mapped, dg.compile(mapped)):
        with pytest.raises(IndexError, match="out of bounds"):
            run(x, index)


def test_an_unmapped_array_reaches_f_as_a_constant_and_returns_as_an_array():
    x = np.arange(6.0).reshape(2, 3)
    out = dg.vmap(lambda a, b: (a, b), in_axes=(None, 0), out_axes=(None, 0))(x, x)
    assert type(out[0]) is np.ndarray and type(out[1]) is np.ndarray
    _same(out[0], x, exact=True)
    assert type(dg.vmap(lambda a, b: a.sum() + 0 * b, in_axes=(None, 0))(x, np.ones(2))) is np.ndarray
    # a Tensor among the arguments: every output a Tensor, the ones the same for every example included
    t = dg.tensor(x)
    for out in (dg.vmap(lambda a: 3.0)(t), dg.vmap(lambda a: np.ones(2), out_axes=None)(t),
                dg.vmap(dg.grad(lambda a, b: (a + b).sum(), argnums=1), in_axes=(0, None))(t, np.ones(3))):
        assert isinstance(out, dg.Tensor), type(out)


def test_the_gradient_of_a_mapped_boolean_tensor_mask_is_the_loop_s():
    # the mask's examples reached np.add.at as Tensors: TypeError (numpy.add.at on a Tensor)
    x = np.arange(6.0).reshape(2, 3)
    mask = np.array([[True, False, True], [False, True, True]])
    g = dg.grad(lambda x, m: dg.sum(x[m] ** 2))
    got = dg.vmap(g)(x, dg.tensor(mask))
    assert isinstance(got, dg.Tensor)
    _same(got.numpy(), np.stack([g(x[k], mask[k]) for k in range(2)]))


def test_a_mask_selecting_a_different_count_per_example_names_vmap_the_op_and_the_line():
    x = np.array([[1.0, -1.0, 2.0], [1.0, 2.0, 3.0]])  # 2 and 3 positive entries
    line = _here(1)  # the line of the mask, inside the mapped functions
    for f in (lambda v: dg.sum(v[v > 0]), dg.grad(lambda v: dg.sum(v[v > 0]))):
        with pytest.raises(ValueError, match=r"^vmap: getitem gives the examples results of different shapes "
                           r"\(example 0: \(2,\), example 1: \(3,\)\).*dg\.where") as info:
            dg.vmap(f)(x)
        assert str(info.value).endswith(line)
    same_count = np.array([[1.0, -1.0, 2.0], [-1.0, 2.0, 3.0]])  # the same count in each: a batch holds them
    _same(dg.vmap(lambda v: v[v > 0])(same_count), np.array([[1.0, 2.0], [2.0, 3.0]]))


def test_mapped_labels_in_several_index_positions():
    x = np.arange(4 * 3 * 2 * 5.0).reshape(4, 3, 2, 5)
    labels = np.array([0, 4, 1, 3])
    for index in (lambda v, j: v[:, 0, j], lambda v, j: v[j % 3, :, j], lambda v, j: v[0, ..., j],
                  lambda v, j: v[None, j % 3], lambda v, j: v[j % 3, 1:]):
        _same(dg.vmap(index)(x, labels), np.stack([index(x[k], labels[k]) for k in range(4)]), exact=True)


def test_backward_of_a_shared_tensor_indexed_by_mapped_labels():
    x = dg.tensor(X[0], requires_grad=True)
    dg.vmap(lambda v, j: v[j] * 2, in_axes=(None, 0))(x, LABELS).sum().backward()
    _same(x.grad.numpy(), np.bincount(LABELS.ravel(), minlength=3) * 2.0)


def test_cross_entropy_with_mapped_labels():
    rng = np.random.default_rng(1)
    z, labels = rng.normal(size=(3, 3, 5)), rng.integers(0, 5, size=(3, 3))  # batch size == rows per example
    ce = dg.nn.functional.cross_entropy
    _same(dg.vmap(ce)(z, labels), np.stack([ce(z[k], labels[k]) for k in range(3)]))
    _same(dg.vmap(dg.grad(ce))(z, labels), np.stack([dg.grad(ce)(z[k], labels[k]) for k in range(3)]))
    line = _here(2)
    with pytest.raises(IndexError, match=r"cross_entropy: target labels must be class indices in \[0, 4\]") as info:
        dg.vmap(ce)(z, np.where(np.arange(3) == 2, 7, labels))
    assert line in str(info.value)


# -- per-example gradients of a small MLP


def _mlp_loss(params, x, label):
    hidden = dg.tanh(x @ params["w1"] + params["b1"])
    return dg.nn.functional.cross_entropy(hidden @ params["w2"] + params["b2"], label)


def test_per_example_gradients_of_an_mlp():
    rng = np.random.default_rng(2)
    params = {"w1": rng.normal(size=(4, 8)) * 0.5, "b1": np.zeros(8), "w2": rng.normal(size=(8, 3)) * 0.5,
              "b2": np.zeros(3)}
    xs, labels = rng.normal(size=(6, 4)), rng.integers(0, 3, size=6)
    grad = dg.grad(_mlp_loss)
    loop = [grad(params, xs[k], labels[k]) for k in range(6)]
    for per_example in (dg.vmap(grad, in_axes=(None, 0, 0)), dg.compile(dg.vmap(grad, in_axes=(None, 0, 0)))):
        got = per_example(params, xs, labels)
        for name in params:
            _same(got[name], np.stack([g[name] for g in loop]))
    # their mean is the gradient of the mean loss
    mean_grad = dg.grad(lambda p: dg.vmap(_mlp_loss, in_axes=(None, 0, 0))(p, xs, labels).mean())(params)
    for name in params:
        _same(mean_grad[name], np.mean([g[name] for g in loop], axis=0))


# -- bad input: a clear error naming vmap, the shapes or sizes and the caller's line


def _refused(kind, pattern, call):
    """`call` (a one-line lambda) raises `kind` matching `pattern`, naming the lambda's line."""
    with pytest.raises(kind, match=pattern) as info:
        call()
    assert f"{FILE}:{call.__code__.co_firstlineno}" in str(info.value), str(info.value)


def test_in_axes_that_do_not_match_the_arguments():
    f = lambda a, b: a  # noqa: E731
    _refused(ValueError, r"vmap: in_axes has 3 entries but the function was called with 2",
             lambda: dg.vmap(f, in_axes=(0, 0, 0))(X, X))
    _refused(ValueError, r"vmap: in_axes has the keys \['b'\] where the value has \['a'\]",
             lambda: dg.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": X}))
    _refused(ValueError, r"vmap: in_axes \(0, 0, 0\) has 3 entries where the value has 2",
             lambda: dg.vmap(lambda p: p[0], in_axes=((0, 0, 0),))((X, X)))
    _refused(TypeError, r"vmap: in_axes must be an int, None, or a tuple", lambda: dg.vmap(f, in_axes="0")(X, X))


def test_sizes_that_disagree_along_the_mapped_axis():
    same = r"vmap: the mapped axes must all have the same size, got: leaf 0 of shape \(4, 3\) has size 4 on axis 0"
    _refused(ValueError, same + r"; leaf 1 of shape \(3, 3\) has size 3 on axis 0",
             lambda: dg.vmap(lambda a, b: a + b)(X, np.ones((3, 3))))
    _refused(ValueError, same + r"; leaf 1 of shape \(4, 3, 2\) has size 3 on axis 1",
             lambda: dg.vmap(lambda a, b: a + b, in_axes=(0, 1))(X, np.ones((4, 3, 2))))


def test_a_mapped_axis_out_of_range_or_a_mapped_0d_argument():
    _refused(ValueError, r"vmap: in_axes asks to map argument leaf 0 \(shape \(4, 3\)\) over axis 2, but it has only 2",
             lambda: dg.vmap(lambda a: a, in_axes=2)(X))
    _refused(ValueError, r"vmap: in_axes asks to map argument leaf 0 \(shape \(4, 3\)\) over axis -3",
             lambda: dg.vmap(lambda a: a, in_axes=-3)(X))
    _refused(ValueError, r"vmap: in_axes asks to map argument leaf 1 \(shape \(\)\) over axis 0, but it has only 0",
             lambda: dg.vmap(lambda a, s: a * s)(X, 2.0))


def test_out_axes_none_for_a_mapped_output():
    _refused(ValueError, r"vmap: out_axes is None for an output that differs between examples \(shape \(3,\) per",
             lambda: dg.vmap(lambda a: a * 2, out_axes=None)(X))
    _refused(ValueError, r"vmap: out_axes 2 is out of range for an output of 2 axes",
             lambda: dg.vmap(lambda a: a, out_axes=2)(X))


def test_no_mapped_argument_without_axis_size():
    _refused(ValueError, r"vmap: no argument is mapped \(every in_axes entry is None\); map at least one, or give",
             lambda: dg.vmap(lambda a: a, in_axes=None)(X))
    _refused(TypeError, r"vmap: expects a function, got int", lambda: dg.vmap(3))


def test_axis_size_and_in_axes_entries_are_checked():
    _refused(ValueError, r"vmap: axis_size must be a non-negative int, got -1",
             lambda: dg.vmap(lambda a: a, in_axes=None, axis_size=-1)(X))
    _refused(ValueError, r"vmap: the mapped axes must all have the same size.*; axis_size is 5",
             lambda: dg.vmap(lambda a: a, axis_size=5)(X))
    _refused(TypeError, r"vmap: an entry of in_axes must be an int, None, or a pytree of them, got float 0.0",
             lambda: dg.vmap(lambda a: a, in_axes=(0.0,))(X))
    _refused(TypeError, r"vmap: an entry of in_axes must be an int, None, or a pytree of them, got bool True",
             lambda: dg.vmap(lambda a: a, in_axes=(True,))(X))


def test_none_outputs_stay_none_and_unmapped_outputs_of_unknown_batch_are_refused():
    assert dg.vmap(lambda a: (a, None))(X)[1] is None  # None is an empty pytree, as in JAX
    with dg.Graph():
        xs = dg.placeholder((None, 3))
        _refused(ValueError, r"vmap: an output \(shape \(3,\)\) is the same for every example, and the batch size "
                 r"is unknown", lambda: dg.vmap(lambda a: np.ones(3))(xs))
        assert dg.vmap(lambda a: np.ones(3), out_axes=None)(xs).shape == (3,)
