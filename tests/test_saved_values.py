"""What a recorded node saves for its gradient (issue 24, items 4, 8 and 9).

- `Op.saves` declares what each vjp rule reads; the declaration is checked here against every op-table
  row, by running each rule with what it does not declare replaced by NaN (or other values): the
  cotangent must not change.
- A NumPy operand or index the caller changes in place after the forward pass does not change the
  gradient: a recorded node keeps copies of the caller's arrays that its rule reads (PyTorch converts
  them into tensors of its own), and only a recorded node pays for them.
- The version check covers only what a rule saved (as PyTorch): a write to a value an op merely read
  (`add`'s inputs) is fine, and the gradient then flows where it did when the op was recorded.
- `backward()` of a complex output without `grad=` raises (PyTorch's "grad can be implicitly created
  only for real scalar outputs"), and the losses PyTorch defines on real numbers refuse complex input.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import dagrad as dg
import dagrad.nn.functional as F
import dagrad.numpy as dnp
from dagrad._core.op import REGISTRY, defop
from dagrad._core.pytree import tree_flatten
from dagrad._core.tensor import Tensor, _leaf
from op_table import CASES, COMPOSITES

torch = pytest.importorskip("torch")


# -- the declarations, checked: each rule run with what it does not declare replaced
def _poisoned(v):
    """A value of v's type, shape and dtype whose values differ from v's: NaN for floating point."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float, complex)):
        return v + 7 if isinstance(v, int) else type(v)(float("nan"))
    arr = np.asarray(v)
    kind = arr.dtype.kind
    if kind in "fc":
        p = np.full_like(arr, np.nan)
    elif kind == "b":
        p = ~arr
    elif kind in "iu":
        p = arr + 7
    else:
        return v
    return p if isinstance(v, np.ndarray) else p[()]


def _nodes(outputs):
    """Every recorded node that `outputs` depend on."""
    seen, stack = {}, [o for o in outputs if isinstance(o, Tensor)]
    while stack:
        node = stack.pop()
        if node in seen or node.op is None or node.inputs is None:
            continue
        seen[node] = True
        stack.extend(a for a in node.inputs if isinstance(a, Tensor))
    return list(seen)


def _cotangent(out, rng):
    out = np.asarray(out)
    g = rng.uniform(0.5, 1.5, out.shape)
    if out.dtype.kind == "c":
        g = g + 1j * rng.uniform(0.5, 1.5, out.shape)
    return g.astype(out.dtype)[()] if out.ndim == 0 else g.astype(out.dtype)


def _rules_to_check(op, n):
    """(index, rule, what it reads) for each rule of `op`; a joint rule appears once with index None."""
    if type(op.vjp) is not tuple:
        return [(None, op.vjp, frozenset(op.saves))]
    return [(i, rule, op.reads[i] if op.reads is not None else frozenset(op.saves))
            for i, rule in enumerate(op.vjp[:n]) if rule is not None]


def _run(rule, index, g, out, values, attrs, tensors):
    """The rule's cotangent(s) as NumPy arrays; `tensors`: the values as Tensors (a graph-mode sweep)."""
    if tensors:
        g, out = _leaf(np.asarray(g), False), _leaf(np.asarray(out), False)
        values = [_leaf(np.asarray(v), False) if t else v for v, t in zip(values, tensors)]
    result = rule(g, out, *values, **attrs)
    if index is None:
        return [None if r is None else np.asarray(r) for r in result]
    return [np.asarray(result)]


def _check_node(node, rng, graph_mode):
    op = node.op
    values = [a._value if isinstance(a, Tensor) else a for a in node.inputs]
    boxed = [isinstance(a, Tensor) for a in node.inputs] if graph_mode else None
    out, attrs = node._value, node.attrs or {}
    g = _cotangent(out, rng)
    for index, rule, reads in _rules_to_check(op, len(values)):
        if index is not None and np.asarray(values[index]).dtype.kind not in "fc":
            continue
        with np.errstate(all="ignore"):
            expected = _run(rule, index, g, out, values, attrs, boxed)
            hidden = [v if j in reads else _poisoned(v) for j, v in enumerate(values)]
            try:
                got = _run(rule, index, g, out if "out" in reads else _poisoned(out), hidden, attrs, boxed)
            except Exception as err:  # reading a changed index may raise: the rule read it
                pytest.fail(f"{op.name}'s rule {index} reads more than it declares ({sorted(map(str, reads))}): {err}")
        for e, r in zip(expected, got):
            if e is not None:
                np.testing.assert_array_equal(
                    r, e, err_msg=f"{op.name}'s rule {index} reads more than it declares ({sorted(map(str, reads))})")


