"""Driver side, pure (no I/O, no ray/cupy/pyopencl): places kernels on devices and turns them into
per-worker command batches. Takes the kernelizer's kernels with their rendered programs and a
`SchedulerState` (the driver's mirror of every worker: live buffers, pool usage, compiled programs,
measured peaks and link speeds); gives a `Schedule`: command batches grouped in steps (one batch per
worker per step; a step's batches only need data that earlier steps exported), the buffers to attach
to output nodes, the transfers, and a new state to keep if the run succeeds.

Placement is list scheduling by earliest estimated finish time (HEFT): a kernel's time on a device is
its bytes and flops against the device's measured peaks, its inputs arrive after their producers finish
plus bytes over the measured link speed, and the device must have room (after spilling its least
recently used buffers that the kernel does not read). Ties go to the earlier device in the list.
Policies `round_robin` and `single` replace the choice; pins (`device=`, `x.to(d)`) always win. Every
command waits only for the buffers it touches (the worker's per-buffer events), so workers are ordered
by data dependencies alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .._util import bucket_size
from ..errors import DTypeError, OutOfMemoryError
from ..fuse.kernelize import Kernel
from ..graph.ir import Node
from ..protocol import Alloc, Command, Compile, CopyIn, CopyOut, Free, Launch, Recv, Reload, Send, Spill, TransferRef


class IdCounter:
    """The ids of buffers, programs, transfers and templates: an iterator of 1, 2, 3, ... that can also
    hand out a block of consecutive ids at once (`take`), for a replayed plan's new buffers."""

    __slots__ = ("next_id",)

    def __init__(self, start: int = 1) -> None:
        self.next_id = start

    def __iter__(self) -> IdCounter:
        return self

    def __next__(self) -> int:
        i = self.next_id
        self.next_id = i + 1
        return i

    def take(self, n: int) -> int:
        """The first of `n` consecutive fresh ids."""
        i = self.next_id
        self.next_id = i + n
        return i


@dataclass(frozen=True)
class DeviceModel:
    name: str
    fp64: bool
    gflops: float
    gbps: float
    memory: int  # the pool's limit in bytes
    launch_seconds: float = 10e-6
    dialect: str = "opencl"  # of the programs this device runs ("opencl" or "cuda")
    nccl_rank: int | None = None  # rank in the NCCL communicator of the CUDA workers, None without one
    variant: str = ""  # the device model whose programs this device runs (default: by dialect)


@dataclass(slots=True)
class BufferState:
    device: str
    nbytes: int
    spilled: bool = False
    last_use: int = 0  # the state's clock at the last kernel that touched it (for LRU spills)


@dataclass
class SchedulerState:
    devices: dict[str, DeviceModel]
    link: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # (latency s, bytes/s)
    buffers: dict[int, BufferState] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)  # pool bytes (bucketed) held on each device
    compiled: dict[str, dict[str, int]] = field(default_factory=dict)  # device -> program name -> id
    # measured device seconds of each program on each device (a moving average), which replace the
    # roofline estimate from the probed peaks once a kernel has run there
    measured: dict[tuple[str, str], float] = field(default_factory=dict)
    policy: str = "heft"
    clock: int = 0
    rr: int = 0
    # ids of buffers, programs and transfers: one counter shared by every fork, so an attempt that fails
    # and is dropped can never make a retry reuse an id that a worker may still hold
    ids: Iterator[int] = field(default_factory=IdCounter)

    def __post_init__(self) -> None:
        for d in self.devices:
            self.used.setdefault(d, 0)
            self.compiled.setdefault(d, {})

    def new_id(self) -> int:
        return next(self.ids)

    def link_seconds(self, src: str, dst: str, nbytes: int) -> float:
        latency, bps = self.link.get((src, dst), (1e-3, 1e9))
        return latency + nbytes / bps

    def fork(self) -> SchedulerState:
        """A copy to plan on. Buffer records are shared: the planner replaces a record instead of
        changing it (`touch`), so the copy costs a few dict copies, not one object per buffer."""
        # what dataclasses.replace gives (a shallow copy with three fields replaced, then __post_init__),
        # without its per-field introspection: this runs on every realize
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.buffers, new.used = dict(self.buffers), dict(self.used)
        new.compiled = {d: dict(c) for d, c in self.compiled.items()}
        new.__post_init__()
        return new

    def touch(self, buf: int) -> BufferState:
        """The record of `buf`, private to this state (copy-on-write)."""
        b = self.buffers[buf]
        b = self.buffers[buf] = BufferState(b.device, b.nbytes, b.spilled, b.last_use)
        return b

    def drop_device(self, dev: str, keep: bool) -> None:
        """Forget everything a lost worker held; `keep` leaves the device usable (it restarted empty)."""
        self.buffers = {i: b for i, b in self.buffers.items() if b.device != dev}
        self.used[dev] = 0
        self.compiled[dev] = {}
        self.measured = {k: v for k, v in self.measured.items() if k[1] != dev or keep}
        if not keep:
            self.devices = {n: m for n, m in self.devices.items() if n != dev}
            del self.used[dev], self.compiled[dev]

    def free(self, buf: int) -> bool:
        """The mirror of a Free command; whether the state held `buf`."""
        b = self.buffers.pop(buf, None)
        if b is None:
            return False
        if not b.spilled:
            self.used[b.device] -= bucket_size(b.nbytes)
        return True


