"""Indexing with an index that is itself a graph's value: a placeholder in a static graph, a traced
argument under dg.compile, mapped labels under vmap (the `gather` and `scatter_add` ops)."""

from __future__ import annotations

import numpy as np
import pytest

import dagrad as dg

E = np.arange(12.0).reshape(4, 3)


def test_static_graph_embedding_lookup_and_its_gradient():
    g = dg.Graph()
    with g:
        emb = dg.Variable(E, name="emb")
        ids = dg.placeholder((None,), dtype="int64", name="ids")
        rows = emb[ids]
        (grad,) = dg.gradients((rows ** 2).sum(), [emb])
    got_rows, got_grad = dg.Session(g).run([rows, grad], feed_dict={ids: np.array([1, 1, -1])})
    want = np.zeros_like(E)
    np.add.at(want, [1, 1, -1], 2 * E[[1, 1, -1]])  # repeated indices add up
    assert np.array_equal(got_rows, E[[1, 1, -1]])
    assert np.array_equal(got_grad, want)


def test_compiled_index_after_full_slices_matches_eager():
    f = lambda e, i: (e[:, i] ** 2).sum()  # noqa: E731
    i = np.array([2, 0, 2])
    assert np.array_equal(dg.compile(f)(E, i), f(E, i))
    assert np.array_equal(dg.compile(dg.grad(f))(E, i), dg.grad(f)(E, i))
    assert np.array_equal(dg.compile(dg.jacfwd(lambda e, i: e[i].sum(axis=-1)))(E, i),
                          dg.jacfwd(lambda e: e[i].sum(axis=-1))(E))


