"""Users' own primitives in the functional style: autograd's `primitive`/`defvjp`/`defjvp` and
JAX's `custom_vjp`/`custom_jvp`.

Each is an `Op` like every built-in one (declared here as `dg.Function` declares its ops: not
registered by name, since users' names need not be unique), so eager calls, every transform,
static graphs and `dg.compile` treat it as any other op. The op's forward calls the user's
function on NumPy arrays; its rules call the user's rules, which receive Tensors whenever a
graph of the gradient is recorded, so rules written with dagrad functions differentiate again.

A rule given in one mode serves the other: a vjp is linear in its cotangent, so a tangent
J t is the gradient over g of <J^T g, t>, and a cotangent J^T g is the gradient over t of
<J t, g>. A function with no rule at all raises when it is differentiated, never a zero.

Only Tensors are the op's inputs (the leaves of the arguments, for JAX's styles); every other
argument or leaf (a number, a NumPy array, a string, None, a function, a shape) is a constant of
the call, passed to the user's function and rules as it is on every path. Several output leaves
are packed into one flat array (as function.py does) and unpacked by indexing.

What the user's rules return is checked where they return, by function.py's `checked_cotangent`
and `checked_tangent` (shape, type and dtype; None is a zero), the checks every custom rule shares.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ._core.errors import caller_line, user_error
from ._core.op import Op, apply
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.shapes import dtype_of, shape_of
from ._core.tensor import Tensor
from .function import (
    Rule,
    check_output,
    checked_cotangent,
    checked_primal,
    checked_tangent,
    in_dtype_of,
    packed_outputs,
    split,
    stand_in_shape,
    static_argument,
    unpacked_parts,
)
from .ops.elementwise import astype, zeros_like
from .ops.reduce import sum as reduce_sum
from .ops.shape import concatenate, ravel
from .transforms import grad as grad_of
from .vspace import vspace

__all__ = ["primitive", "defvjp", "defjvp", "defvjp_argnum", "defjvp_argnum", "custom_vjp", "custom_jvp"]


class _Call:
    """One application: its constant arguments, how to rebuild the arguments from the op's inputs,
    the structure of the output (set by forward), and the user's line that made it."""

    __slots__ = ("kwargs", "static", "fixed", "nleaves", "args_def", "dtypes", "where", "treedef", "outputs")

    def __init__(self, leaves, kwargs=None, static=None, args_def=None):
        self.kwargs = kwargs or {}
        self.static = static or {}  # position -> value of JAX's nondiff_argnums
        # constant leaves; a NumPy array copied, as the engine copies what rules save (the caller may write into it)
        self.fixed = {k: leaf.copy() if type(leaf) is np.ndarray else leaf
                      for k, leaf in enumerate(leaves) if not isinstance(leaf, Tensor)}
        self.nleaves = len(leaves)
        self.args_def = args_def  # the structure of the other arguments (None: each argument is a leaf)
        self.dtypes = [leaf.dtype for leaf in leaves if isinstance(leaf, Tensor)]  # of the op's inputs
        self.where = caller_line()
        self.treedef = None
        self.outputs = None

    def inputs(self, leaves):
        """The op's inputs among the leaves: the Tensors."""
        return [leaf for k, leaf in enumerate(leaves) if k not in self.fixed]

    def positions(self):
        """The leaf number of each of the op's inputs."""
        return [k for k in range(self.nleaves) if k not in self.fixed]

    def leaves(self, values):
        """Every leaf again: the op's inputs `values` with the constants in their places."""
        it = iter(values)
        return [self.fixed[k] if k in self.fixed else next(it) for k in range(self.nleaves)]

    def arguments(self, values):
        """The user's positional arguments again, from the op's inputs."""
        return self.rebuild(self.leaves(values))

    def rebuild(self, leaves):
        """The user's positional arguments from every leaf (JAX's nondiff arguments put back in their places)."""
        if self.args_def is None:
            return leaves
        dynamic = iter(tree_unflatten(self.args_def, leaves))
        return [self.static[k] if k in self.static else next(dynamic)
                for k in range(len(self.args_def[1]) + len(self.static))]

    def __repr__(self):
        return "call"


