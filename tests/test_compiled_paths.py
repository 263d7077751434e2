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


# -- batched integer indices: negative entries count from the end, entries out of range raise IndexError
X = np.arange(12.0).reshape(4, 3)


def test_compiled_vmap_of_an_index_with_negative_entries_is_numpys():
    pick = lambda x, i: x[i]  # noqa: E731
    i = np.array([0, -1, 1, 2])
    want = X[np.arange(4), i]  # [0, 5, 7, 11]
    for path in (dg.vmap(pick), dg.compile(dg.vmap(pick)), dg.compile(dg.vmap(pick), optimize=False)):
        np.testing.assert_array_equal(path(X, i), want)
    one_hot = np.zeros((4, 3))
    one_hot[np.arange(4), i] = 1.0
    summed = lambda x, i: dg.vmap(pick)(x, i).sum()  # noqa: E731
    for path in (dg.vmap(dg.grad(pick)), dg.compile(dg.vmap(dg.grad(pick))), dg.grad(summed),
                 dg.compile(dg.grad(summed)),
                 dg.vmap(dg.jacrev(pick)), dg.compile(dg.vmap(dg.jacrev(pick))), dg.compile(dg.vmap(dg.jacfwd(pick)))):
        np.testing.assert_array_equal(path(X, i), one_hot)


@pytest.mark.parametrize("i", [[0, 5, 1, 2], [0, -4, 1, 2]])
def test_an_index_out_of_range_raises_index_error_on_every_path(i):
    i = np.array(i)
    pick = lambda x, i: x[i]  # noqa: E731
    paths = {"vmap": dg.vmap(pick), "compiled vmap": dg.compile(dg.vmap(pick)),
             "reference": dg.compile(dg.vmap(pick), optimize=False), "vmap grad": dg.vmap(dg.grad(pick)),
             "compiled vmap grad": dg.compile(dg.vmap(dg.grad(pick))),
             "compiled jacfwd": dg.compile(dg.vmap(dg.jacfwd(pick))),
             "compiled take": dg.compile(dg.vmap(lambda x, i: dg.numpy.take(x, i)))}
    for name, path in paths.items():
        with pytest.raises(IndexError, match=r"(getitem|gather|scatter_add).* is out of bounds for axis"):
            path(X, i)
            pytest.fail(f"{name} did not raise")
    graph = dg.Graph()
    with graph:
        rows = dg.placeholder((None,), dtype="int64", name="rows")
        picked = dg.constant(X)[rows, dg.constant(np.arange(3))[:1]]
    with pytest.raises(IndexError, match=r"gather failed in Session.run.*out of bounds"):
        dg.Session(graph).run(picked, {rows: np.array([0, 4])})


def test_index_select_and_take_with_indices_mapped_by_vmap():
    # np.take at mapped indices: eagerly it refused them (np.asarray of the box), compiled it read the flattened
    # batch at index + example * n (the previous example's row for -1)
    i = np.array([[0, -1], [2, 2], [-3, 1], [1, 0]])
    want = np.stack([np.take(X[k], i[k]) for k in range(4)])
    select = dg.vmap(lambda x, i: dg.index_select(x, 0, i))
    for path in (select, dg.compile(select)):
        np.testing.assert_array_equal(path(X, i), want)
    table = np.arange(15.0).reshape(5, 3)
    shared = dg.vmap(lambda t, i: dg.numpy.take(t, i, axis=1), in_axes=(None, 0))
    np.testing.assert_array_equal(shared(dg.tensor(table), i).numpy(), np.stack([table[:, r] for r in i]))
    np.testing.assert_array_equal(dg.compile(shared)(table, i), np.stack([table[:, r] for r in i]))


