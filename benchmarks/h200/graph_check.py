"""GPU machine: whether a plain `realize()` of model_bench's block or GPT-2 replays its plan as CUDA graphs. The
H200 profile of GPT-2 bf16 on 2026-12-04 showed every kernel launched one by one (`CudaBackend.launch`, never
`launch_graph`), although the same loop on the reference device binds the same addresses every time (what a
captured graph needs). This runs the forward a few times in process and prints, per realize, its wall time and
`zd.stats()["graph_replays"]`, then each worker template's launch segments: broken (a capture failed, so it
launches one by one for good), graphs captured, buffer assignments seen once.

    python3 benchmarks/h200/graph_check.py [block|gpt2] [bf16|fp32] [--device cuda:0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import model_bench as mb

import zyx_dist as zd
from zyx_dist.engine import session as zsession
from zyx_dist.runtime import replay


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("section", nargs="?", default="block")
    ap.add_argument("dtype", nargs="?", default="bf16")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=1024)
    args = ap.parse_args()
    zd.init(ray=False, devices=[args.device])
    try:
        rng = np.random.default_rng(2)
        D, build, forward = mb.model_of(args.section)
        zp, zx, zm = mb.zd_inputs(build(rng), rng, (args.batch, args.tokens, D), args.dtype)
        ops = mb.Ops("zd")
        for i in range(6):
            out = forward(ops, zx, zp, zm)
            t = time.perf_counter()
            out.realize()
            print(f"realize {i}: {(time.perf_counter() - t) * 1e3:.2f} ms, graph replays so far "
                  f"{zd.stats()['graph_replays']}", flush=True)
        worker = zsession.current().backend.workers[args.device]
        for tid, t in worker._templates.items():
            segments = [op[1] for op in t.ops if op[0] == replay._SEGMENT]
            print(f"template {tid}: {len(t.ops)} operations, {len(segments)} launch segments; broken "
                  f"{[s.broken for s in segments]}, graphs {[len(s.graphs) for s in segments]}, "
                  f"seen once {[len(s.seen) for s in segments]}")
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
