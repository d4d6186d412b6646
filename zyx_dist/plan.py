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
    _kernels, programs, sched = s.plan([x.node for x in xs])
    by_name = {p.name: p for p in programs}
    plan = Plan(estimated_seconds=sched.estimated_seconds)
    for pl in sched.placements:
        p = by_name[pl.kernel]
        plan.kernels.append(PlannedKernel(p.name, pl.device, pl.reason, p.source, p.flops, p.bytes, pl.seconds))
    plan.transfers = [PlannedTransfer(t.src, t.dst, t.nbytes) for t in sched.transfers]
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
