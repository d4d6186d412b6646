"""Driver side: the creation functions of API.md section 3. They take data (NumPy arrays, nested lists,
scalars, Tensors) or a shape and give lazy Tensors: data becomes a `graph.leaf` holding a private copy
(uploaded when a kernel first needs it), fills become `graph.const` (no memory). Random data is drawn on
the host from one PCG64 generator (re-seeded by `manual_seed`, or a fresh one per call with `seed=`), so
it is the same whatever devices run the program. `device=` pins where the tensor lives.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

import numpy as np

from .. import context, dtypes
from ..dtypes import DType
from ..errors import DTypeError, ShapeError
from ..graph import ir as graph
from .common import as_shape, shape_args
from .tensor import Tensor

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "full",
    "full_like",
    "linspace",
    "manual_seed",
    "ones",
    "ones_like",
    "rand",
    "randn",
    "tensor",
    "uniform",
    "zeros",
    "zeros_like",
]

_rng = np.random.Generator(np.random.PCG64(0))


def _place(t: Tensor, device: str | None) -> Tensor:
    return t if device is None else t.to(device)


def _resolve(device: str | None) -> str | None:
    if device is None:
        return None
    return context.session().resolve_device(device)


def _infer(arr: np.ndarray, data: Any) -> DType:
    """The dtype of data given without one: NumPy arrays and scalars keep theirs; Python data takes
    bool, int32 (int64 when a value does not fit) or float32."""
    if isinstance(data, (np.ndarray, np.generic)):
        return dtypes.dtype(arr.dtype)
    kind = arr.dtype.kind
    if kind == "b":
        return dtypes.bool_
    if kind in "iu":
        if arr.size == 0 or (arr.min() >= -(2**31) and arr.max() < 2**31):
            return dtypes.int32
        return dtypes.int64 if arr.max() < 2**63 else dtypes.uint64
    if kind == "f":
        return dtypes.float32
    raise DTypeError(f"unsupported data of dtype {arr.dtype} (zyx_dist has no complex, string or object tensors)")


def tensor(data: Any, dtype: Any = None, device: str | None = None, *, copy: bool | None = None) -> Tensor:
    """A tensor from a NumPy array (copied), nested lists, a scalar, or a Tensor (itself, or cast).

    `copy` as the array API's `asarray`: True always gives a new tensor, None reuses a Tensor given as
    it is; False also reuses it, and for other data raises ValueError when the data cannot become a
    tensor without a copy (host data always needs one on its way to a device, except an array that a
    CPU worker in this process can adopt, as `zd.from_dlpack` does)."""
    if isinstance(data, Tensor):
        if copy is False and dtype is not None and dtypes.dtype(dtype) is not data.dtype:
            raise ValueError(f"asarray(copy=False): casting {data.dtype} to {dtypes.dtype(dtype)} needs a copy")
        out = data if dtype is None else data.astype(dtype)
        if copy and out is data:
            out = Tensor(data.node)  # immutable: a new handle on the same value is a copy
        return _place(out, device)
    if copy is False:
        from .interop import from_dlpack

        if dtype is not None and getattr(data, "dtype", None) is not None and \
                dtypes.dtype(dtype) is not dtypes.dtype(data.dtype):
            raise ValueError(f"asarray(copy=False): casting {data.dtype} to {dtypes.dtype(dtype)} needs a copy")
        if not hasattr(data, "__dlpack__"):
            raise ValueError(f"asarray(copy=False): {type(data).__name__} data cannot become a tensor without a copy")
        try:
            return from_dlpack(data, device=device, copy=False)
        except BufferError as e:  # the standard's asarray says ValueError where from_dlpack says BufferError
            raise ValueError(f"asarray(copy=False): {e}") from None
    want = None if dtype is None else dtypes.dtype(dtype)
    try:
        if isinstance(data, np.ndarray) or want is None:
            arr = np.array(data, copy=True, order="C")
        else:  # Python data with a dtype: convert directly, no detour through the default dtypes
            arr = np.array(data, dtype=want.np_dtype, order="C")
    except (ValueError, OverflowError) as e:  # ragged nesting, or an int no dtype holds
        raise ShapeError(f"cannot make a tensor of {type(data).__name__} data: {e}") from None
    except TypeError as e:  # e.g. a list holding tensors of several elements
        raise DTypeError(f"cannot make a tensor of {type(data).__name__} data: {e}") from None
    if arr.dtype == object and not isinstance(data, np.ndarray):
        big = [v for v in np.ravel(arr) if isinstance(v, int) and not -(2**63) <= v < 2**64]
        if big:
            raise DTypeError(f"integer {big[0]} does not fit any zyx_dist dtype (int64/uint64)")
    dt = want or _infer(arr, data)
    if arr.dtype != dt.np_dtype:
        with np.errstate(all="ignore"):
            arr = arr.astype(dt.np_dtype, order="C")
    return Tensor(graph.leaf(arr, dt, device=_resolve(device)))


asarray = tensor


def _dt(dtype: Any, default: DType) -> DType:
    """`dtype`, where None means the call's default dtype (the array API's dtype=None)."""
    return default if dtype is None else dtypes.dtype(dtype)


def _fill(shape: Any, value: Any, dtype: DType, device: str | None) -> Tensor:
    return _place(Tensor(graph.const(value, as_shape(shape), dtype)), device)


def zeros(shape: Any, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    return _fill(shape, 0, _dt(dtype, dtypes.DEFAULT_FLOAT), device)


def ones(shape: Any, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    return _fill(shape, 1, _dt(dtype, dtypes.DEFAULT_FLOAT), device)


def empty(shape: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    """The array API's `empty`: its values are unspecified; here they are zeros (a constant, no memory)."""
    return _fill(shape, 0, _dt(dtype, dtypes.DEFAULT_FLOAT), device)


