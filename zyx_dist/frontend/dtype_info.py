"""Driver side: the array API standard's data type functions and the namespace's inspection object
(`isdtype`, `result_type`, `can_cast`, `finfo`, `iinfo`, `__array_namespace_info__`). They take dtypes
(zd dtypes, NumPy dtypes or names), tensors and Python scalars and give dtypes, bools or small info
records. Everything is read off the dtype table of `zyx_dist.dtypes` (`dtypes.ALL` and each DType's
kind properties), so a dtype added there (bfloat16) is covered without a change here. Pure: only
`__array_namespace_info__().devices()` asks the session, for its device names.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import context, dtypes
from ..dtypes import DType
from ..errors import DTypeError
from .tensor import Tensor

__all__ = ["__array_namespace_info__", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]

# The kinds of the standard, each a test on a DType (complex floating: zyx_dist has none).
_KINDS = {
    "bool": lambda d: d.is_bool,
    "signed integer": lambda d: d.is_int and not d.is_unsigned,
    "unsigned integer": lambda d: d.is_unsigned,
    "integral": lambda d: d.is_int,
    "real floating": lambda d: d.is_float,
    "complex floating": lambda d: False,
    "numeric": lambda d: d.is_int or d.is_float,
}


def _as_dtype(x: Any, what: str) -> DType:
    """A dtype given as a dtype, a tensor (its dtype) or anything `zd.dtype` takes."""
    if isinstance(x, Tensor):
        return x.dtype
    try:
        return dtypes.dtype(x)
    except DTypeError:
        raise DTypeError(f"{what}: {x!r} is not a zyx_dist dtype or tensor") from None


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether `dtype` is of `kind`: a dtype, a kind name ('bool', 'signed integer', 'unsigned integer',
    'integral', 'real floating', 'complex floating', 'numeric') or a tuple of those."""
    d = _as_dtype(dtype, "isdtype")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise ValueError(f"isdtype: unknown kind {k!r}; kinds are {', '.join(map(repr, _KINDS))}")
            if _KINDS[k](d):
                return True
        elif d is _as_dtype(k, "isdtype"):
            return True
    return False


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype the standard's (NumPy 2's) promotion gives for these tensors and dtypes; Python scalars
    are weak, as in operators (`result_type(x_int8, 1)` is int8)."""
    strong = [a for a in arrays_and_dtypes if not isinstance(a, (builtins.bool, int, float, complex))]
    weak = [a for a in arrays_and_dtypes if isinstance(a, (builtins.bool, int, float, complex))]
    if not strong:
        if not weak:
            raise ValueError("result_type needs at least one tensor or dtype")
        strong, weak = [dtypes.scalar_dtype(weak[0])], weak[1:]  # the first scalar sets the kind
    out = _as_dtype(strong[0], "result_type")
    for a in strong[1:]:
        out = dtypes.promote(out, _as_dtype(a, "result_type"))
    for w in weak:
        out = dtypes.weak_promote(out, w)
    return out


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether `from_` (a dtype or tensor) promotes to `to` without loss by the promotion rules: the
    same kind and no narrower, or bool to anything (NumPy's "safe" casting within the table)."""
    a, b = _as_dtype(from_, "can_cast"), _as_dtype(to, "can_cast")
    if a is b:
        return True
    try:
        return dtypes.promote(a, b) is b
    except (KeyError, TypeError, DTypeError):  # a pair outside the table (a new dtype NumPy cannot promote)
        return False


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a float dtype, as Python floats."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: DType


def _np_finfo(d: DType) -> Any:
    try:
        return np.finfo(d.np_dtype)
    except (ValueError, TypeError):  # an extension float (bfloat16) knows its own limits
        import ml_dtypes

        return ml_dtypes.finfo(d.np_dtype)


def finfo(type: Any, /) -> finfo_object:
    """Limits of a float dtype (or of a float tensor's dtype)."""
    d = _as_dtype(type, "finfo")
    if not d.is_float:
        raise DTypeError(f"finfo needs a float dtype, got {d} (use iinfo for integers)")
    f = _np_finfo(d)
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), d)


def iinfo(type: Any, /) -> iinfo_object:
    """Limits of an integer dtype (or of an integer tensor's dtype)."""
    d = _as_dtype(type, "iinfo")
    if not d.is_int:
        raise DTypeError(f"iinfo needs an integer dtype, got {d} (use finfo for floats)")
    i = np.iinfo(d.np_dtype)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), d)


class Info:
    """What `zd.__array_namespace_info__()` gives: the namespace's capabilities, devices and dtypes."""

    def capabilities(self) -> dict:
        # a boolean mask as an index, nonzero and unique_* realize their input (their shapes depend on it)
        return {"boolean indexing": True, "data-dependent shapes": True}

    def default_device(self) -> str:
        return context.session().default_device

    def devices(self) -> list[str]:
        return list(context.session().device_names)

    def default_dtypes(self, *, device: Any = None) -> dict:
        """API.md section 2: float32 and int32 are the defaults; indices (argmax, argsort, nonzero,
        searchsorted) are int64."""
        return {"real floating": dtypes.DEFAULT_FLOAT, "complex floating": None, "integral": dtypes.DEFAULT_INT,
                "indexing": dtypes.int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict:
        """name -> dtype of the standard's dtypes of `kind` (None: all of them). Extension floats
        (float16, bfloat16) are zyx_dist dtypes too, but not the standard's, so they are not listed."""
        table = [d for d in dtypes.ALL if not d.is_float or d.name in _STANDARD_FLOATS]
        return {d.name: d for d in table if kind is None or isdtype(d, kind)}


# the float dtypes the standard names; others (float16, bfloat16) are extensions, still listed by kind
_STANDARD_FLOATS = frozenset(("float32", "float64"))


def __array_namespace_info__() -> Info:
    return Info()
