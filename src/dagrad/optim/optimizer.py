"""`Optimizer`: the base class of dagrad's optimisers (PyTorch's semantics and formulas; docs/optim.md).

Eager mode: the parameters are leaf Tensors and `step()` updates each one's NumPy array in place
from its `.grad`. Static mode: the parameters are `dg.Variable`s and `minimize(loss)` builds the
gradients and updates into the graph (the state becomes non-trainable Variables), returning one
`dg.group` node: one run is one step. As in TF1, an optimiser made without parameters
(`SGD(lr=0.1)`) trains, at each `minimize(loss)`, the trainable Variables the loss depends on.
Each optimiser writes its update once with NumPy-style operators, so both modes do the arithmetic
of PyTorch 2.13's single-tensor code in the same order.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np

from .. import numpy as dnp
from .._core.backends import compute_together, is_dask
from .._core.errors import user_error
from .._core.ir import Symbol, atomic, shape_fits, shown, walk
from .._core.tensor import Tensor, enable_grad, mark_written
from ..static.graph import Variable, trainable_variables
from ..static.graph import group as group_updates
from ..static.session import gradients

__all__ = ["Optimizer"]


class _ParamGroup(dict):
    """A parameter group. In static mode its "lr" is also a graph Variable, kept in step with
    the dict entry (so a scheduler or a user changing `group["lr"]` changes the graph's rate)."""

    _lr_variable = None

    def __setitem__(self, key, value):
        if key == "lr" and self._lr_variable is not None:
            _set_lr(self._lr_variable, _nonnegative("param_group['lr']", "lr", value))  # checked, then set
        super().__setitem__(key, value)

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]


def _set_lr(variable, lr):
    """Sets a group's learning-rate Variable. Its initial value follows: the rate is the group's option, not
    state, so `global_variables_initializer` must not put an old rate back."""
    variable.value = float(lr)
    initial = np.array(variable.value)
    initial.flags.writeable = False
    variable.initial_value = initial


def _write_param(p, value):
    p._value[...] = value
    mark_written(p)


def _write_state(states, p, key, value):
    state = states[p]
    old = state.get(key)
    if isinstance(old, np.ndarray) and old.shape == np.shape(value):
        old[...] = value
    else:  # a count: a Python float, as eager step() keeps it
        state[key] = float(value) if np.ndim(value) == 0 else np.array(value)


def _scalar(x, dtype):
    """A scalar of an update in the parameter's dtype: a Python number as is (NumPy casts it, as torch
    does); a graph node cast, since a float64 scalar node would promote a float32 update to float64; a
    NumPy float64 (from dnp.power) as the Python float it equals, for the same reason."""
    if isinstance(x, Symbol) and x.dtype != dtype:
        return dnp.astype(x, dtype)
    if type(x) is np.float64:
        return float(x)
    return x


def _lerp(start, end, weight):
    """torch.lerp's formula for a scalar weight (its CPU kernel picks the form by |weight|)."""
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)


def _is_variable(p):
    return isinstance(p, Symbol) and p.kind == "variable"


def _plain(value):
    """A state entry as a NumPy array or a Python number (a Variable's current value, copied)."""
    value = value.value if _is_variable(value) else value
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


def _as_number(value):
    """A group option or state number loaded from a state dict (maybe a 0-d array after dg.load)."""
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else tuple(value.tolist())
    return tuple(value) if isinstance(value, list) else value


_LABELS = {"lr": "learning rate", "eps": "epsilon"}
_MISSING = object()  # an option a group lacks, as a compiled step's guard sees it


