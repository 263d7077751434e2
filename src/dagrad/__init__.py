"""dagrad: a computational-graph and automatic-differentiation library on NumPy.

>>> import dagrad as dg
>>> x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""

from __future__ import annotations

from ._version import __version__

from . import ops  # noqa: F401  (declares every op before anything else uses them)
from . import _methods  # noqa: F401  (binds Tensor's operators and methods to the ops)
from ._core.anomaly import detect_anomaly, is_anomaly_enabled
from ._core.errors import ShapeError  # shapes that do not fit together: a ValueError (NumPy's) and a TypeError (JAX's)
from .transforms import (
    elementwise_grad, grad, hessian, holomorphic_grad, jacfwd, jacobian, jacrev, jvp, value_and_grad, vjp, vmap,
)
from .control import cond, fori_loop, scan, while_loop
from ._core.op import REGISTRY, Op, defop
from ._core.tensor import Tensor, enable_grad, is_grad_enabled, no_grad, tensor
from .check import GradcheckError, check_grads, gradcheck
from .differential import (  # HIPS autograd's differential operators, and JAX's ravel_pytree
    deriv, grad_and_aux, hessian_tensor_product, hessian_vector_product, make_ggnvp, make_hvp, make_jvp, make_vjp,
    multigrad_dict, ravel_pytree, tensor_jacobian_product, vector_jacobian_product,
)
from .compile import compile
from .remat import checkpoint

remat = checkpoint  # jax.remat
from .function import Function, FunctionCtx
from .custom import custom_jvp, custom_vjp, defjvp, defjvp_argnum, defvjp, defvjp_argnum, primitive
from .static import (
    Graph, InteractiveSession, Session, Variable, assign, constant, get_default_graph, get_default_session,
    global_variables, global_variables_initializer, gradients, group, placeholder, reset_default_graph,
    trainable_variables, variables_initializer,
)
from . import numpy  # noqa: E402
from . import linalg
from .numpy import (  # every op under its NumPy name (the same functions as dagrad.numpy)
    abs, absolute, add, amax, amin, angle, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
    argmax, argmin, astype, broadcast_to, ceil, clip, concatenate, conj, conjugate, cos, cosh, cumsum, divide, equal,
    erf, exp, exp2, expand_dims, expm1, flip, floor, fmax, fmin, greater, greater_equal, hypot,
    imag, iscomplex, iscomplexobj, isfinite, isnan, isreal, isrealobj, less, less_equal, log, log1p, log2, log10,
    log_softmax, logical_and,
    logical_not, logical_or, logsumexp, matmul, max, maximum, mean, min, minimum, mod, moveaxis,
    multiply, negative, not_equal, pad, positive, power, prod, ravel, real, reciprocal, relu, remainder,
    repeat, reshape, round, sigmoid, sign, sin, sinh, softmax, softplus, split, sqrt, square,
    squeeze, stack, std, subtract, sum, swapaxes, tan, tanh, tile, transpose, tril, triu,
    true_divide, var, where,
)
from .ops.elementwise import stop_gradient
from .factories import (  # PyTorch's factories (zeros_like, ones_like, full_like: the ops, with requires_grad=)
    arange, device, empty, empty_like, eye, full, full_like, get_default_device, get_default_dtype, linspace,
    manual_seed, ones, ones_like, rand, rand_like, randint, randint_like, randn, randn_like, set_default_device,
    set_default_dtype, zeros, zeros_like,
)
from . import cuda  # torch.cuda's questions (is_available, device_count), answered through CuPy
from . import random, tree, tree_util  # JAX's key-based random numbers and pytree functions
from .ops.shape import getitem, index_add, setitem
from .numpy import diag, diagonal, dot, einsum, inner, norm, outer, tensordot, trace, vdot
from .viz import draw, listing, to_dot
from . import nn
from . import utils  # torch.utils.data's names: dg.utils.data.DataLoader, ...
from .io import load, save
from . import optim
from . import autograd
from . import lax
from . import compat  # other libraries' namespaces: dagrad.compat.v1 is TensorFlow 1's
from .compat.names import TOP_LEVEL as _TOP_LEVEL
from ._core.errors import missing_name as _missing
from .torch_names import (  # PyTorch's names for the same functions
    allclose, as_tensor, bmm, cat, chunk, clamp, flatten, from_numpy, gather, index_select, is_tensor, masked_fill, mm,
    narrow, neg, numel, permute, pow, set_grad_enabled, t, unsqueeze, inference_mode, is_inference_mode_enabled,
)

jit = compile  # JAX's name for it (jax.jit)

# dtypes by name, as NumPy's (dg.float32) and PyTorch's (dg.float, dg.double, dg.long: float32, float64, int64)
from numpy import bool_, float16, float32, float64, int8, int16, int32, int64, uint8  # noqa: E402

half, float, double = float16, float32, float64  # noqa: A001
int, long, bool = int32, int64, bool_  # noqa: A001


# HIPS autograd's module names (`from autograd import list` ...: its containers and isinstance), last because
# they shadow builtins in this module; and its other modules, importable as dagrad.test_util, dagrad.core, ...
from . import core, extend, misc, test_util, tracer, util, vspace, wrap_util  # noqa: E402
from .builtins import dict, isinstance, list, tuple  # noqa: E402, A001


def __getattr__(name):  # a name of torch or jax that dagrad lacks: say what to use (compat/names.py)
    raise _missing(__name__, name, "torch.{0} or jax.{0}", _TOP_LEVEL, "PyTorch' and 'JAX")
