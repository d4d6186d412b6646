"""Driver side: the reductions of API.md section 5. Each takes a tensor, `axis` (None, an int or a
tuple; negatives count from the end) and `keepdims`, and gives a Tensor over one `graph.reduce` (which
keeps reduced dims as size 1; a reshape drops them unless keepdims) plus the casts and elementwise ops
around it. Result dtypes follow NumPy 2: sum/prod of bool or signed ints give int64 (unsigned: uint64),
mean/var/std of ints give float32, argmax/argmin give int64.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from .. import dtypes
from ..dtypes import DType
from ..errors import ShapeError
from ..graph import autograd
from ..graph import ir as graph
from ..graph.ir import ReduceOp
from .common import Axis, as_tensor, norm_axes, norm_axis
from .creation import arange
from .elementwise import where
from .tensor import Tensor

__all__ = ["all", "any", "argmax", "argmin", "logsumexp", "max", "mean", "min", "prod", "std", "sum", "var"]


def _kept_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if len(axes) == 1:  # (one axis, slices: softmax's and every norm's)
        a = axes[0]
        return (*shape[:a], 1, *shape[a + 1:]) if keepdims else (*shape[:a], *shape[a + 1:])
    if keepdims:  # (lists, not generators: every reduction asks)
        return tuple([1 if i in axes else d for i, d in enumerate(shape)])
    return tuple([d for i, d in enumerate(shape) if i not in axes])


def reduce_axes(op: ReduceOp, x: Tensor, axes: tuple[int, ...], keepdims: bool, empty: Any = None) -> Tensor:
    """`op` over normalised `axes` in x's dtype. `empty` is the result of an empty reduction; None means
    there is none (max/min) and an empty axis raises ShapeError at the call."""
    node = x.node
    out_shape = _kept_shape(node.shape, axes, keepdims)
    if node.size == 0:  # (an empty reduced axis makes x empty: asked only then)
        if builtins.any(x.shape[a] == 0 for a in axes):
            if empty is None:
                raise ShapeError(f"{op.value} over an empty axis (shape {x.shape}, axis {axes}) has no identity")
            return Tensor(graph.const(empty, out_shape, x.dtype))
        return Tensor(graph.const(0, out_shape, x.dtype))  # another axis is empty: its value does not matter
    return Tensor(graph.reshape(graph.reduce(op, node, axes), out_shape))


def _acc_dtype(d: DType) -> DType:
    """NumPy 2's sum/prod dtype: bool and signed ints accumulate in int64, unsigned in uint64."""
    if d.is_bool or (d.is_int and not d.is_unsigned):
        return dtypes.int64
    return dtypes.uint64 if d.is_unsigned else d


def _float_dtype(d: DType) -> DType:
    return d if d.is_float else dtypes.DEFAULT_FLOAT


