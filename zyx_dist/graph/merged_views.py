"""Driver side, pure: what graph/ir.py's view constructors record where they merge two views into one (a reshape
of a reshape, a permute of a permute, an expand of an expand, a flip of a flip, a crop of a pad), so that a gradient
with respect to the view the user holds (graph/autograd.py) still finds it. Takes the merged node, the op and
argument it was asked for and the view it was built on; gives the node with its `merged` record, or for two views
that cancel an identity reshape holding one.
"""

from __future__ import annotations

from typing import Any

from .node import Node, _c_node
from .opset import Op


# A view merged into the view below it (a reshape of a reshape, a permute of a permute, an expand of an expand, a
# flip of a flip, a crop of a pad) reads the lower view's source, so the view the user built it on is not in the
# graph: the node records (op, arg, that view) in its `merged` field, and a gradient with respect to that view
# (autograd.py) walks through it. Where the two views cancel, the result is an identity reshape of that source
# (`kept_view`), a node of its own to hold the record (the source itself may be read by other nodes too); a view of it
# merges it away again. Both only while views are tracked (`track_views`; graph/_node.c keeps its own copy): the
# gradient pass builds its own graphs, where nobody holds a view to differentiate by, with tracking off (for the
# pass's duration, restored after it), and cancelled views give the source itself.
class _Tracking:
    __slots__ = ("views",)

    def __init__(self) -> None:
        self.views = True


TRACKING = _Tracking()


def track_views(on: bool) -> bool:
    """Whether merged views record what they were built on, here and in graph/_node.c; the old setting."""
    was, TRACKING.views = TRACKING.views, bool(on)
    if _c_node is not None:
        _c_node.track_views(TRACKING.views)
    return was


def merged_view(out: Node, op: Op, arg: Any, view: Node) -> Node:
    """`out`, op(view, arg) built on view's source, with its record (while views are tracked)."""
    if TRACKING.views:
        out.merged = (op, arg, view)
    return out


def kept_view(op: Op, arg: Any, view: Node, source: Node) -> Node:
    """op(view, arg) where it cancels `view` (whose source is `source`): source, or, while views are tracked, an
    identity reshape of source recording what it was built as (a gradient with respect to `view` finds it there)."""
    if not TRACKING.views:
        return source
    return merged_view(Node(Op.RESHAPE, (source,), source.shape, source.shape, source.dtype), op, arg, view)
