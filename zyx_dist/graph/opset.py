"""Driver side, pure: the opset of the lazy graph (graph/ir.py), the zyx opset plus a ternary `WHERE`: the ops,
the unary, binary and reduce operators, and the sets of them that the constructors and passes test against.
Takes nothing; gives names.
"""

from __future__ import annotations

import enum


class Op(enum.Enum):
    __hash__ = object.__hash__  # members are singletons: Enum's hashes the name in Python

    LEAF = "leaf"
    FLIP = "flip"  # reverse the given axes: index arithmetic like the others (zyx had no flip)
    CONST = "const"
    EXPAND = "expand"
    PERMUTE = "permute"
    RESHAPE = "reshape"
    PAD = "pad"
    REDUCE = "reduce"
    CAST = "cast"
    UNARY = "unary"
    BINARY = "binary"
    WHERE = "where"


class UnaryOp(enum.Enum):
    __hash__ = object.__hash__  # members are singletons: Enum's hashes the name in Python

    NEG = "neg"
    NOT = "not"  # logical not on bool, bitwise not on integers
    ABS = "abs"
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    RECIP = "recip"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    TANH = "tanh"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"  # half to even, as NumPy
    ISNAN = "isnan"
    ISINF = "isinf"
    # the array API standard's transcendental functions, each one C math function on both dialects
    TRUNC = "trunc"
    LOG1P = "log1p"
    LOG10 = "log10"
    EXPM1 = "expm1"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"


class BinaryOp(enum.Enum):
    __hash__ = object.__hash__  # members are singletons: Enum's hashes the name in Python

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"  # true division (floats only)
    FLOORDIV = "floordiv"
    MOD = "mod"  # Python/NumPy remainder: the sign of the divisor
    POW = "pow"
    MAX = "max"  # NaN-propagating, as NumPy's maximum
    MIN = "min"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"  # logical on bool, bitwise on integers
    OR = "or"
    XOR = "xor"
    ATAN2 = "atan2"  # floats only, as the C functions of the same names
    HYPOT = "hypot"
    COPYSIGN = "copysign"
    NEXTAFTER = "nextafter"
    SHL = "shl"  # integers only (bitwise); a count < 0 or >= the bit width gives 0 (SHR: the sign fill), as NumPy
    SHR = "shr"


class ReduceOp(enum.Enum):
    __hash__ = object.__hash__  # members are singletons: Enum's hashes the name in Python

    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"


MOVEMENT_OPS = (Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.PAD, Op.FLIP)  # views: index arithmetic, no values computed
FLOAT_ONLY_UNARY = {UnaryOp.EXP, UnaryOp.EXP2, UnaryOp.LOG, UnaryOp.LOG2, UnaryOp.SQRT, UnaryOp.RSQRT,
                    UnaryOp.RECIP, UnaryOp.SIN, UnaryOp.COS, UnaryOp.TAN, UnaryOp.TANH, UnaryOp.TRUNC,
                    UnaryOp.LOG1P, UnaryOp.LOG10, UnaryOp.EXPM1, UnaryOp.ASIN, UnaryOp.ACOS, UnaryOp.ATAN, UnaryOp.SINH,
                    UnaryOp.COSH, UnaryOp.ASINH, UnaryOp.ACOSH, UnaryOp.ATANH}
BOOL_UNARY = {UnaryOp.ISNAN, UnaryOp.ISINF}
COMPARISONS = {BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE, BinaryOp.GT, BinaryOp.GE}
BITWISE = {BinaryOp.AND, BinaryOp.OR, BinaryOp.XOR, BinaryOp.SHL, BinaryOp.SHR}
# float math that the front end only builds on floats; on integers (graph level only) it computes in float
FLOAT_MATH_BINARY = {BinaryOp.ATAN2, BinaryOp.HYPOT, BinaryOp.COPYSIGN, BinaryOp.NEXTAFTER}
INT_ONLY_BINARY = {BinaryOp.SHL, BinaryOp.SHR}
