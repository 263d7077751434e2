"""Numerics and edges of the softmax family, the losses and a few special ops, checked against PyTorch
(issue 12: no silent wrong results, edges as PyTorch); complex dtypes refused where they enter."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F

torch = pytest.importorskip("torch")


def _here(offset=1):
    """'test_numerics.py:N' for the caller's line plus `offset`."""
    return f"{os.path.basename(__file__)}:{sys._getframe(1).f_lineno + offset}"


def _torch_grads(f, *arrays):
    """f's value and the gradient of sum(f) in each argument, by PyTorch (float64 unless the arrays say)."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = f(*ts)
    out.sum().backward()
    return out.detach().numpy(), [t.grad.numpy() for t in ts]


# -- log_softmax / cross_entropy: (x - max) - log(sum(exp(x - max))), PyTorch's order
def test_cross_entropy_of_large_logits_keeps_the_small_loss_and_its_gradient():
    z = np.array([[1e8, 1e8 - 20]])
    x = dg.tensor(z, requires_grad=True)
    loss = F.cross_entropy(x, np.array([0]))
    loss.backward()
    expected, (grad,) = _torch_grads(lambda t: torch.nn.functional.cross_entropy(t, torch.tensor([0])), z)
    assert loss.item() == pytest.approx(2.0611536900435727e-09, rel=1e-12)
    assert loss.item() == pytest.approx(float(expected), rel=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-9)
    assert x.grad.numpy()[0, 0] < 0 < x.grad.numpy()[0, 1]  # was [0, 2.06e-9]: the loss read as exactly 0


def test_log_softmax_of_huge_equal_logits_is_minus_log_2():
    np.testing.assert_array_equal(dg.log_softmax(np.array([1e16, 1e16])), [-np.log(2), -np.log(2)])
    np.testing.assert_array_equal(dg.log_softmax(np.array([1e16, 1e16], np.float32)),
                                  np.full(2, -np.log(2), np.float32))
    assert dg.log_softmax(np.array([1e16, 1e16], np.float32)).dtype == np.float32


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e8, 1e16])
def test_softmax_family_matches_torch_at_every_scale(scale):
    z = np.random.default_rng(1).standard_normal((3, 5)) * scale
    z[0, 1] = z[0, 0]  # a tie at the maximum
    for ours, theirs in [(dg.log_softmax, torch.log_softmax), (dg.softmax, torch.softmax)]:
        value, (grad,) = _torch_grads(lambda t: theirs(t, 1) * torch.arange(5.0), z)
        np.testing.assert_allclose(ours(z, axis=1), theirs(torch.tensor(z), 1).numpy(), rtol=1e-13, atol=1e-300)
        g = dg.grad(lambda x: dg.sum(ours(x, axis=1) * np.arange(5.0)))(z)
        np.testing.assert_allclose(g, grad, rtol=1e-9, atol=1e-12)
    value, (grad,) = _torch_grads(lambda t: torch.logsumexp(t, 1), z)
    np.testing.assert_allclose(dg.logsumexp(z, axis=1), value, rtol=1e-15)
    np.testing.assert_allclose(dg.grad(lambda x: dg.sum(dg.logsumexp(x, axis=1)))(z), grad, rtol=1e-12, atol=1e-300)


def test_large_logits_in_a_static_graph_and_compiled_as_eagerly():
    z, t = np.array([[1e8, 1e8 - 20], [0.0, 3.0]]), np.array([0, 1])
    eager = F.cross_entropy(dg.tensor(z), t).item()
    assert dg.compile(lambda z, t: F.cross_entropy(z, t))(z, t) == eager
    with dg.Graph() as g:
        zs = dg.placeholder((None, 2), name="z")
        ts = dg.placeholder((None,), dtype="int64", name="t")
        loss = F.cross_entropy(zs, ts)
    assert dg.Session(g).run(loss, feed_dict={zs: z, ts: t}) == eager


# -- an empty axis: an empty result (softmax, log_softmax) or -inf (logsumexp), as PyTorch
@pytest.mark.parametrize("shape, axis", [((2, 0), 1), ((0,), 0), ((0, 3), 0), ((2, 0, 3), (1, 2))])
def test_softmax_family_over_an_empty_axis(shape, axis):
    x = np.zeros(shape)
    dims = axis if isinstance(axis, tuple) else (axis,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero warning either
        sm, lsm = dg.softmax(x, axis=axis), dg.log_softmax(x, axis=axis)
        lse = dg.logsumexp(x, axis=axis)
        lse_kept = dg.logsumexp(x, axis=axis, keepdims=True)
    assert sm.shape == lsm.shape == shape
    expected = torch.logsumexp(torch.zeros(shape), dims).numpy()
    assert lse.shape == expected.shape and np.all(lse == -np.inf) and lse.dtype == np.float64
    assert lse_kept.shape == torch.logsumexp(torch.zeros(shape), dims, keepdim=True).shape
    if len(dims) == 1:
        assert torch.softmax(torch.zeros(shape), dims[0]).shape == shape  # PyTorch agrees
    for f in (dg.softmax, dg.log_softmax, dg.logsumexp):
        assert dg.grad(lambda v, f=f: dg.sum(f(v, axis=axis)))(x).shape == shape


def test_empty_axis_compiled_and_with_an_eager_tensor():
    x = dg.tensor(np.zeros((2, 0)), requires_grad=True)
    dg.sum(dg.log_softmax(x, axis=1)).backward()
    assert x.grad.shape == (2, 0)
    out = dg.compile(lambda v: dg.logsumexp(v, axis=1))(np.zeros((2, 0)))
    np.testing.assert_array_equal(out, [-np.inf, -np.inf])
    assert dg.compile(lambda v: dg.softmax(v, axis=1))(np.zeros((3, 0))).shape == (3, 0)


# -- binary_cross_entropy: one primitive with PyTorch's clamps
_P = [0.0, 1.0, 0.3, 1e-300, 1 - 1e-16]
_T = [0.0, 1.0, 0.4]


def test_binary_cross_entropy_values_and_gradients_match_torch_at_0_1_and_inside():
    p = np.repeat(_P, len(_T))
    t = np.tile(_T, len(_P))
    ours_p, ours_t = dg.tensor(p, requires_grad=True), dg.tensor(t, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # log(0) in the target's gradient: inf, as PyTorch
        loss = F.binary_cross_entropy(ours_p, ours_t, reduction="none")
        loss.backward(np.ones_like(p))
    value, (gp, gt) = _torch_grads(lambda a, b: torch.nn.functional.binary_cross_entropy(a, b, reduction="none"),
                                   p, t)
    np.testing.assert_allclose(loss.numpy(), value, rtol=1e-14)
    np.testing.assert_allclose(ours_p.grad.numpy(), gp, rtol=1e-14)
    np.testing.assert_allclose(ours_t.grad.numpy(), gt, rtol=1e-14)  # +-inf where p is 0 or 1
    assert np.isfinite(ours_p.grad.numpy()).all() and np.isinf(ours_t.grad.numpy()[:6]).all()


def test_binary_cross_entropy_of_a_saturated_sigmoid_has_a_finite_gradient():
    z = dg.tensor(np.array([40.0, -40.0, 0.5]), requires_grad=True)
    loss = F.binary_cross_entropy(dg.sigmoid(z), np.array([1.0, 1.0, 0.0]))
    loss.backward()
    zt = torch.tensor([40.0, -40.0, 0.5], dtype=torch.float64, requires_grad=True)
    lt = torch.nn.functional.binary_cross_entropy(torch.sigmoid(zt), torch.tensor([1.0, 1.0, 0.0],
                                                                                  dtype=torch.float64))
    lt.backward()
    assert loss.item() == pytest.approx(lt.item(), rel=1e-14)
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-12)
    assert np.isfinite(z.grad.numpy()).all()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_weight_and_reduction_as_torch(reduction):
    rng = np.random.default_rng(3)
    p, t, w = rng.uniform(0, 1, (4, 3)), rng.uniform(0, 1, (4, 3)), rng.uniform(0, 2, (3,))
    p[0, 0], p[1, 1] = 0.0, 1.0
    value, (gp,) = _torch_grads(lambda a: torch.nn.functional.binary_cross_entropy(
        a, torch.tensor(t), torch.tensor(w), reduction=reduction), p)
    x = dg.tensor(p, requires_grad=True)
    loss = F.binary_cross_entropy(x, t, w, reduction=reduction)
    dg.sum(loss).backward()
    np.testing.assert_allclose(loss.numpy(), value, rtol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), gp, rtol=1e-13)


def test_binary_cross_entropy_higher_orders_match_torch_and_central_differences():
    p, t = np.array([0.3, 0.8, 0.05]), np.array([0.4, 1.0, 0.0])
    assert dg.gradcheck(lambda a, b: F.binary_cross_entropy(a, b), p, t, order=2)
    pt, tt = torch.tensor(p, requires_grad=True), torch.tensor(t, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nn.functional.binary_cross_entropy(pt, tt), pt, create_graph=True)
    hp, ht = torch.autograd.grad(g.sum(), (pt, tt))
    ours = dg.grad(lambda a, b: dg.sum(dg.grad(lambda u: F.binary_cross_entropy(u, b))(a)), argnums=(0, 1))(p, t)
    # PyTorch's double backward adds 1e-12 to p and 1 - p (an approximation); ours is exact (gradcheck above)
    np.testing.assert_allclose(ours[0], hp.numpy(), rtol=1e-9)
    np.testing.assert_allclose(ours[1], ht.numpy(), rtol=1e-9)
    # forward mode: the same derivative
    _, tangent = dg.jvp(lambda a: F.binary_cross_entropy(a, t, reduction="sum"), (p,), (np.ones(3),))
    np.testing.assert_allclose(tangent, dg.grad(lambda a: F.binary_cross_entropy(a, t, reduction="sum"))(p).sum())


def test_binary_cross_entropy_in_a_static_graph_and_compiled():
    p, t = np.array([0.0, 1.0, 0.3]), np.array([1.0, 0.0, 0.4])
    eager = F.binary_cross_entropy(dg.tensor(p), t).item()
    assert dg.compile(F.binary_cross_entropy)(p, t) == eager
    with dg.Graph() as g:
        ps = dg.placeholder((None,), name="p")
        loss = F.binary_cross_entropy(ps, t)
        (grad,) = dg.gradients(loss, [ps])
    value, gp = dg.Session(g).run([loss, grad], feed_dict={ps: p})
    assert value == eager
    np.testing.assert_allclose(gp, dg.grad(lambda a: F.binary_cross_entropy(a, t))(p))
    assert np.isfinite(gp).all()


@pytest.mark.parametrize("bad", [np.array([0.5, 1.5]), np.array([-0.1, 0.5]), np.array([np.nan, 0.5])])
def test_binary_cross_entropy_refuses_inputs_outside_0_1(bad):
    line = _here(2)
    with pytest.raises(ValueError, match=r"binary_cross_entropy: .*\[0, 1\]") as info:
        F.binary_cross_entropy(dg.tensor(bad), np.zeros(2))
    assert line in str(info.value) and "(2,) float64" in str(info.value)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        dg.compile(F.binary_cross_entropy)(bad, np.zeros(2))


def test_binary_cross_entropy_shapes_must_match():
    line = _here(2)
    with pytest.raises(ValueError, match=r"binary_cross_entropy: input shape \(3,\) and target shape \(1,\)") as info:
        F.binary_cross_entropy(dg.tensor([0.1, 0.2, 0.3]), np.ones(1))
    assert line in str(info.value)


# -- class labels checked at run time in static graphs and compiled code
def test_compiled_cross_entropy_refuses_labels_out_of_range():
    ce = dg.compile(lambda z, t: F.cross_entropy(z, t))
    nll = dg.compile(lambda z, t: F.nll_loss(z, t))
    weighted = dg.compile(lambda z, t: F.cross_entropy(z, t, np.ones(3), label_smoothing=0.1))
    for f in (ce, nll, weighted):
        for labels, bad in [([0, 7], "7"), ([0, -1], "-1"), ([3, 0], "3")]:
            with pytest.raises(IndexError, match=rf"\[0, 2\].*ignore_index \(-100\), got {bad}"):
                f(np.zeros((2, 3)), np.array(labels))
    # in range, or ignored: the eager values
    z = np.random.default_rng(0).standard_normal((3, 3))
    for labels in ([0, 2, 1], [0, -100, 2]):
        assert ce(z, np.array(labels)) == pytest.approx(F.cross_entropy(dg.tensor(z), np.array(labels)).item(),
                                                        rel=1e-14)
    assert dg.compile(lambda z, t: F.cross_entropy(z, t, ignore_index=5))(np.zeros((2, 3)), np.array([5, 1])) == \
        pytest.approx(np.log(3))


def test_session_refuses_labels_out_of_range_and_changes_nothing():
    with dg.Graph() as g:
        z = dg.placeholder((None, 3), name="z")
        t = dg.placeholder((None,), dtype="int64", name="t")
        w = dg.Variable(np.ones((3, 3)), name="w")
        loss = F.cross_entropy(z @ w, t)
        train = dg.optim.SGD([w], lr=0.5).minimize(loss)
    sess = dg.Session(g)
    n = len(g)
    with pytest.raises(IndexError, match=r"class_labels.*\[0, 2\].*got 3"):
        sess.run(train, feed_dict={z: np.ones((2, 3)), t: np.array([0, 3])})
    np.testing.assert_array_equal(w.value, np.ones((3, 3)))
    assert len(g) == n
    sess.run(train, feed_dict={z: np.ones((2, 3)), t: np.array([0, 2])})
    assert not np.array_equal(w.value, np.ones((3, 3)))


def test_symbolic_labels_must_be_integers():
    with dg.Graph():
        z = dg.placeholder((None, 3), name="z")
        t = dg.placeholder((None,), dtype="bool", name="t")
        line = _here(2)
        with pytest.raises(TypeError, match="nll_loss: class-index targets must be integers, got dtype bool") as info:
            F.nll_loss(z, t)
    assert line in str(info.value)


# -- atan2 and power at their edges, as PyTorch
def test_arctan2_gradient_at_the_origin_is_zero_as_torch():
    gy, gx = dg.grad(lambda y, x: dg.arctan2(y, x), argnums=(0, 1))(0.0, 0.0)
    yt, xt = torch.tensor(0.0, requires_grad=True), torch.tensor(0.0, requires_grad=True)
    torch.atan2(yt, xt).backward()
    assert (gy, gx) == (yt.grad.item(), xt.grad.item()) == (0.0, 0.0)
    assert np.signbit(gx) == np.signbit(xt.grad.item())  # -0.0, as PyTorch
    y, x = np.array([0.0, 1.0, -2.0, 1e-200]), np.array([0.0, -1.0, 3.0, 1e-200])
    value, (ty, tx) = _torch_grads(torch.atan2, y, x)
    ours = dg.grad(lambda a, b: dg.sum(dg.arctan2(a, b)), argnums=(0, 1))(y, x)
    np.testing.assert_array_equal(ours[0], ty)
    np.testing.assert_array_equal(ours[1], tx)
    _, tangent = dg.jvp(lambda a: dg.arctan2(a, 0.0), (0.0,), (1.0,))
    assert tangent == 0.0


def test_power_exponent_gradient_as_torch():
    x = np.array([0.0, 0.0, 0.0, 0.0, 2.0, -1.0, 0.0])
    y = np.array([-1.0, -0.5, 0.0, 2.0, -1.0, 2.0, 3.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 0 ** -1 divides by zero, in NumPy as in the forward pass
        ours = dg.grad(lambda a, b: dg.sum(dg.power(a, b)), argnums=(0, 1))(x, y)
        base_zero = dg.grad(lambda b: dg.sum(dg.power(0.0, b)))(y)
        scalar = dg.grad(lambda b: dg.power(0.0, b))(-1.0)
    _, (gx, gy) = _torch_grads(torch.pow, x, y)
    np.testing.assert_array_equal(ours[0], gx)
    np.testing.assert_array_equal(ours[1], gy)  # -inf at 0 ** -1, 0 at 0 ** 0 and 0 ** 2, NaN for a negative base
    np.testing.assert_array_equal(base_zero, torch.func.grad(lambda b: torch.pow(0.0, b).sum())(torch.tensor(y)))
    assert scalar == -np.inf
    y32 = np.array([-1.0, 2.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert dg.grad(lambda b: dg.sum(dg.power(np.zeros(2, np.float32), b)))(y32).dtype == np.float32
        assert dg.grad(lambda b: dg.sum(dg.power(0.0, b)))(y32).dtype == np.float32

    # the second derivative of 0 ** y in y is 0 where y > 0 (0 ** y is constant there), not 0 * -inf = NaN
    assert dg.grad(dg.grad(lambda b: dg.power(0.0, b)))(0.25) == 0.0
    assert dg.jacfwd(dg.grad(lambda b: dg.sum(dg.power(0.0, b))))(np.array([0.5, 2.0])).tolist() == [[0, 0], [0, 0]]


# -- dtypes without arithmetic are refused where they enter
@pytest.mark.parametrize("dtype", [object, str, "U3", "datetime64[s]"])
def test_astype_refuses_dtypes_dagrad_does_not_hold(dtype):
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    line = _here(2)
    with pytest.raises(TypeError, match="astype: dtype .* is not supported") as info:
        dg.astype(x, dtype)
    assert line in str(info.value) and "(2,) float64" in str(info.value)


def test_astype_to_real_and_complex_dtypes_works():
    x = dg.tensor([1.5, -2.0], requires_grad=True)
    assert dg.astype(x, np.float32).dtype == np.float32 and dg.astype(x, bool).dtype == np.bool_
    z = dg.astype(x, np.complex64)
    assert z.dtype == np.complex64 and z.numpy().tolist() == [1.5 + 0j, -2 + 0j]
    back = dg.astype(z * (1 + 1j), np.float64)  # complex to real keeps the real part, without NumPy's warning
    assert back.numpy().tolist() == [1.5, -2.0]
    back.sum().backward()
    assert x.grad.dtype == np.float64 and x.grad.numpy().tolist() == [1.0, 1.0]
    assert dg.astype(x, "int64").numpy().tolist() == [1, -2]
    with pytest.raises(TypeError, match="astype: 'nonsense' is not a dtype"):
        dg.astype(x, "nonsense")


@pytest.mark.parametrize("call, name", [
    (lambda x: dg.full_like(x, "a"), "full_like"),
    (lambda x: dg.full_like(x, None), "full_like"),
    (lambda x: dg.zeros_like(x, dtype=object), "zeros_like"),
    (lambda x: dg.ones_like(x, dtype="U3"), "ones_like"),
])
def test_filled_arrays_refuse_values_without_arithmetic(call, name):
    x = dg.tensor(np.zeros(3))
    with pytest.raises(TypeError, match=rf"{name}: ") as info:
        call(x)
    assert "test_numerics.py" in str(info.value) and "(3,) float64" in str(info.value)
    assert dg.full_like(x, np.float32(2.0)).numpy().tolist() == [2.0, 2.0, 2.0]
    assert dg.zeros_like(x, dtype=np.int32).dtype == np.int32
