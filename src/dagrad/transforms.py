"""The functional transforms: grad, value_and_grad, vjp, jvp, jacobian (= jacrev), jacfwd, hessian, vmap
(JAX's names and semantics) and autograd's elementwise_grad, built on the reverse sweep, the forward-mode
duals and the batching boxes of the core.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._core.autodiff import check_numeric, reverse_sweep
from ._core.backends import as_dtype, has_unknown_size, is_dask, is_foreign, ones, unknown_size_error, zeros
from ._core.errors import user_error
from ._core.ir import Symbol, WeakScalar
from ._core.op import batch_broadcast, is_constant, make_dual
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.shapes import dtype_of as _dtype
from ._core.shapes import shape_of as _shape
from ._core.structural import real
from ._core.tensor import Batched, Dual, Tensor, _leaf, enable_grad
from .ops.elementwise import astype, full_like
from .ops.reduce import sum as reduce_sum
from .ops.shape import moveaxis, reshape

_next_level = itertools.count(1).__next__  # each transform boxes its inputs at a level of its own

def _differentiable_input(x, where):
    """The value to box for a transform input: Tensors as they are, numbers as arrays (typed strongly, so
    that a float32 array times it is float64); under dg.compile a Python number's placeholder likewise."""
    if type(x) is WeakScalar:
        return astype(x, x.dtype)
    value = x if isinstance(x, (Tensor, np.ndarray, np.generic)) or is_foreign(x) else np.asarray(x)
    if _dtype(value).kind not in "fc":
        raise user_error(TypeError, where, f"can only differentiate with respect to floating-point or complex inputs, "
                         f"got dtype {_dtype(value)} (pass a float such as 1.0 instead of 1)")
    return value


def _check_complex_kind(t, like, where, what):
    """A complex tangent (cotangent) for a real primal (output) is refused, as JAX does: the real
    function has no derivative along an imaginary direction, and dropping it would be silent."""
    if _dtype(t).kind == "c" and _dtype(like).kind != "c":
        whose = "primal" if what == "a tangent" else "output"
        raise user_error(TypeError, where, f"{what} has dtype {_dtype(t)} but its {whose} has dtype {_dtype(like)}: "
                         f"a real value takes real {what[2:]}s", t)


def _array_of(x):
    """The array inside `x`'s boxes, whose type seeds and zeros follow (a Dask array's are Dask arrays)."""
    while isinstance(x, Tensor) and not x._symbolic:
        x = x._value
    return x


def _filled_like(x, fill):
    """Ones or zeros of x's shape and dtype and of its array type. In dg.compile's trace for Dask arguments
    (x a node of that graph) a full_like node: its value takes the array type x has at run time (a Dask
    array's seed is a Dask array, as in eager mode). A NumPy trace keeps constants, which fold further."""
    like = _array_of(x)
    # not under vmap, whose node holds every example
    if isinstance(like, Symbol) and like.graph.lazy and like._shape == _shape(x):
        return full_like(like, fill)
    return (ones if fill else zeros)(_shape(x), _dtype(x), like)


def _as_values(x, dtype):
    """A cotangent or tangent the user gave, as an array of `dtype` (a Dask array stays lazy)."""
    return as_dtype(x, dtype) if is_foreign(x) else np.asarray(x, dtype=dtype)


def _unbox(x, level):
    return x._value if isinstance(x, Tensor) and x._level == level else x


def _is_index(n):
    return isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))


def _function(f, where):
    if not callable(f):
        raise user_error(TypeError, where, f"expects a function, got {type(f).__name__}")


def _checked(f, argnums, where, name="argnums"):
    """`f` and its argnums, checked where the transform is made (as JAX does): `f` callable, argnums an int or
    a tuple (or list) of ints, NumPy's included, a bool refused. The argnums come back as an int or a tuple."""
    _function(f, where)
    if _is_index(argnums):
        return int(argnums)
    if isinstance(argnums, (tuple, list)) and all(_is_index(n) for n in argnums):
        return tuple(int(n) for n in argnums)
    raise user_error(TypeError, where, f"{name} must be an int or a tuple of ints, got {type(argnums).__name__} "
                     f"{argnums!r}")


