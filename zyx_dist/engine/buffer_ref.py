"""Driver side: the driver's handle of one device buffer (`BufferRef`), which a realized node holds in `buffer`. Takes
the session, the node, the worker's device and the buffer's id and size; gives the handle, which registers its node in
the session's `holders` (for recovery) and queues the buffer's free when it is garbage collected."""

from __future__ import annotations

import weakref
from typing import Any

from ..graph.ir import Node


class BufferRef:
    """The driver's handle of one device buffer of `session` (an engine.session.Session), held by `node`, which the
    session's `holders` name (for recovery); freed on the worker when garbage collected (its `__del__` queues the
    free: cheaper than a weakref.finalize per buffer, which a replayed realize would pay)."""

    __slots__ = ("__weakref__", "computed", "device", "frees", "id", "nbytes", "session")

    def __init__(self, session: Any, node: Node, device: str, buf: int, nbytes: int, computed: bool = False):
        self.id, self.device, self.nbytes = buf, device, nbytes
        self.computed = computed  # a realize computed it (not host data uploaded): graph/autograd.py's warning
        self.session = session.weak  # weakref.ref(session), made once
        self.frees = session.pending_frees
        session.holders[buf] = weakref.ref(node)

    def __del__(self) -> None:
        self.frees.append((self.device, self.id))