def _row_nodes(case):
    """The nodes a differentiable op-table row records, forward and backward (index_add, scatter_add, ...
    appear in the backward pass)."""
    if not case.differentiable:
        return []
    rng = np.random.default_rng(0)
    xs = [dg.tensor(v, requires_grad=True) for v in case.inputs()]
    outputs = [o for o in tree_flatten(case.f(*xs))[0] if isinstance(o, Tensor) and o.requires_grad]
    if not outputs:
        return []
    total = sum(dg.sum(dg.real(o * _cotangent(o.numpy(), rng))) for o in outputs)
    grads = dg.autograd.grad(total, xs, create_graph=True, allow_unused=True)
    return [node for node in _nodes(outputs + [g for g in grads if g is not None])
            if node.op.saves is not None and node.op.differentiable]


@pytest.mark.parametrize("case", CASES + COMPOSITES, ids=str)
def test_every_rule_reads_only_what_its_op_declares_it_saves(case):
    rng = np.random.default_rng(1)
    for node in _row_nodes(case):
        for graph_mode in (False, True):
            _check_node(node, rng, graph_mode)


def test_every_declaration_is_checked_by_some_row():
    seen = {node.op.name for case in CASES + COMPOSITES for node in _row_nodes(case)}
    assert [name for name, op in REGISTRY.items() if op.saves is not None and name not in seen] == []


def test_a_rule_that_reads_what_it_does_not_declare_is_caught():
    op = defop("test_saves_lies", lambda x, y: x * y, vjp=(lambda g, out, x, y: g * y, lambda g, out, x, y: g * x),
               jvp=(lambda t, out, x, y: t * y, lambda t, out, x, y: t * x), saves=())
    try:
        x = dg.tensor([1.0, 2.0], requires_grad=True)
        node = op.function(x, np.array([3.0, 4.0]))
        with pytest.raises(AssertionError, match="reads more than it declares"):
            _check_node(node, np.random.default_rng(0), False)
    finally:
        del REGISTRY["test_saves_lies"]


@pytest.mark.parametrize("saves", [[0], (-1,), (0.5,), ((0,),)])
def test_a_malformed_declaration_is_refused(saves):
    with pytest.raises(TypeError, match="saves must be|saves holds"):
        defop("test_bad_saves", lambda x, y: x + y, vjp=(None, None), jvp=(None, None), saves=saves)
    assert "test_bad_saves" not in REGISTRY


# -- item 8: the caller's arrays, changed after the forward pass
_CONSTANT = [  # (name, dagrad's, PyTorch's)
    ("t * a", lambda t, a: t * a, lambda t, a: t * a),
    ("a * t", lambda t, a: a * t, lambda t, a: a * t),
    ("t / a", lambda t, a: t / a, lambda t, a: t / a),
    ("t ** a", lambda t, a: t ** a, lambda t, a: t ** a),
    ("maximum", lambda t, a: dg.maximum(t, a), lambda t, a: torch.maximum(t, a)),
    ("arctan2", lambda t, a: dg.arctan2(t, a), lambda t, a: torch.atan2(t, a)),
    ("clip", lambda t, a: dg.clip(t, a, 10.0), lambda t, a: torch.clamp(t, a, torch.tensor(10.0).double())),
    ("matmul", lambda t, a: t @ a, lambda t, a: t @ a),
    ("einsum", lambda t, a: dg.einsum("i,i->i", t, a), lambda t, a: torch.einsum("i,i->i", t, a)),
]


@pytest.mark.parametrize("name,f,torch_f", _CONSTANT, ids=[n for n, _, _ in _CONSTANT])
def test_a_numpy_operand_changed_after_the_forward_pass_does_not_change_the_gradient(name, f, torch_f):
    a = np.array([1.5, 2.0])
    t = dg.tensor([3.0, 4.0], requires_grad=True)
    u = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    torch_f(u, torch.tensor(a)).sum().backward()
    y = f(t, a).sum()
    a[:] = [5.0, 0.25]
    y.backward()
    np.testing.assert_allclose(t.grad.numpy(), u.grad.numpy())


