"""Actor side: the one interface a `Worker` drives, and what its implementations share. `Device` is the
`typing.Protocol` every device backend implements (`OpenCLBackend`, `CudaBackend`, `ReferenceDevice`):
memory (alloc/free and non-blocking copy in, blocking copy out), programs (compile, launch), the opaque
events that order commands on the device's queue, and a description. Three optional capabilities are
protocols of their own: `PeerDevice` (NCCL send/recv between CUDA workers), `CappedDevice` (a device
with its own allocator pool that the worker's memory limit caps) and `GraphDevice` (capture and replay of
a run of launches: CUDA graphs). `ProgramCache` is the compile cache all
backends use: programs cached by source and options, kernels by entry name, and the one place where a
failed build becomes a `CompileError` carrying the numbered source and the compiler's log; a backend whose
compiler can run on several threads at once (`ParallelBuilds`) builds many programs side by side
(`protocol.Build`, and the new programs of a batch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import CompileError, numbered
from ..protocol import KernelOps


@runtime_checkable
class Device(Protocol):
    """One device as a worker sees it. Handles (buffers), programs and events are opaque to the worker;
    every method that queues work takes the events it must wait for and returns the event of its own."""

    name: str  # "opencl:0", "cuda:1", "reference:0"
    kind: str  # the backend: "opencl", "cuda" or "reference"

    @property
    def memory_bytes(self) -> int: ...

    def info(self) -> dict:
        """name, vendor, platform, type, global_mem_size, max_mem_alloc_size, max_compute_units,
        max_work_group_size, fp16, fp64, driver_version (and anything else the backend knows)."""
        ...

    def alloc(self, nbytes: int) -> Any:
        """A buffer of at least `nbytes` (OutOfMemoryError when the device has no room)."""
        ...

    def free(self, handle: Any) -> None:
        """Release `handle`; commands already queued on it still complete."""
        ...

    def copy_in(self, handle: Any, array: np.ndarray, wait_for: Sequence[Any] = ()) -> Any:
        """Start copying the C-contiguous `array` into `handle` (the caller keeps it alive until the event
        completes); gives the copy's event."""
        ...

    def copy_out(self, handle: Any, out: np.ndarray, wait_for: Sequence[Any] = ()) -> None:
        """Copy `out.nbytes` from `handle` into `out`, returning when they are there."""
        ...

    def compile(self, source: str, name: str, options: str = "", ops: KernelOps | None = None) -> Any:
        """The program of kernel `name` in `source` (cached: see `ProgramCache`); `ops` is the kernel as
        plain data, which only a device that interprets kernels instead of compiling them reads."""
        ...

    def launch(self, prog: Any, handles: Sequence[Any], gws: Sequence[int], lws: Sequence[int] | None,
               wait_for: Sequence[Any] = (), timed: bool = True) -> Any:
        """Queue `prog` over global size `gws` (local size `lws`, or the device's choice) with `handles` as
        its arguments; gives its event (timed for `event_seconds` when `timed`)."""
        ...

    def event_seconds(self, event: Any) -> float:
        """Device-side duration of a completed command (0.0 when it was not timed)."""
        ...

    def is_done(self, event: Any) -> bool: ...

    def wait(self, events: Sequence[Any]) -> None: ...

    def synchronize(self) -> None:
        """Wait for every command queued so far."""
        ...

    def close(self) -> None:
        """Wait for the queue, then drop every program (the worker has freed its buffers)."""
        ...


@runtime_checkable
class PeerDevice(Device, Protocol):
    """A device that moves data straight to another worker's device (NCCL on CUDA), in queue order."""

    nccl_rank: int | None

    def send(self, handle: Any, peer: int, nbytes: int, wait_for: Sequence[Any] = ()) -> Any: ...

    def recv(self, handle: Any, peer: int, nbytes: int, wait_for: Sequence[Any] = ()) -> Any: ...


@runtime_checkable
class CappedDevice(Device, Protocol):
    """A device with an allocator pool of its own, capped at the worker's memory limit (CUDA's CuPy pool)."""

    def set_limit(self, nbytes: int | None) -> None: ...