@dataclass(frozen=True)
class Transfer:
    id: int
    src: str
    dst: str
    nbytes: int
    step: int  # the step whose batch on `src` exports it; `dst` reads it one step later (NCCL: the same step)
    via: str = "host"  # "host": CopyOut, the object store, CopyIn; "nccl": Send/Recv in the two batches


@dataclass(frozen=True)
class Placement:
    kernel: str
    device: str
    reason: str
    seconds: float
    step: int


@dataclass
class Schedule:
    state: SchedulerState
    steps: list[dict[str, list[Command]]] = field(default_factory=list)
    outputs: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # node id -> (device, buffer, bytes)
    uploads: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # host leaf id -> (device, buffer, bytes)
    transfers: list[Transfer] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)
    allocated: list[tuple[str, int]] = field(default_factory=list)  # for rollback on failure
    launches: int = 0
    cache_hits: int = 0
    spills: int = 0
    estimated_seconds: float = 0.0

    def batch(self, step: int, device: str) -> list[Command]:
        while len(self.steps) <= step:
            self.steps.append({})
        return self.steps[step].setdefault(device, [])


def _nbytes(n: Node) -> int:
    return n.size * n.dtype.itemsize


def _program(progs, m: DeviceModel):
    """A kernel's program for device m: `progs` is one Program, or a dict device model (or dialect) -> Program."""
    return progs[m.variant or m.dialect] if isinstance(progs, dict) else progs


@dataclass
class _Copy:
    """Where one value lives during this schedule: a buffer on a device, usable from `step` on."""

    device: str
    buf: int
    step: int
    ready: float  # estimated seconds from the start of the run
    temporary: bool  # made by this schedule (a moved copy or an intermediate): freed after its last use
    last_step: int = 0