def test_a_mask_changed_after_the_forward_pass():
    mask = np.array([True, False])
    t = dg.tensor([3.0, 4.0], requires_grad=True)
    y = dg.where(mask, t, 0.0).sum()
    mask[:] = False
    y.backward()
    assert t.grad.tolist() == [1.0, 0.0]


def test_the_issues_examples():
    a = np.array([1.0, 2.0])
    t = dg.tensor([3.0, 4.0], requires_grad=True)
    y = (t * a).sum()
    a[:] = 0
    y.backward()
    assert t.grad.tolist() == [1.0, 2.0]
    idx = np.array([0, 1])
    t = dg.tensor([3.0, 4.0, 5.0], requires_grad=True)
    y = t[idx].sum()
    idx[:] = 2
    y.backward()
    assert t.grad.tolist() == [1.0, 1.0, 0.0]
    # as PyTorch decides: dg.tensor copies (torch.tensor), from_numpy and as_tensor share the memory (a write
    # through the caller's own array is not seen by dagrad, as in PyTorch)
    a = np.array([1.0, 2.0])
    copied, shared, also_shared = dg.tensor(a), dg.from_numpy(a), dg.as_tensor(a)
    a[0] = 7.0
    assert copied.tolist() == [1.0, 2.0] and shared.tolist() == [7.0, 2.0] and also_shared.tolist() == [7.0, 2.0]


def test_a_list_operand_changed_after_the_forward_pass():
    lst = [1.0, 2.0]
    t = dg.tensor([3.0, 4.0], requires_grad=True)
    y = (t * lst).sum()
    lst[0] = 0.0
    y.backward()
    assert t.grad.tolist() == [1.0, 2.0]


def test_an_index_changed_after_the_forward_pass_does_not_change_the_gradient():
    x0 = np.arange(6.0).reshape(3, 2)
    for name, f, change in [
        ("t[idx, 0]", lambda t, i: t[i, 0], lambda i: i.fill(2)),
        ("t[mask]", lambda t, i: t[i], lambda i: i.fill(True)),
        ("dg.setitem", lambda t, i: dg.setitem(t, (i, 0), 0.0), lambda i: i.fill(2)),
        ("take_along_axis", lambda t, i: dnp.take_along_axis(t, i, axis=0), lambda i: i.fill(2)),
    ]:
        index = {"t[mask]": np.array([True, False, True]),
                 "take_along_axis": np.array([[0, 1], [1, 0]])}.get(name, np.array([0, 1]))
        t = dg.tensor(x0, requires_grad=True)
        w = np.linspace(1.0, 2.0, f(x0, index).size).reshape(np.shape(f(x0, index)))
        y = (f(t, index) * w).sum()
        kept = index.copy()
        reference = dg.grad(lambda v: (f(v, kept) * w).sum())(x0)
        change(index)
        y.backward()
        np.testing.assert_array_equal(t.grad.numpy(), reference, err_msg=name)


def test_labels_changed_after_the_forward_pass_do_not_change_the_loss_gradient():
    z0 = np.random.default_rng(1).normal(size=(4, 3))
    labels = np.array([0, 2, 1, 1])
    reference = dg.grad(lambda z: F.cross_entropy(z, labels.copy()))(z0)
    z = dg.tensor(z0, requires_grad=True)
    loss = F.cross_entropy(z, labels)
    labels[:] = 0
    loss.backward()
    np.testing.assert_array_equal(z.grad.numpy(), reference)


def test_under_transforms_too():
    # a function that changes its operand after using it: every path reads the value at the use
    def f(w, a):
        y = w * a
        a[:] = 0.0
        return y.sum()

    expected = np.array([1.0, 2.0])
    assert dg.grad(f)(np.array([3.0, 4.0]), np.array([1.0, 2.0])).tolist() == expected.tolist()
    a = np.array([1.0, 2.0])
    out, pullback = dg.vjp(lambda w: w * a, np.array([3.0, 4.0]))
    a[:] = 0.0
    assert pullback(np.ones(2))[0].tolist() == expected.tolist()
    t = dg.tensor([3.0, 4.0], requires_grad=True)
    f(t, np.array([1.0, 2.0])).backward()
    assert t.grad.tolist() == expected.tolist()


