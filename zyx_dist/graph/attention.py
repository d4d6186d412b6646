"""Driver side: recognises attention, `softmax(q @ k^T * scale + mask) @ v` as the public API writes it
(the scale and the mask optional, the mask additive or through `zd.where`, any elementwise scoring in
between), in the graph. Takes a node; gives an `Attention` naming the nodes of the pattern when the node
is the final sum over keys of the softmax's probabilities times v, else None. The kernelizer then keeps
the whole pattern in one kernel (the scores, their row max and sum are never stored), which
codegen/attention.py renders as one flash-attention style kernel, and a gradient recomputes the
probabilities rather than reading them (graph/recompute.py). Only structure is checked here; the renderer
checks the index arithmetic and, where that fails, the kernel still renders as plain loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import BinaryOp, Node, Op, ReduceOp, UnaryOp, prod

MAX_HEAD = 128  # head dims (of q and k, and of v) a work-item keeps in registers
MOVES = (Op.RESHAPE, Op.PERMUTE, Op.EXPAND)
SCORING = (Op.UNARY, Op.BINARY, Op.CAST, Op.WHERE, Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.PAD, Op.FLIP)


@dataclass(frozen=True)
class Attention:
    out: Node  # sum over keys of probs * v
    probs: Node  # e / sum(e)
    exp: Node  # exp(scores - max)
    row_max: Node
    row_sum: Node
    scores: Node
    qk: Node  # the sum over the head dim of q * k

    def internal(self) -> set[int]:
        """Ids of the nodes on the paths from `out` down to the q @ k^T reduce (inclusive): what the one
        kernel computes itself (the scores, their row max and sum, the probabilities) and never stores."""
        keep = {self.out.id, self.out.srcs[0].id, self.probs.id, self.exp.id, self.exp.srcs[0].id,
                self.row_max.id, self.row_sum.id}
        for top in (*self.out.srcs[0].srcs, self.probs.srcs[1], self.row_sum.srcs[0], self.exp.srcs[0].srcs[1]):
            n = top
            while n.op in MOVES:  # the views between the pattern's nodes
                keep.add(n.id)
                n = n.srcs[0]
        # the scoring nodes from which qk is reached (post-order over the scores' small subgraph)
        reaches: dict[int, bool] = {self.qk.id: True}
        stack: list[tuple[Node, bool]] = [(self.scores, False)]
        while stack:
            n, ready = stack.pop()
            if n.id in reaches:
                continue
            if n.op in (Op.LEAF, Op.CONST, Op.REDUCE):
                reaches[n.id] = False
                continue
            if not ready:
                stack.append((n, True))
                stack.extend((x, False) for x in n.srcs if x.id not in reaches)
                continue
            reaches[n.id] = any(reaches[x.id] for x in n.srcs)
        return keep | {nid for nid, r in reaches.items() if r}


def _under(n: Node) -> Node:
    while n.op in MOVES:
        n = n.srcs[0]
    return n


def _one_reduce(n: Node) -> tuple[int, ...] | None:
    """The reduce axes of n when n is a single-axis reduce."""
    return n.arg[1] if n.op is Op.REDUCE and len(n.arg[1]) == 1 else None


def find(out: Node) -> Attention | None:
    # (float64 stays unfused: the fused kernels compute in float32 and half types)
    if _one_reduce(out) is None or out.arg[0] is not ReduceOp.SUM or not out.dtype.is_float or out.dtype.itemsize > 4:
        return None
    src = out.srcs[0]
    if src.op is not Op.BINARY or src.arg is not BinaryOp.MUL:
        return None
    for side in src.srcs:
        probs = _under(side)
        if probs.op is not Op.BINARY or probs.arg is not BinaryOp.DIV:
            continue
        e, den = probs.srcs
        row_sum = _under(den)
        if (_one_reduce(row_sum) is None or row_sum.arg[0] is not ReduceOp.SUM or _under(row_sum.srcs[0]) is not e
                or e.op is not Op.UNARY or e.arg is not UnaryOp.EXP):
            continue
        sub = e.srcs[0]
        if sub.op is not Op.BINARY or sub.arg is not BinaryOp.SUB:
            continue
        scores, mx = sub.srcs
        row_max = _under(mx)
        if (_one_reduce(row_max) is None or row_max.arg[0] is not ReduceOp.MAX or row_max.srcs[0] is not scores
                or row_max.arg[1] != row_sum.arg[1] or len(scores.shape) != len(row_max.shape)):
            continue
        qk = _scores_reduce(scores)
        if qk is None or _one_reduce(qk) is None or qk.arg[0] is not ReduceOp.SUM:
            continue
        qk_src = qk.srcs[0]
        if qk_src.op is not Op.BINARY or qk_src.arg is not BinaryOp.MUL:
            continue
        keys = scores.shape[row_max.arg[1][0]]
        head = qk_src.shape[qk.arg[1][0]]
        head_v = prod(out.shape) * keys // max(prod(scores.shape), 1)
        if head > MAX_HEAD or head_v > MAX_HEAD or head_v < 1:
            continue
        return Attention(out, probs, e, row_max, row_sum, scores, qk)
    return None


def _scores_reduce(scores: Node) -> Node | None:
    """The one reduce the scores are computed from through elementwise and movement ops (none other)."""
    found: list[Node] = []
    stack, seen = [scores], set()
    while stack:
        n = stack.pop()
        if n.id in seen or n.op is Op.LEAF or n.op is Op.CONST:
            continue
        seen.add(n.id)
        if n.op is Op.REDUCE:
            found.append(n)
            continue
        if n.op not in SCORING:
            return None
        stack.extend(n.srcs)
    return found[0] if len(found) == 1 else None
