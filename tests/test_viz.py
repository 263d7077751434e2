"""Looking at graphs (issue 6): dg.listing, dg.to_dot, dg.draw and the Jupyter pictures.

Eager listings (1), with the backward pass (2), static graphs (3), DOT (4), SVG drawings (5),
PNG/PDF through Graphviz and bad suffixes (6), size: wide, ~300 nodes, a 10,000-node chain (7),
Jupyter (8).
"""

from __future__ import annotations

import inspect
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import dagrad as dg
from dagrad import viz

SVG = "{http://www.w3.org/2000/svg}"


def _here():
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


def _seed_example():
    x1 = dg.tensor(2.0, requires_grad=True)
    x2 = dg.tensor(5.0, requires_grad=True)
    f = dg.log(x1) + x1 * x2 - dg.sin(x2); line = _here()  # noqa: E702
    return x1, x2, f, line


def _mlp_loss(rng=None, hidden=4):
    rng = rng or np.random.default_rng(0)
    x = dg.tensor(rng.normal(size=(8, 3)))
    y = dg.tensor(rng.normal(size=(8, 1)))
    w1 = dg.tensor(rng.normal(size=(3, hidden)), requires_grad=True)
    b1 = dg.tensor(np.zeros(hidden), requires_grad=True)
    w2 = dg.tensor(rng.normal(size=(hidden, 1)), requires_grad=True)
    b2 = dg.tensor(np.zeros(1), requires_grad=True)
    return dg.mean((dg.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2), (w1, b1, w2, b2)


def _node_lines(text):
    return [line for line in text.splitlines() if not line.startswith("#")]


# -- 1. eager listings


def test_the_seed_example_lists_leaves_first_then_each_node_once_in_creation_order():
    x1, x2, f, line = _seed_example()
    where = f"   # test_viz.py:{line}"
    assert dg.listing(f).splitlines() == [
        "%0 = leaf : () float64  requires_grad",
        "%1 = leaf : () float64  requires_grad",
        "%2 = log(%0) : () float64" + where,
        "%3 = multiply(%0, %1) : () float64" + where,
        "%4 = add(%2, %3) : () float64" + where,
        "%5 = sin(%1) : () float64" + where,
        "%6 = subtract(%4, %5) : () float64" + where,
    ]
    assert dg.listing(f, locations=False).splitlines()[2] == "%2 = log(%0) : () float64"


def test_a_shared_node_is_listed_once_and_literals_inline():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = dg.tensor([[1.0, 2.0, 3.0]] * 3)  # a leaf without grad: an input
    a = dg.exp(x)
    b = (a * a + a) @ c + np.ones((3, 3)) * 2.0
    lines = _node_lines(dg.listing(b, locations=False))
    assert lines == [
        "%0 = leaf : (3,) float64  requires_grad",
        "%1 = leaf : (3, 3) float64",
        "%2 = exp(%0) : (3,) float64",
        "%3 = multiply(%2, %2) : (3,) float64",
        "%4 = add(%3, %2) : (3,) float64",
        "%5 = matmul(%4, %1) : (3,) float64",
        "%6 = add(%5, array(3, 3) float64) : (3, 3) float64",
    ]


def test_a_leaf_and_an_unrecorded_result_list_as_one_line():
    x = dg.tensor([1.0, 2.0])
    assert dg.listing(x) == "%0 = leaf : (2,) float64"
    with dg.no_grad():
        y = dg.tensor(1.0, requires_grad=True) * 2.0
    assert dg.listing(y) == "%0 = leaf : () float64"
    assert "no recorded graph" in dg.listing(y, backward=True)


def test_attributes_and_dtypes_are_listed_as_in_static_graphs():
    x = dg.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    y = x.sum(axis=1, keepdims=True)
    assert dg.listing(y, locations=False).splitlines() == [
        "%0 = leaf : (2, 3) float32  requires_grad",
        "%1 = sum(%0, axis=(1,), keepdims=True) : (2, 1) float32",
    ]


def test_listing_a_freed_graph_says_so():
    x = dg.tensor(2.0, requires_grad=True)
    y = dg.exp(x) * 3.0
    y.backward()
    assert "<freed by backward()>" in dg.listing(y)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        dg.listing(y, backward=True)


def test_listing_rejects_other_objects():
    with pytest.raises(TypeError, match="Tensor, a static Graph or a Symbol"):
        dg.listing(np.ones(3))


# -- 2. the backward pass


def test_the_backward_listing_of_the_seed_example():
    x1, x2, f, line = _seed_example()
    text = dg.listing(f, backward=True)
    lines = text.splitlines()
    assert lines[:7] == dg.listing(f).splitlines()
    assert lines[7] == "# backward of %6"
    assert lines[8] == "%7 = full_like(%6, fill_value=1, dtype=None) : () float64   # seed"
    body = lines[9:-2]
    assert [re.match(r"%(\d+) = ", b).group(1) for b in body] == [str(k) for k in range(8, 8 + len(body))]
    assert all(b.endswith(")") and f"# test_viz.py:{line} (backward of " in b for b in body)
    ops_differentiated = {re.search(r"backward of (\w+)", b).group(1) for b in body}
    assert ops_differentiated == {"subtract", "sin", "multiply", "log"}
    assert any("= cos(%1)" in b for b in body) and any("= divide(%7, %0)" in b for b in body)
    assert re.fullmatch(r"# d%6/d%0 = %\d+", lines[-2]) and re.fullmatch(r"# d%6/d%1 = %\d+", lines[-1])


def test_the_backward_listing_leaves_the_users_graph_and_grads_alone():
    x1, x2, f, _ = _seed_example()
    before = dg.listing(f)
    first = dg.listing(f, backward=True)
    assert x1.grad is None and x2.grad is None
    assert dg.listing(f) == before and dg.listing(f, backward=True) == first  # the same every time
    f.backward()  # the graph is whole: a plain backward still works once
    assert x1.grad.item() == pytest.approx(5.5)
    assert x2.grad.item() == pytest.approx(5 * 0 + 2 - np.cos(5.0))
    # .grad that exists stays as it is too
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    x.grad = dg.tensor([7.0, 7.0])
    dg.listing((x * x).sum(), backward=True)
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0])


