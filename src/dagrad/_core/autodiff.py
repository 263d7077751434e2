"""Reverse sweep, eager `backward`, and the functional transforms.

The reverse sweep visits nodes of one level in decreasing creation order (a heap keyed by
sequence number), which is a topological order of any graph built by running code, so
no recursion and no separate topological sort are needed, and the order never depends
on ids or sets.
"""

from __future__ import annotations

import itertools
import math
from heapq import heappop, heappush
from sys import getrefcount

import numpy as np

from . import op as _op_module
from . import tensor as _tensor_module
from .errors import _provenance, location, user_error, user_line
from .op import REGISTRY, make_dual
from .shapes import dtype_of as _dtype
from .shapes import shape_of as _shape
from .tensor import Dual, Tensor, _grad_mode, _leaf, is_symbolic, write_clock

_next_level = itertools.count(1).__next__




def _unbroadcast(ct, shape):
    """Sums a cotangent of a broadcast result back down to the input's `shape`."""
    if None in shape:  # a static graph with unknown sizes: which axes to sum is known only when it runs
        return REGISTRY["sum_to"].function(ct, shape.ref)
    ct_shape = _shape(ct)
    lead = len(ct_shape) - len(shape)
    if lead < 0:
        return REGISTRY["broadcast_to"].function(ct, shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and ct_shape[lead + i] != 1
    )
    if axes:
        ct = REGISTRY["sum"].function(ct, axis=axes, keepdims=True)
    if lead or _shape(ct) != shape:
        ct = REGISTRY["reshape"].function(ct, shape)
    return ct


def _freed_error(node):
    made = location(node)
    return RuntimeError(
        f"backward through {node.op.name}{f' (made at {made})' if made else ''} a second time: the values it "
        f"saved were freed by the previous backward(); pass retain_graph=True to that backward() to keep them "
        f"(at {user_line()})"
    )


def reverse_sweep(roots, cotangents, level, graph_mode=False, free=False, targets=None, within=None):
    """Propagates `cotangents` from `roots` through the graph of `level`.

    Returns {leaf: cotangent} for the requires-grad leaves reached, in the order reached,
    and for the nodes in `targets` (when given) that were reached. `within` (when given)
    limits the sweep to those nodes: the ones on a path to a target.
    In graph mode the rules run on the Tensors themselves (recording the backward pass);
    otherwise on the values one level down (raw arrays for eager tensors). `free` drops
    each visited node's inputs as it goes, releasing the values they kept alive (as
    PyTorch frees saved tensors during the backward pass).
    """
    symbolic = is_symbolic(roots[0]) if len(roots) == 1 else any(is_symbolic(root) for root in roots)
    if symbolic:
        previous_origin = _provenance.origin
        try:
            return _sweep(roots, cotangents, level, graph_mode, free, targets, within, symbolic)
        finally:
            _provenance.origin = previous_origin
    return _sweep(roots, cotangents, level, graph_mode, free, targets, within, symbolic)


def _origin(node):
    """'file.py:12 (backward of exp)': where the forward node that a gradient node differentiates was built."""
    value = node
    while isinstance(value, Tensor) and not value._symbolic:
        value = value._value
    if not isinstance(value, Tensor):
        return None
    return f"{value.where} (backward of {node.op.name})"


def _modified_error(node, changed):
    """The error for a node whose saved input (or own output) `changed` was written in place after
    the node was recorded: the rule would silently use the new values."""
    what = "its output" if changed is node else f"an input of shape {tuple(_shape(changed._value))}"
    made = location(changed) if changed is not node else None
    return RuntimeError(
        f"backward: {what}{f' (computed at {made})' if made else ''} that {node.op.name} saved for its gradient "
        f"(at {location(node) or 'an unknown line'}) was modified in place (or taken for writing through .value) at "
        f"{changed._write.where()} (version {changed._write.count}), after {node.op.name} used it; its gradient "
        f"would use the new values. Change values before the forward pass, read them with .numpy() (read-only), "
        f"or write to a copy; PyTorch raises too (at {user_line()})"
    )


