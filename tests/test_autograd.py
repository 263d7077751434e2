"""Eager autograd semantics (PyTorch's): accumulation, retain_graph, create_graph, no_grad, dtypes."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import dagrad as dg


def test_tensor_attributes():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert x.shape == (2, 2) and x.ndim == 2 and x.size == 4 and len(x) == 2
    assert x.dtype == np.float64 and x.requires_grad and x.grad is None and x.is_leaf
    assert x[1, 0].item() == 3.0
    np.testing.assert_array_equal(np.asarray(x), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(x.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    assert float(x[0, 1]) == 2.0


def test_tensor_copies_its_data():
    data = np.array([1.0, 2.0])
    x = dg.tensor(data)
    data[0] = 99.0
    assert x.numpy()[0] == 1.0


def test_dtype_rules_follow_numpy():
    assert dg.tensor(1.5).dtype == np.float64
    assert dg.tensor([1, 2]).dtype == np.int64
    x32 = dg.tensor(np.ones(3, np.float32), requires_grad=True)
    assert (x32 * 2.5).dtype == np.float32  # a Python scalar does not upcast
    assert (x32 + 1).dtype == np.float32
    assert (dg.tensor([1, 2]) * 0.5).dtype == np.float64
    assert dg.tensor([1.0], dtype="float32").dtype == np.float32


def test_readme_example():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x @ x.T).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[8.0, 12.0], [8.0, 12.0]])


def test_gradients_accumulate_across_backward_calls():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 + 3, 4 + 3])
    x.zero_grad()
    assert x.grad is None
    (x * x).sum().backward()
    x.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_shared_subexpression_gradient_adds_up():
    x = dg.tensor(2.0, requires_grad=True)
    h = x * x
    (h + h * h).backward()  # d/dx (x^2 + x^4) = 2x + 4x^3
    assert x.grad.item() == pytest.approx(2 * 2 + 4 * 8)


def test_second_backward_through_freed_graph_names_retain_graph():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = (dg.sin(x) * x).sum()
    y.backward()
    first = x.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first)  # nothing half-updated


def test_retain_graph_allows_a_second_backward():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = (dg.sin(x) * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    expected = 2 * (np.cos([1.0, 2.0]) * [1.0, 2.0] + np.sin([1.0, 2.0]))
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_backward_releases_saved_values():
    x = dg.tensor(np.ones(1000), requires_grad=True)
    h = dg.exp(x * 2.0)
    probe = weakref.ref(h)
    y = dg.sin(h).sum()
    del h
    gc.collect()
    assert probe() is not None  # kept alive by the recorded graph
    y.backward()
    gc.collect()
    assert probe() is None  # released by backward()


def test_create_graph_gives_differentiable_gradients():
    x = dg.tensor(1.5, requires_grad=True)
    y = x**3
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    np.testing.assert_allclose(g.item(), 3 * 1.5**2)
    x.grad = None
    g.backward()
    np.testing.assert_allclose(x.grad.item(), 6 * 1.5)


def test_third_derivative_by_create_graph():
    x = dg.tensor(0.7, requires_grad=True)
    y = dg.sin(x) * x
    y.backward(create_graph=True)
    g1 = x.grad
    x.grad = None
    g1.backward(create_graph=True)
    g2 = x.grad
    x.grad = None
    g2.backward()
    v = 0.7  # d3/dx3 x sin x = -3 sin x - x cos x
    np.testing.assert_allclose(x.grad.item(), -3 * np.sin(v) - v * np.cos(v))


def test_no_grad_and_enable_grad():
    x = dg.tensor([1.0], requires_grad=True)
    with dg.no_grad():
        y = x * 2
        assert not dg.is_grad_enabled()
        with dg.enable_grad():
            z = x * 2
    assert dg.is_grad_enabled()
    assert not y.requires_grad and y.is_leaf
    assert z.requires_grad

    @dg.no_grad()
    def double(t):
        return t * 2

    assert not double(x).requires_grad


def test_grad_mode_is_per_thread():
    import threading

    seen = []
    with dg.no_grad():
        thread = threading.Thread(target=lambda: seen.append(dg.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]


def test_detach_cuts_the_graph():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).detach()
    assert not y.requires_grad and y.is_leaf
    z = (x * y).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 4.0])


def test_backward_with_explicit_grad():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(np.array([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, 12.0])


def test_backward_on_non_scalar_without_grad_is_an_error():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(ValueError, match="one-element"):
        y.backward()
    assert x.grad is None


def test_backward_grad_of_wrong_shape_is_an_error():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        (x * 2).backward(np.ones(3))


def test_backward_without_graph_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        dg.tensor([1.0]).sum().backward()


def test_integer_and_bool_tensors_cannot_require_grad():
    with pytest.raises(TypeError, match="floating-point"):
        dg.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="floating-point"):
        dg.tensor([True], requires_grad=True)
    t = dg.tensor([1, 2])
    with pytest.raises(TypeError, match="floating-point"):
        t.requires_grad = True
    assert not t.requires_grad


def test_int_tensor_mixed_with_float_requires_grad():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    n = dg.tensor([3, 4])
    (x * n).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])


def test_a_million_sequential_ops_without_recursion():
    x = dg.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(250_000):  # four ops per iteration: a million-node graph
        y = dg.sin(y) * 1.0001 + 0.001
        y = dg.tanh(y)
    y.backward()
    assert np.isfinite(x.grad.item()) and x.grad.item() != 0.0


def test_non_leaf_tensor_has_no_grad():
    x = dg.tensor([1.0], requires_grad=True)
    h = x * 2
    (h * 3).sum().backward()
    assert h.grad is None and not h.is_leaf


def test_numpy_ufuncs_and_reflected_operators_record():
    x = dg.tensor([0.5, 1.0], requires_grad=True)
    a = np.array([2.0, 3.0])
    y = np.sin(x) * a + a * x - (a - x) / (1.0 + x) ** 2
    assert isinstance(y, dg.Tensor)
    y.sum().backward()
    v = np.array([0.5, 1.0])
    expected = np.cos(v) * a + a + 1 / (1 + v) ** 2 + 2 * (a - v) / (1 + v) ** 3
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_indexing_gradient_and_iteration():
    x = dg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    total = sum(row.sum() for row in x) + x[:, 1:].sum() + x[0, [0, 0]].sum()
    total.backward()
    np.testing.assert_allclose(x.grad.numpy(), [[3.0, 2.0, 2.0], [1.0, 2.0, 2.0]])


def test_repr():
    assert repr(dg.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert "op=multiply" in repr(dg.tensor([1.0], requires_grad=True) * 2)
    assert "float32" in repr(dg.tensor(np.ones(1, np.float32)))


def test_bool_of_multi_element_tensor_is_an_error():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(dg.tensor([1.0, 2.0]))
    assert bool(dg.tensor([1.0]))


def test_max_ties_share_gradient_evenly_like_torch_amax():
    x = dg.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5, 0.5, 0.0])


def test_conventions_at_non_differentiable_points():
    x = dg.tensor([0.0, 0.0], requires_grad=True)
    (dg.relu(x[0]) + dg.abs(x[1])).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])  # relu'(0) = abs'(0) = 0
    a = dg.tensor(1.0, requires_grad=True)
    b = dg.tensor(1.0, requires_grad=True)
    dg.maximum(a, b).backward()
    assert (a.grad.item(), b.grad.item()) == (0.5, 0.5)  # ties split, as torch.maximum


# -- .grad keeps a fresh gradient without a copy, and copies anything shared
def test_leaves_given_one_gradient_array_get_independent_grads():
    a = dg.tensor(np.ones(3), requires_grad=True)
    b = dg.tensor(np.ones(3), requires_grad=True)
    (a + b).sum().backward()  # add hands the same cotangent array to both inputs
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.value[0] = 5.0
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(3))


def test_the_seed_and_an_explicit_grad_are_not_kept_as_grad():
    x = dg.tensor(2.0, requires_grad=True)
    y = x + 0.0  # add's gradient rule passes the seed itself through
    seed = np.array(1.0)
    y.backward(seed)
    assert not np.shares_memory(x.grad.numpy(), seed)
    x.grad.value[...] = 7.0
    assert seed == 1.0
    w = dg.tensor(np.ones((2, 2)), requires_grad=True)
    out = w * 1.0
    g = np.full((2, 2), 3.0)
    out.backward(g)  # multiply's gradient is g * 1.0, a new array, but anything shared is copied
    assert not np.shares_memory(w.grad.numpy(), g)


def test_a_fresh_gradient_is_kept_without_a_copy():
    from dagrad._core import autodiff

    fresh = {None: np.empty(2)}
    assert next(autodiff._with_references(fresh))[2] <= autodiff._SOLE
    held = np.empty(2)
    assert next(autodiff._with_references({None: held}))[2] > autodiff._SOLE  # `held` refers to it too
    w = dg.tensor(np.ones((2, 3)), requires_grad=True)
    (dg.tensor(np.ones((4, 2))) @ w).sum().backward()
    assert w.grad._value.base is None and w.grad._value.flags.writeable
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 3), 4.0))