def test_control_flow_closing_over_an_array_changed_before_backward():
    # the loop's and the branch's bodies read `a` as a constant: their nodes (undeclared: everything
    # saved) keep copies of it
    programs = {
        "fori_loop": (lambda a: lambda c: dg.fori_loop(0, 2, lambda i, v: v * a, c), lambda a: a * a),
        "scan": (lambda a: lambda c: dg.scan(lambda v, x: (v * a, None), c, None, length=2)[0], lambda a: a * a),
        "while_loop": (lambda a: lambda c: dg.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, s[1] * a),
                                                         (0, c))[1], lambda a: a * a),
        "cond": (lambda a: lambda c: dg.cond(True, lambda v: v * a, lambda v: v, c), lambda a: a),
    }
    for name, (program, gradient) in programs.items():
        a = np.array([1.5, 2.0])
        expected = gradient(a.copy())
        t = dg.tensor([3.0, 4.0], requires_grad=True)
        y = program(a)(t).sum()
        a[:] = 0.0
        y.backward()
        np.testing.assert_array_equal(t.grad.numpy(), expected, err_msg=name)


def _peak(f):
    f()  # warm up: caches, the first node's allocations
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_only_a_recorded_node_whose_rule_reads_an_array_copies_it():
    n = 1_000_000
    a = np.ones(n)
    size = a.nbytes
    plain = dg.tensor(np.ones(n))
    grad = dg.tensor(np.ones(n), requires_grad=True)
    assert _peak(lambda: plain * a) < 1.5 * size  # the result only: nothing is recorded
    with dg.no_grad():
        assert _peak(lambda: grad * a) < 1.5 * size
    assert _peak(lambda: grad + a) < 1.5 * size  # add's rule reads neither operand
    assert _peak(lambda: grad * a) > 1.9 * size  # the result and a's copy


# -- item 9: only what a rule saved is checked
def _torch_grad(program, x0):
    x = torch.tensor(x0, requires_grad=True)
    program(x, torch).backward()
    return x.grad.numpy()


def _dg_grad(program, x0):
    x = dg.tensor(x0, requires_grad=True)
    program(x, dg).backward()
    return x.grad.numpy()


def _written_after_add(x, lib):
    h = x * 2
    y = (h + 1).sum()
    h += 1
    return y


def _rebased_by_a_product(x, lib):
    h = x * 2
    y = (h + 1).sum()
    h *= 3  # h is now the node of the product; y's gradient still flows through h's old node
    return y


def _read_by_sum_and_reshape(x, lib):
    h = x * 2
    y = h.sum() + h.reshape(2, 1).sum() + h[1] + h.reshape(1, 2).T.sum() + lib.exp(h).sum()
    h -= 1
    return y


def _multiplied_by_a_constant(x, lib):
    h = x * 2
    y = (h * 3).sum()  # the constant's rule would read h, but the constant has no gradient
    h += 1
    return y


def _written_through_a_view(x, lib):
    h = x * 2
    y = (h + 1).sum()
    v = h[1:]
    v[0] = 5.0
    return y


def _constant_that_becomes_a_node(x, lib):
    c = lib.tensor([5.0, 6.0], dtype=x.dtype)
    y = (x + c).sum()
    c += x * 4  # c was a constant when y was recorded: no gradient through it
    return y


@pytest.mark.parametrize("program", [_written_after_add, _rebased_by_a_product, _read_by_sum_and_reshape,
                                     _multiplied_by_a_constant, _written_through_a_view,
                                     _constant_that_becomes_a_node], ids=lambda p: p.__name__)
def test_a_write_to_a_value_no_rule_saved_differentiates_as_pytorch(program):
    x0 = np.array([1.0, 2.0])
    np.testing.assert_array_equal(_dg_grad(program, x0), _torch_grad(program, x0))


def test_a_write_to_a_saved_value_still_raises():
    for program in [lambda h: (h * h).sum(), lambda h: dg.sin(h).sum(), lambda h: (h * h)[0] + h.sum()]:
        x = dg.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        y = program(h)
        h += 1
        with pytest.raises(RuntimeError, match="modified in place"):
            y.backward()
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    e = dg.exp(x)  # exp saves its output
    y = e.sum()
    e.value[0] = 0.0
    with pytest.raises(RuntimeError, match="its output.*modified in place"):
        y.backward()


