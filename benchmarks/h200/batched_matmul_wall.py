"""GPU machine: where the wall time of the attention's batched fp32 matmuls goes (model_bench's sub-ops
`q @ k.mT` and `p @ v` at B=8, 16 heads, T=1024, head dim 64: K = 64 and N = 64, where the GEMM's epilogue
and pipeline fill weigh most). In-process on cuda:0, per case: the median wall of `realize()` of a fresh
product (graph built before the clock, as model_bench times it) beside torch's product + sync, and the
kernels' device time inside those same loops (torch.profiler). With `--ncu`, only the realizes (for Nsight
Compute to profile the kernel):

    python3 benchmarks/h200/batched_matmul_wall.py [--cases qk,pv] [--dtype fp32]
    ncu -k regex:kc_ -c 1 --set full python3 benchmarks/h200/batched_matmul_wall.py --cases qk --ncu
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from matmul_wall import median_ms  # (this folder: the script's own directory is on sys.path)
from small_step_breakdown import kernels_of

import zyx_dist as zd

B, H, T, HD = 8, 16, 1024, 64


def operands(case: str, rng) -> tuple[np.ndarray, np.ndarray]:
    q = rng.standard_normal((B, H, T, HD)).astype(np.float32)
    if case == "qk":
        return q, rng.standard_normal((B, H, T, HD)).astype(np.float32)
    return (rng.random((B, H, T, T)) / T).astype(np.float32), q


def product(case: str, a, b):
    return a @ b.mT if case == "qk" else a @ b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="qk,pv")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--ncu", action="store_true")
    args = ap.parse_args()
    zdt = {"bf16": zd.bfloat16, "fp16": zd.float16, "fp32": zd.float32}[args.dtype]
    zd.init(ray=False, devices=["cuda:0"])
    rng = np.random.default_rng(0)
    flops = 2 * B * H * T * T * HD
    for case in args.cases.split(","):
        a0, b0 = operands(case, rng)
        za, zb = zd.tensor(a0).astype(zdt).realize(), zd.tensor(b0).astype(zdt).realize()
        held = [product(case, za, zb).realize()]
        if args.ncu:
            for _ in range(3):  # realize() blocks until the kernel is done
                held[0] = product(case, za, zb).realize()
            continue
        import torch

        tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
        ta, tb = (torch.from_numpy(x).cuda().to(tdt) for x in (a0, b0))
        got = held[0].numpy().astype(np.float32)
        ref = product(case, ta, tb).float().cpu().numpy()
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))

        def ours(za=za, zb=zb, held=held, case=case) -> float:
            y = product(case, za, zb)
            t = time.perf_counter()
            y.realize()
            dt = time.perf_counter() - t
            held[0] = y
            return dt

        def theirs(ta=ta, tb=tb, case=case) -> float:
            t = time.perf_counter()
            product(case, ta, tb)
            torch.cuda.synchronize()
            return time.perf_counter() - t

        for _ in range(3):
            ours()
            theirs()
        for name, fn in (("zyx_dist realize", ours), ("torch + sync", theirs)):
            med, iqr = median_ms(fn, args.repeats)
            print(f"{args.dtype} {case} {name:18s} {med:7.3f} ms (IQR {iqr:.3f})  {flops / med / 1e9:6.1f} TFLOP/s"
                  + (f"  max rel err {err:.1e}" if fn is ours else ""), flush=True)
        for who, fn in (("zd", ours), ("torch", theirs)):
            for name, us, k in kernels_of(fn, 10):
                print(f"  {who} kernel {name}: {us:.1f} us per call ({k} per call) = {flops / us / 1e6:.1f} TFLOP/s")
        print("  zd stats:", {k: v for k, v in zd.stats().items() if "replay" in k or "graph" in k}, flush=True)
        del held[:]
    zd.shutdown()


if __name__ == "__main__":
    main()
