"""Driver side: the elementwise ops of API.md section 5 (unary, binary, `where`, `clip`, `astype`).
They take Tensors, Python scalars (weak), NumPy arrays or lists, broadcast and promote them at the call
(`ops_common.operands`) and give a Tensor over one `graph.unary/binary/where` node, plus the casts and
constants those need. Float-only math on integer or bool tensors computes in float32 (the default float).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import DTypeError
from ..graph import autograd
from ..graph import ir as graph
from ..graph.ir import BinaryOp, UnaryOp
from . import common
from .common import as_tensor, operands, to_node
from .data import check_int_fits, int_range
from .tensor import Tensor

__all__ = [
    "abs",
    "add",
    "astype",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "ceil",
    "clip",
    "cos",
    "divide",
    "equal",
    "exp",
    "exp2",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "invert",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "positive",
    "pow",
    "reciprocal",
    "relu",
    "remainder",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "where",
]


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: str | None = None) -> Tensor:
    """`x` converted to `dtype` (a zd dtype, NumPy dtype or type, or a name), NumPy cast semantics.
    Tensors are immutable, so `copy=False` and `copy=True` give the same values; with `copy=False` and the
    dtype already x's, x itself is returned (the standard: "the input array must be returned"); `device=`
    moves the result as `x.to(device)`."""
    t = as_tensor(x)
    out = Tensor(graph.cast(t.node, dtypes.dtype(dtype)))
    if out.node is t.node:
        if not copy and device is None:
            return t
        out = Tensor(t.node)  # a new handle: "a copy" of an immutable value
    return out if device is None else out.to(device)


# ---- unary ---------------------------------------------------------------------------------------------

def as_float(x: Any) -> Tensor:
    """`x` as a float tensor: integer and bool tensors become float32."""
    x = as_tensor(x)
    return x if x.dtype.is_float else astype(x, dtypes.DEFAULT_FLOAT)


def _unary(op: UnaryOp, x: Tensor) -> Tensor:
    return Tensor(graph.unary(op, x.node))


def _float_unary(op: UnaryOp):
    """The public function of a float-valued elementwise op (positional-only, as the array API's)."""
    def f(x: Any, /) -> Tensor:
        return _unary(op, as_float(x))

    f.__name__ = f.__qualname__ = op.value
    f.__doc__ = f"Elementwise {op.value}; integer and bool tensors compute in float32."
    return f


exp = _float_unary(UnaryOp.EXP)
exp2 = _float_unary(UnaryOp.EXP2)
log = _float_unary(UnaryOp.LOG)
log2 = _float_unary(UnaryOp.LOG2)
sqrt = _float_unary(UnaryOp.SQRT)
rsqrt = _float_unary(UnaryOp.RSQRT)
reciprocal = _float_unary(UnaryOp.RECIP)
sin = _float_unary(UnaryOp.SIN)
cos = _float_unary(UnaryOp.COS)
tan = _float_unary(UnaryOp.TAN)
tanh = _float_unary(UnaryOp.TANH)


def _rounding(op: UnaryOp):
    def f(x: Any) -> Tensor:
        x = as_tensor(x)
        return _unary(op, x) if x.dtype.is_float else x  # integers are already whole

    f.__name__ = f.__qualname__ = op.value
    f.__doc__ = f"Elementwise {op.value} (round: half to even); integer tensors are returned unchanged."
    return f


floor = _rounding(UnaryOp.FLOOR)
ceil = _rounding(UnaryOp.CEIL)
_round_even = _rounding(UnaryOp.ROUND)


def round(x: Any, /, *, decimals: int = 0) -> Tensor:
    """Elementwise round, half to even (the array API's round). `decimals` as NumPy's: a float is scaled by
    10**decimals, rounded and scaled back in its own dtype (so round(1.005, 2) is 1.0 in float32, as NumPy
    gives); an integer tensor is returned unchanged for decimals >= 0 and rounded to a multiple of 10**-decimals
    (half to even, exactly in integers) for decimals < 0."""
    x = as_tensor(x)
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, (builtins.bool, np.bool_)):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    decimals = int(decimals)
    if x.dtype.is_float:
        if decimals == 0:
            return _round_even(x)
        if decimals > 0:
            return _round_even(x * float(10 ** decimals)) / float(10 ** decimals)
        return _round_even(x / float(10 ** -decimals)) * float(10 ** -decimals)
    if decimals >= 0:
        return x
    if x.dtype.is_bool:
        raise DTypeError("round: a bool tensor cannot be rounded to decimals < 0")
    step = 10 ** -decimals
    if step > int_range(x.dtype)[1]:  # every value is nearer 0 than half a step
        return x * 0
    q = floor_divide(x, step)
    r = x - q * step  # in [0, step): compared with step - r, which cannot overflow where 2 * r could
    up = logical_or(greater(r, step - r), logical_and(equal(r, step - r), equal(remainder(q, 2), 1)))
    return (q + astype(up, x.dtype)) * step


