"""Reverse sweep and eager `backward` (the transforms built on them are in dagrad/transforms.py).

The sweep visits one level's nodes in decreasing creation order (a heap keyed by sequence number):
a topological order of any graph built by running code, needing no recursion or separate sort, and
never depending on ids or sets.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush
from sys import getrefcount
from sys import modules as _sys_modules

import numpy as np

from .backends import (
    array_type_name,
    as_dtype,
    copy_as,
    has_unknown_size,
    is_cupy,
    is_dask,
    is_foreign,
    mixing_error,
    ones,
    unknown_size_error,
)
from .errors import _provenance, location, printable, user_error, user_line
from .op import anomaly_checks
from .shapes import dtype_of as _dtype
from .shapes import shape_of as _shape
from .shapes import summed_axes
from .structural import broadcast_to, real, reshape, sum_to
from .structural import sum as sum_
from .tensor import Tensor, _leaf, enable_grad, is_symbolic, storage_write, write_clock


def _unbroadcast(ct, shape, op=None):
    """Sums a cotangent of a broadcast result back down to the input's `shape` (`op`: whose rule gave it)."""
    if None in shape:  # a static graph with unknown sizes: which axes to sum is known only when it runs
        return sum_to(ct, shape.ref)
    # only a Dask array (or, under create_graph, a Tensor of one) has unknown (nan) sizes
    if type(ct) is not np.ndarray and is_dask(ct._value if isinstance(ct, Tensor) else ct) and (
            has_unknown_size(shape) or has_unknown_size(_shape(ct))):
        return _unbroadcast_unknown(ct, shape, op)
    axes = summed_axes(_shape(ct), shape)
    if axes is None:
        return broadcast_to(ct, shape)
    if axes:
        ct = sum_(ct, axis=axes, keepdims=True)
    if _shape(ct) != shape:
        ct = reshape(ct, shape)
    return ct


def _unbroadcast_unknown(ct, shape, op):
    """_unbroadcast of a Dask cotangent where sizes are unknown (nan, after x[mask]): its leading axes and the
    axes where the input has size 1 are summed; an unknown size must meet an unknown size on the same axis (x[mask]
    and what is computed from it elementwise: Dask pairs their blocks as equal sizes). Anything else (an unknown
    size against a known one) cannot be told apart from a broadcast, and is refused."""
    ct_shape = _shape(ct)
    lead = len(ct_shape) - len(shape)
    axes = []
    for a, (m, n) in enumerate(zip(ct_shape[max(lead, 0):], shape)):
        if n == 1 and m != 1:
            axes.append(lead + a)
        elif m != n and not (m != m and n != n):  # (nan != nan: both unknown is fine)
            lead = -1
    if lead < 0:
        raise unknown_size_error(f"backward of {op.name}" if op is not None else "backward",
                                 shape if has_unknown_size(shape) else ct_shape)
    if axes:
        ct = sum_(ct, axis=tuple(axes), keepdims=True)
    return sum_(ct, axis=tuple(range(lead))) if lead else ct


def _freed_error(node):
    made = location(node)
    return RuntimeError(printable(
        f"backward through {node.op.name}{f' (made at {made})' if made else ''} a second time: the values it "
        f"saved were freed by the previous backward(); pass retain_graph=True to that backward() to keep them "
        f"(at {user_line()})"
    ))


def reverse_sweep(roots, cotangents, level, graph_mode=False, free=False, targets=None, within=None):
    """Propagates `cotangents` from `roots` through the graph of `level`: {node: cotangent} for the
    requires-grad leaves and the `targets` reached, in the order reached; `within` limits the sweep
    to those nodes. In graph mode the rules run on the Tensors (recording the backward pass), else on
    the values one level down. `free` drops each visited node's inputs (as PyTorch frees saved tensors)."""
    symbolic = is_symbolic(roots[0]) if len(roots) == 1 else any(is_symbolic(root) for root in roots)
    if symbolic:
        previous = _provenance.node, _provenance.origin
        try:
            return _sweep(roots, cotangents, level, graph_mode, free, targets, within, symbolic)
        finally:
            _provenance.note(*previous)
    return _sweep(roots, cotangents, level, graph_mode, free, targets, within, symbolic)


