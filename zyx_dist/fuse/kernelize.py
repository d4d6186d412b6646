"""Driver side: the kernelizer, a port of zyx's fusion decisions (seed/kernelize.rs) onto our graph.
Takes the nodes to realize; gives kernels in launch order, each a set of same-shape output nodes
computed from input nodes (realized or host leaves, or the outputs of earlier kernels), and the point
after which each intermediate can be freed.

The decisions, as in zyx: everything fuses by default; elementwise producers shared by several
consumers are recomputed; a node is stored (ends a kernel) when it is requested, when it is pinned to
a device, when a reduce precedes it and it is broadcast by an expand (so a row max is not recomputed
per element) or reduced again (so the inner reduce runs in parallel rather than inside the outer
loop), and when a reduce precedes it and more than one kernel needs it. One exception keeps a row in
one kernel: a per-row reduce broadcast back along trailing dims (softmax's max and sum, layer norm's
mean) is fused into its consumers, which the renderer runs one work-group per row. Requested nodes of
the same shape that do not depend on each other share one multi-output kernel, so `zd.realize(a, b)` computes
their common subgraph once. Movement ops never make a kernel of their own: the renderer turns them
into index arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph.ir import Node, Op, prod, toposort
from .attention import find as find_attention


@dataclass
class Kernel:
    outputs: list[Node]
    inputs: list[Node]
    device: str | None = None
    # intermediates (outputs of earlier kernels, not requested) that no later kernel reads
    frees_after: list[Node] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.outputs[0].shape


def is_input(n: Node) -> bool:
    """Nodes a kernel loads rather than computes: realized or host leaves."""
    return n.op is Op.LEAF


def _expands(n: Node) -> bool:
    return n.op is Op.EXPAND and prod(n.shape) > prod(n.srcs[0].shape)


ROW_MAX = 1 << 15  # the longest row a softmax-like kernel keeps in one work-group
ROW_OPS = (Op.UNARY, Op.BINARY, Op.CAST, Op.WHERE)  # ops that keep a row's layout


def row_suffix(n: Node) -> tuple[int, ...] | None:
    """The row of an expand that broadcasts a value along trailing dims only (a per-row max or sum
    brought back to the row's shape), when the row is at most ROW_MAX long: its trailing dims."""
    src = n.srcs[0].shape
    k = len(n.shape)
    while k > 0 and src[k - 1] == 1:
        k -= 1
    if any(a != b for a, b in zip(src[:k], n.shape[:k])) or prod(n.shape[k:]) <= 1 or prod(n.shape[k:]) > ROW_MAX:
        return None
    return n.shape[k:]


VIEWS = (Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.FLIP, Op.PAD)  # index arithmetic only


def _view_base(n: Node) -> Node:
    """The node under a chain of movement ops: storing it serves every view of it, read in place (so
    `q @ k.mT` on a permuted, sliced qkv stores qkv once, not a copy per view)."""
    while n.op in VIEWS:
        n = n.srcs[0]
    return n


def _suffix_axes(shape: tuple[int, ...], suffix: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(range(len(shape) - len(suffix), len(shape)))


def kernelize(targets: list[Node], affinity: dict[int, str] | None = None) -> list[Kernel]:
    """`affinity` (node id -> device, from graph/shard.py) places the kernels of those nodes on that
    device as a pin would, without storing anything more."""
    targets = list({t.id: t for t in targets if not is_input(t) and t.size > 0}.values())
    if not targets:
        return []
    order = toposort(targets, stop=is_input)
    stored: set[int] = {t.id for t in targets}
    stored |= {n.id for n in order if n.device is not None and not is_input(n)}

    # Expand after a reduce: store what is expanded (zyx's is_preceded_by_reduce), in one bottom-up pass,
    # except a row broadcast (see `row_suffix`): softmax-like kernels then read each row once.
    has_reduce: dict[int, bool] = {}
    row: dict[int, tuple[int, ...] | None] = {}  # the row (trailing dims) a node depends on through a row broadcast
    origin: dict[int, list[Node]] = {}  # of a node with a row: the nodes whose row broadcasts give it that row
    for n in order:
        row[n.id] = None
        if is_input(n) or n.op is Op.CONST:
            has_reduce[n.id] = False
            continue
        live = [s for s in n.srcs if s.id not in stored]
        rows = {row[s.id] for s in live} - {None}
        src = n.srcs[0]
        if _expands(n) and has_reduce[src.id] and src.id not in stored:
            suffix = row_suffix(n)
            if suffix is None or row[src.id] is not None:
                _store_base(src, stored, has_reduce)  # not recomputed per element
            else:
                row[n.id], origin[n.id] = suffix, [src]
        elif n.op is Op.REDUCE and has_reduce[src.id] and src.id not in stored:
            if row[src.id] is not None and n.arg[1] != _suffix_axes(src.shape, row[src.id]):
                # a row broadcast reduced along other axes (the backward of a matmul: the output gradient
                # broadcast over k, summed over m or n): the broadcast values are stored, not the product
                for o in origin[src.id]:
                    _store_base(o, stored, has_reduce)
                if _bears_reduce(src, stored):
                    _store_base(src, stored, has_reduce)
            elif row[src.id] is None:
                # the inner reduces run in parallel rather than inside the outer loop: they are stored (the
                # elementwise ops between them and this reduce are recomputed in its loop)
                stored |= _inner_reduces(src, stored)
        elif rows and (len(rows) > 1 or n.op not in ROW_OPS):
            stored.update(s.id for s in live if row[s.id] is not None)  # rows that do not line up: stored
        elif rows:
            row[n.id] = rows.pop()
            origin[n.id] = [o for s in live if row[s.id] is not None for o in origin[s.id]]
        has_reduce[n.id] = n.op is Op.REDUCE or any(has_reduce[s.id] and s.id not in stored for s in n.srcs)

    # A reduce-bearing node needed by several kernels is stored once; repeat until no new store appears.
    # Only the lowest such nodes of a chain are stored in one round: once a reduce's result is stored, the
    # elementwise ops above it are cheap to recompute in each kernel that needs them (storing them all
    # would make one kernel per op of a training step's forward pass, which its backward reads again).
    by_id = {n.id: n for n in order}
    while True:
        groups = _group(order, stored, affinity)
        reach = _reaching_groups(order, stored, groups)
        bearing = _reduce_bearing(order, stored)
        wanted = {n.id for n in order if n.id not in stored and bearing[n.id] and len(reach.get(n.id, ())) > 1}
        extra = {_view_base(by_id[i]).id for i in wanted if not any(s.id in wanted for s in by_id[i].srcs)} - stored
        if not extra:
            break
        stored |= extra
    fused = _attention(order, stored, {t.id for t in targets})
    if fused:  # attention in one kernel: its scores, row max and sum are not stored
        stored -= fused
        groups = _group(order, stored, affinity)
    return _kernels(order, stored, groups, {t.id for t in targets}, affinity or {})


def _attention(order: list[Node], stored: set[int], targets: set[int]) -> set[int]:
    """Nodes of attention patterns (see fuse/attention.py) that one kernel computes: each pattern whose
    inner nodes are neither requested nor pinned nor read by anything outside the pattern."""
    consumers: dict[int, set[int]] = {}
    for n in order:
        for x in n.srcs:
            consumers.setdefault(x.id, set()).add(n.id)
    by_id = {n.id: n for n in order}
    fused: set[int] = set()
    for n in order:
        if n.op is not Op.REDUCE:
            continue
        pattern = find_attention(n)
        if pattern is None:
            continue
        inner = pattern.internal() - {n.id}
        if any(i in targets or by_id[i].device is not None or not consumers.get(i, set()) <= inner | {n.id}
               for i in inner if i in by_id):
            continue
        fused |= inner
    return fused


def _store_base(n: Node, stored: set[int], has_reduce: dict[int, bool]) -> None:
    """Store the node under n's movement ops (n itself when it computes); the views between no longer
    carry a reduce into their consumers."""
    while n.op in VIEWS and not is_input(n.srcs[0]):
        has_reduce[n.id] = False
        n = n.srcs[0]
    if not is_input(n):
        stored.add(n.id)


def _inner_reduces(root: Node, stored: set[int]) -> set[int]:
    """The reduces computing `root` runs, nearest first (not those below another one)."""
    out: set[int] = set()
    stack, seen = [root], set()
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.op is Op.REDUCE:
            out.add(n.id)
            continue
        stack.extend(s for s in n.srcs if s.id not in stored and not is_input(s))
    return out


def _bears_reduce(root: Node, stored: set[int]) -> bool:
    """Does computing `root` run a reduce that is not stored?"""
    return bool(_inner_reduces(root, stored))


def _reduce_bearing(order: list[Node], stored: set[int]) -> dict[int, bool]:
    """For each node: does computing it run a reduce (one not stored below it)?"""
    out: dict[int, bool] = {}
    for n in order:
        out[n.id] = n.op is Op.REDUCE or (not is_input(n) and any(out[s.id] and s.id not in stored for s in n.srcs))
    return out


def _group(order: list[Node], stored: set[int], affinity: dict[int, str] | None = None) -> dict[int, int]:
    """Assign stored nodes to kernels. Two share a kernel when they have the same shape and device pin,
    neither depends on the other, and they share computed work (independent outputs stay separate
    kernels, so the scheduler can run them on different devices)."""
    deps: dict[int, frozenset[int]] = {}  # stored nodes each node depends on, transitively
    for n in order:
        d: set[int] = set()
        for s in n.srcs:
            d |= deps[s.id]
            if s.id in stored:
                d.add(s.id)
        deps[n.id] = frozenset(d)
    group_of: dict[int, int] = {}
    members: dict[int, list[Node]] = {}
    needs: dict[int, set[int]] = {}  # group -> groups it reads from directly

    def closure(starts: set[int]) -> set[int]:
        """The groups reachable from `starts` (themselves included) along `needs`: one walk per stored
        node, not one per pair of groups (a backward graph has hundreds of stored ancestors per node)."""
        seen = set(starts)
        stack = list(starts)
        while stack:
            for g in needs[stack.pop()]:
                if g not in seen:
                    seen.add(g)
                    stack.append(g)
        return seen

    owners: dict[int, set[int]] = {}  # computed (not stored, not input) node -> groups whose kernels evaluate it
    kind: dict[int, tuple] = {}  # group -> (shape, device pin)
    for n in order:
        if n.id not in stored:
            continue
        direct = {group_of[d] for d in deps[n.id]}
        mine = _computed(n, stored)
        sharing = sorted({g for nid in mine for g in owners.get(nid, ())})  # groups computing some of it
        where = n.device if n.device is not None or not affinity else affinity.get(n.id)
        upstream = None  # joining a group this node's inputs depend on would make a cycle
        for gid in sharing:
            if kind[gid] != (n.shape, where):
                continue
            if upstream is None:
                upstream = closure(direct)
            if gid not in upstream:
                break
        else:
            gid = n.id
            members[gid], needs[gid], kind[gid] = [], set(), (n.shape, where)
        members[gid].append(n)
        group_of[n.id] = gid
        needs[gid] |= direct
        for nid in mine:
            owners.setdefault(nid, set()).add(gid)
    return group_of


def _computed(root: Node, stored: set[int]) -> set[int]:
    """Ids of the nodes a kernel storing `root` computes itself (it loads stored nodes and inputs)."""
    out: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n.id in out:
            continue
        out.add(n.id)
        stack.extend(s for s in n.srcs if s.id not in stored and not is_input(s) and s.op is not Op.CONST)
    return out


def _reaching_groups(order: list[Node], stored: set[int], groups: dict[int, int]) -> dict[int, set[int]]:
    """For each node, the kernels whose computation reaches it (walking down from stored nodes)."""
    reach: dict[int, set[int]] = {}
    for n in reversed(order):
        if n.id in stored:
            reach.setdefault(n.id, set()).add(groups[n.id])
        mine = {groups[n.id]} if n.id in stored else reach.get(n.id, set())
        if is_input(n):
            continue
        for s in n.srcs:
            reach.setdefault(s.id, set()).update(mine)
    return reach


def _kernels(order: list[Node], stored: set[int], groups: dict[int, int], targets: set[int],
             affinity: dict[int, str]) -> list[Kernel]:
    by_group: dict[int, list[Node]] = {}
    for n in order:
        if n.id in stored:
            by_group.setdefault(groups[n.id], []).append(n)
    kernels: list[Kernel] = []
    for outs in by_group.values():  # insertion order follows `order`, so producers come first
        inputs: dict[int, Node] = {}
        seen: set[int] = set()
        stack = list(outs)
        while stack:
            n = stack.pop()
            if n.id in seen:
                continue
            seen.add(n.id)
            for s in n.srcs:
                if is_input(s) or s.id in stored:
                    inputs.setdefault(s.id, s)
                else:
                    stack.append(s)
        device = outs[0].device if outs[0].device is not None else affinity.get(outs[0].id)
        kernels.append(Kernel(outs, sorted(inputs.values(), key=lambda x: x.id), device))
    kernels = _launch_order(kernels)
    last_use: dict[int, int] = {}
    for i, k in enumerate(kernels):
        for x in k.inputs:
            last_use[x.id] = i
    by_id = {o.id: o for k in kernels for o in k.outputs}
    for nid, i in last_use.items():
        if nid in by_id and nid not in targets:
            kernels[i].frees_after.append(by_id[nid])
    return kernels


def _launch_order(kernels: list[Kernel]) -> list[Kernel]:
    """Topological order of kernels (a kernel after every kernel whose outputs it reads). Iterative, so
    no recursive closure makes a reference cycle that would keep realized buffers alive until the next gc."""
    producer = {o.id: i for i, k in enumerate(kernels) for o in k.outputs}
    done: set[int] = set()
    out: list[Kernel] = []
    for root in range(len(kernels)):
        stack = [(root, False)]
        while stack:
            i, expanded = stack.pop()
            if expanded:
                out.append(kernels[i])
                continue
            if i in done:
                continue
            done.add(i)
            stack.append((i, True))
            stack.extend((producer[x.id], False) for x in reversed(kernels[i].inputs)
                         if x.id in producer and producer[x.id] not in done)
    return out
