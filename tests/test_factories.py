"""PyTorch's factories (`dg.zeros`, `dg.rand`, ...), and dagrad.numpy's joining functions, at-least-n-d
functions and differentiable `full`/`zeros`/`ones`/`empty` (issue 14, items 3 and 5)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import dagrad as dg
import dagrad.numpy as dnp
from dagrad import _methods

torch = pytest.importorskip("torch")

HERE = Path(__file__).name


def _torch_dtype(dtype):
    return {np.float64: torch.float64, np.float32: torch.float32, np.int64: torch.int64}[np.dtype(dtype).type]


# ---------------------------------------------------------------- constant factories


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size, shape", [((2, 3), (2, 3)), (((2, 3),), (2, 3)), (([4],), (4,)), (((),), ()),
                                         ((np.int64(2), 0), (2, 0)), ((np.array([1, 2]),), (1, 2))])
def test_constant_factories_take_sizes_as_pytorch_and_default_to_float64(name, size, shape):
    t = getattr(dg, name)(*size)
    assert type(t) is dg.Tensor and t.shape == shape and t.dtype == np.float64  # NumPy's default, not torch's
    assert not t.requires_grad and t.is_leaf
    reference = getattr(torch, name)(*[tuple(int(n) for n in s) if np.ndim(s) else int(s) for s in size])
    assert tuple(reference.shape) == shape
    if name != "empty":
        np.testing.assert_array_equal(t.numpy(), getattr(np, name)(shape))
        np.testing.assert_array_equal(t.numpy(), reference.double().numpy())


@pytest.mark.parametrize("dtype", [np.float32, "float16", np.int32, bool, int])
def test_constant_factories_take_a_dtype(dtype):
    for name in ("zeros", "ones", "empty"):
        t = getattr(dg, name)(3, dtype=dtype)
        assert t.dtype == np.dtype(dtype) and t.shape == (3,)
    np.testing.assert_array_equal(dg.ones(2, 2, dtype=dtype).numpy(), np.ones((2, 2), dtype))


def test_requires_grad_makes_a_trainable_leaf():
    for make in (lambda: dg.zeros(2, 3, requires_grad=True), lambda: dg.ones((2, 3), requires_grad=True),
                 lambda: dg.full((2, 3), 0.5, requires_grad=True), lambda: dg.randn(2, 3, requires_grad=True),
                 lambda: dg.rand(2, 3, requires_grad=True), lambda: dg.empty(2, 3, requires_grad=True)):
        w = make()
        assert w.requires_grad and w.is_leaf
        (w * w.detach()).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), w.numpy())


@pytest.mark.parametrize("size, fill, dtype", [((2, 3), 1.5, None), (3, 7, None), ((2,), True, None),
                                               ((2, 2), np.float32(2.5), None), ((2,), 3, np.float64),
                                               ((), -1.0, None)])
def test_full_follows_numpy_for_the_dtype(size, fill, dtype):
    t = dg.full(size, fill, dtype=dtype)
    expected = np.full(size, fill, dtype)
    assert t.dtype == expected.dtype and t.shape == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)
    reference = torch.full(size if isinstance(size, tuple) else (size,), fill)
    np.testing.assert_array_equal(t.numpy(), reference.numpy().astype(expected.dtype))


@pytest.mark.parametrize("args, kwargs", [((5,), {}), ((1, 7, 2), {}), ((0, 1, 0.25), {}), ((5, -3, -2), {}),
                                          ((3,), {"dtype": np.float32}), ((0.5, 3.0), {}), ((0, 0), {})])
def test_arange_matches_numpy_and_torch(args, kwargs):
    t = dg.arange(*args, **kwargs)
    expected = np.arange(*args, **kwargs)
    assert t.dtype == expected.dtype  # int64 for integers, float64 for floats (NumPy's)
    np.testing.assert_array_equal(t.numpy(), expected)
    reference = torch.arange(*args, dtype=_torch_dtype(expected.dtype))
    np.testing.assert_allclose(t.numpy(), reference.numpy())


@pytest.mark.parametrize("start, end, steps", [(0, 1, 5), (-2.0, 3.0, 11), (1, 1, 1), (0, 1, 0), (3, -1, 4)])
def test_linspace_matches_numpy_and_torch(start, end, steps):
    t = dg.linspace(start, end, steps)
    assert t.dtype == np.float64
    np.testing.assert_allclose(t.numpy(), np.linspace(start, end, steps))
    np.testing.assert_allclose(t.numpy(), torch.linspace(start, end, steps, dtype=torch.float64).numpy())
    assert dg.linspace(start, end, steps, dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,)])
def test_eye_matches_numpy_and_torch(args):
    t = dg.eye(*args)
    assert t.dtype == np.float64
    np.testing.assert_array_equal(t.numpy(), np.eye(*args))
    np.testing.assert_array_equal(t.numpy(), torch.eye(*args, dtype=torch.float64).numpy())
    assert dg.eye(*args, dtype=np.int64).dtype == np.int64


# ---------------------------------------------------------------- random factories


def test_rand_randn_randint_shapes_dtypes_and_ranges():
    dg.manual_seed(0)
    u = dg.rand(200, 3)
    assert u.shape == (200, 3) and u.dtype == np.float64
    assert 0.0 <= u.numpy().min() and u.numpy().max() < 1.0
    assert dg.rand(4, dtype=np.float32).dtype == np.float32
    n = dg.randn(20000)
    assert n.dtype == np.float64 and abs(n.numpy().mean()) < 0.05 and abs(n.numpy().std() - 1) < 0.05
    assert dg.randn((2, 2), dtype="float32").dtype == np.float32
    i = dg.randint(10, (500,))
    assert i.dtype == np.int64 and i.shape == (500,) and set(i.numpy().tolist()) == set(range(10))
    j = dg.randint(-3, 2, (400,))
    assert set(j.numpy().tolist()) == {-3, -2, -1, 0, 1}
    assert dg.randint(5, size=(2, 3)).shape == (2, 3) and dg.randint(0, 5, 4).shape == (4,)
    f = dg.randint(0, 4, (3,), dtype=np.float32, requires_grad=True)
    assert f.dtype == np.float32 and f.requires_grad
    assert dg.randint(0, 2, (3,), dtype=bool).dtype == np.bool_


def test_random_like_factories_take_the_input_shape_and_dtype():
    x = dg.tensor(np.zeros((2, 3), np.float32))
    for name in ("rand_like", "randn_like"):
        t = getattr(dg, name)(x)
        assert t.shape == (2, 3) and t.dtype == np.float32 and type(t) is dg.Tensor
        assert getattr(dg, name)(x, dtype=np.float64, requires_grad=True).requires_grad
        assert getattr(dg, name)(np.zeros(4)).shape == (4,)
    r = dg.randint_like(x, 5)
    assert r.dtype == np.float32 and set(np.unique(r.numpy())) <= {0, 1, 2, 3, 4}
    r = dg.randint_like(np.zeros(300, np.int64), 2, 4)
    assert r.dtype == np.int64 and set(r.numpy().tolist()) == {2, 3}
    assert 0 <= dg.rand_like(x).numpy().min() and dg.rand_like(x).numpy().max() < 1
    np.testing.assert_allclose(torch.rand_like(torch.zeros(2, 3)).shape, dg.rand_like(dg.zeros(2, 3)).shape)


def test_manual_seed_reproduces_draws():
    draws = []
    for _ in range(2):
        dg.manual_seed(123)
        draws.append((dg.rand(4).numpy(), dg.randn(2, 2).numpy(), dg.randint(100, (5,)).numpy(),
                      dg.randn_like(dg.zeros(3)).numpy()))
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)
    dg.manual_seed(124)
    assert not np.array_equal(dg.rand(4).numpy(), draws[0][0])


def test_factories_share_the_default_generator_with_nn_init():
    assert dg.manual_seed is dg.nn.init.manual_seed
    dg.manual_seed(7)
    x = dg.randn(5).numpy()
    dg.nn.init.manual_seed(7)
    t = dg.zeros(5)
    dg.nn.init.normal_(t)
    np.testing.assert_array_equal(t.numpy(), x)  # the same stream: randn draws what normal_ draws
    dg.manual_seed(7)
    u = dg.rand(3).numpy()
    dg.manual_seed(7)
    np.testing.assert_array_equal(dg.nn.init.uniform_(np.zeros(3)), u)
    # a draw by a factory advances the stream nn.init draws from next
    dg.manual_seed(7)
    first = dg.nn.Linear(3, 2).weight.numpy()
    dg.manual_seed(7)
    dg.rand(1)
    assert not np.array_equal(dg.nn.Linear(3, 2).weight.numpy(), first)


def test_generator_argument():
    dg.manual_seed(0)
    a = dg.rand(3, generator=42).numpy()
    np.testing.assert_array_equal(a, dg.rand(3, generator=42).numpy())  # an integer seeds a fresh generator
    np.testing.assert_array_equal(a, np.random.default_rng(42).random(3))
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(dg.randn(2, generator=g1).numpy(), dg.randn(2, generator=g2).numpy())
    dg.manual_seed(0)
    untouched = dg.rand(3).numpy()
    dg.manual_seed(0)
    dg.rand(3, generator=np.random.default_rng(1))  # does not draw from the default generator
    np.testing.assert_array_equal(dg.rand(3).numpy(), untouched)
    with pytest.raises(TypeError, match="rand: generator must be an np.random.Generator"):
        dg.rand(3, generator="seed")


# ---------------------------------------------------------------- the _like factories


def test_like_factories_keep_their_op_behaviour_and_add_requires_grad():
    x = dg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    z = dg.zeros_like(x)
    assert type(z) is dg.Tensor and not z.requires_grad and z.numpy().tolist() == [[0, 0], [0, 0]]
    assert isinstance(dg.ones_like(np.zeros(2)), np.ndarray)  # NumPy in, NumPy out, as before
    assert dg.full_like(x, 3, dtype=np.int32).dtype == np.int32  # dtype stays positional-or-keyword
    for name, fill in (("zeros_like", 0), ("ones_like", 1), ("empty_like", 0)):
        w = getattr(dg, name)(x, requires_grad=True)
        assert w.requires_grad and w.is_leaf and w.shape == (2, 2) and (name == "empty_like" or
                                                                          (w.numpy() == fill).all())
    w = dg.full_like(np.zeros(3, np.float32), 0.5, requires_grad=True)
    assert type(w) is dg.Tensor and w.requires_grad and w.dtype == np.float32 and w.numpy().tolist() == [0.5] * 3
    # inside a transform, on a traced value: still a constant (no gradient through it)
    assert float(dg.grad(lambda v: dg.sum(v * dg.ones_like(v) + dg.zeros_like(v)))(2.0)) == 1.0


def test_like_factories_work_on_static_graph_nodes():
    g = dg.Graph()
    with g:
        x = dg.placeholder(shape=(None, 3), dtype="float64")
        nodes = [dg.zeros_like(x), dg.ones_like(x, dtype=np.int64), dg.full_like(x, 2.5), dg.empty_like(x)]
    got = dg.Session(g).run(nodes, feed_dict={x: np.ones((2, 3))})
    assert [a.tolist() for a in got[:3]] == [[[0.0] * 3] * 2, [[1] * 3] * 2, [[2.5] * 3] * 2]
    assert got[1].dtype == np.int64 and got[3].shape == (2, 3)
    with pytest.raises(TypeError, match="zeros_like: requires_grad=True makes an eager tensor"):
        dg.zeros_like(x, requires_grad=True)
    with pytest.raises(TypeError, match="rand_like: got a static graph's node"):
        dg.rand_like(x)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, kind, pattern", [
    (lambda: dg.zeros(-1), ValueError, r"zeros: negative size -1"),
    (lambda: dg.ones(2, -3), ValueError, r"ones: negative size -3"),
    (lambda: dg.rand((2, -1)), ValueError, r"rand: negative size -1"),
    (lambda: dg.full((-2,), 1.0), ValueError, r"full: negative size -2"),
    (lambda: dg.eye(-1), ValueError, r"eye: negative size -1"),
    (lambda: dg.randint(5, (-1,)), ValueError, r"randint: negative size -1"),
    (lambda: dg.linspace(0, 1, -1), ValueError, r"linspace: steps must be >= 0"),
    (lambda: dg.zeros(2.0), TypeError, r"zeros: size 2.0 .*'float' object cannot be interpreted as an integer"),
    (lambda: dg.randn((2, 1.5)), TypeError, r"randn: size 1.5"),
    (lambda: dg.empty(True), TypeError, r"empty: size True .*a bool is not accepted"),
    (lambda: dg.linspace(0, 1, 2.0), TypeError, r"linspace: steps 2.0"),
    (lambda: dg.zeros(), TypeError, r"zeros: missing the size"),
    (lambda: dg.zeros(2, dtype=np.int64, requires_grad=True), TypeError,
     r"zeros: only floating-point and complex tensors can require gradients, got dtype int64"),
    (lambda: dg.arange(5, requires_grad=True), TypeError, r"arange: only floating-point and complex"),
    (lambda: dg.full((2,), 3, requires_grad=True), TypeError, r"full: only floating-point and complex"),
    (lambda: dg.randint(5, (2,), requires_grad=True), TypeError, r"randint: only floating-point and complex tensors"),
    (lambda: dg.ones_like(dg.tensor([1, 2]), requires_grad=True), TypeError, r"ones_like: only floating-point"),
    (lambda: dg.eye(2, dtype=bool, requires_grad=True), TypeError, r"eye: only floating-point and complex"),
    (lambda: dg.zeros(2, dtype=np.str_), TypeError, r"zeros: unsupported dtype <U"),
    (lambda: dg.ones(2, dtype="nonsense"), TypeError, r"ones: 'nonsense' is not a dtype"),
    (lambda: dg.rand(2, dtype=np.int64), TypeError, r"rand: dtype int64 is not a floating-point dtype"),
    (lambda: dg.randn_like(dg.tensor([1, 2])), TypeError, r"randn_like: dtype int64 is not a floating-point"),
    (lambda: dg.randint(3, 3, (2,)), ValueError, r"randint: low \(3\) must be less than high \(3\)"),
    (lambda: dg.randint(5), TypeError, r"randint: needs high and size"),
    (lambda: dg.randint(0, 300, (2,), dtype=np.uint8), ValueError, r"randint: \[0, 300\) does not fit"),
    (lambda: dg.randint(2.5, (2,)), TypeError, r"randint: high 2.5"),
    (lambda: dg.arange(0, 5, 0), ValueError, r"arange: step must be nonzero"),
    (lambda: dg.arange(0, np.inf), ValueError, r"arange: end must be finite"),
    (lambda: dg.arange("a"), TypeError, r"arange: end must be a real number"),
    (lambda: dg.full((2,), "x"), TypeError, r"full: the fill value must be a real number"),
    (lambda: dg.full((2,), [1.0, 2.0]), TypeError, r"full: the fill value must be a real number"),
])
def test_bad_input_is_a_clear_error_at_the_callers_line(call, kind, pattern):
    with pytest.raises(kind, match=pattern) as info:
        call()
    assert HERE in str(info.value)


# ---------------------------------------------------------------- dagrad.numpy: joining and at-least-n-d

SHAPES = [(), (3,), (2, 3), (2, 3, 2)]


def _values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("shape", SHAPES)
def test_atleast_nd_matches_numpy_and_differentiates(name, shape):
    a = _values(shape)
    ours, theirs = getattr(dnp, name), getattr(np, name)
    t = ours(dg.tensor(a))
    assert type(t) is dg.Tensor
    np.testing.assert_array_equal(t.numpy(), theirs(a))
    assert isinstance(ours(a), np.ndarray) and ours(a).shape == theirs(a).shape
    several = ours(dg.tensor(a), a)
    assert isinstance(several, tuple) and [s.shape for s in several] == [x.shape for x in theirs(a, a)]
    weights = _values(theirs(a).shape, 1)
    assert dg.gradcheck(lambda x: ours(x) * weights, a, order=2)


STACKS = [
    ("vstack", [(3,), (3,)]), ("vstack", [(2, 3), (1, 3), (3,)]), ("vstack", [(2, 2, 2), (1, 2, 2)]),
    ("hstack", [(3,), (2,)]), ("hstack", [(2, 3), (2, 1)]), ("hstack", [(), ()]),
    ("dstack", [(3,), (3,)]), ("dstack", [(2, 3), (2, 3, 2)]),
    ("column_stack", [(3,), (3,)]), ("column_stack", [(3,), (3, 2)]), ("column_stack", [(2, 2, 1), (2, 2, 1)]),
    ("row_stack", [(2,), (1, 2)]),
]


@pytest.mark.parametrize("name, shapes", STACKS)
def test_stacks_match_numpy_and_differentiate(name, shapes):
    if not hasattr(np, name):
        pytest.skip(f"numpy {np.__version__} has no {name}")
    arrays = [_values(s, k) for k, s in enumerate(shapes)]
    ours = getattr(dnp, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # np.row_stack in NumPy 2
        expected = getattr(np, name)(arrays)
        tensors = [dg.tensor(a) for a in arrays]
        out = ours(tensors)
        assert type(out) is dg.Tensor
        np.testing.assert_array_equal(out.numpy(), expected)
        np.testing.assert_array_equal(ours(arrays), expected)  # NumPy in, NumPy out
        assert isinstance(ours(arrays), np.ndarray)
        np.testing.assert_array_equal(ours([tensors[0], *arrays[1:]]).numpy(), expected)  # mixed
        weights = _values(expected.shape, 9)
        assert dg.gradcheck(lambda *xs: ours(list(xs)) * weights, *arrays, order=2)


def test_numpy_functions_on_tensors_dispatch_to_the_new_ones():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    for function in (np.vstack, np.hstack, np.dstack, np.column_stack):
        y = function([x, x * 3])
        assert type(y) is dg.Tensor
        x.grad = None
        dg.sum(y).backward()
        assert x.grad.numpy().tolist() == [4.0, 4.0]
    assert type(np.atleast_2d(x)) is dg.Tensor and np.atleast_3d(x).shape == (1, 2, 1)


def test_stack_errors_point_at_the_callers_line():
    x = dg.tensor(np.ones(2))
    with pytest.raises(ValueError, match="array dimensions except for the concatenation axis") as info:
        dnp.vstack([x, np.ones(3)])
    assert HERE in str(info.value)
    with pytest.raises(ValueError, match="vstack:") as info:
        dnp.vstack([np.ones(2), np.ones(3)])
    assert HERE in str(info.value)
    with pytest.raises(TypeError, match="vstack: cannot cast array data from dtype float64 to int64"):
        dnp.vstack([x, x], dtype=np.int64)
    assert dnp.vstack([x, x], dtype=np.float32).dtype == np.float32
    assert dnp.vstack([x, x], dtype=np.int64, casting="unsafe").dtype == np.int64


# ---------------------------------------------------------------- dagrad.numpy: full, zeros, ones, empty


def test_full_zeros_ones_empty_are_numpys_for_plain_values():
    cases = [(dnp.full, np.full, ((2, 3), 1.5)), (dnp.full, np.full, (3, 7)), (dnp.full, np.full, ((2, 2), [1, 2])),
             (dnp.zeros, np.zeros, ((2, 3),)), (dnp.ones, np.ones, (4,)), (dnp.zeros, np.zeros, ((), np.int32))]
    for ours, theirs, args in cases:
        got, expected = ours(*args), theirs(*args)
        assert type(got) is np.ndarray and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert dnp.empty((2, 0)).shape == (2, 0) and dnp.empty(3, dtype=np.float32).dtype == np.float32
    assert dnp.ones(2, dtype=int).dtype == np.int64
    assert dnp.full((2,), 1.0, dtype=np.float32).dtype == np.float32
    assert dnp.empty_like(np.ones((2, 3))).shape == (2, 3)


def test_full_with_a_tensor_fill_value_is_differentiable():
    g = dg.tensor(2.0, requires_grad=True)
    y = dnp.full((2, 3), g)
    assert type(y) is dg.Tensor and y.numpy().tolist() == [[2.0] * 3] * 2
    (y * np.arange(6.0).reshape(2, 3)).sum().backward()
    assert float(g.grad.numpy()) == 15.0
    row = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert dnp.full((2, 3), row).numpy().tolist() == [[1.0, 2.0, 3.0]] * 2
    assert dnp.full((2,), g, dtype=np.float32).dtype == np.float32
    assert dg.gradcheck(lambda v: dnp.full((2, 3), v) * np.arange(6.0).reshape(2, 3), np.array([0.5, 1.0, 2.0]),
                        order=2)
    assert float(dg.grad(lambda v: dg.sum(dnp.full((4,), v)))(1.0)) == 4.0


def test_full_zeros_ones_give_a_graph_node_for_a_shape_known_only_when_the_graph_runs():
    graph = dg.Graph()
    with graph:
        x = dg.placeholder(shape=(None, 2), dtype="float64")
        nodes = [dnp.zeros(x.shape), dnp.ones(x.shape, dtype=np.int64), dnp.full(x.shape, 0.5), dnp.empty(x.shape)]
    got = dg.Session(graph).run(nodes, feed_dict={x: np.ones((3, 2))})
    assert [a.shape for a in got] == [(3, 2)] * 4 and got[1].dtype == np.int64
    assert got[0].sum() == 0 and got[1].sum() == 6 and got[2].sum() == 3.0


def test_full_zeros_errors_point_at_the_callers_line():
    x = dg.tensor([1.0, 2.0])
    for call, kind, pattern in [
        (lambda: dnp.full((3,), x), ValueError, r"full: the fill value of shape \(2,\) cannot be broadcast"),
        (lambda: dnp.full((2,), [1, 2, 3]), ValueError, r"full: could not broadcast"),
        (lambda: dnp.zeros(-1), ValueError, r"zeros: negative size -1"),
        (lambda: dnp.ones((2, 2.0)), TypeError, r"ones: size 2.0"),
        (lambda: dnp.zeros((None, 2)), TypeError, r"zeros: size None"),
        (lambda: dnp.empty(2, dtype="nonsense"), TypeError, r"empty: data type 'nonsense' not understood"),
    ]:
        with pytest.raises(kind, match=pattern) as info:
            call()
        assert HERE in str(info.value), str(info.value)


class SumOfSquares(dg.Function):
    """sum(x ** 2), whose backward builds its gradient with dnp.full from the incoming cotangent."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x).sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return dnp.full(x.shape, g) * 2 * x