def _differentiate(node):
    """Notes, for the gradient nodes about to be built, the forward node they differentiate (as data)
    and 'file.py:12 (backward of exp)', where the user's code built it (their line)."""
    value = node
    while isinstance(value, Tensor) and not value._symbolic:
        value = value._value
    if not isinstance(value, Tensor):
        _provenance.note(None, None)
    else:
        _provenance.note(value, f"{value.where} (backward of {node.op.name})")


def _modified_error(node, changed, version, replay=False):
    """The error for a node whose saved input (or own output) `changed` was written in place after
    the node was recorded: the rule would silently use the new values. `replay`: a checkpoint's
    recomputation would run the node on other values than the forward pass did."""
    what = "its output" if changed is node else f"an input of shape {tuple(_shape(changed._value))}"
    made = location(changed) if changed is not node else None
    at = "an unknown line" if version is None else f"{version.where()} (version {version.count})"
    name = node.op.name  # (may be a user's string, a dg.Function subclass's name: the text is made printable)
    if replay:
        return RuntimeError(printable(
            f"checkpoint: {what}{f' (computed at {made})' if made else ''} of {name} (at "
            f"{location(node) or 'an unknown line'}) was modified in place at {at} without being recorded (under "
            f"no_grad, or through .value or .data) after {name} {'computed' if changed is node else 'read'} it. The "
            f"backward pass recomputes the checkpointed function's values from its inputs, which cannot repeat that "
            f"change, so its gradient would use other values. Make the change outside no_grad (then it is recorded "
            f"and recomputed), make it on a copy, or leave it out of the checkpointed function (at {user_line()})"))
    return RuntimeError(printable(
        f"backward: {what}{f' (computed at {made})' if made else ''} that {name} saved for its gradient "
        f"(at {location(node) or 'an unknown line'}) was modified in place (or taken for writing through .value) at "
        f"{at}, after {name} used it; its gradient would use the new values. Change values before the forward "
        f"pass, read them with .numpy() (read-only), or write to a copy; PyTorch raises too (at {user_line()})"))


def _check_written(node, a, seq, replay=False):
    """Raises if `a`'s values (or the memory they live in), which `node` saved, were written in place
    after `node` was recorded (at `seq`)."""
    version = getattr(a, "_write", None)
    if version is None or version.seq <= seq:
        version = storage_write(a._value)
    if version is not None and version.seq > seq:
        raise _modified_error(node, a, version, replay)


def replay_inputs(node, level):
    """`node`'s inputs as it recorded them, for running it again (a checkpoint's tape replays its nodes,
    dagrad/remat.py). Raises where the reverse sweep of the node would (a saved value written in place
    since), and where a replay would differ: an input, or node's own output, written in place since without
    a recorded write (`h += 1` keeps what h was, which the replay reads; a write under no_grad keeps nothing)."""
    inputs = _recorded_inputs(node, level)
    seq = node._seq
    for a in (node, *inputs):
        if isinstance(a, Tensor):
            _check_written(node, a, seq, replay=True)
    return inputs


def _as_of(node, a):
    """Input `a` of `node` as it was when `node` was recorded: a recorded in-place write since (`h *= 3`)
    made `a` the node of the write, and kept the node `a` was before (`Tensor._prior`, a weak reference:
    the write's node holds it as an input)."""
    while a._seq > node._seq:
        ref = getattr(a, "_prior", None)
        prior = None if ref is None else ref()
        if prior is None:  # the write's graph was freed by a backward(), and with it the node `a` was
            raise RuntimeError(printable(
                f"backward: an input of {node.op.name} (made at {location(node) or 'an unknown line'}) was changed "
                f"in place after {node.op.name} used it, and what it was before the change was freed by a backward() "
                f"through the change since; pass retain_graph=True to that backward(), or change a copy (at "
                f"{user_line()})"))
        a = prior
    return a