def _float_test(op: UnaryOp):
    def f(x: Any) -> Tensor:
        x = as_tensor(x)
        if x.dtype.is_float:
            return _unary(op, x)
        return Tensor(graph.const(False, x.shape, dtypes.bool_))  # integers are never NaN or infinite

    f.__name__ = f.__qualname__ = op.value
    f.__doc__ = f"Elementwise {op.value} (a bool tensor; all False for integer tensors)."
    return f


isnan = _float_test(UnaryOp.ISNAN)
isinf = _float_test(UnaryOp.ISINF)


def abs(x: Any) -> Tensor:
    x = as_tensor(x)
    return x if x.dtype.is_bool or x.dtype.is_unsigned else _unary(UnaryOp.ABS, x)


def negative(x: Any) -> Tensor:
    return _unary(UnaryOp.NEG, as_tensor(x))


def positive(x: Any) -> Tensor:
    return as_tensor(x)


def square(x: Any) -> Tensor:
    return multiply(x, x)


def sigmoid(x: Any) -> Tensor:
    """1 / (1 + exp(-x)), in float; its gradient p * (1 - p) is read from the result (graph/autograd.py
    `composite`), with 1 - p as sigmoid(-x), finite where exp(-x) overflows."""
    x = as_float(x)
    return Tensor(autograd.sigmoid(x.node))


def relu(x: Any) -> Tensor:
    return maximum(x, 0)


def sign(x: Any) -> Tensor:
    """-1, 0 or 1 by the sign of x; NaN stays NaN (as NumPy)."""
    x = as_tensor(x)
    if x.dtype.is_bool:
        return x
    s = subtract(astype(greater(x, 0), x.dtype), astype(less(x, 0), x.dtype))
    return where(isnan(x), x, s) if x.dtype.is_float else s


def _bool(x: Any) -> Tensor:
    """x != 0 as bool (NaN counts as True, as NumPy's truth value)."""
    x = as_tensor(x)
    return x if x.dtype.is_bool else not_equal(x, 0)


def logical_not(x: Any) -> Tensor:
    return _unary(UnaryOp.NOT, _bool(x))


def invert(x: Any) -> Tensor:
    """`~x`: logical not on bool, bitwise not on integers; floats raise DTypeError."""
    return _unary(UnaryOp.NOT, as_tensor(x))


# ---- binary --------------------------------------------------------------------------------------------

# comparisons of an integer tensor t with a Python int c its dtype cannot hold: (result where c is above the
# dtype's range, where below) of `t op c`; NumPy 2 compares with the int's true value. `c op t` is `t op' c`.
_BEYOND = {BinaryOp.LT: (True, False), BinaryOp.LE: (True, False), BinaryOp.GT: (False, True),
           BinaryOp.GE: (False, True), BinaryOp.EQ: (False, False), BinaryOp.NE: (True, True)}
_MIRRORED = {BinaryOp.LT: BinaryOp.GT, BinaryOp.LE: BinaryOp.GE, BinaryOp.GT: BinaryOp.LT, BinaryOp.GE: BinaryOp.LE}


def _int_beyond(op: BinaryOp, a: Any, b: Any) -> Tensor | None:
    """An integer tensor with a Python int outside its dtype's range (weak, the int would take the tensor's
    dtype and wrap): a comparison's result, which is the same everywhere; None where this is not the case.
    Any other op raises OverflowError, as NumPy 2 does ("Python integer 300 out of bounds for uint8")."""
    t, c, mirrored = (a, b, False) if b.__class__ is int else (b, a, True)
    if t.__class__ is not Tensor or not t.dtype.is_int:
        return None
    lo, hi = int_range(t.dtype)
    if lo <= c <= hi:
        return None
    rule = _BEYOND.get(_MIRRORED.get(op, op) if mirrored else op)
    if rule is None:
        check_int_fits(c, t.dtype)  # (raises)
    return Tensor(graph.const(rule[0] if c > hi else rule[1], t.shape, dtypes.bool_))


