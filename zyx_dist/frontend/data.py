"""Driver side: host data into the graph. Takes what `zd.tensor` / `zd.asarray` accept (NumPy arrays,
nested lists, Python scalars, Tensors) and gives a lazy Tensor over a `graph.leaf` holding a private C-ordered
copy, with the dtype the data infers (API.md sections 2-3) unless one is given; `device=` pins it. Shared by
the creation functions and every op that takes a non-Tensor operand (`common.as_tensor`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import context, dtypes
from ..dtypes import DType
from ..errors import DTypeError, ShapeError
from ..graph import ir as graph
from .interop import from_dlpack
from .tensor import Tensor


def place(t: Tensor, device: str | None) -> Tensor:
    """`t` moved to `device` (lazily), or `t` itself when no device is asked for."""
    return t if device is None else t.to(device)


def resolve_device(device: str | None) -> str | None:
    """A `device=` argument checked against the session's devices (None stays None)."""
    if device is None:
        return None
    return context.session().resolve_device(device)


def _infer(arr: np.ndarray, data: Any) -> DType:
    """The dtype of data given without one: NumPy arrays and scalars keep theirs, as do nested lists of nothing
    but such values and tensors (their dtypes promoted as NumPy does); Python data takes bool, int32 (int64 when
    a value does not fit) or float32."""
    if isinstance(data, (np.ndarray, np.generic)) or _all_typed(data):
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


def _all_typed(data: Any) -> bool:
    """Whether `data` is a list or tuple whose leaves (at any depth) all carry a dtype: NumPy scalars and arrays,
    tensors; no Python scalar."""
    if not isinstance(data, (list, tuple)):
        return False
    stack, seen = [data], False
    while stack:
        for v in stack.pop():
            if isinstance(v, (list, tuple)):
                stack.append(v)
            elif getattr(v, "dtype", None) is None:
                return False
            else:
                seen = True
    return seen


def int_range(dt: DType) -> tuple[int, int]:
    """(least, greatest) value of integer dtype `dt`."""
    info = np.iinfo(dt.np_dtype)
    return int(info.min), int(info.max)


def check_int_fits(value: Any, dt: DType) -> None:
    """OverflowError, as NumPy 2's, when `value` is a Python int outside integer dtype `dt`'s range (Python
    ints are not cast silently; NumPy integers and other dtypes are left to the cast)."""
    if dt.is_int and isinstance(value, int) and not isinstance(value, bool):
        lo, hi = int_range(dt)
        if not lo <= value <= hi:
            raise OverflowError(f"Python integer {value} out of bounds for {dt.name}")


def _overflow(data: Any, dt: DType, e: OverflowError) -> OverflowError:
    """The OverflowError of Python `data` that does not fit `dt`, naming the first int that does not (NumPy's
    own message does not for ints beyond int64: "Python int too large to convert to C long")."""
    for v in np.ravel(np.array(data, dtype=object)):
        try:
            check_int_fits(v, dt)
        except OverflowError as found:
            return found
    return OverflowError(f"cannot make a {dt.name} tensor of {type(data).__name__} data: {e}")


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
        return place(out, device)
    if copy is False:
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
    except OverflowError as e:  # a Python int outside the dtype asked for: NumPy 2's error
        raise _overflow(data, want, e) if want is not None else e from None
    except ValueError as e:  # ragged nesting
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
    return Tensor(graph.leaf(arr, dt, device=resolve_device(device)))


asarray = tensor
