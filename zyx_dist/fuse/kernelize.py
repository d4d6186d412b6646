"""Driver side: the kernelizer, a port of zyx's fusion decisions (seed/kernelize.rs) onto our graph.
Takes the nodes to realize; gives kernels in launch order, each a set of same-shape output nodes
computed from input nodes (realized or host leaves, or the outputs of earlier kernels), and the point
after which each intermediate can be freed. (One exception to the shape: a fused attention kernel also
stores its rows' statistics where a backward pass reads them, after its output.)

The decisions, as in zyx: everything fuses by default; elementwise producers shared by several
consumers are recomputed; a node is stored (ends a kernel) when it is requested, when it is pinned to
a device, when a reduce precedes it and it is broadcast by an expand (so a row max is not recomputed
per element) or reduced again (so the inner reduce runs in parallel rather than inside the outer
loop), and when a reduce precedes it and more than one kernel needs it. Beyond zyx, a kernel holds one
contraction (a matmul-shaped reduce), read at its own index, so that each is a GEMM (`_one_contraction`). One
exception keeps a row in
one kernel: a per-row reduce broadcast back along trailing dims (softmax's max and sum, layer norm's
mean) is fused into its consumers, which the renderer runs one work-group per row; a matmul read by
such a row kernel element by element is stored (else every pass over the row would recompute it). Requested nodes of
the same shape that do not depend on each other share one multi-output kernel, so `zd.realize(a, b)` computes
their common subgraph once. Movement ops never make a kernel of their own: the renderer turns them
into index arithmetic. Beyond zyx: a kernel that would exceed a device's limits (its argument space, a
bound on its size) stores an intermediate so that each kernel fits, and every kernel carries the
decisions the renderer needs (whether it is a row kernel), so nothing is derived twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph.ir import Node, Op, ReduceOp, broadcast_product, is_crop, prod, toposort, view_base
from .attention_fusion import computing_kernel, fused_attention, fused_attention_grads


@dataclass
class Kernel:
    outputs: list[Node]
    inputs: list[Node]
    device: str | None = None
    # intermediates (outputs of earlier kernels, not requested) that no later kernel reads
    frees_after: list[Node] = field(default_factory=list)
    # a row kernel (see `row_suffix`): how many trailing output dims form the row that its per-row reduces
    # broadcast back along, which the renderer runs one work-group per row; 0 for any other kernel
    row: int = 0

    @property
    def shape(self) -> tuple[int, ...]:
        return self.outputs[0].shape


@dataclass(frozen=True)
class Limits:
    """What one kernel may hold. `param_bytes`: the device's kernel argument space (OpenCL's
    CL_DEVICE_MAX_PARAMETER_SIZE, at least 1024 on every full-profile device; CUDA's 4 KiB), spent at
    `pointer_bytes` per buffer argument; `nodes`: the computed nodes of one kernel, which bounds its
    source (and its compile time) whatever the graph; `grad_heads`: where every device runs CUDA's tensor
    cores on half types and the session asks for it (engine/limits.py), an attention's backward products whose
    head dims are multiples of it recompute their weights in one kernel each (codegen/attention_grad.py; 16
    for mma.sync's form, 64 for wgmma's alone), which elsewhere would run as plain loops; 0: none does."""

    param_bytes: int = 1024
    pointer_bytes: int = 8
    nodes: int = 512
    grad_heads: int = 0

    @property
    def buffers(self) -> int:
        return self.param_bytes // self.pointer_bytes


DEFAULT_LIMITS = Limits()


def is_input(n: Node) -> bool:
    """Nodes a kernel loads rather than computes: realized or host leaves."""
    return n.op is Op.LEAF


def _expands(n: Node) -> bool:
    return n.op is Op.EXPAND and prod(n.shape) > prod(n.srcs[0].shape)


ROW_MAX = 1 << 15  # the longest row a softmax-like kernel keeps in one work-group
# per-row reduces one row kernel chains (softmax and layer norm have 2, their backward passes up to 6): each pass over the row recomputes
# what the earlier passes computed, so a longer chain (an unrolled loop) would grow its source quadratically
ROW_PASSES = 6  # the backward of softmax followed by a row max chains 6
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


def _suffix_axes(shape: tuple[int, ...], suffix: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(range(len(shape) - len(suffix), len(shape)))


def kernelize(targets: list[Node], limits: Limits = DEFAULT_LIMITS,
              affinity: dict[int, str] | None = None) -> list[Kernel]:
    """The kernels computing `targets`, each fitting the devices' `limits`. `affinity` (node id -> device,
    from graph/shard.py) places the kernels of those nodes on that device as a pin would, without storing
    anything more."""
    targets = list({t.id: t for t in targets if not is_input(t) and t.size > 0}.values())
    if not targets:
        return []
    order = toposort(targets, stop=is_input)
    stored: set[int] = {t.id for t in targets}
    stored |= {n.id for n in order if n.device is not None and not is_input(n)}
    users = _users(order)
    # attention in one kernel (its scores, row max and sum not stored), with its row statistics as extra outputs:
    # stored from the start, so that what reads them (a backward pass's recomputed probabilities) is decided
    # around a stored row vector
    fused, side = fused_attention(order, {t.id for t in targets}, users)
    extras = {o.id for outs in side.values() for o in outs}
    stored |= extras
    _reduce_stores(order, stored, decide=True, users=users)
    _fit(order, stored, limits)
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
        # (the node under the views is stored: it serves every view, read in place, so `q @ k.mT` on a permuted,
        # sliced qkv stores qkv once, not a copy per view)
        extra = {view_base(_chain_top(by_id[i], users, stored, bearing)).id
                 for i in wanted if not any(s.id in wanted for s in by_id[i].srcs)} - stored
        if not extra:
            break
        stored |= extra
    # an attention's backward products recompute their weights: nothing T x T is stored
    if limits.grad_heads and (recomputed := fused_attention_grads(order, {t.id for t in targets}, users, stored,
                                                                     limits.grad_heads)):
        stored -= recomputed
        groups = _group(order, stored, affinity)
    if fused:
        stored -= fused - extras
        groups = _group(order, stored, affinity)
        for out_id, outs in side.items():  # row statistics: extra outputs of the kernel that computes the pattern
            owner = computing_kernel(by_id[out_id], stored, users)
            for o in outs:
                groups[o.id] = groups[owner.id]
    _, rows = _reduce_stores(order, stored, decide=False)
    return _kernels(order, stored, groups, {t.id for t in targets}, rows, limits, affinity or {}, extras)


EPILOGUE_OPS = (Op.UNARY, Op.BINARY, Op.CAST, Op.WHERE, Op.RESHAPE)  # ops a stored reduce's kernel may end with


def _users(order: list[Node]) -> dict[int, list[Node]]:
    """The distinct consumers of each node among `order`."""
    users: dict[int, list[Node]] = {}
    for n in order:
        for s in dict.fromkeys(n.srcs):
            users.setdefault(s.id, []).append(n)
    return users


def _chain_top(n: Node, users: dict[int, list[Node]], stored: set[int], bears: dict[int, bool]) -> Node:
    """Where to store a reduce that several kernels need: at the top of the chain of elementwise ops (and
    reshapes) of its size that it alone feeds, one consumer after another. Storing `x + (a @ w + b)`
    rather than `a @ w` makes the bias and the residual the matmul kernel's epilogue, and keeps a
    residual stream from being recomputed, from every matmul product before it, in each kernel that reads
    it (a 12-layer transformer's last layer norm read 24 products). The same one node is stored, so
    no kernel is added. The chain stops below an op that another unstored reduce also feeds (`bears`:
    whether computing a node runs a reduce): `a @ b + c @ d` stays two products."""
    top = n
    while n.id not in stored:
        up = users.get(n.id, ())
        if len(up) != 1 or up[0].op not in EPILOGUE_OPS or up[0].size != n.size or up[0].device != n.device:
            break
        if any(s is not n and s.id not in stored and bears.get(s.id) for s in up[0].srcs):
            break
        n = up[0]
        if n.op is not Op.RESHAPE:  # a chain ending in reshapes stores what is under them
            top = n
    return top


def _reduce_stores(order: list[Node], stored: set[int], decide: bool,
                   users: dict[int, list[Node]] | None = None) -> tuple[dict[int, bool], dict]:
    """Expand after a reduce: store what is expanded (zyx's is_preceded_by_reduce), in one bottom-up pass,
    except a row broadcast (see `row_suffix`): softmax-like kernels then read each row once. With `decide`
    the stores are added to `stored`; either way gives, per node, whether computing it runs a reduce and
    the row (trailing dims) it depends on through a row broadcast, for the stores as they stand."""
    has_reduce: dict[int, bool] = {}
    # with `decide`: the contraction (a matmul-shaped reduce, `_contraction`) that computing a node runs, not stored
    contr: dict[int, int | None] = {}
    row: dict[int, tuple[int, ...] | None] = {}
    origin: dict[int, list[Node]] = {}  # of a node with a row: the nodes whose row broadcasts give it that row
    passes: dict[int, int] = {}  # per-row reduces chained in the kernel computing the node
    by_id: dict[int, Node] | None = None
    for n in order:
        row[n.id] = None
        if is_input(n) or n.op is Op.CONST:
            has_reduce[n.id], passes[n.id] = False, 0
            continue
        if decide:
            _one_contraction(n, stored, has_reduce, contr, users or {})
        live = [s for s in n.srcs if s.id not in stored]
        rows = {row[s.id] for s in live} - {None}
        passes[n.id] = max([passes[s.id] for s in live], default=0)
        src = n.srcs[0]
        if _expands(n) and has_reduce[src.id] and src.id not in stored:
            suffix = row_suffix(n)
            if suffix is None or row[src.id] is not None:
                if decide:
                    _store_base(src, stored, has_reduce)  # not recomputed per element
            else:
                row[n.id], origin[n.id] = suffix, [src]
        elif n.op is Op.REDUCE and has_reduce[src.id] and src.id not in stored:
            per_row = row[src.id] is not None and n.arg[1] == _suffix_axes(src.shape, row[src.id])
            if not decide:
                pass
            elif row[src.id] is not None and not per_row:
                # a row broadcast reduced along other axes (the backward of a matmul: the output gradient
                # broadcast over k, summed over m or n): the broadcast values are stored, not the product
                for o in origin[src.id]:
                    _store_base(o, stored, has_reduce)
                if _bears_reduce(src, stored):
                    _store_base(src, stored, has_reduce)
            elif row[src.id] is None:
                # the inner reduces run in parallel rather than inside the outer loop: they are stored (the
                # elementwise ops between them and this reduce are recomputed in its loop)
                by_id = {x.id: x for x in order} if by_id is None else by_id
                stored |= {_chain_top(by_id[r], users or {}, stored, has_reduce).id for r in _inner_reduces(src, stored)}
            elif contractions := _inner_reduces(src, stored, through_broadcasts=False):
                # a reduce read at the row's own resolution (a matmul: the backward of layer_norm(x) @ W, or
                # softmax(x @ W)) would run its whole loop inside every pass over the row: stored, it is a
                # GEMM of its own and each pass reads it
                by_id = {x.id: x for x in order} if by_id is None else by_id
                stored |= {_chain_top(by_id[r], users or {}, stored, has_reduce).id for r in contractions}
            elif passes[src.id] >= ROW_PASSES:
                _store_base(src, stored, has_reduce)  # too many per-row reduces chained in one kernel
        elif rows and (len(rows) > 1 or n.op not in ROW_OPS):
            if decide:
                stored.update(s.id for s in live if row[s.id] is not None)  # rows that do not line up: stored
        elif rows:
            row[n.id] = rows.pop()
            origin[n.id] = [o for s in live if row[s.id] is not None for o in origin[s.id]]
        if n.op is Op.REDUCE:
            passes[n.id] = passes[src.id] + 1 if has_reduce[src.id] and src.id not in stored else 1
        has_reduce[n.id] = n.op is Op.REDUCE or any(has_reduce[s.id] and s.id not in stored for s in n.srcs)
        if decide:
            carried = {contr[s.id] for s in n.srcs if s.id not in stored and s.id in contr} - {None} - stored
            contr[n.id] = n.id if _contraction(n) else carried.pop() if len(carried) == 1 else None
    return has_reduce, row


def _contraction(n: Node) -> bool:
    """Whether `n` is matmul-shaped: a sum of a product whose two operands are both broadcast (`a @ b`, batched
    or not, einsum-like products, a weight's gradient summed over a batch and a sequence); not a row's dot
    product or a matrix-vector product."""
    return n.op is Op.REDUCE and n.arg[0] is ReduceOp.SUM and broadcast_product(n.srcs[0])


def _one_contraction(n: Node, stored: set[int], has_reduce: dict[int, bool], contr: dict[int, int | None],
                     users: dict[int, list[Node]]) -> None:
    """A GEMM (codegen/gemm.py) evaluates its epilogue at its own output index, one contraction per kernel.
    So where a contraction that `n` would compute is read at another index (through a pad, a slice or a
    concatenation, or a flip: rotary embeddings' halves, `concat([x @ wq, x @ wk])`), the node under the pad
    is stored; and where `n` combines two contractions (`silu(x @ w1) * (x @ w3)`, the gradient of a tensor
    used twice), every source carrying another than the first source's is stored: each is then a GEMM,
    read by the next one's epilogue. The contraction kept is that of the first source that `n` alone reads
    (`_read_elsewhere`), where there is one: a source with other readers is stored anyway (an attention's
    recomputed probabilities, read by p * (dp - D) and by the gradient of v). A source carrying another kind of
    reduce beside a contraction is stored too (a tied embedding's gradient: the lookup's scatter plus the LM
    head's weight gradient). Without this, such kernels run as plain reduce loops."""
    if n.op is Op.PAD or n.op is Op.FLIP:
        src = n.srcs[0]
        if src.id not in stored and contr.get(src.id) is not None and not _small_slice(n):
            _store_base(src, stored, has_reduce, contr)
        return
    if n.op is not Op.BINARY and n.op is not Op.WHERE:
        return
    first, others = None, []
    carrying = [s for s in n.srcs if s.id not in stored and contr.get(s.id) is not None and contr[s.id] not in stored]
    if len({contr[s.id] for s in carrying}) > 1:
        first = next((contr[s.id] for s in carrying if _read_elsewhere(s, users) is None), None)
    for s in n.srcs:
        c = contr.get(s.id) if s.id not in stored else None
        if c is None or c in stored:
            if s.id not in stored and has_reduce.get(s.id):
                others.append(s)
            continue
        if first is None:
            first = c
        elif c != first:  # what has other readers is stored, not a conversion of it
            _store_base(_read_elsewhere(s, users) or s, stored, has_reduce, contr)
    if first is not None:
        for s in others:
            _store_base(s, stored, has_reduce, contr)


def _read_elsewhere(s: Node, users: dict[int, list[Node]]) -> Node | None:
    """`s`, or the value it only converts or views (through casts, unary ops and movements), where that has
    more than one reader; else None."""
    while len(users.get(s.id, ())) <= 1:
        if s.op is not Op.CAST and s.op is not Op.UNARY and s.op not in VIEWS:
            return None
        s = s.srcs[0]
    return s


def _fit(order: list[Node], stored: set[int], limits: Limits) -> None:
    """Store intermediates so that no kernel computes more than `limits.nodes` nodes or reads more buffers
    than its argument space holds (besides its output). In one pass, producers first, a node's kernel so
    far (the nodes it computes, the buffers it reads) is its computed sources' together; where that is too
    much, the source with the most is stored, until it fits. A source's sets pass on to its only consumer
    without a copy, so a chain costs O(1) per node."""
    consumers: dict[int, int] = {}
    for n in order:
        for s in set(n.srcs):
            consumers[s.id] = consumers.get(s.id, 0) + 1
    computed: dict[int, set[int]] = {}  # node -> ids of the nodes its kernel computes so far
    reads: dict[int, set[int]] = {}  # node -> ids of the buffers its kernel reads so far
    max_reads = limits.buffers - 1
    for n in order:
        if is_input(n) or n.op is Op.CONST:
            continue
        live = list({s.id: s for s in n.srcs if s.id not in stored and not is_input(s) and s.op is not Op.CONST}.values())
        loads = {s.id for s in n.srcs if s.id in stored or is_input(s)}
        while True:
            nodes = _Union([computed[s.id] for s in live], {n.id})
            bufs = _Union([reads[s.id] for s in live], loads)
            if not live or (nodes.size <= limits.nodes and bufs.size <= max_reads):
                break
            table = computed if nodes.size > limits.nodes else reads
            cut = max(live, key=lambda s: len(table[s.id]))
            live.remove(cut)
            stored.add(cut.id)
            loads.add(cut.id)
        owned = {id(computed[s.id]) for s in live if consumers[s.id] == 1} | {id(reads[s.id]) for s in live if consumers[s.id] == 1}
        computed[n.id], reads[n.id] = nodes.build(owned), bufs.build(owned)


class _Union:
    """The union of some sets and `extra`, sized without building it: the largest set plus what the
    others add. `build` reuses (mutates) the largest set where no one else reads it."""

    def __init__(self, sets: list[set[int]], extra: set[int]):
        self.big = max(sets, key=len, default=set())
        self.rest = set(extra)
        for x in sets:
            if x is not self.big:
                self.rest |= x
        self.rest -= self.big
        self.size = len(self.big) + len(self.rest)

    def build(self, owned: set[int]) -> set[int]:
        out = self.big if id(self.big) in owned else set(self.big)
        out |= self.rest
        return out


SLICE_KEPT = 16  # a slice keeping less than 1/SLICE_KEPT of a product computes its part in place (`_small_slice`)


def _small_slice(n: Node) -> bool:
    """Whether pad `n` only cuts its source down to less than 1/SLICE_KEPT of it (the last position's logits of an
    LM head): that part computed in the kernel that reads it costs less than the whole product as a GEMM."""
    return is_crop(n) and prod(n.shape) * SLICE_KEPT < prod(n.srcs[0].shape)


def _store_base(n: Node, stored: set[int], has_reduce: dict[int, bool],
                contr: dict[int, int | None] | None = None) -> None:
    """Store the node under n's movement ops (n itself when it computes); the views between no longer
    carry a reduce (or a contraction, `contr`) into their consumers."""
    while n.op in VIEWS and not is_input(n.srcs[0]):
        has_reduce[n.id] = False
        if contr is not None:
            contr[n.id] = None
        n = n.srcs[0]
    if not is_input(n):
        stored.add(n.id)


def _inner_reduces(root: Node, stored: set[int], through_broadcasts: bool = True) -> set[int]:
    """The reduces computing `root` runs, nearest first (not those below another one). Without
    `through_broadcasts`, only those that reach it with no expand between: each of their elements is used once
    per element of `root`, not once per row."""
    out: set[int] = set()
    stack, seen = [root], set()
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.op is Op.REDUCE:
            out.add(n.id)
        elif through_broadcasts or not _expands(n):
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
    products: dict[int, frozenset[int]] = {}  # group -> the contractions its kernel computes
    by_id = {n.id: n for n in order}
    for n in order:
        if n.id not in stored:
            continue
        direct = {group_of[d] for d in deps[n.id]}
        mine = _computed(n, stored)
        sharing = sorted({g for nid in mine for g in owners.get(nid, ())})  # groups computing some of it
        where = n.device if n.device is not None or not affinity else affinity.get(n.id)
        # one contraction per kernel (`_one_contraction`): the gradients of q and k, dS @ k and dS^T @ q, share
        # only views of dS, and as one kernel they would be plain reduce loops
        mine_products = frozenset(i for i in mine if _contraction(by_id[i]))
        upstream = None  # joining a group this node's inputs depend on would make a cycle
        for gid in sharing:
            if kind[gid] != (n.shape, where):
                continue
            if mine_products and products[gid] and mine_products != products[gid]:
                continue
            if upstream is None:
                upstream = closure(direct)
            if gid not in upstream:
                break
        else:
            gid = n.id
            members[gid], needs[gid], kind[gid], products[gid] = [], set(), (n.shape, where), frozenset()
        members[gid].append(n)
        products[gid] |= mine_products
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


def _kernels(order: list[Node], stored: set[int], groups: dict[int, int], targets: set[int], rows: dict,
             limits: Limits, affinity: dict[int, str], extras: set[int]) -> list[Kernel]:
    """The kernels of the groups, in launch order, each with the point after which its inputs can be freed.
    `extras` (an attention's row statistics) come after a kernel's other outputs: the first output's shape is
    the kernel's."""
    by_group: dict[int, list[Node]] = {}
    for n in order:
        if n.id in stored:
            by_group.setdefault(groups[n.id], []).append(n)
    for outs in by_group.values():
        outs.sort(key=lambda o: o.id in extras)
    kernels: list[Kernel] = []
    for outs in by_group.values():  # insertion order follows `order`, so producers come first
        inputs = _inputs(outs, stored)
        if len(outs) > 1 and len(inputs) + len(outs) > limits.buffers:  # shared work, but too many arguments
            parts = [[o] for o in outs]
        else:
            parts = [outs]
        device = outs[0].device if outs[0].device is not None else affinity.get(outs[0].id)
        for part in parts:
            inputs = _inputs(part, stored) if len(parts) > 1 else inputs
            row = max((len(rows[o.id] or ()) for o in part if o.id not in extras), default=0)
            kernels.append(Kernel(part, sorted(inputs.values(), key=lambda x: x.id), device, row=row))
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


def _inputs(outs: list[Node], stored: set[int]) -> dict[int, Node]:
    """The buffers a kernel computing `outs` reads: the stored nodes and inputs under them."""
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
    return inputs


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