def test_the_backward_listing_unbroadcasts_and_accumulates():
    loss, (w1, b1, w2, b2) = _mlp_loss()
    text = dg.listing(loss, backward=True, locations=False)
    footer = [line for line in text.splitlines() if line.startswith("# d")]
    assert footer == [f"# d%14/d%{k} = %{n}" for k, n in zip((1, 2, 3, 4), re.findall(r"= %(\d+)$", "\n".join(footer),
                                                                                     re.M))]
    assert "sum(" in text.split("# backward of")[1]  # the bias gradients are reduced over the batch
    assert all(p.grad is None for p in (w1, b1, w2, b2))


# -- 3. static graphs


def _static_graph():
    with dg.Graph() as g:
        x = dg.placeholder((None, 3), name="x")
        w = dg.Variable(np.ones((3, 2)), name="w")
        c = dg.constant(np.ones(2))
        y = dg.tanh(x @ w + c); line = _here()  # noqa: E702
        loss = (y ** 2).sum()
        (gw,) = dg.gradients(loss, [w])
        step = w.assign(w - 0.1 * gw)
    return g, loss, step, line


def test_a_static_listing_is_str_graph_with_locations():
    g, loss, step, line = _static_graph()
    text = dg.listing(g)
    assert [re.sub(r"   # .*$", "", s) for s in text.splitlines()] == str(g).splitlines()
    assert text.splitlines()[3] == f"%3 = matmul(%x, %w) : (None, 2) float64   # test_viz.py:{line}"
    assert f"# test_viz.py:{line} (backward of tanh)" in text
    assert dg.listing(g, backward=True) == text
    assert [re.sub(r"   # .*$", "", s) for s in dg.listing(g, locations=False).splitlines()] == str(g).splitlines()


def test_a_symbol_lists_what_it_depends_on_with_the_graphs_labels():
    g, loss, step, _ = _static_graph()
    lines = str(g).splitlines()
    mine = dg.listing(loss, locations=False).splitlines()
    assert mine == lines[: len(mine)] and mine[-1].startswith("%7 = sum(%6")
    with_backward = dg.listing(loss, backward=True, locations=False).splitlines()
    assert with_backward[: len(mine)] == mine
    assert len(with_backward) > len(mine) and all(s in lines for s in with_backward)
    assert not any("assign" in s for s in with_backward)  # the update is not part of the gradient
    assert dg.listing(step, locations=False).splitlines()[-1].startswith("%")


# -- 4. DOT


