"""Driver side: how the session reads a tensor's value back (API.md section 4) and the small views it
reads on the host instead of compiling a kernel for them. Takes a node; gives its value as a NumPy
array: a host leaf's copy, a constant, a view of host data or of a small realized buffer moved on the
host, or the buffer copied out of its worker (realizing it first). `Readback` is a part of
`engine.session.Session`.
"""

from __future__ import annotations

import numpy as np

from ..errors import WorkerLostError, ZyxError
from ..graph import host_view
from ..graph.ir import Node, Op
from ..protocol import CopyOut, Failed
from .backends import LostWorkers
from .failures import worker_error

# a view of a realized buffer up to this size is read by copying the buffer out (see Readback._read_view)
HOST_VIEW_BYTES = 1 << 20
# realizes of results up to this size read their small views on the host first (see Readback._host_small_views)
SMALL_RESULT_BYTES = 64 << 10


def _nbytes(n: Node) -> int:
    return n.size * n.dtype.itemsize


class Readback:
    """Session methods that read values back (they use the session's backend, config and mirror)."""

    def read(self, node: Node) -> np.ndarray:
        """The node's value, recovering lost workers and trying again up to `ray.max_restarts` times."""
        if self.recorder is not None:  # a zd.jit function reads a value back
            self.recorder(None, None)
        for _ in range(self.config.ray.max_restarts + 1):
            try:
                return self._read(node)
            except LostWorkers as e:
                self.recover(e.devices)
        raise WorkerLostError(f"workers kept failing while reading tensor #{node.id} {node.shape}")

    def _read(self, node: Node) -> np.ndarray:
        if node.op is Op.LEAF and node.buffer is None and node.host is not None:
            return node.host.copy()
        if node.op is Op.CONST:
            return np.full(node.shape, node.arg, node.dtype.np_dtype)
        if not node.realized:
            view = self._read_view(node)
            if view is not None:
                return view
            self._realize([node])
        if node.size == 0:
            return np.zeros(node.shape, node.dtype.np_dtype)
        ref = node.buffer
        if ref.session() is not self:
            raise ZyxError(f"the data of this tensor {node.shape} was freed by zd.shutdown()")
        value = self._copy_out([node])[0]
        return value if value.flags.writeable else value.copy()  # Ray hands out read-only views

    def _copy_out(self, nodes: list[Node], compiled: bool = False) -> list[np.ndarray]:
        """The values of realized `nodes` of this session, copied out in one batch per device; `compiled`: sent
        as a replay's steps are (through Ray a compiled graph's round trip, for small values read on every
        step: engine/index_checks.py)."""
        by_device: dict[str, list[tuple[int, CopyOut]]] = {}
        for i, n in enumerate(nodes):
            ref = n.buffer
            by_device.setdefault(ref.device, []).append((i, CopyOut(ref.id, n.dtype.name, n.shape)))
        step = {dev: [c for _i, c in outs] for dev, outs in by_device.items()}
        results = self._run([step], compiled=compiled)[-1]
        values: list = [None] * len(nodes)
        for dev, outs in by_device.items():
            got = results[dev].results[-len(outs):]  # (the queued frees' results come first)
            for (i, _c), r in zip(outs, got):
                if isinstance(r, Failed):
                    raise worker_error(dev, r)
                values[i] = r.value
        return values

    def _small_source(self, leaf: Node) -> bool:
        """A leaf whose small views are read on the host at plan time: host data, or a realized buffer of
        this session no larger than HOST_VIEW_BYTES."""
        if leaf.buffer is None:
            return leaf.host is not None
        return leaf.realized and leaf.buffer.session() is self and _nbytes(leaf) <= HOST_VIEW_BYTES

    def _read_view(self, node: Node) -> np.ndarray | None:
        """A view (movement ops only) of a constant, a host leaf, or a realized buffer no larger than
        HOST_VIEW_BYTES (or than a few times the view), read as its source moved on the host: no
        kernel, whose source would differ for every index and offset. None: compute it on a device."""
        chain = host_view.movement_chain(node)
        if chain is None:
            return None
        src, moves = chain
        if src.op is Op.LEAF and src.buffer is not None:
            nbytes = _nbytes(src)
            if nbytes > max(HOST_VIEW_BYTES, 4 * _nbytes(node)) or not src.realized:
                return None
        elif src.op is Op.LEAF and src.host is None:
            return None
        return host_view.apply(self._read(src), moves)

    def _host_small_views(self, todo: list[Node]) -> bool:
        """In-process workers and small results (where a compile, not the run, is the cost): a small view
        costs a memcpy, and keeping its offsets out of the kernel saves a compile per offset. This rewrites
        the graph, so it comes before the plan cache's lookup (whose key is the rewritten structure). Whether
        it rewrote any."""
        if not host_view.SMALL_OFFSET_VIEWS.data:  # no small pad or flip alive: no view to find (small_views)
            return False
        views = []
        if self.host_copies is None and sum(_nbytes(n) for n in todo) <= SMALL_RESULT_BYTES:
            views = host_view.small_views(todo, self._small_source)
            for view in views:
                host_view.to_host_leaf(view, self._read(view))
        return bool(views)
