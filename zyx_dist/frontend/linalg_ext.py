"""Driver side: the array API standard's linear algebra beyond API.md section 5: `vecdot`, the norms,
`outer`, `trace`, `diagonal`, `cross`, `matrix_power` (lazy, fused like matmul: products and sums of
views), and the decompositions of the `linalg` extension (`cholesky`, `det`, `eigh`, `eigvalsh`,
`inv`, `pinv`, `qr`, `slogdet`, `solve`, `svd`, `svdvals`, `matrix_rank`). The decompositions are
iterative, pivoting algorithms that the opset cannot express, so they realize their input, run
NumPy's LAPACK on the host, and give the results as new tensors (uploaded when next used): correct
and float64-exact, but host-bound; they are for small matrices, not for speed.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from ..graph import history
from .common import as_tensor, broadcast_shapes, norm_axes, norm_axis
from .creation import eye, tensor
from .elementwise import abs as abs_
from .elementwise import as_float, sqrt
from .linalg import matmul
from .manipulation import moveaxis
from .movement import broadcast_to, pad, reshape, stack
from .reduce import max as max_
from .reduce import min as min_
from .reduce import sum as sum_
from .tensor import Tensor

__all__ = ["vecdot"]


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """sum(x1 * x2) over `axis` after broadcasting (real tensors: no conjugation needed)."""
    a, b = as_tensor(x1), as_tensor(x2)
    shape = broadcast_shapes(a.shape, b.shape)
    if not shape:
        raise ShapeError(f"vecdot needs at least 1-D operands, got shapes {a.shape} and {b.shape}")
    ax = norm_axis(axis, len(shape), shape)
    if a.ndim and b.ndim:
        da = a.shape[ax - len(shape)] if len(shape) - a.ndim <= ax else 1
        db = b.shape[ax - len(shape)] if len(shape) - b.ndim <= ax else 1
        if da != db:
            raise ShapeError(f"vecdot: axis {axis} has sizes {da} and {db} (shapes {a.shape}, {b.shape})")
    prod = a * b
    return sum_(prod, ax).astype(prod.dtype) if not prod.dtype.is_bool else sum_(prod, ax)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:
    """The p-norm over `axis` (all axes if None): ord 2 (default), 1, inf, -inf, 0 (count of nonzeros)
    or any other real p (sum(|x|^p)^(1/p)). Float result (float32 for integer input)."""
    x = as_float(x)
    axes = norm_axes(axis, x.shape)
    if axis is not None and not isinstance(axis, (tuple, list)):
        axes = (norm_axis(axis, x.ndim, x.shape),)
    a = abs_(x)
    if ord == math.inf:
        return max_(a, axes, keepdims)
    if ord == -math.inf:
        return min_(a, axes, keepdims)
    if ord == 0:
        return sum_((x != 0).astype(x.dtype), axes, keepdims)
    if ord == 1:
        return sum_(a, axes, keepdims)
    if ord == 2:
        return sqrt(sum_(a * a, axes, keepdims))
    p = float(ord)
    return sum_(a ** p, axes, keepdims) ** (1.0 / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """Norm of the matrices in the last two axes: 'fro', 1, -1, inf, -inf lazily; 2, -2 and 'nuc' (the
    singular values) through `svdvals` on the host."""
    x = as_float(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm needs at least 2 dims, got shape {x.shape}")
    rows, cols = x.ndim - 2, x.ndim - 1
    a = abs_(x)

    def kept(t: Tensor) -> Tensor:
        return reshape(t, t.shape + (1, 1)) if keepdims else t

    if ord == "fro":
        return sqrt(sum_(a * a, (rows, cols), keepdims))
    if ord in (1, -1):
        s = sum_(a, rows, True)
        out = (max_ if ord == 1 else min_)(s, (rows, cols), keepdims)
        return out
    if ord in (math.inf, -math.inf):
        s = sum_(a, cols, True)
        return (max_ if ord == math.inf else min_)(s, (rows, cols), keepdims)
    if ord in (2, -2, "nuc"):
        sv = svdvals(x)
        out = max_(sv, -1) if ord == 2 else min_(sv, -1) if ord == -2 else sum_(sv, -1)
        return kept(out)
    raise ValueError(f"matrix_norm: unsupported ord {ord!r} (use 'fro', 'nuc', 1, -1, 2, -2, inf or -inf)")


def outer(x1: Any, x2: Any, /) -> Tensor:
    a, b = as_tensor(x1), as_tensor(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer needs 1-D tensors, got shapes {a.shape} and {b.shape}")
    return reshape(a, (a.shape[0], 1)) * reshape(b, (1, b.shape[0]))


def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The k-th diagonal of the matrices in the last two axes (a strided view: a crop and a reshape)."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"diagonal needs at least 2 dims, got shape {x.shape}")
    k = operator.index(offset)
    n, m = x.shape[-2:]
    lead = x.shape[:-2]
    r0, c0 = (0, k) if k >= 0 else (-k, 0)
    length = max(0, min(n - r0, m - c0))
    if length == 0:
        return tensor(np.zeros(lead + (0,), x.dtype.np_dtype), x.dtype)
    sub = x[(..., slice(r0, r0 + length), slice(c0, c0 + length))]
    flat = reshape(sub, lead + (length * length,))
    # diagonal elements are length + 1 apart in the flattened square: pad, split into rows of length + 1, keep column 0
    padded = pad(flat, [(0, 0)] * len(lead) + [(0, length)])
    rows_ = reshape(padded, lead + (length, length + 1))
    return rows_[(..., slice(None), 0)]


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """Sum of the k-th diagonal; the dtype follows `zd.sum` unless given."""
    d = diagonal(x, offset=offset)
    out = sum_(d, -1)
    return out if dtype is None else out.astype(dtype)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along `axis` (broadcasting the others)."""
    a, b = as_tensor(x1), as_tensor(x2)
    shape = broadcast_shapes(a.shape, b.shape)
    ax = norm_axis(axis, len(shape), shape)
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    if shape[ax] != 3:
        raise ShapeError(f"cross needs vectors of 3 elements along axis {axis}, got shape {shape}")
    a, b = moveaxis(a, ax, -1), moveaxis(b, ax, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(out, -1, ax)


def matrix_power(x: Any, n: int, /) -> Tensor:
    """x @ x @ ... (n times) by repeated squaring; n = 0 gives identities, negative n inverts first."""
    x = as_tensor(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"matrix_power needs square matrices, got shape {x.shape}")
    n = operator.index(n)
    if n == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype), x.shape)
    if n < 0:
        x, n = inv(x), -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


