"""The eager Tensor, the forward-mode Dual, grad mode and the `tensor` constructor.

A Tensor is also a node of the graph IR: `op`, `inputs` and `attrs` say how it was computed (all None
for a leaf); shape and dtype come from its value. Its `_level` is 0 for eager tensors, a fresh number
for each transform (`grad`, `jvp`, ...) that boxes its inputs. An op dispatches on the highest level
among its arguments, so transforms nest without confusing their perturbations (as HIPS autograd, JAX).
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import weakref
from sys import _getframe

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
    to_numpy,
    unknown_size_error,
)
from .dtypes import default_complex, default_float
from .errors import _PACKAGE_DIR, code_line, user_error

__all__ = ["Tensor", "Dual", "tensor", "no_grad", "enable_grad", "is_grad_enabled"]


class _GradMode(threading.local):
    enabled = True  # class default: every new thread starts with grad mode on


_grad_mode = _GradMode()


def is_grad_enabled() -> bool:
    """Whether eager operations currently record the graph."""
    return _grad_mode.enabled


class _SetGradMode:
    """Context manager and decorator that sets grad mode (a subclass's `_mode`), restoring it on exit; as
    PyTorch's, a decorator with or without the call (`@dg.no_grad()`, `@dg.no_grad`)."""

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if func is None:
            return self
        if not callable(func):
            raise user_error(TypeError, cls.__name__, f"takes no argument but a function to decorate, got "
                             f"{type(func).__name__} (use `with dg.{cls.__name__}():` or `@dg.{cls.__name__}`)")
        return self(func)

    def __enter__(self):
        self._previous = _grad_mode.enabled
        _grad_mode.enabled = self._mode

    def __exit__(self, *exc):
        _grad_mode.enabled = self._previous

    def _fresh(self):
        """A context like this one, for one call of a decorated function (calls may nest or run in threads)."""
        return type(self)()

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return func(*args, **kwargs)

        return wrapper


class no_grad(_SetGradMode):
    """Operations inside do not record the graph (like `torch.no_grad`).

    >>> x = tensor([1.0, 2.0], requires_grad=True)
    >>> with no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    >>> @no_grad
    ... def double(t):
    ...     return t * 2
    >>> double(x).requires_grad
    False
    """

    _mode = False


class enable_grad(_SetGradMode):
    """Turns recording back on inside a `no_grad` block."""

    _mode = True


_new = object.__new__

# One counter orders everything the engine cares about in time: recorded nodes (their `_seq`)
# and in-place writes (see `mark_written`), so "written after it was saved" is one comparison.
next_seq = itertools.count(1).__next__


class _TraceGrads(threading.local):
    saved = None  # while dg.compile traces: {tensor: its .grad before the traced function changed it}


trace_grads = _TraceGrads()


def note_grad_change(t):
    """Remembers, while dg.compile traces, t's gradient from before the trace changed it: the trace
    restores it, and knows the function cleared it (so a call does not add to the gradient it finds)."""
    saved = trace_grads.saved
    if saved is not None and t not in saved:
        saved[t] = t._grad


class _Version:
    """A tensor's version counter (shared with its `detach()`es, which share its storage): how many
    in-place writes its values have had, and when and where the latest was made."""

    __slots__ = ("count", "seq", "code", "line")

    def __init__(self):
        self.count = self.seq = 0
        self.code = self.line = None

    def where(self):
        return "<unknown>" if self.code is None else code_line(self.code, self.line)


class _WriteClock:
    last = 0  # the sequence number of the latest in-place write to any tensor (0: none yet)


write_clock = _WriteClock()


def _version_of(t):
    version = getattr(t, "_write", None)
    if version is None:
        version = t._write = _Version()
    return version


# memory written in place: id of the array owning it -> (weak reference to that array, the _Version of
# the latest write). Views of one array share its memory but not its Tensor, so the engine looks here too.
_STORAGE_WRITES = {}


def _owner(value):
    if type(value) is not np.ndarray:
        return None
    base = value.base  # NumPy points a view's base at the array owning the memory
    return value if base is None else base if type(base) is np.ndarray else None


def storage_write(value):
    """The _Version of the latest in-place write into the memory of `value` (an array), or None."""
    owner = _owner(value)
    entry = None if owner is None else _STORAGE_WRITES.get(id(owner))
    return entry[1] if entry is not None and entry[0]() is owner else None


def _forget(ref, key):
    entry = _STORAGE_WRITES.get(key)
    if entry is not None and entry[0] is ref:
        del _STORAGE_WRITES[key]


def mark_written(t):
    """Records an in-place write to `t`'s values: bumps its version, and notes the time and the
    user's line, so that a backward pass through a node that saved `t` (or a view of its memory)
    before the write raises (as PyTorch's "modified by an inplace operation") instead of using
    the new values."""
    version = _version_of(t)
    version.count += 1
    version.seq = write_clock.last = next_seq()
    owner = _owner(t._value)
    if owner is not None:
        key = id(owner)
        entry = _STORAGE_WRITES.get(key)
        if entry is None or entry[0]() is not owner:  # the weak reference is made once per array
            entry = (weakref.ref(owner, functools.partial(_forget, key=key)), None)
        _STORAGE_WRITES[key] = (entry[0], version)
    frame = _getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is not None:
        version.code, version.line = frame.f_code, frame.f_lasti


def mark_rebased(t, was):
    """Records that a recorded in-place write made `t` the node of the write (`h *= 3`), where `was` stands
    for the node t was: nodes recorded before the write that read t find it here (autodiff._as_of), weakly,
    since the write's node holds it as an input. The write clock tells the reverse sweep to look (a Dask
    value is rebound rather than written, which mark_written does not see)."""
    t._prior = weakref.ref(was)
    t._seq = write_clock.last = next_seq()


class Tensor:
    """An n-dimensional array that records how it was computed.

    >>> x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> y = (x @ x.T).sum()
    >>> y.backward()
    >>> x.grad
    tensor([[ 8., 12.],
            [ 8., 12.]])
    """

    # _code/_line: where in the user's code a recorded node was made (see op._result);
    # _write: the version counter, made at the first in-place write (see mark_written);
    # _prior: set by a recorded in-place write, which makes the tensor the write's node: a weak reference
    # to the node it was, for the nodes recorded before the write (see autodiff._as_of)
    __slots__ = ("_value", "op", "inputs", "attrs", "_requires_grad", "_grad", "_level", "_seq", "_code", "_line",
                 "_write", "_prior", "__weakref__")
    __array_priority__ = 1000
    _symbolic = False  # True for the nodes of static graphs, which have no value

    def __init__(self, data, dtype=None, requires_grad=False):
        self._value = _as_array(data, dtype, "dg.Tensor", requires_grad)
        self.op = self.inputs = self.attrs = self._grad = None
        self._requires_grad = bool(requires_grad)
        self._level = 0
        self._seq = 0

    # -- identity: Tensors are graph nodes, hashed by identity like torch.Tensor
    __hash__ = object.__hash__

    # -- the array's facts
    @property
    def value(self):
        """The underlying NumPy array itself, not a copy, to write into in place (`.numpy()` reads).

        Handing it out counts as an in-place write (it bumps the version counter): a backward pass
        through an op that saved this tensor before `.value` was taken raises.

        >>> w = tensor([1.0, 2.0], requires_grad=True)
        >>> y = (w * w).sum()
        >>> w.value[...] = 0.0  # changes what y's backward would use
        >>> y.backward()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        RuntimeError: backward: ... was modified in place ...
        """
        if not self._level:
            mark_written(self)
        return self._value

    @value.setter
    def value(self, new):
        if self._level:
            raise user_error(TypeError, "Tensor.value", "a value traced by a transform cannot be set")
        current = self._value
        if new is current:  # `t.value -= x` wrote into the array itself and assigns it back
            return
        if is_dask(current):
            raise user_error(TypeError, "Tensor.value", "cannot write into a Dask array in place (it is lazy: its "
                             "values are computed when asked for); make a new tensor from the new values", self)
        if is_cupy(current):  # stays on the GPU: the new values must be there already (or be a number)
            arr = new._raw() if isinstance(new, Tensor) else new
            err = mixing_error("Tensor.value", (current, arr))
            if err is not None:
                raise err
            arr = np.asarray(arr, like=current)
        else:
            arr = new.numpy() if isinstance(new, Tensor) else np.asarray(new)
        if arr.shape != current.shape:
            raise user_error(ValueError, "Tensor.value", f"cannot set values of shape {arr.shape} into a tensor of "
                             f"shape {current.shape}", self)
        if not np.can_cast(arr.dtype, current.dtype, "same_kind"):
            raise user_error(TypeError, "Tensor.value", f"cannot set values of dtype {arr.dtype} into a tensor of "
                             f"dtype {current.dtype}", self)
        current[...] = arr
        mark_written(self)

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's values have had (as PyTorch's `t._version`)."""
        version = getattr(self, "_write", None)
        return 0 if version is None else version.count

    @property
    def grad(self):
        """The accumulated gradient: a Tensor of this tensor's shape and dtype, or None."""
        return self._grad

    @grad.setter
    def grad(self, new):
        if new is not None:
            if not isinstance(new, (Tensor, np.ndarray)) and not is_foreign(new):
                raise user_error(TypeError, "Tensor.grad", f"can be set to None or a Tensor or array of shape "
                                 f"{tuple(self.shape)}, got {type(new).__name__}")
            if is_symbolic(new):
                raise user_error(TypeError, "Tensor.grad", "got a static graph's node, which has no values until "
                                 "Session.run computes them; set the array that sess.run returns", new)
            shape, dtype = tuple(new.shape), new.dtype
            if shape != tuple(self.shape):
                raise user_error(ValueError, "Tensor.grad", f"the gradient has shape {shape}, but the tensor has "
                                 f"shape {tuple(self.shape)}", self)
            if dtype != self.dtype:
                raise user_error(TypeError, "Tensor.grad", f"the gradient has dtype {dtype}, but the tensor has "
                                 f"dtype {self.dtype}", self)
            raw = new._raw() if isinstance(new, Tensor) else new
            if is_cupy(raw) != is_cupy(self._value):  # the sum of the next backward would mix them
                raise user_error(TypeError, "Tensor.grad", f"the gradient is a {array_type_name(raw)}, but the "
                                 f"tensor holds a {array_type_name(self._value)}; move it with cupy.asarray(g) "
                                 "or g.get()", self, raw)
            if isinstance(new, np.ndarray):
                new = _leaf(np.array(new), False)
            elif not isinstance(new, Tensor):  # a CuPy array copied on its GPU; a Dask array is lazy, not copied
                new = _leaf(copy_as(new, dtype), False)
        note_grad_change(self)
        self._grad = new

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._value.shape, dtype=np.int64))

    def __len__(self):
        shape = self.shape
        if not shape:
            raise user_error(TypeError, "len()", "of a 0-d tensor", self)
        return shape[0]

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if flag and self.op is not None:
            raise user_error(RuntimeError, "Tensor.requires_grad", "can only be set on a leaf tensor (one not "
                             "computed from others); use .detach() first", self)
        if flag:
            _check_differentiable_dtype(self.dtype, "Tensor.requires_grad")
        self._requires_grad = bool(flag)

    def requires_grad_(self, flag=True):
        """Sets `requires_grad` in place and returns the tensor."""
        self.requires_grad = flag
        return self

    @property
    def is_leaf(self) -> bool:
        return self.op is None

    # -- conversions
    def _raw(self):
        """The values as the array type holds them, writable (internal: no copy, no view)."""
        value = self._value
        while isinstance(value, Tensor):
            if value._symbolic:  # a box around a graph's node: the node refuses (its _value is itself)
                return value._raw()
            value = value._value
        return value

    def numpy(self) -> np.ndarray:
        """The values as a read-only NumPy array (no copy, no graph); `.numpy().copy()` is writable.

        A Dask array's values are computed here (the one explicit compute, as `float(t)`, `t.item()`); a
        CuPy array's are copied from the GPU to the host (the one explicit copy).

        >>> t = tensor([1.0, 2.0])
        >>> t.numpy()
        array([1., 2.])
        >>> t.numpy().flags.writeable
        False
        """
        arr = to_numpy(self._raw())  # a CuPy array is copied to the host here
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
        return arr

    def item(self):
        """The single value as a Python number (a Dask array's is computed, a CuPy array's copied to the host)."""
        self._check_one_element("item()", "only a one-element tensor converts to a Python scalar")
        return self.numpy().item()

    def _check_one_element(self, where, message):
        # from the shape, before anything is computed: a Dask array of a billion elements is refused at once
        value = self._raw()
        shape = value.shape
        if is_dask(value) and has_unknown_size(shape):
            raise unknown_size_error(where, shape)
        if math.prod(shape) != 1:
            raise user_error(ValueError, where, f"{message}, got shape {tuple(shape)}", self)

    def tolist(self):
        """The values as nested Python lists (a Dask array's computed, a CuPy array's copied to the host)."""
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        if self._level and self.dtype.kind not in "iub":
            # a traced value turned into a plain array would silently lose its derivative; an integer or
            # boolean one has none to lose (np.int64(i) as an index), and a vmap box or a graph node
            # refuses in _raw
            raise user_error(TypeError, "np.asarray", "a value traced by a transform (dg.grad, dg.jvp, ...) cannot "
                             "become a NumPy array: its derivative would be lost. Use dagrad.numpy functions or Tensor "
                             "methods instead of NumPy's (e.g. dnp.dot(a, x), not a.dot(x) with a NumPy a)")
        arr = self.numpy()
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr  # a read-only view unless a copy is asked for

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise user_error(TypeError, "index", f"only integer tensors can be used as an index, got dtype "
                             f"{self.dtype}", self)
        return int(self.item())

    def __bool__(self):
        self._check_one_element("bool()", "the truth value of a tensor of more than one element is ambiguous; "
                                "use .any() or .all()")
        return bool(self.numpy())

    def __complex__(self):
        return complex(self.item())

    # -- autograd
    def detach(self) -> Tensor:
        """A new leaf tensor sharing the values (and their version counter), cut from the graph."""
        if self._level and isinstance(self._value, Tensor):
            # a transform's box: its value one level down, detached there (a vmap box below stays mapped)
            return self._value.detach()
        detached = _leaf(self._raw(), False)
        if not self._level:
            detached._write = _version_of(self)
        return detached

    def zero_grad(self, set_to_none: bool = True):
        """Clears `.grad` (to None, or to zeros with `set_to_none=False`)."""
        note_grad_change(self)
        self._grad = None if set_to_none or self._grad is None else _leaf(np.zeros_like(self._grad._raw()), False)

    def __repr__(self):
        raw = self._raw()
        if is_dask(raw):  # Dask's own summary (shape, dtype, chunks): printing computes nothing
            body, extras = repr(raw), []
        else:
            arr = np.asarray(self.numpy())
            body = np.array2string(arr, separator=", ", prefix="tensor(")
            extras = [] if arr.dtype in (np.float64, np.int64, np.bool_) else [f"dtype={arr.dtype}"]
            if type(raw) is not np.ndarray and is_cupy(raw):  # printed from a host copy; says where it lives
                extras.append(f"device='cuda:{raw.device.id}'")
        if self._requires_grad:
            extras.append("requires_grad=True" if self.op is None else f"op={self.op.name}")
        if self._level:
            extras.append(f"level={self._level}")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __reduce__(self):
        raise TypeError("dagrad tensors are not pickled; use dg.save / dg.load or .numpy()")


