"""Public programs written for PyTorch run with dagrad in place of `torch` and match PyTorch's numbers.

Each function below is the text of a PyTorch tutorial ("Learning PyTorch with Examples") or of
micrograd's test, with fewer steps and `torch` renamed `lib`. It runs twice, with `lib` bound to
`torch` and to `dagrad`; only the random initial values are fixed so that both start alike.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dagrad

torch = pytest.importorskip("torch")


def poly_autograd(lib, start, losses):
    dtype = lib.float
    x = lib.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = lib.sin(x)
    a, b, c, d = (lib.tensor(v, dtype=dtype, requires_grad=True) for v in start)
    learning_rate = 1e-6
    for _t in range(300):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return [a.item(), b.item(), c.item(), d.item()]


def poly_nn(lib, start, losses):
    x = lib.linspace(-math.pi, math.pi, 2000, dtype=lib.double)
    y = lib.sin(x)
    p = lib.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = lib.nn.Sequential(lib.nn.Linear(3, 1), lib.nn.Flatten(0, 1)).double()
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor([start[:3]], dtype=lib.double))
        model[0].bias.fill_(start[3])
    loss_fn = lib.nn.MSELoss(reduction='sum')
    learning_rate = 1e-6
    for _t in range(300):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with lib.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    linear_layer = model[0]
    return [linear_layer.bias.item()] + [linear_layer.weight[:, k].item() for k in range(3)]


def poly_optim(lib, start, losses):
    x = lib.linspace(-math.pi, math.pi, 2000, dtype=lib.double)
    y = lib.sin(x)
    p = lib.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = lib.nn.Sequential(lib.nn.Linear(3, 1), lib.nn.Flatten(0, 1)).double()
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor([start[:3]], dtype=lib.double))
        model[0].bias.fill_(start[3])
    loss_fn = lib.nn.MSELoss(reduction='sum')
    learning_rate = 1e-3
    optimizer = lib.optim.RMSprop(model.parameters(), lr=learning_rate)
    for _t in range(300):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    linear_layer = model[0]
    return [linear_layer.bias.item()] + [linear_layer.weight[:, k].item() for k in range(3)]


def legendre(lib, start, losses):
    class LegendrePolynomial3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    dtype = lib.double
    device = lib.device("cpu")
    x = lib.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = lib.sin(x)
    a = lib.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = lib.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = lib.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = lib.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    for _t in range(300):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return [a.item(), b.item(), c.item(), d.item()]


def micrograd(lib, start, losses):
    a = lib.Tensor([-4.0]).double()
    b = lib.Tensor([2.0]).double()
    a.requires_grad = True
    b.requires_grad = True
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g = g + 10.0 / f
    g.backward()
    losses.append(g.data.item())
    return [a.grad.item(), b.grad.item()]


def _run(program, lib):
    losses = []
    result = program(lib, [0.1, -0.2, 0.05, 0.3], losses)
    return np.array(losses), np.array(result)


@pytest.mark.parametrize("program, rtol", [(poly_autograd, 2e-4), (poly_nn, 1e-12), (poly_optim, 1e-9),
                                           (legendre, 1e-11), (micrograd, 1e-15)],
                         ids=["polynomial autograd (float32)", "polynomial nn", "polynomial optim RMSprop",
                              "custom Function (Legendre)", "micrograd's test_more_ops"])
def test_the_program_runs_unchanged_and_matches_torch(program, rtol):
    ours, theirs = _run(program, dagrad), _run(program, torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=rtol)  # the losses, step by step
    np.testing.assert_allclose(ours[1], theirs[1], rtol=rtol, atol=1e-12)  # the final parameters


def test_module_to_casts_parameters_in_place_as_torch():
    model = dagrad.nn.Sequential(dagrad.nn.Linear(3, 2), dagrad.nn.Tanh(), dagrad.nn.Linear(2, 1))
    params = list(model.parameters())
    opt = dagrad.optim.SGD(params, lr=0.1)
    assert model.float() is model and all(p.dtype == np.float32 for p in model.parameters())
    assert all(a is b for a, b in zip(params, model.parameters()))  # the same tensors: the optimiser still holds them
    loss = model(dagrad.ones(4, 3, dtype=np.float32)).sum()
    loss.backward()
    opt.step()
    assert loss.dtype == np.float32 and all(p.dtype == np.float32 for p in params)
    with pytest.raises(TypeError, match="Module.to: .*floating dtype only, got int64"):
        model.to(np.int64)
    assert model.to("cpu") is model and params[0].dtype == np.float32
