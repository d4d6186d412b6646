"""Driver side, pure: reverse-mode gradients as a graph-to-graph pass (API.md section 11, ARCHITECTURE.md
"Gradients"). Takes the node of `y`, the nodes of `xs` and the node of y's output gradient; gives one node
per x, its gradient, built from the same opset as the forward graph (each op's vector-Jacobian product
written as opset compositions), so the backward pass is fused, scheduled and placed like any other graph,
and can itself be differentiated (higher order).

The walk goes from `y` back to the xs in reverse topological order over an explicit worklist (a backward
graph is as deep as its forward one). Only float nodes carry gradients: comparisons, casts to integers,
rounding and integer ops contribute nothing. The contributions to a node used several times are summed in
a fixed order (a balanced tree in the order the consumers were visited), so the same graph always gives
the same gradient graph. Constants folded out of a movement of another constant (`ir.FOLDED`) are walked
through as the movement they replaced, so a parameter made by `zd.zeros` and then broadcast still gets
its gradient; likewise a view merged into the one below it (its `merged` record) is walked through the view it was
built on where that leads to an x, so a gradient with respect to a view (`x = t.reshape(2, 3)`, and then
`x.reshape(6)`) finds it. A node realized before `grad` was called is walked through as the computation it was where
graph/history.py kept that (a result of one element, or a gradient, of the last two realizes); any other
realized leaf counts as a constant.
"""

from __future__ import annotations

import math
import warnings
import weakref
from typing import Any

import numpy as np

from ..dtypes import int32
from . import history, ir
from .ir import BinaryOp, Node, Op, ReduceOp, UnaryOp
from .recompute import attention_stand_ins

# row maxima that only shift a result which does not depend on them (logsumexp's):
# their gradient is zero by construction, so the walk takes them as constants, rather than computing that zero
# through the max's ties (which element is the first maximum: a whole pass over the scores of an attention)
_SHIFTS: weakref.WeakSet[Node] = weakref.WeakSet()


def shift_only(m: Node, x: Node) -> None:
    """Declare the row max `m` of `x` (a reduce, under any reshape) a shift that its consumer's result does not
    depend on (logsumexp: m + log(sum(exp(x - m)))). Only a reduce node the caller made is marked: a max over
    size-1 axes is x itself under a reshape, which may be a max the user holds, and stays as it is."""
    while m.op is Op.RESHAPE:
        m = m.srcs[0]
    while x.op is Op.RESHAPE:
        x = x.srcs[0]
    if m is not x and m.op is Op.REDUCE and m.arg[0] is ReduceOp.MAX:
        _SHIFTS.add(m)


# composite ops with a vector-Jacobian product of their own, in terms of their result: softmax's is
# p * (g - sum(g * p)), log_softmax's g - exp(y) * sum(g). The walk goes from such a result straight to its input,
# so the backward pass reads the result and nothing of its inside (the row max, the exponentials, their sum): the
# forward stays one row kernel, and an attention's backward reads its probabilities and their gradient only.
# sigmoid's is g * p * (1 - p), 1 - p as sigmoid(-x): its inside, 1 / (1 + exp(-x)), gives 0 * inf where exp(-x)
# overflows (x below -88 in float32)
_RULES: weakref.WeakKeyDictionary[Node, tuple[str, Node, tuple[int, ...]]] = weakref.WeakKeyDictionary()


def composite(out: Node, kind: str, x: Node, axes: tuple[int, ...]) -> None:
    """Give `out`, the result of `kind` ("softmax", "log_softmax" or "sigmoid", over no axes) of `x` over `axes`
    that the frontend has just made, its own gradient rule. Only a fresh node takes it (a binary or unary op: a
    folded result keeps the plain walk)."""
    if out.op is Op.BINARY or out.op is Op.UNARY:
        _RULES[out] = (kind, x, axes)


