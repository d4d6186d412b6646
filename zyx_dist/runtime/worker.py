"""Actor side: `Worker`, the executor of one device. It takes batches of protocol commands (buffers
and programs named by the driver's integer ids) and runs them in order, asynchronously on the
backend's single queue: every command waits on the per-buffer events of what it reads and writes, so
an out-of-order queue still respects data dependencies. It gives back a `BatchResult` of plain values
(one `Done`/`Failed` per command run, CopyOut arrays, pool usage, the worker's incarnation id and,
when profiling, device-side kernel times). A plain class: usable in-process, and wrapped by a Ray actor.
It drives its device only through `device.Device` (OpenCL, CUDA, or the NumPy reference device). Batch
templates (`DefineTemplate`, `Replay`, runtime/replay.py) run a repeated plan without a command object per
step, and on CUDA as captured graphs.
"""

from __future__ import annotations

import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import dtypes, logs
from ..errors import CompileError, DeviceError, OutOfMemoryError
from ..protocol import (
    Alloc,
    BatchResult,
    Build,
    Command,
    Compile,
    CopyIn,
    CopyOut,
    DefineTemplate,
    Done,
    DropTemplate,
    Failed,
    Free,
    Launch,
    Recv,
    Reload,
    Replay,
    Result,
    Send,
    Spill,
    Sync,
)
from .device import CappedDevice, Device, GraphDevice, ParallelBuilds, PeerDevice
from .events import EventTracker
from .pool import Block, MemoryPool
from .replay import WorkerTemplate, compile_template, cuda_graphs_enabled, run_template

BACKENDS = ("opencl", "cuda")


def _open_backend(device: str) -> Device:
    """The backend for a physical spec: `cuda:N`, or `opencl:N` / `opencl:cpu` / `opencl:auto`, the last two
    optionally narrowed to a platform (`opencl:cpu@pocl`): see `opencl.open_index`; or `reference:N`, the
    NumPy test and debugging device (`reference.py`)."""
    kind, _, idx = device.partition(":")
    if kind == "cuda":
        if not idx.isdigit():
            raise DeviceError(f"unknown device {device!r}: CUDA devices look like 'cuda:0'")
        from .cuda import CudaBackend

        return CudaBackend(int(idx))
    if kind == "reference" and idx.isdigit():
        from .reference import ReferenceDevice

        return ReferenceDevice(int(idx))
    if kind != "opencl" or not idx:
        raise DeviceError(f"unknown device {device!r}: backends are {', '.join(BACKENDS)} (e.g. 'opencl:0')")
    from .opencl import OpenCLBackend

    return OpenCLBackend(idx)


def _failure(index: int, e: BaseException) -> Failed:
    data: dict = {}
    if isinstance(e, CompileError):
        data = {"source": e.source, "log": e.log}
    elif isinstance(e, OutOfMemoryError):
        data = {"device": e.device, "requested": e.requested, "free": e.free}
    return Failed(index, type(e).__name__, str(e), traceback.format_exc(), data)


