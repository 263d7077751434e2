"""HIPS autograd's `autograd.test_util` names, with its signatures: `check_grads(f, argnum=0,
modes=["fwd", "rev"], order=2)(*args)`, `combo_check`, `scalar_close`, `check_equivalent`.

`check_grads` is `dg.gradcheck` along one random direction per check, as autograd checks: the jvp
against central differences entry by entry, and <vjp(c), t> against <c, J t>, recursively up to
`order`, and each gradient in its input's vector space (dtype and shape: a complex gradient of a real
input is autograd's "Type mismatch"). A failure raises AssertionError worded as autograd's ("Derivative
(VJP) check of f failed ...").

>>> import dagrad.numpy as np
>>> check_grads(lambda x, y: np.sin(x) * y, argnum=(0, 1))(np.array([0.5, 1.0]), 2.0)
"""

from __future__ import annotations

from itertools import product

import numpy as np

from ._core.errors import user_error
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.tensor import Tensor
from .check import GradcheckError, gradcheck
from .vspace import vspace
from .wrap_util import get_name, unary_to_nary

__all__ = ["check_grads", "combo_check", "scalar_close", "check_equivalent"]

TOL = 1e-6
RTOL = 1e-6


def scalar_close(a, b):
    """autograd's closeness of two numbers: within 1e-6 absolutely or relatively (to |a + b|)."""
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def check_equivalent(x, y):
    """`x` and `y` are in the same vector space and agree along a random direction (autograd's test)."""
    x_vs, y_vs = vspace(x), vspace(y)
    if x_vs != y_vs:
        raise AssertionError(f"VSpace mismatch:\nx: {x_vs}\ny: {y_vs}")
    v = x_vs.randn()
    if not scalar_close(x_vs.inner_prod(x, v), x_vs.inner_prod(y, v)):
        raise AssertionError(f"Value mismatch:\nx: {x}\ny: {y}")


def _as_arrays(x):
    """Numbers among the leaves of `x` as arrays, so gradcheck keeps a container of numbers a container
    (it reads a bare list or tuple of numbers as one array, as NumPy does). Complex values pass unchanged."""
    if not isinstance(x, (list, tuple, dict)):
        return x
    leaves, treedef = tree_flatten(x)
    return tree_unflatten(treedef, [leaf if isinstance(leaf, (Tensor, np.ndarray)) else np.asarray(leaf)
                                    for leaf in leaves])


@unary_to_nary
def check_grads(f, x, modes=("fwd", "rev"), order=2):
    """Checks `f`'s derivatives at `x` in each of `modes` and every order up to `order`, along one
    random direction per check (`dg.gradcheck(..., directions=1)`)."""
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise user_error(ValueError, "check_grads", f"unknown mode {mode!r}; use 'fwd' and/or 'rev'")
    try:
        gradcheck(f, (_as_arrays(x),), modes=modes, order=order, directions=1, seed=np.random.randint(2 ** 31))
    except GradcheckError as err:
        name = (err.function or get_name(f)).replace(" of ", "_")
        kind = "VJP" if err.mode == "rev" else "JVP"
        raise AssertionError(f"Derivative ({kind}) check of {name} failed with arg {x}:\n{err}") from None


def combo_check(fun, *args, **kwargs):
    """`combo_check(fun, argnum, ...)(*lists_of_args, **lists_of_kwargs)`: `check_grads` at every
    combination of the given argument values and keyword values."""
    check = check_grads(fun, *args, **kwargs)

    def _combo_check(*args, **kwargs):
        choices = [[(key, value) for value in values] for key, values in kwargs.items()]
        for chosen_args in product(*args):
            for chosen_kwargs in product(*choices):
                check(*chosen_args, **dict(chosen_kwargs))

    return _combo_check
