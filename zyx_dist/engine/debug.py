"""Driver side: the human-readable output of `ZYX_DIST_DEBUG` (bit 4: kernels after fusion, bit 8: the
kernel IR, i.e. each kernel's op list with shapes and dtypes, bit 64: placements with their reasons and
transfers with their bytes). Takes kernels, programs and schedules; logs them to the area loggers of
`zyx_dist.logs` (`zyx_dist.kernels`, `zyx_dist.ir`, `zyx_dist.scheduler`)."""

from __future__ import annotations

from .. import logs
from ..codegen.program import kernel_key


def print_kernels(kernels, programs) -> None:
    log = logs.logger("kernels")
    for k, ps in zip(kernels, programs):
        p = next(iter(ps.values())) if isinstance(ps, dict) else ps  # the dialects share work sizes
        names = "/".join(q.name for q in ps.values()) if isinstance(ps, dict) else p.name
        outs = ", ".join(f"#{o.id}{o.shape}:{o.dtype.name}" for o in k.outputs)
        ins = ", ".join(f"#{x.id}{x.shape}:{x.dtype.name}" for x in k.inputs)
        log.debug(f"zyx_dist: kernel {names} -> [{outs}] from [{ins}] gws={p.gws} lws={p.lws}")


def print_ir(kernels) -> None:
    log = logs.logger("ir")
    for k in kernels:
        rows, outs, row = kernel_key(k)
        kind = f", a row kernel over the last {row} dims" if row else ""
        lines = [f"zyx_dist: IR (outputs {list(outs)}{kind})", *(f"  {i:3d} {r}" for i, r in enumerate(rows))]
        log.debug("\n".join(lines))


def print_schedule(sched) -> None:
    log = logs.logger("scheduler")
    for p in sched.placements:
        log.debug(f"zyx_dist: place {p.kernel} on {p.device} at step {p.step}: {p.reason} (~{p.seconds * 1e6:.1f} us)")
    for t in sched.transfers:
        log.debug(f"zyx_dist: transfer #{t.id} {t.src} -> {t.dst}: {t.nbytes} bytes (exported at step {t.step})")
    if sched.spills:
        log.debug(f"zyx_dist: {sched.spills} buffers spilled to host memory")
