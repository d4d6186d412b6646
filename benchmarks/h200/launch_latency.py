"""GPU machine: where a short replayed realize waits on the device side. For layer_norm (8,1024,1024) fp32, the
bf16 attention core and `x * 2 + 1` (realize_profile.py's cases), a torch.profiler trace (CUPTI sees CuPy's
runtime calls and kernels) of realizes, each graph built before it; per realize, medians of: the CUDA graph's (or
kernel's) launch call's end to its first kernel's start, that kernel's run, its end to the synchronize's return,
and the same for torch's op. Run it with ZYX_DIST_CUDA_GRAPHS=0 too to compare direct launches.

    python3 benchmarks/h200/launch_latency.py [case ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realize_profile as rp

import zyx_dist as zd


def gaps(events: list) -> dict[str, float]:
    """Median us of launch-end -> kernel-start, kernel run, kernel-end -> sync-return over the trace's realizes."""
    launches = sorted((e for e in events if e.device_type.name == "CPU" and
                       e.name in ("cudaGraphLaunch", "cudaLaunchKernel", "cuLaunchKernel", "cuGraphLaunch")),
                      key=lambda e: e.time_range.start)
    kernels = sorted((e for e in events if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
    syncs = sorted((e for e in events if e.device_type.name == "CPU" and "Synchronize" in e.name),
                   key=lambda e: e.time_range.start)
    out: dict[str, list[float]] = {"launch->start": [], "kernel": [], "end->sync return": []}
    for lc in launches:
        k = next((k for k in kernels if k.time_range.start >= lc.time_range.start), None)
        s = next((s for s in syncs if s.time_range.end >= (k.time_range.end if k else 0)), None)
        if k is None or s is None:
            continue
        out["launch->start"].append(k.time_range.start - lc.time_range.end)
        out["kernel"].append(k.time_range.end - k.time_range.start)
        out["end->sync return"].append(s.time_range.end - k.time_range.end)
    return {name: statistics.median(v) if v else float("nan") for name, v in out.items()} | {"n": len(out["kernel"])}


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    cases = sys.argv[1:] or ["layer_norm", "attention", "tiny"]
    zd.init(ray=False, devices=["cuda:0"])
    rng = np.random.default_rng(0)
    for case in cases:
        build, realize, tfn = rp.warmed(case, rng, torch)
        graphs = [build() for _ in range(50)]
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for g in graphs:
                realize(g)
        ours = gaps(prof.events())
        names: dict[str, list[float]] = {}
        for e in prof.events():
            if e.device_type.name == "CUDA":
                names.setdefault(e.name[:60], []).append(e.time_range.end - e.time_range.start)
        print(f"{case}: zd kernels per realize: " + ", ".join(
            f"{k} x{len(v) / len(graphs):.1f} {statistics.median(v):.1f} us" for k, v in names.items()), flush=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(50):
                tfn()
                torch.cuda.synchronize()
        theirs = gaps(prof.events())
        print(f"{case}: zd   " + ", ".join(f"{k} {v:.1f}" for k, v in ours.items()), flush=True)
        print(f"{case}: torch " + ", ".join(f"{k} {v:.1f}" for k, v in theirs.items()), flush=True)


if __name__ == "__main__":
    main()