def test_compiled_per_example_loss_with_mapped_labels():
    rng = np.random.default_rng(0)
    x, w, y = rng.normal(size=(6, 3)), rng.normal(size=(3, 4)), rng.integers(0, 4, 6)

    def loss(w, x, y):  # one example: the JAX idiom -log_softmax(logits)[label]
        return -dg.log_softmax(dg.tanh(x @ w), axis=-1)[y]

    looped = np.stack([dg.grad(loss)(w, x[k], y[k]) for k in range(6)])
    per_example = dg.vmap(dg.grad(loss), in_axes=(None, 0, 0))
    np.testing.assert_allclose(per_example(w, x, y), looped, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(dg.compile(per_example)(w, x, y), looped, rtol=1e-13, atol=1e-15)
    # mapped indices into one shared table, and a gather of the batch's own rows
    table = rng.normal(size=(5, 2))
    ids = np.array([4, 0, 0, 3])
    assert np.array_equal(dg.compile(dg.vmap(lambda t, i: t[i], in_axes=(None, 0)))(table, ids), table[ids])
    rows = rng.normal(size=(4, 5))
    assert np.array_equal(dg.compile(dg.vmap(lambda r, i: r[i]))(rows, ids), rows[np.arange(4), ids])


def test_traced_index_limits_are_clear_errors():
    with pytest.raises(IndexError, match=r"getitem: an index known only when the graph runs must be integers.*"
                                         r"test_traced_index\.py"):
        dg.compile(lambda e, m: e[m])(E, np.array([True, False, True, False]))
    with pytest.raises(IndexError, match=r"bool \(True\).*test_traced_index\.py"):
        dg.compile(lambda e, i: e[i, True])(E, np.array([0, 1]))
    with pytest.raises(IndexError, match=r"must be integers.*float64.*test_traced_index\.py"):
        dg.compile(lambda e, i: e[i])(E, np.array([0.0, 1.0]))
    with pytest.raises(IndexError, match="too many indices"):
        dg.compile(lambda e, i: e[:, :, i])(E, np.array([0]))


X3 = np.arange(60.0).reshape(3, 4, 5)
# every kind of index NumPy takes, with traced integer arrays among slices, integers, None and Ellipsis;
# negative entries count from the end (two arrays apart: NumPy puts their axes first)
INDEXES = {
    "x[i]": lambda x, i, j: x[i],
    "x[:, j]": lambda x, i, j: x[:, j],
    "x[i, j]": lambda x, i, j: x[i, j],
    "x[i, i]": lambda x, i, j: x[i, i],
    "x[1:, j]": lambda x, i, j: x[1:, j],
    "x[..., j]": lambda x, i, j: x[..., j],
    "x[:, None, j, 1:3]": lambda x, i, j: x[:, None, j, 1:3],
    "x[i, :, j] (apart)": lambda x, i, j: x[i, :, j],
    "x[-1, j]": lambda x, i, j: x[-1, j],
    "x[i, 2, ::-1]": lambda x, i, j: x[i, 2, ::-1],
    "x[[0, -1, 1, 0], j]": lambda x, i, j: x[[0, -1, 1, 0], j],
    "x[i[:, None], j]": lambda x, i, j: x[i[:, None], j],
}


@pytest.mark.parametrize("name", INDEXES)
def test_every_traced_index_matches_numpy_values_and_gradients(name):
    f = INDEXES[name]
    i, j = np.array([0, -1, 2, 1]), np.array([-1, 3, 0, -4])
    want = f(X3, i, j)
    np.testing.assert_array_equal(dg.compile(f)(X3, i, j), want)
    loss = lambda x, i, j: (f(x, i, j) ** 2).sum()  # noqa: E731
    np.testing.assert_array_equal(dg.compile(dg.grad(loss))(X3, i, j), dg.grad(loss)(X3, i, j))
    with pytest.raises(IndexError, match=r"gather failed in compiled code: index (3|5) is out of bounds"):
        dg.compile(f)(X3, np.array([0, 0, 3, 0]), np.array([5, 0, 0, 0]))


@pytest.mark.parametrize("name", INDEXES)
def test_every_index_mapped_by_vmap_matches_a_loop_eagerly_and_compiled(name):
    f = INDEXES[name]
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(2, 3, 4, 5))
    i, j = np.array([[0, -1, 2, 1], [-3, 1, 1, 0]]), np.array([[-1, 3, 0, -4], [2, -2, 3, 0]])
    loss = lambda x, i, j: (f(x, i, j) ** 2).sum()  # noqa: E731
    for in_axes in [(0, 0, 0), (None, 0, 0), (0, None, 0), (0, 0, None)]:
        # an unmapped x is a Tensor: a NumPy array's own x[i] cannot take vmap's mapped i
        args = [v if a == 0 else v[0] for a, v in zip(in_axes, (xs, i, j))]
        args[0] = dg.tensor(args[0]) if in_axes[0] is None else args[0]
        examples = [[v if a is None else v[k] for a, v in zip(in_axes, args)] for k in range(2)]
        looped = np.stack([np.asarray(f(*e)) for e in examples])
        looped_grad = np.stack([np.asarray(dg.grad(loss)(*e)) for e in examples])
        for transform in (lambda g: g, dg.compile):
            got = transform(dg.vmap(f, in_axes=in_axes))(*args)
            np.testing.assert_array_equal(np.asarray(got), looped, err_msg=str(in_axes))
            got = transform(dg.vmap(dg.grad(loss), in_axes=in_axes))(*args)
            np.testing.assert_array_equal(np.asarray(got), looped_grad, err_msg=str(in_axes))


def test_take_of_the_flattened_array_at_traced_indices():
    # axis=None read the traced indices' values (np.asarray of a placeholder) instead of taking them as an input
    i = np.array([[0, -1], [11, -12]])
    take = lambda e, i: dg.numpy.take(e, i)  # noqa: E731
    np.testing.assert_array_equal(dg.compile(take)(E, i), np.take(E, i))
    np.testing.assert_array_equal(dg.compile(dg.vmap(take, in_axes=(0, None)))(np.stack([E, -E]), i),
                                  np.stack([np.take(E, i), np.take(-E, i)]))
    with pytest.raises(IndexError, match="gather failed in compiled code: index 12 is out of bounds"):
        dg.compile(take)(E, np.array([12]))