def gradients(y: Node, xs: list[Node], seed: Node) -> list[Node]:
    """d(sum(seed * y)) / dx for each x in `xs` (seed has y's shape and dtype); an x that y does not depend
    on through float ops gets zeros of its shape and dtype."""
    tracked = ir.track_views(False)  # (the gradient's own views: nobody differentiates by them)
    try:
        return _gradients(y, xs, seed)
    finally:
        ir.track_views(tracked)


def _gradients(y: Node, xs: list[Node], seed: Node) -> list[Node]:
    views: dict[Node, tuple] = {}  # each node's view, taken once (nodes hash by identity)
    wanted = {x.id for x in xs}

    def sources(n: Node) -> tuple[Node, ...]:
        rule = _RULES.get(n)
        v = views[n] = _view(n, wanted) if rule is None else (None, rule, (rule[1],))
        return v[2]

    order = ir.toposort([y], sources=sources)
    # nodes through which a gradient can reach some x: float nodes on a path from an x to y
    live: set[int] = set()
    for n in order:
        if not n.dtype.is_float:
            continue
        if n.id in wanted:
            live.add(n.id)
            continue
        if n in _SHIFTS:
            continue
        for s in views[n][2]:
            if s.id in live:
                live.add(n.id)
                break
    found: dict[int, Node] = {}
    fresh = next(ir._ids)  # nodes with larger ids are this pass's own
    forward = _Products(order)
    # an attention's probabilities and their views, recomputed rather than read back (graph/recompute.py)
    stand_in = attention_stand_ins(order, views)
    pending: dict[int, list[Node]] = {y.id: [seed]} if y.id in live else {}
    for n in reversed(order):
        parts = pending.pop(n.id, None)
        if parts is None:
            continue
        g = parts[0] if len(parts) == 1 else _sum(parts)
        if n.id in wanted:
            found[n.id] = g
        op, arg, srcs = views[n]
        if not srcs:
            continue
        need = [s.id in live for s in srcs]
        if op is None:
            contributions = [_composite(arg, n, g, forward, stand_in.get(n.id, n))]
        else:
            read = tuple(stand_in.get(s.id, s) for s in srcs) if stand_in else srcs
            contributions = _vjp(op, arg, read, n, g, need)
        for src, contribution, needed in zip(srcs, contributions, need):
            if needed and contribution is not None:
                if n.guards is not None:  # (a gather: its gradient is wrong wherever its value would be)
                    contribution = _carrying(contribution, n.guards, fresh)
                parts = pending.get(src.id)
                if parts is None:
                    pending[src.id] = [contribution]
                else:
                    parts.append(contribution)
    if len(found) < len(wanted):
        _warn_if_cut(order, wanted, found, views)
    return [found[x.id] if x.id in found else ir.const(0, x.shape, x.dtype) for x in xs]


def _warn_if_cut(order: list[Node], wanted: set[int], found: dict[int, Node], views: dict[Node, tuple]) -> None:
    """A RuntimeWarning where some x got no gradient and y reads a tensor a realize computed before `grad` was
    called whose computation was not kept (graph/history.py), or a host decomposition's result (zd.linalg's
    det, inv, ...): it is a constant to the gradient, which is zero (or partial) if that tensor was computed from
    x. The zeros are what API.md promises for an x that y does not depend on, so this only warns."""
    missing = len(wanted) - len(found)
    for n in order:
        if n.op is not Op.LEAF or n.id in wanted:
            continue
        if (what := history.host_origin(n)) is not None:
            warnings.warn(f"zd.grad: {missing} of the xs got no gradient, and y reads tensor #{n.id} {n.shape} "
                          f"{n.dtype}, the result of zd.{what}, which NumPy computes on the host: it has no gradient, "
                          "so none flows through it", RuntimeWarning, stacklevel=5)
            return
        if getattr(n.buffer, "computed", False) and not views[n][2]:
            warnings.warn(f"zd.grad: {missing} of the xs got no gradient, and y reads tensor #{n.id} {n.shape} "
                          f"{n.dtype}, computed by a realize (a read, realize() or numpy()) before zd.grad was "
                          "called: its computation is not kept, so no gradient flows through it. If it was computed "
                          "from those xs, take the gradient before reading it", RuntimeWarning, stacklevel=5)
            return


