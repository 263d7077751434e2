"""Recurrent layers as PyTorch's: `RNN` (tanh or relu), `LSTM` (with `proj_size`) and `GRU`, with
`num_layers`, `bidirectional`, `batch_first`, `dropout` between layers, initial states, unbatched (2-D) input,
PyTorch's parameter names, shapes and initialisation, so `load_state_dict` takes a PyTorch model's weights as
they are.

How a layer runs:

- In a static graph and under `dg.compile`, each layer and direction is ONE `dg.scan` node: the input's
  projection for every step is one matrix product before the scan (as cuDNN and PyTorch do), the scan's
  body is the hidden projection and the cell.
- Eagerly it is a Python loop over the steps, on a list of per-step inputs: every step of the engine's
  backward through `x[t]` would add a cotangent as large as all of `x`, so the input is cut into steps by
  halving (log2(L) levels) and a layer's steps go to the next layer as a list; the input's projection is made
  step by step (the same products as one matrix product, in pieces).

Variable lengths: `forward(..., lengths=...)` (not in PyTorch, which packs sequences) gives what PyTorch gives
for `pack_padded_sequence(input, lengths)`: a state stops changing after its sequence's end, the reverse
direction starts at each sequence's own end, and the output is zero past the end.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._core.dtypes import default_float
from .._core.errors import user_error
from .._core.ir import graph_state
from .._core.shapes import dtype_of
from .._core.tensor import Tensor, is_symbolic
from ..control import scan
from ..ops.elementwise import relu, tanh, where
from ..ops.nn import linear
from ..ops.recurrent import gru_cell, lstm_cell
from ..ops.shape import concatenate, expand_dims, getitem, squeeze, stack, swapaxes
from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _graph_mode(*values):
    """Whether the layer builds graph nodes (a static graph or dg.compile's trace): then it is a scan."""
    return bool(graph_state.stack) or any(is_symbolic(v) for v in values)


def _steps(x, n):
    """The n steps x[0], ..., x[n-1] of x (n, ...) as a list. Cut by halving when x needs a gradient: each
    `x[a:b]` costs its backward a cotangent of all of x's size, so n single steps would cost n of them, the
    halving 2 log2(n)."""
    if not (isinstance(x, Tensor) and x.requires_grad) or n <= 2:
        return [getitem(x, t) for t in range(n)]
    half = n // 2
    return _steps(getitem(x, slice(0, half)), half) + _steps(getitem(x, slice(half, n)), n - half)


class _RNNBase(Module):
    """The common part of RNN, LSTM and GRU (PyTorch's `RNNBase`)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, dtype=None, generator=None):
        super().__init__()
        name = type(self).__name__
        self.mode = mode
        self.input_size = F._int(input_size, "input_size", name)
        self.hidden_size = F._int(hidden_size, "hidden_size", name)
        self.num_layers = F._int(num_layers, "num_layers", name)
        self.proj_size = F._int(proj_size, "proj_size", name)
        if self.input_size < 0:
            raise user_error(ValueError, name, f"input_size must be non-negative, got {self.input_size}")
        if self.hidden_size <= 0:
            raise user_error(ValueError, name, f"hidden_size must be greater than zero, got {self.hidden_size}")
        if self.num_layers <= 0:
            raise user_error(ValueError, name, f"num_layers must be greater than zero, got {self.num_layers}")
        if self.proj_size < 0:
            raise user_error(ValueError, name, f"proj_size should be a positive integer or zero to disable "
                             f"projections, got {self.proj_size}")
        if self.proj_size and mode != "LSTM":
            raise user_error(ValueError, name, "proj_size argument is only supported for LSTM, not RNN or GRU")
        if self.proj_size >= self.hidden_size:
            raise user_error(ValueError, name, f"proj_size ({self.proj_size}) has to be smaller than hidden_size "
                             f"({self.hidden_size})")
        if not F._is_real(dropout) or not 0 <= dropout <= 1:
            raise user_error(ValueError, name, f"dropout should be a number in range [0, 1] representing the "
                             f"probability of an element being zeroed, got {dropout!r}")
        if dropout > 0 and self.num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={self.num_layers}", UserWarning, stacklevel=3)
        self.bias, self.batch_first, self.bidirectional = bool(bias), bool(batch_first), bool(bidirectional)
        self.dropout = float(dropout)
        self.generator = generator
        gate_size = _GATES[mode] * self.hidden_size
        out_size = self.proj_size or self.hidden_size
        dt = dtype or default_float()
        for layer in range(self.num_layers):
            for suffix in self._suffixes():
                in_size = self.input_size if layer == 0 else out_size * self.num_directions
                shapes = [("weight_ih", (gate_size, in_size)), ("weight_hh", (gate_size, out_size))]
                if self.bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if self.proj_size:
                    shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
                for kind, shape in shapes:
                    setattr(self, f"{kind}_l{layer}{suffix}", Parameter(np.zeros(shape, dt)))
        self.reset_parameters(generator)

    @property
    def num_directions(self):
        return 2 if self.bidirectional else 1

    def _suffixes(self):
        return ("", "_reverse") if self.bidirectional else ("",)

    def reset_parameters(self, generator=None):
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch's."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound, generator if generator is not None else self.generator)

    def flatten_parameters(self):
        """PyTorch's (it makes cuDNN's weights contiguous): nothing to do here."""

    @property
    def all_weights(self):
        """The parameters of each layer and direction, as PyTorch's `all_weights`."""
        return [list(self._layer_weights(k // self.num_directions, k % self.num_directions))
                for k in range(self.num_layers * self.num_directions)]

    def _layer_weights(self, layer, direction):
        suffix = self._suffixes()[direction]
        names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if self.bias else []) + (
            ["weight_hr"] if self.proj_size else [])
        return [getattr(self, f"{n}_l{layer}{suffix}") for n in names]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    # -- checking the call
    def _states(self):
        """The names and sizes of the state(s): [('hx', H_out)] or, for an LSTM, h and c."""
        out = self.proj_size or self.hidden_size
        return [("h0", out), ("c0", self.hidden_size)] if self.mode == "LSTM" else [("hx", out)]

    def _check(self, input, hx, lengths):
        """(x as (L, N, in), the initial states as (D * num_layers, N, size) or None, the mask (L, N, 1) or None,
        whether the input is unbatched): everything checked before anything is computed."""
        name = type(self).__name__
        if hasattr(input, "batch_sizes") and hasattr(input, "data"):
            raise user_error(TypeError, name, "PackedSequence input is not supported: pass the padded batch and "
                             "the sequence lengths, layer(padded, lengths=lengths)")
        xs = F._shape(input)
        if len(xs) not in (2, 3):
            raise user_error(ValueError, name, f"expected input to be 2-D (L, {self.input_size}) or 3-D "
                             f"({'N, L' if self.batch_first else 'L, N'}, {self.input_size}), got {len(xs)}-D input "
                             f"of shape {xs}", input)
        if xs[-1] != self.input_size and xs[-1] is not None:
            raise F.shape_error(repr(self), f"(..., {self.input_size}) (input_size {self.input_size})", xs, input)
        if dtype_of(input).kind != "f":
            raise user_error(TypeError, name, f"expected a floating-point input, got dtype {dtype_of(input)}", input)
        unbatched = len(xs) == 2
        x = expand_dims(input, 1) if unbatched else swapaxes(input, 0, 1) if self.batch_first else input
        steps, batch = F._shape(x)[:2]
        if steps is None or batch is None:  # only a static graph's placeholder leaves a size unknown
            raise user_error(ValueError, name, f"the sequence length and the batch size must be known (a static "
                             f"graph's recurrence is a dg.scan, traced once with known shapes), got input of shape "
                             f"{xs}: give the placeholder its sizes", input)
        states = self._state_list(hx, unbatched, batch, name)
        mask = None if lengths is None else self._mask(lengths, steps, batch, unbatched, name)
        return x, states, mask, unbatched

    def _state_list(self, hx, unbatched, batch, name):
        kinds = self._states()
        if hx is None:
            return None
        if self.mode == "LSTM":
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise user_error(TypeError, name, f"hx must be a pair (h0, c0) for an LSTM, got {type(hx).__name__}")
            given = list(hx)
        else:
            if isinstance(hx, (tuple, list)):
                raise user_error(TypeError, name, f"hx must be one tensor for {name}, got a {type(hx).__name__}")
            given = [hx]
        layers = self.num_layers * self.num_directions
        states = []
        for (label, size), h in zip(kinds, given):
            hs = F._shape(h)
            expected = (layers, size) if unbatched else (layers, batch, size)
            if len(hs) != len(expected):
                raise user_error(ValueError, name, f"for {'unbatched 2-D' if unbatched else 'batched 3-D'} input, "
                                 f"{label} should be {len(expected)}-D {expected}, got shape {hs}", h)
            if not F._fits(hs, expected):
                raise user_error(ValueError, name, f"expected {label} of shape {expected}, got {hs}", h)
            states.append(expand_dims(h, 1) if unbatched else h)
        return states

    def _mask(self, lengths, steps, batch, unbatched, name):
        """(L, N, 1) bool: whether step t is within sequence n."""
        if is_symbolic(lengths):
            raise user_error(TypeError, name, "lengths must be concrete (an array or a list), not a graph's value",
                             lengths)
        values = np.asarray(lengths.numpy() if isinstance(lengths, Tensor) else lengths)
        expected = () if unbatched else (batch,)
        if values.dtype.kind not in "iu":
            raise user_error(TypeError, name, f"lengths must be integers, got dtype {values.dtype}")
        if values.shape != expected and not (unbatched and values.shape == (1,)) and batch is not None:
            raise user_error(ValueError, name, f"lengths must have shape {expected} (one length per sequence), got "
                             f"{values.shape}")
        if values.size and (values.min() < 0 or values.max() > steps):
            raise user_error(ValueError, name, f"lengths must be in [0, {steps}] (the padded length), got values "
                             f"from {values.min()} to {values.max()}")
        return (np.arange(steps).reshape(steps, 1, 1) < values.reshape(1, -1, 1))

    # -- running
    def forward(self, input, hx=None, *, lengths=None):
        x, states, mask, unbatched = self._check(input, hx, lengths)
        graph = _graph_mode(x, *(states or ()), *self.parameters())
        steps = F._shape(x)[0]
        layer_input = x if graph else _steps(x, steps)
        finals = [[] for _ in self._states()]
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                init_states = None if states is None else [getitem(s, k) for s in states]
                run = self._scan if graph else self._loop
                ys, last = run(layer_input, init_states, self._layer_weights(layer, direction), direction == 1, mask)
                outputs.append(ys)
                for table, state in zip(finals, last):
                    table.append(state)
            last_layer = layer == self.num_layers - 1
            drop = self.dropout if self.training and not last_layer else 0.0
            if graph:
                layer_input = outputs[0] if len(outputs) == 1 else concatenate(outputs, axis=-1)
                if drop:
                    layer_input = F.dropout(layer_input, drop, True, self.generator)
            elif last_layer:
                layer_input = [stack(ys) for ys in outputs]
                layer_input = layer_input[0] if len(layer_input) == 1 else concatenate(layer_input, axis=-1)
            else:
                per_step = zip(*outputs)
                layer_input = [(parts[0] if len(parts) == 1 else concatenate(parts, axis=-1)) for parts in per_step]
                if drop:
                    layer_input = [F.dropout(x_t, drop, True, self.generator) for x_t in layer_input]
        output = layer_input
        finals = [stack(table) for table in finals]
        if unbatched:
            output = squeeze(output, 1)
            finals = [squeeze(f, 1) for f in finals]
        elif self.batch_first:
            output = swapaxes(output, 0, 1)
        return output, (tuple(finals) if self.mode == "LSTM" else finals[0])

    def _initial(self, like, init_states):
        """The initial state(s): given, or zeros of (N, size) in the computation's dtype."""
        if init_states is not None:
            return list(init_states)
        batch = F._shape(like)[-2]
        dtype = np.result_type(dtype_of(like), self.weight_ih_l0.dtype)
        return [np.zeros((batch, size), dtype) for _, size in self._states()]

    def _cell(self, gx, gh, state, weights):
        """The next state(s) (the first is the step's output), from the input's product with its bias (`_bias_x`)
        and the hidden state's product."""
        mode = self.mode
        if mode == "LSTM":
            out = lstm_cell(gx, gh, state[1])
            n = self.hidden_size
            h, c = getitem(out, (Ellipsis, slice(0, n))), getitem(out, (Ellipsis, slice(n, 2 * n)))
            if self.proj_size:
                h = linear(h, weights[-1], None)
            return [h, c]
        if mode == "GRU":  # b_hh inside the reset gate's product
            out = gru_cell(gx, gh, state[0], None, weights[3] if self.bias else None)
            return [getitem(out, (Ellipsis, slice(0, self.hidden_size)))]
        pre = gx + gh
        return [tanh(pre) if mode == "RNN_TANH" else relu(pre)]

    def _bias_x(self, weights):
        """The bias added to the input's product: both biases (one for a GRU, whose b_hh is inside its reset
        gate), or None."""
        if not self.bias:
            return None
        return weights[2] if self.mode == "GRU" else weights[2] + weights[3]

    def _loop(self, steps, init_states, weights, reverse, mask):
        """Eager: the steps in Python, on a list of per-step inputs."""
        state = self._initial(steps[0], init_states)
        w_ih, w_hh = weights[0], weights[1]
        bias_x = self._bias_x(weights)
        n = len(steps)
        ys = [None] * n
        for t in (range(n - 1, -1, -1) if reverse else range(n)):
            # linear, not matmul with a transposed weight: its backward makes the weight's gradient and sums the
            # bias's with NumPy directly, no transposition or reduction nodes
            gx = linear(steps[t], w_ih, bias_x)
            new = self._cell(gx, linear(state[0], w_hh, None), state, weights)
            if mask is not None:
                m = mask[t]
                ys[t] = where(m, new[0], 0.0)
                state = [where(m, a, b) for a, b in zip(new, state)]
            else:
                ys[t] = new[0]
                state = new
        return ys, state

    def _scan(self, x, init_states, weights, reverse, mask):
        """Graph: one scan over the steps; the input's projection for all of them is one product before it."""
        projected = linear(x, weights[0], self._bias_x(weights))
        state = self._initial(getitem(x, 0), init_states)

        def step(carry, xs):
            gx, m = xs if mask is not None else (xs, None)
            carry = list(carry)
            new = self._cell(gx, linear(carry[0], weights[1], None), carry, weights)
            if m is None:
                return tuple(new), new[0]
            return tuple(where(m, a, b) for a, b in zip(new, carry)), where(m, new[0], 0.0)

        xs = projected if mask is None else (projected, mask)
        last, ys = scan(step, tuple(state), xs, reverse=reverse)
        return ys, list(last)


class RNN(_RNNBase):
    """An Elman RNN, h_t = tanh(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh) (or relu), as `torch.nn.RNN`.

    Returns (output, h_n): output (L, N, D * hidden_size) (batch_first: (N, L, ...); unbatched (L, ...)),
    h_n (D * num_layers, N, hidden_size).

    >>> import dagrad as dg, numpy as np
    >>> rnn = dg.nn.RNN(3, 5, num_layers=2)
    >>> out, h = rnn(np.zeros((7, 2, 3)))
    >>> out.shape, h.shape
    ((7, 2, 5), (2, 2, 5))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, dtype=None, generator=None):
        if nonlinearity not in ("tanh", "relu"):
            raise user_error(ValueError, "RNN", f"unknown nonlinearity {nonlinearity!r}: 'tanh' or 'relu'")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, proj_size, dtype, generator)
        self.nonlinearity = nonlinearity

    def extra_repr(self):
        s = super().extra_repr()
        return s + (", nonlinearity='relu'" if self.nonlinearity == "relu" else "")


class LSTM(_RNNBase):
    """A long short-term memory layer, as `torch.nn.LSTM` (gates i, f, g, o; `proj_size` projects h).

    Returns (output, (h_n, c_n)); `hx` is a pair (h0, c0) of (D * num_layers, N, size), or None for zeros.

    >>> import dagrad as dg, numpy as np
    >>> lstm = dg.nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    >>> out, (h, c) = lstm(np.zeros((2, 5, 3)))
    >>> out.shape, h.shape, c.shape
    ((2, 5, 8), (2, 2, 4), (2, 2, 4))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, dtype=None, generator=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, dtype, generator)


class GRU(_RNNBase):
    """A gated recurrent unit layer, as `torch.nn.GRU` (gates r, z, n; b_hh inside the reset gate).

    >>> import dagrad as dg, numpy as np
    >>> gru = dg.nn.GRU(3, 4)
    >>> out, h = gru(np.zeros((5, 3)))          # unbatched: (L, input_size)
    >>> out.shape, h.shape
    ((5, 4), (1, 4))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, dtype=None, generator=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, dtype, generator)
