"""Driver side: the array API standard's sorting and searching functions that need an order on the
elements: `sort`, `argsort` (always stable), `searchsorted`. They take tensors and give lazy Tensors
built from the opset only (movement, compare, `where`, reduce), so they fuse and place like any other
graph:

- an axis of up to SMALL_SORT elements is sorted by rank: each element's rank is the number of
  elements ordered before it (one reduce), and output position r picks the element of rank r (a
  second reduce): 2 kernels, n^2 work per row, cheap for the short rows most programs sort;
- a longer axis goes through a bitonic sorting network over the next power of two (padding sorts
  last): log2(N) * (log2(N) + 1) / 2 compare-exchange stages of n work each. Each stage is written
  as a reduce over a pair axis of size 2 (out[i] = the element of the pair that belongs at i), so the
  kernelizer stores every stage (a reduce's output broadcast by the next stage is stored, zyx's rule)
  and the network costs one kernel per stage instead of an expression that doubles per stage.

Keys are compared with NaN after every number (as NumPy sorts), and ties by original index, which
makes both algorithms stable and deterministic. `searchsorted` counts, for each query, the sorted
elements before it (one fused reduce, m * n work): without a gather op in the opset a binary search
would cost more, not less.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ..graph import ir as graph
from ..graph.ir import ReduceOp
from .common import as_tensor, norm_axis
from .creation import arange
from .elementwise import isnan, logical_not, where
from .manipulation import check_integer_indices, moveaxis, take
from .movement import pad, reshape
from .reduce import reduce_axes
from .tensor import Tensor

__all__ = ["argsort", "searchsorted", "sort"]

SMALL_SORT = 256  # rows up to this long are sorted by rank (2 kernels), longer ones by the bitonic network


def _lowest(dtype: dtypes.DType) -> Any:
    """The identity of a max-reduce in this dtype: nothing is below it."""
    return graph.reduce_identity(ReduceOp.MAX, dtype)


def _key_less(a: Tensor, b: Tensor, descending: bool) -> Tensor:
    """a strictly before b by value: numbers in (descending) order, NaN after every number."""
    lt = (a > b) if descending else (a < b)
    if not a.dtype.is_float:
        return lt
    na, nb = isnan(a), isnan(b)
    return (lt & logical_not(na)) | (logical_not(na) & nb)


def _key_equal(a: Tensor, b: Tensor) -> Tensor:
    eq = a == b
    return (eq | (isnan(a) & isnan(b))) if a.dtype.is_float else eq


def _before(ka: Tensor, ia: Tensor, kb: Tensor, ib: Tensor, descending: bool, n: int | None = None) -> Tensor:
    """(ka, ia) strictly before (kb, ib): by key, ties by index. With `n`, indices >= n are padding,
    which goes after every element (by index among themselves)."""
    by_key = _key_less(ka, kb, descending) | (_key_equal(ka, kb) & (ia < ib))
    if n is None:
        return by_key
    pad_a, pad_b = ia >= n, ib >= n
    return (logical_not(pad_a) & (pad_b | by_key)) | (pad_a & pad_b & (ia < ib))


def _pick(hit: Tensor, values: Tensor, axis: int) -> Tensor:
    """The one value per slot that `hit` marks along `axis` (a max over the rest, which never wins:
    exact for -0.0, NaN and every integer, unlike a sum)."""
    low = values.dtype.np_dtype.type(_lowest(values.dtype))
    return reduce_axes(ReduceOp.MAX, where(hit, values, low), (axis,), False)


def _rank_sort(x: Tensor, descending: bool) -> tuple[Tensor, Tensor]:
    """Sort the rows of x (R, n) by rank: 2 kernels, R * n^2 work."""
    r, n = x.shape
    idt = dtypes.int32 if n < 2**31 else dtypes.int64
    idx = arange(n, dtype=idt)
    ki, kj = reshape(x, (r, n, 1)), reshape(x, (r, 1, n))
    ii, ij = reshape(idx, (1, n, 1)), reshape(idx, (1, 1, n))
    before = _before(kj, ij, ki, ii, descending)  # (R, i, j): element j goes before element i
    rank = reduce_axes(ReduceOp.SUM, before.astype(idt), (2,), False)  # (R, n)
    hit = reshape(rank, (r, 1, n)) == reshape(arange(n, dtype=idt), (1, n, 1))  # (R, slot, element)
    values = _pick(hit, reshape(x, (r, 1, n)), 2)
    order = _pick(hit, reshape(idx, (1, 1, n)), 2)
    return values, order


def _stage(v: Tensor, i: Tensor, k: int, j: int, big: int, n: int, descending: bool) -> tuple[Tensor, Tensor]:
    """One compare-exchange stage (block size k, partner distance j) of the bitonic network over rows
    of `big` elements: each element meets the one j away, and the pair is ordered ascending in blocks
    whose k-bit is 0, the other way in the others (the last merge, k == big, is ascending throughout)."""
    r = v.shape[0]
    blocks, dirs = (big // (2 * k), 2) if k < big else (1, 1)
    groups = big // (blocks * dirs * 2 * j)
    pair = (r, blocks, dirs, groups, 1, 2, j)  # the pair axis (size 2) is `in`; `out` (size 1) is expanded
    full = (r, blocks, dirs, groups, 2, 2, j)
    ev = graph.expand(reshape(v, pair).node, full)
    ei = graph.expand(reshape(i, pair).node, full)
    ev, ei = Tensor(ev), Tensor(ei)
    # the two members of each pair, read through the expanded views so every read of the previous
    # stage goes through the one stored node
    lo_v, hi_v = ev[:, :, :, :, :, 0:1, :], ev[:, :, :, :, :, 1:2, :]
    lo_i, hi_i = ei[:, :, :, :, :, 0:1, :], ei[:, :, :, :, :, 1:2, :]
    ascending_block = reshape(arange(dirs, dtype=dtypes.int32), (1, 1, dirs, 1, 1, 1, 1)) == 0
    swap = where(ascending_block, _before(hi_v, hi_i, lo_v, lo_i, descending, n),
                 _before(lo_v, lo_i, hi_v, hi_i, descending, n))
    out_pos = reshape(arange(2, dtype=dtypes.int32), (1, 1, 1, 1, 2, 1, 1))
    in_pos = reshape(arange(2, dtype=dtypes.int32), (1, 1, 1, 1, 1, 2, 1))
    take_it = (out_pos == in_pos) != swap  # out slot o takes pair member o, or the other one on a swap
    nv, ni = _pick(take_it, ev, 5), _pick(take_it, ei, 5)
    return reshape(nv, (r, big)), reshape(ni, (r, big))


def _bitonic_sort(x: Tensor, descending: bool) -> tuple[Tensor, Tensor]:
    r, n = x.shape
    big = 1 << max(1, math.ceil(math.log2(n)))
    idt = dtypes.int32 if big < 2**31 else dtypes.int64
    v = pad(x, ((0, 0), (0, big - n))) if big > n else x
    i = Tensor(graph.expand(reshape(arange(big, dtype=idt), (1, big)).node, (r, big)))
    k = 2
    while k <= big:
        j = k // 2
        while j >= 1:
            v, i = _stage(v, i, k, j, big, n, descending)
            j //= 2
        k *= 2
    if big > n:
        v, i = v[:, :n], i[:, :n]
    return v, i


def _sort_rows(x: Any, axis: int, descending: bool) -> tuple[Tensor, Tensor, tuple[int, ...], int]:
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError("sort/argsort need a tensor of at least 1 dim, got a 0-d tensor")
    ax = norm_axis(axis, x.ndim, x.shape)
    moved = moveaxis(x, ax, -1)
    n = x.shape[ax]
    rows = reshape(moved, (moved.size // n if n else 0, n))
    if n <= 1 or rows.shape[0] == 0:
        idx = Tensor(graph.const(0, rows.shape, dtypes.int64))
        return rows, idx, moved.shape, ax
    v, i = (_rank_sort if n <= SMALL_SORT else _bitonic_sort)(rows, descending)
    return v, i, moved.shape, ax


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """x sorted along `axis` (ascending unless `descending`; NaN last). Always stable."""
    v, _, shape, ax = _sort_rows(x, axis, descending)
    return moveaxis(reshape(v, shape), -1, ax)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The indices (int64) that sort x along `axis`; equal elements keep their order (stable)."""
    _, i, shape, ax = _sort_rows(x, axis, descending)
    return moveaxis(reshape(i.astype(dtypes.int64), shape), -1, ax)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Tensor:
    """For each element of x2, the index in the sorted 1-D x1 where it would be inserted to keep x1
    sorted: before equal elements ('left') or after them ('right'). NaN sorts after every number.
    `sorter` are the indices that sort x1 (as argsort gives): integers (else DTypeError), one per element
    of x1 (else ShapeError, as NumPy's "sorter.size must equal a.size"). int64, the shape of x2."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a = as_tensor(x1)
    if a.ndim != 1:
        raise ShapeError(f"searchsorted needs a 1-D sorted tensor, got shape {a.shape}")
    if sorter is not None:
        check_integer_indices(sorter, "searchsorted: sorter")
        s = sorter if isinstance(sorter, Tensor) else np.asarray(sorter)
        # a shorter sorter would search a shorter x1, a longer one repeat elements: both silently wrong
        if s.ndim != 1 or s.size != a.size:
            raise ShapeError(f"searchsorted: sorter of shape {tuple(s.shape)} ({s.size} elements) for x1 of "
                             f"{a.size} elements: sorter.size must equal x1.size")
        a = take(a, s)
    q = as_tensor(x2)
    dt = dtypes.promote(a.dtype, q.dtype)
    a, q = a.astype(dt), q.astype(dt)
    n = a.shape[0]
    if n == 0 or q.size == 0:
        return Tensor(graph.const(0, q.shape, dtypes.int64))
    av = reshape(a, (1,) * q.ndim + (n,))
    qv = reshape(q, q.shape + (1,))
    # left: the elements strictly before the query; right: those not strictly after it
    before = _key_less(av, qv, False) if side == "left" else logical_not(_key_less(qv, av, False))
    return reduce_axes(ReduceOp.SUM, before.astype(dtypes.int64), (q.ndim,), False, 0)