def full(shape: Any, fill_value: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    """Every element `fill_value`; the dtype follows the value (bool, int32/int64, float32) unless given."""
    if isinstance(fill_value, Tensor):  # a 0-d tensor as the value (the standard allows array scalars)
        fill_value = fill_value.item()
    dt = dtypes.scalar_dtype(fill_value) if dtype is None else dtypes.dtype(dtype)
    return _fill(shape, fill_value, dt, device)


def _like(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else tensor(x)


def zeros_like(x: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    x = _like(x)
    return zeros(x.shape, x.dtype if dtype is None else dtype, device)


def ones_like(x: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    x = _like(x)
    return ones(x.shape, x.dtype if dtype is None else dtype, device)


def empty_like(x: Any, /, dtype: Any = None, device: str | None = None) -> Tensor:
    x = _like(x)
    return empty(x.shape, x.dtype if dtype is None else dtype, device)


def full_like(x: Any, fill_value: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    x = _like(x)
    return full(x.shape, fill_value, x.dtype if dtype is None else dtype, device)


def _host(arr: np.ndarray, dtype: DType, device: str | None) -> Tensor:
    """A host-built array as a leaf of `dtype` (exact: no device arithmetic involved)."""
    with np.errstate(all="ignore"):
        arr = arr.astype(dtype.np_dtype, order="C")  # not ascontiguousarray: it makes 0-d arrays 1-d
    return Tensor(graph.leaf(arr, dtype, device=_resolve(device)))


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, device: str | None = None) -> Tensor:
    """NumPy's arange: [start, stop) by step, ceil((stop - start) / step) elements. Integer arguments give
    int32 (int64 when a value does not fit), any float gives float32. Built on the host (exact)."""
    if stop is None:
        start, stop = 0, start
    args = (start, stop, step)
    if any(not isinstance(v, numbers.Real) or not math.isfinite(v) for v in args):
        raise ShapeError(f"arange needs finite real start, stop and step, got {args}")
    if step == 0:
        raise ShapeError("arange step must not be zero")
    ints = all(_is_int(v) for v in args)
    count = math.ceil((stop - start) / step)
    if count > 2**40:
        raise ShapeError(f"arange({start}, {stop}, {step}) would have {count} elements: too many")
    vals = np.arange(start, stop, step, dtype=np.int64 if ints else np.float64)
    if dtype is not None:
        dt = dtypes.dtype(dtype)
    elif ints:
        fits = vals.size == 0 or (vals.min() >= -(2**31) and vals.max() < 2**31)
        dt = dtypes.int32 if fits else dtypes.int64
    else:
        dt = dtypes.float32
    return _host(vals, dt, device)


def linspace(a: Any, b: Any, num: Any = None, dtype: Any = None, device: str | None = None, *,
             endpoint: bool = True, n: Any = None) -> Tensor:
    """`num` evenly spaced values from a to b (b included unless `endpoint=False`); float32
    unless dtype is given. API.md's `zd.linspace(a, b, n)` is the same call (`n=` is accepted too)."""
    if num is None:
        num = n
    if num is None:
        raise TypeError("linspace() missing the number of values (num)")
    (num,) = as_shape(num)
    dt = _dt(dtype, dtypes.DEFAULT_FLOAT)
    return _host(np.linspace(a, b, num, endpoint=endpoint), dt, device)


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    """Ones on the k-th diagonal. Built lazily from two small index vectors, not an n*m host array."""
    n, m = as_shape((n, n if m is None else m))
    k = max(-n - 1, min(m + 1, operator.index(k)))  # a diagonal outside the matrix: all zeros, as any farther one
    rows = arange(n, dtype=dtypes.int64).reshape(n, 1) + k
    cols = arange(m, dtype=dtypes.int64).reshape(1, m)
    return _place((rows == cols).astype(_dt(dtype, dtypes.DEFAULT_FLOAT)), device)


def manual_seed(seed: int) -> None:
    """Re-seed the generator that `rand`, `randn` and `uniform` use when called without `seed=`."""
    global _rng
    _rng = np.random.Generator(np.random.PCG64(seed))


def _gen(seed: int | None) -> np.random.Generator:
    return _rng if seed is None else np.random.Generator(np.random.PCG64(seed))


def _float_dtype(dtype: Any) -> DType:
    dt = _dt(dtype, dtypes.DEFAULT_FLOAT)
    if not dt.is_float:
        raise DTypeError(f"random tensors need a float dtype, got {dt}")
    return dt


def rand(*shape: Any, seed: int | None = None, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    """Uniform on [0, 1). `rand(2, 3)` or `rand((2, 3))`."""
    dt = _float_dtype(dtype)
    vals = _gen(seed).random(shape_args(shape)).astype(dt.np_dtype)
    # Rounding to a narrower float can reach 1.0; keep the interval half-open.
    vals = np.minimum(vals, np.nextafter(dt.np_dtype.type(1), dt.np_dtype.type(0)))
    return _host(vals, dt, device)


def randn(*shape: Any, seed: int | None = None, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    """Standard normal samples. `randn(2, 3)` or `randn((2, 3))`."""
    dt = _float_dtype(dtype)
    return _host(_gen(seed).standard_normal(shape_args(shape)), dt, device)


def uniform(shape: Any, low: float = 0.0, high: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32,
            device: str | None = None) -> Tensor:
    """Uniform on [low, high)."""
    dt = _float_dtype(dtype)
    return _host(_gen(seed).uniform(low, high, as_shape(shape)), dt, device)
