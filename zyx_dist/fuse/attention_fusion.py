"""Driver side: the kernelizer's attention decisions (fuse/kernelize.py calls them). Takes the graph's nodes in
topological order, the requested ones and each node's readers; gives the nodes of each attention pattern
(graph/attention.py) that one fused kernel computes, never stored, and the extra outputs that kernel stores beside
its own: elementwise functions of the pattern's row max and row sum that other kernels read (a backward pass's
log-sum-exp, graph/recompute.py), and, per pattern, which stored node's kernel computes it; and the nodes that
the kernels of the attention's backward products (graph/attention_grad.py) recompute rather than read.
"""

from __future__ import annotations

from ..graph.attention import Attention
from ..graph.attention import find as find_attention
from ..graph.attention_grad import ChainedProduct
from ..graph.attention_grad import find as find_attention_grad
from ..graph.ir import Node, Op, view_base


def fused_attention(order: list[Node], targets: set[int],
                    users: dict[int, list[Node]]) -> tuple[set[int], dict[int, list[Node]]]:
    """Nodes of attention patterns (see graph/attention.py) that one kernel computes: each pattern whose
    inner nodes are neither requested nor pinned nor read by anything outside the pattern, except its row max
    and row sum, which the kernel may also hand out through row statistics (`_row_statistics`). Gives those
    nodes and, per pattern that has them, its statistics' outputs, keyed by the pattern's final reduce."""
    by_id = {n.id: n for n in order}
    fused: set[int] = set()
    side: dict[int, list[Node]] = {}
    for n in order:
        if n.op is not Op.REDUCE:
            continue
        pattern = find_attention(n)
        if pattern is None:
            continue
        inner = pattern.internal() - {n.id}
        if any(i in targets or by_id[i].device is not None for i in inner if i in by_id):
            continue
        stats = _row_statistics(pattern, inner | {n.id}, users, targets)
        if stats is None:
            continue
        around, outputs = stats
        # a view of what the pattern reads (v broadcast over the rows) may have readers of its own: it computes
        # nothing
        if any(not {u.id for u in users.get(i, ())} <= inner | {n.id} | around for i in inner
               if i in by_id and view_base(by_id[i]).id in inner):
            continue
        fused |= inner | around
        if outputs:
            side[n.id] = outputs
    return fused, side


STAT_OPS = (Op.UNARY, Op.BINARY, Op.CAST)


def _row_statistics(pattern: Attention, inner: set[int], users: dict[int, list[Node]],
                    targets: set[int]) -> tuple[set[int], list[Node]] | None:
    """What reads an attention's row max and row sum from outside it: elementwise functions of those two and
    of constants, of their shape (a backward pass's log-sum-exp, m + log(l), from which it recomputes the
    probabilities), which the attention kernel computes from its own running max and sum and stores beside its
    output. Gives the ids of those nodes and the ones among them read further on (the extra outputs), or
    None where something else reads the max or the sum (then the pattern is not fused)."""
    stats = (pattern.row_max, pattern.row_sum)
    shape = pattern.row_max.shape
    found: dict[int, Node] = {}
    queue = list(stats)
    while queue:
        x = queue.pop()
        for u in users.get(x.id, ()):
            if u.id not in inner and u.id not in found and u.op in STAT_OPS and u.shape == shape and u.device is None:
                found[u.id] = u
                queue.append(u)
    side: set[int] = set()
    known = {s.id for s in stats}
    for u in sorted(found.values(), key=lambda x: x.id):  # ids follow creation: sources first
        if all(s.id in known or s.id in side or _constant(s) for s in u.srcs):
            side.add(u.id)
    for x in stats:
        if any(u.id not in inner and u.id not in side for u in users.get(x.id, ())):
            return None
    outputs = [found[i] for i in sorted(side)
               if i in targets or any(u.id not in side for u in users.get(i, ()))]
    return side, outputs


def _constant(n: Node) -> bool:
    return view_base(n).op is Op.CONST


def computing_kernel(n: Node, stored: set[int], users: dict[int, list[Node]]) -> Node:
    """The first stored node (by id) whose kernel computes `n`: n itself, or one above it through unstored
    consumers (an attention's output has some: the backward pass reads it)."""
    if n.id in stored:
        return n
    found: list[Node] = []
    seen, stack = {n.id}, [n]
    while stack:
        for u in users.get(stack.pop().id, ()):
            if u.id in seen:
                continue
            seen.add(u.id)
            (found if u.id in stored else stack).append(u)
    return min(found, key=lambda x: x.id)


def fused_attention_grads(order: list[Node], targets: set[int], users: dict[int, list[Node]],
                          stored: set[int], head_multiple: int) -> set[int]:
    """Nodes that the kernels of an attention's backward products (graph/attention_grad.py: dV, dQ, dK) compute
    themselves rather than read, with `stored` as the kernelizer decided it otherwise: each product's weights
    (the recomputed scores and probabilities, dO @ V^T, dS) down to the contractions. A product is kept only
    where nothing else reads those nodes (nor requests or pins them), and what its contractions and its operand
    read is stored, an input, or computed without a reduce (else each kernel would run that reduce per
    element), and whose head dims are multiples of `head_multiple`."""
    found = [g for n in order if n.op is Op.REDUCE and (g := find_attention_grad(n)) is not None
             and all(h % head_multiple == 0 for h in g.heads)]
    by_id = {n.id: n for n in order}
    while True:  # dropping a product can leave another's nodes with an outside reader
        inner = set().union(*(g.nodes for g in found))
        keep = [g for g in found if _self_contained(g, inner, targets, users, stored, by_id)]
        if len(keep) == len(found):
            return inner
        found = keep


def _self_contained(g: ChainedProduct, inner: set[int], targets: set[int], users: dict[int, list[Node]], stored: set[int],
                    by_id: dict[int, Node]) -> bool:
    for i in g.nodes:
        if (i in targets or by_id[i].device is not None
                or any(u.id not in inner and u is not g.out for u in users.get(i, ()))):
            return False
    reads = [g.operand, *(x for c in g.contractions for x in c.srcs[0].srcs)]
    return all(_cheap(x, stored, inner) for x in reads)


def _cheap(n: Node, stored: set[int], inner: set[int]) -> bool:
    """Whether `n` is stored, an input, or computed (where not stored) without a reduce."""
    stack, seen = [n], set()
    while stack:
        x = stack.pop()
        if x.id in seen or x.id in stored or x.op in (Op.LEAF, Op.CONST):
            continue
        seen.add(x.id)
        if x.op is Op.REDUCE or x.id in inner or x.device is not None:
            return False
        stack.extend(x.srcs)
    return True
