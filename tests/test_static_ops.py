"""Static graphs against eager mode, row by row over the op table.

Static gradients must use the same vjp rules as eager mode, so for every differentiable
row of `op_table` a graph built on placeholders must give the row's NumPy values, the
eager `dg.vjp` cotangents, and shapes/dtypes inferred at build time that the values
computed at run time actually have. The same is then checked with the first size of each
input of rank >= 2 unknown (None), which exercises `SymbolicShape` and the ops that take
their sizes from a reference node when the graph runs. A few rows also get second order
(gradients of gradients against the eager Hessian-vector product).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import dagrad as dg
from op_table import CASES, COMPOSITES


def _unique(cases):
    """The rows, each once. Collecting with --doctest-modules imports op_table_linalg.py a second
    time, which appends its rows to CASES again; those copies are the same call from the same
    line of source, unlike genuine repeats of a label (two `flip` rows on different lines)."""
    seen = set()
    rows = []
    for c in cases:
        code = getattr(c.f, "__code__", None)
        key = (str(c), c.shapes, code.co_filename, code.co_firstlineno) if code else (str(c), c.shapes, id(c.f))
        if key not in seen:
            seen.add(key)
            rows.append(c)
    return rows


ROWS = _unique([c for c in CASES + COMPOSITES if c.differentiable])


def _ids(cases):
    """Row labels, with '#2', '#3', ... on repeats so that every row has its own id."""
    seen = Counter()
    ids = []
    for c in cases:
        seen[str(c)] += 1
        ids.append(str(c) if seen[str(c)] == 1 else f"{c}#{seen[str(c)]}")
    return ids


IDS = _ids(ROWS)
BY_ID = dict(zip(IDS, ROWS))

# Rows whose static result is wrong with known sizes: bugs in src, kept as strict xfails so
# that a fix shows up as an XPASS (then delete the entry).
KNOWN_BUGS = {}

# With the first size of each input of rank >= 2 unknown. Two kinds of rows do not pass:
# LIMITS cannot work without that size and fail when the graph is built (skipped, with the
# reason; test_the_limits_fail_at_build_time checks that they fail then, not later);
# UNKNOWN_BUGS should work but do not (strict xfails, described in the reason).
_NONE_ARITH = "shape arithmetic on None: TypeError from int/None arithmetic instead of carrying None through"
_TWO_UNKNOWN = "the result takes unknown sizes from both operands; the reshape back from matrices can infer only one"
UNKNOWN_BUGS = {
    "squeeze((1, 3, 1),)": "by design squeeze() removes the axes known to have size 1: (None, 3, 1) -> (None, 3) "
                           "for every feed; NumPy on this row's size-1 feed also removes the first axis",
    "concatenate((2, 3), (1, 3))": _NONE_ARITH + " (concatenate's shape rule)",
    "dot(2, 3)(4, 3, 2)": _TWO_UNKNOWN,
    "dot(2, 2, 3)(2, 3, 2)": _TWO_UNKNOWN,
    "inner(2, 2, 3)(4, 3)": _TWO_UNKNOWN,
    "pad((2, 3),)": _NONE_ARITH + " (pad)",
    "pad((2, 2),)": _NONE_ARITH + " (pad, mode='edge')",
}
LIMITS = {
    "x[mask]": "a boolean mask must match a known size",
    "x[mask] = v": "a boolean mask must match a known size",
    "squeeze((1, 3, 1),)#2": "squeeze(x, 0) must know that axis 0 has size 1",
    "split((4, 2),)": "split into equal sections needs the size of the split axis",
    "cholesky(1, 1) upper=False": "the row's symmetrisation a + a.T of a (None, 1) matrix is (None, None): "
                                  "a square matrix needs known sizes",
    **{i: "a diagonal over an axis of unknown size needs that size" for i in IDS
       if (i.startswith(("trace", "diagonal", "Tensor.trace")) or i.startswith("diag(3, 4)"))
       and "'axis1': 1, 'axis2': 2" not in i},
    "tril((3, 4),)": "the triangle mask needs the sizes of the last two axes",
    **{i: "qr needs the matrix sizes (a wide matrix is factored differently)" for i in IDS
       if i.startswith(("qr(3, 3)", "qr(4, 3)", "qr(3, 5)", "qr mode"))},
    **{i: "the derivatives of singular vectors need the matrix sizes" for i in IDS
       if i.startswith(("svd(3, 3) ", "svd(4, 3) ", "svd(3, 4) ", "svd U U^T"))},
    "eigh(1, 1) UPLO=L |eigenvectors|": "the row's symmetrisation of a (None, 1) matrix is (None, None): the "
                                        "eigenvectors' derivative needs known sizes",
    "eigh(1, 1) UPLO=L eigenvalues": "the row's symmetrisation of a (None, 1) matrix is (None, None): the "
                                     "triangle eigh reads (its derivative's support) needs known sizes",
    **{i: "the gradient of convolve's 'same' and 'valid' modes pads to the 'full' size: it needs the sizes"
       for i in IDS if i.startswith(("convolve(3, 4)", "convolve(2, 3)")) and not i.endswith("'full'")},
    **{i: "the gradient of an FFT that crops or pads an axis (s) crops or pads back to that axis' size: it needs it"
       for i in ("fftn s=(3, 2)", "rfft2 s=(3, 3) ortho")},
}


def _declared(shape, unknown):
    """The placeholder shape: the row's shape, with the first size unknown when asked (rank >= 2)."""
    return (None, *shape[1:]) if unknown and len(shape) >= 2 else shape


