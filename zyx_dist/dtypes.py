"""Shared by the driver and the workers: the dtypes of API.md section 2 and their promotion rules.

A `DType` wraps a NumPy dtype (`np.dtype(zd.float32) == np.float32` holds through `.dtype` and the
`__array__`-free `np.dtype` protocol) and knows its C names for the renderers. Promotion of two tensors
follows NumPy 2 (`np.promote_types`); Python scalars are weak: they take the tensor's kind when it fits,
and a float scalar with an integer or bool tensor gives the default float (float32).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from .errors import DTypeError


@dataclass(frozen=True, eq=False)
class DType:
    """One element type. Instances are unique, so `is` comparison works (`zd.dtype(np.float32) is zd.float32`)."""

    name: str
    np_dtype: np.dtype
    cname: str  # C type used for memory (OpenCL spelling; bool is stored as one byte)
    # what every op asks of its operands' dtypes, read once from the NumPy dtype (asked on every op)
    itemsize: int = field(init=False)
    is_float: bool = field(init=False)
    is_half: bool = field(init=False)  # 16-bit floats: stored in 16 bits, computed in float32, rounded on store
    is_int: bool = field(init=False)
    is_unsigned: bool = field(init=False)
    is_bool: bool = field(init=False)

    def __post_init__(self) -> None:
        kind = self.np_dtype.kind
        flags = (("itemsize", self.np_dtype.itemsize),
                 ("is_float", kind == "f" or self.name == "bfloat16"),  # ml_dtypes' bfloat16 is of kind "V"
                 ("is_half", self.name in ("float16", "bfloat16")),
                 ("is_int", kind in "iu"), ("is_unsigned", kind == "u"), ("is_bool", kind == "b"))
        for name, value in flags:
            object.__setattr__(self, name, value)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype; also what `np.dtype(zd.float32)` reads."""
        return self.np_dtype

    def __repr__(self) -> str:
        return f"zd.{self.name}"

    __str__ = __repr__

    def __eq__(self, other: object) -> builtins.bool:
        if isinstance(other, DType):
            return self is other
        try:
            return self.np_dtype == np.dtype(other)  # type: ignore[arg-type]
        except (TypeError, ValueError):  # not a dtype at all (e.g. an arbitrary string)
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):  # pickles by name, so Ray round trips keep identity
        return (dtype, (self.name,))


bool_ = DType("bool", np.dtype(np.bool_), "uchar")
int8 = DType("int8", np.dtype(np.int8), "char")
int16 = DType("int16", np.dtype(np.int16), "short")
int32 = DType("int32", np.dtype(np.int32), "int")
int64 = DType("int64", np.dtype(np.int64), "long")
uint8 = DType("uint8", np.dtype(np.uint8), "uchar")
uint16 = DType("uint16", np.dtype(np.uint16), "ushort")
uint32 = DType("uint32", np.dtype(np.uint32), "uint")
uint64 = DType("uint64", np.dtype(np.uint64), "ulong")
float16 = DType("float16", np.dtype(np.float16), "half")
# stored as its 16 bits (OpenCL has no bfloat16 type): kernels load it by a shift into float32's top half
bfloat16 = DType("bfloat16", np.dtype(ml_dtypes.bfloat16), "ushort")
float32 = DType("float32", np.dtype(np.float32), "float")
float64 = DType("float64", np.dtype(np.float64), "double")

ALL: tuple[DType, ...] = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
                          float64)
_BY_NP = {d.np_dtype: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
DEFAULT_FLOAT = float32
DEFAULT_INT = int32


def dtype(x: object) -> DType:
    """The zyx_dist dtype for a DType, a NumPy dtype or type, or a name ("float32"). None is the default float
    dtype, as NumPy reads None as its own default float (API.md: `dtype=None` means the call's default)."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    if x is builtins.bool:
        return bool_
    if x is builtins.int:
        return DEFAULT_INT
    if x is builtins.float or x is None:
        return DEFAULT_FLOAT
    try:
        nd = np.dtype(x)  # type: ignore[call-overload]
    except TypeError as e:
        raise DTypeError(f"not a dtype: {x!r}") from e
    if nd not in _BY_NP:
        raise DTypeError(f"unsupported dtype {nd} (zyx_dist has {', '.join(_BY_NAME)})")
    return _BY_NP[nd]


def promote(a: DType, b: DType) -> DType:
    """NumPy 2 promotion of two tensor dtypes. bfloat16 promotes as float16 does (with int8/uint8/bool it
    stays, with int16/uint16 it becomes float32, with wider integers float64), and with float16 it gives
    float32, the narrowest type holding both (JAX's rules agree where they overlap)."""
    if a is bfloat16 or b is bfloat16:
        other = b if a is bfloat16 else a
        if other is bfloat16:
            return bfloat16
        if other is float16:
            return float32
        p = _BY_NP[np.promote_types(np.float16, other.np_dtype)]
        return bfloat16 if p is float16 else p
    return _BY_NP[np.promote_types(a.np_dtype, b.np_dtype)]


def scalar_dtype(value: object) -> DType:
    """The dtype a Python scalar gets on its own (`zd.tensor(1)`): bool, int32 (int64 if it does not fit), float32."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return bool_
    if isinstance(value, np.generic):
        return dtype(value.dtype)
    if isinstance(value, builtins.int):
        return int32 if -(2**31) <= value < 2**31 else int64
    if isinstance(value, builtins.float):
        return DEFAULT_FLOAT
    raise DTypeError(f"not a scalar: {type(value).__name__} {value!r}")


def weak_promote(t: DType, value: object) -> DType:
    """The result dtype of a tensor of dtype `t` combined with the Python scalar `value` (weak scalars)."""
    if isinstance(value, np.generic):
        return promote(t, dtype(value.dtype))
    if isinstance(value, builtins.bool):
        return t
    if isinstance(value, builtins.int):
        if t.is_bool:
            return DEFAULT_INT if -(2**31) <= value < 2**31 else int64
        return t
    if isinstance(value, builtins.float):
        return t if t.is_float else DEFAULT_FLOAT
    raise DTypeError(f"cannot combine a tensor with {type(value).__name__} {value!r}")
