"""Driver side: recognises the products of an attention's backward pass that flash attention's backward
computes without storing anything T x T. Each is a sum over one axis (the keys, or the queries) of weights
times an operand, where the weights are computed, through elementwise and movement ops, from one or two
contractions over a short head dim and from the recomputed probabilities (exp2 of a contraction's scores,
graph/recompute.py's stand-in): dV = p^T @ dO, dQ = dS @ K and dK = dS^T @ Q, with dS = p * (dO @ V^T - D).
Takes a reduce node; gives a `ChainedProduct` naming its parts, else None. Only structure, dtypes and sizes
are checked here (half types, head dims in whole 16s up to MAX_HEAD: what the tensor-core kernel of
codegen/attention_grad.py takes); the kernelizer then stores none of the weights' nodes (fuse/attention_fusion.py),
so each product's kernel recomputes the scores, p, dO @ V^T and dS from q, k, v, dO and the row vectors
(lse, D) in registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Node, Op, ReduceOp, UnaryOp, broadcast_product

MAX_HEAD = 128  # head dims (of the contractions, and of the operand) the kernel keeps in registers
MOVES = (Op.RESHAPE, Op.PERMUTE, Op.EXPAND)
WEIGHT_OPS = (Op.UNARY, Op.BINARY, Op.CAST, Op.WHERE, *MOVES)


@dataclass(frozen=True)
class ChainedProduct:
    out: Node  # the sum over the loop axis (keys or queries) of weights * operand
    weights: Node  # the product's factor computed from the contractions (its views stripped)
    operand: Node  # the other factor, as the product reads it
    contractions: tuple[Node, ...]  # the sums over the head dim the weights recompute (q @ k^T, dO @ v^T)
    nodes: frozenset[int]  # ids of what the kernel computes and never stores: from the product down to the
    # contractions' products, inclusive (not the contractions' operands, nor what the weights read under a broadcast)

    @property
    def heads(self) -> tuple[int, ...]:
        """The head dims of its loop operands: each contraction's, then the operand's (what the weights are
        broadcast over in the product)."""
        return (*map(_head, self.contractions), self.out.srcs[0].size // max(self.weights.size, 1))


def _strip(n: Node) -> Node:
    while n.op in MOVES:
        n = n.srcs[0]
    return n


def _head(n: Node) -> int:
    return n.srcs[0].shape[n.arg[1][0]]


def _fits(n: Node, dtype) -> bool:
    """A half-type value of one dtype with a head dim in whole 16s up to MAX_HEAD."""
    return n.dtype is dtype and _head_ok(_head(n))


def _head_ok(size: int) -> bool:
    return size % 16 == 0 and 16 <= size <= MAX_HEAD


def find(out: Node) -> ChainedProduct | None:
    if (out.op is not Op.REDUCE or out.arg[0] is not ReduceOp.SUM or len(out.arg[1]) != 1
            or not out.dtype.is_half or not broadcast_product(out.srcs[0])):
        return None
    product = out.srcs[0]
    for w, operand in (product.srcs, reversed(product.srcs)):
        found = _weights(_strip(w))
        if found is None:
            continue
        contractions, nodes = found
        head_n = product.size // max(_strip(w).size, 1)  # what the weights are broadcast over: the operand's head dim
        if not _head_ok(head_n) or _strip(operand).dtype is not out.dtype:
            continue
        if not all(_fits(c, out.dtype) and all(_strip(x).dtype is out.dtype for x in c.srcs[0].srcs)
                   for c in contractions):
            continue
        views, n = {product.id}, w
        while n.op in MOVES:
            views.add(n.id)
            n = n.srcs[0]
        return ChainedProduct(out, _strip(w), operand, contractions, frozenset(nodes | views))
    return None


def recomputes(x: Node, axes: tuple[int, ...], shape: tuple[int, ...], head_multiple: int) -> bool:
    """Whether the sum of `x` over `axes` (to `shape`) is a product that the kernelizer runs as one kernel
    recomputing its weights at head dims in multiples of `head_multiple` (the session's Limits.grad_heads). Split-K
    leaves such a sum whole (ir.WHOLE_SUMS): the kernel loops over the whole length, while split into partial
    GEMMs the product would read its weights (p, dS: T x T) stored."""
    if not x.dtype.is_half:
        return False
    g = find(Node(Op.REDUCE, (x,), (ReduceOp.SUM, axes), shape, x.dtype))
    return g is not None and all(h % head_multiple == 0 for h in g.heads)


def _weights(top: Node) -> tuple[tuple[Node, ...], set[int]] | None:
    """The contractions `top` is computed from (1 or 2, reached with no broadcast between) and the ids of the
    nodes down to them and their products, where `top` reaches them through WEIGHT_OPS only and one of those
    nodes is an exp2 of something computed from them; else None. What lies under a broadcast (a row vector:
    lse, D), and inputs and constants, are read."""
    contractions: dict[int, Node] = {}
    reaches: dict[int, bool] = {}  # node id -> whether it is computed from a contraction (not under a broadcast)
    exp2 = False
    stack: list[tuple[Node, bool]] = [(top, False)]
    while stack:
        n, ready = stack.pop()
        if n.id in reaches and not ready:
            continue
        if n.op is Op.REDUCE:
            if n.arg[0] is not ReduceOp.SUM or len(n.arg[1]) != 1 or not broadcast_product(n.srcs[0]):
                return None
            contractions[n.id] = n
            reaches[n.id] = True
            continue
        if n.op in (Op.LEAF, Op.CONST) or (n.op is Op.EXPAND and n.size > n.srcs[0].size and n is not top):
            reaches[n.id] = False  # read as it is (a broadcast row vector, a mask, a scale)
            continue
        if n.op not in WEIGHT_OPS:
            return None
        if not ready:
            stack.append((n, True))
            stack.extend((s, False) for s in n.srcs if s.id not in reaches)
            continue
        reaches[n.id] = any(reaches[s.id] for s in n.srcs)
        exp2 = exp2 or (reaches[n.id] and n.op is Op.UNARY and n.arg is UnaryOp.EXP2)
    if not exp2 or not reaches.get(top.id) or not 1 <= len(contractions) <= 2:
        return None
    nodes = {i for i, r in reaches.items() if r} | {c.srcs[0].id for c in contractions.values()}
    return tuple(sorted(contractions.values(), key=lambda c: c.id)), nodes
