"""Driver side: the array API standard's cumulative and differencing statistics (`cumulative_sum`,
`cumulative_prod`, `diff`) and `count_nonzero`. They take a tensor and an axis and give lazy Tensors
built from the opset. A scan is blocked: rows are cut into blocks of SCAN_BLOCK elements, each block is
scanned by a triangular reduce (out[i] = sum of x[j] for j <= i within the block, B^2 work per block),
the block totals are scanned the same way one level up, and each block adds the total before it. So a
scan of n elements costs n * SCAN_BLOCK work in about 2 kernels per level and log_B(n) levels, and the
kernelizer stores each level because a reduce reads a reduce (zyx's rule).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..dtypes import DType
from ..errors import ShapeError
from ..graph import ir as graph
from ..graph.ir import ReduceOp
from .common import Axis, as_tensor, norm_axes, norm_axis
from .creation import arange
from .elementwise import not_equal, where
from .manipulation import moveaxis
from .movement import broadcast_to, concat, pad, reshape
from .reduce import _acc_dtype, reduce_axes
from .reduce import sum as sum_
from .tensor import Tensor

__all__ = ["count_nonzero", "cumsum", "cumulative_prod", "cumulative_sum", "diff"]

SCAN_BLOCK = 64


def _triangular(rows: Tensor, op: ReduceOp) -> Tensor:
    """Inclusive scan of the last axis of `rows` (..., b) by one reduce over (..., b, b)."""
    b = rows.shape[-1]
    lead = rows.shape[:-1]
    i = reshape(arange(b, dtype=dtypes.int32), (b, 1))
    j = reshape(arange(b, dtype=dtypes.int32), (1, b))
    ident = rows.dtype.np_dtype.type(graph.reduce_identity(op, rows.dtype))
    terms = where(j <= i, reshape(rows, lead + (1, b)), ident)  # (..., i, j)
    return reduce_axes(op, terms, (len(lead) + 1,), False)


def _combine(op: ReduceOp, a: Tensor, b: Tensor) -> Tensor:
    return a + b if op is ReduceOp.SUM else a * b


def _scan_last(x: Tensor, op: ReduceOp) -> Tensor:
    """Inclusive scan along the last axis, blocked (see the module docstring); levels as a loop."""
    levels: list[tuple[Tensor, int]] = []  # (blocked local scans, length before padding) per level
    cur = x
    while cur.shape[-1] > SCAN_BLOCK:
        n = cur.shape[-1]
        groups = -(-n // SCAN_BLOCK)
        ident = graph.reduce_identity(op, cur.dtype)
        padded = pad(cur, [(0, 0)] * (cur.ndim - 1) + [(0, groups * SCAN_BLOCK - n)], ident) \
            if groups * SCAN_BLOCK != n else cur
        local = _triangular(reshape(padded, cur.shape[:-1] + (groups, SCAN_BLOCK)), op)
        levels.append((local, n))
        cur = local[..., SCAN_BLOCK - 1]  # each block's total: the next level scans these
    out = _triangular(cur, op) if cur.shape[-1] > 1 else cur
    for local, n in reversed(levels):  # out: inclusive scan of this level's block totals
        groups = local.shape[-2]
        ident = graph.reduce_identity(op, local.dtype)
        before = pad(out[..., :groups - 1], [(0, 0)] * (out.ndim - 1) + [(1, 0)], ident)  # exclusive
        full = _combine(op, local, reshape(before, before.shape + (1,)))
        out = reshape(full, full.shape[:-2] + (groups * SCAN_BLOCK,))[..., :n]
    return out


def _cumulative(x: Any, op: ReduceOp, axis: int | None, dtype: Any, include_initial: bool, what: str) -> Tensor:
    x = as_tensor(x)
    if axis is None:
        if x.ndim > 1:
            raise ShapeError(f"{what} needs an axis for a tensor of {x.ndim} dims (shape {x.shape})")
        if x.ndim == 0:
            x = reshape(x, (1,))
        axis = 0
    ax = norm_axis(axis, x.ndim, x.shape)
    dt: DType = _acc_dtype(x.dtype) if dtype is None else dtypes.dtype(dtype)
    moved = moveaxis(x.astype(dt), ax, -1)
    n = moved.shape[-1]
    ident = graph.reduce_identity(op, dt)
    if n == 0 or moved.size == 0:
        out = moved
    else:
        out = _scan_last(moved, op)
    if include_initial:
        out = pad(out, [(0, 0)] * (out.ndim - 1) + [(1, 0)], ident)
    return moveaxis(out, -1, ax)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Tensor:
    """Running sums along `axis` (optional for 1-D x); `include_initial` puts a 0 in front. The dtype
    follows `zd.sum` (signed integers and bool accumulate in int64, unsigned in uint64)."""
    return _cumulative(x, ReduceOp.SUM, axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Tensor:
    """Running products along `axis`, as `cumulative_sum`."""
    return _cumulative(x, ReduceOp.PROD, axis, dtype, include_initial, "cumulative_prod")


def cumsum(x: Any, axis: int | None = None) -> Tensor:
    """API.md's optional `zd.cumsum(x, axis)`: NumPy's cumsum (the flattened tensor when axis is None)."""
    x = as_tensor(x)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    return cumulative_sum(x, axis=axis)



def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Tensor:
    """The n-th discrete difference along `axis` (x[1:] - x[:-1], n times); `prepend`/`append` are
    joined on first. bool gives x[1:] != x[:-1], as NumPy."""
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError("diff needs a tensor of at least 1 dim")
    if n < 0:
        raise ShapeError(f"diff order n={n} must not be negative")
    ax = norm_axis(axis, x.ndim, x.shape)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat([_along(as_tensor(p), x, ax) for p in parts], axis=ax)
    lead = (slice(None),) * ax
    for _ in range(n):
        if x.shape[ax] == 0:
            break
        hi, lo = x[(*lead, slice(1, None))], x[(*lead, slice(None, -1))]
        x = not_equal(hi, lo) if x.dtype.is_bool else hi - lo
    return x


def _along(p: Tensor, x: Tensor, ax: int) -> Tensor:
    """A prepend/append value as a slab of x's shape along `ax` (a scalar broadcasts to one element)."""
    if p.ndim == 0:
        return broadcast_to(p, x.shape[:ax] + (1,) + x.shape[ax + 1:])
    return p


def count_nonzero(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """How many elements are not zero (NaN counts), as int64."""
    x = as_tensor(x)
    norm_axes(axis, x.shape)  # validates the axes at the call
    hit = x if x.dtype.is_bool else not_equal(x, 0)
    return sum_(hit, axis, keepdims).astype(dtypes.int64)
