"""Gradient checking against central differences, in reverse and forward mode, to any order: dagrad's
`gradcheck` (a few random directions per check, or whole Jacobians as PyTorch's with `full=True`) and
JAX's `check_grads` (one random direction per check, JAX's tolerances)."""

from __future__ import annotations

import numpy as np

from ._core.errors import printable, user_error
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.tensor import Tensor
from .ops.shape import concatenate, reshape
from .transforms import jacfwd, jacobian, jvp, vjp

_TRANSFORMS = {"rev": jacobian, "fwd": jacfwd}


class GradcheckError(AssertionError):
    """Raised by `gradcheck` when an analytic derivative disagrees with central differences; `function`
    names the function whose derivative failed (`vjp of f` at order 2) and `mode` is "rev" or "fwd"."""

    def __init__(self, message, function=None, mode=None):
        super().__init__(printable(message))  # the function's name is the user's: shown escaped
        self.function, self.mode = function, mode


def _as_float64(x):
    """x in float64, or complex128 if it is complex."""
    if isinstance(x, Tensor):
        x = x.numpy()
    return np.array(x, dtype=np.complex128 if np.iscomplexobj(x) else np.float64)


def _is_complex(arrays):
    return any(a.dtype.kind == "c" for a in arrays)


def _dtype_shape(x):
    """(dtype, shape) of an array, Tensor or Python number, without copying a Tensor's values."""
    x = x.numpy() if isinstance(x, Tensor) else x
    return np.result_type(x), np.shape(x)


def _type_mismatch(derivatives, references, what, names):
    """The first derivative whose dtype or shape is not its reference's (a gradient must live where its
    input does, a tangent where its output does: HIPS autograd's "Type mismatch"), as a message, or None.
    A complex derivative of a real value is the class this catches: its imaginary part is invisible to
    the pairing Re(<c, t>) the values are compared with. Integer and bool references are skipped."""
    for derivative, reference, name in zip(derivatives, references, names):
        (dtype, shape), (ref_dtype, ref_shape) = _dtype_shape(derivative), _dtype_shape(reference)
        if ref_dtype.kind not in "fc":
            continue
        if dtype != ref_dtype or tuple(shape) != tuple(ref_shape):
            return (f"Type mismatch: the {what} for {name} has dtype {dtype} and shape {tuple(shape)}, but {name} "
                    f"has dtype {ref_dtype} and shape {tuple(ref_shape)}")
    return None


def _pairing(cotangents, tangents):
    """<c, t> = Re(sum(c * t)): how a cotangent acts on a tangent (no conjugation, as JAX and HIPS
    autograd pair them), the dot product for real values."""
    return sum(np.real(np.dot(c.ravel(), t.ravel())) for c, t in zip(cotangents, tangents))


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
        outs = tree_flatten(f(*_unflattened(leaves, treedefs)))[0]
        if len(outs) == 1:
            return outs[0]
        return concatenate([reshape(o, (-1,)) for o in outs])

    flat_f.__name__ = getattr(f, "__name__", "f")
    return flat_f


