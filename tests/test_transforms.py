"""Functional transforms: results, argnums, pytrees, nesting to any order, result types."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp
import dagrad.numpy_more as numpy_more
from op_table import CASES, COMPOSITES
from test_numpy_more import CASES as NUMPY_MORE
from test_static_ops import _ids, _unique

A = np.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.1]])
X0 = np.array([0.2, -0.4, 0.9])


def f(x):
    return dg.sum(dg.tanh(A @ x) ** 2)


def f_numpy(x):
    return np.sum(np.tanh(A @ x) ** 2)


def grad_numpy(x):
    t = np.tanh(A @ x)
    return A.T @ (2 * t * (1 - t**2))


def hessian_numpy(x):
    t = np.tanh(A @ x)
    d = 2 * (1 - t**2) ** 2 - 4 * t**2 * (1 - t**2)
    return A.T @ np.diag(d) @ A


def test_grad_and_value_and_grad():
    np.testing.assert_allclose(dg.grad(f)(X0), grad_numpy(X0))
    value, g = dg.value_and_grad(f)(X0)
    np.testing.assert_allclose(value, f_numpy(X0))
    np.testing.assert_allclose(g, grad_numpy(X0))


def test_results_are_arrays_for_arrays_and_tensors_for_tensors():
    assert type(dg.grad(f)(X0)) is np.ndarray
    g = dg.grad(f)(dg.tensor(X0))
    assert isinstance(g, dg.Tensor)
    np.testing.assert_allclose(g.numpy(), grad_numpy(X0))
    assert isinstance(dg.grad(lambda x: x * 2.0)(1.0), (float, np.floating, np.ndarray))


def test_argnums_tuple():
    def h(x, y, z):
        return dg.sum(x * y) + dg.sum(z)

    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, gz = dg.grad(h, argnums=(0, 2))(x, y, 5.0)
    np.testing.assert_allclose(gx, y)
    assert float(gz) == 1.0
    np.testing.assert_allclose(dg.grad(h, argnums=-2)(x, y, 5.0), x)


def test_pytree_arguments():
    params = {"w": np.array([1.0, 2.0]), "b": [np.array(0.5), (np.array([3.0]),)]}

    def loss(p, x):
        return dg.sum(p["w"] * x) + p["b"][0] * dg.sum(p["b"][1][0])

    g = dg.grad(loss)(params, np.array([10.0, 20.0]))
    assert set(g) == {"w", "b"} and isinstance(g["b"], list) and isinstance(g["b"][1], tuple)
    np.testing.assert_allclose(g["w"], [10.0, 20.0])
    np.testing.assert_allclose(g["b"][0], 3.0)
    np.testing.assert_allclose(g["b"][1][0], [0.5])


def test_gradient_of_unused_argument_is_zero():
    g = dg.grad(lambda x, y: dg.sum(x * 2.0), argnums=(0, 1))(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(g[1], np.zeros(3))


def test_vjp_and_jvp():
    out, f_vjp = dg.vjp(lambda x: A @ dg.sin(x), X0)
    np.testing.assert_allclose(out, A @ np.sin(X0))
    u = np.array([1.0, -2.0])
    (ct,) = f_vjp(u)
    np.testing.assert_allclose(ct, np.cos(X0) * (A.T @ u))
    (ct2,) = f_vjp(2 * u)  # the pullback can be called again
    np.testing.assert_allclose(ct2, 2 * ct)
    v = np.array([0.5, 1.0, -1.0])
    out, tangent = dg.jvp(lambda x: A @ dg.sin(x), (X0,), (v,))
    np.testing.assert_allclose(tangent, A @ (np.cos(X0) * v))


def test_jvp_is_true_forward_mode():
    # forward mode never records a reverse graph: no Tensor requires grad along the way
    seen = []

    def probe(x):
        y = dg.sin(x) * 2.0
        seen.append(y)
        return y

    dg.jvp(probe, (X0,), (np.ones(3),))
    assert type(seen[0]).__name__ == "Dual" and not seen[0].requires_grad


def test_jacobian_and_jacfwd_agree():
    def g(x):
        return A @ dg.sin(x) * x[0]

    jr, jf = dg.jacobian(g)(X0), dg.jacfwd(g)(X0)
    assert jr.shape == (2, 3) and jf.shape == (2, 3)
    np.testing.assert_allclose(jr, jf)
    numeric = np.stack([(np.asarray(g(X0 + e)) - np.asarray(g(X0 - e))) / 2e-6 for e in np.eye(3) * 1e-6], axis=1)
    np.testing.assert_allclose(jr, numeric, rtol=1e-6)


def test_jacobian_shapes_for_matrix_input_and_output():
    M = np.arange(6.0).reshape(2, 3)
    j = dg.jacobian(lambda m: m * 2.0)(M)
    assert j.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(j.reshape(6, 6), 2 * np.eye(6))
    np.testing.assert_allclose(dg.jacfwd(lambda m: m * 2.0)(M), j)


def test_hessian():
    np.testing.assert_allclose(dg.hessian(f)(X0), hessian_numpy(X0), rtol=1e-10)


@pytest.mark.parametrize(
    "second",
    [
        lambda f: dg.jacobian(dg.grad(f)),
        lambda f: dg.jacfwd(dg.grad(f)),
        lambda f: dg.jacfwd(dg.jacfwd(f)),
        lambda f: dg.jacobian(dg.jacobian(f)),
        lambda f: dg.jacobian(dg.jacfwd(f)),
    ],
    ids=["rev-over-rev", "fwd-over-rev", "fwd-over-fwd", "jac-over-jac", "rev-over-fwd"],
)
def test_every_composition_gives_the_hessian(second):
    np.testing.assert_allclose(second(f)(X0), hessian_numpy(X0), rtol=1e-10)


def test_higher_order_scalar_derivatives():
    d = lambda g: dg.grad(g)  # noqa: E731
    sin3 = d(d(d(dg.sin)))
    np.testing.assert_allclose(sin3(0.3), -np.cos(0.3))
    np.testing.assert_allclose(d(d(d(d(lambda x: x**5))))(2.0), 120 * 2.0)


def test_grad_of_jvp_reverse_over_forward():
    def directional(x):
        return dg.jvp(f, (x,), (np.ones(3),))[1]

    np.testing.assert_allclose(dg.grad(directional)(X0), hessian_numpy(X0) @ np.ones(3), rtol=1e-10)


def test_no_perturbation_confusion():
    # d/dx [x * d/dy (x * y)] = d/dx x^2 = 2x  (a naive tape returns 2x + x)
    assert float(dg.grad(lambda x: x * dg.grad(lambda y: x * y)(3.0))(2.0)) == pytest.approx(4.0)
    # the same with the inner function differentiating at x itself
    assert float(dg.grad(lambda x: dg.grad(lambda y: x * y)(x))(2.0)) == pytest.approx(1.0)
    # forward mode nested in forward mode
    inner = lambda x: dg.jvp(lambda y: x * y, (3.0,), (1.0,))[1]  # noqa: E731
    assert float(dg.jvp(inner, (2.0,), (1.0,))[1]) == pytest.approx(1.0)


def test_transform_of_eager_tensor_composes_with_backward():
    x = dg.tensor(X0, requires_grad=True)
    g = dg.grad(f)(x)
    assert g.requires_grad
    (g * np.array([1.0, 0.0, 0.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), hessian_numpy(X0)[0], rtol=1e-10)


def test_closure_over_eager_tensor_requiring_grad():
    w = dg.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    g = dg.grad(lambda x: dg.sum(w * x * x))(X0)  # 2 w x, differentiable in w
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * X0)


def test_transforms_work_under_no_grad():
    with dg.no_grad():
        np.testing.assert_allclose(dg.grad(f)(X0), grad_numpy(X0))


def test_grad_of_non_scalar_is_an_error():
    with pytest.raises(TypeError, match="scalar"):
        dg.grad(lambda x: x * 2.0)(np.ones(3))


def test_grad_with_integer_input_is_an_error():
    with pytest.raises(TypeError, match="floating-point"):
        dg.grad(lambda x: x * 2.0)(3)


def test_vjp_cotangent_of_wrong_shape_is_an_error():
    _, f_vjp = dg.vjp(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="shape"):
        f_vjp(np.ones(2))


def test_gradcheck_passes_and_reports_the_worst_entry():
    assert dg.gradcheck(f, X0, order=2)

    def wrong(x):  # treats one factor as a constant: the analytic gradient is half the truth
        return dg.sum(x * dg.tensor(x).detach())

    with pytest.raises(AssertionError, match=r"d out\[0\] / d arg0\[2\]"):
        dg.gradcheck(wrong, X0)


def test_gradcheck_of_several_arguments_in_one_mode():
    assert dg.gradcheck(lambda a, b: a @ b, np.ones((2, 3)), np.ones((3, 2)) * 0.5, modes=("fwd",))


def test_hessian_with_tuple_argnums_is_nested_like_jax():
    def h(x, y):
        return dg.sum(x * x * y) + dg.sum(y**3)

    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    (hxx, hxy), (hyx, hyy) = dg.hessian(h, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(hxx, np.diag(2 * y))
    np.testing.assert_allclose(hxy, np.diag(2 * x))
    np.testing.assert_allclose(hyx, np.diag(2 * x))
    np.testing.assert_allclose(hyy, np.diag(6 * y))


def test_jacobians_of_pytree_outputs():
    def pair(x):
        return {"a": x * 2.0, "b": (dg.sum(x), x[0])}

    for transform in (dg.jacobian, dg.jacfwd):
        j = transform(pair)(np.array([1.0, 2.0]))
        np.testing.assert_allclose(j["a"], 2 * np.eye(2))
        np.testing.assert_allclose(j["b"][0], [1.0, 1.0])
        np.testing.assert_allclose(j["b"][1], [1.0, 0.0])


def test_numpy_conversion_of_a_traced_value_is_an_error_not_a_silent_constant():
    a = np.ones((2, 2))
    with pytest.raises(TypeError, match="derivative would be lost"):
        dg.grad(lambda x: dg.sum(a.dot(x)))(np.ones(2))
    with pytest.raises(TypeError, match="derivative would be lost"):
        dg.jvp(lambda x: np.asarray(x), (np.ones(2),), (np.ones(2),))


# ---------------------------------------------------------------- the transforms' arguments (issue 24)

_TWO = (np.array([1.0, 2.0]), np.array([3.0, 4.0]))


def _prod(x, y):
    return dg.sum(x * y * y)


ARGNUMS_TRANSFORMS = {
    "grad": lambda a: dg.grad(_prod, argnums=a),
    "value_and_grad": lambda a: dg.value_and_grad(_prod, argnums=a),
    "jacobian": lambda a: dg.jacobian(_prod, argnums=a),
    "jacfwd": lambda a: dg.jacfwd(_prod, argnums=a),
    "hessian": lambda a: dg.hessian(_prod, argnums=a),
    "elementwise_grad": lambda a: dg.elementwise_grad(_prod, argnum=a),
    "holomorphic_grad": lambda a: dg.holomorphic_grad(lambda x, y: x * y, argnums=a),
}


@pytest.mark.parametrize("name", ARGNUMS_TRANSFORMS)
@pytest.mark.parametrize("bad", ["a", 1.5, None, True, (0, "1"), {0: 1}, np.array([0, 1])],
                         ids=["str", "float", "None", "bool", "tuple with a str", "dict", "array"])
def test_argnums_of_a_wrong_type_is_a_type_error_naming_the_transform_and_the_line(name, bad):
    line = ARGNUMS_TRANSFORMS[name].__code__.co_firstlineno  # where the transform is made: refused there, as JAX
    with pytest.raises(TypeError, match=rf"^{name}: argnums? must be an int or a tuple of ints, got .* "
                                        rf"at .*test_transforms.py:{line}$"):
        ARGNUMS_TRANSFORMS[name](bad)


@pytest.mark.parametrize("name", ARGNUMS_TRANSFORMS)
def test_argnums_out_of_range_or_repeated_is_a_value_error_at_the_call(name):
    args = (_TWO[0] + 0j, _TWO[1] + 0j) if name == "holomorphic_grad" else _TWO
    for bad, message in [(2, r"argnums 2 is out of range for a function called with 2 positional argument\(s\)"),
                         ((0, -3), r"argnums \(0, -3\) is out of range"),
                         ((1, 1), r"argnums \(1, 1\) names an argument more than once"),
                         ((0, -2), r"argnums \(0, -2\) names an argument more than once")]:
        transformed = ARGNUMS_TRANSFORMS[name](bad)
        line = __import__("sys")._getframe().f_lineno + 2
        with pytest.raises(ValueError, match=rf"^{name}: {message}.* at .*test_transforms.py:{line}$"):
            transformed(*args)


def test_repeated_argnums_are_refused_rather_than_a_lost_gradient():
    # before: grad(argnums=(0, 0)) gave zeros for the first entry; make_vjp's argnum=(0, 0) too
    with pytest.raises(ValueError, match="names an argument more than once"):
        dg.grad(_prod, argnums=(0, 0))(*_TWO)
    with pytest.raises(ValueError, match=r"make_vjp: argnum \(0, 0\) names an argument more than once"):
        dg.make_vjp(_prod, argnum=(0, 0))(*_TWO)


def test_numpy_integer_argnums_and_lists_work_as_jaxs():
    expected = (_TWO[1] ** 2, 2 * _TWO[0] * _TWO[1])
    np.testing.assert_allclose(dg.grad(_prod, argnums=np.int64(1))(*_TWO), expected[1])
    for a, b in zip(dg.grad(_prod, argnums=[np.int32(0), 1])(*_TWO), expected):
        np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(dg.hessian(_prod, argnums=np.int64(0))(*_TWO), np.zeros((2, 2)))
    np.testing.assert_allclose(dg.make_vjp(_prod, argnum=np.int64(1))(*_TWO)[0](1.0), expected[1])


@pytest.mark.parametrize("make", [lambda: dg.grad(3.0), lambda: dg.value_and_grad("f"), lambda: dg.jacobian(None),
                                  lambda: dg.jacfwd(1), lambda: dg.hessian([]), lambda: dg.elementwise_grad(0),
                                  lambda: dg.holomorphic_grad(2j), lambda: dg.vjp(3, 1.0),
                                  lambda: dg.jvp("f", (1.0,), (1.0,))],
                         ids=["grad", "value_and_grad", "jacobian", "jacfwd", "hessian", "elementwise_grad",
                              "holomorphic_grad", "vjp", "jvp"])
def test_a_function_that_is_not_callable_is_a_type_error_naming_the_transform(make):
    with pytest.raises(TypeError, match=r"^\w+: expects a function, got \w+ at .*test_transforms.py:\d+$"):
        make()


# ---------------------------------------------------------------- results are of the inputs' kind (SPEC)


def _kinds(result):
    """'Tensor' or 'NumPy' (an array or a scalar) per leaf of a result (nested tuples), anything else by its type."""
    if isinstance(result, (tuple, list)):
        return set().union(*map(_kinds, result)) if result else set()
    return {"Tensor" if isinstance(result, dg.Tensor) else "NumPy" if isinstance(result, (np.ndarray, np.generic))
            else type(result).__name__}


def _every_transform(f, args):
    """The results of every transform of f (a function of float arrays) at args, by name."""
    out = f(*args)
    u = np.ones(np.shape(out))
    nums = tuple(range(len(args)))

    def loss(*a):
        return dg.sum(f(*a) * u)

    small = sum(int(np.prod(np.shape(a))) for a in args) <= 6
    transforms = {
        "grad": lambda: dg.grad(loss, argnums=nums)(*args),
        "value_and_grad": lambda: dg.value_and_grad(loss, argnums=nums)(*args),
        "vjp": lambda: (lambda o, pull: (o, pull(u)))(*dg.vjp(f, *args)),
        "jvp": lambda: dg.jvp(f, tuple(args), tuple(np.ones(np.shape(a)) for a in args)),
        "vmap": lambda: dg.vmap(f)(*[dg.stack([a, a]) if isinstance(a, dg.Tensor) else np.stack([a, a])
                                     for a in args]),
        "vmap(grad)": lambda: dg.vmap(dg.grad(loss, argnums=nums))(
            *[dg.stack([a, a]) if isinstance(a, dg.Tensor) else np.stack([a, a]) for a in args]),
    }
    if small:
        transforms.update({"jacobian": lambda: dg.jacobian(f, argnums=nums)(*args),
                           "jacfwd": lambda: dg.jacfwd(f, argnums=nums)(*args),
                           "hessian": lambda: dg.hessian(loss)(*args)})
    results = {}
    for name, run in transforms.items():
        try:
            results[name] = run()
        except Exception:  # noqa: BLE001 - a refusal (an integer output, no batching rule): no result to check
            continue
    return results


def _kind_rows():
    rows = _unique(CASES + COMPOSITES)
    ops = [pytest.param(c.f, c.inputs(), id=i) for c, i in zip(rows, _ids(rows))]
    more = [pytest.param(lambda *a, f=f: f(dnp, *a), list(args), id=f"numpy_more {name}")
            for name, (f, args) in NUMPY_MORE.items()]
    casts = [  # issue 24 item 4: a cast of a comparison, median, any made dg.grad's result a Tensor
        pytest.param(lambda x: dg.astype(x > 0, np.int64) * x, [np.array([-1.0, 2.0])], id="astype(x > 0) * x"),
        pytest.param(lambda x: dnp.median(x) * 1.0, [np.ones(3)], id="median"),
        pytest.param(lambda x: x * numpy_more.any(x > 0), [np.ones(3)], id="any"),
    ]
    return ops + more + casts


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # isinf's rows divide by zero on purpose
@pytest.mark.parametrize(("f", "args"), _kind_rows())
def test_every_transform_of_arrays_gives_arrays_and_of_tensors_tensors(f, args):
    # SPEC: results are NumPy arrays (or NumPy scalars) for array inputs and Tensors for Tensor inputs; an
    # integer cast of a traced value (dg.astype, used by median and any) detached it to an eager Tensor
    try:
        f(*args)
    except Exception:  # noqa: BLE001 - a row that eager refuses (an integer argument): nothing to compare
        pytest.skip("eager refuses the row")
    for name, result in _every_transform(f, args).items():
        assert _kinds(result) == {"NumPy"}, f"{name} of arrays gave {_kinds(result)}"
    tensors = [dg.tensor(a) for a in args]
    for name, result in _every_transform(f, tensors).items():
        assert _kinds(result) == {"Tensor"}, f"{name} of Tensors gave {_kinds(result)}"
