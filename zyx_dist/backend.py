"""Driver side: how command batches reach the workers. Takes logical device names (each bound to a
physical device spec) and per-device batches; gives each worker's `BatchResult`. `InProcessBackend`
runs the workers inside this process (the same `Worker` class the Ray actors wrap), so the in-process
and the Ray runtimes share scheduler, protocol and worker code. Also resolves the device list of a
config (`"auto"`, a list of names, or `{"opencl-cpu": N}`) into (logical name, physical spec) pairs.
"""

from __future__ import annotations

from typing import Any

from .errors import DeviceError
from .protocol import BatchResult, Command


def resolve_devices(devices: Any) -> list[tuple[str, str]]:
    """(logical name, physical spec) for each worker to start."""
    from .runtime.opencl import list_opencl_devices

    found = list_opencl_devices()
    if devices in (None, "auto"):
        gpus = [d for d in found if d["type"] == "gpu"]
        chosen = gpus or [d for d in found if d["type"] == "cpu"][:1] or found[:1]
        if not chosen:
            raise DeviceError("no device available: no OpenCL device found (pip install pocl-binary-distribution)")
        return [(f"opencl:{d['index']}", f"opencl:{d['index']}") for d in chosen]
    if isinstance(devices, dict):
        n = int(devices.get("opencl-cpu", 0))
        cpus = [d for d in found if d["type"] == "cpu"]
        if not cpus:
            raise DeviceError("opencl-cpu workers need an OpenCL CPU device (pip install pocl-binary-distribution)")
        return [(f"opencl:{i}", f"opencl:{cpus[0]['index']}") for i in range(n)]
    out = []
    for name in devices:
        kind, _, idx = str(name).partition(":")
        if kind == "cuda":
            raise DeviceError(f"device {name!r}: the CUDA backend is not available in this build yet")
        if kind != "opencl" or not idx.isdigit() or int(idx) >= len(found):
            have = ", ".join(f"opencl:{d['index']} ({d['name']})" for d in found) or "none"
            raise DeviceError(f"unknown device {name!r}; available: {have}")
        out.append((str(name), str(name)))
    return out


class InProcessBackend:
    """Workers living in this process; a batch runs when `run` is called."""

    def __init__(self, devices: list[tuple[str, str]], memory_limit: int | None = None):
        from .runtime.worker import Worker

        self.workers = {}
        try:
            for name, spec in devices:
                self.workers[name] = Worker(spec, memory_limit)
        except Exception:
            self.close()
            raise

    def info(self, name: str) -> dict:
        return dict(self.workers[name].info(), name=name, node="local")

    def run(self, batches: dict[str, list[Command]]) -> dict[str, BatchResult]:
        return {name: self.workers[name].run(batch) for name, batch in batches.items() if batch}

    def run_timed(self, name: str, batch: list[Command]) -> BatchResult:
        """Run one batch with device-side kernel timing on (for probes and the autotuner)."""
        w = self.workers[name]
        old, w.profile = w.profile, True
        try:
            return w.run(batch)
        finally:
            w.profile = old

    def close(self) -> None:
        for w in self.workers.values():
            w.close()
        self.workers = {}