# ---- decompositions, on the host ----------------------------------------------------------------------

def _host(fn: Callable[..., Any], *xs: Any, what: str) -> Any:
    """Run NumPy's `fn` on the realized float values of xs; float32 stays float32, float64 float64."""
    ts = [as_float(x) for x in xs]
    for t in ts:
        if t.ndim < 2:
            raise ShapeError(f"{what} needs matrices (at least 2 dims), got shape {t.shape}")
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = dtypes.promote(dt, t.dtype)
    if not dt.is_float:
        raise DTypeError(f"{what} needs float tensors, got {dt}")
    work = np.float64 if dt is dtypes.float64 else np.float32
    arrays = [t.numpy().astype(work) for t in ts]
    try:
        out = fn(*arrays)
    except np.linalg.LinAlgError as e:
        raise ValueError(f"{what}: {e}") from None
    return out, dt


def _t(a: np.ndarray, dt: dtypes.DType, what: str) -> Tensor:
    """A host result as a tensor, noted as one (graph/history.py): it has no gradient, and zd.grad says so."""
    t = tensor(np.asarray(a), dt)
    history.host_result(t.node, f"linalg.{what}")
    return t


def cholesky(x: Any, /, *, upper: bool = False) -> Tensor:
    out, dt = _host(np.linalg.cholesky, x, what="cholesky")
    return _t(np.swapaxes(out, -1, -2) if upper else out, dt, "cholesky")


def det(x: Any, /) -> Tensor:
    out, dt = _host(np.linalg.det, x, what="det")
    return _t(out, dt, "det")


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def eigh(x: Any, /) -> EighResult:
    (w, v), dt = _host(np.linalg.eigh, x, what="eigh")
    return EighResult(_t(w, dt, "eigh"), _t(v, dt, "eigh"))


def eigvalsh(x: Any, /) -> Tensor:
    out, dt = _host(np.linalg.eigvalsh, x, what="eigvalsh")
    return _t(out, dt, "eigvalsh")


def inv(x: Any, /) -> Tensor:
    out, dt = _host(np.linalg.inv, x, what="inv")
    return _t(out, dt, "inv")


def _rtol(rtol: Any, a: np.ndarray) -> np.ndarray:
    """The standard's cut-off for small singular values: `rtol` (a number or a tensor), else max(M, N) * eps."""
    r = rtol if rtol is not None else max(a.shape[-2:]) * np.finfo(a.dtype).eps
    return np.asarray(r.numpy() if isinstance(r, Tensor) else r)


def pinv(x: Any, /, *, rtol: Any = None) -> Tensor:
    def f(a: np.ndarray) -> np.ndarray:
        return np.linalg.pinv(a, rtol=_rtol(rtol, a))

    out, dt = _host(f, x, what="pinv")
    return _t(out, dt, "pinv")


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Tensor:
    def f(a: np.ndarray) -> np.ndarray:
        return np.linalg.matrix_rank(a, rtol=_rtol(rtol, a))

    out, _ = _host(f, x, what="matrix_rank")
    return tensor(np.asarray(out, np.int64), dtypes.int64)


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    (q, r), dt = _host(lambda a: np.linalg.qr(a, mode=mode), x, what="qr")
    return QRResult(_t(q, dt, "qr"), _t(r, dt, "qr"))


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def slogdet(x: Any, /) -> SlogdetResult:
    (s, ld), dt = _host(np.linalg.slogdet, x, what="slogdet")
    return SlogdetResult(_t(s, dt, "slogdet"), _t(ld, dt, "slogdet"))


def solve(x1: Any, x2: Any, /) -> Tensor:
    """x1 @ out = x2; x2 may be a vector (1-D) or a stack of matrices, broadcasting as the standard says."""
    a, b = as_float(x1), as_float(x2)
    if b.ndim == 1:
        out, dt = _host(lambda m, v: np.linalg.solve(m, v.reshape(-1)[..., None])[..., 0],
                        a, reshape(b, (b.shape[0], 1)), what="solve")
        return _t(out, dt, "solve")
    out, dt = _host(np.linalg.solve, a, b, what="solve")
    return _t(out, dt, "solve")


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    (u, s, vh), dt = _host(lambda a: np.linalg.svd(a, full_matrices=full_matrices), x, what="svd")
    return SVDResult(_t(u, dt, "svd"), _t(s, dt, "svd"), _t(vh, dt, "svd"))


def svdvals(x: Any, /) -> Tensor:
    out, dt = _host(lambda a: np.linalg.svd(a, compute_uv=False), x, what="svdvals")
    return _t(out, dt, "svdvals")
