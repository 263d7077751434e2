"""`dg.checkpoint(f)`: rematerialisation. The backward pass computes f's intermediates again instead
of keeping them from the forward pass (JAX's `jax.checkpoint`, PyTorch's `torch.utils.checkpoint`).

f runs once, as it would anyway: its operations are recorded (as nodes of a graph, or as eager tensors).
The recorded nodes between f's inputs and its output, the *region*, become a tape: a list of steps
(op, arguments, attributes) that computes them again from the region's *externals* (every tensor a
step reads that was not computed inside: f's arguments, the parameters it closes over, constants).
f's output is then wrapped in one node of the op CHECKPOINT whose inputs are the externals and whose
vjp replays the tape and sweeps back through the replay.

- Eagerly (and under dg.grad, dg.vjp, ...) nothing else refers to the region's nodes, so their values
  are freed as soon as f returns: only the externals are kept for the backward pass.
- In a static graph or under dg.compile the region's nodes stay in the graph as the forward pass; the
  vjp builds the region again from the externals passed through an optimization barrier (BARRIER, an
  alias that the passes never merge), so that CSE cannot merge the recomputation with the forward
  nodes; the generated code deletes the forward's intermediates after their last use and computes
  each recomputation just before the gradient nodes that read it.

The tape replays the recorded ops, not f: f's Python code runs once, so its side effects (a dropout
mask drawn, BatchNorm's running statistics) happen once. A random op's result is an external: the
backward pass uses the mask the forward pass drew.
"""

from __future__ import annotations

import numpy as np

from ._core import batching
from ._core.autodiff import check_numeric, replay_inputs, reverse_sweep
from ._core.dtypes import first
from ._core.errors import user_error
from ._core.ir import Symbol, build
from ._core.op import Op, _result, apply, owned_copies
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.shapes import dtype_of, shape_of
from ._core.tensor import Tensor, _leaf, enable_grad, is_symbolic, next_seq, write_clock
from .ops.elementwise import astype
from .ops.shape import concatenate, getitem, ravel, reshape
from .transforms import _next_level

__all__ = ["checkpoint"]


def _same(x):
    return x


def _emit_alias(writer, node, args, target):
    return [f"{target} = {args[node.op.alias]}"]  # the input itself: no call, no copy


# what passes through it is not recognised as its input: a recomputation built from it is never merged
# with the forward nodes built from the input (JAX's optimization_barrier); generated as `t = x`
BARRIER = Op("optimization_barrier", _same, (lambda g, out, x: g,), (lambda t, out, x: t,), lambda shape: shape,
             True, dtype=first, batch=batching.elementwise, emit=_emit_alias, alias=0, barrier=True)


def _output(*inputs, tape):
    return inputs[-1]


def _vjp(g, out, *inputs, tape):
    return tape.vjp(g, out, inputs)


def _jvp(tangents, out, *inputs, tape):
    # the output's own tangent: a graph's node returns its last input. (Checkpoint nodes are made by
    # _Tape.wrap, never by apply, so forward mode does not reach them; this keeps the Op complete.)
    return tangents[-1]


# f's output: its inputs are the region's externals and, in a graph, the output node itself, which it
# returns (so the passes drop it once the gradients are built); its vjp recomputes the region
CHECKPOINT = Op("checkpoint", _output, _vjp, _jvp, lambda *shapes, tape: shapes[-1], True,
                dtype=lambda *dtypes, tape: dtypes[-1], emit=_emit_alias, alias=-1)


