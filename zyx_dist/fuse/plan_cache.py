"""Driver side: the cache that lets a repeated graph (a training step, a benchmark loop) skip the
kernelizer and the renderer. Takes the nodes to realize; gives their kernels and rendered programs, from
the cache when a graph of the same structure was planned before. The key is the graph's structure from
the targets down to the inputs (ops, arguments, shapes, dtypes, pins, which sources feed which node);
the kernelizer's decisions depend on nothing else, so a hit maps the stored kernels (node positions in
that structure) onto the new nodes. Placement is not cached: the scheduler still places every kernel,
since where the inputs live and how full the devices are change from run to run.
"""

from __future__ import annotations

import os
import struct
from collections import OrderedDict
from collections.abc import Callable

from ..graph.ir import Node, Op
from .kernelize import DEFAULT_LIMITS, Kernel, Limits, kernelize

MAX_ENTRIES = 256
GUESS_MIN_NODES = 64  # graphs this big or bigger are guessed (`PlanCache.guess`)
# a smaller graph is guessed where the time its replay waits for the workers (its plan's device time, and any
# round trip to them) is at least this many times its check (the key, made and compared meanwhile, as long as a
# lookup of it took on this host): the check then ends first. Below that the check would add to the realize (a
# guess walks the graph once more than a lookup). Twice, not once: the check starts only after the launch, and
# events overstate short kernels (the device time read is each kernel's least measured, not the cost model's
# average, which keeps half of a first, cold launch: with that, on an H100 host, `x * 2 + 1` and layer norm were
# guessed and their 10-12 us checks ran on past their kernels)
GUESS_WAIT_OVER_CHECK = 2.0
# guessed replays of a small graph in a row whose synchronize found the device idle (the check outlasted the kernels,
# which the rule above could not foresee: a short kernel's measured time also holds its launch) before it is guessed
# no more. In a row: on a busy host a check now and then outlasts kernels it usually ends well before
GUESS_IDLE_LIMIT = 3


_DOUBLE_BYTES = struct.Struct("d").pack


def value_key(value: object) -> object:
    """A constant's or pad's argument as a structure key holds it (values are baked into kernels): a float as the
    8 bytes of its double (exact, -0.0 apart from 0.0, and cheaper than repr's shortest digits, 0.1-0.3 us a float,
    which the C walk would pay on every realize), anything else as its repr (which tells -0.0 from 0.0 inside a
    pad's tuple and matches NaN with NaN)."""
    return _DOUBLE_BYTES(value) if value.__class__ is float else repr(value)


def structure(targets: list[Node]) -> tuple[tuple, list[Node]]:
    """(the key, the nodes in key order). The key describes the graph reachable from `targets` exactly:
    everything the kernelizer's decisions depend on. It is one flat tuple, walked from the targets: for
    each node as the walk expands it, its row (a leaf's shape, dtype and pin; any other node's op,
    argument, shape, dtype and pin) and then its sources' positions as ints, where a node's position is
    the order in which the walk first met it (the targets first). The walk is a stack, so the expansion
    order follows from the positions, and the key reads back into the graph it came from: equal keys are
    equal structures, however and in whatever order the nodes were made (a pass that rewired a node to a
    newer source included). It runs on every realize, so it is written for speed: one pass, one dict that
    numbers the nodes, no sort, no tuple per node's sources."""
    index: dict[Node, int] = {}  # nodes hash by identity; insertion order is position order
    stack: list[Node] = []
    for t in targets:
        if t not in index:
            index[t] = len(index)
            stack.append(t)
    flat: list = []
    pop, push, emit, get = stack.pop, stack.append, flat.append, index.get
    leaf, cast, const, pad = Op.LEAF, Op.CAST, Op.CONST, Op.PAD
    while stack:
        n = pop()
        op = n.op
        if op is leaf:
            emit((n.shape, n.dtype.name, n.device, n.arg))  # (arg: ir.IOTA, whose values kernels may compute)
            continue
        arg = n.arg.name if op is cast else value_key(n.arg) if op is const or op is pad else n.arg
        emit((op, arg, n.shape, n.dtype.name, n.device))
        for s in n.srcs:
            i = get(s)
            if i is None:
                i = index[s] = len(index)
                push(s)
            emit(i)
    return (tuple(flat), tuple([index[t] for t in targets])), list(index)


