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

from .. import dtypes
from ..dtypes import DType
from ..errors import DTypeError, ShapeError
from ..graph import ir as graph
from .common import as_shape, shape_args
from .data import asarray, check_int_fits, place, resolve_device, tensor
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

# The process's default generator (API.md section 3: `manual_seed` re-seeds it, as torch's does). The one piece
# of front-end state; re-seeded in place, never rebound, so every holder of it sees the seed.
_DEFAULT_RNG = np.random.Generator(np.random.PCG64(0))


def _dt(dtype: Any, default: DType) -> DType:
    """`dtype`, where None means the call's default dtype (the array API's dtype=None)."""
    return default if dtype is None else dtypes.dtype(dtype)


def _fill(shape: Any, value: Any, dtype: DType, device: str | None) -> Tensor:
    return place(Tensor(graph.const(value, as_shape(shape), dtype)), device)


def zeros(shape: Any, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    return _fill(shape, 0, _dt(dtype, dtypes.DEFAULT_FLOAT), device)


def ones(shape: Any, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    return _fill(shape, 1, _dt(dtype, dtypes.DEFAULT_FLOAT), device)


def empty(shape: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    """The array API's `empty`: its values are unspecified; here they are zeros (a constant, no memory)."""
    return _fill(shape, 0, _dt(dtype, dtypes.DEFAULT_FLOAT), device)


def full(shape: Any, fill_value: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    """Every element `fill_value`; the dtype follows the value (bool, int32/int64, float32) unless given. A
    Python int outside an integer dtype's range raises OverflowError, as NumPy 2's `full` (not wrapped)."""
    typed = getattr(fill_value, "dtype", None)  # a 0-d tensor or array, a NumPy scalar: NumPy's full keeps its dtype
    python_value = typed is None
    if not python_value:  # (the standard allows array scalars as the value: cast, as NumPy's)
        fill_value = fill_value.item()
    if dtype is None:
        dt = dtypes.scalar_dtype(fill_value) if python_value else dtypes.dtype(typed)
    else:
        dt = dtypes.dtype(dtype)
    if python_value:
        check_int_fits(fill_value, dt)
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


def _host(arr: np.ndarray, dtype: DType, device: str | None, iota: bool = False) -> Tensor:
    """A host-built array as a leaf of `dtype` (exact: no device arithmetic involved); `iota` as `graph.leaf`."""
    with np.errstate(all="ignore"):
        arr = arr.astype(dtype.np_dtype, order="C")  # not ascontiguousarray: it makes 0-d arrays 1-d
    return Tensor(graph.leaf(arr, dtype, device=resolve_device(device), iota=iota))


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, device: str | None = None) -> Tensor:
    """NumPy's arange: [start, stop) by step, ceil((stop - start) / step) elements. Integer arguments give
    int32 (int64 when a value does not fit), any float gives float32. Built on the host (exact)."""
    if stop is None:
        start, stop = 0, start
    # 0-d tensors and arrays as their values (NumPy takes 0-d arrays)
    args = tuple(v.item() if isinstance(v, (Tensor, np.ndarray)) and v.ndim == 0 else v for v in (start, stop, step))
    start, stop, step = args
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
    # 0, 1, ..., n - 1 in an integer dtype that holds them: codegen computes them from the index (a gather's
    # one-hot compare then becomes one indexed load, codegen/render.py)
    iota = ints and start == 0 and step == 1 and dt.is_int and (vals.size == 0 or
                                                               int(np.iinfo(dt.np_dtype).max) >= vals.size - 1)
    return _host(vals, dt, device, iota)


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
    """Ones on the k-th diagonal. Built lazily from two small index vectors, not an n*m host array. A dtype
    given third, as API.md section 3 writes `zd.eye(n, m=None, dtype=zd.float32)`, is taken as the dtype (k is
    third in NumPy's and the standard's order: an int there is k)."""
    if not isinstance(k, (int, np.integer)) and dtype is dtypes.float32:
        k, dtype = 0, k
    n, m = as_shape((n, n if m is None else m))
    k = max(-n - 1, min(m + 1, operator.index(k)))  # a diagonal outside the matrix: all zeros, as any farther one
    rows = arange(n, dtype=dtypes.int64).reshape(n, 1) + k
    cols = arange(m, dtype=dtypes.int64).reshape(1, m)
    return place((rows == cols).astype(_dt(dtype, dtypes.DEFAULT_FLOAT)), device)


def manual_seed(seed: int) -> None:
    """Re-seed the generator that `rand`, `randn` and `uniform` use when called without `seed=`."""
    _DEFAULT_RNG.bit_generator.state = np.random.PCG64(seed).state


def _gen(seed: int | None) -> np.random.Generator:
    return _DEFAULT_RNG if seed is None else np.random.Generator(np.random.PCG64(seed))


def _float_dtype(dtype: Any) -> DType:
    dt = _dt(dtype, dtypes.DEFAULT_FLOAT)
    if not dt.is_float:
        raise DTypeError(f"random tensors need a float dtype, got {dt}")
    return dt


def rand(*shape: Any, seed: int | None = None, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    """Uniform on [0, 1). `rand(2, 3)` or `rand((2, 3))`."""
    dt = _float_dtype(dtype)
    return _host(_below(_gen(seed).random(shape_args(shape)).astype(dt.np_dtype), 1.0), dt, device)


def randn(*shape: Any, seed: int | None = None, dtype: Any = dtypes.float32, device: str | None = None) -> Tensor:
    """Standard normal samples. `randn(2, 3)` or `randn((2, 3))`."""
    dt = _float_dtype(dtype)
    return _host(_gen(seed).standard_normal(shape_args(shape)), dt, device)


def uniform(shape: Any, low: float = 0.0, high: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32,
            device: str | None = None) -> Tensor:
    """Uniform on [low, high)."""
    dt = _float_dtype(dtype)
    vals = _gen(seed).uniform(low, high, as_shape(shape)).astype(dt.np_dtype)
    return _host(_below(vals, high) if low < high else vals, dt, device)  # (low == high: all low, as NumPy)


def _below(vals: np.ndarray, high: float) -> np.ndarray:
    """`vals`, samples of [.., high) rounded to their dtype, kept below `high`: rounding to a narrower float
    (bfloat16, float16, even float32) can reach high, or pass a high that itself rounds up; such values
    become the dtype's largest value below high."""
    top = np.asarray(high, vals.dtype)
    if float(top) >= high:
        top = np.nextafter(top, vals.dtype.type(-np.inf))
    return np.minimum(vals, top)