def _make_op(name, kind, compute, vjp, jvp):
    """An op computing `compute(values, call)` (a pytree of arrays) with the engine rules vjp, jvp
    (`kind`: the decorator that made it, as errors name it)."""

    def forward(*values, call):
        out = compute(values, call)
        leaves, treedef = tree_flatten(out)
        if not leaves:
            raise user_error(TypeError, name, "returned an empty structure; return an array or a pytree of arrays")
        for leaf in leaves:
            check_output(name, leaf)
        call.treedef = treedef
        if treedef is None:
            return out
        packed, call.outputs = packed_outputs(leaves)
        return packed

    forward.custom_op = kind  # export refuses it by this mark: the forward is the user's code

    def shape(*shapes, call):
        return stand_in_shape(lambda *stand_ins: forward(*stand_ins, call=call), shapes, call.dtypes)

    return Op(name, forward, vjp, jvp, shape, True)


def _unpacked(packed, call):
    """The user's view of an output-shaped value (the output, a cotangent): a pytree when forward returned one."""
    if call.treedef is None:
        return packed
    return tree_unflatten(call.treedef, unpacked_parts(packed, call.outputs))


def _packed_tangent(rule, tree, out, call, what):
    """The engine's view of an output-shaped pytree that a tangent rule returned, each leaf checked."""
    if call.treedef is None:
        t = checked_tangent(rule, tree, shape_of(out), dtype_of(out), what)
        return _float_zeros(out) if t is None else t
    leaves = [None] * len(call.outputs) if tree is None else tree_flatten(tree)[0]
    if len(leaves) != len(call.outputs):
        raise user_error(ValueError, rule.name, f"returned a tangent with {len(leaves)} leaves for {what}, which has "
                         f"{len(call.outputs)}{rule.where()}")
    parts = []
    for i, (t, part, (shape, dtype)) in enumerate(zip(leaves, split(out, call.outputs), call.outputs)):
        t = checked_tangent(rule, t, shape, dtype, f"leaf {i} of {what}")
        parts.append(ravel(zeros_like(part) if t is None else t))
    return concatenate(parts)


def _check_primal(rule, primal, out, call):
    """A custom_jvp rule's primal output has the function's output's structure, shapes and dtypes (JAX's check)."""
    if call.treedef is None:
        if isinstance(primal, (tuple, list, dict)):
            raise user_error(TypeError, rule.name, f"returned a {type(primal).__name__} as the primal output, but the "
                             f"function returns one array{rule.where()}")
        checked_primal(rule, primal, shape_of(out), dtype_of(out), "the output")
        return
    leaves, treedef = tree_flatten(primal)
    if treedef != call.treedef:
        raise user_error(ValueError, rule.name, f"returned a primal output of another structure ({len(leaves)} "
                         f"leaves) than the function's output ({len(call.outputs)} leaves): the primal output is the "
                         f"function's output at the primals{rule.where()}")
    for i, (leaf, (shape, dtype)) in enumerate(zip(leaves, call.outputs)):
        checked_primal(rule, leaf, shape, dtype, f"leaf {i} of the output")


def _result(op, leaves, call):
    out = apply(op, tuple(call.inputs(leaves)), {"call": call})
    if call.treedef is not None and None in shape_of(out):
        raise user_error(TypeError, op.name, "a function with several outputs needs known sizes in a static graph "
                         "(its outputs are unpacked by position)", *[a for a in leaves if isinstance(a, Tensor)])
    return _unpacked(out, call)


def _name(f):
    return getattr(f, "__name__", type(f).__name__)


def _forward(fun, call, *args, **kwargs):
    """The user's function of a custom op on NumPy arrays; an exception it raises names it, as a rule's."""
    try:
        return fun(*args, **kwargs)
    except Exception as err:  # the Rule only now: the forward runs at every call
        raise Rule(_name(fun), fun, call.where, "function").failed(err) from err


def _missing(name, what, k=None):
    arg = "" if k is None else f" with respect to argument {k}"
    return user_error(NotImplementedError, name, f"is differentiated{arg}, but has no {what}")


def _float_zeros(x):
    z = zeros_like(x)
    return z if dtype_of(z).kind in "fc" else astype(z, np.float64)


def _zero_tangent(leaf):
    """The tangent of a constant leaf given to a custom_jvp rule: a zero for numbers and arrays (of their
    dtype when it is floating, so that it promotes nothing: a Python 0.0 for a Python number), else None."""
    if isinstance(leaf, (bool, int, float, complex)):
        return 0.0
    if isinstance(leaf, (np.ndarray, np.generic)):
        return np.zeros(np.shape(leaf), leaf.dtype if leaf.dtype.kind in "fc" else np.float64)
    return None