class Dual(Tensor):
    """A box of forward mode: a primal value and its tangent at one transform level."""

    __slots__ = ("_tangent",)

    def __repr__(self):
        return f"Dual(primal={self._value!r}, tangent={self._tangent!r}, level={self._level})"


class Batched(Tensor):
    """A box of `vmap`: its value holds a batch of examples along axis 0 (moved there when boxed),
    and it shows the shape of one example, so the code being mapped sees per-example shapes."""

    __slots__ = ()

    @property
    def shape(self) -> tuple:
        return tuple(self._value.shape)[1:]

    @property
    def ndim(self) -> int:
        return len(self._value.shape) - 1

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def _raw(self):
        # numpy(), item(), tolist(), bool(), int(), dg.tensor(x): the value holds every example, so
        # handing it out as one example's would be silently wrong (JAX raises here too)
        raise user_error(TypeError, "vmap", f"a value mapped by vmap (shape {self.shape} per example) has one value "
                         "per example, so it cannot become one NumPy array, number or bool; compute with dagrad "
                         "functions (dg.where instead of `if`), or return it from the mapped function")

    def detach(self) -> Tensor:
        # every example detached, still mapped (Tensor.detach would hand out the whole batch as one value)
        inner = self._value
        return _leaf(inner.detach() if isinstance(inner, Tensor) else inner, False, self._level, Batched)

    def __repr__(self):
        return f"Batched({self._value!r}, level={self._level})"


