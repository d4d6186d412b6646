"""GPU machine (or any device): a model forward realized over and over with every result kept alive (as an
evaluation loop that collects its outputs does), beside the same loop that drops each result. A kept result gets
new memory every time, so its plan's CUDA graph segment meets new addresses on every replay; this prints, for the
last `tail` realizes of each loop, the median wall of `realize()` (graph built before the clock), and per realize
the CUDA graphs replayed and the kernels launched. Checked: the last result of both loops against the first.

    python3 benchmarks/h200/kept_results.py [block|gpt2] [bf16|fp32] [realizes 40] [tail 10] [batch 1] [T 256]

(DEVICE=opencl:0 or reference:0 runs it elsewhere.)
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import model_bench as mb

import zyx_dist as zd


def loop(forward, x, p, m, realizes: int, tail: int, keep: bool) -> tuple[list[float], float, float, np.ndarray]:
    kept, walls, graphs, launched = [], [], 0, 0
    for i in range(realizes):
        y = forward(mb.Ops("zd"), x, p, m)
        s0 = zd.stats()
        t = time.perf_counter()
        y.realize()
        wall = time.perf_counter() - t
        s1 = zd.stats()
        if i >= realizes - tail:
            walls.append(wall)
            graphs += s1["graph_replays"] - s0["graph_replays"]
            launched += s1["kernels_launched"] - s0["kernels_launched"]
        if keep:
            kept.append(y)
    return walls, graphs / tail, launched / tail, y.numpy().astype(np.float32)


def main() -> None:
    args = sys.argv[1:]
    model, dtype = (args + ["block", "bf16"])[:2]
    realizes, tail, batch, seq = (int(a) for a in (args[2:] + ["40", "10", "1", "256"][len(args[2:]):]))
    device = os.environ.get("DEVICE", "cuda:0")
    zd.init(ray=False, devices=[device])
    rng = np.random.default_rng(3)
    D, params, forward = mb.model_of(model)
    p, x, m = mb.zd_inputs(params(rng), rng, (batch, seq, D), dtype)
    first = forward(mb.Ops("zd"), x, p, m).numpy().astype(np.float32)
    for keep in (False, True):
        walls, graphs, launched, last = loop(forward, x, p, m, realizes, tail, keep)
        q = statistics.quantiles(walls, n=4)
        print(f"{model} {dtype} B={batch} T={seq} on {device}, results {'kept' if keep else 'dropped'}: realize "
              f"median {statistics.median(walls) * 1e6:.1f} us (IQR {(q[2] - q[0]) * 1e6:.1f}) over the last "
              f"{tail} of {realizes}; per realize {graphs:.1f} CUDA graphs, {launched:.0f} kernels; max |diff| "
              f"against the first {float(np.abs(last - first).max()):.1e}", flush=True)


if __name__ == "__main__":
    main()
