"""Driver side, pure (no I/O, no ray/cupy/pyopencl): turns kernels into per-device command lists.
Takes the kernelizer's kernels with their rendered programs and what the driver knows (where each
realized buffer lives, which programs each device has compiled, what each device supports); gives a
`Schedule`: the commands for each device in order, the buffers to attach to output nodes on success,
and the host-side moves needed first. Placement here is the simple rule of one device: a pinned
kernel goes where it is pinned, else where its first realized input lives, else to the default device.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dtypes import float64
from .errors import DTypeError
from .graph import Node, Op
from .kernelize import Kernel
from .protocol import Alloc, Command, Compile, CopyIn, Free, Launch


@dataclass
class DeviceState:
    """What the driver mirrors of one device."""

    name: str
    fp64: bool
    compiled: dict[str, int] = field(default_factory=dict)  # program name -> program id


@dataclass
class Schedule:
    commands: dict[str, list[Command]]
    outputs: dict[int, tuple[str, int, int]]  # node id -> (device, buffer id, nbytes) to attach on success
    uploads: dict[int, tuple[str, int, int]]  # leaf node id -> (device, buffer id, nbytes), host data sent
    moves: list[tuple[Node, str, int, int]]  # (realized node, destination, buffer id, nbytes): read then CopyIn
    compiled: dict[tuple[str, str], int] = field(default_factory=dict)  # new programs, kept on success
    launches: int = 0
    cache_hits: int = 0
    placements: list[tuple[str, str, str]] = field(default_factory=list)  # (kernel, device, reason)


class IdAllocator:
    def __init__(self) -> None:
        self.next = 1

    def __call__(self) -> int:
        self.next += 1
        return self.next - 1


def _nbytes(n: Node) -> int:
    return n.size * n.dtype.itemsize


def place(kernel: Kernel, default: str) -> tuple[str, str]:
    if kernel.device is not None:
        return kernel.device, "pinned"
    for x in kernel.inputs:
        if x.buffer is not None:
            return x.buffer.device, f"input #{x.id} lives there"
    for x in kernel.inputs:
        if x.op is Op.LEAF and x.device is not None:
            return x.device, f"input #{x.id} is pinned there"
    return default, "default device"


def schedule(kernels: list[Kernel], programs: list, devices: dict[str, DeviceState], default: str,
             new_id: IdAllocator) -> Schedule:
    sched = Schedule({name: [] for name in devices}, {}, {}, [])
    location: dict[int, tuple[str, int]] = {}  # node id -> (device, buffer id) within this schedule

    for kernel, prog in zip(kernels, programs):
        dev, reason = place(kernel, default)
        sched.placements.append((prog.name, dev, reason))
        state = devices[dev]
        if prog.uses_fp64 and not state.fp64:
            raise DTypeError(f"float64 is not supported on {dev} (the device lacks cl_khr_fp64); "
                             f"cast to float32 before realizing")
        cmds = sched.commands[dev]
        args: list[int] = []
        local_temps: list[int] = []
        for x in kernel.inputs:
            if x.id in location:
                src_dev, buf = location[x.id]
                if src_dev != dev:
                    raise NotImplementedError("moving a kernel output between devices inside one realize")
            elif x.buffer is not None and x.buffer.device == dev:
                buf = x.buffer.id
            elif x.buffer is not None:  # lives on another device: copy through the host
                buf = new_id()
                cmds.append(Alloc(buf, _nbytes(x)))
                sched.moves.append((x, dev, buf, _nbytes(x)))
                local_temps.append(buf)
            else:  # a host leaf: upload once, it stays on this device
                if x.id not in sched.uploads:
                    buf = new_id()
                    cmds.append(Alloc(buf, _nbytes(x)))
                    cmds.append(CopyIn(buf, x.host))
                    sched.uploads[x.id] = (dev, buf, _nbytes(x))
                    location[x.id] = (dev, buf)
                buf = location[x.id][1]
            args.append(buf)
        outs = []
        for o in kernel.outputs:
            buf = new_id()
            cmds.append(Alloc(buf, _nbytes(o)))
            location[o.id] = (dev, buf)
            sched.outputs[o.id] = (dev, buf, _nbytes(o))
            outs.append(buf)
        prog_id = state.compiled.get(prog.name) or sched.compiled.get((dev, prog.name))
        if prog_id is None:
            prog_id = new_id()
            cmds.append(Compile(prog_id, prog.source, prog.name))
            sched.compiled[(dev, prog.name)] = prog_id
        else:
            sched.cache_hits += 1
        cmds.append(Launch(prog_id, tuple(args + outs), prog.gws, prog.lws, tuple(args), tuple(outs)))
        sched.launches += 1
        for buf in local_temps:
            cmds.append(Free(buf))
        for x in kernel.frees_after:
            fdev, buf = location[x.id]
            sched.commands[fdev].append(Free(buf))
            del sched.outputs[x.id]
    return sched
