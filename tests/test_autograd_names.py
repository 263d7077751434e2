"""HIPS autograd's module names in dagrad (issue 16): dagrad.test_util, vspace, builtins, core, extend,
misc, tracer, util, wrap_util, and `from dagrad import list, tuple, dict, isinstance`. Values against
NumPy and plain loops, checks that catch a 0.05% gradient error, errors naming this file's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp
from dagrad import builtins as agb
from dagrad.core import make_jvp, make_vjp, primitive_vjps
from dagrad.extend import defjvp, defvjp, primitive
from dagrad.misc import const_graph, flatten
from dagrad.test_util import check_equivalent, check_grads, combo_check, scalar_close
from dagrad.tracer import getval, isbox
from dagrad.util import quick_grad_check, subvals
from dagrad.vspace import ArrayVSpace, DictVSpace, ListVSpace, TupleVSpace, vspace
from dagrad.wrap_util import unary_to_nary

HERE = r"test_autograd_names\.py:\d+"
RNG = np.random.default_rng(16)


def _slightly_wrong(factor):
    """x * 2 whose vjp is off by `factor`."""
    twice = primitive(lambda x: x * 2.0)
    defvjp(twice, lambda ans, x: lambda g: g * 2.0 * factor)
    twice.__name__ = "twice"
    return twice


# -- test_util
def test_check_grads_passes_correct_functions_in_every_argnum_form():
    check_grads(lambda x: dnp.sin(x) * x ** 2)(RNG.normal(size=(3, 2)))
    check_grads(lambda x, y: dnp.sum(x * y), argnum=1)(RNG.normal(size=3), RNG.normal(size=3))
    check_grads(lambda x, y: x * dnp.exp(y), argnum=(0, 1))(0.3, 0.7)  # a tuple of numbers stays two arguments
    check_grads(lambda d: d["a"] ** 2 + d["b"][0] * d["b"][1], modes=["rev"])({"a": 1.5, "b": [0.5, 2.0]})


def test_check_grads_catches_a_small_vjp_error_with_autograds_message():
    check_grads(_slightly_wrong(1.0), modes=["rev"])(1.0)
    with pytest.raises(AssertionError, match=r"Derivative \(VJP\) check of twice failed"):
        check_grads(_slightly_wrong(1.0005), modes=["rev"])(1.0)  # a 0.05% error


def test_check_grads_names_the_second_order_function_as_autograd():
    foo = primitive(lambda x: x * 2.0)
    bar = primitive(lambda x: x)
    defvjp(foo, lambda ans, x: lambda g: bar(g) * 2)
    defvjp(bar, lambda ans, x: lambda g: g * 1.001)  # right values, wrong derivative of the vjp
    foo.__name__ = "foo"
    check_grads(foo, modes=["rev"], order=1)(1.0)
    with pytest.raises(AssertionError, match=r"Derivative \(VJP\) check of vjp_foo failed"):
        check_grads(foo, modes=["rev"])(1.0)


def test_check_grads_refuses_an_unknown_mode_at_the_callers_line():
    with pytest.raises(ValueError, match=r"check_grads: unknown mode 'lin'.*" + HERE):
        check_grads(dnp.sin, modes=["lin"])(1.0)


def test_combo_check_runs_every_combination():
    seen = []

    def f(x, y, scale=1.0):
        seen.append((np.shape(x), np.shape(y), scale))
        return scale * dnp.sum(x * y)

    combo_check(f, (0, 1), modes=["rev"], order=1)([np.ones(2), np.ones(3)], [np.ones(1)], scale=[1.0, 2.0])
    assert {s for s in seen} == {((2,), (1,), 1.0), ((2,), (1,), 2.0), ((3,), (1,), 1.0), ((3,), (1,), 2.0)}


def test_scalar_close_and_check_equivalent():
    assert scalar_close(1.0, 1.0 + 1e-9) and not scalar_close(1.0, 1.001)
    check_equivalent({"a": np.ones(2)}, {"a": np.ones(2)})
    with pytest.raises(AssertionError, match="Value mismatch"):
        check_equivalent(np.ones(3), np.ones(3) * 1.01)
    with pytest.raises(AssertionError, match="VSpace mismatch"):
        check_equivalent(np.ones(3), np.ones(2))


# -- vspace
def test_vspace_of_arrays_numbers_and_containers():
    assert vspace(np.zeros((3, 2))) == ArrayVSpace(np.ones((3, 2)))
    assert vspace(0.0).size == 1 and vspace(np.zeros((3, 2))).size == 6
    value = {"x": [0.0, np.zeros((3, 1))], "y": ({"a": 0.0}, [0.0])}
    vs = vspace(value)
    assert isinstance(vs, DictVSpace) and vs.size == 6
    assert isinstance(vspace([1.0]), ListVSpace) and isinstance(vspace((1.0,)), TupleVSpace)
    assert vs != vspace({"x": [0.0, np.zeros((3, 2))], "y": ({"a": 0.0}, [0.0])})
    basis = list(vs.standard_basis())
    assert len(basis) == 6
    flat = np.array([[vs.inner_prod(b, c) for c in basis] for b in basis])
    assert np.array_equal(flat, np.eye(6))
    assert vspace(dg.tensor(np.ones(4))) == vspace(np.ones(4))


def test_vspace_operations_recurse_into_nested_containers():
    vs = vspace({"x": [0.0, np.zeros((3, 1))], "y": ({"a": 0.0}, [0.0])})
    x, y = vs.randn(), vs.randn()
    leaves = lambda t: dg.ravel_pytree(t)[0]
    assert np.allclose(leaves(vs.add(x, y)), leaves(x) + leaves(y))
    assert np.allclose(leaves(vs.scalar_mul(x, 3.0)), 3 * leaves(x))
    assert np.isclose(vs.inner_prod(x, y), leaves(x) @ leaves(y))
    assert np.allclose(leaves(vs.ones()), np.ones(6)) and np.allclose(leaves(vs.zeros()), np.zeros(6))


def test_vspace_inner_prod_is_differentiable():
    vs = vspace(np.zeros(3))
    y = RNG.normal(size=3)
    assert np.allclose(dg.grad(vs.inner_prod)(np.ones(3), y), y)


def test_vspace_refuses_other_types_at_the_callers_line():
    with pytest.raises(TypeError, match=r"vspace: no vector space for a value of type str.*" + HERE):
        vspace("a")
    with pytest.raises(TypeError, match=r"vspace: no vector space for a value of type int.*" + HERE):
        vspace(3)  # as autograd: a Python int has none, an int array has one
    assert vspace(np.arange(3)).size == 3


# -- builtins
def test_autograd_containers_are_plain_containers():
    assert dg.list((1, 2)) == [1, 2] and type(dg.list((1, 2))) is list
    assert dg.tuple([1, 2]) == (1, 2) and type(dg.tuple([1, 2])) is tuple
    assert dg.dict([("a", 1)], b=2) == {"a": 1, "b": 2} and type(dg.dict()) is dict
    assert isinstance([], dg.list) and isinstance((), dg.tuple) and isinstance({}, dg.dict)
    assert not isinstance((), dg.list)
    assert dg.grad(lambda x: dnp.sum(dnp.array(dg.tuple((x, x * x)))))(3.0) == 7.0


def test_autograd_isinstance_sees_tensors_as_arrays():
    assert agb.isinstance(np.zeros(1), np.ndarray) and agb.isinstance([], (tuple, list))
    assert not agb.isinstance([], np.ndarray)
    seen = []
    dg.grad(lambda x: seen.append(agb.isinstance(x, np.ndarray)) or dnp.sum(x))(np.ones(2))
    assert seen == [True]
    assert agb.isinstance(dg.tensor([1.0]), dg.Tensor)


# -- core, extend, tracer, wrap_util, util
def test_core_make_vjp_and_make_jvp_of_one_argument():
    x = RNG.normal(size=3)
    f_vjp, value = make_vjp(dnp.sin, x)
    assert np.allclose(value, np.sin(x)) and np.allclose(f_vjp(np.ones(3)), np.cos(x))
    out, tangent = make_jvp(dnp.sin, x)(np.full(3, 2.0))
    assert np.allclose(out, np.sin(x)) and np.allclose(tangent, 2 * np.cos(x))


def test_primitive_vjps_pop_removes_the_rule_and_setting_restores_it():
    square = primitive(lambda x: x * x)
    defvjp(square, lambda ans, x: lambda g: 2 * x * g)
    assert square in primitive_vjps and dnp.sin not in primitive_vjps
    assert primitive_vjps.pop(dnp.sin, None) is None
    makers = primitive_vjps.pop(square)
    with pytest.raises(NotImplementedError, match="has no vjp"):
        dg.grad(square)(3.0)
    primitive_vjps[square] = makers
    assert dg.grad(square)(3.0) == 6.0


def test_extend_defjvp_gives_forward_mode():
    cube = primitive(lambda x: x ** 3)
    defjvp(cube, lambda g, ans, x: 3 * x ** 2 * g)
    assert dg.deriv(cube)(2.0) == 12.0


def test_isbox_and_getval():
    seen = []

    def f(x):
        seen.append((isbox(x), getval(x)))
        return dnp.sum(x * 2)

    dg.grad(f)(np.array([1.5]))
    assert seen[0][0] and np.array_equal(seen[0][1], [1.5])
    assert not isbox(np.ones(2)) and not isbox(dg.tensor([1.0]))


def test_unary_to_nary_takes_argnum_and_names_the_function():
    @unary_to_nary
    def derivative(fun, x):
        return dg.grad(fun)(x)

    def product(a, b):
        return a * b * b

    assert derivative(product, 1)(3.0, 2.0) == 12.0
    assert derivative(product, argnum=(0, 1))(3.0, 2.0) == (4.0, 12.0)
    assert derivative(product, 1).__name__ == "derivative_of_product_wrt_argnum_1"


def test_quick_grad_check_warns_and_checks():
    assert subvals((1, 2, 3), [(2, 9)]) == (1, 2, 9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quick_grad_check(lambda x, y: x ** 2 + y, 1.0, (2.0,))
    assert caught[0].category is DeprecationWarning


# -- misc
def test_flatten_orders_dict_keys_and_round_trips():
    value = (1.0, RNG.normal(size=(2, 3)), [RNG.normal(size=(1, 4)), {"y": RNG.normal(size=(4, 2)), "x": 2.0}])
    flat, unflatten = flatten(value)
    expected = np.concatenate([[1.0], value[1].ravel(), value[2][0].ravel(), [2.0], value[2][1]["y"].ravel()])
    assert np.array_equal(flat, expected)  # "x" before "y", as autograd sorts the keys
    again = unflatten(flat)
    assert np.array_equal(again[2][1]["y"], value[2][1]["y"]) and again[0] == 1.0
    assert dg.grad(lambda a, b: dnp.sum(flatten([a, b])[0] ** 2))(1.0, 2.0) == 2.0


def test_const_graph_traces_once_and_replays():
    calls = []

    def f(x, y):
        calls.append(None)
        return dg.grad(lambda x: dnp.sin(x) * y)(x * y)

    replay = const_graph(f, y=2.0)
    for x in (0.0, 1.0, 0.5):
        assert np.isclose(replay(x), 2 * np.cos(2 * x))
    assert len(calls) == 1  # traced on the first call only


# -- the package face
def test_grad_takes_autograds_argnum():
    f = lambda a, b: a * b ** 2
    assert dg.grad(f, argnum=1)(3.0, 2.0) == 12.0
    assert dg.grad(f, argnum=[1, 0])(3.0, 2.0) == (12.0, 4.0)
    assert dg.value_and_grad(f, argnum=1)(3.0, 2.0) == (12.0, 12.0)
    with pytest.raises(TypeError, match=r"grad: got both argnums and argnum.*" + HERE):
        dg.grad(f, argnums=1, argnum=1)


def test_autograds_deprecated_rule_methods_warn_and_work():
    x, y = RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2))
    for define in ("defgrad", "defvjp", "defvjp_is_zero"):
        mul = primitive(lambda a, b: a * b)
        with pytest.warns(DeprecationWarning, match=f"primitive.{define} is deprecated"):
            if define == "defgrad":
                mul.defgrad(lambda ans, a, b: lambda g: b * g)
                mul.defgrad(lambda ans, a, b: lambda g: a * g, argnum=1)
            elif define == "defvjp":
                mul.defvjp(lambda g, ans, vs, gvs, a, b: b * g)
                mul.defvjp(lambda g, ans, vs, gvs, a, b: a * g, argnum=1)
            else:
                mul.defvjp_is_zero([0, 1])
        grads = dg.grad(lambda a, b: dnp.sum(mul(a, b)), argnums=(0, 1))(x, y)
        expected = (np.zeros((2, 2)), np.zeros((2, 2))) if define == "defvjp_is_zero" else (y, x)
        np.testing.assert_array_equal(grads[0], expected[0])
        np.testing.assert_array_equal(grads[1], expected[1])