def test_full_in_a_custom_functions_backward_differentiates_at_second_order():
    x0 = np.array([1.0, -2.0, 3.0])
    f = lambda x: SumOfSquares.apply(x)  # noqa: E731
    np.testing.assert_allclose(dg.grad(f)(x0), 2 * x0)
    np.testing.assert_allclose(dg.hessian(f)(x0), 2 * np.eye(3))  # the backward's cotangent is a Tensor here
    assert dg.gradcheck(f, x0, order=2)
    x = dg.tensor(x0, requires_grad=True)
    y = f(x)
    y.backward(create_graph=True)
    (x.grad * x.grad).sum().backward()  # d/dx sum((2x)^2) = 8x, added to the first gradient 2x
    np.testing.assert_allclose(x.grad.numpy(), 2 * x0 + 8 * x0)
    graph = dg.Graph()
    with graph:
        p = dg.placeholder(shape=(None,), dtype="float64")
        (gp,) = dg.gradients(SumOfSquares.apply(p) * 3, [p])
        (ggp,) = dg.gradients(dg.sum(gp * gp), [p])
    got = dg.Session(graph).run([gp, ggp], feed_dict={p: x0})
    np.testing.assert_allclose(got[0], 6 * x0)
    np.testing.assert_allclose(got[1], 72 * x0)


