"""GPU machine: the fused attention core `softmax(q @ k.mT * c + mask) @ v` (causal mask, B=8, 16 heads,
T=1024, head dim 64, as model_bench's sub-op) realized a few times in one dtype, for Nsight Compute to
profile its kernel, and its median wall time printed:

    ncu -k regex:kc_ -c 1 --set full python3 benchmarks/h200/attention_profile.py float32
    python3 benchmarks/h200/attention_profile.py bfloat16 30 --prof   # then cProfile of 30 more realizes
"""

from __future__ import annotations

import math
import statistics
import sys
import time

import ml_dtypes
import numpy as np

import zyx_dist as zd


def main() -> None:
    dtype = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[sys.argv[1]]
    B, H, T, D = 8, 16, 1024, 64
    rng = np.random.default_rng(0)
    zd.init(ray=False, devices=["cuda:0"])
    try:
        # uploaded in their dtype: the attention kernel is the first one the process runs
        q, k, v = (zd.tensor(rng.standard_normal((B, H, T, D)).astype(dtype)) for _ in range(3))
        mask = zd.tensor(np.triu(np.full((T, T), -np.inf, np.float32), 1).astype(dtype))
        times = []
        for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 5):
            out = zd.softmax((q @ k.mT) * (1 / math.sqrt(D)) + mask, axis=-1) @ v
            t0 = time.perf_counter()
            out.realize()
            times.append(time.perf_counter() - t0)
        print(f"attention core {sys.argv[1]}: median {statistics.median(times[1:]) * 1e3:.3f} ms wall")
        if "--prof" in sys.argv:  # where a realize's time goes on the driver's side
            import cProfile
            import pstats

            prof = cProfile.Profile()
            for _ in range(30):
                out = zd.softmax((q @ k.mT) * (1 / math.sqrt(D)) + mask, axis=-1) @ v
                prof.enable()
                out.realize()
                prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