def gradcheck(f, *args, eps=1e-6, atol=1e-6, rtol=1e-4, modes=("rev", "fwd"), order=1, full=False,
              directions=2, seed=0):
    """Checks `f`'s derivatives at `args` against central differences, in each of `modes`
    ("rev", "fwd") and at every order up to `order`. Returns True, or raises `GradcheckError`.

    By default (HIPS autograd's and JAX's method) each check draws `directions` random tangents
    t (seeded by `seed`): "fwd" compares `jvp` along t with the central difference along t entry
    by entry, "rev" compares <J^T c, t> from `vjp` with a random cotangent c against <c, J t> by
    differences. Higher orders check the functions (x, t) -> J t and (x, c) -> J^T c the same way
    (all four mode pairs at order 2), so no Jacobian is built and large inputs stay cheap. When a
    direction disagrees, the whole Jacobian of the failing function is compared (for inputs up to
    a few thousand entries) to name the worst entry. `full=True` compares whole Jacobians
    (`jacobian`, `jacfwd`) at every order instead, as PyTorch's gradcheck does.

    A mismatch is |analytic - numeric| > atol + rtol * |numeric|; the defaults catch a
    0.05% error in a float64 gradient of order one. Inputs are checked in float64. Every
    gradient must also have its input's dtype and shape, and every tangent its output's (HIPS
    autograd's "Type mismatch"): a complex gradient of a real input fails even when its real part,
    all that the pairing below sees, is right.

    `gradcheck(f, a, b)` checks `f(a, b)`; so does `gradcheck(f, (a, b))`, PyTorch's way of
    passing the inputs (a lone tuple, or a lone list holding arrays or Tensors, is the tuple of
    arguments, never stacked into one array). Arguments and outputs may be pytrees (nested
    lists, tuples, dicts) of arrays; a list of numbers is one 1-D array.

    Complex inputs and outputs are checked along complex directions (their real and imaginary
    parts are independent variables), with the pairing Re(sum(c * t)) that dagrad's cotangents
    follow (JAX's and autograd's convention); `full=True` is for real functions only.

    >>> import numpy as np
    >>> gradcheck(lambda x: x ** 3, np.array([1.0, 2.0]), order=2)
    True
    >>> gradcheck(lambda a, b: {"ab": a @ b, "a": [a]}, (np.ones((2, 3)), np.ones(3)), full=True)
    True
    """
    if len(args) == 1 and (isinstance(args[0], tuple) or isinstance(args[0], list) and any(
            isinstance(a, (Tensor, np.ndarray)) for a in args[0])):
        args = tuple(args[0])
    if isinstance(modes, str):
        modes = (modes,)
    for mode in modes:
        if mode not in ("rev", "fwd"):
            raise user_error(ValueError, "gradcheck", f"unknown mode {mode!r}; use 'rev' and/or 'fwd'")
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise user_error(ValueError, "gradcheck", f"order must be an integer >= 1, got {order!r}")
    if isinstance(directions, bool) or not isinstance(directions, (int, np.integer)) or directions < 1:
        raise user_error(ValueError, "gradcheck", f"directions must be an integer >= 1, got {directions!r}")
    trees = [_as_tree(a) for a in args]
    leaves = [leaf for tree_leaves, _ in trees for leaf in tree_leaves]
    names = [f"arg{i}" for i in range(len(args))] if all(t is None for _, t in trees) else _leaf_names(args)
    treedefs = [(len(tree_leaves), treedef) for tree_leaves, treedef in trees]
    out_leaves = [_as_float64(o) for o in tree_flatten(f(*_unflattened(leaves, treedefs)))[0]]
    if full:
        if _is_complex(leaves) or _is_complex(out_leaves):
            raise user_error(TypeError, "gradcheck", "full=True compares real Jacobians; a function with complex "
                             "inputs or outputs is checked along random directions (the default)")
        return _gradcheck(_flattened(f, treedefs), leaves, eps, atol, rtol, modes, order, names)

    def leaf_f(*xs):
        return f(*_unflattened(xs, treedefs))

    leaf_f.__name__ = getattr(f, "__name__", "f")
    check = _DirectionCheck(eps, atol, rtol, modes, directions, np.random.default_rng(seed))
    check.run(leaf_f, leaves, names, order)
    return True


def _unflattened(leaves, treedefs):
    it, args = iter(leaves), []
    for count, treedef in treedefs:
        items = [next(it) for _ in range(count)]
        args.append(items[0] if treedef is None else tree_unflatten(treedef, items))
    return args


def _as_tree(arg):
    """An argument's float64 (complex128) leaves and its pytree description (None for a plain array).
    A list or tuple of numbers (no arrays or Tensors inside) is one array, as NumPy reads it."""
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


def _flat_leaves(out):
    return [_as_float64(o).ravel() for o in tree_flatten(out)[0]]


def _mismatch(analytic, numeric, atol, rtol):
    """The index of the worst entry of `analytic` outside the tolerance around `numeric`, or None."""
    error = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
    if error.size and (np.nanmax(error, initial=-np.inf) > 0
                       or not np.array_equal(np.isfinite(analytic), np.isfinite(numeric))):
        return np.unravel_index(int(np.nanargmax(np.where(np.isnan(error), np.inf, error))), error.shape)
    return None


