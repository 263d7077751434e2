"""Paths through dg.compile (and vmap and control flow inside it) give eager's answer: batched integer
indices, Python float arguments, and the optimisers' bias corrections (issue 24)."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg


# -- the optimisers compute their scalars with the operation the compiled step uses
@pytest.mark.parametrize("amsgrad", [False, True])
def test_eager_adam_bias_corrections_use_numpy_power_as_the_compiled_step(amsgrad):
    # Python's ** (C's pow) and np.power (a SIMD loop on some CPUs) differ by an ulp at some steps: eager and
    # compiled steps agree only if both take np.power
    rng = np.random.default_rng(0)
    p0, grads = rng.normal(size=5), rng.normal(size=(30, 5))
    w = dg.tensor(p0.copy(), requires_grad=True)
    opt = dg.optim.Adam([w], lr=0.01, betas=(0.9, 0.999), amsgrad=amsgrad)
    p, m, v, vmax = p0.copy(), np.zeros(5), np.zeros(5), np.zeros(5)
    for t, g in enumerate(grads, start=1):
        w.grad = dg.tensor(g)
        opt.step()
        m = m + (1 - 0.9) * (g - m)
        v = v * 0.999 + (1 - 0.999) * g * g
        vmax = np.maximum(vmax, v)
        step_size = 0.01 / (1 - np.power(0.9, float(t)))
        denom = np.sqrt(vmax if amsgrad else v) / np.power(1 - np.power(0.999, float(t)), 0.5) + 1e-8
        p = p + -step_size * (m / denom)
        assert np.array_equal(w.numpy(), p), f"step {t}"


def test_eager_adam_keeps_float32_parameters_float32():
    w = dg.tensor(np.ones(3, np.float32), requires_grad=True)
    opt = dg.optim.AdamW([w], lr=0.1, amsgrad=True)
    for _ in range(3):
        w.grad = dg.tensor(np.full(3, 0.5, np.float32))
        opt.step()
        assert w.dtype == np.float32 and w.numpy().dtype == np.float32
        assert all(np.asarray(s).dtype in (np.float32, np.float64) for s in opt.state[w].values())
        assert opt.state[w]["exp_avg"].dtype == np.float32
