"""Driver side: lineage, so that the data of a lost worker can be recomputed. Takes the nodes a realize
computed (and the leaves it uploaded); gives each a *recipe*: a small graph of nodes that holds no
device buffer and ends in host copies of uploaded data (kept within a byte budget, oldest dropped
first) or constants. When a worker dies, `rebuild` turns a lost node back into a computation from
its recipe, reusing every source that is still realized on a surviving worker, so exactly the lost
tensors that are needed get recomputed. Both walks are worklists in topological order, so a history of
any depth (up to MAX_RECIPE_NODES) has a recipe.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence

from .ir import Node, Op, noted, toposort

LOST = "lost"  # the `arg` of a leaf whose data went with its worker and cannot be recomputed
MAX_RECIPE_NODES = 100_000  # a deeper history (e.g. a long training loop) is not kept: it would grow forever


class HostCopies:
    """Host copies of uploaded leaves that recipes may need, bounded by `budget` bytes (LRU)."""

    def __init__(self, budget: int):
        self.budget, self.total = budget, 0
        self.leaves: OrderedDict[int, weakref.ref] = OrderedDict()

    def keep(self, node: Node) -> Node | None:
        """A recipe leaf sharing `node`'s host array, or None when it does not fit the budget."""
        data = node.host
        if data is None or data.nbytes > self.budget:
            return None
        leaf = Node(Op.LEAF, (), None, node.shape, node.dtype, host=data)
        leaf.origin = weakref.ref(node)
        self.total += data.nbytes
        self.leaves[leaf.id] = weakref.ref(leaf, lambda _r, i=leaf.id, n=data.nbytes: self._gone(i, n))
        while self.total > self.budget and self.leaves:
            _, ref = self.leaves.popitem(last=False)
            old = ref()
            if old is not None and old.host is not None:
                self.total -= old.host.nbytes
                old.host = None  # recipes through it can no longer be rebuilt
        return leaf

    def _gone(self, leaf_id: int, nbytes: int) -> None:
        if self.leaves.pop(leaf_id, None) is not None:
            self.total -= nbytes


def recipe(n: Node, memo: dict[Node, Node | None]) -> Node | None:
    """The recipe of `n` (called before `n` becomes a leaf); None when some source has no lineage or the
    history is longer than MAX_RECIPE_NODES. `memo` (node -> recipe) is shared by the nodes of one
    realize, so shared history is built once. A recipe's `weight` bounds its size in nodes: the nodes
    this call builds plus the weights of the recipes it reaches that existed before (each once), so a
    history with shared subgraphs (`x - x.max()`) counts each node once, not once per path. A plan
    template's replays make theirs from a plan of the same walk (`recipe_plan`)."""
    steps, stops = _walk(n, memo)
    return _build(n, [(x, x.srcs) for x in steps], stops, memo, None)


def recipe_plan(order: list[Node], outputs: Sequence[int]) -> list[tuple[tuple, tuple, int]]:
    """`recipe`'s walks worked out once for a structure whose nodes are `order` (a plan template's, in key
    order), for the nodes at positions `outputs`, one after the other with one memo: per output, the new
    nodes, sources first, as (position, its sources' positions); the positions where its walk stops (a leaf,
    a constant, a node an earlier output reached); and its own position. `planned_recipes` builds from it for
    the same structure's next nodes without walking them."""
    at = {n: i for i, n in enumerate(order)}
    known: set[Node] = set()  # what an earlier output's walk reached
    plan = []
    for out in outputs:
        steps, stops = _walk(order[out], known)
        known.update(steps, stops)
        plan.append((tuple([(at[x], tuple([at[s] for s in x.srcs])) for x in steps]), tuple([at[x] for x in stops]),
                     out))
    return plan


def planned_recipes(plan: list[tuple[tuple, tuple, int]], order: list[Node]) -> list[Node | None]:
    """The recipes `recipe` would give the outputs of `plan` (`recipe_plan`'s, for the structure of `order`),
    in its order, with one memo: the same nodes, weights and origins."""
    vals: dict[int, Node | None] = {}  # position -> its recipe
    node_at = order.__getitem__
    return [_build(out, steps, stops, vals, node_at) for steps, stops, out in plan]


