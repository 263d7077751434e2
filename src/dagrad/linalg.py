"""`dagrad.linalg`: NumPy's `numpy.linalg` functions on dagrad values, with gradients.

Each works on a real or complex matrix or a stack of matrices (..., n, n) and follows NumPy's
semantics (`solve` with NumPy 2's rule: `b` is a vector only when it is 1-D; `eig` always
complex, as JAX's). Complex values follow JAX's and HIPS autograd's convention (a cotangent
pairs with a tangent as Re(sum(ct * t))). Derivatives: `cholesky` gives the Hermitian gradient
(PyTorch's), `eigh` that of the triangle it reads (autograd's), `norm` has gradient 0 at x == 0,
a real matrix's `slogdet` sign has no gradient, `det`'s gradient at a singular matrix comes from
the SVD and `slogdet`'s is inf/nan there, and the derivatives of singular vectors (eigenvectors)
are inf/nan where singular values (eigenvalues) repeat and defined only for functions invariant
to their phases. See docs/numpy.md.

>>> import numpy as np
>>> from dagrad import linalg
>>> linalg.solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([1.0, 1.0]))
array([0.5 , 0.25])
"""

from __future__ import annotations

from .ops.linalg import (
    cholesky,
    cond,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    matrix_norm,
    matrix_power,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    vector_norm,
)

__all__ = ["cholesky", "cond", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_norm", "matrix_power",
           "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm"]
