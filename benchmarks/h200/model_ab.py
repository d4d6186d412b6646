"""GPU machine: one model forward of model_bench.py (block, gpt2 or llama, fp32/bf16/fp16) in this process: its first
`realize()` (compile and tune) and the median and IQR of later ones, each graph built before the clock (the
median build time printed beside); checked against the first result. For an A/B of two packages run it once per package, each in a fresh process
with caches of its own (XDG_CACHE_HOME, CUPY_CACHE_DIR), alternating:

    PYTHONPATH=<package dir>:$PYTHONPATH XDG_CACHE_HOME=$(mktemp -d) python3 benchmarks/h200/model_ab.py [gpt2|block|llama] [bf16|fp32|fp16] [repeats]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import model_bench as mb

import zyx_dist as zd


def main() -> None:
    args = sys.argv[1:]
    model = args[0] if args else "gpt2"
    dtype = args[1] if len(args) > 1 else "bf16"
    repeats = int(args[2]) if len(args) > 2 else 10
    zd.init(ray=False, devices=["cuda:0"])
    rng = np.random.default_rng(3)
    D, params, forward = mb.model_of(model)
    p, x, m = mb.zd_inputs(params(rng), rng, (mb.LLAMA["B"] if model == "llama" else 8, 1024, D), dtype)
    y = forward(mb.Ops("zd"), x, p, m)
    t = time.perf_counter()
    y.realize()
    first_s = time.perf_counter() - t
    first = y.numpy().astype(np.float32)
    times, builds = [], []
    for _ in range(repeats + 2):
        t = time.perf_counter()
        y = forward(mb.Ops("zd"), x, p, m)
        b = time.perf_counter()
        y.realize()
        builds.append(b - t)
        times.append(time.perf_counter() - b)
    times, builds = times[2:], builds[2:]
    diff = float(np.abs(y.numpy().astype(np.float32) - first).max())
    q = statistics.quantiles(times, n=4)
    print(f"{model} {dtype} from {zd.__file__.rsplit('/', 2)[0]}: first forward {first_s:.2f} s, realize median "
          f"{statistics.median(times) * 1e3:.3f} ms (IQR {(q[2] - q[0]) * 1e3:.3f}), graph built in "
          f"{statistics.median(builds) * 1e3:.3f} ms before it, max |diff| against the first "
          f"{diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