def _check_versions(node):
    """Raises if a value `node` saved was written in place after the node was recorded."""
    seq = node._seq
    for a in (node, *node.inputs):
        if isinstance(a, Tensor):
            version = getattr(a, "_write", None)
            if version is not None and version.seq > seq:
                raise _modified_error(node, a)


def _sweep(roots, cotangents, level, graph_mode, free, targets, within, symbolic):
    check = _op_module._ANOMALY  # anomaly mode: each cotangent is checked for NaN and Inf
    check_gradient = _op_module._CHECK_GRADIENT
    last_write = write_clock.last  # nodes recorded after the latest in-place write need no check
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
        if last_write > node._seq:
            _check_versions(node)
        if free:
            node.inputs = None  # release what this node kept alive as soon as it is used
        if symbolic:
            _provenance.origin = _origin(node)
        attrs = node.attrs
        rules = node.op.vjp
        if len(inputs) == 1 and not graph_mode and type(rules) is tuple and rules[0] is not None:
            # the hot path, kept apart from the general loop below for speed (per-op overhead is a
            # headline figure): a recorded unary op's input is a box of this level needing grad
            a = inputs[0]
            ct = rules[0](g, node._value, a._value) if attrs is None else rules[0](g, node._value, a._value, **attrs)
            if check:
                check_gradient(node, 0, ct)
            if ct.shape != a._value.shape:
                ct = _unbroadcast(ct, a._value.shape)
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
            if check:
                check_gradient(node, i, ct)
            shape = a._value.shape
            if ct.shape != shape or (graph_mode and None in shape):  # unknown sizes: reduce when it runs
                ct = _unbroadcast(ct, shape)
            if a.op is None:
                leaves[a] = leaves[a] + ct if a in leaves else ct
            elif a in grads:
                grads[a] = grads[a] + ct
            else:
                grads[a] = ct
                heappush(heap, (-a._seq, a))
    return leaves


def backward(tensor, grad=None, retain_graph=None, create_graph=False):
    """Eager reverse mode: accumulates into `.grad` of every leaf that requires grad."""
    if tensor._level != 0:
        raise user_error(RuntimeError, "backward", "called on a value traced by a transform; use the transform's "
                         "result instead")
    if not tensor._requires_grad:
        raise user_error(RuntimeError, "backward", "this tensor does not require grad and has no recorded graph "
                         "(were its inputs created with requires_grad=True, outside no_grad?)")
    shape, dtype = tensor.shape, tensor.dtype
    if grad is None:
        if None in shape or math.prod(shape) != 1:
            raise user_error(ValueError, "backward", f"grad can be created implicitly only for a one-element "
                             f"output, got shape {shape}; pass grad= of that shape", tensor)
        seed = np.ones(shape, dtype)
    else:
        _check_numeric(grad, "backward", "grad")
        seed = grad if (create_graph and isinstance(grad, Tensor)) else np.asarray(
            grad._raw() if isinstance(grad, Tensor) else grad, dtype=dtype
        )
        if _shape(seed) != shape:
            raise user_error(ValueError, "backward", f"grad has shape {_shape(seed)} but the output has shape "
                             f"{shape}", tensor, seed)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        if not isinstance(seed, Tensor):
            seed = _leaf(seed, False)
        previous = _grad_mode.enabled
        _grad_mode.enabled = True
        try:
            leaves = reverse_sweep([tensor], [seed], 0, graph_mode=True, free=not retain_graph)
        finally:
            _grad_mode.enabled = previous
        for leaf, ct in leaves.items():
            if not isinstance(ct, Tensor):
                ct = _leaf(np.array(ct, dtype=leaf.dtype), False)
            leaf._grad = ct if leaf._grad is None else leaf._grad + ct
            if leaf._grad.dtype != leaf.dtype:  # a rule's cotangent may promote; .grad keeps the leaf's dtype
                leaf._grad = leaf._grad.astype(leaf.dtype)
        return
    leaves = reverse_sweep([tensor], [seed], 0, free=not retain_graph)
    for leaf, ct, references in _with_references(leaves):
        if leaf._grad is not None:
            total = leaf._grad._raw() + ct
            leaf._grad = _leaf(total if total.dtype == leaf._value.dtype else total.astype(leaf._value.dtype), False)
        elif (references <= _SOLE and type(ct) is np.ndarray and ct.base is None and ct.flags.writeable
              and ct.dtype == leaf._value.dtype):
            leaf._grad = _leaf(ct, False)  # a fresh array no one else holds: kept without a copy
        else:
            leaf._grad = _leaf(np.array(ct, dtype=leaf._value.dtype), False)  # shared (the seed, an input, ...)


