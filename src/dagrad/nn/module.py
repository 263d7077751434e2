"""`Module` and `Parameter`: the containers of `dg.nn`, as in PyTorch.

A Module registers, by attribute assignment, its Parameters, its sub-Modules and its buffers (`register_buffer`:
state that is saved but not trained, such as BatchNorm's running statistics), walked in registration order.
"""

from __future__ import annotations

from collections import OrderedDict
from copy import deepcopy

import numpy as np

from .._core.errors import printable, user_error
from .._core.ir import graph_state, rollback
from .._core.tensor import Tensor, _as_array, _check_differentiable_dtype, is_symbolic, mark_written

__all__ = ["Module", "Parameter", "StateDictError"]

_STATE = ("_parameters", "_buffers")  # the tables state_dict saves, in this order


class StateDictError(RuntimeError, ValueError):
    """`load_state_dict` was given keys, shapes or values that do not fit the model: a RuntimeError, as PyTorch's,
    and a ValueError, as any other bad value dagrad refuses."""


def _copied(t, where):
    """A copy of the leaf tensor `t` (a Parameter stays one), with a copy of its `.grad`, for `deepcopy`."""
    if t.op is not None or is_symbolic(t):
        raise user_error(RuntimeError, "copy.deepcopy", f"{where} is not a leaf tensor (it was computed by the graph): "
                         f"only leaves can be copied, as in PyTorch")
    if isinstance(t, Parameter):
        new = Parameter(t._value, t.requires_grad)  # Parameter copies its data
    else:
        new = Tensor(t._value.copy(), requires_grad=t.requires_grad)
    if t._grad is not None:
        new._grad = Tensor(t._grad._value.copy())
    return new