class _DirectionCheck:
    """gradcheck along random directions: for each order, the jvp and the vjp of the function
    against central differences along the same random tangents (so one difference serves both)."""

    _LOCATE_LIMIT = 4096  # the largest input (entries) whose Jacobian is built to name a wrong entry

    def __init__(self, eps, atol, rtol, modes, directions, rng):
        self.eps, self.atol, self.rtol, self.modes = eps, atol, rtol, modes
        self.directions, self.rng = directions, rng

    def _draw(self, like):
        """A random direction shaped like `like`, complex if it is (both parts random)."""
        x = self.rng.standard_normal(like.shape)
        return x + 1j * self.rng.standard_normal(like.shape) if like.dtype.kind == "c" else x

    def run(self, f, args, names, order):
        out_leaves, out_def = tree_flatten(f(*args))
        outs = [_as_float64(o) for o in out_leaves]
        if "rev" in self.modes:
            pull = vjp(f, *args)[1]
            cotangents = [self._draw(o) for o in outs]
            pulled = pull(tree_unflatten(out_def, cotangents))
            found = _type_mismatch(pulled, args, "gradient (vjp)", names)
            if found:
                raise GradcheckError(f"gradcheck of {f.__name__} (rev mode): {found}", f.__name__, "rev")
            pulled = [_as_float64(c).ravel() for c in pulled]
        for k in range(self.directions):
            tangents = [self._draw(a) for a in args]
            numeric = self._difference(f, args, tangents)
            if "fwd" in self.modes:
                pushed = tree_flatten(jvp(f, tuple(args), tuple(tangents))[1])[0]
                found = _type_mismatch(pushed, out_leaves, "tangent (jvp)", [f"out{i}" for i in range(len(outs))])
                if found:
                    raise GradcheckError(f"gradcheck of {f.__name__} (fwd mode): {found}", f.__name__, "fwd")
                analytic = [_as_float64(t).ravel() for t in pushed]
                for i, (a, n) in enumerate(zip(analytic, numeric)):
                    worst = _mismatch(a, n, self.atol, self.rtol)
                    if worst is not None:
                        self._fail(f, args, names, "fwd", f"the jvp along random tangent {k} gives "
                                   f"out{i}[{worst[0]}] = {a[worst]!r} but central differences {n[worst]!r}")
            if "rev" in self.modes:
                exact = _pairing(pulled, tangents)
                approx = _pairing(cotangents, numeric)
                if _mismatch(np.array([exact]), np.array([approx]), self.atol, self.rtol) is not None:
                    self._fail(f, args, names, "rev", f"<vjp(c), t> along random tangent {k} is {exact!r} but "
                               f"<c, J t> by central differences {approx!r}")
        if order > 1:
            self._higher(f, args, names, order, outs, out_def)

    def _higher(self, f, args, names, order, outs, out_def):
        n = len(args)
        if "fwd" in self.modes:
            def f_jvp(*xs):
                return jvp(f, xs[:n], xs[n:])[1]

            f_jvp.__name__ = f"jvp of {f.__name__}"
            tangents = [self._draw(a) for a in args]
            self.run(f_jvp, [*args, *tangents], [*names, *(f"tangent of {m}" for m in names)], order - 1)
        if "rev" in self.modes:
            def f_vjp(*xs):
                return vjp(f, *xs[:n])[1](tree_unflatten(out_def, list(xs[n:])))

            f_vjp.__name__ = f"vjp of {f.__name__}"
            cotangents = [self._draw(o) for o in outs]
            self.run(f_vjp, [*args, *cotangents], [*names, *(f"cotangent{i}" for i in range(len(outs)))], order - 1)

    def _difference(self, f, args, tangents):
        plus = _flat_leaves(f(*[a + self.eps * t for a, t in zip(args, tangents)]))
        minus = _flat_leaves(f(*[a - self.eps * t for a, t in zip(args, tangents)]))
        with np.errstate(invalid="ignore"):
            return [np.where(p == m, 0.0, p - m) / (2 * self.eps) for p, m in zip(plus, minus)]

    def _fail(self, f, args, names, mode, found):
        message = f"gradcheck of {f.__name__} ({mode} mode): {found} (atol={self.atol}, rtol={self.rtol})"
        if sum(a.size for a in args) <= self._LOCATE_LIMIT and not _is_complex(args):
            try:  # the whole Jacobian names the worst entry
                _gradcheck(_flattened(f, [(1, None)] * len(args)), args, self.eps, self.atol, self.rtol,
                           (mode,), 1, names)
            except GradcheckError as err:
                raise GradcheckError(f"{message}; the worst entry: {str(err).split(': ', 1)[1]}", f.__name__,
                                     mode) from None
        raise GradcheckError(message, f.__name__, mode)