def _recorded_inputs(node, level):
    """`node`'s inputs as it recorded them, once checked (only when some value was written in place since
    `node` was recorded). Raises if a value its vjp reads (`Op.saves`, given which inputs need gradients)
    or the memory it lives in was written in place since, as PyTorch checks the tensors an op saved; a
    write to a value the rule does not read (`add`'s inputs) is fine. An input that a recorded in-place write
    made the write's node since stands for the node it was (`_as_of`), as PyTorch's graph edges point to
    the gradient function of the time: the gradient flows where it did when `node` was recorded."""
    seq = node._seq
    recorded = inputs = node.inputs
    if any(isinstance(a, Tensor) and a._seq > seq and getattr(a, "_prior", None) is not None for a in inputs):
        recorded = tuple(_as_of(node, a) if isinstance(a, Tensor) else a for a in inputs)
    saved = node.op.saved(tuple(i for i, a in enumerate(recorded)
                                if isinstance(a, Tensor) and a._requires_grad and a._level == level))
    if saved is None or "out" in saved:
        _check_written(node, node, seq)
    for i, a in enumerate(inputs):
        if isinstance(a, Tensor) and (saved is None or i in saved):
            _check_written(node, a, seq)  # the input itself: writes to it are counted there, not in what it was
    return recorded


def _sweep(roots, cotangents, level, graph_mode, free, targets, within, symbolic):
    check_gradient = anomaly_checks()  # anomaly mode: each cotangent is checked for NaN and Inf
    check = check_gradient is not None
    last_write = write_clock.last  # nodes recorded after the latest in-place write need no check
    kept = []
    grads = {}
    leaves = {}
    heap = []
    for root, ct in zip(roots, cotangents):
        if root.op is None:
            leaves[root] = leaves[root] + ct if root in leaves else ct
        elif root in grads:
            grads[root] = grads[root] + ct
        else:
            grads[root] = ct
            heappush(heap, (-root._seq, root))
    while heap:
        node = heappop(heap)[1]
        g = grads.pop(node)
        if targets is not None and node in targets:
            leaves[node] = g  # complete: every consumer of node has been visited
        inputs = node.inputs
        if inputs is None:
            raise _freed_error(node)
        if last_write >= node._seq:  # (equal: the node of the latest recorded write, `h += 1`)
            inputs = _recorded_inputs(node, level)
            if free and getattr(node, "_prior", None) is not None:
                # what a recorded write's node was, which only its inputs held: kept to the sweep's end for the
                # nodes that read it before the write and are visited later (_as_of walks the chain to them)
                kept.append(node._prior())
        if free:
            node.inputs = None  # release what this node kept alive as soon as it is used
        if symbolic:
            _differentiate(node)
        attrs = node.attrs
        rules = node.op.vjp
        if len(inputs) == 1 and not graph_mode and type(rules) is tuple and rules[0] is not None:
            # the hot path, kept apart from the general loop below for speed: a recorded unary op's
            # input is a box of this level needing grad. Without it workload (a) costs 5.70 instead of
            # 5.29 us/op (0.60 instead of 0.55 of PyTorch's), measured 2026-11-25
            a = inputs[0]
            ct = rules[0](g, node._value, a._value) if attrs is None else rules[0](g, node._value, a._value, **attrs)
            if check:
                check_gradient(node, 0, ct)
            if ct.shape != a._value.shape:
                ct = _unbroadcast(ct, a._value.shape, node.op)
            if a.op is None:
                leaves[a] = leaves[a] + ct if a in leaves else ct
            elif a in grads:
                grads[a] = grads[a] + ct
            else:
                grads[a] = ct
                heappush(heap, (-a._seq, a))
            continue
        if graph_mode:
            out, values = node, inputs
        elif len(inputs) == 1:
            out, values = node._value, (inputs[0]._value,)  # a recorded unary op's input is a box here
        else:
            out = node._value
            # isinstance, not type(...) is Tensor: a subclass such as dg.nn.Parameter is a box of this level too
            values = [a._value if isinstance(a, Tensor) and a._level == level else a for a in inputs]
        joint = None if type(rules) is tuple else rules(g, out, *values, **(attrs or {}))
        # a complex output: a real input's cotangent is the real part of what its rule gives. (A one-input op
        # whose input may be real and output complex (astype, fft, eig) takes the real part in its rule: the
        # fast path above has no check, which would cost workload (a) 3%.)
        dtype = getattr(out, "dtype", None)
        complex_out = dtype is not None and dtype.kind == "c"
        for i, a in enumerate(inputs):
            if not (isinstance(a, Tensor) and a._requires_grad and a._level == level):
                continue
            if within is not None and a not in within:
                continue
            if joint is None:
                rule = rules[i] if i < len(rules) else None  # inputs past the rules (a shape source) get none
                if rule is None:
                    continue
                ct = rule(g, out, *values) if attrs is None else rule(g, out, *values, **attrs)
            else:
                ct = joint[i]
                if ct is None:
                    continue
            if complex_out and a._value.dtype.kind != "c" and _dtype(ct).kind == "c":
                ct = real(ct)
            if check:
                check_gradient(node, i, ct)
            shape = a._value.shape
            if ct.shape != shape or (graph_mode and None in shape):  # unknown sizes: reduce when it runs
                ct = _unbroadcast(ct, shape, node.op)
            if a.op is None:
                leaves[a] = leaves[a] + ct if a in leaves else ct
            elif a in grads:
                grads[a] = grads[a] + ct
            else:
                grads[a] = ct
                heappush(heap, (-a._seq, a))
    return leaves