def _binary(op: BinaryOp, a: Any, b: Any, dtype: DType | Callable[[DType], DType] | None = None) -> Tensor:
    # (a bool's class is bool); an op computed in another dtype (true division's float) takes any int, as NumPy's
    if dtype is None and (a.__class__ is int or b.__class__ is int):
        beyond = _int_beyond(op, a, b)
        if beyond is not None:
            return beyond
    x, y = operands(a, b, dtype=dtype)
    if x.dtype.is_bool:  # NumPy: + is or, * is and, - is an error, //, % and ** compute in int8
        if op is BinaryOp.SUB:
            raise DTypeError("subtract of bool tensors is not supported (use logical_xor or ^)")
        if op in (BinaryOp.FLOORDIV, BinaryOp.MOD, BinaryOp.POW):
            x, y = operands(a, b, dtype=dtypes.int8)
        else:
            op = {BinaryOp.ADD: BinaryOp.OR, BinaryOp.MUL: BinaryOp.AND}.get(op, op)
    return Tensor(graph.binary(op, x, y))


def _to_float(d: DType) -> DType:
    return d if d.is_float else dtypes.DEFAULT_FLOAT


# The usual cases of `_binary` (two tensors of one dtype, a float tensor and a Python number) in C (graph/_node.c, where
# it is built and ZYX_DIST_C_NODES is not 0); it hands every other case to the function above, the reference.
python_binary = _binary
if graph.c_nodes_enabled():
    graph._c_node.configure_frontend(Tensor, common._SCALAR_CONSTS, common.scalar_const, _to_float, python_binary)
    _binary = graph._c_node.tensor_binary  # (the C form of the function above)


def add(a: Any, b: Any) -> Tensor:
    return _binary(BinaryOp.ADD, a, b)


def subtract(a: Any, b: Any) -> Tensor:
    return _binary(BinaryOp.SUB, a, b)


def multiply(a: Any, b: Any) -> Tensor:
    return _binary(BinaryOp.MUL, a, b)


def divide(a: Any, b: Any) -> Tensor:
    """True division: in the promoted dtype if it is a float, else in float32."""
    return _binary(BinaryOp.DIV, a, b, _to_float)


def floor_divide(a: Any, b: Any) -> Tensor:
    """floor(a / b) as NumPy (integer division by zero gives 0)."""
    return _binary(BinaryOp.FLOORDIV, a, b)


def remainder(a: Any, b: Any) -> Tensor:
    """a % b with the sign of b, as NumPy."""
    return _binary(BinaryOp.MOD, a, b)


class NegativePowerError(DTypeError, ValueError):
    """An integer tensor to a negative integer constant: a DTypeError, and a ValueError as NumPy's is."""


def pow(a: Any, b: Any) -> Tensor:
    """a ** b. An integer tensor to a negative integer constant raises NegativePowerError (NumPy raises too)."""
    if isinstance(b, int) and not isinstance(b, builtins.bool) and b < 0:
        base = as_tensor(a)
        if not base.dtype.is_float:
            raise NegativePowerError(f"integers to negative integer powers are not allowed (dtype {base.dtype}, "
                                     f"exponent {b})")
    return _binary(BinaryOp.POW, a, b)


def maximum(a: Any, b: Any) -> Tensor:
    """Elementwise maximum; NaN propagates (as NumPy)."""
    return _binary(BinaryOp.MAX, a, b)


def minimum(a: Any, b: Any) -> Tensor:
    return _binary(BinaryOp.MIN, a, b)


# A signed integer s against an unsigned u whose common dtype is a float (uint64 with any signed dtype): NumPy 2
# compares the exact values, where float64 would round (2**53 + 1 == 2**53). With neg = s < 0, `s op u` is
# (neg-result) where s < 0, else `uint64(s) op u` ((s op u) for EQ is ~neg & (uint64(s) == u), for LT neg | ...).
_SIGNED_VS_UNSIGNED = {BinaryOp.EQ: False, BinaryOp.NE: True, BinaryOp.LT: True, BinaryOp.LE: True,
                       BinaryOp.GT: False, BinaryOp.GE: False}


def _exact_mixed_int(op: BinaryOp, a: Any, b: Any) -> Tensor | None:
    """`a op b` for a comparison of a signed and an unsigned integer operand (tensors or arrays) whose promoted
    dtype is a float, computed exactly; None for any other operands."""
    a, b = as_tensor(a), as_tensor(b)
    da, db = a.dtype, b.dtype
    if not (da.is_int and db.is_int and da.is_unsigned != db.is_unsigned and dtypes.promote(da, db).is_float):
        return None
    if da.is_unsigned:  # u op s is s op' u
        a, b, op = b, a, _MIRRORED.get(op, op)
    neg = less(a, 0)
    rest = _binary(op, astype(a, dtypes.uint64), astype(b, dtypes.uint64))
    return logical_or(neg, rest) if _SIGNED_VS_UNSIGNED[op] else logical_and(logical_not(neg), rest)