def _gradcheck(f, args, eps, atol, rtol, modes, order, names):
    numeric = numerical_jacobian(f, args, eps)
    name = getattr(f, "__name__", "f")
    for mode in modes:
        analytic = _TRANSFORMS[mode](f, argnums=tuple(range(len(args))))(*args)
        for i, (a, n) in enumerate(zip(analytic, numeric)):
            if np.iscomplexobj(a.numpy() if isinstance(a, Tensor) else a):
                raise GradcheckError(f"gradcheck of {name} ({mode} mode): Type mismatch: the Jacobian with respect "
                                     f"to {names[i]} is complex, but the function and {names[i]} are real", name, mode)
            a = _as_float64(a).reshape(n.shape)
            worst = _mismatch(a, n, atol, rtol)
            if worst is not None:
                raise GradcheckError(
                    f"gradcheck of {name} ({mode} mode): d out[{worst[0]}] / d {names[i]}[{worst[1]}] is "
                    f"{a[worst]!r} analytically but {n[worst]!r} by central differences "
                    f"(atol={atol}, rtol={rtol})", name, mode)
    if order > 1:
        for mode in modes:
            _gradcheck(_flat_derivative(f, len(args), mode), args, eps, atol, rtol, modes, order - 1, names)
    return True


# -- JAX's check_grads: each derivative checked in one random direction against central differences
_CHECK_GRADS_EPS = 1e-4
# JAX's default tolerances of a gradient check (jax.test_util), by dtype
_GRADIENT_TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
                       np.dtype(np.complex64): 2e-3, np.dtype(np.complex128): 1e-5}


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
        if x.dtype.kind == "c":  # both parts random: a complex direction
            return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
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
    """The pairing Re(sum(x * y)) of two pytrees (a cotangent acting on a tangent, without conjugation,
    as dagrad's and JAX's vjps pair them), in their precision (float32 is compared with float32's tolerance)."""
    total = None
    for x, y in zip(tree_flatten(xs)[0], tree_flatten(ys)[0]):
        term = np.real(np.dot(_array(x).ravel(), _array(y).ravel()))
        total = term if total is None else total + term
    return np.asarray(0.0 if total is None else total)


def _check_jvp(f, args, atol, rtol, eps, err_msg):
    tangents = _tree_map(_random_like(np.random.default_rng(0)), args)
    out, tangent_out = jvp(f, args, tangents)
    out_leaves = tree_flatten(out)[0]
    found = _type_mismatch(tree_flatten(tangent_out)[0], out_leaves, "tangent",
                           [f"output leaf {i}" for i in range(len(out_leaves))])
    if found:
        raise AssertionError(f"{err_msg}: {found}")
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
    arg_leaves = tree_flatten(args)[0]
    found = _type_mismatch(tree_flatten(cotangent_out)[0], arg_leaves, "cotangent",
                           [f"argument leaf {i}" for i in range(len(arg_leaves))])
    if found:
        raise AssertionError(f"{err_msg}: {found}")
    # <J t, c> by differences against <t, J^T c> by the vjp
    _check_close(_inner(tangents, cotangent_out), _inner(tangent_out, cotangent), atol, rtol,
                 f"{err_msg} cotangent projection")


def check_grads(f, args, order, modes=("fwd", "rev"), eps=None, atol=None, rtol=None):
    """JAX's `jax.test_util.check_grads`: checks `f(*args)`'s derivatives up to `order` against central
    differences, in forward mode ("fwd": `jvp`) and/or reverse mode ("rev": `vjp`), each in one random
    (seeded) direction, so large inputs stay cheap. Raises AssertionError on a mismatch.

    `args` is the tuple of arguments (pytrees allowed). `eps` defaults to 1e-4 and `atol`/`rtol` to
    JAX's per-dtype tolerances (1e-5 for float64, 2e-3 for float32), scaled by the size of what is
    compared, as in JAX; either may be a number or a {dtype: tolerance} dict. A cotangent must have its
    argument's dtype and shape, a tangent its output's (a complex gradient of a real argument fails).
    `dg.gradcheck` compares whole Jacobians instead.

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