def test_dot_has_one_node_per_listing_line_and_edges_in_input_order():
    _, _, f, _ = _seed_example()
    dot = dg.to_dot(f)
    assert dot.startswith("digraph dagrad {\n") and dot.endswith("}\n")
    nodes = re.findall(r"^  n(\d+) \[label=\"([^\"]*)\"", dot, re.M)
    assert [int(i) for i, _ in nodes] == list(range(7))
    assert nodes[3][1] == "%3 multiply(%0, %1)\\n() float64"
    edges = re.findall(r"^  n(\d+) -> n(\d+);$", dot, re.M)
    assert edges == [("0", "2"), ("0", "3"), ("1", "3"), ("2", "4"), ("3", "4"), ("1", "5"), ("4", "6"), ("5", "6")]
    styles = dict(re.findall(r"^  n(\d+) \[.*?shape=(\w+)", dot, re.M))
    assert styles["0"] == "box" and 'fillcolor="#c8e6c9"' in dot.splitlines()[4]  # a parameter
    assert "penwidth=2.5" in [line for line in dot.splitlines() if line.startswith("  n6 [")][0]  # the output


def test_dot_is_the_same_on_every_run():
    assert dg.to_dot(_seed_example()[2], backward=True) == dg.to_dot(_seed_example()[2], backward=True)
    assert dg.to_dot(_mlp_loss()[0]) == dg.to_dot(_mlp_loss()[0])
    assert dg.to_dot(_static_graph()[0]) == dg.to_dot(_static_graph()[0])


def test_dot_styles_inputs_parameters_constants_and_gradients_apart():
    g, *_ = _static_graph()
    dot = dg.to_dot(g)
    line = {m.group(1): m.group(0) for m in re.finditer(r'^  n\d+ \[label="(%\S+)[^\n]*', dot, re.M)}
    assert "shape=ellipse" in line["%x"] and "#bbdefb" in line["%x"]  # an input
    assert "#c8e6c9" in line["%w"]  # a parameter
    assert "shape=note" in line["%2"]  # a constant
    assert "#ffe0b2" in line["%8"]  # the seed of the gradient
    assert "#ffffff" in line["%3"]  # a forward op
    assert '\\"' not in dg.to_dot(dg.tensor(1.0, requires_grad=True) * np.array(2.0))


# -- 5. SVG


def _parse(svg_text):
    root = ET.fromstring(svg_text)
    assert root.tag == f"{SVG}svg"
    nodes = [g for g in root.iter(f"{SVG}g") if (g.get("class") or "").startswith("node")]
    rects = list(root.iter(f"{SVG}rect"))
    edges = [p for p in root.iter(f"{SVG}path") if p.get("class") == "edge"]
    return root, nodes, rects, edges


def test_draw_writes_an_svg_of_an_mlp_loss(tmp_path):
    loss, _ = _mlp_loss()
    for backward in (False, True):
        path = dg.draw(loss, tmp_path / f"mlp{backward}.svg", backward=backward)
        text = dg.listing(loss, backward=backward)
        lines = _node_lines(text)
        root, nodes, rects, edges = _parse(path.read_text())
        assert len(nodes) == len(rects) == len(lines)
        inputs = sum(len(re.findall(r"%\d+", line.split(" = ", 1)[1].split(" : ")[0])) for line in lines)
        assert len(edges) == inputs
        assert [n.find(f"{SVG}title").text for n in nodes] == lines
        kinds = [n.get("class") for n in nodes]
        assert kinds.count("node parameter") == 4 and kinds.count("node input") == 2
        assert ("node backward" in kinds) == backward
        for node, rect in zip(nodes, rects):
            assert float(rect.get("width")) > 0 and node.find(f"{SVG}text") is not None
        assert float(root.get("width")) > 0 and float(root.get("height")) > 0


def test_the_svg_has_inputs_above_their_consumers():
    loss, _ = _mlp_loss()
    root, nodes, rects, edges = _parse(viz.to_svg(loss))
    top = {n.get("id"): float(r.get("y")) for n, r in zip(nodes, rects)}
    assert all(top[e.get("data-from")] < top[e.get("data-to")] for e in edges)


def test_draw_of_a_static_graph_and_its_symbols(tmp_path):
    g, loss, step, _ = _static_graph()
    _, nodes, _, _ = _parse(dg.draw(g, tmp_path / "g.svg").read_text())
    assert len(nodes) == len(g)
    _, nodes, _, _ = _parse(dg.draw(loss, tmp_path / "loss.svg").read_text())
    assert len(nodes) == len(_node_lines(dg.listing(loss)))
    assert dg.draw(g, tmp_path / "g.dot").read_text() == dg.to_dot(g)


