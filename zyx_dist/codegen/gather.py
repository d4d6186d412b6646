"""Driver side: the renderer's gathers. A gather by a tensor index (frontend/movement.py `_gather`) is written with the
public ops as a one-hot reduce: the sum over an axis of where(p == arange(n), x, 0), which as a loop reads the whole
axis for every element. Takes the reduce node at a symbolic index, inside `render._Renderer` (this class is its
base); gives, where the pattern holds (the arange an `ir.IOTA` leaf along the axis, p free of it), one load of x
at p guarded by 0 <= p < n, and no loop: an embedding lookup reads one row per id.
"""

from __future__ import annotations

from collections.abc import Generator

from ..dtypes import bool_
from ..graph.ir import IOTA, BinaryOp, Node, Op, ReduceOp
from . import symbolic as sym
from .cexpr import flat_index, literal, render_conds
from .symbolic import tangled
from .views import chain, is_view_op


class OneHotGather:
    """The gather half of the renderer: it uses the renderer's inputs, overrides, root block, counter and `var`."""

    def one_hot(self, n: Node, idx: tuple) -> tuple[Node, tuple, int] | None:
        """(p's node, its index, the axis) when reduce `n` picks one element along its axis, as a gather by a
        tensor index does (frontend/movement.py `_gather`): a sum (for bool, a max) over one axis of
        where(p == arange, x, 0), the arange an `ir.IOTA` leaf running along the axis and p free of it."""
        rop, axes = n.arg
        src = n.srcs[0]
        if len(axes) != 1 or rop is not (ReduceOp.MAX if n.dtype is bool_ else ReduceOp.SUM) or src.op is not Op.WHERE:
            return None
        stop = self._stops
        zero, _ = chain(src.srcs[2], stop) if is_view_op(src.srcs[2]) else (src.srcs[2], [])
        if zero.op is not Op.CONST or zero.arg != 0:
            return None
        a = axes[0]
        probe = sym.Var(f"q{self.count}", 0, src.shape[a] - 1)
        inner = tuple(probe if i == a else e for i, e in enumerate(idx))
        eq, at_eq = self._under(src.srcs[0], inner)
        if eq is None or eq.op is not Op.BINARY or eq.arg is not BinaryOp.EQ:
            return None
        sides = [self._under(x, at_eq) for x in eq.srcs]
        for i, (base, at_base) in enumerate(sides):
            if base is not None and base.op is Op.LEAF and base.arg == IOTA and at_base == (probe,):
                other = eq.srcs[1 - i]
                if self._free_of(other, at_eq, probe.name):
                    return other, at_eq, a
        return None

    def _stops(self, x: Node) -> bool:
        return x.id in self.inputs or x.id in self.overrides

    def _under(self, x: Node, idx: tuple) -> tuple[Node | None, tuple]:
        """The node under x's views and its index there, without emitting code (None where a reshape would
        need a temporary)."""
        if not is_view_op(x) or self._stops(x):
            return x, idx
        base, views = chain(x, self._stops)
        flat = views[-1].index(idx)
        for v in reversed(views[:-1]):
            ix = flat_index(v.shape, flat)
            if any(tangled(e) for e in ix):
                return None, idx
            flat = v.index(ix)
        ix = flat_index(base.shape, flat)
        return (None, idx) if any(tangled(e) for e in ix) else (base, ix)

    def _free_of(self, x: Node, idx: tuple, name: str) -> bool:
        """Whether x's value at idx does not depend on variable `name` (through views, elementwise ops, loads)."""
        stack, visits = [(x, idx)], 0
        while stack:
            n, ix = stack.pop()
            visits += 1
            if visits > 256:
                return False
            if n.op is Op.CONST:
                continue
            if self._stops(n):
                if any(name in sym.variables(e) for e in ix):
                    return False
                continue
            if is_view_op(n):
                base, at = self._under(n, ix)
                if base is None:
                    return False
                stack.append((base, at))
            elif n.op in (Op.UNARY, Op.BINARY, Op.CAST, Op.WHERE):
                stack.extend((s, ix) for s in n.srcs)
            else:
                return False
        return True

    def picked(self, n: Node, idx: tuple, valid: frozenset, other: Node, at_eq: tuple,
               a: int) -> Generator[tuple, tuple, tuple]:
        """`one_hot`'s reduce as one guarded evaluation of x at p (0 where p is outside the axis), no loop."""
        src = n.srcs[0]
        size = src.shape[a]
        p, _ = yield other, at_eq, valid, self.root
        if not p.isidentifier():
            p = self.var(self.root, other.dtype, p)
        guard = sym.cond(sym.Var(p, -(2**62), 2**62), 0, size - 1)
        inner = tuple(sym.Var(p, 0, size - 1) if i == a else e for i, e in enumerate(idx))
        v, _ = yield src.srcs[1], inner, valid | {guard}, self.root
        self.flops += 1
        return self.var(self.root, n.dtype, f"({render_conds({guard})} ? {v} : {literal(0, n.dtype, self.d)})"), self.root