# -- a Python float argument is traced like a 0-d array, weakly typed as NumPy 2 types it
def _same(got, want):
    """Equal values, and the same type and dtype (np.float64 stays np.float64, a 0-d array a 0-d array)."""
    assert type(got) is type(want), (got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype, (got, want)
    np.testing.assert_array_equal(got, want)


LOOPS = {
    "fori_loop": lambda w: dg.fori_loop(0, 4, lambda i, c: dg.sin(c * w + i), 0.2),
    "scan": lambda w: dg.scan(lambda c, x: (dg.sin(c * w + x), c), 0.2, np.arange(4.0))[0],
    "cond": lambda w: dg.cond(w > 0.5, lambda a: dg.sin(a * w), lambda a: a * w * w, 0.2),
}


@pytest.mark.parametrize("name", LOOPS)
def test_the_gradient_at_a_python_float_reaches_it_through_control_flow(name):
    f = LOOPS[name]
    for transform in (dg.grad, dg.hessian, lambda f: (lambda w: dg.jvp(f, (w,), (1.0,)))):
        fast = dg.compile(transform(f))
        for w in (0.7, 0.3, -1.25):
            want, got = transform(f)(w), fast(w)
            for g, e in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                _same(g, e)
        assert len(fast._cache.keys()) == 1  # a new float value runs the same code
    assert dg.compile(dg.grad(f))(0.7) != 0.0


def test_a_gradient_inside_a_compiled_function_reaches_a_constant_through_a_loop():
    # the loop's gradient rule read which operands are traced off the values it got: a box over a constant
    # array reached it as that array, and its cotangent was left out (a silent zero)
    f = LOOPS["fori_loop"]
    want = dg.grad(f)(0.7)
    assert dg.compile(lambda x: dg.grad(f)(0.7) * x)(np.float64(1.0)) == want
    with dg.Graph():
        assert np.isclose(dg.grad(f)(np.array(0.7)), want, rtol=1e-14)


def test_a_python_float_keeps_float32_data_float32_as_eagerly():
    x32 = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    cases = {
        "x * w": lambda w, x: x * w,
        "x * (w * 2 - 1)": lambda w, x: x * (w * 2.0 - 1),  # Python's arithmetic on w stays weak
        "x / abs(-w) ** 0.5": lambda w, x: x / abs(-w) ** 0.5,  # Python's ** (C's pow), not np.power
        "x * sin(w)": lambda w, x: x * dg.sin(w),  # a dagrad function of w is a float64 value, as eagerly
        "w alone": lambda w, x: w,
        "w * 3": lambda w, x: w * 3,
        "grad": dg.grad(lambda w, x: dg.sum(x * w)),  # grad boxes w as a float64 array, as eagerly
        "value_and_grad": dg.value_and_grad(lambda w, x: dg.sum(x * w * w)),
        "vmap over x": lambda w, x: dg.vmap(lambda r: r * w)(x.reshape(5, 1)),
        "jacfwd": dg.jacfwd(lambda w, x: x * w),
        "complex": lambda w, x: x * (w * 1j),
        "in a loop's body": lambda w, x: dg.fori_loop(0, 3, lambda i, c: c * (w * 2.1) + w, x),
        "in cond's branches": lambda w, x: dg.cond(w > 1.0, lambda a: a * (w - 0.5), lambda a: a / -w, x),
    }
    for name, f in cases.items():
        fast, reference = dg.compile(f), dg.compile(f, optimize=False)
        for w in (0.1, 1.7):
            want = f(w, x32)
            for got, e in zip(*((r if isinstance(r, tuple) else (r,)) for r in (fast(w, x32), want))):
                _same(got, e)
            for got, e in zip(*((r if isinstance(r, tuple) else (r,)) for r in (reference(w, x32), want))):
                _same(got, e)
        assert len(fast._cache.keys()) == 1, name


def test_python_control_flow_on_a_traced_float_says_to_use_where():
    with pytest.raises(TypeError, match=r"bool\(\) of a value traced by dg.compile.*dg\.where"):
        dg.compile(lambda x, w: x * 2 if w > 0 else x)(np.ones(2), 0.5)
    with pytest.raises(TypeError, match=r"float\(\) of a value traced by dg.compile"):
        dg.compile(lambda x, w: x * float(w))(np.ones(2), 0.5)


def test_ints_and_bools_stay_constants_and_their_gradient_is_refused_as_eagerly():
    f = lambda x, n: x * n  # noqa: E731
    fast = dg.compile(f)
    for n in (2, 3, 2, True):
        _same(fast(np.ones(2, np.int32), n), f(np.ones(2, np.int32), n))
    assert len(fast._cache.keys()) == 3  # one trace per value (and type): 2, 3, True
    assert "3" in fast.source(np.ones(2, np.int32), 3)
    for path in (dg.grad(lambda w: w * w), dg.compile(dg.grad(lambda w: w * w))):
        with pytest.raises(TypeError, match="pass a float such as 1.0 instead of 1"):
            path(3)


def test_an_exported_module_takes_the_python_float_as_it_is(tmp_path):
    import importlib.util

    x32 = np.ones(3, np.float32)
    f = lambda x, w: x * (w * 2.0) + dg.grad(LOOPS["fori_loop"])(w)  # noqa: E731
    path = dg.compile(f).export(tmp_path / "weak_float.py", x32, 0.7)
    spec = importlib.util.spec_from_file_location("weak_float", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for w in (0.7, -0.2):
        _same(module.f(x32, w), f(x32, w))
    with pytest.raises(ValueError, match="w: expected a Python float"):
        module.f(x32, np.float64(0.7))


def test_static_argnums_and_argnames_make_a_float_a_constant_of_the_code():
    # code that checks a hyperparameter in Python (F.dropout's `0 <= p <= 1`) needs its value: as in jax.jit
    F = dg.nn.functional
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    with pytest.raises(TypeError, match=r"dropout: p must be a number known when dg.compile\(f\) traces the function, "
                       r"got the Python float argument 'p'.*static_argnames=\('p',\)"):
        dg.compile(lambda x, p: F.dropout(x, p, training=False))(x, 0.5)
    by_position = dg.compile(lambda x, slope: F.leaky_relu(x, slope), static_argnums=1)
    by_name = dg.compile(lambda x, *, slope: F.leaky_relu(x, slope), static_argnames="slope")
    by_parameter_name = dg.compile(lambda x, slope: F.leaky_relu(x, slope), static_argnames=("slope",))
    for slope in (0.1, 0.2, 0.1, -0.0):
        want = F.leaky_relu(x, slope)
        _same(by_position(x, slope), want)
        _same(by_name(x, slope=slope), want)
        _same(by_parameter_name(x, slope), want)
        _same(by_parameter_name(x, slope=slope), want)
    assert len(by_position._cache.keys()) == 3  # one trace per value: 0.1, 0.2, -0.0
    with pytest.raises(TypeError, match="a static argument must be a hashable constant, got a ndarray"):
        dg.compile(lambda x, y: x * y, static_argnums=1)(x, x)
    with pytest.raises(TypeError, match=r"float\(\) of a value traced.*'w' is a Python float.*static_argnames"):
        dg.compile(lambda x, w: x * float(w))(x, 0.5)
