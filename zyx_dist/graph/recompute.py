"""Driver side, pure: the probabilities of an attention, recomputed for its backward pass (the way flash
attention's backward does) instead of read back. Takes the nodes of a forward graph, in topological order;
gives, per attention whose probabilities p = softmax(scores) only `p @ v` reads (graph/attention.py
recognises it), nodes that stand in for p and for its views in the gradient: exp(scores' - lse) (in base 2), where
scores' is a copy of the scores down to and including q @ k^T (so no kernel shares it with the forward's)
and lse = row max + log(row sum), the forward's own row statistics. The kernelizer then keeps the forward in
one attention kernel, which also stores lse (a float32 per row: fuse/attention_fusion.py), and the
backward's GEMM of q @ k^T computes p from it in its epilogue. Without this, the backward reads p, so the
forward stores the T x T scores and probabilities and runs the scores, the softmax and p @ v as three
kernels.
"""

from __future__ import annotations

from . import ir
from .attention import MOVES, Attention
from .attention import find as find_attention
from .ir import Node, Op


def attention_stand_ins(order: list[Node], views: dict[Node, tuple]) -> dict[int, Node]:
    """Node id -> its stand-in, for each softmax result in `order` that is an attention's probabilities that
    nothing else reads, of scores that nothing else reads, and for the views between it and p @ v's product.
    `order` and `views` are the gradient's walk: each node's (op, arg, sources) as it sees them, (None, (kind,
    input, axes), (input,)) for a composite with a rule of its own, whose only source is its input."""
    users: dict[int, list[Node]] | None = None
    out: dict[int, Node] = {}
    for p in order:
        op, rule, _ = views[p]
        if op is not None or rule[0] != "softmax":
            continue
        if users is None:  # readers as the walk sees them
            users = {}
            for n in order:
                for s in dict.fromkeys(views[n][2]):
                    users.setdefault(s.id, []).append(n)
        found = _only_product(p, users)
        if found is None:
            continue
        chain, o = found
        pattern = find_attention(o)
        # (scores that something else reads are stored: the forward is no one kernel, and p is read back)
        if pattern is None or pattern.probs is not p or len(users.get(pattern.scores.id, ())) != 1:
            continue
        cur = _recomputed(pattern)
        out[p.id] = cur
        for view in chain:  # lowest first
            cur = Node(view.op, (cur,), view.arg, view.shape, view.dtype)
            out[view.id] = cur
    return out


def _only_product(p: Node, users: dict[int, list[Node]]) -> tuple[list[Node], Node] | None:
    """The views from p up to the one product that reads them, and the sum over that product (p @ v), where
    p has no other reader."""
    chain: list[Node] = []
    n = p
    while True:
        up = users.get(n.id, ())
        if len(up) != 1:
            return None
        n = up[0]
        if n.op not in MOVES:
            break
        chain.append(n)
    if n.op is not Op.BINARY:
        return None
    sums = users.get(n.id, ())
    if len(sums) != 1 or sums[0].op is not Op.REDUCE:
        return None
    return chain, sums[0]


LOG2E = 1.4426950408889634


def _recomputed(a: Attention) -> Node:
    """exp2(scores' * log2(e) - lse * log2(e)), in p's dtype: base 2, as flash attention computes it (one
    multiply-add and the hardware's exp2 per score, where exp's range reduction costs a GEMM epilogue over every
    score ~50% more time on an H100); in float32 for the half types (their row sums are rounded)."""
    p, x = a.probs, a.scores
    wide = ir.float32 if x.dtype.is_half else x.dtype
    m, s = (ir.cast(t, wide) if t.dtype is not wide else t for t in (a.row_max, a.row_sum))
    lse = ir.add(m, ir.unary(ir.UnaryOp.LOG, s))
    lse2 = ir.mul(lse, ir.full_like(LOG2E, lse))
    scores = _copy_to_product(x, a.qk)
    scores = ir.cast(scores, wide) if scores.dtype is not wide else scores
    e = ir.unary(ir.UnaryOp.EXP2, ir.sub(ir.mul(scores, ir.full_like(LOG2E, scores)), ir.expand(lse2, x.shape)))
    return ir.cast(e, p.dtype) if e.dtype is not p.dtype else e


def _copy_to_product(top: Node, qk: Node) -> Node:
    """A copy of the nodes from `top` down to the reduce `qk` and its product that reach qk (what else they
    read, a mask or a scale, is shared), in topological order over an explicit stack."""
    reaches: dict[int, bool] = {qk.id: True}
    nodes: dict[int, Node] = {}
    stack: list[tuple[Node, bool]] = [(top, False)]
    while stack:
        n, ready = stack.pop()
        if n.id in reaches and not ready:
            continue
        if not ready:
            if not n.srcs or n.op is Op.REDUCE:
                reaches[n.id] = False
                continue
            stack.append((n, True))
            stack.extend((s, False) for s in n.srcs if s.id not in reaches)
            continue
        reaches[n.id] = any(reaches[s.id] for s in n.srcs)
        nodes[n.id] = n
    product = qk.srcs[0]
    copies = {product.id: Node(product.op, product.srcs, product.arg, product.shape, product.dtype)}
    copies[qk.id] = Node(qk.op, (copies[product.id],), qk.arg, qk.shape, qk.dtype)
    for n in sorted((n for n in nodes.values() if reaches[n.id]), key=lambda n: n.id):
        copies[n.id] = ir.noted(Node(n.op, tuple(copies.get(s.id, s) for s in n.srcs), n.arg, n.shape, n.dtype))
    return copies[top.id]
