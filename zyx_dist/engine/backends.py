"""Driver side: how command batches reach the workers. Takes logical device names (each bound to a
physical device spec) and per-device batches; gives each worker's `BatchResult`. `InProcessBackend`
runs the workers inside this process (the same `Worker` class the Ray actors wrap), so the in-process
and the Ray runtimes share scheduler, protocol and worker code. Also resolves the device list of a
config (`"auto"`, a list of names, or `{"opencl-cpu": N}`) into (logical name, physical spec) pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import DeviceError
from ..protocol import BatchResult, Command, CopyIn, CopyOut, Replay, export_value, exports_of, substitute


class LostWorkers(Exception):
    """Raised by a backend's `run_steps` when workers died or came back empty (a new incarnation): the
    driver recovers (`backend.recover`, then recomputation from lineage) and runs again."""

    def __init__(self, devices: set[str], results: list | None = None):
        super().__init__(f"lost workers: {', '.join(sorted(devices))}")
        self.devices = devices
        self.results = results or []  # what the surviving workers answered, step by step


def moves_data(batch: list[Command]) -> bool:
    """Whether a batch imports or exports a transfer (most do neither: then both scans are skipped)."""
    for c in batch:
        cls = c.__class__
        if cls is CopyIn or cls is CopyOut or (cls is Replay and (c.imports or c.exports)):
            return True
    return False


def resolve_devices(devices: Any, local: bool = True) -> list[tuple[str, str]]:
    """(logical name, physical spec) for each worker to start. In-process (`local`), `auto` is resolved on this
    machine (`runtime.discover`); on Ray each worker resolves its spec on its own node (`opencl:cpu` is the
    node's preferred working CPU device, `opencl:auto` its best device, `@platform` narrows either)."""
    if isinstance(devices, dict):
        n = int(devices.get("opencl-cpu", 0))
        if n < 1:
            raise DeviceError(f"devices: {devices!r} asks for no worker")
        platform = devices.get("platform")
        spec = f"opencl:cpu@{platform}" if platform else "opencl:cpu"
        return [(f"opencl:{i}", spec) for i in range(n)]
    if devices in (None, "auto"):
        if not local:
            from ..runtime.discover import cuda_devices

            cuda = len(cuda_devices())  # API.md: every CUDA GPU if any is visible, else the best OpenCL device
            return [(f"cuda:{i}", f"cuda:{i}") for i in range(cuda)] if cuda else [("opencl:0", "opencl:auto")]
        from ..runtime.discover import auto_specs

        specs = auto_specs()
        kind = specs[0].partition(":")[0]
        return [(f"{kind}:{i}", spec) for i, spec in enumerate(specs)]
    out = []
    for name in devices:
        kind, _, idx = str(name).partition(":")
        if kind not in ("opencl", "cuda", "reference") or not idx.isdigit():  # reference: see runtime/reference
            raise DeviceError(f"unknown device {name!r}: device names look like 'opencl:0' or 'cuda:1'")
        out.append((str(name), str(name)))
    if len(set(out)) != len(out):
        raise DeviceError(f"devices: {list(devices)!r} names a device twice")
    return out


class InProcessBackend:
    """Workers living in this process; a batch runs when `run` is called."""

    def __init__(self, devices: list[tuple[str, str]], memory_limit: int | None = None):
        from ..runtime.worker import Worker

        self.workers = {}
        # The workers time every kernel of a planned run: the scheduler's cost model learns from those times.
        # A replay of a plan template has its placement frozen, so nothing reads its kernels' times but a
        # trace (zd.trace sets this while it records): untimed, its launches skip the device timing queries.
        self.time_replays = False
        self.round_trip_seconds = 0.0  # a replay waits for nothing but its kernels (RayBackend's is not 0)
        self._replayed: Any = None  # the worker of the last run_replay
        try:
            for name, spec in devices:
                self.workers[name] = Worker(spec, memory_limit, profile=True, name=name)
        except Exception:
            self.close()
            raise

    def info(self, name: str) -> dict:
        return dict(self.workers[name].info(), name=name, node="local")

    def run(self, batches: dict[str, list[Command]]) -> dict[str, BatchResult]:
        return self.run_steps([batches])[0]

    def run_steps(self, steps: list[dict[str, list[Command]]], compiled: bool = False,
                  meanwhile: Callable[[], None] | None = None) -> list[dict[str, BatchResult]]:
        """Run the steps in order; an exporting CopyOut's array feeds the CopyIns of later steps.
        `compiled`: the steps replay plan templates, run without kernel timing unless `time_replays`.
        `meanwhile`: the driver's work that need not wait for the workers (run after them here)."""
        self._replayed = None
        if not compiled or self.time_replays:
            results = self._run_steps(steps)
        else:
            timed = [w for w in self.workers.values() if w.profile]
            for w in timed:
                w.profile = False
            try:
                results = self._run_steps(steps)
            finally:
                for w in timed:
                    w.profile = True
        if meanwhile is not None:
            meanwhile()
        return results

    def _run_steps(self, steps: list[dict[str, list[Command]]]) -> list[dict[str, BatchResult]]:
        exported: dict[int, object] = {}
        out = []
        workers = self.workers
        for batches in steps:
            results = {}
            for name, batch in batches.items():
                if not batch:
                    continue
                if moves_data(batch):
                    res = workers[name].run(substitute(batch, exported))
                    for i, k, tid in exports_of(batch):
                        exported[tid] = export_value(res.results, i, k)
                else:
                    res = workers[name].run(batch)
                results[name] = res
            out.append(results)
        return out

    def run_replay(self, name: str, template: int, bufs: tuple[int, ...], frees: list[int],
                   meanwhile: Callable[[], None] | None = None, uploads: tuple = ()) -> tuple[Any, int, int]:
        """Worker `name` frees `frees`, uploads `uploads` ((buffer id, bytes, host array) each) and replays its
        batch template `template` with `bufs` bound, untimed, without command objects: (None or the first
        Failed, CUDA graphs replayed, bytes in use). What a one-worker plan template's replay sends
        (engine/templates.py); a trace (`time_replays`) takes the commands' path instead. `meanwhile`: the
        driver's work that need not wait for the worker, run by the worker (one thread here) when its last
        launch is queued, before it waits for the device."""
        w = self._replayed = self.workers[name]
        failed, graphs, in_use = w.run_replay(template, bufs, frees, meanwhile, uploads)
        return failed, len(graphs), in_use

    def direct_upload_bytes(self, name: str) -> int:
        """Host data a replay's direct call (`run_replay`) may carry to worker `name`: any amount in process, where
        the worker takes the arrays themselves."""
        return 1 << 62

    def idle_at_sync(self) -> bool:
        """Whether the last `run_replay`'s synchronize found its kernels done: it waited under twice the least
        any synchronize of that worker waited (an idle device's cost of asking). Then the work `meanwhile`
        did before it was not hidden by the kernels."""
        w = self._replayed
        return w is not None and w.sync_wait < 2.0 * w.sync_floor

    def run_timed(self, name: str, batch: list[Command]) -> BatchResult:
        """Run one batch with device-side kernel timing on (for probes and the autotuner)."""
        w = self.workers[name]
        old, w.profile = w.profile, True
        try:
            return w.run(batch)
        finally:
            w.profile = old

    # zero-copy interop (DLPack): only here, where the workers' device memory is in this process

    def export_buffer(self, name: str, buf: int, dtype: str, shape: tuple[int, ...], owner: Any) -> Any:
        """Buffer `buf` of worker `name` as an array sharing its memory, or None (see Worker.export_buffer)."""
        return self.workers[name].export_buffer(buf, dtype, shape, owner)

    def adopt_buffer(self, name: str, buf: int, obj: Any) -> tuple[int, str, tuple[int, ...]] | None:
        """`obj`'s memory as buffer `buf` of worker `name` without a copy, or None (see Worker.adopt_buffer)."""
        return self.workers[name].adopt_buffer(buf, obj)

    def export_device(self, name: str) -> tuple[int, int] | None:
        return self.workers[name].export_device()

    def close(self) -> None:
        for w in self.workers.values():
            w.close()
        self.workers, self._replayed = {}, None
