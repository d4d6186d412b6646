"""Driver side: a fused kernel as plain data (`protocol.KernelOps`), for devices that interpret kernels
instead of compiling their source (the reference device). Takes a `Kernel` from the kernelizer; gives its
inputs' shapes and dtypes, its ops in topological order with plain arguments (names of enum members and
dtypes, tuples of ints, constants) and the rows of its outputs. One iterative walk, as the renderer's.
"""

from __future__ import annotations

import enum

from ..dtypes import DType
from ..fuse.kernelize import Kernel
from ..graph.ir import Node, Op, toposort
from ..protocol import KernelOps


def _plain(n: Node) -> object:
    """The node's argument with enum members and dtypes by name (pad: widths and value; reduce: op and axes)."""
    arg = n.arg
    if isinstance(arg, enum.Enum):
        return arg.value
    if isinstance(arg, DType):
        return arg.name
    if n.op is Op.REDUCE:
        return (arg[0].value, tuple(arg[1]))
    return arg


def kernel_ops(kernel: Kernel) -> KernelOps:
    """The kernel's op list: every node between its inputs and its outputs, producers first."""
    position = {n.id: i for i, n in enumerate(kernel.inputs)}
    row_of: dict[int, int] = {}
    rows: list[tuple] = []
    for n in toposort(kernel.outputs, stop=lambda x: x.id in position):
        if n.id in position:
            row = ("input", position[n.id], n.shape, n.dtype.name, ())
        else:
            row = (n.op.value, _plain(n), n.shape, n.dtype.name, tuple(row_of[s.id] for s in n.srcs))
        row_of[n.id] = len(rows)
        rows.append(row)
    inputs = tuple((n.shape, n.dtype.name) for n in kernel.inputs)
    return KernelOps(inputs, tuple(rows), tuple(row_of[o.id] for o in kernel.outputs))
