"""TensorFlow 1's `tf.train`: its optimizers, with TF1's signatures and TF1's update formulas (its kernels'
arithmetic, so that a TF1 program trains as it did), on dagrad's `Optimizer` (`minimize`,
`compute_gradients`, `apply_gradients` build the step into the graph); and `Saver`, over `dg.save`.

>>> import dagrad.compat.v1 as tf, numpy as np
>>> with tf.Graph().as_default():
...     w = tf.Variable(np.array([1.0, -2.0]), name="w")
...     train = tf.train.MomentumOptimizer(0.1, momentum=0.9).minimize(tf.reduce_sum(w * w))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         for _ in range(2):
...             sess.run(train)
...         print(sess.run(w))
[ 0.46 -0.92]
"""

from __future__ import annotations

import os

import numpy as np

from ... import numpy as dnp
from ..._core.errors import missing_name as missing
from ..._core.errors import user_error
from ..._core.ir import Symbol
from ...io import load, save
from ...optim.optimizer import Optimizer as _Optimizer
from ...optim.optimizer import _scalar
from ...static import graph as static_graph

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "RMSPropOptimizer",
           "AdagradOptimizer", "Saver"]


class Optimizer(_Optimizer):
    """The base of TF1's optimizers: made without parameters (each `minimize` trains the trainable Variables
    the loss depends on, or `var_list`), with TF1's `minimize(loss, global_step=None, var_list=None)`;
    `global_step`, a Variable, is increased by one at each step."""

    _nonnegative = ("lr",)
    _flags = ()

    def __init__(self, defaults, use_locking=False, name=None):
        super().__init__(None, defaults)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        self._no_grad_loss(grad_loss, "minimize")
        return self._counted(super().minimize(loss, var_list), global_step)

    def compute_gradients(self, loss, var_list=None, gate_gradients=1, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        self._no_grad_loss(grad_loss, "compute_gradients")
        return super().compute_gradients(loss, var_list)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._counted(super().apply_gradients(grads_and_vars), global_step)

    def _no_grad_loss(self, grad_loss, where):
        if grad_loss is not None:
            raise user_error(TypeError, f"{type(self).__name__}.{where}", "grad_loss= is not supported")

    def _counted(self, step, global_step):
        if global_step is None:
            return step
        if not isinstance(global_step, Symbol) or global_step.kind != "variable" or global_step.graph is not step.graph:
            raise user_error(TypeError, f"{type(self).__name__}.minimize", "global_step must be a Variable of the "
                             "loss's graph")
        return static_graph.group(step, global_step.assign(global_step + 1))


class GradientDescentOptimizer(Optimizer):
    """`tf.train.GradientDescentOptimizer(learning_rate)`: var -= learning_rate * grad."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(dict(lr=learning_rate))

    def _update(self, p, g, state, group):
        return p - g * _scalar(group["lr"], p.dtype), {}


class MomentumOptimizer(Optimizer):
    """`tf.train.MomentumOptimizer(learning_rate, momentum, use_nesterov=False)`, TF1's formula::

        accum = accum * momentum + grad
        var -= lr * accum                                      (use_nesterov: grad * lr + accum * momentum * lr)
    """

    _nonnegative = ("lr", "momentum")
    _flags = ("use_nesterov",)

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum", use_nesterov=False):
        super().__init__(dict(lr=learning_rate, momentum=momentum, use_nesterov=use_nesterov))

    def _init_state(self, value, group):
        return {"momentum": np.zeros_like(value)}

    def _update(self, p, g, state, group):
        lr, momentum = _scalar(group["lr"], p.dtype), group["momentum"]
        accum = state["momentum"] * momentum + g
        if group["use_nesterov"]:
            return p - (g * lr + accum * momentum * lr), {"momentum": accum}
        return p - accum * lr, {"momentum": accum}


class AdamOptimizer(Optimizer):
    """`tf.train.AdamOptimizer(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08)`, TF1's formula
    (epsilon is added to sqrt(v), unscaled: PyTorch's Adam, `dg.optim.Adam`, differs there)::

        alpha = lr * sqrt(1 - beta2**t) / (1 - beta1**t)
        m += (grad - m) * (1 - beta1);  v += (grad * grad - v) * (1 - beta2)
        var -= m * alpha / (sqrt(v) + epsilon)
    """

    _nonnegative = ("lr", "beta1", "beta2", "epsilon")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, use_locking=False, name="Adam"):
        super().__init__(dict(lr=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon))

    def _validate(self, group, op):
        for key in ("beta1", "beta2"):
            if not group[key] < 1:
                raise user_error(ValueError, op, f"{key} must be in [0, 1), got {group[key]}")

    def _init_state(self, value, group):
        return {"step": 0.0, "m": np.zeros_like(value), "v": np.zeros_like(value)}

    def _update(self, p, g, state, group):
        beta1, beta2, dtype = group["beta1"], group["beta2"], p.dtype
        step = state["step"] + 1.0
        alpha = group["lr"] * dnp.sqrt(1 - dnp.power(beta2, step)) / (1 - dnp.power(beta1, step))
        m = state["m"] + (g - state["m"]) * _scalar(1 - beta1, dtype)
        v = state["v"] + (g * g - state["v"]) * _scalar(1 - beta2, dtype)
        new_p = p - m * _scalar(alpha, dtype) / (dnp.sqrt(v) + _scalar(group["epsilon"], dtype))
        return new_p, {"step": step, "m": m, "v": v}


class RMSPropOptimizer(Optimizer):
    """`tf.train.RMSPropOptimizer(learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False)`, TF1's
    formula (the mean square starts at ones, epsilon is inside the square root: PyTorch's RMSprop differs)::

        ms += (grad * grad - ms) * (1 - decay)
        (centered: mg += (grad - mg) * (1 - decay); ms - mg * mg replaces ms below)
        mom = mom * momentum + lr * grad / sqrt(ms + epsilon);  var -= mom
    """

    _nonnegative = ("lr", "decay", "momentum", "epsilon")
    _flags = ("centered",)

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False, centered=False,
                 name="RMSProp"):
        super().__init__(dict(lr=learning_rate, decay=decay, momentum=momentum, epsilon=epsilon, centered=centered))

    def _init_state(self, value, group):
        state = {"rms": np.ones_like(value), "momentum": np.zeros_like(value)}
        if group["centered"]:
            state["mg"] = np.zeros_like(value)
        return state

    def _update(self, p, g, state, group):
        dtype = p.dtype
        rate = _scalar(1 - group["decay"], dtype)
        ms = state["rms"] + (g * g - state["rms"]) * rate
        new_state = {"rms": ms}
        denom = ms
        if group["centered"]:
            mg = new_state["mg"] = state["mg"] + (g - state["mg"]) * rate
            denom = ms - mg * mg
        mom = new_state["momentum"] = state["momentum"] * group["momentum"] + g * _scalar(group["lr"], dtype) / \
            dnp.sqrt(denom + _scalar(group["epsilon"], dtype))
        return p - mom, new_state


class AdagradOptimizer(Optimizer):
    """`tf.train.AdagradOptimizer(learning_rate, initial_accumulator_value=0.1)`, TF1's formula::

        accum += grad * grad;  var -= lr * grad / sqrt(accum)
    """

    _nonnegative = ("lr", "initial_accumulator_value")

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False, name="Adagrad"):
        super().__init__(dict(lr=learning_rate, initial_accumulator_value=initial_accumulator_value))

    def _validate(self, group, op):
        if not group["initial_accumulator_value"] > 0:
            raise user_error(ValueError, op, f"initial_accumulator_value must be positive, got "
                             f"{group['initial_accumulator_value']}")

    def _init_state(self, value, group):
        return {"accumulator": np.full_like(value, group["initial_accumulator_value"])}

    def _update(self, p, g, state, group):
        accum = state["accumulator"] + g * g
        return p - g * _scalar(group["lr"], p.dtype) / dnp.sqrt(accum), {"accumulator": accum}


class Saver:
    """`tf.train.Saver(var_list=None)`: `save(sess, save_path, global_step=None)` writes the Variables' values,
    by name, to one `.npz` file (`dg.save`) at `save_path` (with "-<global_step>" added), and returns that
    path; `restore(sess, save_path)` sets the Variables from it. The file is dagrad's, not TF1's checkpoint
    format (a TF1 checkpoint does not load).

    >>> import dagrad.compat.v1 as tf, os, tempfile
    >>> with tf.Graph().as_default():
    ...     w = tf.Variable(1.5, name="w")
    ...     saver = tf.train.Saver()
    ...     with tf.Session() as sess:
    ...         path = saver.save(sess, os.path.join(tempfile.mkdtemp(), "model.npz"))
    ...         _ = sess.run(w.assign(0.0))
    ...         saver.restore(sess, path)
    ...         print(sess.run(w))
    1.5
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5, **options):
        if isinstance(var_list, dict):
            self._named = dict(var_list)
        else:
            self._named = None if var_list is None else {v.name: v for v in var_list}

    def _variables(self, sess):
        named = self._named
        if named is None:
            named = {v.name: v for v in static_graph.global_variables(sess.graph)}
        for key, v in named.items():
            if not isinstance(v, Symbol) or v.kind != "variable":
                raise user_error(TypeError, "Saver", f"{key!r} is not a Variable: {v!r}")
        return named

    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        path = os.fspath(save_path)
        if global_step is not None:
            step = global_step.value if isinstance(global_step, Symbol) else global_step
            path = f"{path}-{int(step)}"
        save({name: v.value for name, v in self._variables(sess).items()}, path)
        return path

    def restore(self, sess, save_path):
        values = load(save_path)
        named = self._variables(sess)
        absent = [name for name in named if name not in values]
        if absent:
            raise user_error(ValueError, "Saver.restore", f"{os.fspath(save_path)!r} holds no value for Variable(s) "
                             f"{absent}")
        checked = {}
        for name, v in named.items():  # all checked before any is set
            try:
                checked[v] = np.asarray(values[name]).astype(v.dtype, casting="same_kind")
            except TypeError as err:
                raise user_error(TypeError, "Saver.restore", f"Variable {name!r}: {err}") from None
            if checked[v].shape != v.shape:
                raise user_error(ValueError, "Saver.restore", f"Variable {name!r} has shape {v.shape}, the saved "
                                 f"value {checked[v].shape}")
        for v, value in checked.items():
            v.value = value


_HINTS = {
    "exponential_decay": "the learning rate is a number: set opt.param_groups[0]['lr'] between runs (dagrad keeps "
                         "it in a Variable the step reads)",
    "get_global_step": "make it: global_step = tf.Variable(0, name='global_step', trainable=False)",
    "get_or_create_global_step": "make it: global_step = tf.Variable(0, name='global_step', trainable=False)",
    "AdadeltaOptimizer": "dagrad has no Adadelta",
    "FtrlOptimizer": "dagrad has no FTRL",
    "Coordinator": "no input queues: feed arrays with feed_dict",
    "start_queue_runners": "no input queues: feed arrays with feed_dict",
    "MonitoredTrainingSession": "use tf.Session()",
}


def __getattr__(name):
    raise missing(__name__, name, "TensorFlow 1's tf.train.{}", _HINTS, "TensorFlow 1")
