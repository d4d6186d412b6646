"""Driver side: chains of movement ops composed into strided views, so that their index arithmetic is
bounded by the rank of the tensors, not by the length of the chain. Takes a node reached through
reshape, permute, expand, flip and crop (a pad that only cuts) ops; gives the node underneath and a
stack of `View`s, lowest first: each maps an index of its shape to a flat position in the row-major
layout of the shape below it (the node's, for the lowest). A reshape that merges or splits dims that
are contiguous in the current view stays one view; only a reshape that no strides over the current view
can express starts a new view, which the renderer turns into one flat-index temporary and its digits.
Padding that adds elements ends a chain: its validity condition and value belong to the renderer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..graph.ir import Node, Op, is_crop
from . import symbolic as sym


@dataclass(frozen=True)
class View:
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # 0 along expanded dims and dims of size 1
    offset: int

    def index(self, idx: tuple) -> sym.Expr:
        """The flat position of the element at `idx` (one expression per dim)."""
        return sym.add(self.offset, *[sym.mul(e, s) for e, s in zip(idx, self.strides) if s])


def contiguous(shape: tuple[int, ...]) -> View:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc if d != 1 else 0)
        acc *= d
    return View(tuple(shape), tuple(reversed(out)), 0)


def is_view_op(n: Node) -> bool:
    """Ops that only move or drop elements (they become strides and an offset)."""
    return n.op in (Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.FLIP) or is_crop(n)


def reshape(v: View, shape: tuple[int, ...]) -> View | None:
    """v seen with `shape` (same size), when strides can express it: the dims of v are merged into runs
    that are contiguous in memory, and each new dim must lie inside one run. None otherwise."""
    runs: list[list[int]] = []  # [size, stride of its innermost dim], innermost run first
    for d, s in zip(reversed(v.shape), reversed(v.strides)):
        if d == 1:
            continue
        if runs and s == runs[-1][1] * runs[-1][0]:
            runs[-1][0] *= d
        else:
            runs.append([d, s])
    strides = [0] * len(shape)
    run, left, step = 0, runs[0][0] if runs else 1, runs[0][1] if runs else 0
    for k in reversed(range(len(shape))):
        d = shape[k]
        if d == 1:
            continue
        while left == 1:  # this run is used up: on to the next one
            run += 1
            left, step = runs[run]
        if left % d:
            return None
        strides[k], left, step = step, left // d, step * d
    return View(tuple(shape), tuple(strides), v.offset)


def apply(v: View, n: Node) -> View | None:
    """The view of movement node n over the view v of its source (None: a reshape strides cannot express)."""
    if n.op is Op.RESHAPE:
        return reshape(v, n.shape)
    if n.op is Op.PERMUTE:
        return View(tuple(v.shape[a] for a in n.arg), tuple(v.strides[a] for a in n.arg), v.offset)
    if n.op is Op.EXPAND:
        return View(n.shape, tuple(0 if d != e else s for d, e, s in zip(v.shape, n.shape, v.strides)), v.offset)
    if n.op is Op.FLIP:
        offset = v.offset + sum((v.shape[a] - 1) * v.strides[a] for a in n.arg)
        return View(v.shape, tuple(-s if a in n.arg else s for a, s in enumerate(v.strides)), offset)
    widths = n.arg[0]  # a crop: start further in, keep the strides
    offset = v.offset + sum(-lo * s for (lo, _), s in zip(widths, v.strides))
    return View(n.shape, tuple(0 if d == 1 else s for d, s in zip(n.shape, v.strides)), offset)


def chain(n: Node, stop) -> tuple[Node, list[View]]:
    """The node under the movement ops above it, starting at n (down to a node that is no movement op or
    for which `stop` holds), and the views that lead there, lowest first."""
    ops = []
    while is_view_op(n) and not stop(n):
        ops.append(n)
        n = n.srcs[0]
    views = [contiguous(n.shape)]
    for op in reversed(ops):
        v = apply(views[-1], op)
        if v is None:
            views.append(contiguous(op.shape))
        else:
            views[-1] = v
    return n, views