def test_a_node_whose_output_is_not_saved_may_have_it_written():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    h = x + 1  # add does not read its output; sum does not read its input
    y = h.sum()
    h.value[...] = 0.0
    y.backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_a_dask_value_rebound_in_place_is_differentiated_as_before_the_write():
    da = pytest.importorskip("dask.array")
    x = dg.tensor(da.from_array(np.array([1.0, 2.0])), requires_grad=True)
    h = x * 2
    y = (h + 1).sum()
    h *= 3  # rebinds h's Dask array: no write the version counter sees
    y.backward()
    assert x.grad.numpy().tolist() == _torch_grad(_rebased_by_a_product, np.array([1.0, 2.0])).tolist()


def test_a_write_whose_earlier_node_was_freed_raises():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    y = (h + 1).sum()
    h *= 3
    h.sum().backward()  # frees the product's graph, and with it what h was before it
    with pytest.raises(RuntimeError, match="changed in place|a second time"):
        y.backward()


# -- item 4: complex outputs and losses
def test_backward_of_a_complex_output_needs_grad():
    t = dg.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match="real output.*complex128"):
        (t * 1j).sum().backward()
    with pytest.raises(TypeError, match="real output"):
        dg.autograd.grad((t * 1j).sum(), t)
    with pytest.raises(TypeError, match="real output"):
        dg.autograd.backward([(t * 1j).sum()])
    assert t.grad is None
    (t * (1 + 2j)).sum().backward(grad=np.array(1 - 1j))  # a vector-Jacobian product: Re((1 - i)(1 + 2i)) = 3
    assert t.grad.tolist() == [3.0, 3.0, 3.0]
    (t * 2j).sum().real.backward()
    assert t.grad.tolist() == [3.0, 3.0, 3.0]  # the real part's gradient is 0


def test_backward_of_a_complex_output_is_refused_in_a_compiled_step_too():
    w = dg.tensor(np.ones(3), requires_grad=True)

    def step(x):
        loss = (w * x * 1j).sum()
        loss.backward()
        return loss

    with pytest.raises(TypeError, match="real output"):
        dg.compile(step)(np.ones(3))


_Z = np.array([[0.1 + 1j, 0.2, 0.3], [0.4, 0.5 - 1j, 0.6]])
_LOSSES = {
    "cross_entropy": lambda z: F.cross_entropy(z, np.array([0, 2])),
    "cross_entropy probabilities": lambda z: F.cross_entropy(z, np.full((2, 3), 1 / 3)),
    "nll_loss": lambda z: F.nll_loss(z, np.array([0, 2])),
    "binary_cross_entropy": lambda z: F.binary_cross_entropy(z, np.full((2, 3), 0.5)),
    "binary_cross_entropy_with_logits": lambda z: F.binary_cross_entropy_with_logits(z, np.full((2, 3), 0.5)),
    "mse_loss": lambda z: F.mse_loss(z, np.zeros((2, 3))),
    "smooth_l1_loss": lambda z: F.smooth_l1_loss(z, np.zeros((2, 3))),
    "huber_loss": lambda z: F.huber_loss(z, np.zeros((2, 3))),
    "kl_div": lambda z: F.kl_div(z, np.full((2, 3), 1 / 3), reduction="sum"),
    "CrossEntropyLoss": lambda z: dg.nn.CrossEntropyLoss()(z, np.array([0, 2])),
}


@pytest.mark.parametrize("name", list(_LOSSES))
def test_losses_defined_on_real_numbers_refuse_complex_input(name):
    z = dg.tensor(_Z, requires_grad=True)
    function = "cross_entropy" if name == "CrossEntropyLoss" else name.split()[0]
    with pytest.raises(TypeError, match=rf"^{function}: is defined for real numbers only.*complex128"):
        _LOSSES[name](z)


def test_a_complex_target_or_weight_is_refused_too_and_l1_loss_stays_real_as_pytorch():
    z = dg.tensor(_Z.real, requires_grad=True)
    with pytest.raises(TypeError, match="complex target"):
        F.mse_loss(z, np.zeros((2, 3)) * 1j)
    with pytest.raises(TypeError, match="complex weight"):
        F.cross_entropy(z, np.array([0, 2]), weight=np.ones(3) * 1j)
    got = F.l1_loss(dg.tensor(_Z), np.zeros((2, 3)))
    expected = torch.nn.functional.l1_loss(torch.tensor(_Z), torch.zeros(2, 3, dtype=torch.complex128))
    assert got.dtype == np.float64 and np.isclose(got.item(), expected.item())
