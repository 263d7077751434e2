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
    with pytest.raises(IndexError, match=r"one integer array after full slices.*test_traced_index\.py"):
        dg.compile(lambda e, i: e[i, i])(E, np.array([0, 1]))
    with pytest.raises(IndexError, match="too many indices"):
        dg.compile(lambda e, i: e[:, :, i])(E, np.array([0]))
