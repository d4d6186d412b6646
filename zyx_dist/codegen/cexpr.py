"""Driver side: the C spellings and index helpers that the renderer and the GEMM template share. Takes
nodes, dtypes and symbolic indices; gives C types, literals and unary-op expressions in a dialect, the
index a movement op maps to, row-major strides and flat indices, and small walks over a kernel's nodes.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import DType, bool_, float64
from ..fuse.kernelize import Kernel
from ..graph.ir import BinaryOp, Node, Op, UnaryOp
from . import symbolic as sym
from .dialects import OPENCL, Dialect


def ctype(dt: DType, dialect: Dialect = OPENCL) -> str:
    """C type used for computing in registers (half types are computed in float: PoCL lacks cl_khr_fp16,
    and OpenCL has no bfloat16)."""
    return "float" if dt.is_half else "bool" if dt is bool_ else dialect.type(dt.cname)


def literal(value, dt: DType, dialect: Dialect = OPENCL) -> str:
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


def has_reduce(n: Node, inputs: set[int]) -> bool:
    """Whether computing n (down to the kernel's inputs) runs a reduce."""
    stack, seen = [n], set()
    while stack:
        x = stack.pop()
        if x.id in seen or x.id in inputs:
            continue
        seen.add(x.id)
        if x.op is Op.REDUCE:
            return True
        stack.extend(x.srcs)
    return False


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


def shift(op: BinaryOp, a: str, b: str, dt: DType, t: str) -> str:
    """a << b or a >> b with NumPy's results for any count: C leaves counts outside [0, bits) undefined
    (OpenCL takes them modulo the width), so those are spelled out: 0, or the sign fill for >>."""
    bits = 8 * dt.itemsize
    if op is BinaryOp.SHL:
        return f"(({b} < 0 || {b} >= {bits}) ? ({t})0 : ({t})({a} << {b}))"
    fill = f"({a} < 0 ? ({t})-1 : ({t})0)" if not dt.is_unsigned else f"({t})0"
    return f"(({b} < 0 || {b} >= {bits}) ? {fill} : ({t})({a} >> {b}))"


def unary(op: UnaryOp, x: str, dt: DType, dialect: Dialect = OPENCL) -> str:
    if op is UnaryOp.NEG:
        return f"(-{x})"
    if op is UnaryOp.NOT:
        return f"(!{x})" if dt is bool_ else f"(~{x})"
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
    return f"{FLOAT_FN[op]}({x})"