def _tolerances(c):
    """Gradients agree to rounding; a row that casts (astype to float32) has its own tolerance:
    eager rounds the cotangent to the output's float32, the graph keeps it float64 here."""
    return c.tol or {"rtol": 1e-9, "atol": 1e-11}


def _check_static_row(c, unknown):
    xs = c.inputs(seed=11)
    expected = c.ref(*xs)
    u = np.random.default_rng(12).standard_normal(np.shape(expected))
    graph = dg.Graph()
    with graph:
        ps = [dg.placeholder(_declared(x.shape, unknown), x.dtype, name=f"x{i}") for i, x in enumerate(xs)]
        out = c.f(*ps)
        loss = dg.sum(out * u)
        grads = dg.gradients(loss, ps)
    feed = dict(zip(ps, xs))
    assert isinstance(out, dg.Tensor) and out.graph is graph
    sess = dg.Session(graph)

    got, got_grads = sess.run([out, grads], feed)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    _, f_vjp = dg.vjp(c.f, *xs)
    for p, g, e in zip(ps, got_grads, f_vjp(u)):
        assert np.shape(g) == np.shape(e), f"gradient of {p.name}: shape {np.shape(g)}, eager {np.shape(e)}"
        np.testing.assert_allclose(g, e, **_tolerances(c))

    # every node's build-time shape and dtype hold for the value it has at run time
    nodes = [n for n in graph.nodes if n.kind != "group"]
    for node, value in zip(nodes, sess.run(nodes, feed)):
        value = np.asarray(value)
        declared = tuple(node._shape)
        assert len(declared) == value.ndim and all(d is None or d == a for d, a in zip(declared, value.shape)), (
            f"{node!r}: inferred {declared}, computed {value.shape}"
        )
        assert node.dtype == value.dtype, f"{node!r}: inferred {node.dtype}, computed {value.dtype}"


def _marked(ids, reasons, kind):
    params = []
    for i in ids:
        marks = ()
        if i in reasons:
            marks = pytest.mark.skip(reason=reasons[i]) if kind == "skip" else pytest.mark.xfail(
                reason=reasons[i], strict=True)
        params.append(pytest.param(BY_ID[i], marks=marks, id=i))
    return params