def _normalize_argnums(argnums, nargs, where):
    """(whether argnums is one int, the argument positions) for a call with `nargs` arguments: each in range
    (negative ones count from the end) and none twice (its gradient would be returned twice, the first
    one lost: refused)."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else argnums
    for n in nums:
        if not -nargs <= n < nargs:
            raise user_error(ValueError, where, f"argnums {argnums} is out of range for a function called with "
                             f"{nargs} positional argument(s)")
    positions = tuple(n % nargs for n in nums)
    if len(set(positions)) != len(positions):
        raise user_error(ValueError, where, f"argnums {argnums} names an argument more than once (for a function "
                         f"called with {nargs} positional argument(s))")
    return single, positions


def _widened(got, want):
    """Whether a cotangent of dtype `got` for an input of dtype `want` is the input's type promoted (float64 for
    float32, complex for complex64, real for complex): cast back to `want`, not refused."""
    if got == want or want.kind not in "fc":
        return False
    return (want.kind == "c" and got.kind != "c") or (got.kind == want.kind and np.can_cast(want, got))


def _finish_ct(ct, original, like_value):
    """A cotangent or tangent as the user receives it: same kind as the input they passed."""
    if ct is None:
        ct = _filled_like(like_value, 0)
    elif _widened(_dtype(ct), _dtype(like_value)):
        # a complex input's gradient is complex; a float32 input's is float32 though its use promoted it
        # (float32 * float64 data), as PyTorch and JAX cast a gradient back to its input's dtype. (A narrower
        # or complex gradient for a real input is a rule's mistake, left for gradcheck to see.)
        ct = astype(ct, _dtype(like_value))
    if type(original) is Tensor and original._level == 0:
        return ct if isinstance(ct, Tensor) else _leaf(ct if is_foreign(ct) else np.asarray(ct), False)
    return ct.copy() if isinstance(ct, np.ndarray) and not ct.flags.writeable else ct


class _Traced:
    """Runs `f` with some arguments boxed at a fresh level (shared by the reverse transforms)."""

    def __init__(self, f, args, argnums, where, kwargs=None):
        self.level = _next_level()
        self.args = list(args)
        self.boxes = []  # per argnum: (treedef, [(original leaf, box)])
        for n in argnums:
            leaves, treedef = tree_flatten(self.args[n])
            pairs = [(leaf, _leaf(_differentiable_input(leaf, where), True, self.level)) for leaf in leaves]
            self.boxes.append((treedef, pairs))
            self.args[n] = tree_unflatten(treedef, [box for _, box in pairs])
        with enable_grad():
            self.out = f(*self.args, **(kwargs or {}))

    def pull(self, out_leaves, cotangents):
        """Cotangents for every boxed argument, one pytree per argnum."""
        level = self.level
        roots, seeds = [], []
        for o, ct in zip(out_leaves, cotangents):
            if isinstance(o, Tensor) and o._level == level and o._requires_grad:
                roots.append(o)
                seeds.append(ct)
        with enable_grad():
            leaves = reverse_sweep(roots, seeds, level) if roots else {}
        return tuple(
            tree_unflatten(treedef, [_finish_ct(leaves.get(box), orig, box._value) for orig, box in pairs])
            for treedef, pairs in self.boxes
        )


def _argnums(f, argnums, argnum, where):
    """JAX's `argnums`, or autograd's name for it, `argnum` (an int, or a tuple or list of ints), checked."""
    if argnum is None:
        return _checked(f, argnums, where)
    if not (_is_index(argnums) and argnums == 0):
        raise user_error(TypeError, where, "got both argnums and argnum (autograd's name for it): pass one")
    return _checked(f, argnum, where, "argnum")


def value_and_grad(f, argnums=0, has_aux=False, holomorphic=False, *, argnum=None):
    """Returns a function computing `(f(*args), gradient of f at args)`.

    With `has_aux=True` (JAX's), `f` returns a pair `(value, aux)`; the result is
    `((value, aux), gradient)`, `aux` not differentiated. With `holomorphic=True` (JAX's), `f` has
    complex inputs and a complex output and the gradient is its complex derivative f'(z) (see
    `holomorphic_grad`). `argnum` is autograd's name for `argnums`.

    >>> import numpy as np
    >>> value_and_grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    >>> value_and_grad(lambda x: ((x ** 2).sum(), x * 10), has_aux=True)(np.array([1.0, 2.0]))
    ((np.float64(5.0), array([10., 20.])), array([2., 4.]))
    """
    argnums = _argnums(f, argnums, argnum, "value_and_grad")
    if holomorphic:
        return _holomorphic_value_and_grad(f, argnums, has_aux, "value_and_grad")
    return _value_and_grad(f, argnums, has_aux, "value_and_grad")


def _value_and_grad(f, argnums, has_aux, where):
    """value_and_grad of checked argnums; `where` names the transform the user called in its errors."""

    def value_and_grad_f(*args, **kwargs):
        single, nums = _normalize_argnums(argnums, len(args), where)
        traced = _Traced(f, args, nums, "grad", kwargs)
        out = traced.out
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise user_error(TypeError, "grad", f"with has_aux=True the function must return a pair (value, "
                                 f"aux), got {type(out).__name__}" + (f" of {len(out)} items"
                                                                     if isinstance(out, (tuple, list)) else ""))
            out, aux = out
            aux_leaves, aux_def = tree_flatten(aux)
            aux = tree_unflatten(aux_def, [_unbox(leaf, traced.level) for leaf in aux_leaves])
        if isinstance(out, (list, tuple, dict)):
            raise user_error(TypeError, "grad", f"the function must return a scalar, got a {type(out).__name__}; use "
                             "dg.jacobian or dg.vjp for other outputs")
        check_numeric(out, "grad", "the function's output", real_float=True)
        if int(np.prod(_shape(out))) != 1:
            raise user_error(TypeError, "grad", f"the function must return a scalar (one element), got shape "
                             f"{_shape(out)}; use dg.jacobian or dg.vjp for other outputs")
        grads = traced.pull([out], [_filled_like(out, 1)])
        value = _unbox(out, traced.level)
        return (value, aux) if has_aux else value, (grads[0] if single else grads)

    _name(value_and_grad_f, "value_and_grad", f)
    return value_and_grad_f


def grad(f, argnums=0, has_aux=False, holomorphic=False, *, argnum=None):
    """Returns a function computing the gradient of scalar-valued `f` (with `has_aux=True`, JAX's: `f`
    returns `(value, aux)` and the result is `(gradient, aux)`; with `holomorphic=True`, JAX's: the complex
    derivative f'(z) of a holomorphic `f`, see `holomorphic_grad`). `argnum` is autograd's name for
    `argnums`.

    Results are NumPy arrays for array inputs and Tensors for Tensor inputs, so
    transforms nest:

    >>> import numpy as np
    >>> grad(lambda x: x ** 3)(2.0)
    np.float64(12.0)
    >>> grad(grad(lambda x: x ** 3))(2.0)
    np.float64(12.0)
    >>> grad(lambda z: z ** 2, holomorphic=True)(1.0 + 2.0j)
    np.complex128(2+4j)
    """
    argnums = _argnums(f, argnums, argnum, "grad")
    if holomorphic:
        vg = _holomorphic_value_and_grad(f, argnums, has_aux, "grad")
    else:
        vg = _value_and_grad(f, argnums, has_aux, "grad")

    def grad_f(*args, **kwargs):
        value, gradient = vg(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    _name(grad_f, "grad", f)
    return grad_f


def holomorphic_grad(f, argnums=0):
    """The complex derivative f'(z) of a holomorphic `f` with complex input and output (HIPS
    autograd's `holomorphic_grad`, JAX's `grad(f, holomorphic=True)`): the gradient of Re(f), which
    the Cauchy-Riemann equations make f'(z). A real input or a real output is refused, as JAX does
    (f'(x) at a real x needs complex tangents).

    >>> holomorphic_grad(lambda z: z * (1.0 + 0.2j))(1.0 + 0.0j)
    np.complex128(1+0.2j)
    """
    vg = _holomorphic_value_and_grad(f, _checked(f, argnums, "holomorphic_grad"), False, "holomorphic_grad")

    def holomorphic_grad_f(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    _name(holomorphic_grad_f, "holomorphic_grad", f)
    return holomorphic_grad_f


def _complex_inputs(args, argnums, where):
    """Refuses a real differentiated input of a holomorphic transform, as JAX does."""
    _, nums = _normalize_argnums(argnums, len(args), where)
    for n in nums:
        for leaf in tree_flatten(args[n])[0]:
            if _dtype(leaf).kind != "c":
                raise user_error(TypeError, where, f"argument {n} has dtype {_dtype(leaf)}: holomorphic "
                                 "differentiation needs complex inputs (pass x + 0j)")


def _complex_output(out, where):
    if _dtype(out).kind != "c":
        raise user_error(TypeError, where, f"the function's output has dtype {_dtype(out)}: holomorphic "
                         "differentiation needs complex outputs (without holomorphic=True, dg.grad differentiates "
                         "a real output)")


def _holomorphic_value_and_grad(f, argnums, has_aux, where):
    """value_and_grad of a holomorphic `f`: the gradient of Re(f), which the Cauchy-Riemann equations make
    f'(z), with f's complex value (and aux)."""

    def real_part(*args, **kwargs):
        out = f(*args, **kwargs)
        aux = None
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise user_error(TypeError, where, f"with has_aux=True the function must return a pair (value, "
                                 f"aux), got {type(out).__name__}")
            out, aux = out
        if isinstance(out, (list, tuple, dict)):
            raise user_error(TypeError, where, f"the function must return a scalar, got a {type(out).__name__}")
        _complex_output(out, where)
        return real(out), (out, aux)

    vg = _value_and_grad(real_part, argnums, True, where)

    def holomorphic_value_and_grad_f(*args, **kwargs):
        _complex_inputs(args, argnums, where)
        (_, (value, aux)), gradient = vg(*args, **kwargs)
        return ((value, aux) if has_aux else value), gradient

    _name(holomorphic_value_and_grad_f, "value_and_grad", f)
    return holomorphic_value_and_grad_f


def vjp(f, *primals):
    """Returns `(f(*primals), f_vjp)`; `f_vjp(cotangent)` gives one cotangent per primal.

    >>> import numpy as np
    >>> out, f_vjp = vjp(lambda x: x * 2, np.array([1.0, 2.0]))
    >>> f_vjp(np.array([1.0, 10.0]))
    (array([ 2., 20.]),)
    """
    _function(f, "vjp")
    traced = _Traced(f, primals, tuple(range(len(primals))), "vjp")
    out_leaves, out_def = tree_flatten(traced.out)
    for o in out_leaves:
        check_numeric(o, "vjp", "the function's outputs")
    level = traced.level

    def f_vjp(cotangent):
        ct_leaves, ct_def = tree_flatten(cotangent)
        if len(ct_leaves) != len(out_leaves):
            raise user_error(ValueError, "vjp", f"the cotangent has {len(ct_leaves)} parts, the output has "
                             f"{len(out_leaves)}")
        seeds = []
        for o, ct in zip(out_leaves, ct_leaves):
            check_numeric(ct, "vjp", "a cotangent")
            _check_complex_kind(ct, o, "vjp", "a cotangent")
            if not isinstance(ct, Tensor):
                ct = _as_values(ct, _dtype(o))
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
    _function(f, "jvp")
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
        check_numeric(t, "jvp", "a tangent")
        _check_complex_kind(t, value, "jvp", "a tangent")
        if not isinstance(t, Tensor):
            t = _as_values(t, _dtype(value))
        if _shape(t) != _shape(value):
            raise user_error(ValueError, "jvp", f"tangent shape {_shape(t)} does not match primal shape "
                             f"{_shape(value)}", value, t)
        duals.append(make_dual(value, t, level))
    out = f(*tree_unflatten(p_def, duals))
    out_leaves, out_def = tree_flatten(out)
    for o in out_leaves:
        check_numeric(o, "jvp", "the function's outputs")
    primal_out, tangent_out = [], []
    tensor_inputs = any(type(p) is Tensor and p._level == 0 for p in p_leaves)
    for o in out_leaves:
        if type(o) is Dual and o._level == level:
            primal_out.append(o._value)
            # a tangent computed from the tangents alone (a linear op's) is of their kind: a Tensor for Tensors
            tangent = o._tangent
            tangent_out.append(_leaf(tangent, False) if tensor_inputs and not isinstance(tangent, Tensor) else tangent)
        else:
            primal_out.append(o)
            zero = zeros(_shape(o), _dtype(o), _array_of(o))
            tangent_out.append(_leaf(zero, False) if tensor_inputs else zero)
    return tree_unflatten(out_def, primal_out), tree_unflatten(out_def, tangent_out)


def _input_leaves(x, where):
    """The leaves of one differentiated argument (an array, a number, a Tensor or a pytree of them),
    each checked to be a real floating-point value, and the description to rebuild it."""
    leaves, treedef = tree_flatten(x)
    values = [_differentiable_input(leaf, where) for leaf in leaves]
    for value in values:
        if has_unknown_size(_shape(value)):  # a Dask array's: its unit vectors cannot be made
            raise unknown_size_error(where, _shape(value))
    return values, treedef


def _basis(shape, dtype):
    """The unit vectors of an array of `shape`, stacked: shape (size,) + shape."""
    size = int(np.prod(shape))
    return np.eye(size, dtype=dtype).reshape((size, *shape))


def _block(batched, out_shape, in_shape, original, position):
    """One Jacobian block, shape out_shape + in_shape, from the vmapped rows (position 0: one per output
    element) or columns (-1: one per input element, batch axis first), as the input's kind."""
    if position == -1:
        batched = moveaxis(batched, 0, -1)
    block = reshape(batched, tuple(out_shape) + tuple(in_shape))
    if type(original) is Tensor and original._level == 0 and not isinstance(block, Tensor):
        return _leaf(block if is_dask(block) else np.asarray(block), False)
    return block


def jacobian(f, argnums=0, has_aux=False, holomorphic=False):
    """Reverse-mode Jacobian: shape `out.shape + in.shape`, one vjp per output element, all of them at
    once through `vmap` (the cotangents are the rows of an identity matrix). As JAX's `jacrev`, the
    outputs must be real, unless `holomorphic=True`: then inputs and outputs are complex and the result
    is the complex Jacobian df/dz of a holomorphic `f` (`has_aux=True` is refused).

    With a tuple `argnums` each result is a tuple (one per argument). Inputs and outputs may be
    pytrees (nested lists, tuples, dicts), as in `jax.jacrev`: the result is the outputs' tree
    whose leaves are the inputs' trees (of blocks `out_leaf.shape + in_leaf.shape`).

    >>> import numpy as np
    >>> jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    >>> jacobian(lambda p: {"y": p["a"] * p["b"]})({"a": np.ones(2), "b": np.full(2, 3.0)})["y"]["a"]
    array([[3., 0.],
           [0., 3.]])
    """
    argnums = _checked(f, argnums, "jacobian")
    _no_aux(has_aux, "jacobian")

    def jacobian_f(*args):
        single, nums = _normalize_argnums(argnums, len(args), "jacobian")
        if holomorphic:
            _complex_inputs(args, argnums, "jacobian")
        inputs = [_input_leaves(args[n], "jacobian") for n in nums]
        originals = [tree_flatten(args[n])[0] for n in nums]
        traced = _Traced(f, args, nums, "jacobian")
        out_leaves, out_def = tree_flatten(traced.out)
        for o in out_leaves:
            if holomorphic:
                _complex_output(o, "jacobian")
            else:
                check_numeric(o, "jacobian", "the function's outputs", real_float=True)
        results = []
        for out in out_leaves:
            shape, dtype = _shape(out), _dtype(out)
            basis = _basis(shape, dtype)
            if len(basis):
                rows = vmap(lambda ct, out=out: traced.pull([out], [ct]))(basis)
                rows = [tree_flatten(r)[0] for r in rows]
            else:  # an empty output: no rows
                rows = [[np.zeros((0, *_shape(leaf)), dtype) for leaf in leaves] for leaves, _ in inputs]
            per_arg = [tree_unflatten(treedef, [_block(r, shape, _shape(leaf), original, 0)
                                                for r, leaf, original in zip(rows[j], leaves, originals[j])])
                       for j, (leaves, treedef) in enumerate(inputs)]
            results.append(per_arg[0] if single else tuple(per_arg))
        return tree_unflatten(out_def, results)

    _name(jacobian_f, "jacobian", f)
    return jacobian_f


jacrev = jacobian  # JAX's name


def _no_aux(has_aux, where):
    if has_aux:
        raise user_error(TypeError, where, "has_aux=True is not supported: return the auxiliary values from a "
                         "second function, or use dg.vjp / dg.jvp with the pair")


def jacfwd(f, argnums=0, has_aux=False, holomorphic=False):
    """Forward-mode Jacobian: shape `out.shape + in.shape`, one jvp per input element, all of them at
    once through `vmap` (the tangents are the rows of an identity matrix).

    Results are arranged as in `jacobian` (pytrees of inputs and outputs too). As JAX's, the inputs
    must be real, unless `holomorphic=True`: then inputs and outputs are complex and the result is the
    complex Jacobian df/dz of a holomorphic `f` (along complex directions, a function that is not
    holomorphic has no such Jacobian: use dg.jvp). `has_aux=True` is refused.

    >>> import numpy as np
    >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    argnums = _checked(f, argnums, "jacfwd")
    _no_aux(has_aux, "jacfwd")
    return _jacfwd(f, argnums, "jacfwd", holomorphic)


def _jacfwd(f, argnums, where, holomorphic=False):
    """jacfwd of checked argnums; `where` names the transform the user called in its errors."""

    def jacfwd_f(*args):
        single, nums = _normalize_argnums(argnums, len(args), where)
        if holomorphic:
            _complex_inputs(args, argnums, where)
        else:
            for n in nums:
                for leaf in tree_flatten(args[n])[0]:
                    if _dtype(leaf).kind == "c":  # as JAX: complex unit tangents suit holomorphic functions only
                        raise user_error(TypeError, where, f"argument {n} has dtype {_dtype(leaf)}: {where} needs "
                                         "real inputs; for a holomorphic function pass holomorphic=True, for "
                                         "another function of complex inputs use dg.jvp along the directions "
                                         "you need")
        inputs = [_input_leaves(args[n], "jacfwd") for n in nums]
        originals = [tree_flatten(args[n])[0] for n in nums]
        columns = []  # per argument, per input leaf: the output tangent leaves, batched over the leaf's elements
        out = None
        for n, (leaves, treedef) in zip(nums, inputs):
            per_leaf = []
            for i, x in enumerate(leaves):

                def f_of_leaf(leaf, n=n, i=i, leaves=leaves, treedef=treedef):
                    merged = list(args)
                    merged[n] = tree_unflatten(treedef, leaves[:i] + [leaf] + leaves[i + 1:])
                    return f(*merged)

                basis = _basis(_shape(x), _dtype(x))
                if not len(basis):
                    per_leaf.append(None)
                    continue
                out, tangents = vmap(lambda t, g=f_of_leaf, x=x: jvp(g, (x,), (t,)), out_axes=(None, 0))(basis)
                per_leaf.append(tree_flatten(tangents)[0])
            columns.append(per_leaf)
        if out is None:  # every differentiated argument is empty
            out = f(*args)
        out_leaves, out_def = tree_flatten(out)
        if holomorphic:
            for o in out_leaves:
                _complex_output(o, where)
        results = []
        for o_index, o in enumerate(out_leaves):
            shape = _shape(o)
            per_arg = []
            for j, (leaves, treedef) in enumerate(inputs):
                blocks = []
                for i, leaf in enumerate(leaves):
                    col = columns[j][i]
                    col = np.zeros((0, *shape), _dtype(o)) if col is None else col[o_index]
                    blocks.append(_block(col, shape, _shape(leaf), originals[j][i], -1))
                per_arg.append(tree_unflatten(treedef, blocks))
            results.append(per_arg[0] if single else tuple(per_arg))
        return tree_unflatten(out_def, results)

    _name(jacfwd_f, "jacfwd", f)
    return jacfwd_f


def hessian(f, argnums=0, has_aux=False, holomorphic=False):
    """Hessian of scalar `f`, forward-over-reverse (`jacfwd(grad(f))`), as in JAX (with `holomorphic=True`,
    of a holomorphic `f`: the second complex derivative; `has_aux=True` is refused).

    >>> import numpy as np
    >>> hessian(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    argnums = _checked(f, argnums, "hessian")
    _no_aux(has_aux, "hessian")
    if holomorphic:
        vg = _holomorphic_value_and_grad(f, argnums, False, "hessian")
    else:
        vg = _value_and_grad(f, argnums, False, "hessian")

    def gradient(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    h = _jacfwd(gradient, argnums, "hessian", holomorphic)
    _name(h, "hessian", f)
    return h


def elementwise_grad(f, argnum=0):
    """HIPS autograd's `elementwise_grad`: the gradient of `sum(f(x))`, which for an elementwise `f` is
    the derivative of each output element by its own input element (one reverse pass, any shape).

    >>> import numpy as np
    >>> elementwise_grad(lambda x: x ** 3)(np.array([1.0, 2.0, 3.0]))
    array([ 3., 12., 27.])
    """

    argnum = _checked(f, argnum, "elementwise_grad", "argnum")

    def summed(*args, **kwargs):
        return reduce_sum(f(*args, **kwargs))

    _name(summed, "sum", f)
    vg = _value_and_grad(summed, argnum, False, "elementwise_grad")

    def g(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    _name(g, "elementwise_grad", f)
    return g


def _name(wrapper, transform, f):
    wrapper.__name__ = f"{transform}({getattr(f, '__name__', 'f')})"
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__doc__ = f"{transform} of {getattr(f, '__name__', 'f')}"
    wrapper.__wrapped__ = f  # inspect.signature (and dg.compile's input names) see f's parameters


def vmap(f, in_axes=0, out_axes=0, axis_size=None):
    """Maps `f` over an axis of its arguments, as `jax.vmap`: `f` is written for one example and runs
    on all of them at once, through each op's batching rule (or, for an op without one, a loop over
    the examples).

    `in_axes`: an int (the mapped axis of every argument), None (not mapped: the same for every
    example), or a tuple with one entry per positional argument, each an int, None or a pytree
    matching that argument. `out_axes`: where the mapped axis goes in each output (None: an output
    that is the same for every example). Keyword arguments are mapped over axis 0. Composes with
    every transform and with `dg.compile`: `vmap(grad(loss), in_axes=(None, 0))(params, batch)`
    gives per-example gradients.

    >>> import numpy as np
    >>> vmap(lambda x: x.sum())(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([3., 7.])
    >>> vmap(lambda w, x: w @ x, in_axes=(None, 0))(np.eye(2) * 2, np.array([[1.0, 0.0], [0.0, 1.0]]))
    array([[2., 0.],
           [0., 2.]])
    """
    if not callable(f):
        raise user_error(TypeError, "vmap", f"expects a function, got {type(f).__name__}")

    def vmapped(*args, **kwargs):
        specs = _in_specs(in_axes, args)
        level = _next_level()
        arg_leaves, treedef = tree_flatten((args, kwargs))
        axes = _leaf_axes(specs, args)
        axes += [0] * (len(arg_leaves) - len(axes))  # keyword arguments: axis 0
        size = _batch_size(arg_leaves, axes, axis_size, treedef)
        boxed = []
        for leaf, axis in zip(arg_leaves, axes):
            if axis is None:
                # an unmapped array reaches f as an eager Tensor (a constant), as JAX makes every argument one of its
                # arrays: NumPy's own indexing would meet a mapped index (x[i]) and refuse it
                numeric = (type(leaf) is np.ndarray or is_foreign(leaf)) and leaf.dtype.kind in "biufc"
                boxed.append(_leaf(leaf, False) if numeric else leaf)
                continue
            # a Dask array stays lazy (np.asarray would compute it)
            value = leaf if isinstance(leaf, (Tensor, np.ndarray)) or is_dask(leaf) else np.asarray(leaf)
            axis = axis % len(_shape(value))
            boxed.append(_leaf(moveaxis(value, axis, 0) if axis else value, False, level, Batched))
        boxed_args, boxed_kwargs = tree_unflatten(treedef, boxed)
        out = f(*boxed_args, **boxed_kwargs)
        out_leaves, out_def = tree_flatten(out)
        spec_leaves = _leaf_axes_of(out_axes, out, "out_axes")
        # eager Tensors among the arguments: every output is a Tensor, one the same for every example included
        # (as PyTorch's vmap; arrays give arrays, as JAX gives its arrays)
        tensors = any(isinstance(leaf, Tensor) and leaf._level == 0 and not leaf._symbolic for leaf in arg_leaves)
        return tree_unflatten(out_def, [_unbatched(o, axis, level, size, tensors)
                                        for o, axis in zip(out_leaves, spec_leaves)])

    _name(vmapped, "vmap", f)
    return vmapped


def _in_specs(in_axes, args):
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple):
        if len(in_axes) != len(args):
            raise user_error(ValueError, "vmap", f"in_axes has {len(in_axes)} entries but the function was called "
                             f"with {len(args)} positional arguments; give one entry (an int, None or a pytree) per "
                             "argument")
        return in_axes
    if in_axes is not None and not isinstance(in_axes, int) or isinstance(in_axes, bool):
        raise user_error(TypeError, "vmap", f"in_axes must be an int, None, or a tuple of them (or of pytrees), got "
                         f"{type(in_axes).__name__}")
    return (in_axes,) * len(args)


def _leaf_axes(specs, args):
    return [axis for spec, arg in zip(specs, args) for axis in _leaf_axes_of(spec, arg, "in_axes")]


def _leaf_axes_of(spec, tree, what):
    """One axis (an int or None) per leaf of `tree`, from `spec`, a pytree prefix of it (JAX's rule)."""
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return [spec] * len(tree_flatten(tree)[0])
    if not isinstance(spec, (list, tuple, dict)):
        raise user_error(TypeError, "vmap", f"an entry of {what} must be an int, None, or a pytree of them, got "
                         f"{type(spec).__name__} {spec!r}")
    if isinstance(spec, dict) and isinstance(tree, dict):
        if set(spec) != set(tree):
            raise user_error(ValueError, "vmap", f"{what} has the keys {sorted(map(str, spec))} where the value has "
                             f"{sorted(map(str, tree))}")
        return [axis for key in tree for axis in _leaf_axes_of(spec[key], tree[key], what)]
    if isinstance(spec, (list, tuple)) and isinstance(tree, (list, tuple)) and not isinstance(tree, dict):
        if len(spec) != len(tree):
            raise user_error(ValueError, "vmap", f"{what} {spec!r} has {len(spec)} entries where the value has "
                             f"{len(tree)}")
        return [axis for s, t in zip(spec, tree) for axis in _leaf_axes_of(s, t, what)]
    raise user_error(ValueError, "vmap", f"{what} {spec!r} does not match the structure of the value (a "
                     f"{type(tree).__name__}): give an int, None, or a pytree of them shaped like the value")


def _batch_size(leaves, axes, axis_size, treedef):
    sizes = []
    for k, (leaf, axis) in enumerate(zip(leaves, axes)):
        if axis is None:
            continue
        shape = _shape(leaf)
        if has_unknown_size(shape):  # a Dask array's: neither the batch nor an example's shape is known
            raise unknown_size_error("vmap", shape)
        if not -len(shape) <= axis < len(shape) or not shape:
            raise user_error(ValueError, "vmap", f"in_axes asks to map argument leaf {k} (shape {tuple(shape)}) over "
                             f"axis {axis}, but it has only {len(shape)} axes")
        sizes.append((k, tuple(shape), axis, shape[axis % len(shape)]))
    if axis_size is not None and (isinstance(axis_size, bool) or not isinstance(axis_size, (int, np.integer))
                                  or axis_size < 0):
        raise user_error(TypeError if not isinstance(axis_size, (int, np.integer)) else ValueError, "vmap",
                         f"axis_size must be a non-negative int, got {axis_size!r}")
    if not sizes:
        if axis_size is None:
            raise user_error(ValueError, "vmap", "no argument is mapped (every in_axes entry is None); map at least "
                             "one, or give axis_size")
        return axis_size
    distinct = {n for *_, n in sizes}
    if len(distinct) > 1 or (axis_size is not None and distinct != {axis_size}):
        described = "; ".join(f"leaf {k} of shape {shape} has size {n} on axis {axis}" for k, shape, axis, n in sizes)
        if axis_size is not None:
            described += f"; axis_size is {axis_size}"
        raise user_error(ValueError, "vmap", f"the mapped axes must all have the same size, got: {described}")
    return sizes[0][3]


def _unbatched(o, axis, level, size, tensors):
    """An output of the mapped function with its examples on `axis` (None: one for all): an eager Tensor if
    `tensors` (the arguments held one), else an array where it is a constant Tensor (an unmapped argument's)."""
    if o is None:  # an empty pytree, as in JAX
        return None
    if isinstance(o, Tensor) and o._level == level:
        if axis is None:
            raise user_error(ValueError, "vmap", f"out_axes is None for an output that differs between examples "
                             f"(shape {o.shape} per example); give it an axis")
        value = o._value
    else:
        if not tensors and is_constant(o):
            o = o._value
        if axis is None:
            return _leaf(o if is_foreign(o) else np.asarray(o), False) if tensors and not isinstance(o, Tensor) else o
        value = o if isinstance(o, Tensor) or is_dask(o) else np.asarray(o)
        if size is None:  # a static graph's batch, of a size known only when it runs
            raise user_error(ValueError, "vmap", f"an output (shape {tuple(_shape(value))}) is the same for every "
                             "example, and the batch size is unknown until the graph runs, so it cannot be "
                             "broadcast along the batch; give it out_axes=None, or the placeholder a batch size")
        value = batch_broadcast(value, size)  # the same for every example
        if isinstance(value, np.ndarray):
            value = np.array(value)
    rank = len(_shape(value))
    if not -rank <= axis < rank:
        raise user_error(ValueError, "vmap", f"out_axes {axis} is out of range for an output of {rank} axes")
    axis %= rank
    if tensors and not isinstance(value, Tensor):
        value = _leaf(value, False)
    elif not tensors and is_constant(value):
        value = value._value
    return moveaxis(value, 0, axis) if axis else value
