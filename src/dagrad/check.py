"""Gradient checking against central differences, in reverse and forward mode, to any order: dagrad's
`gradcheck` (whole Jacobians, as PyTorch's) and JAX's `check_grads` (one random direction per check)."""

from __future__ import annotations

import numpy as np

from ._core.errors import user_error
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.tensor import Tensor
from .ops.shape import concatenate, reshape
from .transforms import jacfwd, jacobian, jvp, vjp

_TRANSFORMS = {"rev": jacobian, "fwd": jacfwd}


class GradcheckError(AssertionError):
    """Raised by `gradcheck` when an analytic derivative disagrees with central differences."""


def _as_float64(x):
    if isinstance(x, Tensor):
        x = x.numpy()
    return np.array(x, dtype=np.float64)


def _flat_output(f, args):
    return _as_float64(f(*args)).ravel()


def numerical_jacobian(f, args, eps=1e-6):
    """Central-difference Jacobians of `f`, one (out.size, arg.size) matrix per argument."""
    args = [_as_float64(a) for a in args]
    jacobians = []
    for i, x in enumerate(args):
        columns = []
        for k in range(x.size):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[i].flat[k] += eps
            minus[i].flat[k] -= eps
            columns.append((_flat_output(f, plus) - _flat_output(f, minus)) / (2 * eps))
        jacobians.append(np.stack(columns, axis=1) if columns else np.zeros((_flat_output(f, args).size, 0)))
    return jacobians


def _flat_derivative(f, nargs, mode):
    """The derivative of `f` in one mode, as a function returning one flat vector."""
    def derivative(*args):
        parts = _TRANSFORMS[mode](f, argnums=tuple(range(nargs)))(*args)
        flat = [reshape(p, (-1,)) for p in parts]
        return concatenate(flat) if len(flat) > 1 else flat[0]

    derivative.__name__ = f"d{getattr(f, '__name__', 'f')}[{mode}]"
    return derivative


def _leaf_names(args):
    """'arg0', or 'arg0["w"]' / 'arg1[0]' for the leaves of pytree arguments, in flattening order."""
    names = []
    for i, a in enumerate(args):
        def walk(tree, path):
            if isinstance(tree, dict):
                for key, value in tree.items():
                    walk(value, f"{path}[{key!r}]")
            elif isinstance(tree, (list, tuple)):
                for k, value in enumerate(tree):
                    walk(value, f"{path}[{k}]")
            else:
                names.append(path)
        walk(a, f"arg{i}")
    return names


def _flattened(f, treedefs):
    """`f` of pytree arguments returning a pytree, as a function of the arguments' leaves returning
    one flat vector (what the Jacobians are of)."""
    def flat_f(*leaves):
        it, args = iter(leaves), []
        for count, treedef in treedefs:
            args.append(tree_unflatten(treedef, [next(it) for _ in range(count)]))
        outs = tree_flatten(f(*args))[0]
        if len(outs) == 1:
            return outs[0]
        return concatenate([reshape(o, (-1,)) for o in outs])

    flat_f.__name__ = getattr(f, "__name__", "f")
    return flat_f


def gradcheck(f, *args, eps=1e-6, atol=1e-5, rtol=1e-3, modes=("rev", "fwd"), order=1):
    """Checks `f`'s derivatives at `args` against central differences.

    Checks the Jacobian for every argument in each of `modes` ("rev": `jacobian`, "fwd":
    `jacfwd`), with `order=2` also their derivatives (like HIPS autograd's `check_grads`).
    Returns True, or raises `GradcheckError` naming the worst entry.

    `gradcheck(f, a, b)` checks `f(a, b)`; so does `gradcheck(f, (a, b))`, PyTorch's way of
    passing the inputs (a lone tuple, or a lone list holding arrays or Tensors, is the tuple of
    arguments, never stacked into one array). Arguments and outputs may be pytrees (nested
    lists, tuples, dicts) of arrays; a list of numbers is one 1-D array.

    >>> import numpy as np
    >>> gradcheck(lambda x: x ** 3, np.array([1.0, 2.0]), order=2)
    True
    >>> gradcheck(lambda a, b: a @ b, (np.ones((2, 3)), np.ones(3)))
    True
    """
    if len(args) == 1 and (isinstance(args[0], tuple) or isinstance(args[0], list) and any(
            isinstance(a, (Tensor, np.ndarray)) for a in args[0])):
        args = tuple(args[0])
    trees = [_as_tree(a) for a in args]
    leaves = [leaf for tree_leaves, _ in trees for leaf in tree_leaves]
    names = None if all(treedef is None for _, treedef in trees) else _leaf_names(args)
    flat_f = _flattened(f, [(len(tree_leaves), treedef) for tree_leaves, treedef in trees])
    return _gradcheck(flat_f, leaves, eps, atol, rtol, modes, order, names)


