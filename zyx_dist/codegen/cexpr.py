"""Driver side: the C spellings and index helpers that the renderer and the GEMM template share. Takes
nodes, dtypes and symbolic indices; gives C types, literals, unary- and binary-op expressions and a
kernel's preamble in a dialect, the index a movement op maps to, row-major strides and flat indices, and
small walks over a kernel's nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..dtypes import DType, bfloat16, bool_, float16, float64, uint32, uint64
from ..fuse.kernelize import Kernel
from ..graph.ir import BinaryOp, Node, Op, UnaryOp
from . import symbolic as sym
from .dialects import OPENCL, Dialect


def ctype(dt: DType, dialect: Dialect = OPENCL) -> str:
    """C type used for computing in registers (half types are computed in float: PoCL lacks cl_khr_fp16,
    and OpenCL has no bfloat16)."""
    return "float" if dt.is_half else "bool" if dt is bool_ else dialect.type(dt.cname)


def literal(value, dt: DType, dialect: Dialect = OPENCL) -> str:
    """`value` as a C literal of `dt`; a negative one in parentheses, so that no operator written before it (a
    negation, a cast, a subtraction) forms `--` or reads as something else."""
    s = _literal(value, dt, dialect)
    return f"({s})" if s[0] == "-" else s


def _literal(value, dt: DType, dialect: Dialect) -> str:
    if dt is bool_:
        return "true" if value else "false"
    if dt.is_float:
        v = float(value)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        return repr(v) + ("" if dt is float64 else "f")
    v = int(value)
    if dt.is_unsigned:
        return f"{v}u" if dt.itemsize <= 4 else f"{v}{dialect.int_suffix[(8, True)]}"
    if dt.itemsize == 8:
        sfx = dialect.int_suffix[(8, False)]
        return f"{v}{sfx}" if v != -(2**63) else f"(-9223372036854775807{sfx}-1{sfx})"
    if dt.itemsize == 4:
        return str(v) if v != -(2**31) else "(-2147483647-1)"
    return f"(({dialect.type(dt.cname)}){v})"


def limit(dt: DType, low: bool, dialect: Dialect = OPENCL) -> str:
    if dt is bool_:
        return "false" if low else "true"
    if dt.is_float:
        return "(-INFINITY)" if low else "INFINITY"
    info = np.iinfo(dt.np_dtype)
    return literal(info.min if low else info.max, dt, dialect)


def all_nodes(k: Kernel) -> list[Node]:
    inputs = {n.id for n in k.inputs}
    out, seen, stack = [], set(), list(k.outputs)
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in inputs:
            continue
        seen.add(n.id)
        out.append(n)
        stack.extend(n.srcs)
    return out


def strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc if d != 1 else 0)
        acc *= d
    return out[::-1]


def move_index(n: Node, idx: tuple) -> tuple:
    """The index into the source of a movement node, given the index into its output."""
    src = n.srcs[0]
    if n.op is Op.PERMUTE:
        inner = [sym.ZERO] * len(idx)
        for i, a in enumerate(n.arg):
            inner[a] = idx[i]
        return tuple(inner)
    if n.op is Op.EXPAND:
        return tuple(sym.ZERO if d == 1 else e for e, d in zip(idx, src.shape))
    if n.op is Op.FLIP:
        return tuple(sym.add(sym.mul(e, -1), d - 1) if a in n.arg else e
                     for a, (e, d) in enumerate(zip(idx, src.shape)))
    # reshape: flatten with the output strides, split with the source's
    flat = sym.add(*[sym.mul(e, s) for e, s in zip(idx, strides(n.shape)) if s])
    return tuple(sym.ZERO if d == 1 else sym.mod(sym.div(flat, s), d) for d, s in zip(src.shape, strides(src.shape)))


def flat_index(shape: tuple[int, ...], flat: sym.Expr) -> tuple:
    """The index into `shape` of the element at row-major position `flat`."""
    return tuple(sym.ZERO if d == 1 else sym.mod(sym.div(flat, s), d) for d, s in zip(shape, strides(shape)))


def render_conds(conds) -> str:
    parts = sorted(sym.render_cond(c) for c in conds)
    return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"


FLOAT_FN = {UnaryOp.EXP: "exp", UnaryOp.EXP2: "exp2", UnaryOp.LOG: "log", UnaryOp.LOG2: "log2",
             UnaryOp.SQRT: "sqrt", UnaryOp.RSQRT: "rsqrt", UnaryOp.SIN: "sin", UnaryOp.COS: "cos",
             UnaryOp.TAN: "tan", UnaryOp.TANH: "tanh", UnaryOp.FLOOR: "floor", UnaryOp.CEIL: "ceil",
             UnaryOp.ROUND: "rint", UnaryOp.TRUNC: "trunc", UnaryOp.LOG1P: "log1p", UnaryOp.LOG10: "log10", UnaryOp.EXPM1: "expm1",
             UnaryOp.ASIN: "asin", UnaryOp.ACOS: "acos", UnaryOp.ATAN: "atan", UnaryOp.SINH: "sinh",
             UnaryOp.COSH: "cosh", UnaryOp.ASINH: "asinh", UnaryOp.ACOSH: "acosh", UnaryOp.ATANH: "atanh"}
# binary float ops that are one C math function (the same name in OpenCL C and CUDA)
FLOAT_BINARY_FN = {BinaryOp.ATAN2: "atan2", BinaryOp.HYPOT: "hypot", BinaryOp.COPYSIGN: "copysign",
                   BinaryOp.NEXTAFTER: "nextafter"}


def shift(op: BinaryOp, a: str, b: str, dt: DType, t: str, dialect: Dialect = OPENCL) -> str:
    """a << b or a >> b with NumPy's results for any count: C leaves counts outside [0, bits) undefined
    (OpenCL takes them modulo the width), so those are spelled out: 0, or the sign fill for >>."""
    bits = 8 * dt.itemsize
    if op is BinaryOp.SHL:  # (a signed value shifted as its unsigned twin: a negative one shifted left is undefined)
        shifted = f"({t})({a} << {b})" if dt.is_unsigned else f"({t})(({_unsigned_twin(dt, dialect)}){a} << {b})"
        return f"(({b} < 0 || {b} >= {bits}) ? ({t})0 : {shifted})"
    fill = f"({a} < 0 ? ({t})-1 : ({t})0)" if not dt.is_unsigned else f"({t})0"
    return f"(({b} < 0 || {b} >= {bits}) ? {fill} : ({t})({a} >> {b}))"


# CUDA's fast intrinsics for half types, computed in float32: a few float32 ulps off (exp: 2 + 1.16|x|), far
# inside a half type's rounding (2^-9 or 2^-12); a softmax over bfloat16 rows ran at 1.8 TB/s with expf's range
# reduction, bound by its instructions, against 2.9 for the gradient's row kernel
HALF_FAST_FN = {UnaryOp.EXP: "__expf", UnaryOp.LOG: "__logf"}
# (HALF_DIVISION) CUDA divides half types, in float32, as a product with the divisor's correctly rounded reciprocal:
# at most 1.5 float32 ulps off, inside a half type's rounding, where `/` (IEEE division) takes a slow subroutine
# for operands outside its fast path's range, zero dividends among them: the causal score rows' softmax, whose
# masked entries divide 0 by the row's sum, took 257 us on an H100 against 165 us on random rows. Both operands
# are scaled by a power of two where the reciprocal would leave the normal range (a divisor beyond 2^126, or
# below 2^-126), which a flushed reciprocal would turn into 0 or inf; zeros, infinities and NaNs come out as IEEE
# division gives them (0 * 1/b, x * 1/0 = inf, inf * 1/inf = NaN).
HALF_DIVISION = (
    "__device__ inline float zd_hdiv(float a, float b) {\n"
    "  const float m = fabsf(b), s = m > 0x1p126f ? 0.25f : m < 0x1p-126f ? 0x1p24f : 1.0f;\n"
    "  return (a * s) * __frcp_rn(b * s);\n}")


_WRAPPING = {BinaryOp.ADD: "+", BinaryOp.SUB: "-", BinaryOp.MUL: "*"}


def _unsigned_twin(dt: DType, dialect: Dialect) -> str:
    """The C type of the unsigned integer as wide as `dt` (32 or 64 bits: narrower ints compute as int)."""
    return ctype(uint64 if dt.itemsize == 8 else uint32, dialect)


def wrapping(op: BinaryOp, a: str, b: str, dt: DType, dialect: Dialect = OPENCL) -> str | None:
    """`a op b` for a signed int of 32 or 64 bits computed in its unsigned twin and cast back, so that an overflow
    wraps as NumPy's does (signed overflow is undefined in C: compilers assume it away, and `x * x > 0` held for
    an x whose square wraps negative); None for other ops and dtypes (narrower ints are promoted to int first)."""
    if op not in _WRAPPING or not dt.is_int or dt.is_unsigned or dt.itemsize < 4:
        return None
    u = _unsigned_twin(dt, dialect)
    return f"(({ctype(dt, dialect)})(({u}){a} {_WRAPPING[op]} ({u}){b}))"


def unary(op: UnaryOp, x: str, dt: DType, dialect: Dialect = OPENCL) -> str:
    if op is UnaryOp.NEG:
        return wrapping(BinaryOp.SUB, "0", x, dt, dialect) or f"(-{x})"
    if op is UnaryOp.NOT:
        if dt is bool_:
            return f"(!{x})"
        if dialect.name == "opencl":
            # x ^ -1 with a -1 the compiler cannot see: Intel's OpenCL CPU compiler (2026.2) rewrites `~` of an
            # integer max or min reduction (and `~` inside one) into the other reduction of inverted values, and
            # gets it wrong (~max([-10, -17, 19, 3]) gave 19; checked through pyopencl on the kernels themselves)
            return f"({x} ^ -({ctype(dt, dialect)})(get_work_dim() > 0))"
        return f"(~{x})"
    if op is UnaryOp.ABS:
        return f"fabs({x})" if dt.is_float else x if (dt.is_unsigned or dt is bool_) else f"({x} < 0 ? -{x} : {x})"
    if op is UnaryOp.RECIP:
        return f"(({ctype(dt, dialect)})1 / {x})"
    if op is UnaryOp.ISNAN:
        return f"(isnan({x}) != 0)" if dt.is_float else "false"
    if op is UnaryOp.ISINF:
        return f"(isinf({x}) != 0)" if dt.is_float else "false"
    if op in (UnaryOp.FLOOR, UnaryOp.CEIL, UnaryOp.ROUND) and not dt.is_float:
        return x
    if dt.is_half and dialect.name == "cuda" and op in HALF_FAST_FN:
        return f"{HALF_FAST_FN[op]}({x})"
    return f"{FLOAT_FN[op]}({x})"


def binary_op(op: BinaryOp, a: str, b: str, dt: DType, dialect: Dialect, temp: Callable[[DType, str], str]) -> str:
    """C for `a op b` in dtype dt, NumPy's semantics (floor division and remainder with the divisor's sign,
    NaN-propagating max/min); `temp(dtype, expr)` declares a variable holding expr and gives its name."""
    f, t = dt.is_float, ctype(dt, dialect)
    if dt is bool_ and op in (BinaryOp.ADD, BinaryOp.MAX, BinaryOp.OR):
        return f"({a} || {b})"
    if dt is bool_ and op in (BinaryOp.MUL, BinaryOp.MIN, BinaryOp.AND):
        return f"({a} && {b})"
    simple = {BinaryOp.ADD: "+", BinaryOp.SUB: "-", BinaryOp.MUL: "*", BinaryOp.DIV: "/", BinaryOp.EQ: "==",
              BinaryOp.NE: "!=", BinaryOp.LT: "<", BinaryOp.LE: "<=", BinaryOp.GT: ">", BinaryOp.GE: ">=",
              BinaryOp.AND: "&", BinaryOp.OR: "|", BinaryOp.XOR: "!=" if dt is bool_ else "^"}
    if op is BinaryOp.DIV and dt.is_half and dialect.name == "cuda":
        return f"zd_hdiv({a}, {b})"  # (HALF_DIVISION)
    wrapped = wrapping(op, a, b, dt, dialect)
    if wrapped is not None:
        return wrapped
    if op in simple:
        return f"({a} {simple[op]} {b})"
    if op in FLOAT_BINARY_FN:
        fn = FLOAT_BINARY_FN[op]
        return f"{fn}({a}, {b})" if f else f"(({t}){fn}((float){a}, (float){b}))"
    if op in (BinaryOp.SHL, BinaryOp.SHR):
        return shift(op, a, b, dt, t, dialect)
    if op in (BinaryOp.MAX, BinaryOp.MIN):
        cmp = ">" if op is BinaryOp.MAX else "<"
        nan = f" || {a} != {a}" if f else ""
        return f"(({a} {cmp} {b}{nan}) ? {a} : {b})"
    if op is BinaryOp.POW:
        if f:
            return f"pow({a}, {b})"
        return f"ipow_{ctype(dt)}({a}, {b})"
    if op is BinaryOp.MOD:
        if f:
            r = temp(dt, f"fmod({a}, {b})")
            return f"(({r} != 0) ? ((({b} < 0) != ({r} < 0)) ? {r} + {b} : {r}) : copysign(({t})0, {b}))"
        if dt.is_unsigned:
            return f"({b} == 0 ? ({t})0 : ({t})({a} % {b}))"
        r = temp(dt, f"(({b} == 0 || {b} == -1) ? ({t})0 : ({t})({a} % {b}))")
        return f"(({r} != 0 && (({r} < 0) != ({b} < 0))) ? ({t})({r} + {b}) : {r})"
    if op is BinaryOp.FLOORDIV:
        if f:  # NumPy's npy_divmod, so results match bit for bit
            m = temp(dt, f"fmod({a}, {b})")
            q = temp(dt, f"({a} - {m}) / {b}")
            q2 = temp(dt, f"(({m} != 0) && (({b} < 0) != ({m} < 0))) ? {q} - 1 : {q}")
            fl = temp(dt, f"floor({q2})")
            return (f"({b} == 0 ? {a} / {b} : ({q2} != 0 ? ({q2} - {fl} > ({t})0.5 ? {fl} + 1 : {fl})"
                    f" : copysign(({t})0, {a} / {b})))")
        if dt.is_unsigned:
            return f"({b} == 0 ? ({t})0 : ({t})({a} / {b}))"
        return (f"({b} == 0 ? ({t})0 : {b} == -1 ? ({t})(-{a}) : "
                f"({t})({a} / {b} - ((({a} % {b}) != 0) && (({a} < 0) != ({b} < 0)))))")
    raise NotImplementedError(f"binary op {op}")


def preamble(kernel: Kernel, d: Dialect, uses_fp64: bool) -> list[str]:
    """The lines a kernel's source starts with: the dialect's preamble, half/bfloat16/fp64 support where the
    kernel needs it, and an integer power function per integer dtype it raises to a power."""
    lines: list[str] = []
    nodes = all_nodes(kernel)
    if any(n.dtype is float16 for n in kernel.inputs + kernel.outputs) or any(
            n.op is Op.CAST and n.dtype is float16 for n in nodes):
        lines += d.half_preamble
    lines += d.preamble
    if any(n.dtype is bfloat16 for n in kernel.inputs + nodes):
        lines += d.bf16_preamble
    if uses_fp64:
        lines += d.fp64_preamble
    if d.name == "cuda" and any(n.op is Op.BINARY and n.arg is BinaryOp.DIV and n.dtype.is_half for n in nodes):
        lines.append(HALF_DIVISION)
    used = {o.dtype for o in nodes if o.op is Op.BINARY and o.arg is BinaryOp.POW}
    for dt in sorted(used, key=lambda x: x.name):
        src_dt = dt
        if src_dt.is_float:
            continue
        name, t = ctype(src_dt), ctype(src_dt, d)
        neg = "" if src_dt.is_unsigned else (f"  if (b < 0) return a == 1 ? ({t})1 : a == -1 ? "
                                             f"((b & 1) ? ({t})-1 : ({t})1) : ({t})0;\n")
        lines.append(f"{d.func_prefix}{t} ipow_{name}({t} a, {t} b) {{\n{neg}  {t} r = 1;\n"
                     f"  while (b) {{ if (b & 1) r *= a; a *= a; b >>= 1; }}\n  return r;\n}}")
    return lines
