"""The names of torch and jax that `dagrad` lacks, and what to use instead: the table of the package's
module `__getattr__`, which raises `_core/errors.py missing_name`'s AttributeError (naming the original
and dagrad's equivalent or the section of docs/coming-from.md, never a bare "has no attribute"), as
every namespace standing for another library's does (`dagrad.compat.v1` for TF1's, `dagrad.cuda`, ...).

>>> import dagrad as dg
>>> dg.pmap  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AttributeError: module 'dagrad' has no attribute 'pmap' (JAX's jax.pmap): no multi-device mapping: use dg.vmap ...
"""

from __future__ import annotations

# names of torch and jax that `dagrad` itself lacks, and what to use (the top-level module's __getattr__)
_TORCH = {
    "sort": "dg.numpy.sort is NumPy's (values only); dg.numpy.argsort gives the indices",
    "topk": "use dg.numpy.argsort and dg.numpy.take_along_axis",
    "Generator": "dagrad's random functions take generator=, an np.random.Generator (np.random.default_rng(seed))",
    "func": "dagrad's transforms are top-level: dg.grad, dg.vmap, dg.jacrev, dg.jacfwd, dg.hessian",
    "fx": "dg.compile(f).graph() and .source() show the traced graph and its code (docs/compile.md)",
    "sparse": "dagrad has no sparse tensors",
    "amp": "dagrad has no mixed precision: cast with t.float() / model.float()",
    "autocast": "dagrad has no mixed precision: cast with t.float() / model.float()",
    "distributed": "no counterpart; Dask arrays compute on a dask.distributed cluster (docs/backends.md)",
    "bfloat16": "NumPy has no bfloat16: use dg.float16 or dg.float32",
    "cfloat": "NumPy's name: dg.numpy.complex64",
    "cdouble": "NumPy's name: dg.numpy.complex128",
}
_JAX = {
    "pmap": "no multi-device mapping: use dg.vmap",
    "make_jaxpr": "dg.compile(f).graph() shows the traced graph (docs/compile.md)",
    "linearize": "use dg.jvp(f, primals, tangents) for each tangent",
    "block_until_ready": "dagrad computes eagerly with NumPy: results are ready when returned",
    "flatten_util": "dg.ravel_pytree is jax.flatten_util.ravel_pytree",
    "experimental": "jax.experimental.ode.odeint is dg.scipy.integrate.odeint",
    "config": "dagrad has no configuration object: float64 is the default, as in NumPy",
    "device_put": "dagrad computes with the array type of its values (NumPy; Dask, CuPy: docs/backends.md)",
}
TOP_LEVEL = {**{name: (f"PyTorch's torch.{name}", hint, "PyTorch") for name, hint in _TORCH.items()},
             **{name: (f"JAX's jax.{name}", hint, "JAX") for name, hint in _JAX.items()}}