def _as_tree(arg):
    """An argument's float64 leaves and its pytree description (None for a plain array). A list or
    tuple of numbers (no arrays or Tensors inside) is one array, as NumPy reads it."""
    if isinstance(arg, dict) or isinstance(arg, (list, tuple)) and _holds_arrays(arg):
        leaves, treedef = tree_flatten(arg)
        return [_as_float64(leaf) for leaf in leaves], treedef
    return [_as_float64(arg)], None


def _holds_arrays(tree):
    if isinstance(tree, dict):
        return True
    if isinstance(tree, (list, tuple)):
        return any(_holds_arrays(item) for item in tree)
    return isinstance(tree, (Tensor, np.ndarray))


def _gradcheck(f, args, eps, atol, rtol, modes, order, names):
    for mode in modes:
        if mode not in ("rev", "fwd"):
            raise user_error(ValueError, "gradcheck", f"unknown mode {mode!r}; use 'rev' and/or 'fwd'")
    numeric = numerical_jacobian(f, args, eps)
    name = getattr(f, "__name__", "f")
    for mode in modes:
        analytic = _TRANSFORMS[mode](f, argnums=tuple(range(len(args))))(*args)
        for i, (a, n) in enumerate(zip(analytic, numeric)):
            a = _as_float64(a).reshape(n.shape)
            error = np.abs(a - n) - (atol + rtol * np.abs(n))
            if error.size and (np.nanmax(error) > 0 or not np.all(np.isfinite(a) == np.isfinite(n))):
                worst = np.unravel_index(int(np.nanargmax(np.where(np.isnan(error), np.inf, error))), error.shape)
                arg = f"arg{i}" if names is None else names[i]
                raise GradcheckError(
                    f"gradcheck of {name} ({mode} mode): d out[{worst[0]}] / d {arg}[{worst[1]}] is "
                    f"{a[worst]!r} analytically but {n[worst]!r} by central differences "
                    f"(atol={atol}, rtol={rtol})"
                )
    if order > 1:
        for mode in modes:
            _gradcheck(_flat_derivative(f, len(args), mode), args, eps, atol, rtol, modes, order - 1, names)
    return True


# -- JAX's check_grads: each derivative checked in one random direction against central differences
_CHECK_GRADS_EPS = 1e-4
# JAX's default tolerances of a gradient check (jax.test_util), by dtype
_GRADIENT_TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}


def _tree_map(function, tree, *others):
    leaves, treedef = tree_flatten(tree)
    other_leaves = [tree_flatten(o)[0] for o in others]
    return tree_unflatten(treedef, [function(*items) for items in zip(leaves, *other_leaves)])


def _array(x):
    """A leaf as a NumPy array (an eager Tensor gives a copy of its values)."""
    return np.array(x.numpy()) if isinstance(x, Tensor) else np.asarray(x)


def _tolerance(tol, dtype):
    if tol is not None and not isinstance(tol, dict):
        return tol
    table = dict(_GRADIENT_TOLERANCE)
    table.update({np.dtype(k): v for k, v in (tol or {}).items()})
    return table.get(np.dtype(dtype), 0)


def _check_close(xs, ys, atol, rtol, err_msg):
    """Each leaf of `xs` close to the one of `ys`, with JAX's tolerances (scaled by the leaf's size)."""
    x_leaves, y_leaves = tree_flatten(xs)[0], tree_flatten(ys)[0]
    if len(x_leaves) != len(y_leaves):
        raise AssertionError(f"{err_msg}: {len(x_leaves)} values but {len(y_leaves)} expected")
    for a, b in zip(x_leaves, y_leaves):
        a, b = _array(a), _array(b)
        if a.shape != b.shape:
            raise AssertionError(f"{err_msg}: shape {a.shape} but {b.shape} expected")
        a_tol = max(_tolerance(atol, a.dtype), _tolerance(atol, b.dtype)) * a.size
        r_tol = max(_tolerance(rtol, a.dtype), _tolerance(rtol, b.dtype)) * b.size
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(a, b, atol=a_tol, rtol=r_tol, err_msg=err_msg)


def _random_like(rng):
    def draw(x):
        x = _array(x)
        return rng.standard_normal(x.shape).astype(x.dtype if x.dtype.kind == "f" else np.float64)

    return draw


