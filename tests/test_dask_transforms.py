"""The functional transforms on Dask values (issue 17): vmap, jvp, vjp, grad (has_aux), jacfwd, jacrev,
hessian, checkpoint, custom rules (dg.Function, custom_vjp, custom_jvp), stop_gradient and the control-flow
transforms, on chunked Dask inputs. Nothing is computed while a transform runs (the scheduler refuses), the
results are Dask arrays, and once computed they equal the same transform on NumPy inputs. An eager predicate
of cond/while_loop (or a loop bound) is computed, and only it: that is counted."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="Dask is an optional extra: pip install dagrad[dask]")
import dask  # noqa: E402

import dagrad as dg  # noqa: E402
from dagrad._core.pytree import tree_flatten  # noqa: E402
from test_dask import _lazy  # noqa: E402  (a scheduler that refuses any compute)


class _Counting:
    """A scheduler that counts the computes it runs (and runs them synchronously)."""

    def __init__(self):
        self.computes = 0

    def __call__(self, dsk, keys, **kwargs):
        self.computes += 1
        return dask.get(dsk, keys, **kwargs)


def _next_line():
    """`test_dask_transforms.py:N` for the line after the caller's: an error must name it."""
    return rf"test_dask_transforms\.py:{inspect.currentframe().f_back.f_lineno + 1}\b"


RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 4))
W = RNG.standard_normal((4, 3))  # NumPy parameters
CT = RNG.standard_normal((6, 4))


