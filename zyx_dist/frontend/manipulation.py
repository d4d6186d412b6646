"""Driver side: the array API standard's manipulation, indexing and creation functions that API.md
section 5 lacks: `moveaxis`, `roll`, `broadcast_arrays`, `take`, `unstack`, `tril`, `triu`,
`meshgrid`. They take tensors and axis or shape arguments (validated at the call, `ShapeError`
naming the shape) and give Tensors built from the movement nodes and `where`, as the ops of
`movement` are: a roll is two crops joined, `take` is the gather of integer-array indexing, a triangle
is a `where` over two index vectors. No data is copied on the driver.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from .common import as_tensor, broadcast_shapes, norm_axis
from .creation import arange
from .elementwise import where
from .movement import _gather, _index_tensor, broadcast_to, concat, permute_dims, reshape
from .tensor import Tensor

__all__ = ["broadcast_arrays", "meshgrid", "moveaxis", "roll", "take", "tril", "triu", "unstack"]


def _axes_list(axis: Any, ndim: int, shape: tuple[int, ...]) -> list[int]:
    """Axes in the order given (not sorted), each normalised; a repeat raises ShapeError."""
    items = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    out = [norm_axis(a, ndim, shape) for a in items]
    if len(set(out)) != len(out):
        raise ShapeError(f"axes {axis} repeat an axis (shape {shape})")
    return out


def moveaxis(x: Any, source: Any, destination: Any, /) -> Tensor:
    """Move the axes `source` to the positions `destination`; the others keep their order."""
    x = as_tensor(x)
    src = _axes_list(source, x.ndim, x.shape)
    dst = _axes_list(destination, x.ndim, x.shape)
    if len(src) != len(dst):
        raise ShapeError(f"moveaxis: source {source} and destination {destination} differ in length")
    rest = iter(a for a in range(x.ndim) if a not in src)
    placed = dict(zip(dst, src))
    return permute_dims(x, tuple(placed[i] if i in placed else next(rest) for i in range(x.ndim)))


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Tensor:
    """Shift elements along `axis` (the flattened tensor if None), wrapping around: each axis is two
    crops joined in the other order, index arithmetic only."""
    x = as_tensor(x)
    shape = x.shape
    if axis is None:  # the flattened tensor, rolled along its one axis, then given its shape back
        x, axis = reshape(x, (x.size,)), 0
    shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift]
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    if len(shifts) == 1 and len(axes) > 1:
        shifts *= len(axes)
    if len(shifts) != len(axes):
        raise ShapeError(f"roll: shift {shift} and axis {axis} differ in length")
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes):  # the same axis twice rolls by the sum (as NumPy)
        ax = norm_axis(a, x.ndim, x.shape)
        total[ax] = total.get(ax, 0) + operator.index(s)
    out = x
    for ax, s in total.items():
        n = x.shape[ax]
        k = s % n if n else 0
        if k == 0:
            continue
        lead = (slice(None),) * ax
        out = concat([out[(*lead, slice(n - k, n))], out[(*lead, slice(0, n - k))]], axis=ax)
    return reshape(out, shape) if out.shape != shape else out


def broadcast_arrays(*arrays: Any) -> list[Tensor]:
    """The tensors broadcast to their common shape (NumPy rules)."""
    ts = [as_tensor(a) for a in arrays]
    shape = broadcast_shapes(*[t.shape for t in ts])
    return [broadcast_to(t, shape) for t in ts]


def check_integer_indices(indices: Any, what: str) -> None:
    """Raise DTypeError naming the dtype when `indices` (a tensor, array or nested list) are not integers:
    a dtype error of the call, as NumPy's TypeError for `np.take(a, [0.0])`, where `x[float_index]` is an
    IndexError. Bool passes here (the gather refuses masks itself), as does an empty list (NumPy gives it
    float64)."""
    if isinstance(indices, Tensor):
        if not (indices.dtype.is_int or indices.dtype.is_bool):
            raise DTypeError(f"{what} must be of an integer dtype, got {indices.dtype}")
        return
    arr = np.asarray(indices)
    if arr.size and arr.dtype.kind not in "iub":
        raise DTypeError(f"{what} must be of an integer dtype, got {arr.dtype}")


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Tensor:
    """Elements of `x` at integer `indices` along `axis` (the standard needs it for 1-D x when None);
    negative indices count from the end. The gather of `x[..., indices, ...]`. Non-integer indices raise
    DTypeError."""
    check_integer_indices(indices, "take: indices")
    x = as_tensor(x)
    if axis is None:
        if x.ndim != 1:
            raise ShapeError(f"take needs an axis for a tensor of {x.ndim} dims (shape {x.shape})")
        axis = 0
    ax = norm_axis(axis, x.ndim, x.shape)
    idx, guard = _index_tensor(indices, ax, x.shape[ax])
    if idx.ndim == 0:
        return reshape(_gather(x, ax, reshape(idx, (1,)), guard), x.shape[:ax] + x.shape[ax + 1:])
    return _gather(x, ax, idx, guard)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of `x` along `axis`, each without that axis."""
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError("unstack needs a tensor of at least 1 dim")
    ax = norm_axis(axis, x.ndim, x.shape)
    lead = (slice(None),) * ax
    return tuple(x[(*lead, i)] for i in range(x.shape[ax]))


def _triangle(x: Any, k: int, lower: bool) -> Tensor:
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"tril/triu need at least 2 dims, got shape {x.shape}")
    n, m = x.shape[-2:]
    rows = reshape(arange(n, dtype=dtypes.int64), (n, 1))
    cols = reshape(arange(m, dtype=dtypes.int64), (1, m))
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    return where(keep, x, x.dtype.np_dtype.type(0))


def tril(x: Any, /, *, k: int = 0) -> Tensor:
    """The lower triangle of the last two axes (on and below the k-th diagonal); the rest zero."""
    return _triangle(x, operator.index(k), True)


def triu(x: Any, /, *, k: int = 0) -> Tensor:
    """The upper triangle of the last two axes (on and above the k-th diagonal); the rest zero."""
    return _triangle(x, operator.index(k), False)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids from 1-D tensors: 'xy' (Cartesian, the first two axes swapped) or 'ij' (matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    ts = [as_tensor(a) for a in arrays]
    for t in ts:
        if t.ndim != 1:
            raise ShapeError(f"meshgrid takes 1-D tensors, got shape {t.shape}")
    if ts:
        dt = ts[0].dtype
        for t in ts[1:]:
            dt = dtypes.promote(dt, t.dtype)
        ts = [t.astype(dt) for t in ts]
    shape = [t.shape[0] for t in ts]
    if indexing == "xy" and len(ts) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(ts):
        pos = (1 if i == 0 else 0 if i == 1 else i) if indexing == "xy" and len(ts) > 1 else i
        view = reshape(t, tuple(t.shape[0] if j == pos else 1 for j in range(len(ts))))
        out.append(broadcast_to(view, tuple(shape)))
    return out