def _carrying(c: Node, guards: tuple, fresh: int) -> Node:
    """Contribution `c` made to depend on `guards` (graph/guards.py) as well: itself where this pass made it
    and no constructor composes it away (not a movement), else an identity cast of it (a node the user or
    the forward graph holds must not take them on)."""
    have = c.guards or ()
    if all(g in have for g in guards):
        return c
    if c.id <= fresh or c.op in ir.MOVEMENT_OPS or not c.srcs:
        c = Node(Op.CAST, (c,), c.dtype, c.shape, c.dtype)
    c.guards = ir.merged_guards(c.guards or (), guards)
    return c


def _view(n: Node, wanted: set[int]) -> tuple[Op, Any, tuple[Node, ...]]:
    """(op, arg, sources) of n as the gradient sees it: a folded constant is the movement it replaced, a realized
    leaf whose history graph/history.py kept the computation it was, and a view merged into the one below it (its
    `merged` record) the view it was built on, where that leads to a node of `wanted` (ids)."""
    record = n.merged
    if record is not None and _leads_to(record[2], wanted):
        return record[0], record[1], (record[2],)
    if n.op is Op.CONST:
        folded = ir.FOLDED.get(n)
        if folded is not None:
            return folded[0], folded[1], (folded[2],)
    elif n.op is Op.LEAF:
        former = history.former(n)
        if former is not None:
            return former
    return n.op, n.arg, n.srcs


def _leads_to(view: Node, wanted: set[int]) -> bool:
    """Whether `view`, or a view it was merged from (its `merged` record, transitively), is one of `wanted`."""
    while view.id not in wanted:
        record = view.merged
        if record is None:
            return False
        view = record[2]
    return True