def _walk(n: Node, known) -> tuple[list[Node], list[Node]]:
    """`recipe`'s walk from `n`: the nodes it builds, sources first (a node comes when its marker is back off the
    stack, its sources done), and those where it stops: in `known` (what an earlier walk of the same memo
    reached), a constant, or a leaf. Each node once."""
    steps: list[Node] = []
    stops: list[Node] = []
    here: set[Node] = set()
    const, leaf = Op.CONST, Op.LEAF
    stack: list[tuple[Node, bool]] = [(n, False)]
    pop, push = stack.pop, stack.append
    while stack:
        x, ready = pop()
        if ready:
            steps.append(x)
            continue
        if x in here:
            continue
        here.add(x)
        if x in known or x.op is const or x.op is leaf:
            stops.append(x)
            continue
        push((x, True))
        for s in reversed(x.srcs):
            if s not in here:
                push((s, False))
    return steps, stops


def _build(out, steps, stops, vals: dict, node_of) -> Node | None:
    """The recipe of `out` from a walk (`_walk`'s, keyed: (key, its sources' keys) per node built, the keys where
    it stopped; `node_of(key)`, the node, or None where the keys are the nodes), `vals` (key -> recipe) as
    `recipe`'s memo: a stop not in it yet is a constant (itself) or a leaf (its lineage)."""
    const, pad, flip = Op.CONST, Op.PAD, Op.FLIP  # (`noted` is for pads and flips only)
    before: dict[int, Node] = {}  # recipes this one reaches that existed before it
    for key in stops:
        if key in vals:
            r = vals[key]
        else:
            x = key if node_of is None else node_of(key)
            r = vals[key] = x if x.op is const else x.lineage
        if r is not None:
            before[r.id] = r
    built: list[Node] = []
    get = vals.__getitem__
    for key, srcs in steps:
        ss = tuple(map(get, srcs))
        if None in ss:
            vals[key] = None
            continue
        x = key if node_of is None else node_of(key)
        r = vals[key] = Node(x.op, ss, x.arg, x.shape, x.dtype, None, x.device)  # type: ignore[arg-type]
        if x.op is pad or x.op is flip:
            noted(r)
        r.origin = weakref.ref(x)
        built.append(r)
    root = vals[out]
    if built and root is not None:
        weight = len(built) + sum(r.weight for r in before.values())
        for r in built:
            r.weight = weight  # an upper bound for the ones below the root: their history is part of it
        if weight > MAX_RECIPE_NODES:
            vals[out] = root = None
    return root


def rebuild(r: Node, alive, memo: dict[int, Node]) -> Node:
    """A graph computing the value described by recipe `r`: sources still realized where `alive(node)`
    holds are used as they are; the rest is recomputed. Raises KeyError when a needed host copy is gone."""
    def usable(x: Node) -> Node | None:
        live = x.origin() if x.origin is not None else None
        return live if live is not None and live.realized and live.buffer is not None and alive(live) else None

    found: dict[int, Node | None] = {}  # recipe node -> its live, realized original (None: recompute it)

    def stop(x: Node) -> bool:
        found[x.id] = usable(x)
        return x.id in memo or found[x.id] is not None or x.op is Op.CONST or x.op is Op.LEAF

    for x in toposort([r], stop=stop):
        if x.id in memo:
            continue
        if found[x.id] is not None:
            out = found[x.id]
        elif x.op is Op.CONST:
            out = x
        elif x.op is Op.LEAF:
            if x.host is None:
                raise KeyError(x.id)
            out = Node(Op.LEAF, (), None, x.shape, x.dtype, host=x.host)
            out.lineage = x
        else:
            out = noted(Node(x.op, tuple(memo[s.id] for s in x.srcs), x.arg, x.shape, x.dtype))
        memo[x.id] = out  # type: ignore[assignment]
    return memo[r.id]


def restore(node: Node, alive, memo: dict[int, Node]) -> None:
    """Turn a node whose buffer was lost back into a computation (or a host leaf to upload again); when
    that is impossible, into a LOST leaf, which raises WorkerLostError naming it whenever it is needed."""
    try:
        if node.lineage is None:
            raise KeyError(node.id)
        src = rebuild(node.lineage, alive, memo)
    except KeyError:
        node.op, node.srcs, node.arg, node.buffer, node.host = Op.LEAF, (), LOST, None, None
        return
    if src is node:
        return
    node.op, node.srcs, node.arg, node.buffer = src.op, src.srcs, src.arg, None
    node.host = src.host if src.op is Op.LEAF else None
    noted(node)  # it may be a pad or flip now
