"""GPU machine: how much of a model forward's realize() the GPU spends waiting for the driver. For model_bench's
`block` and `gpt2` in one dtype, after warm-up: the median realize() wall, the median wall of the same forward
as a replayed `zd.jit` function (no graph walked), the time from entering realize() to the first launch on the
device (the driver work no kernel overlaps: walk, cache lookup, binding), the plan-cache walk alone, and a
cProfile of five realizes:

    python3 benchmarks/h200/driver_exposed.py gpt2 bf16
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import model_bench as mb

import zyx_dist as zd
from zyx_dist.fuse import plan_cache
from zyx_dist.runtime import cuda as zcuda


def main() -> None:
    section, dt = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(2)
    B, T = 8, 1024
    D, build, forward = mb.model_of(section)
    params = build(rng)
    zd.init(ray=False, devices=["cuda:0"])
    first_launch: list[float] = []

    def noting(orig):
        def wrapped(self, *a, **k):
            if not first_launch:
                first_launch.append(time.perf_counter())
            return orig(self, *a, **k)
        return wrapped

    for name in ("launch", "launch_graph"):
        setattr(zcuda.CudaBackend, name, noting(getattr(zcuda.CudaBackend, name)))
    try:
        zp, zx, zm = mb.zd_inputs(params, rng, (B, T, D), dt)
        ops = mb.Ops("zd")
        walls, exposed, builds, walks = [], [], [], []
        for i in range(13):
            t0 = time.perf_counter()
            out = forward(ops, zx, zp, zm)
            t1 = time.perf_counter()
            if i >= 3:
                plan_cache.structure([out.node])
                walks.append(time.perf_counter() - t1)
            first_launch.clear()
            t1 = time.perf_counter()
            out.realize()
            t2 = time.perf_counter()
            if i >= 3:
                builds.append(t1 - t0)
                walls.append(t2 - t1)
                exposed.append(first_launch[0] - t1)
        jitted = zd.jit(lambda x, p, m: forward(ops, x, p, m))
        jits = []
        for i in range(13):
            t0 = time.perf_counter()
            jitted(zx, zp, zm)
            if i >= 3:
                jits.append(time.perf_counter() - t0)
        med = lambda v: f"{statistics.median(v) * 1e3:.3f} ms (iqr {(np.percentile(v, 75) - np.percentile(v, 25)) * 1e3:.3f})"
        print(f"{section} {dt}: realize {med(walls)}; zd.jit {med(jits)}; enter realize -> first launch {med(exposed)}; "
              f"plan-cache walk alone {med(walks)}; graph build {med(builds)}; {len(plan_cache.structure([out.node])[1])} nodes")
        outs = [forward(ops, zx, zp, zm) for _ in range(5)]
        pr = cProfile.Profile()
        pr.enable()
        for o in outs:
            o.realize()
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
