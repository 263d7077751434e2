"""Anomaly mode: `with dg.detect_anomaly():` the first NaN or Inf raises, naming the op.

Off, it costs one check of a flag per op. On, every eager result and every gradient the
reverse sweep computes is checked: the first non-finite one raises `FloatingPointError` naming
the op, the user's line that ran it, and the input concerned (forward: whether an input already
was non-finite; backward: the gradient with respect to which input). Generated code (static
graphs, `dg.compile`) is not checked.
"""

from __future__ import annotations

import threading

import numpy as np

from .errors import location, printable, user_line
from .op import set_anomaly_checks
from .tensor import Tensor, is_symbolic

__all__ = ["detect_anomaly", "is_anomaly_enabled"]


class _Local(threading.local):
    depth = 0


_local = _Local()
_lock = threading.Lock()
_active = 0  # contexts open in any thread: the checks are on (for every thread) while this is positive


def is_anomaly_enabled():
    return _local.depth > 0


class detect_anomaly:
    """Context manager: the first NaN or Inf in a forward or backward computation raises.

    >>> import dagrad as dg, numpy as np
    >>> x = dg.tensor([1.0, 0.0], requires_grad=True)
    >>> with dg.detect_anomaly(), np.errstate(divide="ignore"):
    ...     y = dg.log(x)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    FloatingPointError: detect_anomaly: log produced -inf (element 1) from finite inputs, at ...
    """

    def __enter__(self):
        global _active
        with _lock:
            _active += 1
            set_anomaly_checks(True, check_forward, check_gradient)
        _local.depth += 1
        return self

    def __exit__(self, *exc):
        global _active
        _local.depth -= 1
        with _lock:
            _active -= 1
            set_anomaly_checks(_active > 0, check_forward, check_gradient)


def _first_bad(value):
    """(' (element i)', value) of the first non-finite element, or None (also for a symbolic value)."""
    if is_symbolic(value):
        return None
    while isinstance(value, Tensor):
        value = value._value
    arr = np.asarray(value)
    if arr.dtype.kind not in "fc":
        return None
    bad = ~np.isfinite(arr)
    if not bad.any():
        return None
    if not arr.ndim:
        return "", arr[()]
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), arr.shape))
    return f" (element {index[0] if len(index) == 1 else index})", arr[index]


def check_forward(op, out, inputs):
    found = _first_bad(out) if _local.depth else None
    if found is None:
        return
    element, value = found
    already = [k for k, a in enumerate(inputs) if _first_bad(a) is not None]
    cause = "from finite inputs" if not already else f"because input {already[0]} was already non-finite"
    raise FloatingPointError(printable(f"detect_anomaly: {op.name} produced {value}{element} {cause}, at "
                                       f"{user_line()}"))


def check_gradient(node, k, ct):
    """Called by the reverse sweep for each cotangent it computes, while anomaly mode is on."""
    found = _first_bad(ct) if _local.depth else None
    if found is None:
        return
    element, value = found
    raise FloatingPointError(printable(
        f"detect_anomaly: the gradient of {node.op.name} with respect to its input {k} is {value}{element}; "
        f"the {node.op.name} was run at {location(node) or 'an unknown line'} (backward called at {user_line()})"
    ))
