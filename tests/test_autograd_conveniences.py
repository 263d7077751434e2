"""Issue 16 item 8: NumPy semantics the peers' users rely on (reductions over lists of traced values,
einsum's sublist form, integer traced values as indices), `dg.ravel_pytree`, and HIPS autograd's
differential operators (dagrad/differential.py). Values against NumPy, plain loops and central
differences; each bad input a clear error naming the function and this file's line."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp

RNG = np.random.default_rng(16)
HERE = r"test_autograd_conveniences\.py:\d+"


def central(f, x, eps=1e-6):
    """The gradient of scalar f at x by central differences."""
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def jacobian_fd(f, x, eps=1e-6):
    """d f(x) / d x by central differences: shape f(x).shape + x.shape."""
    x = np.asarray(x, float)
    out = np.asarray(f(x))
    jac = np.zeros(out.shape + x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        jac[(...,) + i] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps)
    return jac


# -- reductions and linalg.norm over a list of traced values
REDUCTIONS = [dnp.sum, dnp.mean, dnp.max, dnp.min, dnp.prod, dnp.std, dnp.var, dnp.linalg.norm]
NUMPY_OF = {dnp.sum: np.sum, dnp.mean: np.mean, dnp.max: np.max, dnp.min: np.min, dnp.prod: np.prod,
            dnp.std: np.std, dnp.var: np.var, dnp.linalg.norm: np.linalg.norm}


@pytest.mark.parametrize("reduce", REDUCTIONS, ids=lambda f: f.__name__)
def test_reduction_of_a_list_of_traced_values(reduce):
    x = np.array([0.3, 1.7, -0.8])

    def f(x):
        return reduce([x, x * x + 2.0, [dnp.sin(x[0]), 1.5, x[2] ** 3]])

    def f_numpy(x):
        return NUMPY_OF[reduce]([x, x * x + 2.0, [np.sin(x[0]), 1.5, x[2] ** 3]])

    assert np.allclose(dg.grad(f)(x), central(f_numpy, x), atol=1e-6)
    assert np.allclose(f(x), f_numpy(x))
    _, tangent = dg.jvp(f, (x,), (np.array([1.0, -2.0, 0.5]),))
    assert np.isclose(tangent, central(f_numpy, x) @ np.array([1.0, -2.0, 0.5]), atol=1e-6)


@pytest.mark.parametrize("reduce", [dnp.sum, dnp.mean, dnp.max, dnp.std], ids=lambda f: f.__name__)
def test_reduction_of_a_tuple_along_an_axis(reduce):
    x = np.array([0.3, 1.7, -0.8])

    def f(x):
        return dnp.sum(reduce((x, 3.0 * x, x ** 2), axis=0) * np.array([1.0, 2.0, 3.0]))

    def f_numpy(x):
        return np.sum(NUMPY_OF[reduce]((x, 3.0 * x, x ** 2), axis=0) * np.array([1.0, 2.0, 3.0]))

    assert np.allclose(dg.grad(f)(x), central(f_numpy, x), atol=1e-6)


def test_list_reduction_of_eager_tensors_and_under_compile():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = dnp.mean([x, x + 2.0])
    y.backward()
    assert float(y) == 2.5 and np.allclose(x.grad.numpy(), [0.5, 0.5])
    compiled = dg.compile(lambda x: dnp.mean([x, x * 3.0], axis=0))
    assert np.allclose(compiled(np.array([1.0, 2.0])), [2.0, 4.0])
    assert np.allclose(dg.compile(dg.grad(lambda x: dnp.linalg.norm([x[0], x[1] * 2.0])))(np.array([3.0, 2.0])),
                       [0.6, 1.6])


def test_list_of_plain_values_is_numpys():
    assert dnp.mean([1.0, 2.0, 4.0]) == np.mean([1.0, 2.0, 4.0])
    assert dnp.linalg.norm([3.0, 4.0]) == 5.0
    with pytest.raises(ValueError, match=r"sum: cannot make an array of the list.*" + HERE):
        dnp.sum([[1.0, 2.0], [3.0]])


def test_ragged_list_of_traced_values_is_refused():
    with pytest.raises(ValueError, match=r"mean: the list's items must have one shape.*\(\), \(2,\).*" + HERE):
        dg.grad(lambda s: dnp.mean([s, np.ones(2)]))(1.0)
    with pytest.raises(ValueError, match=r"linalg.norm: the list's items must have one shape.*" + HERE):
        dg.grad(lambda s: dnp.linalg.norm([s, np.ones(2)]))(1.0)


# -- einsum's sublist form
A = RNG.normal(size=(2, 3))
B = RNG.normal(size=(3, 4))
C = RNG.normal(size=(5, 2, 3))
SUBLIST_CASES = [
    (A, [0, 1], [1, 0]),
    (A, [0, 1], B, [1, 2]),
    (A, [0, 1], B, [1, 2], [0, 2]),
    (A, [1, 0]),
    (C, [Ellipsis, 0, 1], A, [0, 1], [Ellipsis]),
    (C, [Ellipsis, 1], [Ellipsis]),
    (A, [30, 2], B, [2, 40], [40, 30]),
    (np.eye(3), [5, 5]),
]


@pytest.mark.parametrize("case", SUBLIST_CASES, ids=range(len(SUBLIST_CASES)))
def test_einsum_sublist_form_matches_numpy(case):
    assert np.allclose(dnp.einsum(*case), np.einsum(*case))
    assert np.shape(dnp.einsum(*case)) == np.shape(np.einsum(*case))


def test_einsum_sublist_form_differentiates():
    def f(a):
        return dnp.sum(dnp.einsum(a, [0, 1], B, [1, 2], [2, 0]) ** 2)

    assert np.allclose(dg.grad(f)(A), central(lambda a: np.sum(np.einsum(a, [0, 1], B, [1, 2], [2, 0]) ** 2), A),
                       atol=1e-5)
    assert np.allclose(dg.compile(f)(A), f(A))


def test_einsum_bad_sublists():
    with pytest.raises(ValueError, match=r"einsum: the sublist of operand 0 \[0, 'a'\] holds 'a'.*0 to 51.*" + HERE):
        dnp.einsum(A, [0, "a"])
    with pytest.raises(ValueError, match=r"einsum: the sublist of operand 1 \[1, 52\] holds 52.*" + HERE):
        dnp.einsum(A, [0, 1], B, [1, 52])
    with pytest.raises(ValueError, match=r"einsum: .*holds True.*" + HERE):
        dnp.einsum(A, [0, True])
    with pytest.raises(TypeError, match=r"einsum: the output sublist must be a list.*got ndarray.*" + HERE):
        dnp.einsum(A, [0, 1], B)  # B's sublist is missing: B reads as the output's
    with pytest.raises(ValueError, match=r"einsum: operand 0 has 2 dimension\(s\).*" + HERE):
        dnp.einsum(A, [0, 1, 2])


# -- integer traced values as indices
def test_integer_box_as_index_under_grad_and_jvp():
    x = np.array([1.0, 5.0, 3.0])

    def f(x):
        i = dnp.argmax(x)
        return x[np.int64(i)] * 2.0 + x[int(i)] + x[i] * x[0]

    assert np.allclose(dg.grad(f)(x), [5.0, 3.0 + 1.0, 0.0])
    value, tangent = dg.jvp(f, (x,), (np.array([1.0, 1.0, 1.0]),))
    assert value == 5.0 * 2 + 5.0 + 5.0 and tangent == 2.0 + 1.0 + 1.0 + 5.0
    assert np.allclose(dg.hessian(f)(x), [[0, 1, 0], [1, 0, 0], [0, 0, 0]])


def test_traced_integer_index_under_compile():
    def f(x, i):
        return x[i] * 2.0

    x = np.array([1.0, 5.0, 3.0])
    compiled = dg.compile(f)
    assert compiled(x, np.array(1)) == 10.0 and compiled(x, np.array(2)) == 6.0
    assert np.allclose(dg.compile(dg.grad(f))(x, np.array(2)), [0.0, 0.0, 2.0])
    assert np.allclose(dg.compile(dg.grad(lambda x: x[dnp.argmax(x)] ** 2))(x), [0.0, 10.0, 0.0])


def test_int_of_a_traced_index_under_compile_says_to_index_with_it():
    with pytest.raises(TypeError, match=r"np.asarray\(\) of a value traced by dg.compile.*use it as it is \(x\[i\]"
                       r".*" + HERE):
        dg.compile(lambda x, i: x[np.int64(i)])(np.ones(3), np.array(1))
    with pytest.raises(TypeError, match=r"int\(\) of a value traced by dg.compile.*use it as it is.*" + HERE):
        dg.compile(lambda x, i: x[int(i)])(np.ones(3), np.array(1))
    with pytest.raises(TypeError, match=r"dg.compile.*use it as it is.*" + HERE):  # a box around a graph node
        dg.compile(dg.grad(lambda x: x[int(dnp.argmax(x))]))(np.ones(3))


def test_int_of_a_vmapped_index_refused_and_float_box_still_refused():
    with pytest.raises(TypeError, match=r"vmap: a value mapped by vmap.*" + HERE):
        dg.vmap(lambda x: x[np.int64(dnp.argmax(x))])(np.eye(3))
    assert np.allclose(dg.vmap(lambda x: x[dnp.argmax(x)])(np.eye(3) * 2), [2.0, 2.0, 2.0])
    with pytest.raises(TypeError, match=r"np.asarray: a value traced by a transform.*derivative would be lost"):
        dg.grad(lambda x: np.asarray(x) * 2.0)(1.0)


# -- ravel_pytree
def test_ravel_pytree_values_and_round_trip():
    tree = {"w": RNG.normal(size=(2, 3)), "b": (np.arange(3.0), 2.5), "n": [np.ones((1, 2), np.float32)]}
    flat, unravel = dg.ravel_pytree(tree)
    # the leaves in dagrad's pytree order (a dict's own order; JAX sorts the keys)
    expected = np.concatenate([tree["w"].ravel(), tree["b"][0], [2.5], tree["n"][0].ravel()])
    assert flat.dtype == np.float64 and np.array_equal(flat, expected)
    back = unravel(flat)
    assert set(back) == {"w", "b", "n"} and isinstance(back["b"], tuple) and isinstance(back["n"], list)
    assert np.array_equal(back["w"], tree["w"]) and back["n"][0].dtype == np.float32
    assert back["n"][0].shape == (1, 2) and np.shape(back["b"][1]) == ()


def test_ravel_pytree_promotes_as_numpy_and_casts_back():
    flat, unravel = dg.ravel_pytree([np.array([1, 2], np.int32), np.array([0.5], np.float32)])
    assert flat.dtype == np.float64 and np.array_equal(flat, [1.0, 2.0, 0.5])
    ints, floats = unravel(np.array([3.0, 4.0, 1.5]))
    assert ints.dtype == np.int32 and np.array_equal(ints, [3, 4]) and floats.dtype == np.float32
    flat32, _ = dg.ravel_pytree((np.ones(2, np.float32),))
    assert flat32.dtype == np.float32
    empty, unravel_empty = dg.ravel_pytree({})
    assert empty.shape == (0,) and unravel_empty(empty) == {}


def test_ravel_pytree_differentiates_both_ways():
    params = {"a": np.array([1.0, 2.0]), "b": np.array([[0.5]])}

    def loss_of_flat(v):
        p = unravel(v)
        return dnp.sum(p["a"] ** 2) * p["b"][0, 0]

    _, unravel = dg.ravel_pytree(params)
    v = np.array([1.0, 2.0, 0.5])
    assert np.allclose(dg.grad(loss_of_flat)(v), central(loss_of_flat, v), atol=1e-6)

    def flat_of_tree(p):
        return dnp.sum(dg.ravel_pytree(p)[0] * np.array([1.0, 2.0, 3.0]) ** 2)

    g = dg.grad(flat_of_tree)(params)
    assert np.allclose(g["a"], [1.0, 4.0]) and np.allclose(g["b"], [[9.0]])
    tangent = dg.jvp(lambda a: dg.ravel_pytree({"x": a, "y": a * 2})[0], (np.ones(2),), (np.array([1.0, 3.0]),))[1]
    assert np.allclose(tangent, [1.0, 3.0, 2.0, 6.0])


def test_ravel_pytree_of_tensors():
    w = dg.tensor([[1.0, 2.0]], requires_grad=True)
    flat, unravel = dg.ravel_pytree([w, dg.tensor(3.0)])
    assert isinstance(flat, dg.Tensor) and np.allclose(flat.numpy(), [1.0, 2.0, 3.0])
    (flat ** 2).sum().backward()
    assert np.allclose(w.grad.numpy(), [[2.0, 4.0]])
    assert unravel(flat)[0].shape == (1, 2)


def test_ravel_pytree_bad_input():
    _, unravel = dg.ravel_pytree({"a": np.ones(3)})
    with pytest.raises(ValueError, match=r"unravel: expected a vector of shape \(3,\).*got shape \(4,\).*" + HERE):
        unravel(np.ones(4))
    with pytest.raises(TypeError, match=r"unravel: expected a vector of dtype float64.*got dtype float32.*" + HERE):
        unravel(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"ravel_pytree: a leaf must be a bool, integer, floating-point or "
                       r"complex.*str.*" + HERE):
        dg.ravel_pytree({"a": "text"})


# -- autograd's differential operators
def f_cubic(x, y):
    return dnp.sum(dnp.sin(x) * x ** 2) * y


def f_cubic_numpy(x, y):
    return np.sum(np.sin(x) * x ** 2) * y


X = np.array([0.4, -1.1, 2.0])


def test_deriv_is_forward_mode_along_ones():
    assert np.isclose(dg.deriv(dnp.tanh)(0.3), 1 - np.tanh(0.3) ** 2)
    assert np.allclose(dg.deriv(lambda x: x ** 3)(X), 3 * X ** 2)
    assert np.isclose(dg.deriv(f_cubic, 1)(X, 2.0), f_cubic_numpy(X, 1.0))
    assert np.isclose(dg.deriv(dg.deriv(dnp.sin))(0.7), -np.sin(0.7))


def test_grad_and_aux():
    g, aux = dg.grad_and_aux(lambda x, y: (f_cubic(x, y), {"value": f_cubic(x, y), "tag": "t"}))(X, 2.0)
    assert np.allclose(g, central(lambda x: f_cubic_numpy(x, 2.0), X), atol=1e-6)
    assert np.isclose(aux["value"], f_cubic_numpy(X, 2.0)) and isinstance(aux["value"], np.floating)
    assert aux["tag"] == "t"
    g1, aux1 = dg.grad_and_aux(lambda x, y: (f_cubic(x, y), y), 1)(X, 2.0)
    assert np.isclose(g1, f_cubic_numpy(X, 1.0)) and aux1 == 2.0
    (value, aux2), g2 = dg.value_and_grad(lambda x: (dnp.sum(x ** 2), x[0]), has_aux=True)(X)
    assert np.isclose(value, np.sum(X ** 2)) and aux2 == X[0] and np.allclose(g2, 2 * X)


def test_grad_and_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"grad: with has_aux=True the function must return a pair \(value, aux\), "
                       r"got Tensor.*" + HERE):
        dg.grad_and_aux(lambda x: dnp.sum(x))(X)
    with pytest.raises(TypeError, match=r"grad: with has_aux=True .*tuple of 3 items.*" + HERE):
        dg.grad_and_aux(lambda x: (dnp.sum(x), 1, 2))(X)


def hessian_fd(f, x):
    return jacobian_fd(lambda z: central(f, z, 1e-5), x, 1e-4)


def test_make_hvp_and_hessian_vector_product():
    v = np.array([1.0, -0.5, 2.0])
    H = hessian_fd(lambda x: f_cubic_numpy(x, 2.0), X)
    hvp, g = dg.make_hvp(f_cubic)(X, 2.0)
    assert np.allclose(g, central(lambda x: f_cubic_numpy(x, 2.0), X), atol=1e-6)
    assert np.allclose(hvp(v), H @ v, atol=1e-4)
    assert np.allclose(hvp(np.eye(3)[1]), H[1], atol=1e-4)
    assert np.allclose(dg.hessian_vector_product(f_cubic)(X, 2.0, v), H @ v, atol=1e-4)
    assert dg.hessian_vector_product is dg.hessian_tensor_product
    M = RNG.normal(size=(2, 2))
    T = RNG.normal(size=(2, 2))
    quartic = lambda m: dnp.sum(m ** 4)  # noqa: E731
    assert np.allclose(dg.hessian_tensor_product(quartic)(M, T), 12 * M ** 2 * T)


def test_tensor_jacobian_product():
    def f(x):
        return dnp.outer(x, dnp.exp(x))

    T = RNG.normal(size=(3, 3))
    J = jacobian_fd(lambda x: np.outer(x, np.exp(x)), X)
    assert np.allclose(dg.tensor_jacobian_product(f)(X, T), np.tensordot(T, J, 2), atol=1e-5)
    assert dg.vector_jacobian_product is dg.tensor_jacobian_product
    v = np.array([1.0, 2.0, 3.0])
    assert np.allclose(dg.vector_jacobian_product(lambda x: dnp.sin(x) * x[0])(X, v),
                       v @ jacobian_fd(lambda x: np.sin(x) * x[0], X), atol=1e-6)


def test_make_vjp_and_make_jvp():
    def f(x, w):
        return dnp.tanh(w @ x)

    W = RNG.normal(size=(2, 3))
    J = jacobian_fd(lambda x: np.tanh(W @ x), X)
    f_vjp, value = dg.make_vjp(f)(X, W)
    assert np.allclose(value, np.tanh(W @ X))
    assert np.allclose(f_vjp(np.array([1.0, -1.0])), np.array([1.0, -1.0]) @ J, atol=1e-6)
    value2, tangent = dg.make_jvp(f)(X, W)(np.array([0.0, 1.0, 0.0]))
    assert np.allclose(value2, value) and np.allclose(tangent, J[:, 1], atol=1e-6)
    JW = jacobian_fd(lambda w: np.tanh(w @ X), W)
    f_vjp_w, _ = dg.make_vjp(f, 1)(X, W)
    assert np.allclose(f_vjp_w(np.array([0.5, 2.0])), np.tensordot([0.5, 2.0], JW, 1), atol=1e-6)
    both_vjp, _ = dg.make_vjp(f, (0, 1))(X, W)
    gx, gw = both_vjp(np.array([1.0, 0.0]))
    assert np.allclose(gx, J[0], atol=1e-6) and np.allclose(gw, JW[0], atol=1e-6)


def test_make_ggnvp():
    W = RNG.normal(size=(4, 3))

    def f(x):
        return dnp.sin(W @ x)

    J = jacobian_fd(lambda x: np.sin(W @ x), X)
    v = np.array([0.3, 1.0, -2.0])
    assert np.allclose(dg.make_ggnvp(f)(X)(v), J.T @ J @ v, atol=1e-5)
    # g's Hessian at f(x): for g(y) = sum(exp(y)) it is diag(exp(f(x)))
    ggnvp = dg.make_ggnvp(f, g=lambda y: dnp.sum(dnp.exp(y)))(X)
    assert np.allclose(ggnvp(v), J.T @ np.diag(np.exp(np.sin(W @ X))) @ J @ v, atol=1e-5)


def test_multigrad_dict():
    def f(a, b, c=3.0, *rest, scale=1.0):
        return (a * b ** 2 + c + sum(rest)) * scale

    grads = dg.multigrad_dict(f)(2.0, 3.0, scale=2.0)
    assert list(grads) == ["a", "b", "scale"]
    assert np.allclose([grads["a"], grads["b"], grads["scale"]], [18.0, 24.0, 21.0])
    grads = dg.multigrad_dict(f)(2.0, 3.0, 1.0, 4.0, 5.0)
    assert np.allclose(grads["c"], 1.0) and np.allclose(grads["rest"], (1.0, 1.0))


def test_operators_nest_and_compile():
    hvp_compiled = dg.compile(lambda x, v: dg.hessian_vector_product(f_cubic)(x, 2.0, v))
    v = np.array([1.0, 0.0, 0.0])
    assert np.allclose(hvp_compiled(X, v), dg.hessian_vector_product(f_cubic)(X, 2.0, v))
    assert np.allclose(dg.grad(lambda x: dnp.sum(dg.deriv(dnp.sin)(x)))(X), -np.sin(X))
    t = dg.tensor(X)
    assert isinstance(dg.make_hvp(f_cubic)(t, 2.0)[0](dg.tensor(v)), dg.Tensor)


@pytest.mark.parametrize("make", [dg.deriv, dg.grad_and_aux, dg.make_hvp, dg.make_jvp, dg.make_vjp, dg.make_ggnvp,
                                  dg.hessian_vector_product, dg.tensor_jacobian_product, dg.multigrad_dict],
                         ids=lambda f: f.__name__)
def test_not_a_function(make):
    name = "hessian_vector_product" if make is dg.hessian_vector_product else make.__name__
    with pytest.raises(TypeError, match=rf"{name}: expects a function, got int.*" + HERE):
        make(3)


def test_bad_argnum_and_tensor():
    with pytest.raises(ValueError, match=r"make_vjp: argnum 2 is out of range for a function called with 2 "
                       r"arguments.*" + HERE):
        dg.make_vjp(f_cubic, 2)(X, 2.0)
    with pytest.raises(TypeError, match=r"make_hvp: argnum must be an int or a tuple of ints, got 'x'.*" + HERE):
        dg.make_hvp(f_cubic, "x")(X, 2.0)
    with pytest.raises(ValueError, match=r"hessian_vector_product: the tensor \(the last argument\) has shape \(2,\) "
                       r"but argument 0 has shape \(3,\).*" + HERE):
        dg.hessian_vector_product(f_cubic)(X, 2.0, np.ones(2))
    with pytest.raises(TypeError, match=r"hessian_vector_product: expects the function's arguments and then the "
                       r"tensor, got 1.*" + HERE):
        dg.hessian_vector_product(lambda x: dnp.sum(x))(X)
    with pytest.raises(ValueError, match=r"tensor_jacobian_product: the tensor \(the last argument\) has shape "
                       r"\(2,\) but the function's output has shape \(3,\).*" + HERE):
        dg.tensor_jacobian_product(dnp.sin)(X, np.ones(2))
    with pytest.raises(TypeError, match=r"multigrad_dict: the arguments do not fit \(a, b\).*" + HERE):
        dg.multigrad_dict(lambda a, b: a * b)(1.0)
    with pytest.raises(TypeError, match=r"make_ggnvp: expects a function, got str.*" + HERE):
        dg.make_ggnvp(dnp.sin, g="sum")


def test_tensor_jacobian_product_over_the_outputs_leading_axes():
    f = lambda a: dnp.roll(dnp.sin(a), 1)
    a, v = RNG.normal(size=(5, 4, 3)), RNG.normal(size=(5, 4))
    j = dg.jacobian(f)(a)
    np.testing.assert_allclose(dg.tensor_jacobian_product(f)(a, v), np.tensordot(v, j, axes=2), rtol=1e-12)


def test_make_ggnvp_has_autograds_signature():
    a_mat, x, v = RNG.normal(size=(5, 4)), RNG.normal(size=4), RNG.normal(size=4)
    g = lambda y: dnp.sum(2.0 * y ** 2 + y ** 4)
    f = lambda x: dnp.tanh(a_mat @ x)
    j, h = dg.jacobian(f)(x), dg.hessian(g)(f(x))
    np.testing.assert_allclose(dg.make_ggnvp(f, g)(x)(v), j.T @ h @ j @ v, rtol=1e-10)
    np.testing.assert_allclose(dg.make_ggnvp(lambda s, x: f(x), g, f_argnum=1)(0.0, x)(v), j.T @ h @ j @ v,
                               rtol=1e-10)