# ---------------------------------------------------------------- autograd's style


class primitive:
    """autograd's `primitive`: `f` computes on NumPy arrays; the result is a function dagrad
    differentiates with the rules given by `defvjp` / `defjvp`.

    >>> import dagrad as dg, numpy as np
    >>> logsumexp = dg.primitive(lambda x: np.log(np.sum(np.exp(x))))
    >>> dg.defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
    >>> dg.grad(logsumexp)(np.zeros(2))
    array([0.5, 0.5])
    """

    def __init__(self, f):
        if not callable(f):
            raise user_error(TypeError, "primitive", f"takes a function, not a {type(f).__name__}")
        functools.update_wrapper(self, f)
        self.fun = f
        self.vjps = {}  # argument number -> maker(ans, *args, **kwargs) -> (g -> cotangent), or None
        self.jvps = {}  # argument number -> jvp(g, ans, *args, **kwargs), or None
        self._ops = {}  # one op per (number of arguments, positions of the Tensor ones): a rule per input

    def __call__(self, *args, **kwargs):
        name = _name(self.fun)
        for k, a in enumerate(args):
            static_argument(name, k, a)
        for key, a in kwargs.items():
            if isinstance(a, Tensor):
                raise user_error(TypeError, name, f"keyword argument {key!r} is a Tensor: keyword arguments are "
                                 "constants, passed as they are and never differentiated (as in autograd); pass it "
                                 "as a positional argument", a)
            static_argument(name, repr(key), a)
        call = _Call(args, kwargs)
        positions = tuple(call.positions())
        op = self._ops.get((len(args), positions))
        if op is None:
            op = self._ops[len(args), positions] = self._make(positions)
        return _result(op, args, call)

    def _make(self, positions):
        # one rule per input: the input at argument number k has k's rules
        name = _name(self.fun)
        return _make_op(name, "a dg.primitive", self._forward,
                        tuple(functools.partial(self._vjp, k) for k in positions),
                        tuple(functools.partial(self._jvp, k) for k in positions))

    def _forward(self, values, call):
        return _forward(self.fun, call, *call.arguments(values), **call.kwargs)

    def _vjp(self, k, g, out, *inputs, call):
        args = call.arguments(inputs)
        if k in self.vjps:
            maker = self.vjps[k]
            if maker is None:  # the engine takes a rule's None for a bug: a zero, as autograd gives
                return _float_zeros(args[k])
            name = _name(self.fun)
            rule = Rule(f"{name} vjp maker (dg.defvjp)", maker, call.where).call(_unpacked(out, call), *args,
                                                                                 **call.kwargs)
            checked = Rule(f"{name} vjp (dg.defvjp)", rule, call.where)
            if not callable(rule):
                raise user_error(TypeError, checked.name, f"the maker for argument {k} returned a "
                                 f"{type(rule).__name__}, not a function g -> cotangent{checked.where()}")
            ct = checked_cotangent(checked, k, checked.call(_unpacked(g, call)), args[k])
            return zeros_like(args[k]) if ct is None else ct
        if k not in self.jvps:
            raise _missing(_name(self.fun), "vjp (dg.defvjp) nor jvp (dg.defjvp)", k)
        if self.jvps[k] is None:
            return _float_zeros(args[k])
        # the cotangent J^T g is the gradient over t of <J t, g>
        ct = grad_of(lambda t: reduce_sum(self._jvp(k, t, out, *inputs, call=call) * g))(_float_zeros(args[k]))
        return in_dtype_of(ct, args[k])

    def _jvp(self, k, t, out, *inputs, call):
        args = call.arguments(inputs)
        if k in self.jvps:
            rule = self.jvps[k]
            if rule is None:
                return _float_zeros(out)
            checked = Rule(f"{_name(self.fun)} jvp (dg.defjvp) for argument {k}", rule, call.where)
            return _packed_tangent(checked, checked.call(t, _unpacked(out, call), *args, **call.kwargs), out, call,
                                   "the output")
        if k not in self.vjps:
            raise _missing(_name(self.fun), "jvp (dg.defjvp) nor vjp (dg.defvjp)", k)
        if self.vjps[k] is None:
            return _float_zeros(out)
        # the tangent J t is the gradient over g of <J^T g, t>
        return in_dtype_of(grad_of(lambda g: reduce_sum(self._vjp(k, g, out, *inputs, call=call) * t))(
            _float_zeros(out)), out)

    def __repr__(self):
        return f"<dagrad primitive {_name(self.fun)}>"

    # autograd's spellings from before `defvjp(f, *makers)` (deprecated there since 1.2), for old code
    def defgrad(self, maker, argnum=0):
        """Deprecated: `dg.defvjp(f, maker, argnums=(argnum,))`."""
        warnings.warn("primitive.defgrad is deprecated (as in autograd): use dg.defvjp", DeprecationWarning,
                      stacklevel=2)
        defvjp(self, maker, argnums=(argnum,))

    def defvjp(self, vjp, argnum=0):
        """Deprecated: the rule `vjp(g, ans, vs, gvs, *args)` (vs, gvs: the vspaces of ans and g) for `argnum`.

        >>> import warnings, dagrad as dg
        >>> mul = dg.primitive(lambda x, y: x * y)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     mul.defvjp(lambda g, ans, vs, gvs, x, y: g * y)
        >>> float(dg.grad(mul)(3.0, 4.0))
        4.0
        """
        warnings.warn("primitive.defvjp is deprecated (as in autograd): use dg.defvjp", DeprecationWarning,
                      stacklevel=2)
        maker = lambda ans, *args, **kwargs: lambda g: vjp(g, ans, vspace(ans), vspace(g), *args, **kwargs)
        defvjp(self, maker, argnums=(argnum,))

    def defvjp_is_zero(self, argnums=(0,)):
        """Deprecated: the arguments `argnums` get zero gradients (`dg.defvjp(f, None, ...)`)."""
        warnings.warn("primitive.defvjp_is_zero is deprecated (as in autograd): use dg.defvjp(f, None)",
                      DeprecationWarning, stacklevel=2)
        defvjp(self, *[None] * len(argnums), argnums=tuple(argnums))