@runtime_checkable
class GraphDevice(Device, Protocol):
    """A device that can record a run of launches once and replay it as one launch (CUDA graphs): the
    worker's replay of batch templates uses it (runtime/replay.py)."""

    def graph_key(self, handles: Sequence[Any]) -> tuple:
        """What a captured graph depends on besides its kernels (the device addresses of `handles`)."""
        ...

    def capture_graph(self, launches: Sequence[tuple[Any, Sequence[Any], Sequence[int], Sequence[int] | None]]) -> Any:
        """Record (program, handles, gws, lws) launches, in order, into a graph, without running them."""
        ...

    def launch_graph(self, graph: Any, wait_for: Sequence[Any] = (), timed: bool = True) -> Any:
        """Queue a captured graph; its event (timed as a whole when `timed`)."""
        ...


@runtime_checkable
class ParallelBuilds(Device, Protocol):
    """A device whose compiler may build several programs at once on threads of the worker's process."""

    def build_many(self, sources: Sequence[tuple[str, str]]) -> None:
        """Build the (source, options) pairs that are new side by side into the compile cache, returning when
        all are done."""
        ...


class BuildError(Exception):
    """Raised by a backend's build or entry function with the compiler's log; `ProgramCache` turns it
    into the CompileError the driver sees."""

    def __init__(self, log: str) -> None:
        super().__init__(log)
        self.log = log


class ProgramCache:
    """The programs one device built, by (options, source), and their kernels by entry name. A backend
    gives the two steps: `build(source, options)` gives a program, `entry(program, name)` its kernel; each
    raises `BuildError` with the log when it fails, and the cache raises `CompileError`, naming the device,
    the compiler (`compiler`, e.g. "OpenCL build") and the kernel, with the numbered source and the log."""

    def __init__(self, device: str, compiler: str) -> None:
        self.device, self.compiler = device, compiler
        self._programs: dict[tuple[str, str], Any] = {}
        self._kernels: dict[tuple[str, str, str], Any] = {}

    def kernel(self, source: str, name: str, options: str, build: Callable[[str, str], Any],
               entry: Callable[[Any, str], Any]) -> Any:
        key = (options, source, name)
        kernel = self._kernels.get(key)
        if kernel is not None:
            return kernel
        program = self._programs.get(key[:2])
        if program is None:
            try:
                program = build(source, options)
            except BuildError as e:
                raise CompileError(f"{self.device}: {self.compiler} of kernel {name!r} failed\n{numbered(source)}"
                                   f"\n--- build log ---\n{e.log}", source=source, log=e.log) from e
            self._programs[key[:2]] = program
        try:
            kernel = entry(program, name)
        except BuildError as e:
            raise CompileError(f"{self.device}: program has no kernel {name!r} ({e.log})\n{numbered(source)}",
                               source=source, log=e.log) from e
        self._kernels[key] = kernel
        return kernel

    def build_many(self, sources: Sequence[tuple[str, str]], build: Callable[[str, str], Any], threads: int) -> None:
        """Build the (source, options) pairs not yet cached on up to `threads` threads at once (a compiler that
        releases the GIL, like NVRTC, builds them side by side) and cache the programs that built; returns when
        all are done, so no other call into the device runs beside the builds (CuPy loads each module as it
        compiles it). A build that fails is not cached: its compile builds it again and raises the
        `CompileError` as it would have."""
        todo = list(dict.fromkeys(k for k in ((o, s) for s, o in sources) if k not in self._programs))
        if len(todo) < 2 or threads < 2:
            return

        def attempt(key: tuple[str, str]) -> Any:
            try:
                return build(key[1], key[0])
            except Exception:  # noqa: BLE001 -- the compile that follows reports it, in order
                return None

        with ThreadPoolExecutor(min(threads, len(todo)), thread_name_prefix=f"zyx-build-{self.device}") as pool:
            for key, program in zip(todo, pool.map(attempt, todo)):
                if program is not None:
                    self._programs[key] = program

    def clear(self) -> None:
        self._kernels.clear()
        self._programs.clear()