def sum(x: Any, axis: Axis = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over `axis`; accumulates in `dtype` when given (the standard's keyword), else in NumPy 2's
    dtype (int64 for bool and signed ints, uint64 for unsigned, floats keep theirs)."""
    x = as_tensor(x)
    acc = _acc_dtype(x.dtype) if dtype is None else dtypes.dtype(dtype)
    return reduce_axes(ReduceOp.SUM, x.astype(acc), norm_axes(axis, x.shape), keepdims, 0)


def prod(x: Any, axis: Axis = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    x = as_tensor(x)
    acc = _acc_dtype(x.dtype) if dtype is None else dtypes.dtype(dtype)
    return reduce_axes(ReduceOp.PROD, x.astype(acc), norm_axes(axis, x.shape), keepdims, 1)


def max(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Maximum (NaN propagates); an empty axis raises ShapeError."""
    x = as_tensor(x)
    return reduce_axes(ReduceOp.MAX, x, norm_axes(axis, x.shape), keepdims)


def min(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    x = as_tensor(x)
    return reduce_axes(ReduceOp.MIN, x, norm_axes(axis, x.shape), keepdims)


def any(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    x = as_tensor(x)
    return reduce_axes(ReduceOp.MAX, x != 0 if not x.dtype.is_bool else x, norm_axes(axis, x.shape), keepdims, False)


def all(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    x = as_tensor(x)
    return reduce_axes(ReduceOp.MIN, x != 0 if not x.dtype.is_bool else x, norm_axes(axis, x.shape), keepdims, True)


def _count(x: Tensor, axes: tuple[int, ...]) -> int:
    return graph.prod(x.shape[a] for a in axes)


def _in_float(x: Tensor) -> tuple[Tensor, DType]:
    """x in the dtype mean and var compute in, and the dtype of their result: float (float32 for integer input);
    half types are summed and divided in float32, as NumPy does (a count past 65504 is inf in float16, and 1023 is
    1024 in bfloat16), and their result rounded back."""
    dt = _float_dtype(x.dtype)
    return x.astype(dtypes.float32 if dt.is_half else dt), dt


def mean(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """sum / n in float (`_in_float`); an empty axis gives NaN as NumPy."""
    x, dt = _in_float(as_tensor(x))
    axes = norm_axes(axis, x.shape)
    return (reduce_axes(ReduceOp.SUM, x, axes, keepdims, 0) / _count(x, axes)).astype(dt)


def var(x: Any, axis: Axis = None, keepdims: bool = False, correction: float = 0) -> Tensor:
    """sum((x - mean)^2) / (n - correction), in float (`_in_float`)."""
    x, dt = _in_float(as_tensor(x))
    axes = norm_axes(axis, x.shape)
    d = x - mean(x, axes, keepdims=True)
    return (reduce_axes(ReduceOp.SUM, d * d, axes, keepdims, 0) / builtins.max(_count(x, axes) - correction, 0)
            ).astype(dt)


def std(x: Any, axis: Axis = None, keepdims: bool = False, correction: float = 0) -> Tensor:
    return var(x, axis, keepdims, correction).sqrt()


def logsumexp(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x))) computed stably: max + log(sum(exp(x - max))); an all -inf or +inf slice gives -inf/+inf, an
    empty one -inf (log 0, as scipy's and torch's)."""
    x = as_tensor(x)
    axes = norm_axes(axis, x.shape)
    x = x.astype(_float_dtype(x.dtype))
    m = reduce_axes(ReduceOp.MAX, x, axes, True, -math.inf)  # (-inf only where an axis is empty: the shift is then 0)
    autograd.shift_only(m.node, x.node)  # (the result does not depend on the shift: its gradient is zero)
    shift = where(m.isinf(), 0, m)
    s = reduce_axes(ReduceOp.SUM, (x - shift).exp(), axes, True, 0).log() + shift
    return s if keepdims else s.reshape(_kept_shape(x.shape, axes, False))


def _arg(x: Any, axis: int | None, keepdims: bool, largest: bool) -> Tensor:
    x = as_tensor(x)
    ndim = x.ndim
    flat = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else norm_axis(axis, ndim, x.shape)
    n = flat.shape[ax]
    if n == 0:
        raise ShapeError(f"arg{'max' if largest else 'min'} of an empty axis (shape {x.shape}, axis {axis})")
    op = ReduceOp.MAX if largest else ReduceOp.MIN
    m = reduce_axes(op, flat, (ax,), True)
    hit = flat == m
    if flat.dtype.is_float:  # NaN wins, as in NumPy (max/min propagate it, and NaN != NaN)
        hit = hit | flat.isnan()
    idx_dtype = dtypes.int32 if n < 2**31 else dtypes.int64
    idx = arange(n, dtype=idx_dtype).reshape(tuple(n if i == ax else 1 for i in range(flat.ndim)))
    first = reduce_axes(ReduceOp.MIN, where(hit, idx, n), (ax,), keepdims).astype(dtypes.int64)
    if axis is None and keepdims:
        return first.reshape((1,) * ndim)
    return first


def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first maximum (NaN counts as the maximum, as NumPy); int64."""
    return _arg(x, axis, keepdims, True)


def argmin(x: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    return _arg(x, axis, keepdims, False)