def _with_references(mapping):
    """(key, value, reference count of value) for each entry. A gradient that only the sweep's
    result refers to is a fresh array a rule made, and `.grad` can keep it without a copy, as
    PyTorch's AccumulateGrad steals a gradient nothing else uses; the count is compared with
    _SOLE, measured through this same function, so it holds however CPython counts."""
    for key, value in mapping.items():
        yield key, value, getrefcount(value)


_SOLE = next(_with_references({None: np.empty(1)}))[2]  # the count of a value only the mapping holds
_tensor_module._backward = backward


# ---------------------------------------------------------------- pytrees


def tree_flatten(tree):
    """Leaves of nested lists/tuples/dicts in order, and a description to rebuild it."""
    if isinstance(tree, (list, tuple)):
        leaves, defs = [], []
        for item in tree:
            sub_leaves, sub_def = tree_flatten(item)
            leaves.extend(sub_leaves)
            defs.append(sub_def)
        return leaves, (type(tree), defs)
    if isinstance(tree, dict):
        leaves, defs = [], []
        for key, item in tree.items():
            sub_leaves, sub_def = tree_flatten(item)
            leaves.extend(sub_leaves)
            defs.append((key, sub_def))
        return leaves, (dict, defs)
    return [tree], None


def tree_unflatten(treedef, leaves):
    it = iter(leaves)
    return _rebuild(treedef, it)


def _rebuild(treedef, it):
    if treedef is None:
        return next(it)
    kind, defs = treedef
    if kind is dict:
        return {key: _rebuild(sub, it) for key, sub in defs}
    items = [_rebuild(sub, it) for sub in defs]
    if kind is list:
        return items
    if kind is tuple:
        return tuple(items)
    return kind(*items)  # namedtuple


# ---------------------------------------------------------------- transforms


def _differentiable_input(x, where):
    """The value to box for a transform input: Tensors as they are, numbers as arrays."""
    if isinstance(x, Tensor):
        value = x
    elif isinstance(x, (np.ndarray, np.generic)):
        value = x
    else:
        value = np.asarray(x)
    kind = _dtype(value).kind
    if kind != "f":
        raise user_error(TypeError, where, f"can only differentiate with respect to real floating-point inputs, "
                         f"got dtype {_dtype(value)} (pass a float such as 1.0 instead of 1)")
    return value


def _check_numeric(value, where, what, real_float=False):
    """Refuses an output or cotangent that is not numeric (None, a string, an object) or is complex
    (not supported yet); with `real_float`, anything but a real floating-point value (JAX's rule
    for what `grad` differentiates)."""
    try:
        dtype = _dtype(value)
    except Exception:
        dtype = np.dtype(object)
    allowed = "f" if real_float else "biuf"
    if dtype.kind not in allowed or isinstance(value, (str, bytes)) or value is None:
        described = type(value).__name__ if not isinstance(value, (Tensor, np.ndarray, np.generic)) else \
            f"dtype {dtype}"
        need = "real floating-point values" if real_float else "bool, integer or real floating-point values"
        raise user_error(TypeError, where, f"{what} must be {need}, got {described}")


def _reverse_box(value, level):
    return _leaf(value, True, level)


def _unbox(x, level):
    if isinstance(x, Tensor) and x._level == level:
        return x._value
    return x


