"""HIPS autograd's differential operators (`autograd/differential_operators.py`: names, signatures and
results) built on dagrad's transforms, and JAX's `ravel_pytree` (`jax.flatten_util`).

autograd's operators take `argnum` (an int, or a tuple: then that argument is the tuple of those
arguments) and return functions of all the arguments. `make_vjp` and `make_hvp` return the
function first, then the value, as autograd does.

>>> import numpy as np
>>> hvp, g = make_hvp(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
>>> g, hvp(np.array([1.0, 0.0]))
(array([ 3., 12.]), array([6., 0.]))
"""

from __future__ import annotations

import inspect

import numpy as np

from ._core.backends import is_dask
from ._core.errors import user_error
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.shapes import dtype_of as _dtype
from ._core.shapes import shape_of as _shape
from ._core.tensor import Tensor
from .ops.elementwise import astype
from .ops.linalg import tensordot
from .ops.reduce import sum as reduce_sum
from .ops.shape import concatenate, getitem, ravel, reshape
from .transforms import _function, _is_index, grad, jacobian, jvp, vjp

__all__ = ["deriv", "grad_and_aux", "hessian_tensor_product", "hessian_vector_product", "make_ggnvp", "make_hvp",
           "make_jvp", "make_vjp", "multigrad_dict", "ravel_pytree", "tensor_jacobian_product",
           "vector_jacobian_product"]


def _unary(fun, args, kwargs, argnum, where):
    """autograd's unary_to_nary: the argument(s) at `argnum`, and `fun` as a function of them alone."""
    nums = argnum if isinstance(argnum, tuple) else (argnum,)
    if not nums or not all(_is_index(n) for n in nums):
        raise user_error(TypeError, where, f"argnum must be an int or a tuple of ints, got {argnum!r}")
    for n in nums:
        if not -len(args) <= n < len(args):
            raise user_error(ValueError, where, f"argnum {argnum} is out of range for a function called with "
                             f"{len(args)} arguments")
    nums = tuple(int(n) % len(args) for n in nums)
    if len(set(nums)) != len(nums):  # the first one's gradient would be lost (zero)
        raise user_error(ValueError, where, f"argnum {argnum} names an argument more than once")

    def unary_f(x):
        merged = list(args)
        for n, value in zip(nums, x if isinstance(argnum, tuple) else (x,)):
            merged[n] = value
        return fun(*merged, **kwargs)

    x = tuple(args[n] for n in nums) if isinstance(argnum, tuple) else args[nums[0]]
    return unary_f, x


def make_vjp(fun, argnum=0):
    """autograd's `make_vjp`: `make_vjp(f)(*args)` is `(vjp, f(*args))`, where `vjp(g)` is the
    gradient of `sum(g * f)` with respect to the argument at `argnum`.

    >>> import numpy as np
    >>> f_vjp, value = make_vjp(lambda x: x ** 2)(np.array([1.0, 3.0]))
    >>> value, f_vjp(np.array([1.0, 10.0]))
    (array([1., 9.]), array([ 2., 60.]))
    """
    _function(fun, "make_vjp")

    def vjp_maker(*args, **kwargs):
        unary_f, x = _unary(fun, args, kwargs, argnum, "make_vjp")
        value, f_vjp = vjp(unary_f, x)
        return (lambda g: f_vjp(g)[0]), value

    return vjp_maker


def make_jvp(fun, argnum=0):
    """autograd's `make_jvp`: `make_jvp(f)(*args)` is a function of a tangent `v` (shaped like the
    argument at `argnum`) returning `(f(*args), J v)`, by forward mode.

    >>> import numpy as np
    >>> make_jvp(lambda x: x ** 2)(np.array([1.0, 3.0]))(np.array([1.0, 1.0]))
    (array([1., 9.]), array([2., 6.]))
    """
    _function(fun, "make_jvp")

    def jvp_maker(*args, **kwargs):
        unary_f, x = _unary(fun, args, kwargs, argnum, "make_jvp")
        return lambda v: jvp(unary_f, (x,), (v,))

    return jvp_maker


def deriv(fun, argnum=0):
    """autograd's `deriv`: the forward-mode derivative along a tangent of ones, which for a function
    of a scalar is its derivative, and for an elementwise function the derivative of each element.

    >>> import numpy as np
    >>> deriv(np.sin)(0.0)
    np.float64(1.0)
    >>> deriv(lambda x: x ** 3)(np.array([1.0, 2.0]))
    array([ 3., 12.])
    """
    _function(fun, "deriv")

    def deriv_f(*args, **kwargs):
        unary_f, x = _unary(fun, args, kwargs, argnum, "deriv")
        leaves, treedef = tree_flatten(x)
        ones = tree_unflatten(treedef, [np.ones(_shape(leaf), _dtype(leaf)) for leaf in leaves])
        return jvp(unary_f, (x,), (ones,))[1]

    return deriv_f


