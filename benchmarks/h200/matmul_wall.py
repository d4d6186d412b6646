"""GPU machine: where the wall time of a big GEMM's `realize()` goes beyond its kernel (bf16 8192^3 was 2.13 ms
wall against 1.81 ms on the device). In-process on cuda:0, for each size: the median wall of `realize()` of a
fresh `a @ b` (graph built before the clock, as model_bench times it) beside torch's `a @ b` + sync; the
kernels' device time inside that same loop (torch.profiler, whose CUPTI sees CuPy's launches too) beside
the tuner's figure; and a cProfile of the realizes by own time (the host side: the driver, CuPy, the wait).

    python3 benchmarks/h200/matmul_wall.py [--sizes 8192,4096] [--dtype bf16]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

import numpy as np
from small_step_breakdown import kernels_of  # (this folder: the script's own directory is on sys.path)

import zyx_dist as zd


def median_ms(fn, n: int) -> tuple[float, float]:
    ts = []
    for _ in range(n):
        ts.append(fn())
    q = statistics.quantiles(ts, n=4)
    return statistics.median(ts) * 1e3, (q[2] - q[0]) * 1e3


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192,4096")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    zdt = {"bf16": zd.bfloat16, "fp16": zd.float16, "fp32": zd.float32}[args.dtype]
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    zd.init(ray=False, devices=["cuda:0"])
    rng = np.random.default_rng(0)
    for n in map(int, args.sizes.split(",")):
        a0 = rng.standard_normal((n, n)).astype(np.float32)
        b0 = rng.standard_normal((n, n)).astype(np.float32)
        za, zb = zd.tensor(a0).astype(zdt).realize(), zd.tensor(b0).astype(zdt).realize()
        ta, tb = (torch.from_numpy(x).cuda().to(tdt) for x in (a0, b0))
        flops = 2 * n**3
        held = [(za @ zb).realize()]

        def ours(za=za, zb=zb, held=held) -> float:
            y = za @ zb
            t = time.perf_counter()
            y.realize()
            dt = time.perf_counter() - t
            held[0] = y
            return dt

        def theirs(ta=ta, tb=tb) -> float:
            t = time.perf_counter()
            ta @ tb
            torch.cuda.synchronize()
            return time.perf_counter() - t

        for _ in range(3):
            ours()
            theirs()
        rows = {"zyx_dist realize": median_ms(ours, args.repeats), "torch a @ b + sync": median_ms(theirs, args.repeats)}
        for name, (med, iqr) in rows.items():
            print(f"{args.dtype} {n}^3 {name:22s} {med:7.3f} ms (IQR {iqr:.3f})  {flops / med / 1e9:6.1f} TFLOP/s")
        for name, us, k in kernels_of(ours, 10):
            print(f"  zd kernel {name}: {us:.1f} us per realize ({k} per realize) = {flops / us / 1e6:.1f} TFLOP/s")
        for name, us, k in kernels_of(theirs, 10):
            print(f"  torch kernel {name}: {us:.1f} us ({k} per call)")
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(20):
            ours()
        pr.disable()
        print(f"  cProfile of 20 realizes ({args.dtype} {n}^3), by own time:")
        pstats.Stats(pr).sort_stats("tottime").print_stats(14)
        print("  stats:", {k: v for k, v in zd.stats().items() if "replay" in k or "graph" in k})
        del held[:]
    zd.shutdown()


if __name__ == "__main__":
    main()
