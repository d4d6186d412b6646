"""Driver side: the human-readable output of `ZYX_DIST_DEBUG` (bit 4: kernels after fusion, bit 8: the
kernel IR, i.e. each kernel's op list with shapes and dtypes, bit 64: placements with their reasons and
transfers with their bytes). Takes kernels, programs and schedules; prints."""

from __future__ import annotations

from ..codegen.render import kernel_key


def print_kernels(kernels, programs) -> None:
    for k, ps in zip(kernels, programs):
        p = next(iter(ps.values())) if isinstance(ps, dict) else ps  # the dialects share work sizes
        names = "/".join(q.name for q in ps.values()) if isinstance(ps, dict) else p.name
        outs = ", ".join(f"#{o.id}{o.shape}:{o.dtype.name}" for o in k.outputs)
        ins = ", ".join(f"#{x.id}{x.shape}:{x.dtype.name}" for x in k.inputs)
        print(f"zyx_dist: kernel {names} -> [{outs}] from [{ins}] gws={p.gws} lws={p.lws}")


def print_ir(kernels) -> None:
    for k in kernels:
        rows, outs, row = kernel_key(k)
        print(f"zyx_dist: IR (outputs {list(outs)}{f', a row kernel over the last {row} dims' if row else ''})")
        for i, row in enumerate(rows):
            print(f"  {i:3d} {row}")


def print_schedule(sched) -> None:
    for p in sched.placements:
        print(f"zyx_dist: place {p.kernel} on {p.device} at step {p.step}: {p.reason} (~{p.seconds * 1e6:.1f} us)")
    for t in sched.transfers:
        print(f"zyx_dist: transfer #{t.id} {t.src} -> {t.dst}: {t.nbytes} bytes (exported at step {t.step})")
    if sched.spills:
        print(f"zyx_dist: {sched.spills} buffers spilled to host memory")