def grad_and_aux(fun, argnum=0):
    """autograd's `grad_and_aux`: `fun` returns `(value, aux)`; the result is `(gradient of value, aux)`
    (`dg.grad(fun, has_aux=True)`, JAX's spelling).

    >>> import numpy as np
    >>> grad_and_aux(lambda x: ((x ** 2).sum(), "note"))(np.array([1.0, 2.0]))
    (array([2., 4.]), 'note')
    """
    _function(fun, "grad_and_aux")

    def grad_and_aux_f(*args, **kwargs):
        unary_f, x = _unary(fun, args, kwargs, argnum, "grad_and_aux")
        return grad(unary_f, has_aux=True)(x)

    return grad_and_aux_f


def make_hvp(fun, argnum=0):
    """autograd's `make_hvp`: `make_hvp(f)(*args)` is `(hvp, gradient)`; `hvp(v)` is the Hessian of
    scalar `f` times `v` (a vjp of the gradient), reusing one forward and backward pass for many `v`.

    >>> import numpy as np
    >>> hvp, g = make_hvp(lambda x: (x[0] * x[1]) ** 2)(np.array([1.0, 2.0]))
    >>> hvp(np.array([1.0, 0.0]))
    array([8., 8.])
    """
    _function(fun, "make_hvp")

    def hvp_maker(*args, **kwargs):
        unary_f, x = _unary(fun, args, kwargs, argnum, "make_hvp")
        gradient, g_vjp = vjp(grad(unary_f), x)
        return (lambda v: g_vjp(v)[0]), gradient

    return hvp_maker


def _check_tensor(tensor, like, where, what):
    if _shape(tensor) != _shape(like):
        raise user_error(ValueError, where, f"the tensor (the last argument) has shape {tuple(_shape(tensor))} but "
                         f"{what} has shape {tuple(_shape(like))}")


def _tensor_product(name, fun, argnum, contracted, transform=grad):
    """The gradient (or `transform`), with respect to argument `argnum`, of `contracted(tensor, *args)`: a
    function of `(*args, tensor)`, as autograd's tensor products take their tensor last."""
    _function(fun, name)
    if isinstance(argnum, bool) or not isinstance(argnum, int):
        raise user_error(TypeError, name, f"argnum must be an int, got {argnum!r}")

    def scalar(*args, **kwargs):
        return contracted(args[-1], *args[:-1], **kwargs)

    product = transform(scalar, argnum)

    def product_f(*args, **kwargs):
        if len(args) < 2:
            raise user_error(TypeError, name, f"expects the function's arguments and then the tensor, got "
                             f"{len(args)} argument(s)")
        return product(*args, **kwargs)

    return product_f


