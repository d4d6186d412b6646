"""The actor side of zyx_dist: what runs next to a device. A `Worker` takes batches of protocol
commands (`zyx_dist.protocol`) naming buffers and programs by integer ids, executes them in order and
asynchronously on one device queue (memory from a `MemoryPool`, ordering from per-buffer events), and
gives back a `BatchResult` of plain values. Only `runtime/opencl.py` imports pyopencl, and only when
a worker opens an OpenCL device.
"""

from __future__ import annotations

from .worker import Worker

__all__ = ["Worker"]
