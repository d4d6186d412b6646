"""Driver side: the realize of tensors that depend on value checks (graph/guards.py: a gather's tensor index
in range). Takes the session, the nodes to realize and their pending guards; computes the nodes and each
guard's check node in one realize (one plan: the checks are small reductions beside the kernels), reads
the checks back in one batch per device, and hands the results out only where every check passed. Where
one failed, the results go back to being unrealized computations (their buffers freed), so no tensor is
left holding a gather's zeros, and an `IndexError` names the first bad index, the axis and its size, as
NumPy's does; a later realize that depends on that gather raises the same error without computing
anything.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import companions
from ..graph.guards import IndexGuard
from ..graph.ir import Node, Op
from ..protocol import CopyOut, Failed
from .failures import worker_error


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
        failed = [g for g, bad in zip(guards, read_realized(s, checks)) if bad.any()]
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


def read_realized(s: Any, nodes: list[Node]) -> list[np.ndarray]:
    """The values of realized `nodes`, copied out in one batch per device."""
    by_device: dict[str, list[tuple[int, CopyOut]]] = {}
    for i, n in enumerate(nodes):
        ref = n.buffer
        by_device.setdefault(ref.device, []).append((i, CopyOut(ref.id, n.dtype.name, n.shape)))
    step = {dev: [c for _i, c in outs] for dev, outs in by_device.items()}
    # (as a replay's steps are sent: through Ray a compiled graph's round trip, not a plain actor call's ~1 ms)
    results = s._run([step], compiled=True)[-1]
    values: list[Any] = [None] * len(nodes)
    for dev, outs in by_device.items():
        got = results[dev].results[-len(outs):]  # (the queued frees' results come first)
        for (i, _c), r in zip(outs, got):
            if isinstance(r, Failed):
                raise worker_error(dev, r)
            values[i] = r.value
    return values