def hessian_tensor_product(fun, argnum=0):
    """autograd's `hessian_tensor_product` (= `hessian_vector_product`): a function of `(*args, tensor)`
    giving the Hessian of scalar `fun` at `args` contracted with `tensor` (shaped like the argument).

    >>> import numpy as np
    >>> hessian_vector_product(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    fun_grad = grad(fun, argnum) if callable(fun) else fun

    def gradient_dot(tensor, *args, **kwargs):
        g = fun_grad(*args, **kwargs)
        _check_tensor(tensor, g, "hessian_vector_product", f"argument {argnum}")
        return tensordot(g, tensor, len(_shape(tensor)))

    return _tensor_product("hessian_vector_product", fun, argnum, gradient_dot)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """autograd's `tensor_jacobian_product` (= `vector_jacobian_product`): a function of
    `(*args, tensor)` giving `tensor` times the Jacobian of `fun`, contracted over the tensor's axes,
    which are the leading axes of `fun`'s output (all of them: the vector-Jacobian product).

    >>> import numpy as np
    >>> tensor_jacobian_product(lambda x: x ** 2)(np.array([1.0, 3.0]), np.array([1.0, 10.0]))
    array([ 2., 60.])
    >>> tensor_jacobian_product(lambda x: np.outer(x, x))(np.array([1.0, 3.0]), np.array([1.0, 0.0])).shape
    (2, 2)
    """

    def tensor_dot_output(tensor, *args, **kwargs):
        out = fun(*args, **kwargs)
        k = len(_shape(tensor))
        if _shape(tensor) != _shape(out)[:k]:
            raise user_error(ValueError, "tensor_jacobian_product", f"the tensor (the last argument) has shape "
                             f"{tuple(_shape(tensor))} but the function's output has shape {tuple(_shape(out))} (the "
                             "tensor's shape must be the output's or its leading part)")
        return tensordot(tensor, out, k)

    # a tensor over the output's leading axes leaves the others: a Jacobian, of a scalar the gradient
    return _tensor_product("tensor_jacobian_product", fun, argnum, tensor_dot_output, jacobian)


vector_jacobian_product = tensor_jacobian_product


def _half_squared_norm(y):
    return 0.5 * reduce_sum(y ** 2, axis=-1)


def make_ggnvp(f, g=_half_squared_norm, f_argnum=0):
    """autograd's `make_ggnvp`: `make_ggnvp(f, g)(*args)` is a function of `v` giving the generalised
    Gauss-Newton product `J^T H J v`, with `J` the Jacobian of `f` with respect to argument `f_argnum` at
    `args` and `H` the Hessian of the scalar `g` at `f(*args)` (by default `0.5 * sum(y ** 2, axis=-1)`,
    so `H` is the identity).

    >>> import numpy as np
    >>> A = np.array([[1.0, 2.0], [0.0, 1.0]])
    >>> make_ggnvp(lambda x: A @ x)(np.array([1.0, 1.0]))(np.array([1.0, 0.0]))
    array([1., 2.])
    """
    _function(f, "make_ggnvp")
    _function(g, "make_ggnvp")

    def ggnvp_maker(*args, **kwargs):
        unary_f, x = _unary(f, args, kwargs, f_argnum, "make_ggnvp")
        f_x, f_vjp = vjp(unary_f, x)
        grad_g = grad(g)

        def ggnvp(v):
            jv = jvp(unary_f, (x,), (v,))[1]
            hjv = jvp(grad_g, (f_x,), (jv,))[1]
            return f_vjp(hjv)[0]

        return ggnvp

    return ggnvp_maker


def multigrad_dict(fun):
    """autograd's `multigrad_dict`: the gradients with respect to every argument given, as a dict from
    parameter name to gradient (arguments left to their defaults are not differentiated).

    >>> import numpy as np
    >>> multigrad_dict(lambda a, b=2.0: a * b)(3.0, b=5.0)
    {'a': np.float64(5.0), 'b': np.float64(3.0)}
    """
    _function(fun, "multigrad_dict")
    signature = inspect.signature(fun)

    def gradfun(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as err:
            raise user_error(TypeError, "multigrad_dict", f"the arguments do not fit {signature}: {err}") from None
        given = dict(bound.arguments)

        def of_dict(arguments):
            call = inspect.BoundArguments(signature, arguments)
            return fun(*call.args, **call.kwargs)

        return grad(of_dict)(given)

    return gradfun


def ravel_pytree(pytree):
    """JAX's `ravel_pytree`: `(flat, unravel)`, `flat` every leaf raveled and concatenated into one 1-D
    array of the leaves' promoted dtype, `unravel(v)` the tree again from such a vector, each leaf in its
    own shape and dtype. Both are differentiable (the usual bridge to `scipy.optimize`). The leaves come
    in dagrad's pytree order: a dict's in its own order (JAX sorts the keys). An empty tree gives an
    empty float64 vector (JAX: float32).

    >>> import numpy as np
    >>> flat, unravel = ravel_pytree({"w": np.ones((2, 2)), "b": np.zeros(1)})
    >>> flat
    array([1., 1., 1., 1., 0.])
    >>> unravel(flat * 2)["w"]
    array([[2., 2.],
           [2., 2.]])
    """
    leaves, treedef = tree_flatten(pytree)
    values = [leaf if isinstance(leaf, (Tensor, np.ndarray)) or is_dask(leaf) else np.asarray(leaf) for leaf in leaves]
    for leaf, value in zip(leaves, values):
        if _dtype(value).kind not in "biufc":
            raise user_error(TypeError, "ravel_pytree", f"a leaf must be a bool, integer, floating-point or complex "
                             f"array, got {type(leaf).__name__} of dtype {_dtype(value)}")
    shapes = [tuple(_shape(v)) for v in values]
    dtypes = [_dtype(v) for v in values]
    to_dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    total = sum(sizes)
    if values:
        flat = concatenate([ravel(v if _dtype(v) == to_dtype else astype(v, to_dtype)) for v in values])
    else:
        flat = np.zeros(0, to_dtype)

    def unravel(vector):
        if _shape(vector) != (total,):
            raise user_error(ValueError, "unravel", f"expected a vector of shape {(total,)} (the raveled tree), got "
                             f"shape {tuple(_shape(vector))}")
        if _dtype(vector) != to_dtype:
            raise user_error(TypeError, "unravel", f"expected a vector of dtype {to_dtype} (the raveled tree's), got "
                             f"dtype {_dtype(vector)}")
        parts, start = [], 0
        for shape, size, dtype in zip(shapes, sizes, dtypes):
            part = reshape(getitem(vector, slice(start, start + size)), shape)
            parts.append(part if dtype == to_dtype else astype(part, dtype))
            start += size
        return tree_unflatten(treedef, parts)

    return flat, unravel