def _numerical_jvp(f, args, tangents, eps):
    plus = _tree_map(lambda p, t: _array(p) + eps * t, args, tangents)
    minus = _tree_map(lambda p, t: _array(p) - eps * t, args, tangents)

    def difference(a, b):
        a, b = _array(a), _array(b)
        with np.errstate(invalid="ignore"):
            return np.where(a == b, 0, a - b) * (0.5 / eps)  # inf - inf counts as no change

    return _tree_map(difference, f(*plus), f(*minus))


def _inner(xs, ys):
    """The inner product of two pytrees, in their dtype (so float32 is compared with float32's tolerance)."""
    total = None
    for x, y in zip(tree_flatten(xs)[0], tree_flatten(ys)[0]):
        term = np.dot(_array(x).ravel(), _array(y).ravel())
        total = term if total is None else total + term
    return np.asarray(0.0 if total is None else total)


def _check_jvp(f, args, atol, rtol, eps, err_msg):
    tangents = _tree_map(_random_like(np.random.default_rng(0)), args)
    out, tangent_out = jvp(f, args, tangents)
    for o, t in zip(tree_flatten(out)[0], tree_flatten(tangent_out)[0]):
        if _array(o).dtype != _array(t).dtype:
            raise AssertionError(f"{err_msg}: the tangent has dtype {_array(t).dtype} but the output "
                                 f"{_array(o).dtype}")
    _check_close(out, f(*args), atol, rtol, f"{err_msg} primal")
    _check_close(tangent_out, _numerical_jvp(f, args, tangents, eps), atol, rtol, f"{err_msg} tangent")


def _check_vjp(f, args, atol, rtol, eps, err_msg):
    draw = _random_like(np.random.default_rng(0))
    out, f_vjp = vjp(f, *args)
    _check_close(out, f(*args), atol, rtol, f"{err_msg} primal")
    tangents = _tree_map(draw, args)
    tangent_out = _numerical_jvp(f, args, tangents, eps)
    cotangent = _tree_map(draw, out)
    cotangent_out = f_vjp(cotangent)
    # <J t, c> by differences against <t, J^T c> by the vjp
    _check_close(_inner(tangents, cotangent_out), _inner(tangent_out, cotangent), atol, rtol,
                 f"{err_msg} cotangent projection")


def check_grads(f, args, order, modes=("fwd", "rev"), eps=None, atol=None, rtol=None):
    """JAX's `jax.test_util.check_grads`: checks `f(*args)`'s derivatives up to `order` against central
    differences, in forward mode ("fwd": `jvp`) and/or reverse mode ("rev": `vjp`), each in one random
    (seeded) direction, so large inputs stay cheap. Raises AssertionError on a mismatch.

    `args` is the tuple of arguments (pytrees allowed). `eps` defaults to 1e-4 and `atol`/`rtol` to
    JAX's per-dtype tolerances (1e-5 for float64, 2e-3 for float32), scaled by the size of what is
    compared, as in JAX; either may be a number or a {dtype: tolerance} dict. `dg.gradcheck` compares
    whole Jacobians instead.

    >>> import numpy as np
    >>> check_grads(lambda x, y: np.sin(x) * y, (np.array([0.5, 1.0]), 2.0), order=2)
    """
    if not isinstance(args, (tuple, list)):
        raise user_error(TypeError, "check_grads", f"args must be the tuple of arguments, got "
                         f"{type(args).__name__} (for one argument x, pass (x,))")
    if isinstance(modes, str):
        modes = (modes,)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise user_error(ValueError, "check_grads", f"unknown mode {mode!r}; use 'fwd' and/or 'rev'")
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise user_error(ValueError, "check_grads", f"order must be an integer >= 1, got {order!r}")
    args = tuple(_tree_map(_array, tuple(args)))
    eps = eps or _CHECK_GRADS_EPS
    name = getattr(f, "__name__", "f")

    def check(f, args, order, what):
        if "fwd" in modes:
            fwd = f"JVP of {what}" if what else "JVP"
            _check_jvp(f, args, atol, rtol, eps, f"check_grads of {name}: {fwd}")
            if order > 1:
                check(lambda primals, tangents: jvp(f, primals, tangents), (args, args), order - 1, fwd)
        if "rev" in modes:
            rev = f"VJP of {what}" if what else "VJP"
            _check_vjp(f, args, atol, rtol, eps, f"check_grads of {name}: {rev}")
            if order > 1:
                def f_vjp(*primals):
                    out, pull = vjp(f, *primals)
                    return pull(out)

                check(f_vjp, args, order - 1, rev)

    check(f, args, order, "")