class _Planner:
    def __init__(self, state: SchedulerState, default: str):
        self.st = state
        self.default = default
        self.sched = Schedule(state)
        self.copies: dict[int, list[_Copy]] = {}  # node id -> its copies
        self.avail = dict.fromkeys(state.devices, 0.0)
        self.dev_step: dict[str, int] = {}  # the step of the last kernel planned on each device
        self.last_step: dict[int, int] = {}  # buffer -> the last step of a command that uses it
        self.order = list(state.devices)
        # the devices of each device's kind (equal peaks), in device order: see `cost`
        kinds: dict[tuple[float, float], list[str]] = {}
        for d, m in state.devices.items():
            kinds.setdefault((m.gflops, m.gbps), []).append(d)
        self.same_kind = {d: kinds[(m.gflops, m.gbps)] for d, m in state.devices.items()}

    # ---- where inputs are ----------------------------------------------------------------------------

    def copies_of(self, x: Node) -> list[_Copy]:
        if x.id not in self.copies:
            ref = x.buffer
            if ref is not None and ref.id in self.st.buffers:
                self.copies[x.id] = [_Copy(ref.device, ref.id, 0, 0.0, False)]
            else:
                self.copies[x.id] = []  # a host leaf: uploaded where it is first needed
        return self.copies[x.id]

    def arrival(self, x: Node, dev: str) -> tuple[float, _Copy | None]:
        cs = self.copies_of(x)
        for c in cs:
            if c.device == dev:
                return c.ready, c
        if not cs:  # upload from the host: to its pinned device, then moved on, if it is pinned elsewhere
            pin = x.device if x.device in self.st.devices and x.device != dev else None
            return _nbytes(x) / 10e9 + (self.st.link_seconds(pin, dev, _nbytes(x)) if pin else 0.0), None
        return min(c.ready + self.st.link_seconds(c.device, dev, _nbytes(x)) for c in cs), None

    def lag(self, c: _Copy, dev: str) -> int:
        """Steps between a copy being usable on its device and on dev: 0 over NCCL (Send and Recv run in
        the same step), 1 through the host (exported in one step, copied in the next)."""
        if c.device == dev:
            return 0
        a, b = self.st.devices[c.device], self.st.devices[dev]
        buf = self.st.buffers.get(c.buf)
        if a.nccl_rank is None or b.nccl_rank is None or (buf is not None and buf.spilled):
            return 1
        return 0

    def input_step(self, x: Node, dev: str) -> int:
        """The first step in which x can be read on dev."""
        cs = self.copies_of(x)
        here = [c.step for c in cs if c.device == dev]
        if here:
            return min(here)
        if not cs and x.device in self.st.devices and x.device != dev:  # uploaded to its pin in step 0
            return self.lag(_Copy(x.device, -1, 0, 0.0, False), dev)
        return min(c.step + self.lag(c, dev) for c in cs) if cs else 0

    # ---- placement -----------------------------------------------------------------------------------

    def candidates(self, k: Kernel) -> tuple[list[str], str]:
        if k.device is not None:
            return [k.device], "pinned"
        if self.st.policy == "single":
            return [self.default], "policy single"
        if self.st.policy == "round_robin":
            dev = self.order[self.st.rr % len(self.order)]
            self.st.rr += 1
            return [dev], "policy round_robin"
        return self.order, "earliest finish"

    def cost(self, k: Kernel, prog, dev: str) -> tuple[float, float, int]:
        """(start, finish, bytes that must be free on dev) of kernel k on dev."""
        m = self.st.devices[dev]
        prog = _program(prog, m)
        ready = 0.0
        need = sum(bucket_size(_nbytes(o)) for o in k.outputs)
        for x in k.inputs:
            t, here = self.arrival(x, dev)
            ready = max(ready, t)
            if here is None or (here.buf in self.st.buffers and self.st.buffers[here.buf].spilled):
                need += bucket_size(_nbytes(x))
        # the kernel's measured time, averaged over the devices of the same kind (identical devices must
        # not look different because of noise, or work would wander between them), else the roofline
        measured, name = self.st.measured, prog.name
        same = [t for d in self.same_kind[dev] if (t := measured.get((name, d))) is not None]
        if same:
            run = sum(same) / len(same)
        else:
            run = max(prog.bytes / (m.gbps * 1e9) if m.gbps else 0.0,
                      prog.flops / (m.gflops * 1e9) if m.gflops else 0.0)
        run += m.launch_seconds
        start = max(self.avail[dev], ready)
        return start, start + run, need

    def spillable(self, dev: str, keep: set[int], step: int) -> list[int]:
        """Buffers on dev that may go to host memory before a kernel of `step`, least recently used first:
        not read by the kernel, and not used by a command of a later step already planned."""
        out = [(b.last_use, i) for i, b in self.st.buffers.items() if b.device == dev and not b.spilled
               and i not in keep and self.last_step.get(i, 0) <= step]
        return [i for _, i in sorted(out)]

    def kernel_step(self, k: Kernel, dev: str) -> int:
        """The step of a kernel on dev: after its inputs arrive, and never before a command already
        planned on dev, so each worker's commands run in planning order (spills, reloads and frees
        placed now can never overtake a use planned earlier)."""
        return max([self.input_step(x, dev) for x in k.inputs] + [self.dev_step.get(dev, 0)])

    def choose(self, k: Kernel, prog, keep: set[int]) -> tuple[str, str, float, float, int]:
        """(device, reason, start, finish, bytes needed there) of the best placement of k."""
        devs, why = self.candidates(k)
        best_fit, best_spill = None, None
        for d in devs:
            start, finish, need = self.cost(k, prog, d)
            free = self.st.devices[d].memory - self.st.used[d]
            if need <= free:
                if best_fit is None or finish < best_fit[0]:
                    best_fit = (finish, d, start, need)
            else:
                spill = self.spillable(d, keep, self.kernel_step(k, d))
                room = free + sum(bucket_size(self.st.buffers[i].nbytes) for i in spill)
                if need <= room and (best_spill is None or finish < best_spill[0]):
                    best_spill = (finish, d, start, need)
        chosen = best_fit or best_spill
        if chosen is None:
            d = max(devs, key=lambda d: self.st.devices[d].memory - self.st.used[d])
            need = self.cost(k, prog, d)[2]
            free = self.st.devices[d].memory - self.st.used[d]
            name = _program(prog, self.st.devices[d]).name
            raise OutOfMemoryError(f"out of memory on {d}: kernel {name} needs {need} bytes, {free} bytes are "
                                   f"free and nothing more can be spilled", d, need, free)
        finish, d, start, need = chosen
        reason = why if why != "earliest finish" else f"earliest finish {finish * 1e6:.1f} us of {len(devs)}"
        return d, reason + ("" if best_fit else " (after spilling)"), start, finish, need

    # ---- commands ------------------------------------------------------------------------------------

    def make_room(self, dev: str, need: int, keep: set[int], step: int) -> None:
        free = self.st.devices[dev].memory - self.st.used[dev]
        if free >= need:
            return
        for buf in self.spillable(dev, keep, step):
            if free >= need:
                break
            b = self.st.touch(buf)
            self.sched.batch(step, dev).append(Spill(buf))
            b.spilled = True
            self.st.used[dev] -= bucket_size(b.nbytes)
            free += bucket_size(b.nbytes)
            self.sched.spills += 1

    def alloc(self, dev: str, buf: int, nbytes: int, step: int) -> None:
        self.sched.batch(step, dev).append(Alloc(buf, nbytes))
        self.st.buffers[buf] = BufferState(dev, nbytes, last_use=self.st.clock)
        self.st.used[dev] += bucket_size(nbytes)
        self.sched.allocated.append((dev, buf))

    def bring(self, x: Node, dev: str, step: int) -> _Copy:
        """A copy of x on dev for a kernel of `step`, moving, uploading or reloading it if needed."""
        _, here = self.arrival(x, dev)
        if here is not None:
            b = self.st.buffers.get(here.buf)
            if b is not None and b.spilled:
                self.sched.batch(step, dev).append(Reload(here.buf))
                b = self.st.touch(here.buf)
                b.spilled = False
                self.st.used[dev] += bucket_size(b.nbytes)
            return here
        nbytes = _nbytes(x)
        cs = self.copies_of(x)
        if not cs:  # a host leaf: uploaded where it is pinned, else where it is needed
            home = x.device if x.device in self.st.devices else dev
            at = step if home == dev else 0  # in the kernel's step, after the spills that make room
            buf = self.st.new_id()
            self.alloc(home, buf, nbytes, at)
            self.sched.batch(at, home).append(CopyIn(buf, x.host))
            self.sched.uploads[x.id] = (home, buf, nbytes)
            cs.append(_Copy(home, buf, at, nbytes / 10e9, False))
            if home == dev:
                return cs[0]
        buf = self.st.new_id()
        usable = [c for c in cs if c.step + self.lag(c, dev) <= step] or cs
        src = min(usable, key=lambda c: c.ready + self.st.link_seconds(c.device, dev, nbytes))
        arrives = src.ready + self.st.link_seconds(src.device, dev, nbytes)
        if self.lag(src, dev) == 0:
            # NCCL: Send on the source and Recv here, both in the kernel's step (after the Spills that
            # make room) and appended in planning order on both workers, so every worker posts its
            # Send/Recvs in one global order (step, then transfer id) and no pair can deadlock.
            t = Transfer(self.st.new_id(), src.device, dev, nbytes, step, "nccl")
            self.sched.batch(step, src.device).append(Send(src.buf, self.st.devices[dev].nccl_rank, nbytes))
            self.use(src, step)
            self.alloc(dev, buf, nbytes, step)
            self.sched.batch(step, dev).append(Recv(buf, self.st.devices[src.device].nccl_rank, nbytes))
            c = _Copy(dev, buf, step, arrives, True)
        else:
            t = Transfer(self.st.new_id(), src.device, dev, nbytes, src.step)
            self.sched.batch(src.step, src.device).append(CopyOut(src.buf, "uint8", (nbytes,), export=t.id))
            self.use(src, src.step)
            self.alloc(dev, buf, nbytes, src.step + 1)
            self.sched.batch(src.step + 1, dev).append(CopyIn(buf, TransferRef(t.id)))
            c = _Copy(dev, buf, src.step + 1, arrives, True)
        self.sched.transfers.append(t)
        self.use(c, c.step)
        cs.append(c)
        return c

    def upload(self, x: Node) -> None:
        """Realize a host leaf by itself: onto its pinned device (or the default), making room first."""
        if x.id in self.sched.uploads:
            return
        dev = x.device if x.device in self.st.devices else self.default
        need = bucket_size(_nbytes(x))
        free = self.st.devices[dev].memory - self.st.used[dev]
        step = self.dev_step.get(dev, 0)
        if need > free + sum(bucket_size(self.st.buffers[i].nbytes) for i in self.spillable(dev, set(), step)):
            raise OutOfMemoryError(f"out of memory on {dev}: a tensor of {_nbytes(x)} bytes does not fit "
                                   f"({free} bytes free, nothing more can be spilled)", dev, need, free)
        self.make_room(dev, need, set(), step)
        self.bring(x, dev, step)

    def use(self, c: _Copy, step: int) -> None:
        c.last_step = max(c.last_step, step)
        self.last_step[c.buf] = c.last_step

    def add(self, k: Kernel, progs) -> None:
        keep = {c.buf for x in k.inputs for c in self.copies_of(x)}
        dev, reason, start, finish, need = self.choose(k, progs, keep)
        prog = _program(progs, self.st.devices[dev])
        if prog.uses_fp64 and not self.st.devices[dev].fp64:
            raise DTypeError(f"float64 is not supported on {dev} (the device has no fp64); cast to float32 first")
        self.st.clock += 1
        step = self.kernel_step(k, dev)
        self.make_room(dev, need, keep, step)
        ins = [self.bring(x, dev, step) for x in k.inputs]
        outs = []
        for o in k.outputs:
            buf = self.st.new_id()
            self.alloc(dev, buf, _nbytes(o), step)
            self.copies[o.id] = [_Copy(dev, buf, step, finish, False, step)]
            self.use(self.copies[o.id][0], step)
            self.sched.outputs[o.id] = (dev, buf, _nbytes(o))
            outs.append(buf)
        batch = self.sched.batch(step, dev)
        prog_id = self.st.compiled[dev].get(prog.name)
        if prog_id is None:
            prog_id = self.st.new_id()
            batch.append(Compile(prog_id, prog.source, prog.name, prog.ops))
            self.st.compiled[dev][prog.name] = prog_id
        else:
            self.sched.cache_hits += 1
        args = tuple(c.buf for c in ins)
        batch.append(Launch(prog_id, args + tuple(outs), prog.gws, prog.lws, args, tuple(outs)))
        self.sched.launches += 1
        for c in ins:
            self.use(c, step)
            if c.buf in self.st.buffers:
                self.st.touch(c.buf).last_use = self.st.clock
        self.avail[dev] = finish
        self.dev_step[dev] = step
        self.sched.estimated_seconds = max(self.sched.estimated_seconds, finish)
        self.sched.placements.append(Placement(prog.name, dev, reason, finish - start, step))
        for x in k.frees_after:  # intermediates: every copy freed after its last use
            for c in self.copies.pop(x.id, []):
                self.free(c)
            self.sched.outputs.pop(x.id, None)

    def free(self, c: _Copy) -> None:
        # the latest batch of that device: after every use, export and spill planned so far
        self.sched.batch(max(c.last_step, self.dev_step.get(c.device, 0)), c.device).append(Free(c.buf))
        self.st.free(c.buf)

    def finish(self) -> Schedule:
        """Free the moved copies made only for this schedule's kernels."""
        for cs in self.copies.values():
            for c in cs:
                if c.temporary:
                    self.free(c)
        return self.sched


def schedule(kernels: list[Kernel], programs: list, state: SchedulerState, default: str,
             uploads: list[Node] = ()) -> Schedule:
    """Plan `kernels` (and the upload of host leaves realized on their own) on a copy of `state`; the
    caller keeps `Schedule.state` only if the run succeeds."""
    planner = _Planner(state.fork(), default)
    for k, p in zip(kernels, programs):
        planner.add(k, p)
    for x in uploads:
        planner.upload(x)
    return planner.finish()