def test_text_is_escaped_in_svg():
    with dg.Graph() as g:
        dg.placeholder((2,), name="a<b&c")
    _, nodes, _, _ = _parse(viz.to_svg(g))
    assert nodes[0].find(f"{SVG}text").text.startswith("%a<b&c")


# -- 6. PNG / PDF through Graphviz, and bad suffixes


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's `dot` is not installed (apt-get install graphviz)")
def test_draw_writes_png_and_pdf_through_graphviz(tmp_path):
    loss, _ = _mlp_loss()
    png = dg.draw(loss, tmp_path / "mlp.png", backward=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pdf = dg.draw(loss, tmp_path / "mlp.PDF")
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_png_without_graphviz_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"install Graphviz.*\.svg"):
        dg.draw(_seed_example()[2], tmp_path / "f.png")
    assert not (tmp_path / "f.png").exists()


@pytest.mark.parametrize("name", ["f.jpg", "f", "f.svg.txt"])
def test_an_unknown_suffix_is_a_clear_error(tmp_path, name):
    with pytest.raises(ValueError, match=r"use \.svg"):
        dg.draw(_seed_example()[2], tmp_path / name)


# -- 7. size


def test_a_wide_layer_wraps():
    x = dg.tensor(np.ones(3), requires_grad=True)
    total = dg.stack([dg.exp(x * float(k)) for k in range(300)]).sum()
    root, nodes, rects, _ = _parse(viz.to_svg(total))
    assert len(nodes) == len(_node_lines(dg.listing(total))) > 600
    assert float(root.get("width")) <= viz._MAX_ROW + 2 * viz._MARGIN
    rows = {r.get("y") for n, r in zip(nodes, rects) if "exp(" in n.find(f"{SVG}title").text}
    assert len(rows) > 1


def test_a_graph_of_about_300_nodes_draws(tmp_path):
    rng = np.random.default_rng(1)
    params = [dg.tensor(rng.normal(size=(6, 6)), requires_grad=True) for _ in range(12)]
    h = dg.tensor(rng.normal(size=(4, 6)))
    outs = []
    for k in range(24):
        h = dg.tanh(h @ params[k % 12] + outs[-3] * 0.5) if len(outs) > 3 else dg.relu(h @ params[k % 12])
        outs.append(h)
    loss = sum(dg.mean(o ** 2) for o in outs[::2])
    n = len(_node_lines(dg.listing(loss, backward=True)))
    assert n > 300
    _, nodes, rects, edges = _parse(dg.draw(loss, tmp_path / "big.svg", backward=True).read_text())
    assert len(nodes) == len(rects) == n and edges


def test_a_10000_node_chain_lists_and_draws_without_recursion(tmp_path):
    x = dg.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = dg.sin(y)
    text = dg.listing(y)
    assert len(text.splitlines()) == 10_001 and text.splitlines()[-1].startswith("%10000 = sin(%9999)")
    assert len(_node_lines(dg.listing(y, backward=True))) > 20_000
    assert dg.to_dot(y).count(" -> ") == 10_000
    _, nodes, _, edges = _parse(dg.draw(y, tmp_path / "chain.svg").read_text())
    assert len(nodes) == 10_001 and len(edges) == 10_000
    assert y._repr_svg_() is None  # too big for a notebook: Jupyter shows the text


# -- 8. Jupyter


def test_repr_svg_for_tensors_and_graphs():
    x = dg.tensor(2.0, requires_grad=True)
    assert x._repr_svg_() is None  # a leaf: Jupyter falls back on the text
    assert dg.tensor(1.0)._repr_svg_() is None
    svg = dg.sin(x)._repr_svg_()
    assert len(_parse(svg)[1]) == 2
    g, loss, _, _ = _static_graph()
    assert len(_parse(g._repr_svg_())[1]) == len(g)
    assert len(_parse(loss._repr_svg_())[1]) == len(_node_lines(dg.listing(loss)))
    assert g["x"]._repr_svg_() is None and dg.Graph()._repr_svg_() is None


def test_a_custom_function_lists_and_its_backward_is_attributed_to_it():
    class Cube(dg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x * 2.0).sum()
    text = dg.listing(y, backward=True, locations=True)
    assert "%2 = Cube(%1, ctx=ctx) : (2,) float64   # test_viz.py:" in text
    assert text.count("(backward of Cube)") == 3
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [24.0, 96.0])


# -- 9. names a user controls are printed escaped (issue 24)

# a newline, a carriage return, a terminal escape, Unicode line and paragraph separators, a bidi
# override, a NUL: each would forge a listing line, overwrite one or recolour the terminal
HOSTILE = "w\n%9 = evil() : () float64\r\x1b[31mred\x1b[0m\u2028\u2029\u202e\x00\x85"


