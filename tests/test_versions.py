"""Version counters, the write handles of a Tensor (`.value`, `.grad`, `.numpy()`), and the values
the engine refuses where they enter (issue 12: no silent wrong results)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import dagrad as dg


def _here(offset=1):
    """'test_versions.py:N' for the caller's line plus `offset`."""
    return f"{os.path.basename(__file__)}:{sys._getframe(1).f_lineno + offset}"


# -- a value saved for backward and then changed in place
def test_writing_through_value_after_the_forward_pass_raises_at_backward():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    saved_at = _here()
    y = (w * w).sum()
    written_at = _here()
    w.value[...] = 0.0
    line = _here(2)
    with pytest.raises(RuntimeError, match="modified in place") as info:
        y.backward()
    message = str(info.value)
    assert "multiply" in message and saved_at in message and written_at in message and line in message
    assert w.grad is None  # nothing accumulated


def test_a_saved_output_changed_in_place_raises_too():
    x = dg.tensor([0.5, 1.0], requires_grad=True)
    y = dg.exp(x)  # exp's gradient reads its own output
    z = y.sum()
    y.value[...] = 7.0
    with pytest.raises(RuntimeError, match="modified in place"):
        z.backward()


def test_a_write_before_the_forward_pass_is_fine():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    w.value[...] = [3.0, 4.0]
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 8.0])
    assert w._version == 1


def test_an_input_without_grad_that_was_saved_is_checked_too():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    x = dg.tensor([3.0, 4.0])
    y = (w * x).sum()  # multiply saves x for w's gradient
    x.value[...] = 0.0
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_detach_shares_the_storage_and_the_version_counter():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    d = w.detach()
    d.value[0] = 5.0
    assert w.numpy()[0] == 5.0 and w._version == d._version == 1
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_create_graph_and_retain_graph_are_checked_too():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    y = (w ** 3).sum()
    y.backward(retain_graph=True)
    w.value[...] = 1.0
    with pytest.raises(RuntimeError, match="power.*modified in place"):
        y.backward(create_graph=True)


def test_optimizer_steps_between_forward_and_backward_are_caught():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    y = (w * w).sum()
    opt.step()  # writes w in place: y's graph saved the old w
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


# -- the handles: .numpy() reads, .value writes, np.array copies
def test_numpy_is_a_read_only_view():
    t = dg.tensor([1.0, 2.0])
    view = t.numpy()
    assert np.shares_memory(view, t.value) and not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 3.0
    assert not np.asarray(t).flags.writeable
    copy = np.array(t)
    copy[0] = 3.0  # a copy: writable, the tensor unchanged
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_value_setter_writes_in_place_after_checking():
    t = dg.tensor([1.0, 2.0])
    storage = t.value
    t.value = [3.0, 4.0]
    assert t.value is storage
    np.testing.assert_array_equal(t.numpy(), [3.0, 4.0])
    line = _here(2)
    with pytest.raises(ValueError, match=r"Tensor.value.*shape \(3,\).*shape \(2,\)") as info:
        t.value = [1.0, 2.0, 3.0]
    assert line in str(info.value)
    with pytest.raises(TypeError, match="Tensor.value.*complex128"):
        t.value = np.array([1j, 2j])
    np.testing.assert_array_equal(t.numpy(), [3.0, 4.0])  # unchanged by the failed assignments


def test_value_augmented_assignment_updates_in_place_and_fails_cleanly():
    p = dg.tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    p.value -= 0.5 * p.grad.numpy()
    np.testing.assert_array_equal(p.numpy(), [0.0, 0.0])
    with pytest.raises(ValueError):
        p.value -= np.ones(3)  # NumPy refuses before writing anything
    np.testing.assert_array_equal(p.numpy(), [0.0, 0.0])