def _sum(parts: list[Node]) -> Node:
    while len(parts) > 1:
        pairs = [ir.add(a, b) for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + parts[len(pairs) * 2:]
    return parts[0]


def _scale(a: Node, k: float) -> Node:
    return ir.mul(a, ir.full_like(k, a))


def _cmp(op: BinaryOp, a: Node, b: Node) -> Node:
    return ir.binary(op, a, b)


def _or(a: Node, b: Node) -> Node:
    return ir.binary(BinaryOp.OR, a, b)


def _pick(mask: Node, g: Node) -> Node:
    """g where mask, else 0."""
    return ir.where(mask, g, ir.full_like(0, g))


# ---- vector-Jacobian products -------------------------------------------------------------------------------

def _vjp(op: Op, arg: Any, srcs: tuple[Node, ...], n: Node, g: Node, need: list[bool]) -> list[Node | None]:
    """The contribution of g (the gradient at n) to each source of n; None where there is none (or it is
    not needed)."""
    x = srcs[0]
    if op is Op.EXPAND:
        axes = tuple(i for i, (a, b) in enumerate(zip(x.shape, n.shape)) if a != b)
        return [_contraction_in_source_layout(g, axes, x) or ir.reduce(ReduceOp.SUM, g, axes)]
    if op is Op.RESHAPE:
        return [ir.reshape(g, x.shape)]
    if op is Op.PERMUTE:
        return [ir.permute(g, tuple(int(i) for i in np.argsort(arg)))]
    if op is Op.PAD:
        return [ir.pad(g, tuple((-lo, -hi) for lo, hi in arg[0]), 0)]
    if op is Op.FLIP:
        return [ir.flip(g, arg)]
    if op is Op.CAST:
        return [ir.cast(g, x.dtype) if x.dtype.is_float else None]
    if op is Op.UNARY:
        return [_unary(arg, x, n, g)]
    if op is Op.BINARY:
        return _binary(arg, srcs[0], srcs[1], n, g, need)
    if op is Op.WHERE:
        cond = srcs[0]
        return [None, _pick(cond, g) if need[1] else None,
                ir.where(cond, ir.full_like(0, g), g) if need[2] else None]
    if op is Op.REDUCE:
        return [_reduce(arg[0], arg[1], x, n, g)]
    raise NotImplementedError(f"no gradient for {op}")


def _contraction_in_source_layout(g: Node, axes: tuple[int, ...], x: Node) -> Node | None:
    """sum(g, axes) for an expanded x that is a permuted view of a value s (a weight read transposed by matmul):
    where g is a product of broadcasts (a weight's gradient is a contraction), its kept axes are put in s's order
    before the sum, so the GEMM writes the gradient in s's layout and the backward pass of x's views composes
    away. Summed in x's order, the GEMM wrote it transposed, and whatever read it (an optimizer's update, the
    split-K partials' total) read across rows, a sector per element. The same sums in the same order: the same
    values. None where x is no such view or g no such product."""
    if not ir.broadcast_product(g):
        return None
    chain, s = [], x  # x's views down to s: permutes, and reshapes that only add or drop size-1 axes
    while s.op in (Op.PERMUTE, Op.RESHAPE) and len(chain) < 8:
        if s.op is Op.RESHAPE and [d for d in s.shape if d > 1] != [d for d in s.srcs[0].shape if d > 1]:
            break
        chain.append(s)
        s = s.srcs[0]
    order = list(range(sum(d > 1 for d in x.shape)))  # x's axes longer than 1, as they come in s
    for v in chain:
        if v.op is Op.PERMUTE:  # its axis i is its source's axis v.arg[i]
            longer = [i for i, d in enumerate(v.shape) if d > 1]
            order = [order[longer.index(i)] for i in sorted(longer, key=lambda i: v.arg[i])]
    if order == sorted(order):  # s has x's order: nothing to move
        return None
    kept = [i for i in range(len(g.shape)) if i not in axes and g.shape[i] > 1]  # x's axes longer than 1, in g
    perm = tuple([kept[j] for j in order] + [i for i in range(len(g.shape)) if i not in kept])

    def moved(f: Node) -> Node:  # f's axes in perm's order, the permute below its casts and any broadcast
        casts = []
        while f.op is Op.CAST:
            casts.append(f.dtype)
            f = f.srcs[0]
        if f.op is Op.EXPAND:
            f = ir.expand(ir.permute(f.srcs[0], perm), tuple(f.shape[i] for i in perm))
        else:
            f = ir.permute(f, perm)
        for dtype in reversed(casts):
            f = ir.cast(f, dtype)
        return f

    total = ir.reduce(ReduceOp.SUM, ir.mul(*map(moved, g.srcs)), tuple(perm.index(a) for a in axes))
    grad = ir.reshape(total, s.shape)
    for v in reversed(chain):  # s's gradient seen through x's views again: their own gradients undo them
        grad = ir.permute(grad, v.arg) if v.op is Op.PERMUTE else ir.reshape(grad, v.shape)
    return grad


class _Products:
    """The forward graph's products and the sums over them, by the nodes they read: built at the first question
    (most walks meet no softmax)."""

    def __init__(self, order: list[Node]):
        self.order, self.readers = order, None

    def sums_beside(self, f: Node) -> list[tuple[Node, Node, Node]]:
        """(product, its other factor, a SUM reduce of it) for each forward product that has f as a factor."""
        if self.readers is None:
            self.readers = {}
            for n in self.order:
                if n.op is Op.REDUCE and n.arg[0] is ReduceOp.SUM and n.srcs[0].op is Op.BINARY \
                        and n.srcs[0].arg is BinaryOp.MUL:
                    a, b = n.srcs[0].srcs
                    self.readers.setdefault(a.id, []).append((n.srcs[0], b, n))
                    self.readers.setdefault(b.id, []).append((n.srcs[0], a, n))
        return self.readers.get(f.id, [])


def _composite(rule: tuple, n: Node, g: Node, forward: _Products, p: Node) -> Node:
    """The gradient at the input of the composite `n`, whose result the softmax rule reads as `p`: n itself, or
    its recomputed stand-in (graph/recompute.py)."""
    kind, x, axes = rule
    if kind == "sigmoid":  # p (1 - p), 1 - p as sigmoid(-x)
        return ir.mul(g, ir.mul(p, sigmoid(ir.neg(x))))
    if kind == "softmax":  # p * (g - sum(g * p))
        rows = _attention_rows(n, g, axes, forward)
        if rows is None:
            return ir.mul(p, ir.sub(g, ir.expand(ir.reduce(ReduceOp.SUM, ir.mul(g, p), axes), n.shape)))
        if not n.dtype.is_half:
            return ir.mul(p, ir.sub(g, ir.expand(rows, n.shape)))
        wide = [ir.cast(t, ir.float32) for t in (p, g)]  # the rows' sums are float32: p * (g - sum) in float32
        return ir.cast(ir.mul(wide[0], ir.sub(wide[1], ir.expand(rows, n.shape))), n.dtype)
    # log_softmax: g - softmax * sum(g), the softmax being exp(y)
    return ir.sub(g, ir.mul(ir.unary(UnaryOp.EXP, n), ir.expand(ir.reduce(ReduceOp.SUM, g, axes), n.shape)))


def sigmoid(x: Node) -> Node:
    """1 / (1 + exp(-x)), with its gradient rule (as the frontend's sigmoid makes it)."""
    out = ir.unary(UnaryOp.RECIP, ir.add(ir.unary(UnaryOp.EXP, ir.neg(x)), ir.full_like(1, x)))
    composite(out, "sigmoid", x, ())
    return out


def _attention_rows(p: Node, g: Node, axes: tuple[int, ...], forward: _Products) -> Node | None:
    """sum(g * p, axes) of an attention's probabilities p when g, their gradient, is all from o = p @ v: then
    g = do @ v.T, and the sum over a row's keys is the sum over the head dim of do * o (flash attention's D),
    which reads two (.., T, head dim) tensors instead of the T x T gradient. Its kernel then stores nothing T x T:
    p * (g - D) is the epilogue of the GEMM that computes g. Half types: D in float32. None where g or p is not
    of that form (g summed from several uses of p, p read through a permute, ...)."""
    if len(axes) != 1 or p.shape[axes[0]] == 1:
        return None
    r = _squeezed(g)
    if r is None or r.op is not Op.REDUCE or r.arg[0] is not ReduceOp.SUM or len(r.arg[1]) != 1:
        return None
    prod = r.srcs[0]
    if prod.op is not Op.BINARY or prod.arg is not BinaryOp.MUL or prod.srcs[0].op is not Op.EXPAND:
        return None
    spread, f = prod.srcs  # (the gradient at o, broadcast over the keys; v's factor of the forward product)
    c = r.arg[1][0]  # the head dim, summed by g
    for fwd, other, o in forward.sums_beside(f):
        if fwd.shape != prod.shape or o.shape != spread.srcs[0].shape or len(o.arg[1]) != 1:
            continue
        j = o.arg[1][0]  # the keys, summed by o
        if other.op is not Op.EXPAND or _squeezed(other.srcs[0]) is not p or other.srcs[0].shape[c] != 1:
            continue
        # p's axes longer than 1 are the product's, less the head dim, in order: the keys must be p's softmax axis
        kept = [i for i, d in enumerate(fwd.shape) if d > 1 and i != c]
        mine = [i for i, d in enumerate(p.shape) if d > 1]
        if j not in kept or len(kept) != len(mine) or kept.index(j) != mine.index(axes[0]):
            continue
        do, out = spread.srcs[0], o
        if p.dtype.is_half:
            do, out = ir.cast(do, ir.float32), ir.cast(out, ir.float32)
        d = ir.reduce(ReduceOp.SUM, ir.mul(do, out), (c,))
        return ir.reshape(d, tuple(1 if i == axes[0] else n for i, n in enumerate(p.shape)))
    return None


def _squeezed(n: Node) -> Node | None:
    """n below reshapes that only add or drop size-1 axes; None where one does more."""
    while n.op is Op.RESHAPE:
        if [d for d in n.shape if d > 1] != [d for d in n.srcs[0].shape if d > 1]:
            return None
        n = n.srcs[0]
    return n


def _unary(op: UnaryOp, x: Node, n: Node, g: Node) -> Node | None:
    if op is UnaryOp.NEG:
        return ir.neg(g)
    if op is UnaryOp.EXP:
        return ir.mul(g, n)
    if op is UnaryOp.EXP2:
        return ir.mul(g, _scale(n, math.log(2.0)))
    if op is UnaryOp.LOG:
        return ir.div(g, x)
    if op is UnaryOp.LOG2:
        return ir.div(g, _scale(x, math.log(2.0)))
    if op is UnaryOp.SQRT:
        return ir.div(g, _scale(n, 2.0))
    if op is UnaryOp.RSQRT:  # d x^-1/2 = -x^-3/2 / 2 = -n^3 / 2
        return ir.mul(g, _scale(ir.mul(n, ir.mul(n, n)), -0.5))
    if op is UnaryOp.RECIP:
        return ir.neg(ir.mul(g, ir.mul(n, n)))
    if op is UnaryOp.SIN:
        return ir.mul(g, ir.unary(UnaryOp.COS, x))
    if op is UnaryOp.COS:
        return ir.neg(ir.mul(g, ir.unary(UnaryOp.SIN, x)))
    if op is UnaryOp.TAN:
        return ir.mul(g, ir.add(ir.full_like(1, n), ir.mul(n, n)))
    if op is UnaryOp.TANH:
        return ir.mul(g, ir.sub(ir.full_like(1, n), ir.mul(n, n)))
    if op is UnaryOp.ABS:  # sign(x) * g, 0 at x == 0
        zero = ir.full_like(0, x)
        return ir.where(_cmp(BinaryOp.GT, x, zero), g, ir.where(_cmp(BinaryOp.LT, x, zero), ir.neg(g), ir.full_like(0, g)))
    if op is UnaryOp.LOG1P:
        return ir.div(g, ir.add(ir.full_like(1, x), x))
    if op is UnaryOp.EXPM1:  # exp(x) = expm1(x) + 1
        return ir.mul(g, ir.add(n, ir.full_like(1, n)))
    if op is UnaryOp.LOG10:
        return ir.div(g, _scale(x, math.log(10.0)))
    # 1 - x^2 as (1 - x)(1 + x): no cancellation as |x| nears 1, where these slopes are steep
    if op is UnaryOp.ASIN:
        return ir.div(g, ir.unary(UnaryOp.SQRT, _one_minus_square(x)))
    if op is UnaryOp.ACOS:
        return ir.neg(ir.div(g, ir.unary(UnaryOp.SQRT, _one_minus_square(x))))
    if op is UnaryOp.ATANH:
        return ir.div(g, _one_minus_square(x))
    if op is UnaryOp.ATAN:  # (x^2 overflows only where 1 / (1 + x^2) is below the type's range anyway)
        return ir.div(g, ir.add(ir.full_like(1, x), ir.mul(x, x)))
    if op is UnaryOp.SINH:
        return ir.mul(g, ir.unary(UnaryOp.COSH, x))
    if op is UnaryOp.COSH:
        return ir.mul(g, ir.unary(UnaryOp.SINH, x))
    if op is UnaryOp.ASINH:  # sqrt(x^2 + 1) as hypot(x, 1): x^2 would overflow a half type from |x| = 256
        return ir.div(g, ir.binary(BinaryOp.HYPOT, x, ir.full_like(1, x)))
    if op is UnaryOp.ACOSH:  # sqrt(x^2 - 1) as sqrt(x - 1) sqrt(x + 1): no overflow, no cancellation near 1
        one = ir.full_like(1, x)
        return ir.div(g, ir.mul(ir.unary(UnaryOp.SQRT, ir.sub(x, one)), ir.unary(UnaryOp.SQRT, ir.add(x, one))))
    return None  # floor, ceil, round, trunc: piecewise constant; the rest give bool or integer results


def _one_minus_square(x: Node) -> Node:
    one = ir.full_like(1, x)
    return ir.mul(ir.sub(one, x), ir.add(one, x))


def _nonzero(d: Node) -> Node:
    """d with its zeros made ones: a denominator whose zeros come with zero numerators (a norm at the origin),
    so the quotient there is 0 (the gradient taken at a kink) rather than 0 / 0, in every order of derivative."""
    return ir.where(_cmp(BinaryOp.EQ, d, ir.full_like(0, d)), ir.full_like(1, d), d)


def _binary(op: BinaryOp, a: Node, b: Node, n: Node, g: Node, need: list[bool]) -> list[Node | None]:
    da = db = None
    if op is BinaryOp.ADD:
        da, db = g, g
    elif op is BinaryOp.SUB:
        da, db = g, (ir.neg(g) if need[1] else None)
    elif op is BinaryOp.MUL:
        da = ir.mul(g, b) if need[0] else None
        db = ir.mul(g, a) if need[1] else None
    elif op is BinaryOp.DIV:
        ga = ir.div(g, b)
        da = ga
        db = ir.neg(ir.mul(ga, n)) if need[1] else None  # -g a / b^2 = -(g / b) * (a / b)
    elif op is BinaryOp.POW:
        # where a masked term would be 0 * inf (0^-1, log 0), it reads a at 1 instead, so that no derivative of
        # it (higher orders reach the masked term with a zero gradient) is 0 * inf either
        zero, one = ir.full_like(0, a), ir.full_like(1, a)
        base = _cmp(BinaryOp.EQ, a, zero)
        if need[0]:  # g b a^(b-1), and 0 at a == b == 0 (the slope of a^0, as everywhere else on b == 0)
            origin = ir.binary(BinaryOp.AND, base, _cmp(BinaryOp.EQ, b, zero))
            dpow = ir.mul(b, ir.binary(BinaryOp.POW, ir.where(origin, one, a), ir.sub(b, ir.full_like(1, b))))
            da = ir.where(origin, ir.full_like(0, g), ir.mul(g, dpow))
        if need[1]:  # g a^b log(a), and 0 where a == 0 <= b (the limit of a^b there)
            flat = ir.binary(BinaryOp.AND, base, _cmp(BinaryOp.GE, b, zero))
            db = ir.mul(g, ir.mul(n, ir.unary(UnaryOp.LOG, ir.where(flat, one, a))))
    elif op in (BinaryOp.MAX, BinaryOp.MIN):  # ties and NaNs: the first operand, as NumPy's argmax picks
        first = _or(_cmp(BinaryOp.GE if op is BinaryOp.MAX else BinaryOp.LE, a, b), ir.unary(UnaryOp.ISNAN, a))
        da = _pick(first, g) if need[0] else None
        db = ir.where(first, ir.full_like(0, g), g) if need[1] else None
    elif op is BinaryOp.MOD:  # a - floor(a / b) * b
        da = g
        db = ir.neg(ir.mul(g, ir.unary(UnaryOp.FLOOR, ir.div(a, b)))) if need[1] else None
    elif op is BinaryOp.ATAN2:  # (b, -a) / (a^2 + b^2), as (b / h) / h with h = hypot(a, b): no squares to overflow
        h = _nonzero(ir.binary(BinaryOp.HYPOT, a, b))
        da = ir.mul(g, ir.div(ir.div(b, h), h)) if need[0] else None
        db = ir.neg(ir.mul(g, ir.div(ir.div(a, h), h))) if need[1] else None
    elif op is BinaryOp.HYPOT:  # (a, b) / n, and 0 at the origin
        h = _nonzero(n)
        da = ir.mul(g, ir.div(a, h)) if need[0] else None
        db = ir.mul(g, ir.div(b, h)) if need[1] else None
    elif op is BinaryOp.COPYSIGN:  # |a| sign(b): g sign(a) sign(b) (by the sign bits), 0 at a == 0 as abs's rule
        one = ir.full_like(1, a)
        agree = ir.mul(ir.binary(BinaryOp.COPYSIGN, one, a), ir.binary(BinaryOp.COPYSIGN, one, b))
        da = _pick(_cmp(BinaryOp.NE, a, ir.full_like(0, a)), ir.mul(g, agree)) if need[0] else None
    elif op is BinaryOp.NEXTAFTER:  # a moved one ulp toward b: slope 1 in a (the ulp is piecewise constant)
        da = g
    # floor division is piecewise constant, and so are copysign and nextafter in b; comparisons and
    # logical/bitwise ops have no float result
    return [da, db]


def _reduce(op: ReduceOp, axes: tuple[int, ...], x: Node, n: Node, g: Node) -> Node:
    ge = ir.expand(g, x.shape)
    if op is ReduceOp.SUM:
        return ge
    if op is ReduceOp.PROD:
        return ir.mul(ge, _prod_partials(axes, x))
    # max / min: the first extreme element of each reduced slice (in row-major order of the reduced axes)
    # gets the gradient, NaN counting as the extreme (the element NumPy's argmax/argmin would pick)
    hit = _or(_cmp(BinaryOp.EQ, x, ir.expand(n, x.shape)), ir.unary(UnaryOp.ISNAN, x))
    return _pick(_first(hit, axes), ge)


def _first(hit: Node, axes: tuple[int, ...]) -> Node:
    """A bool mask of the first True of `hit` along `axes` (row-major over those axes)."""
    shape = tuple(d if i in axes else 1 for i, d in enumerate(hit.shape))
    count = math.prod(shape)
    position = ir.expand(ir.leaf(np.arange(count, dtype=np.int32).reshape(shape), int32), hit.shape)
    first = ir.reduce(ReduceOp.MIN, ir.where(hit, position, ir.full_like(count, position)), axes)
    return _cmp(BinaryOp.EQ, position, ir.expand(first, hit.shape))


def _prod_partials(axes: tuple[int, ...], x: Node) -> Node:
    """d prod / dx_i: the product of the other elements of x_i's slice, written so that its own derivatives are
    right too where a slice holds one zero at most: with the zeros read as 1 (`safe`), the slice's product of safe
    over safe_i (`others`), times the zero's value where x_i is not the zero (0, its derivative to the zero 1). A
    slice of two zeros or more gives 0 (so the mixed derivative of two zeros comes out 0, not the product of the
    others). No division reads a zero: a masked p / 0 would make a second derivative 0 * inf (NaN)."""
    zero = _cmp(BinaryOp.EQ, x, ir.full_like(0, x))
    zeros = ir.expand(ir.reduce(ReduceOp.SUM, ir.cast(zero, int32), axes), x.shape)
    safe = ir.where(zero, ir.full_like(1, x), x)
    others = ir.div(ir.expand(ir.reduce(ReduceOp.PROD, safe, axes), x.shape), safe)
    the_zero = ir.expand(ir.reduce(ReduceOp.SUM, ir.where(zero, x, ir.full_like(0, x)), axes), x.shape)
    none = _cmp(BinaryOp.EQ, zeros, ir.full_like(0, zeros))
    mine = ir.where(_or(zero, none), others, ir.mul(others, the_zero))
    return ir.where(_cmp(BinaryOp.LE, zeros, ir.full_like(1, zeros)), mine, ir.full_like(0, x))
