"""Driver side, pure: data parallelism over sharded tensors (API.md sections 6 and 11). `x.shard(devices,
axis)` registers its result here with its pieces (one per device, in device order); `distribute` takes the
nodes about to be realized and rewrites their graph so that the work runs per shard: ops are pushed
through the shards (elementwise ops, casts, movement that keeps the sharded axis whole, reductions over
other axes), and a reduction over the sharded axis becomes one partial reduction per shard, pinned to the
shard's device, combined by a fixed-order chain ((p0 + p1) + p2 ...) placed like any other kernel. Since
the rewrite sees the whole graph, forward and backward alike (gradients are ordinary graphs), the
parameters' gradients of a loss over a sharded batch are exactly such combined partial reductions: a
deterministic all-reduce whose result is then read by every shard's next step (the scheduler moves it,
over NCCL between CUDA workers, through the object store otherwise).

Operands that are not sharded are cut to each shard's rows (a broadcast operand stays a broadcast). What
cannot run per shard (a pad or crop of the sharded axis, a reshape that splits shard boundaries, an op
between differently sharded operands) reads the shards joined (concatenated) and runs once. `distribute`
gives the device each per-shard node belongs to (its affinity): the kernelizer groups and pins kernels
by it without storing anything more. Targets are rewritten in place (the same value, computed per shard).
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass

from . import ir
from .ir import BinaryOp, Node, Op, ReduceOp, prod, toposort


@dataclass(frozen=True, eq=False)
class Sharded:
    """A value split along `axis` into `pieces` (in order), piece i living on `devices[i]`."""

    axis: int
    pieces: tuple[Node, ...]
    devices: tuple[str, ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(p.shape[self.axis] for p in self.pieces)

    def bounds(self) -> list[int]:
        return [0, *itertools.accumulate(self.sizes)]

    def layout(self) -> tuple:
        return self.axis, self.sizes, self.devices


_SHARDED: weakref.WeakKeyDictionary[Node, Sharded] = weakref.WeakKeyDictionary()
# per-shard nodes made by earlier rewrites (a graph explained, then realized, is rewritten once): their devices
_MADE: weakref.WeakKeyDictionary[Node, str] = weakref.WeakKeyDictionary()
# both registries' own dicts: empty unless something is sharded, which a realize checks without a call
LIVE = (_SHARDED.data, _MADE.data)

_COMBINE = {ReduceOp.SUM: BinaryOp.ADD, ReduceOp.PROD: BinaryOp.MUL, ReduceOp.MAX: BinaryOp.MAX,
            ReduceOp.MIN: BinaryOp.MIN}
_COMBINE_BOOL = {ReduceOp.MAX: BinaryOp.OR, ReduceOp.MIN: BinaryOp.AND}


def register(root: Node, axis: int, pieces: list[Node], devices: list[str]) -> None:
    """`root` (the concatenation of `pieces` along `axis`) is a sharded value."""
    _SHARDED[root] = Sharded(axis, tuple(pieces), tuple(devices))


def active() -> bool:
    """Whether any sharded value is alive (when none is, `sharded` is None for every node)."""
    return bool(_SHARDED)


def sharded(node: Node) -> Sharded | None:
    """The shards of `node` when it is a sharded value, else None."""
    return _SHARDED.get(node) if _SHARDED else None


def pin(node: Node, device: str) -> Node:
    """An identity node of `node` pinned to `device` (the kernelizer stores it there)."""
    return Node(Op.RESHAPE, (node,), node.shape, node.shape, node.dtype, device=device)


def join(s: Sharded) -> Node:
    """The whole value of a sharded one: each piece padded to the full shape, then added (or-ed) in a
    balanced tree, as concat builds it."""
    total = sum(s.sizes)
    parts, offset = [], 0
    for p in s.pieces:
        n = p.shape[s.axis]
        widths = tuple((offset, total - offset - n) if i == s.axis else (0, 0) for i in range(len(p.shape)))
        parts.append(ir.pad(p, widths, 0))
        offset += n
    op = BinaryOp.OR if parts[0].dtype.is_bool else BinaryOp.ADD
    while len(parts) > 1:
        pairs = [ir.binary(op, a, b) for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + parts[len(pairs) * 2:]
    return parts[0]


class _Pass:
    def __init__(self, newest: int) -> None:
        self.newest = newest  # nodes with a larger id were made by this pass
        self.form: dict[int, Node | Sharded] = {}
        self.joined: dict[int, Node] = {}  # id(Sharded) -> its join
        self.affinity: dict[int, str] = {}

    def whole(self, f: Node | Sharded) -> Node:
        """The value of `f` in one piece: a Sharded one joined, each piece this pass computed pinned to its shard's
        device first (stored there), so that the work per shard runs on its device and only its result moves to
        the join; without the pin the kernelizer would fuse the pieces' work into the join's kernel, on one device."""
        if isinstance(f, Node):
            return f
        j = self.joined.get(id(f))
        if j is None:
            pieces = tuple(pin(p, d) if p.id > self.newest and p.op is not Op.LEAF and p.op is not Op.CONST else p
                           for p, d in zip(f.pieces, f.devices))
            j = self.joined[id(f)] = join(Sharded(f.axis, pieces, f.devices))
        return j

    def mark(self, node: Node, device: str) -> Node:
        """Note that `node` belongs to the shard on `device` (only nodes made here: a fold may give back a
        node of the original graph, shared by every shard)."""
        if node.id > self.newest and node.op is not Op.LEAF and node.op is not Op.CONST:
            self.affinity.setdefault(node.id, device)
        return node

    def per_piece(self, s: Sharded, axis: int, build) -> Sharded:
        pieces = tuple(self.mark(build(i, p), d) for i, (p, d) in enumerate(zip(s.pieces, s.devices)))
        return Sharded(axis, pieces, s.devices)

    def cut(self, f: Node | Sharded, s: Sharded, i: int) -> Node:
        """Operand f (of the full shape) restricted to shard i of layout s."""
        if isinstance(f, Sharded):
            return f.pieces[i]
        a, b = s.bounds()[i], s.bounds()[i + 1]
        shape = tuple(b - a if k == s.axis else d for k, d in enumerate(f.shape))
        if f.op is Op.CONST:
            return ir.const(f.arg, shape, f.dtype)
        if f.op is Op.EXPAND and f.srcs[0].shape[s.axis] == 1:  # broadcast along the axis: stays one
            return self.mark(ir.expand(f.srcs[0], shape), s.devices[i])
        widths = tuple((-a, b - f.shape[s.axis]) if k == s.axis else (0, 0) for k in range(len(f.shape)))
        return self.mark(ir.pad(f, widths, 0), s.devices[i])

    def rebuild(self, n: Node, srcs: list[Node]) -> Node:
        if all(a is b for a, b in zip(srcs, n.srcs)):
            return n
        return ir.noted(Node(n.op, tuple(srcs), n.arg, n.shape, n.dtype, device=n.device))

    def visit(self, n: Node) -> Node | Sharded:
        s = _SHARDED.get(n)
        if s is not None:
            return s
        if not n.srcs:
            return n
        forms = [self.form[x.id] for x in n.srcs]
        shards = [f for f in forms if isinstance(f, Sharded)]
        if not shards:
            return self.rebuild(n, forms)  # type: ignore[arg-type]
        out = None
        if n.size and n.device is None:
            out = self.push(n, forms, shards)
        return out if out is not None else self.rebuild(n, [self.whole(f) for f in forms])

    def push(self, n: Node, forms: list, shards: list[Sharded]) -> Node | Sharded | None:
        """n computed per shard (a Sharded value, or for a reduce over the sharded axis the combined whole);
        None when it cannot be."""
        s = shards[0]
        if any(t.layout() != s.layout() for t in shards[1:]):
            return None
        op, ax = n.op, s.axis
        if op in (Op.UNARY, Op.CAST, Op.BINARY, Op.WHERE):
            def build(i: int, _p: Node) -> Node:
                srcs = [self.cut(f, s, i) for f in forms]
                if op is Op.UNARY:
                    return ir.unary(n.arg, srcs[0])
                if op is Op.CAST:
                    return ir.cast(srcs[0], n.arg)
                if op is Op.BINARY:
                    return ir.binary(n.arg, srcs[0], srcs[1])
                return ir.where(*srcs)
            return self.per_piece(s, ax, build)
        if op is Op.EXPAND:
            if n.shape[ax] != n.srcs[0].shape[ax]:
                return None
            return self.per_piece(s, ax, lambda i, p: ir.expand(p, _with(n.shape, ax, p.shape[ax])))
        if op is Op.PERMUTE:
            return self.per_piece(s, n.arg.index(ax), lambda i, p: ir.permute(p, n.arg))
        if op is Op.FLIP:
            if ax not in n.arg:
                return self.per_piece(s, ax, lambda i, p: ir.flip(p, n.arg))
            rev = Sharded(ax, s.pieces[::-1], s.devices[::-1])
            return self.per_piece(rev, ax, lambda i, p: ir.flip(p, n.arg))
        if op is Op.PAD:
            widths, value = n.arg
            if widths[ax] != (0, 0):
                return None
            return self.per_piece(s, ax, lambda i, p: ir.pad(p, widths, value))
        if op is Op.RESHAPE:
            mapped = _reshape_axis(n.srcs[0].shape, n.shape, ax, s.bounds())
            if mapped is None:
                return None
            new_ax, bounds = mapped
            return self.per_piece(s, new_ax, lambda i, p: ir.reshape(p, _with(n.shape, new_ax, bounds[i + 1] - bounds[i])))
        if op is Op.REDUCE:
            rop, axes = n.arg
            if ax not in axes:
                return self.per_piece(s, ax, lambda i, p: ir.reduce(rop, p, axes))
            partials = [pin(self.mark(ir.reduce(rop, p, axes), d), d) for p, d in zip(s.pieces, s.devices)]
            combine = (_COMBINE_BOOL if n.dtype.is_bool else _COMBINE)[rop]
            total = partials[0]
            for p in partials[1:]:  # a fixed order: the devices' order, whoever runs it
                total = ir.binary(combine, total, p)
            return total
        return None


def _with(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    return tuple(size if k == axis else d for k, d in enumerate(shape))


def _reshape_axis(old: tuple[int, ...], new: tuple[int, ...], axis: int,
                  bounds: list[int]) -> tuple[int, list[int]] | None:
    """The axis of `new` that the shards of `old`'s `axis` (boundaries `bounds`) become, and their new
    boundaries, when every shard stays a slab along one axis; else None."""
    outer, inner = prod(old[:axis]), prod(old[axis + 1:])
    for b in range(len(new)):
        if prod(new[:b]) != outer:
            continue
        rest = prod(new[b + 1:])
        if rest and all(k * inner % rest == 0 for k in bounds) and new[b] > 1:
            return b, [k * inner // rest for k in bounds]
    return None


def distribute(targets: list[Node]) -> dict[int, str]:
    """Rewrite `targets` (in place, same values) to run per shard where they depend on sharded tensors;
    gives node id -> device for the per-shard nodes (empty when nothing is sharded)."""
    if not _SHARDED.data and not _MADE.data:  # (the dicts' own: len() of a weak dictionary is a Python call)
        return {}
    targets = [t for t in targets if t.op is not Op.LEAF]
    order = toposort(targets)
    if not any(n in _SHARDED or n in _MADE for n in order):
        return {}
    p = _Pass(max(n.id for n in order))
    for n in order:
        p.form[n.id] = p.visit(n)
        dev = _MADE.get(n)
        if dev is not None:
            p.affinity.setdefault(n.id, dev)
    for t in targets:
        f = p.whole(p.form[t.id])
        if f is t:
            continue
        # t becomes an identity of its rewritten form (which may be a leaf or a piece: not copied into t)
        t.op, t.srcs, t.arg = Op.RESHAPE, (f,), t.shape
        if f.id in p.affinity:
            p.affinity[t.id] = p.affinity[f.id]
    made = {n.id: n for n in toposort(targets)}  # the rewritten graph
    for nid, dev in p.affinity.items():
        if nid in made:
            _MADE[made[nid]] = dev
    return p.affinity