def _normalize_argnums(argnums, nargs, where):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise user_error(ValueError, where, f"argnums {argnums} is out of range for a function called with "
                             f"{nargs} arguments")
    return single, tuple(n % nargs for n in nums)


def _finish_ct(ct, original, like_value):
    """A cotangent or tangent as the user receives it: same kind as the input they passed."""
    if ct is None:
        ct = np.zeros(_shape(like_value), _dtype(like_value))
    if type(original) is Tensor and original._level == 0:
        return ct if isinstance(ct, Tensor) else _leaf(np.asarray(ct), False)
    if isinstance(ct, np.ndarray) and not ct.flags.writeable:
        ct = ct.copy()
    return ct


class _Traced:
    """Runs `f` with some arguments boxed at a fresh level (shared by the reverse transforms)."""

    def __init__(self, f, args, argnums, where, kwargs=None):
        self.level = _next_level()
        self.where = where
        self.args = list(args)
        self.boxes = []  # per argnum: (treedef, [(original leaf, box)])
        for n in argnums:
            leaves, treedef = tree_flatten(self.args[n])
            pairs = [(leaf, _reverse_box(_differentiable_input(leaf, where), self.level)) for leaf in leaves]
            self.boxes.append((treedef, pairs))
            self.args[n] = tree_unflatten(treedef, [box for _, box in pairs])
        previous = _grad_mode.enabled
        _grad_mode.enabled = True
        try:
            self.out = f(*self.args, **(kwargs or {}))
        finally:
            _grad_mode.enabled = previous

    def pull(self, out_leaves, cotangents):
        """Cotangents for every boxed argument, one pytree per argnum."""
        level = self.level
        roots, seeds = [], []
        for o, ct in zip(out_leaves, cotangents):
            if isinstance(o, Tensor) and o._level == level and o._requires_grad:
                roots.append(o)
                seeds.append(ct)
        previous = _grad_mode.enabled
        _grad_mode.enabled = True
        try:
            leaves = reverse_sweep(roots, seeds, level) if roots else {}
        finally:
            _grad_mode.enabled = previous
        return tuple(
            tree_unflatten(treedef, [_finish_ct(leaves.get(box), orig, box._value) for orig, box in pairs])
            for treedef, pairs in self.boxes
        )


def value_and_grad(f, argnums=0):
    """Returns a function computing `(f(*args), gradient of f at args)`.

    >>> import numpy as np
    >>> value_and_grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    """

    def value_and_grad_f(*args, **kwargs):
        single, nums = _normalize_argnums(argnums, len(args), "grad")
        traced = _Traced(f, args, nums, "grad", kwargs)
        out = traced.out
        if isinstance(out, (list, tuple, dict)):
            raise user_error(TypeError, "grad", f"the function must return a scalar, got a {type(out).__name__}; use "
                             "dg.jacobian or dg.vjp for other outputs")
        _check_numeric(out, "grad", "the function's output", real_float=True)
        if int(np.prod(_shape(out))) != 1:
            raise user_error(TypeError, "grad", f"the function must return a scalar (one element), got shape "
                             f"{_shape(out)}; use dg.jacobian or dg.vjp for other outputs")
        seed = np.ones(_shape(out), _dtype(out))
        grads = traced.pull([out], [seed])
        value = _unbox(out, traced.level)
        return value, (grads[0] if single else grads)

    _name(value_and_grad_f, "value_and_grad", f)
    return value_and_grad_f


