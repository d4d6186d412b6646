"""Driver side: reading a view without a kernel. A tensor that is only movement ops (reshape, permute,
expand, pad/crop, flip) over a constant, a host leaf or a realized buffer holds no new values: reading
it is the source's values moved by NumPy. `movement_chain` takes a node and gives its source and the
movement nodes above it (or None when anything else is in the way); `apply` replays them on an array.
The session uses this so that `x[i].item()` on a small realized tensor reads the buffer instead of
compiling a kernel per index (the index offsets are part of a kernel's source).
"""

from __future__ import annotations

import numpy as np

from .ir import Node, Op

_MOVES = (Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.PAD, Op.FLIP)


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