def _checked_primitive(prim, where):
    if not isinstance(prim, primitive):
        raise user_error(TypeError, where, f"takes a function made by dg.primitive, not a {type(prim).__name__}")


def _rules(where, rules, argnums):
    argnums = range(len(rules)) if argnums is None else argnums
    if len(argnums) != len(rules):
        raise user_error(ValueError, where, f"got {len(rules)} rule(s) for argnums {tuple(argnums)}")
    for rule in rules:
        if rule is not None and not callable(rule):
            raise user_error(TypeError, where, f"a rule is a function or None, not a {type(rule).__name__}")
    return dict(zip(argnums, rules))


def defvjp(prim, *makers, argnums=None):
    """autograd's `defvjp`: one maker per argument, `make(ans, *args, **kwargs) -> (g -> cotangent)`;
    None for an argument without a gradient (zeros, as in autograd). An argument without a maker (nor a
    `defjvp` rule) raises when differentiated.

    >>> import dagrad as dg, numpy as np
    >>> mul = dg.primitive(lambda x, y: x * y)
    >>> dg.defvjp(mul, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)
    >>> float(dg.grad(mul, argnums=1)(3.0, 4.0))
    3.0
    """
    _checked_primitive(prim, "defvjp")
    prim.vjps.update(_rules("defvjp", makers, argnums))


def defjvp(prim, *rules, argnums=None):
    """autograd's `defjvp`: one rule per argument, `jvp(g, ans, *args, **kwargs)` -> the output's
    tangent for the argument's tangent `g`; None for an argument without a derivative (zeros).

    >>> import dagrad as dg, numpy as np
    >>> sin = dg.primitive(np.sin)
    >>> dg.defjvp(sin, lambda g, ans, x: g * dg.numpy.cos(x))
    >>> float(dg.grad(sin)(0.0))  # reverse mode from the jvp rule
    1.0
    """
    _checked_primitive(prim, "defjvp")
    prim.jvps.update(_rules("defjvp", rules, argnums))


