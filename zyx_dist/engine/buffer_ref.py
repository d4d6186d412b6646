"""Driver side: the driver's handle of one device buffer (`BufferRef`), which a realized node holds in `buffer`. Takes
the session, the node, the worker's device and the buffer's id and size; gives the handle, which registers its node in
the session's `holders` (for recovery) and queues the buffer's free when it is garbage collected. `refuse_foreign`
refuses a plan's leaves that another session made, `refuse_stale` a read of a shut-down session's data."""

from __future__ import annotations

import weakref
from typing import Any

from ..errors import DeviceError, ZyxError
from ..graph.ir import Node, toposort


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


def refuse_foreign(session: Any, leaves: list[Node], kernels: list) -> None:
    """ZyxError for a leaf whose buffer another session held (one shut down: the ids of a later one's buffers run on
    past its own, so nothing of this session's is read), DeviceError for a kernel or leaf pinned to a device that
    `session` does not have (a tensor made in another session)."""
    for x in leaves:
        if x.buffer is not None and x.buffer.session() is not session:
            raise ZyxError(f"tensor #{x.id} {x.shape} {x.dtype} belongs to another session: its data was freed by "
                           "zd.shutdown() (or that session is set aside), and a tensor cannot move between sessions")
    devices = session.state.devices
    pinned = {k.device for k in kernels if k.device is not None} | {x.device for x in leaves if x.device}
    for dev in sorted(pinned - devices.keys()):
        raise DeviceError(f"a tensor is pinned to device {dev!r}, which this session does not have (its devices: "
                          f"{', '.join(devices)})")


def refuse_stale(nodes: tuple | list) -> None:
    """With no session running, every buffer a tensor holds is a shut-down session's: ZyxError for the first that
    `nodes` reach (a walk that stops at realized nodes), before a session is started only to refuse it."""
    for x in toposort(list(nodes), stop=lambda n: n.buffer is not None):
        if x.buffer is not None:
            raise ZyxError(f"tensor #{x.id} {x.shape} {x.dtype} was computed in a session that zd.shutdown() ended "
                           "(or one set aside): its data was freed, and no later session can read it")