_ARRAYS = (Tensor, np.ndarray)


def _compare(op: BinaryOp, a: Any, b: Any) -> Tensor:
    exact = _exact_mixed_int(op, a, b) if a.__class__ in _ARRAYS and b.__class__ in _ARRAYS else None
    return _binary(op, a, b) if exact is None else exact


def equal(a: Any, b: Any) -> Tensor:
    return _compare(BinaryOp.EQ, a, b)


def not_equal(a: Any, b: Any) -> Tensor:
    return _compare(BinaryOp.NE, a, b)


def less(a: Any, b: Any) -> Tensor:
    return _compare(BinaryOp.LT, a, b)


def less_equal(a: Any, b: Any) -> Tensor:
    return _compare(BinaryOp.LE, a, b)


def greater(a: Any, b: Any) -> Tensor:
    return _compare(BinaryOp.GT, a, b)


def greater_equal(a: Any, b: Any) -> Tensor:
    return _compare(BinaryOp.GE, a, b)


def logical_and(a: Any, b: Any) -> Tensor:
    return _binary(BinaryOp.AND, _bool(a), _bool(b))


def logical_or(a: Any, b: Any) -> Tensor:
    return _binary(BinaryOp.OR, _bool(a), _bool(b))


def logical_xor(a: Any, b: Any) -> Tensor:
    return _binary(BinaryOp.XOR, _bool(a), _bool(b))


def _bitwise(op: BinaryOp, a: Any, b: Any) -> Tensor:
    for v in (a, b):  # name the float operand itself, not the dtype both would promote to
        dt = v.dtype if isinstance(v, Tensor) else getattr(v, "dtype", None)
        if (dt is not None and np.dtype(dt).kind == "f") or isinstance(v, float):
            raise DTypeError(f"bitwise {op.value} needs bool or integer operands, got {getattr(dt, 'name', 'float')}")
    return _binary(op, a, b)


def bitwise_and(a: Any, b: Any) -> Tensor:
    """& on bool or integer tensors (floats raise DTypeError)."""
    return _bitwise(BinaryOp.AND, a, b)


def bitwise_or(a: Any, b: Any) -> Tensor:
    return _bitwise(BinaryOp.OR, a, b)


def bitwise_xor(a: Any, b: Any) -> Tensor:
    return _bitwise(BinaryOp.XOR, a, b)


# ---- ternary -------------------------------------------------------------------------------------------

def where(cond: Any, a: Any, b: Any) -> Tensor:
    """a where cond is true, else b; cond is taken as bool, all three broadcast, a and b promote
    (scalars weak). The branch not taken never leaks (no NaN from it)."""
    c = _bool(cond)
    x, y = operands(a, b, extra=c.shape)
    return Tensor(graph.where(to_node(c.node, x.shape, dtypes.bool_), x, y))


def clip(x: Any, /, min: Any = None, max: Any = None, *, lo: Any = None, hi: Any = None) -> Tensor:
    """min(max(x, min), max), the standard's clip: the result keeps x's dtype and shape (bounds
    broadcast to it), NaN in x stays NaN, and where min > max the result is max. API.md's
    `zd.clip(x, lo, hi)` is the same function (`lo=`/`hi=` are accepted as keywords)."""
    x = as_tensor(x)
    lo = min if lo is None else lo
    hi = max if hi is None else hi
    out = x
    for bound, f in ((lo, maximum), (hi, minimum)):
        if bound is None:
            continue
        if isinstance(bound, builtins.float) and not x.dtype.is_float:
            if math.isnan(bound):
                continue
            # a float bound on an integer or bool tensor: the integers it admits (floor of a max, ceil of a min)
            bound = math.ceil(bound) if f is maximum else math.floor(bound)
        if isinstance(bound, int) and not isinstance(bound, builtins.bool) and x.dtype.is_int:
            least, greatest = int_range(x.dtype)  # (an int the dtype cannot hold clips to its end)
            bound = builtins.min(builtins.max(bound, least), greatest)
        out = f(out, bound)
    return out if out.dtype is x.dtype else astype(out, x.dtype)