@pytest.mark.parametrize("c", _marked(IDS, KNOWN_BUGS, "xfail"))
def test_static_matches_eager_with_known_sizes(c):
    _check_static_row(c, unknown=False)


def _unknown_params():
    params = []
    for i in IDS:
        if not any(len(s) >= 2 for s in BY_ID[i].shapes):
            continue  # nothing to make unknown: the known-size test covers the row
        if i in LIMITS:
            params.append(pytest.param(BY_ID[i], marks=pytest.mark.skip(reason=LIMITS[i]), id=i))
        elif i in KNOWN_BUGS or i in UNKNOWN_BUGS:
            reason = KNOWN_BUGS.get(i) or UNKNOWN_BUGS[i]
            params.append(pytest.param(BY_ID[i], marks=pytest.mark.xfail(reason=reason, strict=True), id=i))
        else:
            params.append(pytest.param(BY_ID[i], id=i))
    return params


@pytest.mark.parametrize("c", _unknown_params())
def test_static_matches_eager_with_unknown_first_size(c):
    _check_static_row(c, unknown=True)


def test_the_limits_fail_at_build_time():
    # a row that cannot work with unknown sizes must fail while the graph (or its gradient) is
    # built, never later with a wrong value
    for i in LIMITS:
        c = BY_ID[i]
        with dg.Graph():
            ps = [dg.placeholder(_declared(s, True)) for s in c.shapes]
            with pytest.raises((ValueError, IndexError, TypeError)):
                dg.gradients(dg.sum(c.f(*ps)), ps)


def test_the_lists_name_real_rows():
    # a renamed or removed row must not leave a stale entry behind (it would silently test nothing)
    for table in (KNOWN_BUGS, UNKNOWN_BUGS, LIMITS):
        stale = [i for i in table if i not in BY_ID]
        assert not stale, stale


# -- second order: gradients of (gradients . v) against the eager Hessian-vector product
SECOND_ORDER = {
    "tanh((2, 3),)": None,
    "a @ b": None,
    "matmul((5, 2, 3), (3, 4))": None,
    "sum(axis=(0, 2), keepdims=True)": None,
    "softmax((3, 2),)": None,
    "log_softmax((2, 3),)": None,
    "max(axis=0, keepdims=False)": None,
    "var((3, 4),)": None,
    "inv(3, 3)": None,
    "power((2, 3), (3,))": None,
}


def _second_order_params():
    params = []
    for unknown in (False, True):
        for i, reason in SECOND_ORDER.items():
            reason = reason or None
            marks = pytest.mark.xfail(reason=reason, strict=True) if reason else ()
            params.append(pytest.param(i, unknown, marks=marks, id=f"{i}-{'unknown' if unknown else 'known'}"))
    return params


@pytest.mark.parametrize(("row_id", "unknown"), _second_order_params())
def test_gradients_of_gradients_match_eager_hvp(row_id, unknown):
    c = BY_ID[row_id]
    xs = c.inputs(seed=21)
    rng = np.random.default_rng(22)
    u = rng.standard_normal(np.shape(c.ref(*xs)))
    vs = [rng.standard_normal(x.shape) for x in xs]

    def scalar(*args):
        return dg.sum(c.f(*args) * u)

    graph = dg.Graph()
    with graph:
        ps = [dg.placeholder(_declared(x.shape, unknown), name=f"x{i}") for i, x in enumerate(xs)]
        grads = dg.gradients(scalar(*ps), ps)
        directional = sum(dg.sum(g * v) for g, v in zip(grads, vs))
        hvps = dg.gradients(directional, ps)
    got = dg.Session(graph).run(hvps, dict(zip(ps, xs)))
    for i, g in enumerate(got):
        expected = dg.jvp(lambda *a, i=i: dg.grad(scalar, argnums=i)(*a), tuple(xs), tuple(vs))[1]
        np.testing.assert_allclose(g, expected, rtol=1e-8, atol=1e-10)
