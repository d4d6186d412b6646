"""Driver side: `zd.explain` (API.md sections 6-7). Takes tensors and gives the `Plan` the scheduler
would run (kernels with device, reason and source, transfers with bytes, an estimated time) without
running anything. (`zd.trace`, which records what did run, is `trace.py`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..frontend.tensor import nodes_of
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
        lines = [(f"Plan: {len(self.kernels)} kernels, {len(self.transfers)} transfers, "
                 f"estimated {self.estimated_seconds * 1e3:.3f} ms")]
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
    _kernels, programs, sched = s.plan(nodes_of(xs, "explain"))
    # each kernel's programs: one per device model of the session
    by_name = {p.name: p for ps in programs for p in (ps.values() if isinstance(ps, dict) else [ps])}
    plan = Plan(estimated_seconds=sched.estimated_seconds)
    for pl in sched.placements:
        p = by_name[pl.kernel]
        plan.kernels.append(PlannedKernel(p.name, pl.device, pl.reason, p.source, p.flops, p.bytes, pl.seconds))
    plan.transfers = [PlannedTransfer(t.src, t.dst, t.nbytes) for t in sched.transfers]
    return plan