class Parameter(Tensor):
    """A leaf Tensor that a Module registers as trainable (`requires_grad=True` by default).

    The data is copied. Optimisers update it in place through `p.value[...] = ...`.

    >>> import dagrad as dg
    >>> p = dg.nn.Parameter([1.0, 2.0])
    >>> p
    Parameter(tensor([1., 2.], requires_grad=True))
    >>> isinstance(p, dg.Tensor), p.requires_grad, p.is_leaf
    (True, True, True)
    """

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        value = _as_array(data, None, "dg.nn.Parameter")
        if requires_grad:
            _check_differentiable_dtype(value.dtype, "dg.nn.Parameter")
        super().__init__(value, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter(" + super().__repr__() + ")"


class Module:
    """Base class of layers and models: subclass it, assign parameters and layers in `__init__`, and write
    `forward`. Calling the module calls `forward`.

    >>> import dagrad as dg
    >>> class TwoLayer(dg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = dg.nn.Linear(3, 4)
    ...         self.out = dg.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.out(dg.tanh(self.hidden(x)))
    >>> model = TwoLayer()
    >>> [name for name, _ in model.named_parameters()]
    ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
    >>> model(dg.tensor([[1.0, 2.0, 3.0]])).shape
    (1, 2)
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "training", True)

    # -- registration
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise user_error(AttributeError, type(self).__name__, "call super().__init__() before assigning attributes")
        params, modules, buffers = self._parameters, self._modules, self._buffers
        if name in params and isinstance(value, (Tensor, np.ndarray)) and not isinstance(value, Parameter):
            # as PyTorch: a plain tensor would silently stop being trained (and drop out of state_dict)
            kind = "dagrad.Tensor" if isinstance(value, Tensor) else "numpy.ndarray"
            raise user_error(TypeError, type(self).__name__, f"cannot assign '{kind}' as parameter {name!r} "
                             f"(dg.nn.Parameter or None expected)")
        # Registered values live in their table and, as a mirror, in the instance dict, so that
        # reading `self.weight` in forward is a plain attribute lookup (__getattr__ costs a failed
        # lookup and a Python call, on every layer of every step)
        if name in buffers and (value is None or isinstance(value, Tensor)) and not isinstance(value, Parameter):
            buffers[name] = value  # assigning to a buffer replaces the buffer, as PyTorch
        elif name in params and value is None:
            params[name] = None  # an absent parameter (e.g. bias=False) stays registered as absent
        else:
            own = params if isinstance(value, Parameter) else modules if isinstance(value, Module) else None
            for table in (params, modules, buffers):
                if table is not own:
                    table.pop(name, None)
            if own is not None:
                own[name] = value  # a replacement keeps its place in the order, as PyTorch's
        object.__setattr__(self, name, value)

    def __getattr__(self, name):  # only called when normal lookup fails (a table changed directly)
        d = self.__dict__
        for table in ("_parameters", "_modules", "_buffers"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        registered = False
        for table in (self._parameters, self._modules, self._buffers):
            if name in table:
                del table[name]
                registered = True
        if name in self.__dict__ or not registered:
            object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Registers `param` (a Parameter, or None for an absent one such as `bias=False`)."""
        if param is None:
            self._parameters.pop(name, None)
            object.__setattr__(self, name, None)
            return
        if not isinstance(param, Parameter):
            raise user_error(TypeError, "register_parameter", f"{name!r} must be a dg.nn.Parameter, got "
                             f"{type(param).__name__}")
        setattr(self, name, param)

    def add_module(self, name, module):
        """Registers `module` (or None) as the child `name`, checked as PyTorch checks it: a name that is already
        another attribute (a method, say), contains a dot or is empty is a KeyError.

        >>> import dagrad as dg
        >>> m = dg.nn.Module()
        >>> m.add_module("fc", dg.nn.Linear(2, 2))
        >>> [name for name, _ in m.named_children()]
        ['fc']
        """
        self._check_child(name, module, f"{type(self).__name__}.add_module")
        if module is None:
            for table in (self._parameters, self._buffers):
                table.pop(name, None)
            self._modules[name] = None
            object.__setattr__(self, name, None)
        else:
            setattr(self, name, module)

    register_module = add_module

    def _check_child(self, name, module, where):
        """Raises PyTorch's errors for a child `module` (a Module or None) that cannot be registered as `name`."""
        if module is not None and not isinstance(module, Module):
            raise user_error(TypeError, where, f"{type(module).__name__} is not a dg.nn.Module subclass")
        if not isinstance(name, str):
            raise user_error(TypeError, where, f"module name should be a string, got {type(name).__name__}")
        if not name or "." in name:
            raise user_error(KeyError, where, f"module name cannot be empty or contain a dot, got {name!r}")
        if hasattr(self, name) and name not in self._modules:
            raise user_error(KeyError, where, f"attribute {name!r} already exists")

    def register_buffer(self, name, value):
        """Registers state that is saved in `state_dict` but not trained (a Tensor or array).

        >>> import dagrad as dg, numpy as np
        >>> m = dg.nn.Module()
        >>> m.register_buffer("count", dg.tensor(0))
        >>> list(m.state_dict())
        ['count']
        """
        if not isinstance(value, Tensor) and value is not None:
            value = Tensor(value)
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self._buffers[name] = value
        object.__setattr__(self, name, value)

    # -- walking the tree (iteratively, in registration order)
    def named_modules(self, prefix=""):
        """(dotted name, module) for this module and every descendant, each once, depth first.

        >>> import dagrad as dg
        >>> [name for name, _ in dg.nn.Sequential(dg.nn.Linear(2, 2), dg.nn.ReLU()).named_modules()]
        ['', '0', '1']
        """
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{k}" if name else k, m) for k, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        """This module and every descendant, each once."""
        return (m for _, m in self.named_modules())

    def named_children(self):
        """(name, module) for the direct sub-modules."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """The direct sub-modules."""
        return (m for _, m in self.named_children())

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, Parameter) in registration order, each Parameter once.

        >>> import dagrad as dg
        >>> [(n, p.shape) for n, p in dg.nn.Linear(2, 3).named_parameters()]
        [('weight', (3, 2)), ('bias', (3,))]
        """
        seen = set()
        for name, p in self._named_tensors(("_parameters",), prefix, recurse):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def parameters(self, recurse=True):
        """The Parameters in registration order (what an optimiser takes)."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        """(dotted name, buffer Tensor)."""
        return self._named_tensors(("_buffers",), prefix, recurse)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def _named_tensors(self, tables, prefix="", recurse=True):
        """(dotted name, Tensor) for each entry of `tables` that is not None, module by module."""
        for mname, module in (self.named_modules(prefix) if recurse else [(prefix, self)]):
            for table in tables:
                for name, t in getattr(module, table).items():
                    if t is not None:
                        yield (f"{mname}.{name}" if mname else name), t

    # -- training helpers
    def zero_grad(self, set_to_none=True):
        """Clears every parameter's `.grad` (to None by default, as PyTorch)."""
        for p in self.parameters():
            p.zero_grad(set_to_none=set_to_none)

    def train(self, mode=True):
        """Sets training mode (Dropout drops, BatchNorm uses batch statistics) on every module."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        """Sets evaluation mode: `train(False)`."""
        return self.train(False)

    def to(self, *args, dtype=None, device=None):
        """PyTorch's `module.to(dtype)`: every floating parameter and buffer cast to `dtype` in place (the
        same Tensor objects, so an optimiser holding them keeps working); `to("cpu")` changes nothing.

        >>> import dagrad as dg
        >>> dg.nn.Linear(2, 1).to(dg.float32).weight.dtype
        dtype('float32')
        """
        for a in args:
            if not (isinstance(a, str) and a.split(":")[0] == "cpu"):
                dtype = a
        if dtype is None:
            return self
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise user_error(TypeError, "Module.to", f"parameters and buffers can be cast to a floating dtype only, "
                             f"got {dtype}")
        for _, t in self.named_parameters():
            self._cast(t, dtype)
        for _, t in self.named_buffers():
            if t.dtype.kind == "f":
                self._cast(t, dtype)
        return self

    @staticmethod
    def _cast(t, dtype):
        if t.dtype != dtype:
            t._value = t._value.astype(dtype)
            if t._grad is not None:
                t._grad._value = t._grad._value.astype(dtype)
            mark_written(t)

    def float(self):
        """Floating parameters and buffers as float32 (`to(float32)`)."""
        return self.to(np.float32)

    def double(self):
        """Floating parameters and buffers as float64 (`to(float64)`)."""
        return self.to(np.float64)

    def half(self):
        """Floating parameters and buffers as float16 (`to(float16)`)."""
        return self.to(np.float16)

    def requires_grad_(self, requires_grad=True):
        """Sets `requires_grad` on every parameter (freezing a model with False) and returns the module.

        >>> import dagrad as dg
        >>> [p.requires_grad for p in dg.nn.Linear(2, 2).requires_grad_(False).parameters()]
        [False, False]
        """
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def apply(self, fn):
        """Calls `fn` on every sub-module, children first, then on this module, and returns this module (as
        PyTorch's, typically to initialise weights).

        >>> import dagrad as dg
        >>> def zero_bias(m):
        ...     if isinstance(m, dg.nn.Linear):
        ...         dg.nn.init.zeros_(m.bias)
        >>> model = dg.nn.Sequential(dg.nn.Linear(2, 3), dg.nn.Linear(3, 1)).apply(zero_bias)
        >>> model[1].bias
        Parameter(tensor([0.], requires_grad=True))
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- calling
    def forward(self, *args, **kwargs):
        raise user_error(NotImplementedError, type(self).__name__, "the module does not define forward()")

    def __call__(self, *args, **kwargs):
        # All or nothing in static graphs, as `_core.ir.atomic()`: the nodes a failing call built
        # are removed again. Written out rather than with `with atomic():`, which costs 0.54 us more per
        # layer call on the eager training step (1.44 vs 0.90 us for an identity Module, measured): the
        # outermost call opens the journal of built nodes, a nested call only notes where its own start.
        local = graph_state
        journal = local.journal
        if journal is None:
            journal = local.journal = []
            try:
                return self.forward(*args, **kwargs)
            except BaseException:
                if journal:
                    rollback(journal)
                raise
            finally:
                local.journal = None
        start = len(journal)
        try:
            return self.forward(*args, **kwargs)
        except BaseException:
            if len(journal) > start:
                rollback(journal[start:])
                del journal[start:]
            raise

    # -- copying
    def __deepcopy__(self, memo):
        """`copy.deepcopy(module)`, as PyTorch's: the same structure with copies of every parameter and buffer
        (a parameter's `.grad` too), shared where the original shares them. A tensor that is not a leaf (computed
        by the graph) cannot be copied, as in PyTorch.

        >>> import copy, dagrad as dg
        >>> a = dg.nn.Linear(2, 2)
        >>> b = copy.deepcopy(a)
        >>> b.weight is a.weight, bool((b.weight.numpy() == a.weight.numpy()).all())
        (False, True)
        """
        for name, module in self.named_modules():
            for table in (module._parameters, module._buffers):
                for key, t in table.items():
                    if t is not None and id(t) not in memo:
                        memo[id(t)] = _copied(t, f"{type(self).__name__}: {name + '.' if name else ''}{key}")
        copy = object.__new__(type(self))
        memo[id(self)] = copy
        for key, value in self.__dict__.items():
            object.__setattr__(copy, key, deepcopy(value, memo))
        return copy

    # -- saving and loading
    def state_dict(self):
        """An ordered dict of dotted names to NumPy copies of the parameters and buffers.

        >>> import dagrad as dg
        >>> sd = dg.nn.Linear(2, 1).state_dict()
        >>> {k: v.shape for k, v in sd.items()}
        {'weight': (1, 2), 'bias': (1,)}
        """
        return OrderedDict((k, np.array(t.numpy(), copy=True)) for k, t in self._named_tensors(_STATE))

    def load_state_dict(self, state_dict, strict=True):
        """Copies values from `state_dict` into the parameters and buffers in place (their version counters count
        the write) and returns `(missing_keys, unexpected_keys)`. Everything is checked first: on an error (missing
        or unexpected keys with `strict=True`, a shape mismatch, a non-numeric value) the model is unchanged, and the
        error is a `StateDictError` (a RuntimeError, as PyTorch's, and a ValueError).

        >>> import dagrad as dg
        >>> a, b = dg.nn.Linear(2, 2), dg.nn.Linear(2, 2)
        >>> b.load_state_dict(a.state_dict())
        ([], [])
        >>> bool((a.weight.numpy() == b.weight.numpy()).all())
        True
        """
        where = f"{type(self).__name__}.load_state_dict"
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise user_error(TypeError, where, f"expected a dict of names to arrays, got {type(state_dict).__name__}")
        entries = OrderedDict(self._named_tensors(_STATE))
        missing = [k for k in entries if k not in state_dict]
        unexpected = [k for k in state_dict if k not in entries]
        problems = []
        if strict and missing:
            problems.append(f"missing keys: {', '.join(missing)}")
        if strict and unexpected:
            problems.append(f"unexpected keys: {', '.join(map(str, unexpected))}")
        arrays = {}
        for key, t in entries.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            try:
                arr = np.asarray(value.numpy() if isinstance(value, Tensor) else value)
            except Exception as err:  # noqa: BLE001 - reported below with the key
                problems.append(f"{key}: cannot be read as an array ({err})")
                continue
            if arr.dtype.kind not in "biuf":
                problems.append(f"{key}: expected numeric data, got dtype {arr.dtype}")
            elif arr.shape != t.shape:
                problems.append(f"{key}: shape mismatch, the model has {tuple(t.shape)}, the state dict {arr.shape}")
            elif arr.dtype.kind == "f" and t.dtype.kind in "biu":
                problems.append(f"{key}: the model holds {t.dtype}, the state dict {arr.dtype} (not cast silently)")
            else:
                arrays[key] = arr
        if problems:
            raise user_error(StateDictError, where, "; ".join(problems) + " (nothing was loaded)")
        for key, arr in arrays.items():
            t = entries[key]
            t._value[...] = arr.astype(t.dtype, copy=False)
            mark_written(t)
        return missing, unexpected

    # -- printing
    def extra_repr(self):
        """The text inside this module's parentheses in its repr (override in layers)."""
        return ""

    def __repr__(self):
        # a child's name may be any string (add_module): shown escaped, so it cannot forge a line
        lines = [f"({printable(name)}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"