def _real(op, key, value):
    """A finite real option value (a Python or NumPy number, not a bool), or a TypeError/ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise user_error(TypeError, op, f"{key} must be a real number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise user_error(ValueError, op, f"invalid {_LABELS.get(key, key)} {value} ({key} must be finite)")
    return value


def _nonnegative(op, key, value):
    if _real(op, key, value) < 0:
        raise user_error(ValueError, op, f"invalid {_LABELS.get(key, key)} {value} ({key} must be >= 0)")
    return value


def _flag(op, key, value):
    if not isinstance(value, (bool, np.bool_)):
        raise user_error(TypeError, op, f"{key} must be True or False, got {type(value).__name__} {value!r}")
    return value


class Optimizer:
    """Base class: param groups, per-parameter state, `zero_grad`, `step`, `minimize`, state dicts.

    Subclasses give `defaults`, the options' ranges (`_nonnegative`, `_numbers`, `_flags`, `_validate`),
    `_init_state` and `_update`: one formula for both modes. Every error names the optimiser, the value
    and the user's line, and leaves the optimiser and its parameters as they were.

    >>> import dagrad as dg
    >>> w = dg.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = dg.optim.SGD([{"params": [w], "lr": 0.5}], lr=0.1, momentum=0.9)
    >>> [(g["lr"], g["momentum"]) for g in opt.param_groups]
    [(0.5, 0.9)]
    """

    _nonnegative = ("lr",)
    _numbers = ()
    _flags = ("maximize",)

    def __init__(self, params, defaults):
        op = type(self).__name__
        self.defaults = dict(defaults)
        self.state = {}
        self.param_groups = []
        self._check_options(self.defaults, op)
        # no parameters (TF1's habit): each minimize(loss) trains the trainable Variables the loss depends on
        self._collects = params is None
        if params is None:
            return
        if isinstance(params, (Tensor, dict, str)) or not hasattr(params, "__iter__"):
            raise user_error(TypeError, op, f"params must be an iterable of Tensors (or of dicts of parameter "
                             f"groups), got a {type(params).__name__}; wrap it in a list")
        groups = list(params)
        if not groups:
            raise user_error(ValueError, op, "got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self._add_param_group(group, op)

    # -- parameter groups
    def add_param_group(self, param_group):
        """Adds a group (a dict with "params" and options; missing options take the defaults).

        >>> import dagrad as dg
        >>> a, b = dg.tensor(1.0, requires_grad=True), dg.tensor(2.0, requires_grad=True)
        >>> opt = dg.optim.SGD([a], lr=0.1)
        >>> opt.add_param_group({"params": [b], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        self._add_param_group(param_group, f"{type(self).__name__}.add_param_group")

    def _add_param_group(self, param_group, op):
        if not isinstance(param_group, dict):
            raise user_error(TypeError, op, f"a parameter group is a dict, got {type(param_group).__name__}")
        params = param_group.get("params")
        if params is None:
            raise user_error(ValueError, op, 'a parameter group needs a "params" entry')
        if isinstance(params, (set, frozenset)):
            raise user_error(TypeError, op, "parameters must be an ordered collection (a list), not a set")
        if isinstance(params, (dict, str)) or not (isinstance(params, Tensor) or hasattr(params, "__iter__")):
            raise user_error(TypeError, op, f'a group\'s "params" must be a Tensor or an iterable of them, got a '
                             f"{type(params).__name__}")
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            self._check_param(p, op)
        group = _ParamGroup({key: value for key, value in param_group.items() if key != "params"})
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self._check_options(group, op)
        ids = [id(p) for p in params]
        if len(set(ids)) != len(ids) or {id(p) for p in self._params()} & set(ids):
            raise user_error(ValueError, op, "some parameters appear more than once (in one group or in several "
                             "groups)")
        if len({_is_variable(p) for p in self._params() + params}) > 1:
            raise user_error(TypeError, op, "an optimizer's parameters must be all eager Tensors or all "
                             "static-graph Variables")
        group["params"] = params
        self.param_groups.append(group)
        for p in params:
            self._on_new_param(p, group)

    def _check_param(self, p, op):
        if _is_variable(p):
            if p.dtype.kind != "f":
                raise user_error(TypeError, op, f"can only optimize floating-point Variables, got {p!r}", p)
            return
        if not isinstance(p, Tensor) or getattr(p, "_symbolic", False):
            raise user_error(TypeError, op, f"parameters must be leaf dg.Tensors that require a gradient or "
                             f"dg.Variables of a static graph, got {type(p).__name__}")
        if not p.is_leaf:
            raise user_error(ValueError, op, "can't optimize a non-leaf Tensor (one computed from others); use a "
                             "leaf", p)
        if not p.requires_grad:
            raise user_error(ValueError, op, "a parameter does not require a gradient (create it with "
                             "requires_grad=True)", p)
        if p._level:
            raise user_error(ValueError, op, "can't optimize a value traced by a transform", p)
        if is_dask(p._value):
            raise user_error(TypeError, op, f"a parameter of shape {tuple(p.shape)} is a Dask array: parameters must "
                             f"fit in memory and are updated in place, so hold them as NumPy arrays (the data can be "
                             f"Dask arrays: the gradients over it are computed at each step)", p)

    def _check_options(self, group, op):
        """Checks a group's options (PyTorch's ranges; finite numbers, booleans), naming `op`."""
        for keys, check in ((self._nonnegative, _nonnegative), (self._numbers, _real), (self._flags, _flag)):
            for key in keys:
                check(op, key, group[key])
        self._validate(group, op)

    def _validate(self, group, op):
        """Checks what `_nonnegative`, `_numbers` and `_flags` do not (subclasses: betas, Nesterov, ...)."""

    def _check_groups(self, op):
        """Every group's options, checked before a step touches anything: a user or a scheduler may have set
        any of them since the group was added (`param_groups[1]["lr"] = None`), and a step that updated
        group 0 before group 1 failed would leave the training half a step on."""
        for i, group in enumerate(self.param_groups):
            where = f"{op}: param_groups[{i}]"
            missing = [key for key in self.defaults if key not in group]
            if missing:
                raise user_error(ValueError, where, f"lacks option(s) {missing} (add groups with add_param_group, "
                                 "which fills them in); nothing was updated")
            self._check_options(group, where)

    def _traced_options(self):
        """What a step that dg.compile traced built into its code: each group's parameters and options but
        the learning rate (read, and checked, at each call). Compared at each call: a change traces the step
        again, and tracing checks the options (a bad value raises then, before anything ran)."""
        return tuple((tuple(map(id, g["params"])), tuple(g.get(key, _MISSING) for key in self.defaults if key != "lr"))
                     for g in self.param_groups)

    def _on_new_param(self, p, group):
        """Called once per parameter added (Adagrad creates its state here, as PyTorch does)."""

    def _static_extra_state(self, value, group, loaded):
        """Extra state a static step needs beyond PyTorch's (SGD: a step count)."""
        return {}

    @property
    def _static(self):
        for g in self.param_groups:  # all parameters are of one kind (add_param_group checks): the first tells
            if g["params"]:
                return _is_variable(g["params"][0])
        return False

    def _params(self):
        return [p for g in self.param_groups for p in g["params"]]

    # -- the update (subclasses)
    def _init_state(self, value, group):
        """The state of a parameter before its first step (NumPy arrays and numbers)."""
        return {}

    def _update(self, p, g, state, group):
        """(new value of p, new state) from the parameter p, its gradient g and its state."""
        raise NotImplementedError

    def _fast_update(self, group):
        """An in-place eager update `f(value, g)` for a group whose parameters need no state, or None."""

    def _optional_state(self, group):
        """State keys that may be missing (SGD's momentum buffer before the first step)."""
        return set()

    # -- eager mode
    def zero_grad(self, set_to_none=True):
        """Clears every parameter's `.grad` (to None, or to zeros with `set_to_none=False`).

        >>> import dagrad as dg
        >>> w = dg.tensor([1.0], requires_grad=True)
        >>> (w * 3.0).sum().backward()
        >>> opt = dg.optim.SGD([w], lr=0.1)
        >>> opt.zero_grad()
        >>> w.grad is None
        True
        """
        for p in self._params():
            if not _is_variable(p):
                p.zero_grad(set_to_none)

    def step(self, closure=None):
        """One in-place update of every parameter that has a gradient (eager mode); returns `closure()`'s loss.

        All or nothing: every `.grad` is checked (None, or a Tensor of the parameter's shape and dtype)
        before anything changes. Each update writes the parameter's own array and bumps its version.
        Gradients held as Dask arrays (over Dask data) are computed together, with the closure's loss if it
        is lazy, by ONE `dask.compute`; the `.grad`s then hold NumPy arrays and the loss is returned as a
        Tensor of its value (docs/backends.md).

        >>> import dagrad as dg
        >>> w = dg.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = dg.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w
        tensor([ 0.8, -1.6], requires_grad=True)
        """
        if self._static:
            raise user_error(TypeError, f"{type(self).__name__}.step", "step() updates eager tensors, but its "
                             "parameters are Variables of a static graph: build the training step once with "
                             "`train = opt.minimize(loss)` and run it with `sess.run(train, feed_dict)`")
        if not self.param_groups:
            raise user_error(TypeError, f"{type(self).__name__}.step", "the optimizer was given no parameters, "
                             "so it only trains static graphs: build the training step once with `train = "
                             "opt.minimize(loss)` and run it with `sess.run(train, feed_dict)`")
        self._check_groups(f"{type(self).__name__}.step")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        graph = next((p._grad.graph for p in self._params() if isinstance(p._grad, Symbol)), None)
        if graph is not None and graph.tracing is not None:
            graph.guard(("options", id(self)), self._traced_options)
            self._traced_step(graph)
            return loss
        # every gradient is checked before any parameter or state changes: all or nothing
        all_state = self.state
        todo = []
        for group in self.param_groups:
            fast = self._fast_update(group)
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                value = p._value
                if not isinstance(grad, Tensor) or grad._symbolic:
                    raise self._bad_grad(p, grad)
                g = grad._raw()
                if g.shape != value.shape or g.dtype != value.dtype:
                    raise self._bad_grad(p, grad)
                state = all_state.get(p)
                if state is not None and fast is None:
                    for entry in state.values():
                        if type(entry) is np.ndarray and entry.shape != value.shape:
                            raise self._bad_grad(p, grad, entry)
                todo.append((p, value, g, group, fast, state))
        if "dask.array" in sys.modules:  # (never true for NumPy-only users: their step costs nothing more)
            todo, loss = self._computed(todo, loss)
        for p, value, g, group, fast, state in todo:
            if fast is not None:
                fast(value, g)
                mark_written(p)
                continue
            if state is None:
                state = all_state[p] = self._init_state(value, group)
            new_value, new_state = self._update(value, g, state, group)
            value[...] = new_value
            mark_written(p)
            for key, new in new_state.items():
                old = state.get(key)
                if isinstance(old, np.ndarray) and old.shape == np.shape(new):
                    old[...] = new
                elif isinstance(new, np.ndarray):
                    state[key] = np.array(new, dtype=value.dtype, copy=True)
                else:
                    state[key] = new
        return loss

    def _computed(self, todo, loss):
        """`todo` and the closure's loss with the Dask gradients (and a Dask loss) computed by ONE
        `dask.compute` (the data's chunks are read once, not once per parameter); each `.grad` then holds its
        NumPy array, and the loss is returned as a new Tensor of its value. Checked before anything is written:
        a result of another shape or dtype than Dask announced raises."""
        lazy_loss = isinstance(loss, Tensor) and not loss._symbolic and is_dask(loss._raw())
        if not lazy_loss and not any(is_dask(g) for _, _, g, *_ in todo):
            return todo, loss
        values = compute_together([g for _, _, g, *_ in todo] + [loss._raw() if lazy_loss else None])
        for (p, value, _, *_), g in zip(todo, values):
            if g.shape != value.shape or g.dtype != value.dtype:
                raise user_error(RuntimeError, f"{type(self).__name__}.step", f"Dask computed a gradient of shape "
                                 f"{g.shape} and dtype {g.dtype} for a parameter of shape {value.shape} and dtype "
                                 f"{value.dtype}; nothing was updated", p)
        for (p, *_), g in zip(todo, values):
            p._grad._value = g  # the same values, now in memory: p.grad reads them without another compute
        todo = [(p, value, g, *rest) for (p, value, _, *rest), g in zip(todo, values)]
        return todo, (Tensor(values[-1]) if lazy_loss else loss)

    def _traced_step(self, graph):
        """step() inside a function dg.compile traces (PyTorch's training step under torch.compile): the
        update as nodes, with the parameters, learning rates and state read at each call and written back
        after it. The state takes its static form (a step count where the first step differs), so one
        trace serves every step, and each call computes what eager step() would."""
        for index, group in enumerate(self.param_groups):
            lr = graph.read_at_call(("lr", id(self), index), functools.partial(self._read_lr, index), (),
                                    np.float64, "lr")
            options = dict(group, lr=lr)
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if not isinstance(g, Symbol) or g.graph is not graph:
                    raise user_error(TypeError, f"{type(self).__name__}.step", "inside dg.compile, every gradient "
                                     "must come from loss.backward() in the traced function", p)
                initial = self._static_values(p._value, group, self.state.get(p))
                nodes = {key: graph.read_at_call(("state", id(p), key), functools.partial(self._read_state, p, index,
                                                 key), np.shape(value), np.asarray(value).dtype, key.lstrip("_"))
                         for key, value in initial.items()}
                new_value, new_state = self._update(graph.capture(p), g, nodes, options)
                graph.writes.append((new_value, functools.partial(_write_param, p)))
                for key, new in new_state.items():
                    graph.writes.append((new, functools.partial(_write_state, self.state, p, key)))

    def _read_lr(self, index):
        lr = self.param_groups[index].get("lr")
        return np.float64(_nonnegative(f"{type(self).__name__}.step: param_groups[{index}]", "lr", lr))

    def _read_state(self, p, index, key):
        """A compiled step's state entry: the state in its static form (made at the first compiled step, or
        completed after eager steps), as minimize keeps it."""
        state = self.state.get(p)
        if state is None or key not in state:
            state = self.state[p] = self._static_values(p._value, self.param_groups[index], state)
        return np.asarray(state[key])

    def _bad_grad(self, p, grad, state_entry=None):
        """The error `step` raises for parameter p's gradient (or its state), before anything changed."""
        op = f"{type(self).__name__}.step"
        index = next(i for i, q in enumerate(self._params()) if q is p)
        unchanged = "; nothing was updated"
        if state_entry is not None:
            return user_error(ValueError, op, f"the state of parameter {index} has shape {state_entry.shape}, the "
                              f"parameter {p.shape} (was its value replaced?){unchanged}", p)
        if not isinstance(grad, Tensor) or grad._symbolic:
            what = "a static graph's node" if isinstance(grad, Tensor) else f"a {type(grad).__name__}"
            return user_error(TypeError, op, f"parameter {index}'s .grad is {what}, not a Tensor with values or "
                              f"None{unchanged}", p)
        g = grad._raw()
        if g.shape != p._value.shape:
            return user_error(ValueError, op, f"parameter {index} has shape {p._value.shape} but its .grad has shape "
                              f"{g.shape}{unchanged}", p, grad)
        return user_error(TypeError, op, f"parameter {index} has dtype {p._value.dtype} but its .grad has dtype "
                          f"{g.dtype}{unchanged}", p, grad)

    # -- static mode
    def minimize(self, loss, var_list=None):
        """One training step as a node of the parameters' static graph (`dg.group` of `assign`s).

        The Variables trained: `var_list` if given (TF1's keyword; those not yet the optimizer's join it
        as a new parameter group), else the optimizer's parameters, or, for an optimizer made without
        any (`SGD(lr=0.1)`, TF1's habit), the trainable Variables that the loss depends on. The
        optimiser's state and each group's learning rate become non-trainable Variables of the
        graph. Running the node with `Session.run` is one step.

        >>> import dagrad as dg, numpy as np
        >>> with dg.Graph() as g:
        ...     w = dg.Variable(np.array([1.0, -2.0]), name="w")
        ...     loss = (w * w).sum()
        ...     train = dg.optim.SGD(lr=0.1).minimize(loss)   # or SGD([w], lr=0.1).minimize(loss)
        >>> sess = dg.Session(g)
        >>> for _ in range(2):
        ...     sess.run(train)
        >>> w.value
        array([ 0.64, -1.28])
        """
        op = f"{type(self).__name__}.minimize"
        graph, params = self._loss_and_params(loss, var_list, op)
        return self._step_node(graph, params, lambda: gradients(loss, params), op)

    def compute_gradients(self, loss, var_list=None):
        """TF1's first half of `minimize`: `[(gradient node, Variable)]` for the Variables `minimize(loss,
        var_list)` would train, built into the loss's graph; change the gradients (clip them, say) and pass
        the pairs to `apply_gradients`.

        >>> import dagrad as dg, numpy as np
        >>> with dg.Graph() as g:
        ...     w = dg.Variable(np.array([1.0, -2.0]), name="w")
        ...     opt = dg.optim.SGD(lr=0.1)
        ...     pairs = opt.compute_gradients((w * w).sum())
        ...     train = opt.apply_gradients([(dg.clip(grad, -1.0, 1.0), v) for grad, v in pairs])
        >>> dg.Session(g).run(train); w.value
        array([ 0.9, -1.9])
        """
        op = f"{type(self).__name__}.compute_gradients"
        graph, params = self._loss_and_params(loss, var_list, op)
        with graph, atomic():
            grads = gradients(loss, params)
        return list(zip(grads, params))

    def apply_gradients(self, grads_and_vars):
        """TF1's second half of `minimize`: one training step (a `dg.group` node) from `[(gradient node,
        Variable)]` pairs, as `compute_gradients` returns them; a pair whose gradient is None is left out,
        as TF1 does. The Variables not yet the optimizer's join it as a new parameter group."""
        op = f"{type(self).__name__}.apply_gradients"
        if self.param_groups and not self._static:
            raise self._eager_error(op)
        try:
            pairs = [tuple(pair) for pair in grads_and_vars]
        except TypeError:
            raise user_error(TypeError, op, "expects a list of (gradient, Variable) pairs, as compute_gradients "
                             "returns") from None
        if any(len(pair) != 2 for pair in pairs):
            raise user_error(TypeError, op, "expects a list of (gradient, Variable) pairs, as compute_gradients "
                             "returns")
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not pairs:
            raise user_error(ValueError, op, "no gradients provided for any Variable (every gradient is None)")
        params = [v for _, v in pairs]
        for g, v in pairs:
            if not _is_variable(v):
                raise user_error(TypeError, op, f"the second item of each pair must be a dg.Variable, got "
                                 f"{type(v).__name__}")
            self._check_param(v, op)
            if not isinstance(g, Symbol) or g.graph is not v.graph:
                raise user_error(TypeError, op, f"the gradient for Variable {v.name!r} must be a node of its graph, "
                                 f"got {type(g).__name__}")
            if g._shape is not None and not shape_fits(g._shape, v._shape):
                raise user_error(ValueError, op, f"the gradient for Variable {v.name!r} has shape "
                                 f"{shown(g._shape)}, the Variable {shown(v._shape)}", g, v)
        if len({id(v) for v in params}) != len(params):
            raise user_error(ValueError, op, "some Variables appear more than once")
        graph = params[0].graph
        if any(v.graph is not graph for v in params):
            raise user_error(ValueError, op, "the Variables belong to different graphs")
        self._check_groups(op)
        return self._step_node(graph, params, lambda: [g for g, _ in pairs], op)

    def _eager_error(self, op):
        return user_error(TypeError, op, "builds a training step into a static graph, but the parameters are eager "
                          "tensors: in eager mode call loss.backward() and then opt.step() (and opt.zero_grad() "
                          "before the next backward)")

    def _loss_and_params(self, loss, var_list, op):
        """The loss's graph and the Variables a step on it trains, checked (nothing changed yet)."""
        if self.param_groups and not self._static:
            raise self._eager_error(op)
        if not isinstance(loss, Symbol):
            raise user_error(TypeError, op, f"the loss must be a node of the parameters' static graph, got "
                             f"{type(loss).__name__}")
        graph = loss.graph
        self._check_groups(op)
        params = self._trained(loss, var_list, op)
        for p in params:
            if p.graph is not graph:
                raise user_error(ValueError, op, f"Variable {p.name!r} belongs to another graph than the loss")
        if loss._shape != ():
            raise user_error(ValueError, op, f"the loss must be a scalar, got shape {shown(loss._shape)}", loss)
        return graph, params

    def _step_node(self, graph, params, make_grads, op):
        """The `dg.group` of the updates of `params` by the gradients `make_grads()` builds (in order)."""
        # all or nothing: a failure removes the nodes built here and restores the optimiser's own state
        saved_state = dict(self.state)
        saved_groups = list(self.param_groups)
        saved_lr = [g._lr_variable for g in self.param_groups]
        try:
            known = {id(p) for p in self._params()}
            new = [p for p in params if id(p) not in known]
            if new:
                self._add_param_group({"params": new}, op)
            with graph, atomic():
                grads = dict(zip(map(id, params), make_grads()))
                updates = []
                for group_ in self.param_groups:
                    trained = [p for p in group_["params"] if id(p) in grads]
                    if group_["params"] and not trained:
                        continue
                    lr = self._lr_variable(group_)
                    options = dict(group_, lr=lr)
                    for p in trained:
                        state = self._state_variables(p, group_)
                        new_value, new_state = self._update(p, grads[id(p)], dict(state), options)
                        updates.append(p.assign(new_value))
                        updates.extend(state[key].assign(new) for key, new in new_state.items())
                return group_updates(*updates, name=f"{type(self).__name__.lower()}_step")
        except BaseException:
            self.state.clear()
            self.state.update(saved_state)
            self.param_groups = saved_groups
            for g, lr in zip(self.param_groups, saved_lr):
                g._lr_variable = lr
            raise

    def _trained(self, loss, var_list, op):
        """The Variables `minimize(loss, var_list)` trains (checked, nothing changed yet)."""
        if var_list is not None:
            if isinstance(var_list, Symbol):
                var_list = [var_list]
            try:
                if isinstance(var_list, (dict, str, set, frozenset)):
                    raise TypeError
                params = list(var_list)
            except TypeError:
                raise user_error(TypeError, op, f"var_list must be a list of dg.Variables, got "
                                 f"{type(var_list).__name__}") from None
            for p in params:
                if not _is_variable(p):
                    raise user_error(TypeError, op, f"var_list must hold dg.Variables, got {type(p).__name__}")
                self._check_param(p, op)
            if len({id(p) for p in params}) != len(params):
                raise user_error(ValueError, op, "some Variables appear more than once in var_list")
            if not params:
                raise user_error(ValueError, op, "var_list is empty: no Variables to optimize")
            return params
        if not self._collects:
            return self._params()
        needed = walk([loss])
        params = [v for v in trainable_variables(loss.graph) if v in needed and v.dtype.kind == "f"]
        if not params:
            raise user_error(ValueError, op, "no Variables to optimize: the loss depends on no trainable "
                             "floating-point Variable of its graph (dg.Variable(..., trainable=True), the default)",
                             loss)
        return params

    def _lr_variable(self, group):
        if group._lr_variable is None:
            # by identity: list.index compares groups with ==, and Variables' == builds a node
            index = next(i for i, g in enumerate(self.param_groups) if g is group)
            group._lr_variable = Variable(float(group["lr"]), name=f"{type(self).__name__.lower()}/lr{index}",
                                          trainable=False)
        return group._lr_variable

    def _state_variables(self, p, group):
        """The parameter's state as Variables of its graph (created, from any loaded values, once)."""
        state = self.state.get(p)
        if state and all(_is_variable(v) for v in state.values()):
            return state
        initial = self._static_values(p.value, group, state)
        prefix = p.name or "param"
        variables = {}
        for key, value in initial.items():
            dtype = np.float64 if np.ndim(value) == 0 and key.lstrip("_") == "step" else p.dtype
            variables[key] = Variable(np.array(value, dtype=dtype), name=f"{prefix}/{key.lstrip('_')}",
                                      trainable=False)
        self.state[p] = variables
        return variables

    def _static_values(self, value, group, loaded):
        """A parameter's static state: its initial values, with those of `loaded` it still has in place."""
        values = self._init_state(value, group)
        values.update(self._static_extra_state(value, group, loaded))
        values.update({k: v for k, v in (loaded or {}).items() if k in values})
        return values

    # -- state dicts
    def state_dict(self):
        """The optimiser's state as PyTorch structures it: {"state": {index: {...}}, "param_groups": [...]}.

        Parameters are numbered in the order of the groups; the values are copies, NumPy arrays and
        Python numbers (so `dg.save` can store it).

        >>> import dagrad as dg
        >>> w = dg.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = dg.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward(); opt.step()
        >>> sd = opt.state_dict()
        >>> sd["state"]
        {0: {'momentum_buffer': array([2., 4.])}}
        >>> sd["param_groups"][0]["params"], sd["param_groups"][0]["lr"]
        ([0], 0.1)
        """
        index = {id(p): i for i, p in enumerate(self._params())}
        groups, state = [], {}
        for group in self.param_groups:
            groups.append({k: v for k, v in group.items() if k != "params"})
            groups[-1]["params"] = [index[id(p)] for p in group["params"]]
            for p in group["params"]:
                entry = self.state.get(p)
                plain = entry and self._export_state({k: _plain(v) for k, v in entry.items()}, group)
                if plain:
                    state[index[id(p)]] = plain
        return {"state": state, "param_groups": groups}

    def _export_state(self, entry, group):
        """A parameter's state as the state dict shows it (the step as a Python float)."""
        return {key: float(np.asarray(value)) if key == "step" else value
                for key, value in entry.items() if not key.startswith("_")}

    def load_state_dict(self, state_dict):
        """Loads a `state_dict()` (of an optimiser of the same kind over parameters of the same shapes).

        Everything is checked first: a mismatched state dict raises and changes nothing. Group
        options come from the state dict; the parameters stay.

        >>> import dagrad as dg
        >>> w = dg.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = dg.optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step()
        >>> w2 = dg.tensor([1.0, 2.0], requires_grad=True)
        >>> opt2 = dg.optim.Adam([w2])
        >>> opt2.load_state_dict(opt.state_dict())
        >>> opt2.param_groups[0]["lr"], opt2.state[w2]["step"]
        (0.1, 1.0)
        """
        op = f"{type(self).__name__}.load_state_dict"

        def bad(message, kind=ValueError):
            return user_error(kind, op, message)

        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise bad("expects a dict with 'state' and 'param_groups' (from Optimizer.state_dict())")
        saved_groups = state_dict["param_groups"]
        if isinstance(saved_groups, dict):  # e.g. restored from dotted keys: {"0": {...}, "1": {...}}
            if not all(isinstance(k, (int, str)) and str(k).isdigit() for k in saved_groups):
                raise bad(f"'param_groups' has keys {sorted(map(repr, saved_groups))}, not group indices")
            saved_groups = [saved_groups[k] for k in sorted(saved_groups, key=int)]
        if not isinstance(saved_groups, (list, tuple)) or not all(isinstance(g, dict) for g in saved_groups):
            raise bad("'param_groups' must be a list of dicts (from Optimizer.state_dict())")
        if len(saved_groups) != len(self.param_groups):
            raise bad(f"the state dict has {len(saved_groups)} parameter group(s), this optimizer "
                      f"{len(self.param_groups)}")
        index_to_param = {}
        new_groups = []
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            ids = saved.get("params")
            if ids is None:
                raise bad(f"parameter group {i} has no 'params'")
            ids = np.asarray(ids).reshape(-1)
            if ids.dtype.kind not in "iu" and ids.size:
                raise bad(f"parameter group {i} has 'params' of dtype {ids.dtype}, not parameter indices")
            ids = ids.tolist()
            if len(ids) != len(group["params"]):
                raise bad(f"parameter group {i} has {len(ids)} parameter(s) in the state dict and "
                          f"{len(group['params'])} in this optimizer")
            missing = [k for k in self.defaults if k not in saved]
            if missing:
                raise bad(f"parameter group {i} lacks option(s) {missing}; is it the state dict of another kind of "
                          "optimizer?")
            new = _ParamGroup({key: _as_number(value) for key, value in saved.items() if key != "params"})
            self._check_options(new, op)
            dict.__setitem__(new, "params", group["params"])
            new._lr_variable = group._lr_variable
            new_groups.append(new)
            for k, p in zip(ids, group["params"]):
                if k in index_to_param:
                    raise bad(f"parameter index {k} appears more than once in 'param_groups'")
                index_to_param[k] = (p, new)
        saved_state = state_dict["state"]
        if not isinstance(saved_state, dict):
            raise bad(f"'state' must be a dict of parameter index -> state, got {type(saved_state).__name__}")
        new_state = {}
        for key, entry in saved_state.items():
            try:
                k = int(key)
            except (TypeError, ValueError):
                raise bad(f"state key {key!r} is not a parameter index") from None
            if k not in index_to_param:
                raise bad(f"the state dict has state for parameter {k}, which is in none of its parameter groups")
            if not isinstance(entry, dict):
                raise bad(f"the state of parameter {k} is a {type(entry).__name__}, not a dict")
            p, group = index_to_param[k]
            expected = {k_ for k_ in self._init_state(np.zeros(0), group) if not k_.startswith("_")}
            optional = self._optional_state(group)
            keys = set(entry)
            if not (expected <= keys <= expected | optional):
                raise bad(f"the state of parameter {k} has entries {sorted(map(str, keys))}, expected "
                          f"{sorted(expected)}" + (f" (and optionally {sorted(optional)})" if optional else ""))
            loaded = {}
            for skey, value in entry.items():
                arr = np.asarray(value)
                if arr.dtype.kind not in "biuf":
                    raise bad(f"state {skey!r} of parameter {k} has dtype {arr.dtype}", TypeError)
                if skey == "step":
                    if arr.size != 1 or not np.isfinite(arr).all() or arr.reshape(()) < 0:
                        raise bad(f"the step of parameter {k} must be a number >= 0, got {value!r}")
                    loaded[skey] = float(arr.reshape(()))
                    continue
                if arr.shape != tuple(p.shape):
                    raise bad(f"state {skey!r} of parameter {k} has shape {arr.shape}, the parameter "
                              f"{tuple(p.shape)}")
                loaded[skey] = np.array(arr, dtype=p.dtype, copy=True)
            new_state[p] = loaded
        # everything checked: apply
        self.param_groups = new_groups
        for group in new_groups:
            if group._lr_variable is not None:
                _set_lr(group._lr_variable, group["lr"])
            for p in group["params"]:
                self._load_param_state(p, new_state.get(p, {}), group)

    def _load_param_state(self, p, loaded, group):
        """Replaces a parameter's state by `loaded` (Variables in static mode keep their identity)."""
        current = self.state.get(p)
        if current and all(_is_variable(v) for v in current.values()):
            values = self._static_values(p.value, group, loaded)
            for key, variable in current.items():
                if key in values:
                    variable.value = np.array(values[key], dtype=variable.dtype)
            return
        if loaded:
            self.state[p] = dict(loaded)
        else:
            self.state.pop(p, None)
            self._on_new_param(p, group)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params")
        lines.append(")")
        return "\n".join(lines)