def checkpoint(f=None, *args, prevent_cse=True, policy=None, static_argnums=(), use_reentrant=None,
               preserve_rng_state=True, **kwargs):
    """`f` with the same arguments and results, whose backward pass recomputes f's intermediate
    values from its inputs instead of keeping them from the forward pass: memory for compute.

    Arguments are arrays, Tensors or pytrees of them, as are the results. Gradients (eager
    `backward()`, `dg.grad`, `dg.vjp`, static `dg.gradients`, `dg.compile`) are those of `f`, and
    `f`'s parameters (an `nn.Module`'s, or any tensor it closes over) receive theirs; forward mode
    (`dg.jvp`) just runs `f`. Use it as a decorator too.

    JAX's and PyTorch's spellings work: `dg.checkpoint(f)(x)` (`jax.checkpoint`; `prevent_cse` and
    `static_argnums` are accepted: the recomputation is never merged with the forward, and any
    argument may be a Python value) and `dg.checkpoint(f, x)` (`torch.utils.checkpoint.checkpoint`,
    which calls at once; `use_reentrant` and `preserve_rng_state` are accepted: the backward pass
    reuses the forward's random draws, as PyTorch's restored RNG state does). Only `policy=None`
    is supported: everything inside `f` is recomputed.

    >>> import dagrad as dg, numpy as np
    >>> layer = dg.checkpoint(lambda x: dg.tanh(x) * 2.0)
    >>> dg.grad(lambda x: layer(x).sum())(np.array([0.0, 1.0]))
    array([2.        , 0.83994868])
    """
    if f is None:  # @dg.checkpoint(prevent_cse=...)
        return lambda g: checkpoint(g, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)
    if policy is not None:
        raise user_error(NotImplementedError, "checkpoint", "only policy=None is supported (nothing inside f is "
                         "saved: all of it is recomputed); to keep some values, checkpoint smaller functions")
    if not callable(f):
        raise user_error(TypeError, "checkpoint", f"expects a function, got {type(f).__name__}")

    def checkpointed(*args, **kwargs):
        start = next_seq()
        out = f(*args, **kwargs)
        return _checkpointed(out, start)

    name = getattr(f, "__name__", type(f).__name__)
    checkpointed.__name__ = checkpointed.__qualname__ = f"checkpoint({name})"
    checkpointed.__doc__ = f"checkpoint of {name}"
    checkpointed.__wrapped__ = f  # inspect.signature (and dg.compile's input names) see f's parameters
    if args or kwargs:  # torch.utils.checkpoint.checkpoint(f, *args): the call itself
        return checkpointed(*args, **kwargs)
    return checkpointed


def _checkpointed(out, start):
    """f's results `out`, their differentiable parts made after `start` wrapped in checkpoint nodes."""
    leaves, treedef = tree_flatten(out)
    for leaf in leaves:
        check_numeric(leaf, "checkpoint", "the function's output")
    made = [k for k, o in enumerate(leaves) if _recorded(o, start)]
    if not made:  # nothing to differentiate (plain arrays, no_grad, forward mode): nothing to save either
        return out
    # the outputs of the innermost transform (the highest level) are wrapped; any others are left as they are
    level = max(leaves[k]._level for k in made)
    symbolic = any(leaves[k]._symbolic and leaves[k]._level == level for k in made)
    made = [k for k in made if leaves[k]._level == level and leaves[k]._symbolic == symbolic]
    if len(made) > 1 and any(None in shape_of(leaves[k]) for k in made):
        groups = [[k] for k in made]  # unknown sizes cannot be packed: one checkpoint per output
    else:
        groups = [made]
    for group in groups:
        packed, unpack = _packed([leaves[k] for k in group])
        tape, externals = _Tape.record(packed, start)
        for k, value in zip(group, unpack(tape.wrap(externals, packed))):
            leaves[k] = value
    return tree_unflatten(treedef, leaves)


def _recorded(value, start):
    return isinstance(value, Tensor) and value.op is not None and value._requires_grad and value._seq > start


def _packed(outputs):
    """Several outputs as one (a checkpoint node has one value, and its backward pass must see all
    their cotangents at once): raveled, cast to a common floating dtype and concatenated; and the
    function that takes them apart again. Casting float16/32 to float64 and back is exact."""
    if len(outputs) == 1:
        return outputs[0], lambda packed: [packed]
    dtype = np.result_type(*[dtype_of(o) for o in outputs])
    parts = [(shape_of(o), dtype_of(o)) for o in outputs]
    packed = concatenate([ravel(o if dtype_of(o) == dtype else astype(o, dtype)) for o in outputs])

    def unpack(packed):
        values, offset = [], 0
        for shape, kind in parts:
            size = int(np.prod(shape, dtype=np.int64))
            value = reshape(getitem(packed, slice(offset, offset + size)), shape)
            values.append(value if kind == dtype else astype(value, kind))
            offset += size
        return values

    return packed, unpack