def _hostile_function(name):
    def forward(ctx, x):
        return x * 2.0

    def backward(ctx, g):
        return g * 2.0

    return type(name, (dg.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def _hostile_primitive(name):
    def double(x):
        return x * 2.0

    double.__name__ = name
    prim = dg.primitive(double)
    dg.defvjp(prim, lambda ans, x: lambda g: g * 2.0)
    return prim


def _clean(text, lines):
    """No character of `text` is a control, separator or format character but the `lines - 1`
    newlines that separate its lines (each name shows as its escapes)."""
    assert text.count("\n") == lines - 1, text
    assert all(line.isprintable() for line in text.split("\n")), text
    assert "\\x1b[31m" in text and "\\n%9 = evil()" in text


@pytest.mark.parametrize("function", [_hostile_function, _hostile_primitive])
def test_hostile_names_are_escaped_in_listings_and_drawings(function):
    name = HOSTILE.replace("\x00", "")  # Python refuses a NUL in a class name
    op = function(name)
    with dg.Graph() as g:
        p = dg.placeholder((3,), name=HOSTILE)
        v = dg.Variable(np.ones(3), name=HOSTILE)
        y = dg.sum(op(dg.sin(p) * v) if not isinstance(op, type) else op.apply(dg.sin(p) * v))
    _clean(str(g), len(g))
    _clean(dg.listing(y), len(g))
    _clean(dg.listing(y, backward=True), len(_node_lines(dg.listing(y, backward=True))))
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    z = dg.sum(op(x) if not isinstance(op, type) else op.apply(x))
    text = dg.listing(z, backward=True)
    assert all(line.isprintable() for line in text.split("\n")) and "(backward of w\\n%9 = evil()" in text
    for drawn in (g, y, z):
        dot = dg.to_dot(drawn)
        assert all(line.isprintable() for line in dot.split("\n")), dot
        svg = viz.to_svg(drawn)
        assert all(line.isprintable() for line in svg.split("\n")), svg
        _parse(svg)  # well-formed XML: no control character reached it
    assert repr(y).isprintable()


def test_hostile_names_are_escaped_in_errors_and_compiled_source():
    op = _hostile_function(HOSTILE.replace("\x00", ""))
    with pytest.raises(ValueError) as info:
        op.apply(dg.tensor([1.0, 2.0])) @ dg.tensor(np.ones(3))
    assert "matmul" in str(info.value) and str(info.value).isprintable()

    class Broken(dg.Function):
        @staticmethod
        def forward(ctx, x):
            raise ValueError(f"bad input {HOSTILE}")

    Broken.__name__ = HOSTILE.replace("\x00", "")
    with pytest.raises(ValueError) as info:
        Broken.apply(dg.tensor([1.0]))
    assert str(info.value).isprintable() and "\\x1b[31m" in str(info.value)

    def loss(x):
        return dg.sum(dg.sin(op.apply(x)))

    fast = dg.compile(dg.grad(loss))
    np.testing.assert_allclose(fast(np.ones(3)), 2 * np.cos(2.0) * np.ones(3))
    source = fast.source(np.ones(3))
    assert all(line.isprintable() for line in source.split("\n")) and "\\x1b[31m" in source


def test_hostile_names_are_escaped_in_anomaly_and_backward_errors():
    def blow_up(ctx, x):
        return x * np.nan

    op = type(HOSTILE.replace("\x00", ""), (dg.Function,), {"forward": staticmethod(blow_up),
                                                            "backward": staticmethod(lambda ctx, g: g)})
    with pytest.raises(FloatingPointError) as info, dg.detect_anomaly():
        op.apply(dg.tensor([1.0], requires_grad=True))
    assert str(info.value).isprintable() and "\\x1b[31m" in str(info.value)
    prim = _hostile_primitive(HOSTILE)
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = prim(x)
    y.backward(np.ones(2))
    with pytest.raises(RuntimeError, match="a second time") as info:
        y.backward(np.ones(2))
    assert str(info.value).isprintable() and "\\x1b[31m" in str(info.value)


def test_a_hostile_child_module_name_is_escaped_in_the_modules_repr():
    model = dg.nn.Module()
    model.add_module(HOSTILE, dg.nn.Sequential(dg.nn.Linear(2, 2)))
    text = repr(model)
    _clean(text, 5)  # Module(, the child, its Sequential's one layer, two closing lines: no line forged