def walk(targets: list[Node], heads: tuple | None = None) -> tuple[list[Node], tuple]:
    """(the nodes reachable from `targets` in `structure`'s position order, a fingerprint): the walk of
    `structure` without its rows, about half its cost. The fingerprint is what a plan's replay needs to be
    safe on this graph, not what makes it right: the node count, the targets' ops and shapes (`heads`, where
    the caller has `heads_of(targets)` already), and each leaf's position, shape, dtype and pin (so a plan
    guessed from it reads every input within its bounds; `PlanCache.guess`)."""
    index: dict[Node, int] = {}
    stack: list[Node] = []
    for t in targets:
        if t not in index:
            index[t] = len(index)
            stack.append(t)
    leaves: list[tuple] = []
    pop, push, keep, leaf = stack.pop, stack.append, leaves.append, Op.LEAF
    while stack:
        n = pop()
        srcs = n.srcs
        if srcs:
            for s in srcs:
                if s not in index:
                    index[s] = len(index)
                    push(s)
        elif n.op is leaf:
            keep((index[n], n.shape, n.dtype.name, n.device, n.arg))
    return list(index), (len(index), heads_of(targets) if heads is None else heads, tuple(leaves))


def heads_of(targets: list[Node]) -> tuple:
    """The targets' part of a fingerprint (`walk`): their ops, shapes and dtypes."""
    return tuple([(t.op, t.shape, t.dtype.name) for t in targets])


class _Key:
    """A structure key with its hash computed once: a realize hashes its key once, and the cache's later
    lookups of the same entry (recency, templates) compare the stored key by identity."""

    __slots__ = ("hash", "rows")

    def __init__(self, rows: tuple) -> None:
        self.rows, self.hash = rows, hash(rows)  # TypeError for an argument that cannot be hashed

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (other.__class__ is self.__class__ and self.hash == other.hash and self.rows == other.rows)


# The same two walks and the key in C (fuse/_structure.c, built at install where a C compiler is found; it gives
# exactly what the Python above gives, which stays as its reference and fallback): 3x faster on a small graph, ~2x
# on a model's. ZYX_DIST_C_WALKS=0 keeps the Python ones.
python_structure, python_walk, python_key = structure, walk, _Key
try:
    from . import _structure as _c_walks
except ImportError:  # not built here
    _c_walks = None


def c_walks_enabled() -> bool:
    """Whether the plan cache walks graphs in C: built, and not turned off by ZYX_DIST_C_WALKS=0/false/off."""
    return _c_walks is not None and os.environ.get("ZYX_DIST_C_WALKS", "1").strip().lower() not in ("0", "false", "off")


if c_walks_enabled():
    _c_walks.configure(Node, Op.LEAF, Op.CAST, Op.CONST, Op.PAD)
    structure = _c_walks.structure  # (the C form of the function above)
    _Key = _c_walks.Key  # (a lookup's hash and compare make no Python calls)

    def walk(targets: list[Node], heads: tuple | None = None) -> tuple[list[Node], tuple]:  # (the C form of the one above)
        order, leaves = _c_walks.walk(targets)
        return order, (len(order), heads_of(targets) if heads is None else heads, leaves)


class Entry(list):
    """One cached structure: its kernels (node positions and programs), and beside them the plan templates
    made for it (sched/template.py; input devices -> template), which leave the cache with it."""

    __slots__ = ("fingerprint", "key", "templates")


