"""Driver side: `zd.linalg`, the array API standard's linear algebra extension as a namespace. It takes
nothing of its own: every name is a front-end function (lazy products and sums for matmul, the norms,
vecdot, trace, diagonal, outer, cross, matrix_power; the decompositions run on the host, see
`frontend/linalg_ext.py`).
"""

from __future__ import annotations

from .frontend.linalg import matmul, tensordot
from .frontend.linalg_ext import (
    cholesky,
    cross,
    det,
    diagonal,
    eigh,
    eigvalsh,
    inv,
    matrix_norm,
    matrix_power,
    matrix_rank,
    outer,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    trace,
    vecdot,
    vector_norm,
)
from .frontend.movement import matrix_transpose

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
