"""A NumPy interpreter of zyx_dist graphs, the ground truth for graph-level tests (no device needed).

`evaluate(node)` computes a `zyx_dist.graph.ir.Node` with NumPy and the opset semantics the renderers
implement: remainder with the divisor's sign, floor division, NaN-propagating max/min, integer
division by zero giving 0, round half to even, float16 computed in float32 and rounded once per op.
A realized leaf without host data cannot be read here (its data lives on a device): that raises.
"""

from __future__ import annotations

import numpy as np

from zyx_dist.graph.ir import BinaryOp, Node, Op, ReduceOp, UnaryOp, toposort

_UNARY = {
    UnaryOp.NEG: np.negative, UnaryOp.ABS: np.abs, UnaryOp.EXP: np.exp, UnaryOp.EXP2: np.exp2,
    UnaryOp.LOG: np.log, UnaryOp.LOG2: np.log2, UnaryOp.SQRT: np.sqrt, UnaryOp.RSQRT: lambda x: 1 / np.sqrt(x),
    UnaryOp.RECIP: lambda x: 1 / x, UnaryOp.SIN: np.sin, UnaryOp.COS: np.cos, UnaryOp.TAN: np.tan,
    UnaryOp.TANH: np.tanh, UnaryOp.FLOOR: np.floor, UnaryOp.CEIL: np.ceil, UnaryOp.ROUND: np.round,
    UnaryOp.ISNAN: np.isnan, UnaryOp.ISINF: np.isinf,
    UnaryOp.NOT: lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
}


def _int_div(fn):
    """Integer floor division / remainder with a zero divisor giving 0 (as the kernels do)."""
    def f(x, y):
        if x.dtype.kind in "iu":
            zero = y == 0
            return np.where(zero, 0, fn(x, np.where(zero, 1, y))).astype(x.dtype)
        return fn(x, y)
    return f


def _pow(x, y):
    if x.dtype.kind in "iu":  # negative integer exponents are undefined in C; NumPy raises; give 0
        neg = y < 0
        return np.where(neg, 0, np.power(x, np.where(neg, 0, y))).astype(x.dtype)
    return np.power(x, y)


_BINARY = {
    BinaryOp.ADD: np.add, BinaryOp.SUB: np.subtract, BinaryOp.MUL: np.multiply, BinaryOp.DIV: np.true_divide,
    BinaryOp.FLOORDIV: _int_div(np.floor_divide), BinaryOp.MOD: _int_div(np.remainder), BinaryOp.POW: _pow,
    BinaryOp.MAX: np.maximum, BinaryOp.MIN: np.minimum, BinaryOp.EQ: np.equal, BinaryOp.NE: np.not_equal,
    BinaryOp.LT: np.less, BinaryOp.LE: np.less_equal, BinaryOp.GT: np.greater, BinaryOp.GE: np.greater_equal,
    BinaryOp.AND: np.bitwise_and, BinaryOp.OR: np.bitwise_or, BinaryOp.XOR: np.bitwise_xor,
}

_REDUCE = {ReduceOp.SUM: np.sum, ReduceOp.PROD: np.prod, ReduceOp.MAX: np.max, ReduceOp.MIN: np.min}


def _up(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _pad(x: np.ndarray, widths, value) -> np.ndarray:
    crop = tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(widths))
    return np.pad(x[crop], [(max(lo, 0), max(hi, 0)) for lo, hi in widths], constant_values=value)


def _eval(node: Node, srcs: list[np.ndarray]) -> np.ndarray:
    op, arg, nd = node.op, node.arg, node.dtype.np_dtype
    if op is Op.LEAF:
        if node.host is None:
            raise ValueError(f"{node} is realized on a device: the reference interpreter has no data for it")
        return node.host
    if op is Op.CONST:
        return np.full(node.shape, arg, dtype=nd)
    (x, *rest) = srcs if srcs else (None,)
    if op is Op.RESHAPE:
        return x.reshape(node.shape)
    if op is Op.PERMUTE:
        return np.transpose(x, arg)
    if op is Op.EXPAND:
        return np.broadcast_to(x, node.shape).copy()
    if op is Op.PAD:
        return _pad(x, *arg)
    if op is Op.FLIP:
        return np.flip(x, arg).copy()
    if op is Op.CAST:
        return x.astype(nd)
    if op is Op.UNARY:
        return _UNARY[arg](_up(x)).astype(nd)
    if op is Op.BINARY:
        return _BINARY[arg](_up(x), _up(rest[0])).astype(nd)
    if op is Op.WHERE:
        return np.where(x, rest[0], rest[1]).astype(nd)
    if op is Op.REDUCE:
        rop, axes = arg
        return _REDUCE[rop](_up(x), axis=axes, keepdims=True).astype(nd)
    raise NotImplementedError(op)


def evaluate(node: Node) -> np.ndarray:
    """The value of `node` computed with NumPy (an array of node.shape and node.dtype)."""
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for n in toposort([node]):
            values[n.id] = _eval(n, [values[s.id] for s in n.srcs])
    out = values[node.id]
    assert out.shape == node.shape and out.dtype == node.dtype.np_dtype, (node, out.shape, out.dtype)
    return out
