"""In-place operations with PyTorch's rules: `t += u`, `t[idx] = v`, `add_ ... clamp_`, `t.data`.

An in-place op computes its result with the ordinary (out-of-place) op, checks it, and only then
writes it into the tensor's own array, so an error leaves the tensor as it was:

- under `no_grad()`, or when nothing involved requires grad, the values are written and nothing
  else changes (the optimizer's `p -= lr * p.grad`);
- a leaf that requires grad cannot be written while the graph is recorded (PyTorch's rule: its
  gradient would be lost);
- otherwise the write is recorded: the tensor becomes the result's node, and the node it was
  keeps a copy of the values it had, for the gradients that need them.

Every write bumps the version counter of the tensor's storage, so a backward pass through a node
that saved these values before the write raises instead of using the new ones. A static graph's
node or a transform's traced value cannot change: `+=` on one gives a new value bound to the name
(as in JAX), and the in-place methods raise.
"""

from __future__ import annotations

import copy

import numpy as np

from ._core.backends import as_dtype, is_dask
from ._core.errors import user_error
from ._core.ir import graph_state
from ._core.tensor import Tensor, _new, is_grad_enabled, mark_rebased, mark_written
from .ops import elementwise as ew
from .ops.shape import setitem

_NODE_SLOTS = ("op", "inputs", "attrs", "_requires_grad", "_code", "_line")


def _shadow(t):
    """A node standing for `t` as it was: its op and inputs, and a copy of its values."""
    old = _new(Tensor)
    for slot in _NODE_SLOTS:
        if hasattr(t, slot):
            setattr(old, slot, getattr(t, slot))
    old._value = t._value.copy()
    old._grad = None
    old._level = 0
    old._seq = t._seq
    prior = getattr(t, "_prior", None)
    if prior is not None:  # what t was before an earlier write: nodes recorded before that one find it here
        old._prior = prior
    version = getattr(t, "_write", None)
    if version is not None:  # the writes before this one, as of now: a node that saved t's values before an
        old._write = copy.copy(version)  # unrecorded one (under no_grad) refuses to read the copy, which holds them
    return old


def _store(t, result, name):
    """Writes `result`'s values into t's array, after checking they fit (shape, dtype, writable)."""
    value = result._value if isinstance(result, Tensor) else result
    target = t._value
    if is_dask(target):
        _rebind(t, value, name)
        return
    if is_dask(value):  # np.asarray would compute it, silently, one tensor at a time
        raise user_error(TypeError, name, "the result is a lazy Dask array: writing it into this tensor's NumPy "
                         "array would compute it here; compute the values first (one dask.compute for several "
                         "arrays, or .numpy())", t, value)
    value = np.asarray(value)
    if value.shape != target.shape:
        raise user_error(ValueError, name, f"the result has shape {value.shape}, but the tensor written in place has "
                         f"shape {target.shape}: an in-place operation cannot change a tensor's shape", t)
    if not np.can_cast(value.dtype, target.dtype, "same_kind"):
        raise user_error(TypeError, name, f"the result has dtype {value.dtype}, which cannot be written into a "
                         f"tensor of dtype {target.dtype} (NumPy's same_kind rule)", t)
    if type(target) is not np.ndarray:  # a NumPy scalar: immutable, so nothing else holds it
        t._value = target.dtype.type(value)
    elif not target.flags.writeable:
        raise user_error(ValueError, name, "the tensor's values are read-only (a broadcast view, or an array "
                         "that was given read-only): write into a copy", t)
    else:
        target[...] = value
    mark_written(t)


def _rebind(t, value, name):
    """A Dask value is never written in place (it is lazy): an op's result (a non-leaf, which no other tensor
    holds) is given the new lazy array instead (a leaf is refused by `in_place`). Nodes that saved the old
    array keep its values, so nothing needs the version counter."""
    shape, dtype = np.shape(value), np.result_type(value)
    if shape != t._value.shape:
        raise user_error(ValueError, name, f"the result has shape {shape}, but the tensor written in place has "
                         f"shape {t._value.shape}: an in-place operation cannot change a tensor's shape", t)
    if not np.can_cast(dtype, t._value.dtype, "same_kind"):
        raise user_error(TypeError, name, f"the result has dtype {dtype}, which cannot be written into a tensor of "
                         f"dtype {t._value.dtype} (NumPy's same_kind rule)", t)
    t._value = as_dtype(value if is_dask(value) else np.asarray(value), t._value.dtype)