def backward(tensor, grad=None, retain_graph=None, create_graph=False):
    """Eager reverse mode, `t.backward()`: accumulates d(tensor)/d(leaf) into the `.grad` of every leaf
    that requires grad (PyTorch's semantics).

    >>> from dagrad._core.tensor import tensor
    >>> x = tensor(3.0, requires_grad=True)
    >>> backward(x * x)
    >>> x.grad
    tensor(6.)
    """
    if tensor._level != 0:
        raise user_error(RuntimeError, "backward", "called on a value traced by a transform; use the transform's "
                         "result instead")
    if not tensor._requires_grad:
        raise user_error(RuntimeError, "backward", "this tensor does not require grad and has no recorded graph "
                         "(were its inputs created with requires_grad=True, outside no_grad?)")
    shape, dtype = tensor.shape, tensor.dtype
    if is_dask(tensor._value) and has_unknown_size(shape):
        raise unknown_size_error("backward", shape)
    if grad is None:
        if None in shape or math.prod(shape) != 1:
            raise user_error(ValueError, "backward", f"grad can be created implicitly only for a one-element "
                             f"output, got shape {shape}; pass grad= of that shape", tensor)
        if dtype.kind == "c":
            raise complex_seed_error("backward", tensor)
        seed = ones(shape, dtype, tensor._value)  # a Dask output's seed is a Dask array: cotangents stay lazy
    else:
        check_numeric(grad, "backward", "grad")
        if create_graph and isinstance(grad, Tensor):
            seed = grad
        else:
            raw = grad._raw() if isinstance(grad, Tensor) else grad
            err = mixing_error("backward", (tensor._value, raw))  # a NumPy grad= for a CuPy output, or back
            if err is not None:
                raise err
            # the seed follows the output's array type: a NumPy cotangent of a Dask output becomes a Dask array,
            # a number given for a CuPy output becomes a CuPy array
            like = tensor._value if is_foreign(tensor._value) else None
            seed = as_dtype(raw, dtype) if is_foreign(raw) else np.asarray(raw, dtype=dtype, like=like)
        if _shape(seed) != shape:
            raise user_error(ValueError, "backward", f"grad has shape {_shape(seed)} but the output has shape "
                             f"{shape}", tensor, seed)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        if not isinstance(seed, Tensor):
            seed = _leaf(seed, False)
        with enable_grad():
            leaves = reverse_sweep([tensor], [seed], 0, graph_mode=True, free=not retain_graph)
        for leaf, ct in leaves.items():
            if not isinstance(ct, Tensor):
                ct = _leaf(copy_as(ct, leaf.dtype) if is_foreign(ct) else np.array(ct, dtype=leaf.dtype), False)
            leaf._grad = ct if leaf._grad is None else leaf._grad + ct
            if leaf._grad.dtype != leaf.dtype:  # a rule's cotangent may promote; .grad keeps the leaf's dtype
                leaf._grad = leaf._grad.astype(leaf.dtype)
        return
    try:
        leaves = reverse_sweep([tensor], [seed], 0, free=not retain_graph)
    except TypeError as err:
        mixing = _backward_mixing(err)
        if mixing is None:
            raise
        raise mixing from err
    for leaf, ct, references in _with_references(leaves):
        if type(ct) is not type(leaf._value) and is_cupy(ct) != is_cupy(leaf._value):
            raise _leaf_mixing(leaf, ct)
        if leaf._grad is not None:
            total = leaf._grad._raw() + ct
            leaf._grad = _leaf(total if total.dtype == leaf._value.dtype else total.astype(leaf._value.dtype), False)
        elif (references <= _SOLE and type(ct) is np.ndarray and ct.base is None and ct.flags.writeable
              and ct.dtype == leaf._value.dtype):
            leaf._grad = _leaf(ct, False)  # a fresh array no one else holds: kept without a copy
        elif is_foreign(ct):  # a Dask array lazily cast, not computed (as np.array would); a CuPy one copied on its GPU
            leaf._grad = _leaf(copy_as(ct, leaf._value.dtype), False)
        else:
            leaf._grad = _leaf(np.array(ct, dtype=leaf._value.dtype), False)  # shared (the seed, an input, ...)