def grad(f, argnums=0):
    """Returns a function computing the gradient of scalar-valued `f`.

    Results are NumPy arrays for array inputs and Tensors for Tensor inputs, so
    transforms nest:

    >>> import numpy as np
    >>> grad(lambda x: x ** 3)(2.0)
    np.float64(12.0)
    >>> grad(grad(lambda x: x ** 3))(2.0)
    np.float64(12.0)
    """
    vg = value_and_grad(f, argnums)

    def grad_f(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    _name(grad_f, "grad", f)
    return grad_f


def vjp(f, *primals):
    """Returns `(f(*primals), f_vjp)`; `f_vjp(cotangent)` gives one cotangent per primal.

    >>> import numpy as np
    >>> out, f_vjp = vjp(lambda x: x * 2, np.array([1.0, 2.0]))
    >>> f_vjp(np.array([1.0, 10.0]))
    (array([ 2., 20.]),)
    """
    traced = _Traced(f, primals, tuple(range(len(primals))), "vjp")
    out_leaves, out_def = tree_flatten(traced.out)
    for o in out_leaves:
        _check_numeric(o, "vjp", "the function's outputs")
    level = traced.level

    def f_vjp(cotangent):
        ct_leaves, ct_def = tree_flatten(cotangent)
        if len(ct_leaves) != len(out_leaves):
            raise user_error(ValueError, "vjp", f"the cotangent has {len(ct_leaves)} parts, the output has "
                             f"{len(out_leaves)}")
        seeds = []
        for o, ct in zip(out_leaves, ct_leaves):
            _check_numeric(ct, "vjp", "a cotangent")
            if not isinstance(ct, Tensor):
                ct = np.asarray(ct, dtype=_dtype(o))
            if _shape(ct) != _shape(o):
                raise user_error(ValueError, "vjp", f"the cotangent has shape {_shape(ct)} but the output has shape "
                                 f"{_shape(o)}", ct)
            seeds.append(ct)
        return traced.pull(out_leaves, seeds)

    return tree_unflatten(out_def, [_unbox(o, level) for o in out_leaves]), f_vjp


def jvp(f, primals, tangents):
    """Forward mode: returns `(f(*primals), J @ tangents)` from the ops' jvp rules.

    >>> import numpy as np
    >>> jvp(lambda x: x ** 2, (np.array([1.0, 3.0]),), (np.array([1.0, 1.0]),))
    (array([1., 9.]), array([2., 6.]))
    """
    if not isinstance(primals, (list, tuple)) or not isinstance(tangents, (list, tuple)):
        raise user_error(TypeError, "jvp", "primals and tangents must be tuples (one entry per argument of f)")
    p_leaves, p_def = tree_flatten(tuple(primals))
    t_leaves, t_def = tree_flatten(tuple(tangents))
    if len(p_leaves) != len(t_leaves):
        raise user_error(ValueError, "jvp", f"{len(p_leaves)} primal arrays but {len(t_leaves)} tangents")
    level = _next_level()
    duals = []
    for p, t in zip(p_leaves, t_leaves):
        value = _differentiable_input(p, "jvp")
        _check_numeric(t, "jvp", "a tangent")
        if not isinstance(t, Tensor):
            t = np.asarray(t, dtype=_dtype(value))
        if _shape(t) != _shape(value):
            raise user_error(ValueError, "jvp", f"tangent shape {_shape(t)} does not match primal shape "
                             f"{_shape(value)}", value, t)
        duals.append(make_dual(value, t, level))
    out = f(*tree_unflatten(p_def, duals))
    out_leaves, out_def = tree_flatten(out)
    for o in out_leaves:
        _check_numeric(o, "jvp", "the function's outputs")
    primal_out, tangent_out = [], []
    tensor_inputs = any(type(p) is Tensor and p._level == 0 for p in p_leaves)
    for o in out_leaves:
        if type(o) is Dual and o._level == level:
            primal_out.append(o._value)
            tangent_out.append(o._tangent)
        else:
            primal_out.append(o)
            zero = np.zeros(_shape(o), _dtype(o))
            tangent_out.append(_leaf(zero, False) if tensor_inputs else zero)
    return tree_unflatten(out_def, primal_out), tree_unflatten(out_def, tangent_out)


def _stack(parts, axis=0):
    if not _any_tensor(parts):
        return np.stack(parts, axis=axis)
    from ..ops.shape import stack

    return stack(parts, axis=axis)


def _any_tensor(xs):
    return any(isinstance(x, Tensor) for x in xs)


def _reshape(x, shape):
    return REGISTRY["reshape"].function(x, shape)


def _array_arg(x, where):
    if isinstance(x, (list, tuple, dict)):
        raise user_error(TypeError, where, f"differentiated arguments must be arrays or Tensors, got "
                         f"{type(x).__name__}")
    return _differentiable_input(x, where)


def _basis(shape, k, dtype):
    e = np.zeros(int(np.prod(shape)), dtype)
    e[k] = 1
    return e.reshape(shape)


def _assemble(parts, out_shape, in_shape, dtype, axis):
    """One Jacobian from its rows (axis 0) or columns (axis -1): shape out_shape + in_shape."""
    if not parts:
        return np.zeros(out_shape + in_shape, dtype)
    return _reshape(_stack(parts, axis=axis), out_shape + in_shape)


def jacobian(f, argnums=0):
    """Reverse-mode Jacobian: shape `out.shape + in.shape`, one vjp per output element.

    With a tuple `argnums` each result is a tuple (one per argument); a pytree output
    gives the same pytree of results, as `jax.jacrev`.

    >>> import numpy as np
    >>> jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """

    def jacobian_f(*args):
        single, nums = _normalize_argnums(argnums, len(args), "jacobian")
        in_shapes = [_shape(_array_arg(args[n], "jacobian")) for n in nums]
        traced = _Traced(f, args, nums, "jacobian")
        out_leaves, out_def = tree_flatten(traced.out)
        for o in out_leaves:
            _check_numeric(o, "jacobian", "the function's outputs", real_float=True)
        results = []
        for out in out_leaves:
            shape, dtype = _shape(out), _dtype(out)
            rows = [traced.pull([out], [_basis(shape, k, dtype)]) for k in range(int(np.prod(shape)))]
            per_arg = [_assemble([row[j] for row in rows], shape, in_shapes[j], dtype, 0) for j in range(len(nums))]
            results.append(per_arg[0] if single else tuple(per_arg))
        return tree_unflatten(out_def, results)

    _name(jacobian_f, "jacobian", f)
    return jacobian_f


def jacfwd(f, argnums=0):
    """Forward-mode Jacobian: shape `out.shape + in.shape`, one jvp per input element.

    Results are arranged as in `jacobian`.

    >>> import numpy as np
    >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """

    def jacfwd_f(*args):
        single, nums = _normalize_argnums(argnums, len(args), "jacfwd")
        columns = []  # per argument: one list of output tangent leaves per input element
        out = None
        for n in nums:
            x = _array_arg(args[n], "jacfwd")

            def f_of_arg(arg, n=n):
                merged = list(args)
                merged[n] = arg
                return f(*merged)

            per_element = []
            for k in range(int(np.prod(_shape(x)))):
                out, tangent = jvp(f_of_arg, (x,), (_basis(_shape(x), k, _dtype(x)),))
                per_element.append(tree_flatten(tangent)[0])
            columns.append(per_element)
        if out is None:  # every differentiated argument is empty
            out = f(*args)
        out_leaves, out_def = tree_flatten(out)
        results = []
        for i, o in enumerate(out_leaves):
            per_arg = [
                _assemble([col[i] for col in columns[j]], _shape(o), _shape(args[n]), _dtype(o), -1)
                for j, n in enumerate(nums)
            ]
            results.append(per_arg[0] if single else tuple(per_arg))
        return tree_unflatten(out_def, results)

    _name(jacfwd_f, "jacfwd", f)
    return jacfwd_f


def hessian(f, argnums=0):
    """Hessian of scalar `f`, forward-over-reverse (`jacfwd(grad(f))`), as in JAX.

    >>> import numpy as np
    >>> hessian(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    h = jacfwd(grad(f, argnums), argnums)
    _name(h, "hessian", f)
    return h


def _name(wrapper, transform, f):
    wrapper.__name__ = f"{transform}({getattr(f, '__name__', 'f')})"
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__doc__ = f"{transform} of {getattr(f, '__name__', 'f')}"
    wrapper.__wrapped__ = f  # inspect.signature (and dg.compile's input names) see f's parameters