def _dask(x):
    """`x` chunked in two along each axis of size >= 2 (4 chunks for a matrix, 2 for a vector)."""
    return da.from_array(x, chunks=tuple(max(n // 2, 1) for n in x.shape))


# per-example functions (a row of shape (4,) in, any shape out); under the whole-array transforms they see
# the whole (6, 4) array and act along its last axis
FUNCTIONS = {
    "elementwise": lambda x: dg.sin(x) * x + 0.5 * x,
    "reduction": lambda x: dg.sum(x * x, axis=-1),
    "matmul": lambda x: dg.tanh(x @ W),
    "softmax": lambda x: dg.softmax(x, axis=-1),
    "logsumexp": lambda x: dg.logsumexp(x, axis=-1),
}


def _scalar(f):
    return lambda x: dg.sum(f(x))


@dg.custom_vjp
def _custom_vjp_sin(x):
    return dg.sin(x)


_custom_vjp_sin.defvjp(lambda x: (dg.sin(x), x), lambda x, g: (g * dg.cos(x),))


@dg.custom_jvp
def _custom_jvp_sin(x):
    return dg.sin(x)


@_custom_jvp_sin.defjvp
def _custom_jvp_sin_rule(primals, tangents):
    return dg.sin(primals[0]), dg.cos(primals[0]) * tangents[0]


class _Cube(dg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


class _Pair(dg.Function):
    """Two outputs, packed by the engine into one value (lazily for Dask)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2, x ** 2

    @staticmethod
    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        return g1 * 2 + g2 * 2 * x


_primitive_sin = dg.primitive(lambda x: np.sin(x))  # autograd's style: a NumPy function, which Dask serves
dg.defvjp(_primitive_sin, lambda ans, x: lambda g: g * np.cos(x))


# transform name -> (function of f and the (6, 4) input x (Dask or NumPy) returning a pytree of arrays)
TRANSFORMS = {
    "vmap": lambda f, x: dg.vmap(f)(x),
    "vmap_in_axes_1_chunked": lambda f, x: dg.vmap(f, in_axes=1)(x.T),
    "vmap_out_axes_last": lambda f, x: dg.vmap(f, out_axes=-1)(x),
    "vmap_grad_numpy_params": lambda f, x: dg.vmap(dg.grad(lambda w, r: dg.sum(f(r @ w))), in_axes=(None, 0))(
        W @ W.T, x),
    "vmap_jacfwd": lambda f, x: dg.vmap(dg.jacfwd(f))(x),
    "vmap_jacrev": lambda f, x: dg.vmap(dg.jacrev(f))(x),
    "vmap_hessian": lambda f, x: dg.vmap(dg.hessian(_scalar(f)))(x),
    "jvp": lambda f, x: dg.jvp(f, (x,), (_like(x, CT),)),
    "vjp": lambda f, x: dg.vjp(f, x)[1](np.ones(np.shape(f(X)))),
    "grad": lambda f, x: dg.grad(_scalar(f))(x),
    "value_and_grad_has_aux": lambda f, x: dg.value_and_grad(lambda v: (dg.sum(f(v)), f(v) * 2), has_aux=True)(x),
    "jacfwd": lambda f, x: dg.jacfwd(f)(x[1]),
    "jacrev": lambda f, x: dg.jacrev(f)(x[1]),
    "hessian": lambda f, x: dg.hessian(_scalar(f))(x[1]),
    "checkpoint": lambda f, x: dg.grad(lambda v: dg.sum(dg.checkpoint(f)(v) ** 2))(x),
    "vmap_grad_checkpoint": lambda f, x: dg.vmap(dg.grad(lambda v: dg.sum(dg.checkpoint(f)(v) ** 2)))(x),
    "stop_gradient": lambda f, x: dg.grad(lambda v: dg.sum(f(v) * dg.stop_gradient(f(v))))(x),
    "custom_vjp": lambda f, x: dg.grad(lambda v: dg.sum(_custom_vjp_sin(f(v))))(x),
    "custom_jvp": lambda f, x: dg.jvp(lambda v: _custom_jvp_sin(f(v)), (x,), (_like(x, CT),)),
    "custom_jvp_grad": lambda f, x: dg.grad(lambda v: dg.sum(_custom_jvp_sin(f(v))))(x),
    "primitive_defvjp": lambda f, x: dg.grad(lambda v: dg.sum(_primitive_sin(f(v))))(x),
    "Function": lambda f, x: dg.grad(lambda v: dg.sum(_Cube.apply(f(v))))(x),
    "Function_two_outputs": lambda f, x: dg.grad(lambda v: dg.sum(_Pair.apply(f(v))[1] * _Pair.apply(f(v))[0]))(x),
    "scan": lambda f, x: dg.scan(lambda c, r: (c + f(r), c), f(x[0]) * 0.0, x),
    "grad_scan": lambda f, x: dg.grad(lambda v: dg.sum(dg.scan(lambda c, r: (c * 0.5 + f(r), None),
                                                                f(v[0]) * 0.0, v)[0]))(x),
    "fori_loop": lambda f, x: dg.fori_loop(0, 3, lambda i, v: v * 0.5 + 0.1 * dg.sum(f(v)), x),
    "vmap_fori_loop": lambda f, x: dg.vmap(lambda r: dg.fori_loop(0, 2, lambda i, v: v * 0.5 + f(r), f(r)))(x),
    "lax_map": lambda f, x: dg.lax.map(f, x),
    # a predicate that does not depend on the data (a Python counter in the carry) computes nothing
    "grad_while_loop": lambda f, x: dg.grad(lambda v: dg.sum(dg.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5 + 0.1 * dg.sum(f(c[1]))), (0, v))[1]))(x),
    "jvp_while_loop": lambda f, x: dg.jvp(lambda v: dg.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5 + 0.1 * dg.sum(f(c[1]))), (0, v))[1],
        (x,), (_like(x, CT),)),
    "hessian_vector_product": lambda f, x: dg.hessian_vector_product(_scalar(f))(x, _like(x, CT)),
    "make_jvp": lambda f, x: dg.make_jvp(f)(x)(_like(x, CT)),
    "cond_python_predicate": lambda f, x: dg.cond(True, f, lambda v: f(v) * 2.0, x),
    "vmap_cond_per_example": lambda f, x: dg.vmap(lambda r: dg.cond(dg.sum(r) > 0, f, lambda v: f(v) * 2.0, r))(x),
    "grad_vmap_cond": lambda f, x: dg.grad(lambda v: dg.sum(dg.vmap(
        lambda r: dg.cond(dg.sum(r) > 0, f, lambda u: f(u) * 2.0, r))(v)))(x),
}


def _like(x, values):
    """`values` of the same array type as `x` (a Dask tangent for a Dask primal)."""
    return _dask(values) if isinstance(x, da.Array) else values


def _leaves(tree):
    return [leaf._value if isinstance(leaf, dg.Tensor) else leaf for leaf in tree_flatten(tree)[0]]


@pytest.mark.parametrize("fname", list(FUNCTIONS))
@pytest.mark.parametrize("tname", list(TRANSFORMS))
def test_transform_on_dask_stays_lazy_and_equals_numpy(tname, fname):
    transform, f = TRANSFORMS[tname], FUNCTIONS[fname]
    with _lazy():
        got = transform(f, _dask(X))
    expected = transform(f, X)
    got, expected = _leaves(got), _leaves(expected)
    assert len(got) == len(expected)
    assert any(isinstance(g, da.Array) for g in got)  # a result that depends on the data is lazy
    for g, e in zip(dask.compute(*got), expected):
        assert np.shape(g) == np.shape(e) and np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_vmap_grad_per_example_gradients_over_a_dask_batch_with_numpy_parameters():
    """Per-example gradients of a logistic loss: one gradient per row, a lazy map over the row chunks,
    equal to the gradients written by hand in NumPy."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((40, 3)), (rng.uniform(size=40) < 0.5).astype(np.float64)
    w = rng.standard_normal(3)

    def loss(w, xi, yi):
        p = dg.sigmoid(xi @ w)
        return -(yi * dg.log(p) + (1 - yi) * dg.log(1 - p))

    dx, dy = da.from_array(x, chunks=(10, 3)), da.from_array(y, chunks=10)  # 4 chunks of rows
    with _lazy():
        per_example = dg.vmap(dg.grad(loss), in_axes=(None, 0, 0))(w, dx, dy)
    assert isinstance(per_example, da.Array) and per_example.shape == (40, 3)
    assert per_example.chunks[0] == (10, 10, 10, 10)  # still one block per chunk of rows
    by_hand = (1 / (1 + np.exp(-(x @ w))) - y)[:, None] * x
    np.testing.assert_allclose(per_example.compute(), by_hand, rtol=1e-12)
    for k in (0, 17, 39):  # and a plain loop of dg.grad over the rows
        np.testing.assert_allclose(per_example[k].compute(), dg.grad(loss)(w, x[k], y[k]), rtol=1e-12)


def test_hessian_of_numpy_parameters_over_dask_data_for_a_newton_step():
    """The Hessian of a logistic loss in NumPy parameters over Dask data (one Newton step's matrix): a lazy
    reduction over the row chunks, equal to X^T diag(p (1 - p)) X / n written by hand."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((60, 3)), (rng.uniform(size=60) < 0.5).astype(np.float64)
    w = rng.standard_normal(3) * 0.3
    dx, dy = da.from_array(x, chunks=(20, 3)), da.from_array(y, chunks=20)

    def loss(w, x, y):
        p = dg.sigmoid(x @ w)
        return -dg.mean(y * dg.log(p) + (1 - y) * dg.log(1 - p))

    with _lazy():
        h = dg.hessian(loss)(w, dx, dy)
        g = dg.grad(loss)(w, dx, dy)
    assert isinstance(h, da.Array) and isinstance(g, da.Array) and h.shape == (3, 3)
    h, g = dask.compute(h, g)
    p = 1 / (1 + np.exp(-(x @ w)))
    np.testing.assert_allclose(h, (x * (p * (1 - p))[:, None]).T @ x / 60, rtol=1e-12)
    np.testing.assert_allclose(g, x.T @ (p - y) / 60, rtol=1e-12)


def test_vmap_keeps_a_dask_tensor_and_a_dask_closure_lazy():
    dx = _dask(X)
    with _lazy():
        out = dg.vmap(lambda r: dg.sum(r * r))(dg.tensor(dx))
        shared, mapped = dg.vmap(lambda r: (dx[0] * 1.0, r * 2.0))(X)  # an output the same for every example
    assert isinstance(out, dg.Tensor) and isinstance(out._value, da.Array)
    assert isinstance(shared, da.Array) and isinstance(mapped, np.ndarray)
    np.testing.assert_allclose(out._value.compute(), (X * X).sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(shared.compute(), np.broadcast_to(X[0], (6, 4)))


def test_jacobian_of_an_eager_tensor_holding_dask_is_a_dask_tensor():
    t = dg.tensor(_dask(X[0]))
    with _lazy():
        jac = dg.jacfwd(dg.sin)(t)
        jac_rev = dg.jacrev(dg.sin)(t)
    for j in (jac, jac_rev):
        assert isinstance(j, dg.Tensor) and isinstance(j._value, da.Array)
        np.testing.assert_allclose(j._value.compute(), np.diag(np.cos(X[0])), rtol=1e-12)


def test_autograd_grad_of_a_dask_computation_stays_lazy():
    """PyTorch's torch.autograd.grad: the seed, a Dask grad_output and the gradients stay Dask arrays."""
    t = dg.tensor(_dask(X), requires_grad=True)
    with _lazy():
        (g,) = dg.autograd.grad(dg.sum(dg.sin(t)), t)
        (h,) = dg.autograd.grad(dg.sin(t) * 2.0, t, grad_outputs=_dask(CT))
    assert isinstance(g._value, da.Array) and isinstance(h._value, da.Array)
    np.testing.assert_allclose(g._value.compute(), np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(h._value.compute(), 2 * np.cos(X) * CT, rtol=1e-12)


def test_ravel_pytree_of_dask_leaves_stays_lazy():
    with _lazy():
        flat, unravel = dg.ravel_pytree({"a": _dask(X), "b": np.ones(2)})
        back = unravel(flat * 2)
    assert isinstance(flat, da.Array) and isinstance(back["a"], da.Array)
    np.testing.assert_allclose(flat.compute(), np.concatenate([X.ravel(), np.ones(2)]))
    np.testing.assert_allclose(back["a"].compute(), 2 * X)


# ---------------------------------------------------------------- control flow: predicates are computed


def test_cond_computes_a_dask_predicate_once_and_keeps_the_branches_lazy():
    dx = _dask(X)
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        out = dg.cond(dg.sum(dx) > 0, dg.sin, dg.cos, dx)
        assert counting.computes == 1  # the predicate, as bool(t) computes it
        assert isinstance(out, da.Array)
    expected = np.sin(X) if X.sum() > 0 else np.cos(X)
    np.testing.assert_allclose(out.compute(), expected, rtol=1e-12)


def test_while_loop_computes_its_dask_predicate_once_per_check():
    dx = _dask(np.abs(X))
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        out = dg.while_loop(lambda v: dg.sum(v) < 100.0, lambda v: v * 2.0, dx)
    assert isinstance(out, da.Array)
    steps, v = 0, np.abs(X)
    while v.sum() < 100.0:
        v, steps = v * 2.0, steps + 1
    assert steps >= 2 and counting.computes == steps + 1  # one compute per check, none for the carry
    np.testing.assert_allclose(out.compute(), v, rtol=1e-12)


def test_vmap_while_loop_computes_one_flag_per_example_per_check():
    dx = _dask(np.abs(X))
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        out = dg.vmap(lambda r: dg.while_loop(lambda v: dg.sum(v) < 20.0, lambda v: v + 1.0, r))(dx)
    assert isinstance(out, da.Array)
    expected = np.array([_loop(row) for row in np.abs(X)])
    np.testing.assert_allclose(out.compute(), expected, rtol=1e-12)
    assert counting.computes == max(_steps(row) for row in np.abs(X)) + 1  # the flags, once per check


def _loop(v):
    while v.sum() < 20.0:
        v = v + 1.0
    return v


def _steps(v):
    n = 0
    while v.sum() < 20.0:
        v, n = v + 1.0, n + 1
    return n


def test_fori_loop_and_switch_compute_dask_bounds_and_indices_explicitly():
    dx = _dask(X)
    counting = _Counting()
    with dask.config.set(scheduler=counting):
        out = dg.fori_loop(0, da.from_array(np.int64(3)), lambda i, v: v * 2.0, dx)
        assert counting.computes == 1 and isinstance(out, da.Array)  # the Dask bound
        chosen = dg.lax.switch(da.from_array(np.int64(1)), [dg.sin, dg.cos, dg.tanh], dx)
        assert isinstance(chosen, da.Array)
    np.testing.assert_allclose(out.compute(), X * 8.0, rtol=1e-12)
    np.testing.assert_allclose(chosen.compute(), np.cos(X), rtol=1e-12)


def test_vmap_with_a_dask_index_predicate_under_jvp_stays_lazy():
    """jvp through a per-example cond: both branches and their tangents, selected lazily."""
    dx = _dask(X)
    with _lazy():
        out, tangent = dg.jvp(dg.vmap(lambda r: dg.cond(r[0] > 0, dg.sin, dg.cos, r)), (dx,), (_dask(CT),))
    pick = (X[:, :1] > 0)
    np.testing.assert_allclose(out.compute(), np.where(pick, np.sin(X), np.cos(X)), rtol=1e-12)
    np.testing.assert_allclose(tangent.compute(), np.where(pick, np.cos(X), -np.sin(X)) * CT, rtol=1e-12)


def test_building_a_static_graph_with_control_flow_over_a_dask_constant_computes_nothing():
    """Graph mode: a Dask operand of scan or cond stays a lazy constant of the node (np.asarray loaded it)."""
    dx = _dask(X)
    with _lazy(), dg.Graph() as g:
        c0 = dg.placeholder((4,), name="c0")
        carry, ys = dg.scan(lambda c, r: (c + r, c * r), c0, dx)
        picked = dg.cond(dg.sum(c0) > 0, lambda v: v + dx[0], lambda v: v - dx[0], c0)
    assert len(g) > 0 and carry.shape == (4,) and ys.shape == (6, 4) and picked.shape == (4,)


# ---------------------------------------------------------------- errors: clear, before anything is computed


def _unknown_sizes():
    """A Dask array whose chunk sizes are unknown (after a boolean mask), rows of 4."""
    dx = _dask(X)
    return dx[dx[:, 0] > -10.0]


def test_vmap_refuses_unknown_chunk_sizes_naming_vmap_and_the_line():
    masked = _unknown_sizes()
    with _lazy():
        with pytest.raises(ValueError, match=r"vmap: needs the shape of a Dask array whose chunk sizes are unknown "
                                             r"\(shape \(nan, 4\)\).*compute_chunk_sizes.*" + _next_line()):
            dg.vmap(dg.sum)(masked)


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "hessian"])
def test_jacobians_refuse_unknown_chunk_sizes_naming_the_transform_and_the_line(name):
    masked = _unknown_sizes()[:, 0]
    transform = getattr(dg, name)
    expected = "jacobian" if name == "jacrev" else "jacfwd" if name == "hessian" else name
    with _lazy():
        with pytest.raises(ValueError, match=rf"{expected}: needs the shape of a Dask array .*unknown.*"
                                             + _next_line()):
            transform(lambda v: dg.sum(v * v))(masked)


def test_cond_refuses_a_dask_predicate_of_several_elements_without_computing():
    dx = _dask(X)
    with _lazy():
        with pytest.raises(TypeError, match=r"cond: pred must be a scalar bool, got .*\(6,\) bool.*" + _next_line()):
            dg.cond(dx[:, 0] > 0, dg.sin, dg.cos, dx)


CONTROL_FLOW = {
    "cond": lambda m: dg.cond(True, dg.sin, dg.cos, m),
    "while_loop": lambda m: dg.while_loop(lambda v: dg.sum(v) < 1.0, lambda v: v * 2.0, m),
    "fori_loop": lambda m: dg.fori_loop(0, 2, lambda i, v: v * 2.0, m),
    "scan": lambda m: dg.scan(lambda c, r: (c + dg.sum(r), c), 0.0, m),
}


@pytest.mark.parametrize("name", list(CONTROL_FLOW))
def test_control_flow_refuses_operands_of_unknown_size_naming_it_and_the_line(name):
    """The carry's shape is compared with the body's result (and cond traces the other branch): unknown sizes
    are refused before anything is computed (the predicate included)."""
    masked = _unknown_sizes()
    with _lazy():
        call = CONTROL_FLOW[name]  # the error names the line of the call, in the table above
        with pytest.raises(ValueError, match=rf"{name}: needs the shape of a Dask array whose chunk sizes are "
                                             rf"unknown \(shape \(nan, 4\)\).*test_dask_transforms\.py:"
                                             rf"{call.__code__.co_firstlineno}\b"):
            call(masked)


def test_vmap_refuses_mismatched_dask_and_numpy_batches_naming_the_shapes_and_line():
    with _lazy():
        with pytest.raises(ValueError, match=r"vmap: the mapped axes must all have the same size.*\(6, 4\).*"
                                             r"\(5, 4\).*" + _next_line()):
            dg.vmap(lambda a, b: a * b)(_dask(X), X[:5])


def test_vjp_refuses_a_dask_cotangent_of_the_wrong_shape_without_computing():
    dx = _dask(X)
    with _lazy():
        _, f_vjp = dg.vjp(dg.sin, dx)
        with pytest.raises(ValueError, match=r"vjp: the cotangent has shape \(4, 6\) but the output has shape "
                                             r"\(6, 4\).*" + _next_line()):
            f_vjp(_dask(X.T))


def test_function_forward_returning_a_non_array_is_still_refused():
    class Bad(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return "nope"

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match=r"Bad.forward: returned a str; forward returns a NumPy array \(or number, or "
                                        r"a Dask or CuPy array\)"):
        Bad.apply(dg.tensor(_dask(X)))