# ---------------------------------------------------------------- how much of NumPy dagrad.numpy covers

ADDED = ["vstack", "hstack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d", "full", "zeros",
         "ones", "empty", "empty_like"]


def numpy_coverage():
    """(covered, missing): NumPy's public callables (not types) that dagrad.numpy has a dagrad version of
    (differentiable, or run on a Tensor's values as `np.allclose(t, u)` is), and the others."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = sorted(n for n in dir(np) if not n.startswith("_") and callable(getattr(np, n))
                       and not isinstance(getattr(np, n), type))
        covered, missing = [], []
        for name in names:
            ours = getattr(dnp, name, None)
            dagrads = callable(ours) and getattr(ours, "__module__", "").startswith("dagrad")
            (covered if dagrads or getattr(np, name) in _methods._FUNCTIONS else missing).append(name)
    return covered, missing


def test_numpy_coverage_is_at_least_what_the_docs_say():
    covered, missing = numpy_coverage()
    assert set(ADDED) <= set(covered)
    assert not {"sin", "sum", "concatenate", "allclose"} & set(missing)
    docs = (Path(__file__).resolve().parent.parent / "docs" / "numpy.md").read_text(encoding="utf-8")
    found = re.search(r"covers (\d+) of NumPy's (\d+) public functions", docs)
    assert found, "docs/numpy.md states the coverage as 'covers N of NumPy's M public functions'"
    documented = int(found.group(1)) / int(found.group(2))
    assert len(covered) / (len(covered) + len(missing)) >= documented - 1e-9, (len(covered), len(missing))


if __name__ == "__main__":  # prints the coverage and what is missing
    covered, missing = numpy_coverage()
    total = len(covered) + len(missing)
    print(f"dagrad.numpy covers {len(covered)} of NumPy's {total} public functions ({len(covered) / total:.0%})")
    print("missing:", " ".join(missing))
