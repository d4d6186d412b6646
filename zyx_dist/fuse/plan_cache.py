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
from operator import attrgetter

from ..graph.ir import Node, Op
from .kernelize import DEFAULT_LIMITS, Kernel, Limits, kernelize

MAX_ENTRIES = 256
_ID = attrgetter("id")  # a node's creation number, the sort key of `structure`


def structure(targets: list[Node]) -> tuple[tuple, list[Node]]:
    """(the key, the nodes in key order). The key is a row per node reachable from `targets` (a leaf's
    shape, dtype and pin; any other node's op, argument, shape, dtype, pin and the positions of its
    sources) and the targets' positions: everything the kernelizer's decisions depend on. It runs on
    every realize, so it is written for speed: the reachable nodes are collected by a set-based walk and
    put in creation (id) order, which is producers first because a node is made after its sources, and
    the rows are emitted in one pass over that order. A node that a pass rewired to a newer source
    (graph/shard.py rewrites targets in place, lineage.restore recomputes a lost one) breaks that order:
    its source is not indexed yet, and the key comes from the depth-first walk instead. Either way the
    key describes the graph exactly, so equal keys are equal structures; the same structure built in
    another order (or once through each walk) gets another key, which costs a replan, never a wrong
    result."""
    seen: set[Node] = set()  # nodes hash by identity
    nodes: list[Node] = []
    stack = list(targets)
    pop, extend, mark, keep = stack.pop, stack.extend, seen.add, nodes.append
    while stack:
        n = pop()
        if n in seen:
            continue
        mark(n)
        keep(n)
        srcs = n.srcs
        if srcs:
            extend(srcs)
    nodes.sort(key=_ID)
    index: dict[Node, int] = {}
    rows: list[tuple] = []
    emit = rows.append
    leaf, cast, const, pad = Op.LEAF, Op.CAST, Op.CONST, Op.PAD
    try:
        for i, n in enumerate(nodes):
            index[n] = i
            op = n.op
            if op is leaf:
                emit((n.shape, n.dtype.name, n.device))
                continue
            srcs = n.srcs
            k = len(srcs)  # the common arities without a list
            if k == 1:
                ix: tuple = (index[srcs[0]],)
            elif k == 2:
                ix = (index[srcs[0]], index[srcs[1]])
            else:
                ix = tuple([index[s] for s in srcs])
            # repr tells -0.0 from 0.0 and matches NaN with NaN: values are baked in
            arg = n.arg.name if op is cast else repr(n.arg) if op is const or op is pad else n.arg
            emit((op, arg, n.shape, n.dtype.name, n.device, ix))
    except KeyError:  # a source newer than its reader: not topological
        return _structure_dfs(targets)
    return (tuple(rows), tuple([index[t] for t in targets])), nodes


def _structure_dfs(targets: list[Node]) -> tuple[tuple, list[Node]]:
    """`structure` by a depth-first walk, producers first, that stops at leaves (for graphs whose creation
    order is not topological): a node stays on the stack until its sources are indexed."""
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


class _Key:
    """A structure key with its hash computed once: a realize hashes its key once, and the cache's later
    lookups of the same entry (recency, templates) compare the stored key by identity."""

    __slots__ = ("hash", "rows")

    def __init__(self, rows: tuple) -> None:
        self.rows, self.hash = rows, hash(rows)  # TypeError for an argument that cannot be hashed

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, _Key) and self.hash == other.hash and self.rows == other.rows)


class Entry(list):
    """One cached structure: its kernels (node positions and programs), and beside them the plan templates
    made for it (sched/template.py; input devices -> template), which leave the cache with it."""

    __slots__ = ("key", "templates")


class PlanCache:
    """Plans by graph structure, for one session (whose devices set the kernels' `limits`)."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.entries: OrderedDict[_Key, Entry] = OrderedDict()
        self.hits = 0
        self.dropped: list = []  # templates of evicted entries (their workers may forget them)

    def kernels(self, targets: list[Node], render: Callable[[list[Kernel]], list[dict]],
                affinity: dict[int, str] | None = None) -> tuple[list[Kernel], list[dict]]:
        """The kernels for `targets` (unrealized, non-empty nodes) and each kernel's programs; `affinity`
        as `kernelize` takes it (graph/shard.py's per-shard devices)."""
        return self.kernels_at(self.lookup(targets, affinity), targets, render, affinity)

    # ---- the lookup, apart from kernelizing, so the session can try a plan template first ----

    def lookup(self, targets: list[Node], affinity: dict[int, str] | None = None
               ) -> tuple[_Key, list[Node], Entry | None] | None:
        """(key, nodes in key order, the cached entry or None) of `targets`' structure; None when some
        argument cannot be hashed. The key is hashed here, once. `affinity` is part of the key: it changes
        the kernels' grouping and devices."""
        rows, order = structure(targets)
        if affinity:
            rows = (rows, tuple((i, affinity[n.id]) for i, n in enumerate(order) if n.id in affinity))
        try:
            key = _Key(rows)
        except TypeError:
            return None
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(entry.key)  # the stored key: found by identity, not compared again
        return key, order, entry

    def kernels_at(self, found: tuple[_Key, list[Node], Entry | None] | None, targets: list[Node],
                   render: Callable[[list[Kernel]], list[dict]], affinity: dict[int, str] | None = None
                   ) -> tuple[list[Kernel], list[dict]]:
        """`kernels` for a structure already looked up (`found` from `lookup`, with the same `affinity`)."""
        if found is None:  # an argument that cannot be hashed: plan without the cache
            kernels = kernelize(targets, self.limits, affinity)
            return kernels, render(kernels)
        key, order, entry = found
        if entry is None:
            kernels = kernelize(targets, self.limits, affinity)
            pos = {n.id: i for i, n in enumerate(order)}
            programs = render(kernels)
            entry = Entry((tuple(pos[o.id] for o in k.outputs), tuple(pos[x.id] for x in k.inputs), k.device,
                           tuple(pos[x.id] for x in k.frees_after), k.row, p) for k, p in zip(kernels, programs))
            entry.key, entry.templates = key, {}
            self.entries[key] = entry
            if len(self.entries) > MAX_ENTRIES:
                _, old = self.entries.popitem(last=False)
                self.dropped.extend(old.templates.values())
        else:
            self.hits += 1
        kernels = [Kernel([order[i] for i in outs], [order[i] for i in ins], dev, [order[i] for i in frees], row)
                   for outs, ins, dev, frees, row, _ in entry]
        return kernels, [p for *_, p in entry]
