"""Driver side: the session's zero-copy exchange with other array libraries (DLPack, API.md section 10).
Takes a realized tensor's node or a DLPack producer; gives the buffer itself as an array of the library
that owns such memory (through the backend's `export_buffer`), or a realized leaf over the producer's
memory adopted by a worker (`adopt_buffer`); None where the memory is out of this process's reach, so the
caller (frontend/interop.py) makes a host copy. `Exchange` is a part of `engine.session.Session`.
"""

from __future__ import annotations

from typing import Any

from .._util import bucket_size
from ..dtypes import dtype as to_dtype
from ..graph.ir import Node, Op
from ..sched.scheduler import BufferState
from .buffer_ref import BufferRef


class Exchange:
    """Session methods for DLPack export and adoption (they use the session's backend, state and mirror)."""


    def export(self, node: Node) -> Any:
        """The realized `node`'s buffer as an array sharing the device memory (read-only NumPy for a CPU
        OpenCL worker, CuPy for a CUDA worker), holding the buffer's driver handle so the buffer stays
        allocated while the array lives; None when the buffer is not in this process's reach (a Ray
        worker, a GPU OpenCL device, a spilled buffer): the caller reads a host copy then."""
        export_buffer = getattr(self.backend, "export_buffer", None)
        ref = node.buffer
        if export_buffer is None or ref is None or ref.session() is not self or node.size == 0:
            return None
        self._take_frees()
        b = self.state.buffers.get(ref.id)
        if b is None or b.spilled:
            return None
        return export_buffer(ref.device, ref.id, node.dtype.name, node.shape, ref)

    def export_device(self, node: Node) -> tuple[int, int] | None:
        """The DLPack device of what `export(node)` would give, or None when it would give nothing."""
        ref = node.buffer
        get = getattr(self.backend, "export_device", None)
        if get is None or ref is None or ref.session() is not self:
            return None
        return get(ref.device)

    def adopt(self, obj: Any, device: str | None) -> Node | None:
        """A realized leaf over the memory of the DLPack producer `obj`, adopted by the worker of `device`
        (default: the session's default device) without a copy, when that worker can reach the memory
        (host memory on a CPU OpenCL worker, the same GPU on a CUDA worker, both in this process).
        None otherwise: the caller makes a host copy."""
        adopt_buffer = getattr(self.backend, "adopt_buffer", None)
        if adopt_buffer is None:
            return None
        dev = self.resolve_device(device) or self.default_device
        buf = self.state.new_id()
        got = adopt_buffer(dev, buf, obj)
        if got is None:
            return None
        nbytes, dtype_name, shape = got
        self.state.buffers[buf] = BufferState(dev, nbytes, last_use=self.state.clock)
        self.state.used[dev] += bucket_size(nbytes)
        node = Node(Op.LEAF, (), None, shape, to_dtype(dtype_name))
        node.buffer = BufferRef(self, node, dev, buf, nbytes)
        return node
