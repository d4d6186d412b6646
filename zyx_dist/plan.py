"""Driver side: `zd.explain` and `zd.trace` (API.md sections 6-7). `explain` takes tensors and gives
the `Plan` the scheduler would run (kernels with device, reason and source, transfers with bytes,
an estimated time) without running anything. `trace` records the driver's phases and every kernel
launch with its device-side duration, and writes a Chrome/Perfetto trace JSON on exit.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from . import session as _session
from .kernelize import kernelize
from .scheduler import IdAllocator, place, schedule


@dataclass(frozen=True)
class PlannedKernel:
    name: str
    device: str
    reason: str
    source: str
    flops: int
    nbytes: int
    seconds: float


@dataclass(frozen=True)
class PlannedTransfer:
    src: str
    dst: str
    nbytes: int


@dataclass
class Plan:
    kernels: list[PlannedKernel] = field(default_factory=list)
    transfers: list[PlannedTransfer] = field(default_factory=list)
    estimated_seconds: float = 0.0

    def __str__(self) -> str:
        lines = [f"Plan: {len(self.kernels)} kernels, {len(self.transfers)} transfers, "
                 f"estimated {self.estimated_seconds * 1e3:.3f} ms"]
        for i, k in enumerate(self.kernels):
            lines.append(f"  [{i}] {k.name} on {k.device} ({k.reason}): {k.flops} flop, {k.nbytes} bytes, "
                         f"~{k.seconds * 1e6:.1f} us")
        for t in self.transfers:
            lines.append(f"  transfer {t.src} -> {t.dst}: {t.nbytes} bytes")
        return "\n".join(lines)

    __repr__ = __str__


def explain(*xs) -> Plan:
    """The plan for realizing `xs`, without running it."""
    s = _session.current()
    kernels = kernelize([x.node for x in xs])
    programs = [s.program(k) for k in kernels]
    # a throwaway copy of the compiled-program state, so explaining changes nothing
    states = {n: type(st)(st.name, st.fp64, dict(st.compiled)) for n, st in s.states.items()}
    sched = schedule(kernels, programs, states, s.default_device, IdAllocator())
    peaks = {d.name: d for d in s.devices()}
    plan = Plan()
    for k, p in zip(kernels, programs):
        dev, reason = place(k, s.default_device)
        info = peaks[dev]
        secs = max(p.bytes / (info.peak_gbps * 1e9), p.flops / (info.peak_gflops * 1e9)) + 5e-6
        plan.kernels.append(PlannedKernel(p.name, dev, reason, p.source, p.flops, p.bytes, secs))
        plan.estimated_seconds += secs
    for x, dst, _buf, nbytes in sched.moves:
        plan.transfers.append(PlannedTransfer(x.buffer.device, dst, nbytes))
        plan.estimated_seconds += nbytes / 1e9
    return plan


@contextmanager
def trace(path: str | os.PathLike) -> Iterator[None]:
    """Record kernel launches (device-side durations) and driver phases; write Chrome trace JSON."""
    s = _session.current()
    events: list[dict] = []
    s.trace_events = events
    for w in s.backend.workers.values():
        w.profile = True
    start = time.perf_counter()
    try:
        yield
    finally:
        s.trace_events = None
        for w in s.backend.workers.values():
            w.profile = bool(s.debug & 2)
        names = sorted({e["tid"] for e in events})
        meta = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": t}} for t in names]
        for e in events:
            e["ts"] = (e["ts"] - start) * 1e6
        with open(path, "w") as f:
            json.dump({"traceEvents": meta + events, "displayTimeUnit": "ms"}, f)