def in_place(t, name, compute, *others):
    """`t` with the values compute(t, *others) written into it, under PyTorch's rules; returns `t`."""
    if t._level or t._symbolic:
        raise user_error(TypeError, name, "a static graph's node or a value traced by a transform cannot change in "
                         "place: use the out-of-place form (x = x + y, or dg.setitem(x, index, v) for x[index] = v)",
                         t)
    stack = graph_state.stack
    if stack and stack[-1].tracing is not None and (
            t._requires_grad or any(isinstance(o, Tensor) and o._symbolic for o in others)):
        raise user_error(TypeError, name, f"dg.compile traces {stack[-1].tracing}() once and then runs generated "
                         f"code: an in-place write to an eager tensor would happen once, while tracing, and never "
                         f"again. Update parameters with an optimiser's step() inside the compiled function, or "
                         f"write outside it", t)
    if t.op is None and is_dask(t._value):  # before anything runs
        raise user_error(TypeError, name, "cannot write into a Dask array in place: this leaf tensor's value is "
                         "lazy, and tensors sharing it (.detach(), .data) would not see the change; make a new "
                         "tensor instead (t = t + 1, not t += 1; t = dg.setitem(t, index, v), not t[index] = v)", t)
    recording = is_grad_enabled() and (
        t._requires_grad or any(isinstance(o, Tensor) and o._requires_grad for o in others))
    if recording and t._requires_grad and t.op is None:
        raise user_error(RuntimeError, name, "a leaf tensor that requires grad cannot be changed in place while the "
                         "graph is recorded (its gradient would be lost): write inside `with dg.no_grad():`, as in "
                         "PyTorch, or into .data", t)
    if not recording:
        _store(t, compute(t, *others), name)
        return t
    old = _shadow(t)
    result = compute(old, *others)
    _store(t, result, name)
    # t becomes the result's node, recorded after the write (its own values are the new ones); nodes
    # recorded before it that read t still mean `old`
    for slot in _NODE_SLOTS:
        if hasattr(result, slot):
            setattr(t, slot, getattr(result, slot))
    mark_rebased(t, old)
    return t


def _augmented(function, symbol, name):
    def method(self, other):
        if self._level or self._symbolic:  # immutable: the name is bound to a new value, as in JAX
            return function(self, other)
        return in_place(self, symbol, function, other)

    method.__name__ = method.__qualname__ = name
    return method


__iadd__ = _augmented(ew.add, "+=", "__iadd__")
__isub__ = _augmented(ew.subtract, "-=", "__isub__")
__imul__ = _augmented(ew.multiply, "*=", "__imul__")
__itruediv__ = _augmented(ew.divide, "/=", "__itruediv__")
__ipow__ = _augmented(ew.power, "**=", "__ipow__")


def _scaled(other, alpha):
    return other if alpha == 1 else other * alpha


def add_(self, other, alpha=1):
    """self += alpha * other, in place (PyTorch's `add_`); returns self."""
    return in_place(self, "add_", ew.add, _scaled(other, alpha))


def sub_(self, other, alpha=1):
    """self -= alpha * other, in place (PyTorch's `sub_`); returns self."""
    return in_place(self, "sub_", ew.subtract, _scaled(other, alpha))


def mul_(self, other):
    """self *= other, in place; returns self."""
    return in_place(self, "mul_", ew.multiply, other)


def div_(self, other):
    """self /= other, in place; returns self."""
    return in_place(self, "div_", ew.divide, other)


def _filled(x, value):
    # x[...] = value as NumPy assigns (broadcast, cast to x's dtype); the gradient to x is zero
    return setitem(x, Ellipsis, value)


def fill_(self, value):
    """Every element set to `value`, in place; returns self.

    >>> import dagrad as dg
    >>> dg.tensor([1.0, 2.0]).fill_(7.0)
    tensor([7., 7.])
    """
    return in_place(self, "fill_", _filled, value)


def zero_(self):
    """Every element set to zero, in place (`p.grad.zero_()`); returns self."""
    return in_place(self, "zero_", _filled, 0)


def copy_(self, src):
    """`src`'s values copied into self (broadcast and cast to self's dtype, as NumPy's `a[...] = src` and
    PyTorch's `copy_`); the gradient flows to src. Returns self."""
    return in_place(self, "copy_", _filled, src)


def clamp_(self, min=None, max=None):  # noqa: A002 (PyTorch's names)
    """Values limited to [min, max], in place; returns self."""
    if min is None and max is None:
        raise user_error(ValueError, "clamp_", "give min, max or both", self)
    return in_place(self, "clamp_", lambda x, lo, hi: ew.clip(x, lo, hi), min, max)


def __setitem__(self, index, value):
    """`t[index] = value`: NumPy's indexing and broadcasting, PyTorch's rules for gradients."""
    in_place(self, "t[index] = value", lambda x, v: setitem(x, index, v), value)


def _get_data(self):
    """The same values, cut from the graph (a detached tensor sharing the storage and its version
    counter): writes through it are not recorded, but a backward pass that needs the old values
    still raises."""
    return self.detach()


def _set_data(self, new):
    self.value = new


data = property(_get_data, _set_data)
