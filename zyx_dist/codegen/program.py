"""Driver side: what rendering a kernel gives, and the key it is cached by. Takes a `Kernel` (for its key);
gives the `Program` record (source, entry name, work sizes, cost figures, the options that made it) that
codegen/render.py fills and the tuner, the session and the workers pass around, and `kernel_key`, the
structural key under which equal kernels share one program.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import DType
from ..fuse.kernelize import Kernel
from ..graph.ir import IOTA, Op, toposort
from ..protocol import KernelOps
from .options import KernelOpts


@dataclass(frozen=True)
class Program:
    name: str
    source: str
    gws: tuple[int, ...]
    lws: tuple[int, ...] | None
    uses_fp64: bool
    flops: int
    bytes: int
    dialect: str = "opencl"
    opts: KernelOpts | None = None
    ops: KernelOps | None = None  # the kernel as an op list, for a device that interprets it (autotune.Target)


def kernel_key(k: Kernel) -> tuple:
    """A structural key of the kernel (ops, shapes, dtypes; inputs by position): equal keys render equal
    code. Rows come producers first (a worklist, so a graph of any depth has a key)."""
    pos = {n.id: i for i, n in enumerate(k.inputs)}
    local: dict[int, int] = {}
    rows: list[tuple] = []
    for n in toposort(k.outputs, stop=lambda x: x.id in pos):
        if n.id in pos:
            row: tuple = ("in", pos[n.id], n.shape, n.dtype.name)
            if n.op is Op.LEAF and n.arg == IOTA:  # rendered from the index, not loaded
                row += (IOTA,)
        else:
            arg = n.arg.name if isinstance(n.arg, DType) else n.arg
            row = (n.op.value, repr(arg), n.shape, n.dtype.name, tuple(local[s.id] for s in n.srcs))
        local[n.id] = len(rows)
        rows.append(row)
    return tuple(rows), tuple(local[o.id] for o in k.outputs), k.row