class PlanCache:
    """Plans by graph structure, for one session (whose devices set the kernels' `limits`)."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.entries: OrderedDict[_Key, Entry] = OrderedDict()
        self.hits = 0
        self.dropped: list = []  # templates of evicted entries (their workers may forget them)
        # fingerprint (`walk`) -> the entry last replayed with it, or None once a guess from it was wrong
        self.guesses: dict[tuple, Entry | None] = {}
        self.heads: dict[tuple, int] = {}  # the targets' part of each fingerprint guessed from: how many
        self.idle: dict[tuple, int] = {}  # fingerprint -> its guessed replays that found the device idle
        self.guessed = self.mispredicted = 0

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

    # ---- guesses: a replay started before its key is checked (engine/templates.replay_guess) ----

    def guess(self, targets: list[Node]) -> tuple[list[Node], tuple, Entry] | None:
        """(nodes in key order, fingerprint, the entry to replay) when `targets`' fingerprint names an entry
        that has plan templates, else None. Cheaper than `lookup` (no rows, no hash of them, no compare);
        the caller checks the guess with `confirms` while the workers run it."""
        if not self.heads:
            return None
        heads = heads_of(targets)
        if heads not in self.heads:  # (no walk for targets never guessed)
            return None
        order, fingerprint = walk(targets, heads)
        entry = self.guesses.get(fingerprint)
        if entry is None or not entry.templates:
            return None
        self.entries.move_to_end(entry.key)  # (the stored key: found by identity)
        return order, fingerprint, entry

    def confirms(self, targets: list[Node], entry: Entry) -> bool:
        """Whether `targets`' structure is `entry`'s (the full key, compared)."""
        try:
            return _Key(structure(targets)[0]) == entry.key
        except TypeError:  # an argument that cannot be hashed: no cached structure is it
            return False

    def remember(self, targets: list[Node], entry: Entry, nodes: int, hidden_seconds: float = 0.0,
                 check_seconds: float = 0.0) -> None:
        """Let later realizes of `targets`' structure (`nodes` nodes), whose entry is `entry`, guess it: the
        fingerprint is taken once per entry, before the targets are realized. Not for sharded graphs (their
        keys hold their devices), nor for small ones whose replay waits too briefly for its workers
        (`hidden_seconds`) to hide the check, which takes about as long as the lookup that found `entry`
        (`check_seconds`; `GUESS_MIN_NODES`, `GUESS_WAIT_OVER_CHECK`): a guess there would add the check
        to the realize, not take the key off its way."""
        if entry.fingerprint is not None:
            return
        if nodes < GUESS_MIN_NODES and hidden_seconds < check_seconds * GUESS_WAIT_OVER_CHECK:
            entry.fingerprint = ()
            return
        entry.fingerprint = fingerprint = walk(targets)[1]
        if fingerprint not in self.guesses:
            self.guesses[fingerprint] = entry
            self.heads[fingerprint[1]] = self.heads.get(fingerprint[1], 0) + 1
        else:  # a fingerprint two structures share is never guessed from: each guess could be the other
            self._forget(fingerprint)

    def idle_guess(self, fingerprint: tuple, nodes: int, idle: bool) -> None:
        """A guessed replay of a graph of `nodes` nodes found its kernels done when its check was (`idle`), or
        not: after GUESS_IDLE_LIMIT idle ones in a row, a small graph's fingerprint is guessed from no more (its
        realizes look it up before they launch, which costs less than a check the kernels do not hide)."""
        if not idle:
            if self.idle:
                self.idle.pop(fingerprint, None)
            return
        if nodes >= GUESS_MIN_NODES:
            return
        n = self.idle[fingerprint] = self.idle.get(fingerprint, 0) + 1
        if n >= GUESS_IDLE_LIMIT:
            self._forget(fingerprint)

    def wrong_guess(self, fingerprint: tuple) -> None:
        """A guess from `fingerprint` named the wrong structure: no more guesses from it."""
        self._forget(fingerprint)
        self.mispredicted += 1

    def _forget(self, fingerprint: tuple, tombstone: bool = True) -> None:
        self.idle.pop(fingerprint, None)
        if self.guesses.get(fingerprint) is not None:
            heads = fingerprint[1]
            self.heads[heads] -= 1
            if not self.heads[heads]:
                del self.heads[heads]
        if tombstone:
            self.guesses[fingerprint] = None
        else:
            self.guesses.pop(fingerprint, None)

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
            entry.key, entry.templates, entry.fingerprint = key, {}, None
            self.entries[key] = entry
            if len(self.entries) > MAX_ENTRIES:
                _, old = self.entries.popitem(last=False)
                self.dropped.extend(old.templates.values())
                if old.fingerprint and self.guesses.get(old.fingerprint) is old:
                    self._forget(old.fingerprint, tombstone=False)
        else:
            self.hits += 1
        kernels = [Kernel([order[i] for i in outs], [order[i] for i in ins], dev, [order[i] for i in frees], row)
                   for outs, ins, dev, frees, row, _ in entry]
        return kernels, [p for *_, p in entry]