class _ArgnumRule(dict):
    """Every argument number, each mapped to a rule that passes the number on."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __contains__(self, k):
        return True

    def __missing__(self, k):
        return functools.partial(self.make, k)


def defvjp_argnum(prim, maker):
    """autograd's `defvjp_argnum`: `maker(argnum, ans, args, kwargs) -> (g -> cotangent)` for every argument.

    >>> import dagrad as dg, numpy as np
    >>> total = dg.primitive(lambda *xs: sum(xs))
    >>> dg.defvjp_argnum(total, lambda k, ans, args, kwargs: lambda g: g)
    >>> float(dg.grad(total, argnums=2)(1.0, 2.0, 3.0))
    1.0
    """
    _checked_primitive(prim, "defvjp_argnum")
    prim.vjps = _ArgnumRule(lambda k, ans, *args, **kwargs: maker(k, ans, args, kwargs))


def defjvp_argnum(prim, rule):
    """autograd's `defjvp_argnum`: `rule(argnum, g, ans, args, kwargs)` -> the output's tangent.

    >>> import dagrad as dg, numpy as np
    >>> total = dg.primitive(lambda *xs: sum(xs))
    >>> dg.defjvp_argnum(total, lambda k, g, ans, args, kwargs: g)
    >>> float(dg.jvp(total, (1.0, 2.0), (1.0, 1.0))[1])
    2.0
    """
    _checked_primitive(prim, "defjvp_argnum")
    prim.jvps = _ArgnumRule(lambda k, g, ans, *args, **kwargs: rule(k, g, ans, args, kwargs))


# ---------------------------------------------------------------- JAX's style


class _Custom:
    """What custom_vjp and custom_jvp share: the op over the leaves of the differentiable arguments."""

    def __init__(self, fun, nondiff_argnums, where):
        if not callable(fun):
            raise user_error(TypeError, where, f"takes a function, not a {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        self.op = _make_op(_name(fun), f"a dg.{where}", lambda values, call: _forward(fun, call,
                                                                                      *call.arguments(values)),
                           self._vjp, self._jvp)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise user_error(TypeError, _name(self.fun), "takes positional arguments only (as JAX's custom rules: "
                             "bind keyword arguments with functools.partial)")
        for k in self.nondiff_argnums:
            if not -len(args) <= k < len(args):
                raise user_error(ValueError, _name(self.fun), f"nondiff_argnums holds {k}, but it was called with "
                                 f"{len(args)} argument(s)")
        static = {k % len(args): args[k] for k in self.nondiff_argnums}
        leaves, args_def = tree_flatten([a for k, a in enumerate(args) if k not in static])
        return _result(self.op, leaves, _Call(leaves, static=static, args_def=args_def))


class custom_vjp(_Custom):
    """JAX's `custom_vjp`: `f.defvjp(fwd, bwd)` gives `f` its reverse-mode rule; `fwd(*args)` returns
    `(out, residuals)` and `bwd(*nondiff_args, residuals, g)` a tuple with one cotangent (pytree, or
    None for zero) per differentiable argument. `fwd` runs again in the backward pass (the residuals
    are recomputed there, so they are graph values and higher order works). Forward mode is derived.

    >>> import dagrad as dg, numpy as np
    >>> @dg.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (dg.numpy.clip(g, -1.0, 1.0),))
    >>> float(dg.grad(lambda x: 5.0 * clip_gradient(x))(2.0))
    1.0
    """

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums, "custom_vjp")
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        """Sets the rule: `fwd(*args) -> (out, residuals)`, `bwd(*nondiff_args, residuals, g) -> cotangents`."""
        if not (callable(fwd) and callable(bwd)):
            raise user_error(TypeError, f"{_name(self.fun)}.defvjp", "takes two functions, fwd and bwd")
        self.fwd, self.bwd = fwd, bwd

    def _vjp(self, g, out, *values, call):
        name = _name(self.fun)
        if self.bwd is None:
            raise _missing(name, "rule (f.defvjp(fwd, bwd))")
        args = call.arguments(values)
        positions = [k for k in range(len(args)) if k not in call.static]  # of the differentiable arguments
        fwd = Rule(f"{name} fwd (custom_vjp)", self.fwd, call.where)
        fwd_out = fwd.call(*args)
        if not (isinstance(fwd_out, tuple) and len(fwd_out) == 2):
            raise user_error(TypeError, fwd.name, f"returns a pair (output, residuals), not a "
                             f"{type(fwd_out).__name__}{fwd.where()}")
        rule = Rule(f"{name} bwd (custom_vjp)", self.bwd, call.where)
        cts = rule.call(*[args[k] for k in sorted(call.static)], fwd_out[1], _unpacked(g, call))
        if not isinstance(cts, (tuple, list)) or len(cts) != len(positions):
            got = len(cts) if isinstance(cts, (tuple, list)) else f"a {type(cts).__name__}"
            raise user_error(ValueError, rule.name, f"returns a tuple with one cotangent per differentiable "
                             f"argument ({len(positions)}), not {got}{rule.where()}")
        flat = [None] * call.nleaves
        offset = 0
        for p, ct in zip(positions, cts):
            arg_leaves, arg_def = tree_flatten(args[p])
            if ct is None:
                ct_leaves = [None] * len(arg_leaves)
            elif arg_def is None:
                ct_leaves = [ct]  # one value (a list there is refused as a gradient, not taken as leaves)
            else:
                ct_leaves = tree_flatten(ct)[0]
                if len(ct_leaves) != len(arg_leaves):
                    raise user_error(ValueError, rule.name, f"the cotangent for argument {p} has {len(ct_leaves)} "
                                     f"leaves, but the argument has {len(arg_leaves)}{rule.where()}")
            for i, (c, a) in enumerate(zip(ct_leaves, arg_leaves)):
                if offset + i not in call.fixed:  # a constant leaf has no gradient
                    flat[offset + i] = checked_cotangent(rule, p if arg_def is None else f"{p} (leaf {i})", c, a)
            offset += len(arg_leaves)
        return tuple(flat[k] for k in call.positions())

    def _jvp(self, tangents, out, *leaves, call):
        # J t as the gradient over g of <J^T g, t>
        def inner(g):
            total = 0.0
            for ct, t in zip(self._vjp(g, out, *leaves, call=call), tangents):
                if ct is not None and t is not None:
                    total = total + reduce_sum(ct * t)
            return total

        return in_dtype_of(grad_of(inner)(_float_zeros(out)), out)


class custom_jvp(_Custom):
    """JAX's `custom_jvp`: `f.defjvp(rule)` gives `f` its forward-mode rule, `rule(*nondiff_args,
    primals, tangents) -> (primal_out, tangent_out)` (primals and tangents: tuples of the
    differentiable arguments). Reverse mode is derived from it (write the tangent with dagrad functions).

    >>> import dagrad as dg, numpy as np
    >>> @dg.custom_jvp
    ... def log1pexp(x):
    ...     return np.log1p(np.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t * (1 - 1 / (1 + dg.numpy.exp(x)))
    >>> float(dg.grad(log1pexp)(100.0))
    1.0
    """

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums, "custom_jvp")
        self.rule = None

    def defjvp(self, rule):
        """Sets the rule `rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`; returns it."""
        if not callable(rule):
            raise user_error(TypeError, f"{_name(self.fun)}.defjvp", "takes a function")
        self.rule = rule
        return rule

    def _jvp(self, tangents, out, *values, call):
        name = _name(self.fun)
        if self.rule is None:
            raise _missing(name, "rule (f.defjvp(rule))")
        it = iter(_float_zeros(x) if t is None else t for t, x in zip(tangents, values))
        tangent_args = call.rebuild([_zero_tangent(call.fixed[k]) if k in call.fixed else next(it)
                                     for k in range(call.nleaves)])
        args = call.arguments(values)
        primals = [a for k, a in enumerate(args) if k not in call.static]
        rule = Rule(f"{name} jvp rule (custom_jvp)", self.rule, call.where)
        result = rule.call(*[args[k] for k in sorted(call.static)], tuple(primals),
                           tuple(t for k, t in enumerate(tangent_args) if k not in call.static))
        if not (isinstance(result, tuple) and len(result) == 2):
            raise user_error(TypeError, rule.name, f"returns a pair (primal_out, tangent_out), not a "
                             f"{type(result).__name__}{rule.where()}")
        _check_primal(rule, result[0], out, call)
        return _packed_tangent(rule, result[1], out, call, "the output")

    def _vjp(self, g, out, *leaves, call):
        # J^T g as the gradient over the tangents of <J t, g> (over the op's inputs: the Tensor leaves)
        floating = [k for k, x in enumerate(leaves) if dtype_of(x).kind in "fc"]
        if not floating:
            return (None,) * len(leaves)

        def inner(*ts):
            tangents = [None] * len(leaves)
            for k, t in zip(floating, ts):
                tangents[k] = t
            return reduce_sum(self._jvp(tangents, out, *leaves, call=call) * g)

        grads = grad_of(inner, argnums=tuple(range(len(floating))))(*[zeros_like(leaves[k]) for k in floating])
        cts = [None] * len(leaves)
        for k, ct in zip(floating, grads):
            cts[k] = in_dtype_of(ct, leaves[k])
        return tuple(cts)
