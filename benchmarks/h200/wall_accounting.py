"""GPU machine: where the wall time of a realize goes beyond its kernels, for realize_profile.py's cases (by default
the three memory-bound ones of the five benchmark kernels, whose wall the dispatch issue wants within 10% of their
device time, and `x * 2 + 1`). A torch.profiler trace of realizes, each graph built inside a `build` range and
realized inside a `realize` range; per realize, medians of: the build, `realize()` entered to its first kernel's
start, the kernels' own time, the gaps between them, the last kernel's end to `realize()`'s return. torch's op and
its synchronize likewise. The profiler's callbacks add a little to each CUDA call, so the plain walls (no profiler,
medians) are printed beside.

    python3 benchmarks/h200/wall_accounting.py [case ...]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realize_profile as rp

import zyx_dist as zd

ROUNDS = 40


def account(events: list, outer: str) -> dict[str, float]:
    """Median us per `outer` range of the trace: its length, entry -> first kernel start, kernels (the time some
    kernel ran), gaps between kernels, last kernel end -> range end, and how many kernel events it holds."""
    ranges = sorted((e for e in events if e.device_type.name == "CPU" and e.name == outer),
                    key=lambda e: e.time_range.start)
    kernels = sorted((e for e in events if e.device_type.name == "CUDA" and "Memcpy" not in e.name
                      and "Memset" not in e.name), key=lambda e: e.time_range.start)
    rows: dict[str, list[float]] = {"wall": [], "to first kernel": [], "kernels": [], "gaps": [],
                                    "last kernel to return": [], "kernels each": []}
    for r in ranges:
        mine = [k for k in kernels if r.time_range.start <= k.time_range.start <= r.time_range.end]
        if not mine:
            continue
        # the union of the kernels' intervals: a CUDA graph's kernel can be listed twice (as the graph's node and
        # as the kernel), and overlapping kernels ran side by side
        spans: list[list[float]] = []
        for k in mine:
            a, b = k.time_range.start, k.time_range.end
            if spans and a <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], b)
            else:
                spans.append([a, b])
        run = sum(b - a for a, b in spans)
        end = max(k.time_range.end for k in mine)
        rows["wall"].append(r.time_range.end - r.time_range.start)
        rows["to first kernel"].append(mine[0].time_range.start - r.time_range.start)
        rows["kernels"].append(run)
        rows["gaps"].append(end - mine[0].time_range.start - run)
        rows["last kernel to return"].append(r.time_range.end - end)
        rows["kernels each"].append(len({(k.name, k.time_range.start) for k in mine}))
    return {k: statistics.median(v) if v else float("nan") for k, v in rows.items()}


def plain_walls(build, realize, tfn, torch) -> tuple[float, float, float]:
    """Medians (us) without the profiler: build + realize, realize alone (built before the clock), torch's op with
    its synchronize."""
    both, alone, theirs = [], [], []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        realize(build())
        both.append(time.perf_counter() - t)
        g = build()
        t = time.perf_counter()
        realize(g)
        alone.append(time.perf_counter() - t)
        del g
        t = time.perf_counter()
        tfn()
        torch.cuda.synchronize()
        theirs.append(time.perf_counter() - t)
    m = statistics.median
    return m(both) * 1e6, m(alone) * 1e6, m(theirs) * 1e6


def main() -> None:
    import torch
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity, profile

    cases = sys.argv[1:] or ["tiny", "ew_chain", "softmax", "sum"]
    zd.init(ray=False, devices=["cuda:0"])
    rng = np.random.default_rng(0)
    for case in cases:
        build, realize, tfn = rp.warmed(case, rng, torch)
        both, alone, theirs = plain_walls(build, realize, tfn, torch)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(ROUNDS):
                with record_function("build"):
                    g = build()
                with record_function("realize"):
                    realize(g)
                del g
        ev = prof.events()
        builds = [e.time_range.end - e.time_range.start for e in ev if e.device_type.name == "CPU" and e.name == "build"]
        ours = account(ev, "realize")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(ROUNDS):
                with record_function("torch"):
                    tfn()
                    torch.cuda.synchronize()
        mine = account(prof.events(), "torch")
        print(f"{case}: plain walls (us): build + realize {both:.1f}, realize {alone:.1f}, torch {theirs:.1f}")
        print(f"{case}: zd build {statistics.median(builds):.1f}; realize " +
              ", ".join(f"{k} {v:.1f}" for k, v in ours.items()))
        print(f"{case}: torch " + ", ".join(f"{k} {v:.1f}" for k, v in mine.items()), flush=True)
    zd.shutdown()


if __name__ == "__main__":
    main()