def _as_array(data, dtype, where, requires_grad=False):
    if isinstance(data, Tensor):
        data = data._raw()
    if is_foreign(data):
        # a Dask array kept lazy, not loaded: a shallow copy (Dask's `copy` shares the chunks) so that a later
        # `data[...] = v` on the user's array, which rebinds its graph, does not change the tensor. A CuPy
        # array is copied on its GPU, never through the host
        value = as_dtype(data.copy(), dtype)
    else:
        try:
            value = np.array(data, dtype=dtype)
        except (ValueError, TypeError) as err:
            kind = TypeError if isinstance(err, TypeError) else ValueError
            raise user_error(kind, where, f"cannot make a tensor of {type(data).__name__} data ({err})") from None
    if value.dtype.kind not in "biufc":
        raise user_error(TypeError, where, f"unsupported dtype {value.dtype} (dagrad holds bool, integer, "
                         "floating-point and complex data)")
    if dtype is None and value.dtype.kind in "fc" and default_float() != np.float64 and not isinstance(
            data, (np.ndarray, np.generic)) and not is_foreign(data):
        # Python floats follow dg.set_default_dtype, as torch.tensor's do (NumPy values keep their dtype)
        value = value.astype(default_float() if value.dtype.kind == "f" else default_complex())
    if requires_grad:
        _check_differentiable_dtype(value.dtype, where)
    return value


def _check_differentiable_dtype(dtype, where):
    if np.dtype(dtype).kind not in "fc":
        raise user_error(TypeError, where, f"only floating-point and complex tensors can require gradients, got "
                         f"dtype {dtype}")


def is_symbolic(value):
    """Whether `value` is a static graph's node, or a transform's box around one (no values yet)."""
    while isinstance(value, Tensor):
        if value._symbolic:
            return True
        value = value._value
    return False


def _leaf(value, requires_grad, level=0, cls=None):
    """A leaf Tensor (or `cls`) around an existing value, without copying or checks (internal)."""
    t = _new(cls or Tensor)
    t._value = value
    t.op = t.inputs = t.attrs = t._grad = None
    t._requires_grad = requires_grad
    t._level = level
    t._seq = 0
    return t


def tensor(data, dtype=None, requires_grad=False) -> Tensor:
    """Makes a leaf Tensor from a list, a number or an array (the data is copied).

    dtype follows NumPy: Python floats give float64, a float32 array stays float32.

    >>> tensor([1.0, 2.0], requires_grad=True)
    tensor([1., 2.], requires_grad=True)
    """
    return _leaf(_as_array(data, dtype, "dg.tensor", requires_grad), bool(requires_grad))
