"""Driver side: reading a view without a kernel. A tensor that is only movement ops (reshape, permute,
expand, pad/crop, flip) over a constant, a host leaf or a realized buffer holds no new values: reading
it is the source's values moved by NumPy. `movement_chain` takes a node and gives its source and the
movement nodes above it (or None when anything else is in the way); `apply` replays them on an array.
The session uses this so that `x[i].item()` on a small realized tensor reads the buffer instead of
compiling a kernel per index (the index offsets are part of a kernel's source), and `small_views` finds
the small offset views that a graph about to run reads, which the session turns into host leaves
(`to_host_leaf`) so that `x[i] * y[j]` compiles one kernel for every i and j, not one per pair.
"""

from __future__ import annotations

import numpy as np

from . import history
from .ir import MOVEMENT_OPS as _MOVES
from .ir import SMALL_OFFSET_VIEWS, SMALL_VIEW, Node, Op


def movement_chain(node: Node) -> tuple[Node, list[Node]] | None:
    """(source, moves from the source up to `node`) when `node` is movement over a constant or a leaf."""
    moves: list[Node] = []
    n = node
    while n.op in _MOVES:
        if n.device is not None:  # `x.to(device)`: a transfer the user asked for, not only a view
            return None
        moves.append(n)
        n = n.srcs[0]
    if n.op is Op.CONST or n.op is Op.LEAF:
        moves.reverse()
        return n, moves
    return None


def apply(arr: np.ndarray, moves: list[Node]) -> np.ndarray:
    """The source array moved as `moves` say (a fresh C-contiguous array)."""
    for m in moves:
        if m.op is Op.RESHAPE:
            arr = arr.reshape(m.arg)
        elif m.op is Op.PERMUTE:
            arr = arr.transpose(m.arg)
        elif m.op is Op.EXPAND:
            arr = np.broadcast_to(arr, m.arg)
        elif m.op is Op.FLIP:
            arr = np.flip(arr, m.arg)
        else:  # PAD: negative widths crop, positive ones pad with the value
            widths, value = m.arg
            arr = arr[tuple(slice(-lo if lo < 0 else 0, d + hi if hi < 0 else d)
                            for (lo, hi), d in zip(widths, arr.shape))]
            grow = tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths)
            if any(lo or hi for lo, hi in grow):
                arr = np.pad(arr, grow, constant_values=np.array(value, dtype=arr.dtype))
    return np.array(arr, order="C", copy=True)


def small_views(roots: list[Node], source_ok) -> list[Node]:
    """The movement nodes reachable from `roots` that crop, pad or flip (so their offsets would be part of
    a kernel's source), hold at most SMALL_VIEW elements (ir.py: views up to this size are worth a host read
    to keep offsets out of kernels), and sit on a leaf that `source_ok` accepts. One walk, stopping at leaves
    and at the views found; none when no small pad or flip is alive. That skip is exact: a view found has a
    PAD or FLIP in its chain, and the moves above the last one (reshape, permute, expand) never shrink a
    tensor (an expand to no elements is folded into a constant), so that PAD or FLIP, reachable and so
    alive, holds at most SMALL_VIEW elements, and ir.noted has put it in SMALL_OFFSET_VIEWS."""
    if not SMALL_OFFSET_VIEWS:
        return []
    found: list[Node] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n.id in seen or n.op is Op.LEAF or n.op is Op.CONST:
            continue
        seen.add(n.id)
        if n.op in _MOVES and n.size <= SMALL_VIEW:
            chain = movement_chain(n)
            if chain is not None and chain[0].op is Op.LEAF and any(m.op in (Op.PAD, Op.FLIP) for m in chain[1]) \
                    and source_ok(chain[0]):
                found.append(n)
                continue
        stack.extend(n.srcs)
    return found


def to_host_leaf(node: Node, values: np.ndarray) -> None:
    """Turn a view into a host leaf of its values (value-preserving: every graph that uses it is unchanged); its
    movement stays in graph/history.py for a while, so a gradient taken after the realize still flows through it."""
    history.view(node)
    node.op, node.srcs, node.arg, node.buffer, node.host = Op.LEAF, (), None, None, values
