"""GPU machine: where one model forward of model_bench's `block`, `gpt2` or `llama` goes, in one dtype. Warms up
(compiles, tunes), then times realize() and traces three forwards with `zd.trace`, and prints the device
time per forward by kind of kernel (fused attention, tensor-core GEMM, float32 GEMM, the rest) and its
largest kernels; with `--torch`, also torch.compile's kernels of the same forward under torch.profiler:

    python3 benchmarks/h200/model_profile.py gpt2 bf16 $OUT/gpt2-bf16.json [--torch]
"""

from __future__ import annotations

import collections
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
# a replayed CUDA graph is traced with its time split evenly over its kernels: per-kernel times need them
# launched one by one
os.environ.setdefault("ZYX_DIST_CUDA_GRAPHS", "0")
import model_bench as mb
from step_profile import kernel_times

import zyx_dist as zd
from zyx_dist.engine import session as zsession


def kind(source: str) -> str:
    if "Ks[" in source or "zd_tma_k" in source:  # (the TMA form's tensor map of k)
        return "attention"
    if "wgmma.mma_async" in source:
        return "gemm (wgmma)"
    if "As[" in source:
        return "gemm (tensor cores)" if "mma.sync" in source else "gemm (float32)"
    return "other"


def main() -> None:
    section, dt, path = sys.argv[1], sys.argv[2], sys.argv[3]
    rng = np.random.default_rng(2)
    B, T = (mb.LLAMA["B"] if section == "llama" else 8), 1024
    D, build, forward = mb.model_of(section)
    params = build(rng)
    zd.init(ray=False, devices=["cuda:0"])
    try:
        zp, zx, zm = mb.zd_inputs(params, rng, (B, T, D), dt)
        ops = mb.Ops("zd")
        walls = []
        for i in range(8):
            out = forward(ops, zx, zp, zm)
            t0 = time.perf_counter()
            out.realize()
            if i >= 3:
                walls.append(time.perf_counter() - t0)
        with zd.trace(path):
            for _ in range(3):
                forward(ops, zx, zp, zm).realize()
        per, launches = kernel_times(path, 3)
        programs = {p.name: p for p in zsession.current().programs.values()}
        by_kind: dict[str, float] = collections.defaultdict(float)
        for name, us in per.items():
            by_kind[kind(programs[name].source) if name in programs else "other"] += us
        print(f"{section} {dt}: realize median {statistics.median(walls) * 1e3:.2f} ms wall; device "
              f"{sum(per.values()) / 1e3:.2f} ms per forward in {launches} launches")
        for k, us in sorted(by_kind.items(), key=lambda kv: -kv[1]):
            print(f"  {k:22s} {us / 1e3:8.3f} ms")
        for name, us in sorted(per.items(), key=lambda kv: -kv[1])[:10]:
            p = programs.get(name)
            print(f"    {us / 1e3:8.3f} ms  {name}  {kind(p.source) if p else ''}  gws={p.gws if p else ''}")
        if "--torch" in sys.argv:
            torch_profile(forward, params, rng, (B, T, D), dt)
    finally:
        zd.shutdown()


def torch_profile(forward, params: dict, rng, x_shape: tuple, dt: str) -> None:
    """torch.compile's kernels of the same forward: device time per forward and the largest kernels."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    tdt = mb.torch_dtype(dt)
    tp = mb._tree(params, lambda a: mb.to_torch(a, tdt))
    tx = mb.to_torch(rng.standard_normal(x_shape).astype(np.float32), tdt)
    tm = mb.to_torch(mb.causal_mask(x_shape[1]), tdt)
    ops = mb.Ops("torch")
    with torch.no_grad():
        compiled = torch.compile(lambda x, p, m: forward(ops, x, p, m))
        for _ in range(3):
            compiled(tx, tp, tm)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                compiled(tx, tp, tm)
            torch.cuda.synchronize()
    per: dict[str, float] = collections.defaultdict(float)
    for e in prof.events():
        if e.device_type.name == "CUDA":
            per[e.name] += e.device_time / 3  # us per forward
    print(f"torch.compile: device {sum(per.values()) / 1e3:.2f} ms per forward")
    for name, us in sorted(per.items(), key=lambda kv: -kv[1])[:12]:
        print(f"    {us / 1e3:8.3f} ms  {name[:110]}")


if __name__ == "__main__":
    main()