# how CuPy refuses a NumPy array: in its functions and operators, and in its __array__
_CUPY_REFUSALS = ("Unsupported type <class 'numpy.ndarray'>", "Implicit conversion to a NumPy array is not allowed")


def _backward_mixing(err):
    """A TypeError raised in the reverse sweep but not by an op (a custom rule's cotangent added to the
    others, say) becomes a mixing error when it is CuPy's refusal of a NumPy array; else None."""
    if getattr(err, "_dagrad_explained", False) or "cupy" not in _sys_modules:
        return None
    if not any(text in str(err) for text in _CUPY_REFUSALS):
        return None
    return user_error(TypeError, "backward", f"a CuPy array met a NumPy array in the backward pass ({err}): "
                      "every cotangent must have its value's array type (a custom rule's too: make its arrays "
                      "with like=g, or cupy.asarray(x))")


def _leaf_mixing(leaf, ct):
    """The error for a leaf whose gradient came out in host memory for a value on the GPU, or back."""
    return user_error(TypeError, "backward", f"the gradient of a {array_type_name(leaf._value)} leaf came out as a "
                      f"{array_type_name(ct)} (a custom rule's cotangent?); a gradient has its value's array type: "
                      "make it with like=g, or move it with cupy.asarray(x) / x.get()", leaf._value, ct)


def _with_references(mapping):
    """(key, value, reference count of value) for each entry. A gradient that only the sweep's
    result refers to is a fresh array a rule made, and `.grad` can keep it without a copy, as
    PyTorch's AccumulateGrad steals a gradient nothing else uses; the count is compared with
    _SOLE, measured through this same function, so it holds however CPython counts."""
    for key, value in mapping.items():
        yield key, value, getrefcount(value)


_SOLE = next(_with_references({None: np.empty(1)}))[2]  # the count of a value only the mapping holds


def complex_seed_error(where, output):
    """The error for a gradient asked of a complex output without a cotangent: seeding it with 1 would
    differentiate its real part silently (PyTorch: "grad can be implicitly created only for real scalar
    outputs"; dg.grad refuses too)."""
    return user_error(TypeError, where, f"grad can be created implicitly only for a real output, got dtype "
                      f"{output.dtype}: differentiate its real part, imaginary part or abs(), or pass the cotangent "
                      f"(grad=) for a vector-Jacobian product", output)


def check_numeric(value, where, what, real_float=False):
    """Refuses an output or cotangent that is not numeric (None, a string, an object); with
    `real_float`, anything but a real floating-point value (JAX's rule for what `grad`
    differentiates: a complex output needs `holomorphic_grad`, or its real part or modulus)."""
    try:
        dtype = _dtype(value)
    except Exception:
        dtype = np.dtype(object)
    allowed = "f" if real_float else "biufc"
    if dtype.kind not in allowed or isinstance(value, (str, bytes)) or value is None:
        described = type(value).__name__ if not isinstance(value, (Tensor, np.ndarray, np.generic)) else \
            f"dtype {dtype}"
        need = "real floating-point values" if real_float else "bool, integer, floating-point or complex values"
        hint = ("; for a holomorphic function use dg.holomorphic_grad, else differentiate its real part, imaginary "
                "part or abs()") if real_float and dtype.kind == "c" else ""
        raise user_error(TypeError, where, f"{what} must be {need}, got {described}{hint}")