class Worker:
    """Runs command batches on one device (e.g. "opencl:0") with a memory pool capped at `memory_limit` bytes."""

    def __init__(self, device: str, memory_limit: int | None = None, profile: bool | None = None,
                 name: str | None = None) -> None:
        self.backend: Device = _open_backend(device)
        self.has_peer = isinstance(self.backend, PeerDevice)  # NCCL send/recv (a protocol check is slow: once)
        # the session's name of this worker (several CPU workers share one OpenCL device), else the backend's
        self.device = name or self.backend.name
        self.incarnation = uuid.uuid4().hex
        self.profile = logs.enabled("timings") if profile is None else profile
        device_mem = self.backend.memory_bytes
        # no configured limit: 90% of the device's free memory (API.md section 9), leaving room for the driver
        # and other processes; a configured one never exceeds the device
        free = min(device_mem, getattr(self.backend, "free_bytes", device_mem))
        limit = int(free * 0.9) if memory_limit is None else min(int(memory_limit), device_mem)
        self.pool = MemoryPool(self.backend, limit, device=self.device)
        if isinstance(self.backend, CappedDevice):  # a backend with its own allocator pool (CUDA) caps it too
            self.backend.set_limit(limit)
        self.events = EventTracker()
        self._bufs: dict[int, Block] = {}
        self._progs: dict[int, Any] = {}
        # Host arrays of non-blocking copies in flight: they must outlive the copy.
        self._inflight: list[tuple[Any, np.ndarray]] = []
        self._spilled: dict[int, np.ndarray] = {}  # buffer id -> its bytes in host memory
        self._resolve: Any = None
        self._closed = False
        self._synced = 0  # launches of the running batch that a Sync has waited for
        # how long the last synchronize waited, and the least any did (a device already idle): whether a replay's
        # synchronize found its kernels done (engine/backends.InProcessBackend.idle_at_sync)
        self.sync_wait, self.sync_floor = 0.0, float("inf")
        self._templates: dict[int, WorkerTemplate] = {}  # batch templates (DefineTemplate), by id
        # (first launch, launches, 0.0) of each CUDA graph replayed in the running batch: `BatchResult.graphs` untimed
        self._graph_spans: list[tuple[int, int, float]] = []
        self.graphs = cuda_graphs_enabled() and isinstance(self.backend, GraphDevice)
        self._build_many = self.backend.build_many if isinstance(self.backend, ParallelBuilds) else None
        # the handler of each command class: one dict lookup per command instead of an isinstance chain
        self._handlers: dict[type, Any] = {
            Launch: self._launch, Alloc: self._alloc, Free: self._free, CopyIn: self._copy_in,
            CopyOut: self._copy_out, Compile: self._compile, Build: self._build, Sync: self._sync, Send: self._peer,
            Recv: self._peer, Spill: self._spill, Reload: self._reload, Replay: self._replay,
            DefineTemplate: self._define, DropTemplate: self._drop,
        }
        if logs.enabled("devices"):
            d = self.backend.info()
            logs.logger("devices").debug(
                f"zyx_dist: worker {self.device} opened {d['name']} ({d['vendor']}, driver "
                f"{d.get('driver_version', '?')}), pool limit {limit / 2**20:.0f} MiB, incarnation "
                f"{self.incarnation[:8]}")

    # -- public ------------------------------------------------------------------------------

    def _begin(self) -> None:
        """What every batch starts with: the worker open, finished non-blocking copies let go, no launch of
        the batch waited for yet, no graph replayed yet."""
        if self._closed:
            self._check_open()
        if self._inflight:
            self._inflight = [(e, a) for e, a in self._inflight if not self.backend.is_done(e)]
        self._synced = 0
        if self._graph_spans:
            self._graph_spans.clear()

    def run(self, batch: Sequence[Command], resolve: Any = None) -> BatchResult:
        """Execute `batch` in order; after the first failure only its remaining Free commands run.
        `resolve` maps a CopyIn's data to an array when it is a transport reference (a Ray ObjectRef)."""
        self._begin()
        self._resolve = resolve
        results: list[Result] = []
        launches: list[Any] = []
        spans = self._graph_spans
        failed = False
        handlers = self._handlers
        if self._build_many is not None and len(batch) > 1:
            sources = [(c.source, "") for c in batch if c.__class__ is Compile]
            if len(sources) > 1:  # the batch's new programs build side by side; the Compiles below find them
                self._build_side_by_side(sources)
        for i, cmd in enumerate(batch):
            if failed:
                if not isinstance(cmd, Free):
                    continue
                if cmd.buf not in self._bufs and cmd.buf not in self._spilled:
                    # Its Alloc was skipped (or failed): nothing to free, and not a second error.
                    results.append(Done(i))
                    continue
            try:
                handler = handlers.get(cmd.__class__)
                value = handler(cmd, launches) if handler is not None else self._execute(cmd, launches)
            except Exception as e:  # noqa: BLE001 -- every failure becomes a value; the driver decides what to raise
                results.append(_failure(i, e))
                failed = True
            else:
                results.append(Done(i, value))
        seconds: tuple[float, ...] = ()
        graphs: tuple[tuple[int, int, float], ...] = ()
        if self.profile and launches:
            if self._synced != len(launches):  # a Sync after the last launch already waited for all of them
                self.backend.wait(launches)
            event_seconds = self.backend.event_seconds
            if spans:  # the launches of one replayed graph share its event: its time, split evenly
                secs = [0.0] * len(launches)
                graphs = tuple((first, n, event_seconds(launches[first])) for first, n, _ in spans)
                inside = set()
                for first, n, total in graphs:
                    secs[first:first + n] = [total / n] * n
                    inside.update(range(first, first + n))
                for i, e in enumerate(launches):
                    if i not in inside:
                        secs[i] = event_seconds(e)
                seconds = tuple(secs)
            else:
                seconds = tuple(map(event_seconds, launches))
        elif spans:
            graphs = tuple(spans)
        return BatchResult(tuple(results), self.incarnation, self.pool.bytes_in_use, seconds, graphs)

    def run_replay(self, template: int, bufs: tuple[int, ...], frees: Sequence[int],
                   before_sync: Callable[[], None] | None = None, uploads: Sequence[tuple] = ()
                   ) -> tuple[Failed | None, tuple[tuple[int, int, float], ...], int]:
        """What `run([Free(b) for b in frees] + [Alloc(b, n), CopyIn(b, a) for (b, n, a) in uploads] +
        [Replay(template, bufs)])` does, untimed, without the command and result objects (the driver's path
        for a one-worker plan template, engine/templates.py, in process or through the actor; `uploads` are
        the host data a template takes anew on each replay, an optimizer's step scalars): (None, or the
        Failed of the first command that failed, numbered as in that batch; the CUDA graphs replayed, as
        `BatchResult.graphs`; bytes in use). As in `run`, every Free runs, and a failure before the Replay
        skips the rest. `before_sync()` (in process: the driver's work that may run beside the device's) is
        called once: when the template reaches its synchronize, before waiting (an error it raises there
        fails the replay, as a command's would), or else at the end, also when the replay failed or was
        skipped (an error then propagates)."""
        self._begin()
        failed: Failed | None = None
        for i, buf in enumerate(frees):
            if failed is not None and buf not in self._bufs and buf not in self._spilled:
                continue  # (as in `run`: its Alloc may have been skipped)
            try:
                self._free_id(buf)
            except Exception as e:  # noqa: BLE001 -- a value, as in `run`
                failed = failed or _failure(i, e)
        at = len(frees)
        if failed is None and uploads:
            self._resolve = None  # (arrays, not transport references: the last `run`'s resolver does not apply)
            try:
                for buf, nbytes, data in uploads:
                    self._alloc(Alloc(buf, nbytes), None)
                    at += 1
                    self._copy_in(CopyIn(buf, data))
                    at += 1
            except Exception as e:  # noqa: BLE001 -- a value, as in `run`
                failed = _failure(at, e)
        hook = [before_sync] if before_sync is not None else None
        if failed is None:
            profile, self.profile = self.profile, False
            try:
                t = self._templates.get(template)
                if t is None:
                    self._no_template(template)
                run_template(self, t, template, bufs, (), [], hook)
            except Exception as e:  # noqa: BLE001 -- a value, as in `run`
                failed = _failure(at, e)
            finally:
                self.profile = profile
        if hook:  # not reached in the template (no synchronize, or it failed first)
            hook.pop()()
        spans = self._graph_spans
        return failed, tuple(spans) if spans else (), self.pool.bytes_in_use

    def info(self) -> dict:
        """What the driver's scheduler needs to know about this device."""
        d = self.backend.info()
        return {
            "name": self.device,
            "backend": self.backend.kind,
            "device_name": d["name"],
            "vendor": d["vendor"],
            "driver_version": d.get("driver_version", ""),
            "type": d["type"],
            "memory_bytes": self.pool.limit_bytes,
            "free_bytes": max(0, self.pool.limit_bytes - self.pool.bytes_reserved),
            "compute_units": d["max_compute_units"],
            "max_work_group_size": d["max_work_group_size"],
            "max_parameter_bytes": d.get("max_parameter_bytes", 1024),
            "fp16": d["fp16"],
            "fp64": d["fp64"],
            "compute_capability": d.get("compute_capability", ""),  # CUDA devices: picks the dialect
            "incarnation": self.incarnation,
            "nccl_rank": self.backend.nccl_rank if self.has_peer else None,
        }

    def export_buffer(self, buf: int, dtype: str, shape: tuple[int, ...], owner: Any) -> Any:
        """Buffer `buf` as an array of `dtype`/`shape` that shares the device memory (a read-only NumPy
        view of a mapped CPU OpenCL buffer, or a CuPy array over a CUDA buffer), or None when the device
        cannot hand its memory to this process (a GPU OpenCL device, a spilled buffer). Waits for the
        buffer's last write. `owner` is kept alive by the view (the driver's handle of the buffer, so
        the buffer cannot be freed and reused while the view lives). In-process workers only: the
        view is a live object, never a protocol value."""
        self._check_open()
        if buf in self._spilled or not hasattr(self.backend, "export"):
            return None
        block = self._block(buf)
        return self.backend.export(block.handle, dtypes.dtype(dtype).np_dtype, tuple(shape),
                                   self.events.wait_list((buf,), ()), owner)

    def adopt_buffer(self, buf: int, obj: Any) -> tuple[int, str, tuple[int, ...]] | None:
        """Make the array `obj` (a DLPack producer: NumPy, CuPy, torch) buffer `buf` without copying it,
        when it lives on this device (host memory for a CPU OpenCL device, this GPU for a CUDA one).
        Gives (nbytes, dtype name, shape), or None when the memory is elsewhere (the caller copies).
        The array stays alive, and is never written, while the buffer lives."""
        self._check_open()
        if buf in self._bufs:
            raise ValueError(f"{self.device}: buffer {buf} is already allocated")
        got = self.backend.adopt(obj) if hasattr(self.backend, "adopt") else None
        if got is None:
            return None
        handle, nbytes, np_dtype, shape, owner = got
        try:
            name = dtypes.dtype(np_dtype).name
        except Exception:  # noqa: BLE001 -- a dtype zyx_dist lacks: the caller's copy path names it
            return None
        self._bufs[buf] = self.pool.adopt(handle, nbytes, owner)
        return nbytes, name, tuple(int(s) for s in shape)

    def export_device(self) -> tuple[int, int] | None:
        """The DLPack device (type, id) of this worker's exported views, or None when it exports none."""
        return self.backend.dlpack_device() if hasattr(self.backend, "dlpack_device") else None

    def stats(self) -> dict:
        return {
            "bytes_in_use": self.pool.bytes_in_use,
            "bytes_reserved": self.pool.bytes_reserved,
            "buffers": len(self._bufs),
            "spilled_bytes": sum(h.nbytes for h in self._spilled.values()),
        }

    def reset(self) -> str:
        """Free every buffer and forget every program (the driver lost track of this worker's state, e.g.
        after Ray restarted it under a batch); gives the incarnation the driver should expect from now on."""
        self.backend.synchronize()
        for block in self._bufs.values():
            self.pool.free(block, ())
        self._bufs.clear()
        self._spilled.clear()
        self._progs.clear()
        self._templates.clear()
        self._inflight.clear()
        self.events.clear()
        return self.incarnation

    def close(self) -> None:
        """Wait for the queue, then free every buffer and program. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self.backend.synchronize()
        self._inflight.clear()
        self.events.clear()
        self._bufs.clear()
        self._spilled.clear()
        self._progs.clear()
        self._templates.clear()
        self.pool.close()
        self.backend.close()

    def __enter__(self) -> Worker:  # noqa: PYI034 -- typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise DeviceError(f"worker {self.device} is closed")

    def _block(self, buf: int) -> Block:
        try:
            return self._bufs[buf]
        except KeyError:
            raise KeyError(f"{self.device}: no buffer {buf} (never allocated, or already freed)") from None

    def _execute(self, cmd: Command, launches: list[Any]) -> Any:
        """Run one command through its handler (`_handlers`, by the command's class or a base class)."""
        handlers = self._handlers
        for cls in type(cmd).__mro__:
            handler = handlers.get(cls)
            if handler is not None:
                return handler(cmd, launches)
        raise TypeError(f"not a protocol command: {cmd!r}")

    def _alloc(self, cmd: Alloc, launches: list[Any]) -> None:
        if cmd.buf in self._bufs:
            raise ValueError(f"{self.device}: buffer {cmd.buf} is already allocated")
        block = self.pool.alloc(cmd.nbytes)
        # Reused memory may still be read or written by its previous owner's commands.
        self.events.seed(cmd.buf, block.pending)
        block.pending = ()
        self._bufs[cmd.buf] = block

    def _free(self, cmd: Free, launches: list[Any]) -> None:
        self._free_id(cmd.buf)

    def _free_id(self, buf: int) -> None:
        block = self._bufs.pop(buf, None)
        if block is not None:
            self.pool.free(block, self.events.forget(buf))
        elif self._spilled.pop(buf, None) is None:
            self._block(buf)  # (no such buffer here: raises its error)

    def _define(self, cmd: DefineTemplate, launches: list[Any]) -> None:
        if cmd.template not in self._templates:  # defining it again (a driver unsure we had it) keeps its graphs
            self._templates[cmd.template] = compile_template(tuple(cmd.commands), self._progs, self.graphs)

    def _drop(self, cmd: DropTemplate, launches: list[Any]) -> None:
        self._templates.pop(cmd.template, None)

    def _replay(self, cmd: Replay, launches: list[Any]) -> tuple:
        t = self._templates.get(cmd.template)
        if t is None:
            self._no_template(cmd.template)
        return run_template(self, t, cmd.template, cmd.bufs, cmd.imports, launches)

    def _no_template(self, template: int) -> None:
        raise KeyError(f"{self.device}: no batch template {template} (DefineTemplate it first)")

    def _compile(self, cmd: Compile, launches: list[Any]) -> None:
        if not logs.enabled("timings"):
            self._progs[cmd.prog] = self.backend.compile(cmd.source, cmd.name, ops=cmd.ops)
            return
        start = time.perf_counter()
        self._progs[cmd.prog] = self.backend.compile(cmd.source, cmd.name, ops=cmd.ops)
        logs.logger("timings").debug(f"zyx_dist: {self.device} compiled {cmd.name} in "
                                     f"{(time.perf_counter() - start) * 1e3:.1f} ms")

    def _build(self, cmd: Build, launches: list[Any]) -> None:
        if self._build_many is not None:
            self._build_side_by_side([(source, "") for source in cmd.sources])

    def _build_side_by_side(self, sources: list[tuple[str, str]]) -> None:
        if not logs.enabled("timings"):
            self._build_many(sources)
            return
        start = time.perf_counter()
        self._build_many(sources)
        logs.logger("timings").debug(f"zyx_dist: {self.device} built {len(sources)} programs side by side (those "
                                     f"not cached) in {(time.perf_counter() - start) * 1e3:.1f} ms")

    def _sync(self, cmd: Sync, launches: list[Any]) -> None:
        t = time.perf_counter()
        self.backend.synchronize()
        self.sync_wait = waited = time.perf_counter() - t
        self.sync_floor = min(self.sync_floor, waited)
        self.events.clear()
        self.pool.settle()
        if self._inflight:
            self._inflight.clear()
        self._synced = len(launches)

    def _peer(self, cmd: Send | Recv, launches: list[Any]) -> None:
        if not self.has_peer:
            raise NotImplementedError(
                f"{type(cmd).__name__}: peer transfers need NCCL (CUDA workers); "
                f"{self.device} cannot send or receive directly"
            )
        if cmd.nbytes == 0:  # both ends skip it alike
            return
        block = self._block(cmd.buf)
        if cmd.nbytes > block.nbytes:
            raise ValueError(f"{self.device}: {type(cmd).__name__} of {cmd.nbytes} bytes with buffer {cmd.buf} "
                             f"of {block.nbytes}")
        if isinstance(cmd, Send):
            event = self.backend.send(block.handle, cmd.peer, cmd.nbytes, self.events.wait_list((cmd.buf,), ()))
            self.events.record((cmd.buf,), (), event)
        else:
            event = self.backend.recv(block.handle, cmd.peer, cmd.nbytes, self.events.wait_list((), (cmd.buf,)))
            self.events.record((), (cmd.buf,), event)

    def _spill(self, cmd: Spill, launches: list[Any]) -> None:
        block = self._block(cmd.buf)
        host = np.empty(block.nbytes, np.uint8)
        if block.nbytes:
            self.backend.copy_out(block.handle, host, self.events.wait_list((cmd.buf,), ()))
        del self._bufs[cmd.buf]
        self.pool.free(block, self.events.forget(cmd.buf))
        self._spilled[cmd.buf] = host

    def _reload(self, cmd: Reload, launches: list[Any]) -> None:
        host = self._spilled[cmd.buf]
        self._execute(Alloc(cmd.buf, host.nbytes), launches)  # (a failure here keeps the host copy)
        del self._spilled[cmd.buf]
        self._copy_in(CopyIn(cmd.buf, host))

    def _copy_in(self, cmd: CopyIn, launches: list[Any] | None = None) -> None:
        block = self._block(cmd.buf)
        data = self._resolve(cmd.data) if self._resolve is not None else cmd.data
        if data is None:
            raise ValueError(f"{self.device}: no data for buffer {cmd.buf} (its transfer source failed)")
        array = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if array.nbytes > block.nbytes:
            raise ValueError(f"{self.device}: CopyIn of {array.nbytes} bytes into buffer {cmd.buf} of {block.nbytes}")
        if array.nbytes == 0:  # OpenCL rejects empty copies; there is nothing to order either
            return
        event = self.backend.copy_in(block.handle, array, self.events.wait_list((), (cmd.buf,)))
        self.events.record((), (cmd.buf,), event)
        self._inflight.append((event, array))
        return

    def _copy_out(self, cmd: CopyOut, launches: list[Any] | None = None) -> np.ndarray:
        out = np.empty(tuple(cmd.shape), dtype=dtypes.dtype(cmd.dtype).np_dtype)
        if cmd.buf in self._spilled:  # served from host memory, nothing moves back to the device
            host = self._spilled[cmd.buf]
            out.reshape(-1).view(np.uint8)[:] = host[: out.nbytes]
            return out
        block = self._block(cmd.buf)
        if out.nbytes > block.nbytes:
            raise ValueError(
                f"{self.device}: CopyOut of {out.nbytes} bytes ({cmd.dtype}{tuple(cmd.shape)}) "
                f"from buffer {cmd.buf} of {block.nbytes}"
            )
        if out.nbytes:
            # Blocking, so no read event needs recording: the copy is over when this returns.
            self.backend.copy_out(block.handle, out, self.events.wait_list((cmd.buf,), ()))
        return out

    def _launch(self, cmd: Launch, launches: list[Any]) -> None:
        try:
            prog = self._progs[cmd.prog]
        except KeyError:
            raise KeyError(f"{self.device}: no program {cmd.prog} (Compile it first)") from None
        bufs = self._bufs
        try:
            handles = [bufs[b].handle for b in cmd.bufs]
        except KeyError:  # name the missing buffer
            handles = [self._block(b).handle for b in cmd.bufs]
        if 0 in cmd.gws:  # an empty launch does nothing (and OpenCL rejects it)
            return
        # An argument the driver listed as neither read nor written is treated as written: safe. The
        # scheduler lists exactly the reads then the writes, so its launches skip the search.
        reads, writes = cmd.reads, cmd.writes
        if type(reads) is not tuple or type(writes) is not tuple or cmd.bufs != reads + writes:
            listed = set(reads) | set(writes)
            writes = tuple(writes) + tuple(b for b in cmd.bufs if b not in listed)
        event = self.backend.launch(prog, handles, cmd.gws, cmd.lws, self.events.wait_list(reads, writes), self.profile)
        self.events.record(reads, writes, event)
        launches.append(event)
