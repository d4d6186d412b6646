"""Driver side: the realize of tensors that depend on value checks (graph/guards.py: a gather's tensor index
in range). Takes the session, the nodes to realize and their pending guards; computes the nodes and each
guard's check node in one realize (one plan: the checks are small reductions beside the kernels), reads
the checks back in one batch per device (`Readback._copy_out`, sent as a replay is), and hands the results
out only where every check passed. Where one failed, the results go back to being unrealized computations
(their buffers freed), so no tensor is left holding a gather's zeros, and an `IndexError` names the first
bad index, the axis and its size, as NumPy's does; a later realize that depends on that gather raises the
same error without computing anything.
"""

from __future__ import annotations

from typing import Any

from ..graph import companions
from ..graph.guards import IndexGuard
from ..graph.ir import Node, Op


def realize_checked(s: Any, nodes: list[Node], guards: list[IndexGuard]) -> None:
    """Realize `nodes`, whose `guards` (pending, each once) must pass; raises IndexError (nothing changed
    but the leaves uploaded on the way) where one does not."""
    for g in guards:
        if g.message is not None:  # failed before: its realize would read the same zeros
            raise IndexError(g.message)
    checks = [g.check for g in guards]
    computed = [n for n in companions.with_companions(nodes) if n.op is not Op.LEAF]
    saved = [(n, n.op, n.srcs, n.arg, n.lineage, n.guards) for n in computed]
    s._realize([*nodes, *[c for c in checks if not c.realized]], checked=True)
    try:
        failed = [g for g, bad in zip(guards, s._copy_out(checks, compiled=True)) if bad.any()]
    except BaseException:  # (a lost worker: the retry must not find the results realized and unchecked)
        _unrealize(saved)
        raise
    if not failed:
        for g in guards:
            g.settle()
        return
    _unrealize(saved)
    recorder, s.recorder = s.recorder, None  # (reading the index is the error's business, not a zd.jit read)
    try:
        messages = [g.fail(s.read(g.idx)) for g in failed]
    finally:
        s.recorder = recorder
    raise IndexError(messages[0])


def _unrealize(saved: list[tuple]) -> None:
    """The nodes of `saved` (node, op, srcs, arg, lineage, guards) computations again, as they were before
    the realize: dropping each one's buffer frees it."""
    for n, op, srcs, arg, lineage, guards in saved:
        n.op, n.srcs, n.arg, n.lineage, n.guards, n.buffer = op, srcs, arg, lineage, guards, None