class _Ref:
    """A step's argument computed by the tape: entry `index` of the replay's values (the externals,
    then the steps' results)."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class _Tape:
    """The recorded region of one checkpointed call, as steps that compute it again from its externals."""

    def __init__(self, steps, wanted):
        self.steps = steps  # (op, arguments with _Ref for computed ones, attrs, the node's line or None)
        self.wanted = wanted  # per external: whether it needs a cotangent (it requires grad at the region's level)
        self.n = len(wanted)

    def __repr__(self):
        return f"<recomputes {len(self.steps)} nodes>"

    @classmethod
    def record(cls, out, start):
        """The tape of the nodes `out` depends on that were made after `start` at out's level, and the
        externals they read, in the order first read."""
        level, symbolic = out._level, out._symbolic

        def inside(a):
            return (isinstance(a, Tensor) and a._level == level and a._symbolic == symbolic and a.op is not None
                    and a._seq > start and not a.op.random and a.inputs is not None)

        # a value written in place after a node read it: refused where the un-checkpointed backward refuses (a
        # value a rule saved); else a recorded write (`h += 1`) kept the node h was, which the node's step reads,
        # as the reverse sweep does; a write under no_grad is refused (the replay would differ)
        written = write_clock.last > start
        region = {}  # node -> its inputs as it recorded them
        stack = [out]
        while stack:
            node = stack.pop()
            if node not in region:
                inputs = region[node] = replay_inputs(node, level) if written else node.inputs
                stack.extend(a for a in inputs if inside(a) and a not in region)
        order = sorted(region, key=lambda node: node._seq)  # creation order is an order of computation
        index = {}
        externals = []
        for node in order:
            for a in region[node]:
                if isinstance(a, Tensor) and a not in region and a not in index:
                    index[a] = len(externals)
                    externals.append(a)
        for node in order:
            index[node] = len(index)
        # the steps keep their own copies of the arrays the caller passed: the replay reads them all, and the
        # caller may write into them before backward (recording copies only those a rule reads, op.saved_copies)
        steps = [(node.op, *owned_copies(tuple(_Ref(index[a]) if isinstance(a, Tensor) else a for a in region[node]),
                                         node.attrs), _where(node)) for node in order]
        wanted = [a._requires_grad and a._level == level for a in externals]
        return cls(steps, wanted), externals

    def wrap(self, externals, out):
        """The checkpoint node standing for the region's output `out` (a node of its level)."""
        attrs = {"tape": self}
        if out._symbolic:  # a graph: the node reads the output, which stays the forward pass
            return build(CHECKPOINT, (*externals, out), attrs)
        # one level down, only the output's value is kept: the region's nodes are freed with `out`
        return _result(CHECKPOINT, out._value, tuple(externals), attrs, True, out._level)

    def replay(self, inputs):
        """The region computed again from `inputs` (one per external): every value, the output last."""
        values = list(inputs)
        start = next_seq()
        for op, args, attrs, where in self.steps:
            args = tuple(values[a.index] if type(a) is _Ref else a for a in args)
            if op is CHECKPOINT:  # a checkpointed call inside this one: recomputed, and checkpointed again
                tape = attrs["tape"]
                out = args[-1] if len(args) > tape.n else tape.replay(args)[-1]
                value = tape.wrap(args[:tape.n], out) if _recorded(out, start) else out
            else:
                value = apply(op, args, attrs)
            if where is not None:
                node = _symbol(value)
                if node is not None and node._seq > start:
                    node.where = f"{where} (recomputed)"
            values.append(value)
        return values

    def vjp(self, g, out, inputs):
        """The cotangents of the checkpoint node's inputs, by a reverse sweep over a replay of the region.
        In graph mode (`out` is the node and `inputs` are its own inputs: create_graph, static gradients) the
        replay reads the inputs, at their level, so the result is differentiable again; otherwise it reads
        their values, as new leaves at a level of their own."""
        n = self.n
        graph_mode = (isinstance(out, Tensor) and out.op is CHECKPOINT and out.attrs["tape"] is self
                      and all(a is b for a, b in zip(out.inputs, inputs)))
        with enable_grad():
            if graph_mode:
                level = out._level
                sources = [apply(BARRIER, (a,)) if isinstance(a, Symbol) else a for a in inputs[:n]]
                targets = {s for s, a in zip(sources, inputs) if isinstance(s, Tensor) and s._requires_grad
                           and s._level == level}
                values = self.replay(sources)
                within = {v for v in values if isinstance(v, Tensor)}
                found = reverse_sweep([values[-1]], [g], level, graph_mode=True, targets=targets, within=within)
            else:
                # a fresh level keeps the replay apart from any level the values belong to; plain arrays
                # belong to none, and level 0 runs the eager fast path
                level = _next_level() if any(isinstance(v, Tensor) for v in inputs[:n]) else 0
                sources = [_leaf(_barrier(v), True, level) if wanted else _barrier(v)
                           for v, wanted in zip(inputs[:n], self.wanted)]
                root = self.replay(sources)[-1]
                found = reverse_sweep([root], [g], level, free=True) if _recorded(root, 0) else {}
        return tuple(found.get(s) if isinstance(s, Tensor) else None for s in sources) + (None,) * (len(inputs) - n)


def _barrier(value):
    """`value` through an optimization barrier if it is (or boxes) a graph node, else itself."""
    return apply(BARRIER, (value,)) if is_symbolic(value) else value


def _where(node):
    """The user's line that built `node`, when it is (or boxes) a graph node; else None."""
    symbol = _symbol(node)
    return None if symbol is None else symbol.where


def _symbol(value):
    """The graph node under a value's boxes, if any."""
    while isinstance(value, Tensor):
        if value._symbolic:
            return value
        value = value._value
    return None
