"""Gradient checking against central differences, in reverse and forward mode, to any order."""

from __future__ import annotations

import numpy as np

from ._core.errors import user_error
from ._core.tensor import Tensor
from .ops.shape import concatenate, reshape
from .transforms import jacfwd, jacobian

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


def gradcheck(f, *args, eps=1e-6, atol=1e-5, rtol=1e-3, modes=("rev", "fwd"), order=1):
    """Checks `f`'s derivatives at `args` against central differences.

    Checks the Jacobian for every argument in each of `modes` ("rev": `jacobian`, "fwd":
    `jacfwd`), with `order=2` also their derivatives (like HIPS autograd's `check_grads`).
    Returns True, or raises `GradcheckError` naming the worst entry.

    >>> import numpy as np
    >>> gradcheck(lambda x: x ** 3, np.array([1.0, 2.0]), order=2)
    True
    """
    args = [_as_float64(a) for a in args]
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
                raise GradcheckError(
                    f"gradcheck of {name} ({mode} mode): d out[{worst[0]}] / d arg{i}[{worst[1]}] is "
                    f"{a[worst]!r} analytically but {n[worst]!r} by central differences "
                    f"(atol={atol}, rtol={rtol})"
                )
    if order > 1:
        for mode in modes:
            gradcheck(_flat_derivative(f, len(args), mode), *args, eps=eps, atol=atol, rtol=rtol,
                      modes=modes, order=order - 1)
    return True
