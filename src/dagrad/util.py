"""HIPS autograd's `autograd.util` names: `quick_grad_check`, deprecated there in favour of
`autograd.test_util.check_grads` (dagrad's `dagrad.test_util.check_grads`), and `subvals`.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     quick_grad_check(lambda x, y: x ** 2 + y, 1.5, (2.0,))
>>> caught[0].category.__name__
'DeprecationWarning'
"""

from __future__ import annotations

import warnings

from .test_util import check_grads

__all__ = ["quick_grad_check", "subvals"]


def subvals(x, ivs):
    """The tuple `x` with the items at the indices `i` replaced by `v`, for `(i, v)` in `ivs`.

    >>> subvals((1, 2, 3), [(0, 9)])
    (9, 2, 3)
    """
    items = list(x)
    for i, v in ivs:
        items[i] = v
    return tuple(items)


def quick_grad_check(fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-4, rtol=1e-4, atol=1e-6, rs=None):
    """Checks the gradient of `fun(arg0, *extra_args, **kwargs)` in `arg0` (reverse mode, first order),
    with autograd's deprecation warning; `verbose`, `eps`, `rtol`, `atol` and `rs` are ignored, as there."""
    warnings.warn("quick_grad_check is deprecated (as in autograd): use dagrad.test_util.check_grads",
                  DeprecationWarning, stacklevel=2)
    check_grads(lambda x: fun(x, *extra_args, **(kwargs or {})), modes=["rev"], order=1)(arg0)
