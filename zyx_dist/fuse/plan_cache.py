"""Driver side: the cache that lets a repeated graph (a training step, a benchmark loop) skip the
kernelizer and the renderer. Takes the nodes to realize; gives their kernels and rendered programs, from
the cache when a graph of the same structure was planned before. The key is the graph's structure from
the targets down to the inputs (ops, arguments, shapes, dtypes, pins, which sources feed which node);
the kernelizer's decisions depend on nothing else, so a hit maps the stored kernels (node positions in
that structure) onto the new nodes. Placement is not cached: the scheduler still places every kernel,
since where the inputs live and how full the devices are change from run to run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from ..graph.ir import Node, Op
from .kernelize import DEFAULT_LIMITS, Kernel, Limits, kernelize

MAX_ENTRIES = 256


def structure(targets: list[Node]) -> tuple[tuple, list[Node]]:
    """(the key, the nodes in key order): a depth-first walk, producers first, that stops at leaves. It
    runs on every realize, so it is written for speed: a node stays on the stack until its sources are
    indexed, and leaves have no sources to visit."""
    index: dict[Node, int] = {}  # nodes hash by identity
    order: list[Node] = []
    rows: list[tuple] = []
    leaf, cast, const, pad = Op.LEAF, Op.CAST, Op.CONST, Op.PAD
    stack = targets[::-1]
    pop, push, emit, add = stack.pop, stack.append, rows.append, order.append
    while stack:
        n = stack[-1]
        if n in index:
            pop()
            continue
        srcs = n.srcs
        waiting = False
        for s in reversed(srcs):
            if s not in index:
                push(s)
                waiting = True
        if waiting:
            continue
        pop()
        index[n] = len(order)
        add(n)
        op = n.op
        if op is leaf:
            emit((n.shape, n.dtype.name, n.device))
        else:  # repr tells -0.0 from 0.0 and matches NaN with NaN: values are baked in
            arg = n.arg.name if op is cast else repr(n.arg) if op is const or op is pad else n.arg
            emit((op, arg, n.shape, n.dtype.name, n.device, tuple([index[s] for s in srcs])))
    return (tuple(rows), tuple([index[t] for t in targets])), order


class PlanCache:
    """Plans by graph structure, for one session (whose devices set the kernels' `limits`)."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.entries: OrderedDict[tuple, list[tuple]] = OrderedDict()
        self.hits = 0

    def kernels(self, targets: list[Node], render: Callable[[Kernel], dict]) -> tuple[list[Kernel], list[dict]]:
        """The kernels for `targets` (unrealized, non-empty nodes) and each kernel's programs."""
        try:
            key, order = structure(targets)
            entry = self.entries.get(key)  # hashes the key: no separate hash(key) first
        except TypeError:  # an argument that cannot be hashed: plan without the cache
            kernels = kernelize(targets, self.limits)
            return kernels, [render(k) for k in kernels]
        if entry is None:
            kernels = kernelize(targets, self.limits)
            pos = {n.id: i for i, n in enumerate(order)}
            programs = [render(k) for k in kernels]
            entry = [(tuple(pos[o.id] for o in k.outputs), tuple(pos[x.id] for x in k.inputs), k.device,
                      tuple(pos[x.id] for x in k.frees_after), k.row, p) for k, p in zip(kernels, programs)]
            self.entries[key] = entry
            if len(self.entries) > MAX_ENTRIES:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(key)
            self.hits += 1
        kernels = [Kernel([order[i] for i in outs], [order[i] for i in ins], dev, [order[i] for i in frees], row)
                   for outs, ins, dev, frees, row, _ in entry]
        return kernels, [p for *_, p in entry]
