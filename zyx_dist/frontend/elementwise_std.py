"""Driver side: the array API standard's elementwise functions beyond API.md section 5 (inverse and
hyperbolic trigonometry, `log1p`, `expm1`, `log10`, `trunc`, `atan2`, `hypot`, `copysign`,
`nextafter`, `logaddexp`, `signbit`, `isfinite`, the shifts, `bitwise_invert`, `real`/`imag`/`conj`
of real tensors) and its `clip`. They take tensors, Python scalars (weak) or arrays, broadcast and
promote like the ops of `elementwise`, and give Tensors over one unary/binary node each (a C math
function in the kernel) or a short composition of them. Float-only math on integer or bool tensors
computes in float32, as in `elementwise`.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..errors import DTypeError
from ..graph import ir as graph
from ..graph.ir import BinaryOp, UnaryOp
from . import elementwise as ew
from .common import as_tensor, operands
from .tensor import Tensor

__all__ = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "conj",
    "copysign",
    "cosh",
    "expm1",
    "hypot",
    "imag",
    "isfinite",
    "log1p",
    "log10",
    "logaddexp",
    "nextafter",
    "real",
    "signbit",
    "sinh",
    "trunc",
]


_float_unary = ew._float_unary

asin = _float_unary(UnaryOp.ASIN)
acos = _float_unary(UnaryOp.ACOS)
atan = _float_unary(UnaryOp.ATAN)
sinh = _float_unary(UnaryOp.SINH)
cosh = _float_unary(UnaryOp.COSH)
asinh = _float_unary(UnaryOp.ASINH)
acosh = _float_unary(UnaryOp.ACOSH)
atanh = _float_unary(UnaryOp.ATANH)
log1p = _float_unary(UnaryOp.LOG1P)
expm1 = _float_unary(UnaryOp.EXPM1)
log10 = _float_unary(UnaryOp.LOG10)


def trunc(x: Any, /) -> Tensor:
    """Round toward zero; integer tensors are returned unchanged."""
    x = as_tensor(x)
    return Tensor(graph.unary(UnaryOp.TRUNC, x.node)) if x.dtype.is_float else x


def _float_binary(op: BinaryOp):
    def f(x1: Any, x2: Any, /) -> Tensor:
        a, b = operands(x1, x2, dtype=lambda d: d if d.is_float else dtypes.DEFAULT_FLOAT)
        return Tensor(graph.binary(op, a, b))

    f.__name__ = f.__qualname__ = op.value
    f.__doc__ = f"Elementwise {op.value} (the C function) in the promoted float dtype (float32 for integers)."
    return f


atan2 = _float_binary(BinaryOp.ATAN2)
hypot = _float_binary(BinaryOp.HYPOT)
copysign = _float_binary(BinaryOp.COPYSIGN)
nextafter = _float_binary(BinaryOp.NEXTAFTER)


def logaddexp(x1: Any, x2: Any, /) -> Tensor:
    """log(exp(x1) + exp(x2)) without overflow: max + log1p(exp(-|x1 - x2|)); equal infinities give
    themselves (inf - inf would be NaN). The max and -|d| are both taken by one `where` on d >= 0 rather than
    by maximum and abs: the same values, but at a tie the gradient is then (1/2, 1/2) (x1's branch: 1 - 1/2 and
    1/2), where maximum's first-operand rule and abs's zero slope at 0 would give (1, 0)."""
    a, b = operands(x1, x2, dtype=lambda d: d if d.is_float else dtypes.DEFAULT_FLOAT)
    x, y = Tensor(a), Tensor(b)
    d = x - y
    ahead = ew.greater_equal(d, 0)
    big = ew.where(ahead, x, y)
    out = big + log1p(ew.exp(ew.where(ahead, ew.negative(d), d)))
    return ew.where(ew.equal(x, y) & ew.isinf(x), x, out)


def signbit(x: Any, /) -> Tensor:
    """Whether the sign bit is set: true for -0.0 and negative NaNs too (copysign reads the bit)."""
    x = as_tensor(x)
    if x.dtype.is_bool or x.dtype.is_unsigned:
        return Tensor(graph.const(False, x.shape, dtypes.bool_))
    if not x.dtype.is_float:
        return ew.less(x, 0)
    one = Tensor(graph.const(1, x.shape, x.dtype))
    return ew.less(copysign(one, x), 0)


def isfinite(x: Any, /) -> Tensor:
    """Neither NaN nor infinite (every integer is finite)."""
    x = as_tensor(x)
    if not x.dtype.is_float:
        return Tensor(graph.const(True, x.shape, dtypes.bool_))
    return ew.logical_not(ew.isnan(x) | ew.isinf(x))


def _shift(op: BinaryOp, x1: Any, x2: Any) -> Tensor:
    a, b = operands(x1, x2)
    if not a.dtype.is_int:
        raise DTypeError(f"bitwise shifts need integer operands, got {a.dtype}")
    return Tensor(graph.binary(op, a, b))


def bitwise_left_shift(x1: Any, x2: Any, /) -> Tensor:
    """x1 << x2 on integers (promoted); a count of the bit width or more gives 0, as NumPy."""
    return _shift(BinaryOp.SHL, x1, x2)


def bitwise_right_shift(x1: Any, x2: Any, /) -> Tensor:
    """x1 >> x2 on integers (arithmetic for signed ones); a count of the bit width or more gives the sign fill."""
    return _shift(BinaryOp.SHR, x1, x2)


def bitwise_invert(x: Any, /) -> Tensor:
    """~x: logical not on bool, bitwise not on integers."""
    return ew.invert(x)


def real(x: Any, /) -> Tensor:
    """The real part: a real tensor itself (zyx_dist has no complex dtypes)."""
    return as_tensor(x)


def conj(x: Any, /) -> Tensor:
    return as_tensor(x)


def imag(x: Any, /) -> Tensor:
    """The imaginary part of a real tensor: zeros of its dtype."""
    x = as_tensor(x)
    return Tensor(graph.const(0, x.shape, x.dtype))
