"""GPU machine: device time of the fp32 GEMM template's options on products too small to be autotuned (the
tuner times only kernels its model expects to run 0.2 ms or more, so their first candidate is what runs),
beside torch's `relu(x @ w + b)` on the same shapes. For each shape `relu(x @ w + b)` (M x K @ K x N) it prints
the first candidate (marked `*`), every option of the small-tile set and the best wide tile, as the median of
50 launches measured by CUDA events, then torch's median.

    python3 benchmarks/h200/gemm_small.py
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

import zyx_dist as zd
from zyx_dist.codegen import gemm
from zyx_dist.codegen.options import KernelOpts, candidates
from zyx_dist.codegen.render import facts, render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.protocol import Alloc, Compile, CopyIn, Free, Launch
from zyx_dist.runtime.worker import Worker

SHAPES = ((256, 256, 256), (512, 512, 512), (256, 1024, 1024), (1024, 256, 1024), (128, 4096, 1024),
          (2048, 256, 256), (64, 1024, 1024))
LAUNCHES = 50


def time_opts(worker: Worker, kernel, opts: KernelOpts, dialect: str) -> float:
    """Median device seconds of `LAUNCHES` launches of `kernel` rendered in `dialect` with `opts`."""
    p = render_kernel(kernel, dialect, opts, True)
    bufs = list(range(1, 1 + len(kernel.inputs) + len(kernel.outputs)))
    cmds = [Alloc(b, max(n.size * n.dtype.itemsize, 1)) for b, n in zip(bufs, kernel.inputs + kernel.outputs)]
    cmds += [CopyIn(b, n.host) for b, n in zip(bufs, kernel.inputs)]
    cmds.append(Compile(1000, p.source, p.name))
    reads, writes = tuple(bufs[: len(kernel.inputs)]), tuple(bufs[len(kernel.inputs):])
    cmds += [Launch(1000, tuple(bufs), p.gws, p.lws, reads, writes) for _ in range(LAUNCHES)]
    cmds += [Free(b) for b in bufs]
    res = worker.run(cmds)
    bad = [r for r in res.results if type(r).__name__ != "Done"]
    if bad:
        raise RuntimeError(f"{opts}: {bad[0]}")
    return statistics.median(res.kernel_seconds[5:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0", help="an OpenCL device runs the script's logic (no torch)")
    device = ap.parse_args().device
    dialect = device.split(":")[0]
    rng = np.random.default_rng(0)
    with Worker(device, profile=True) as w:
        for m, k, n in SHAPES:
            x, wt, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (n,)))
            (kern,) = kernelize([zd.relu(zd.tensor(x) @ zd.tensor(wt) + zd.tensor(b)).node])
            cands = candidates(facts(kern, dialect, True))
            tried = list(dict.fromkeys([*cands, *(KernelOpts(tile=t, tile_k=d, prefetch=p)
                                                 for t in range(4, len(gemm.TILES)) for d in (8, 16, 32) for p in (0, 1)),
                                        *(KernelOpts(tile=t, tile_k=16, prefetch=1) for t in range(4))]))
            rows = sorted(((time_opts(w, kern, o, dialect), o) for o in tried), key=lambda r: r[0])
            if dialect != "cuda":
                print(f"M={m} K={k} N={n}: " + ", ".join(f"{o.tag()} {1e6 * t:.0f} us" for t, o in rows[:3]))
                continue
            import torch

            tx, tw, tb = (torch.tensor(a, device="cuda") for a in (x, wt, b))
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2 * LAUNCHES)]
            for i in range(LAUNCHES):
                ev[2 * i].record()
                torch.relu(tx @ tw + tb)
                ev[2 * i + 1].record()
            torch.cuda.synchronize()
            theirs = statistics.median(ev[2 * i].elapsed_time(ev[2 * i + 1]) * 1e3 for i in range(5, LAUNCHES))
            print(f"\nrelu(x @ w + b), M={m} K={k} N={n}: torch {theirs:.1f} us; first candidate "
                  f"{cands[0].tag()} {1e6 * {o: s for s, o in rows}[cands[0]]:.1f} us", flush=True)
            for s, o in rows[:8]:
                tm, tn = gemm.tile_shape(o.tile) if o.tile < len(gemm.TILES) else (0, 0)
                print(f"  {'*' if o == cands[0] else ' '} {1e6 * s:7.1f} us  tile {tm}x{tn} k{o.tile_k} "
                      f"prefetch {o.prefetch}")


if __name__ == "__main__":
    main()