def test_grad_can_be_set_only_to_none_or_a_gradient_of_the_same_shape_and_dtype():
    p = dg.tensor([1.0, 2.0], requires_grad=True)
    p.grad = np.array([0.5, 0.5])
    assert isinstance(p.grad, dg.Tensor)
    np.testing.assert_array_equal(p.grad.numpy(), [0.5, 0.5])
    p.grad = dg.tensor([1.0, 1.0])
    line = _here(2)
    with pytest.raises(ValueError, match=r"Tensor.grad.*shape \(\).*shape \(2,\)") as info:
        p.grad = dg.tensor(3.0)  # a scalar is not broadcast silently
    assert line in str(info.value)
    with pytest.raises(TypeError, match="Tensor.grad.*float32.*float64"):
        p.grad = np.ones(2, np.float32)
    with pytest.raises(TypeError, match="Tensor.grad.*list"):
        p.grad = [1.0, 1.0]
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, 1.0])  # the last good one stays
    p.grad = None
    assert p.grad is None


# -- what transforms differentiate
@pytest.mark.parametrize("output", [None, "a", True, 3, np.int64(2), 1 + 2j, np.array([1j])])
def test_grad_refuses_outputs_that_are_not_real_floating_scalars(output):
    line = _here(2)
    with pytest.raises(TypeError, match="grad") as info:
        dg.grad(lambda x: output)(1.0)
    assert line in str(info.value)


def test_grad_of_a_constant_float_is_zero():
    assert dg.grad(lambda x: 2.0)(1.0) == 0.0


@pytest.mark.parametrize("transform", ["vjp", "jvp", "jacobian"])
@pytest.mark.parametrize("output", [None, "a"])
def test_other_transforms_refuse_non_numeric_outputs(transform, output):
    f = lambda x: output  # noqa: E731
    with pytest.raises(TypeError, match=transform):
        if transform == "vjp":
            dg.vjp(f, np.ones(2))
        elif transform == "jvp":
            dg.jvp(f, (np.ones(2),), (np.ones(2),))
        else:
            dg.jacobian(f)(np.ones(2))


def test_complex_tangents_of_real_primals_and_cotangents_of_real_outputs_are_refused():
    # as JAX: a real function has no derivative along an imaginary direction (dropping it would be silent)
    line = _here(2)
    with pytest.raises(TypeError, match="jvp: a tangent has dtype complex128 but its primal has dtype float64") as info:
        dg.jvp(lambda x: x * 2, (np.ones(2),), (np.array([1j, 1j]),))
    assert line in str(info.value)
    _, f_vjp = dg.vjp(lambda x: x * 2, np.ones(2))
    with pytest.raises(TypeError, match="vjp: a cotangent has dtype complex128 but its output has dtype float64"):
        f_vjp(np.array([1j, 1j]))


# -- object values are refused where they enter; complex ones compute
def test_object_operands_are_refused_by_ops():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    line = _here(2)
    with pytest.raises(TypeError, match="multiply.*object") as info:
        x * np.array([object()], dtype=object)
    assert line in str(info.value)


@pytest.mark.parametrize("operand", [np.array([1j]), 1j, np.complex128(2j)])
def test_complex_operands_compute_and_a_real_input_gets_the_real_part_of_the_gradient(operand):
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = x * operand
    assert y.dtype == np.complex128
    np.testing.assert_allclose(y.numpy(), np.array([1.0, 2.0]) * operand)
    (y * y).real.sum().backward()  # sum of Re((x c)^2) = x^2 Re(c^2): gradient 2 x Re(c^2), real
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0]) * np.real(np.asarray(operand) ** 2).ravel())
    assert dg.grad(lambda x: dg.sum(x * np.array([1j])).imag)(np.ones(1)) == np.array([1.0])


def test_a_string_operand_is_a_type_error_naming_the_op():
    line = _here(2)
    with pytest.raises(TypeError, match="add") as info:
        dg.tensor([1.0]) + "a"
    assert line in str(info.value)


def test_function_forward_must_return_arrays_of_supported_dtypes():
    class Listed(dg.Function):
        @staticmethod
        def forward(ctx, x):
            return [x, x]

        @staticmethod
        def backward(ctx, g):
            return g

    x = dg.tensor([1.0], requires_grad=True)
    line = _here(2)
    with pytest.raises(TypeError, match="Listed.forward.*list") as info:
        Listed.apply(x)
    assert line in str(info.value)

