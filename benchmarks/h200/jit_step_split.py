"""GPU machine: where the wall of a jitted training step goes, against its device time. Runs the GPT step of
benchmarks/train_bench.py (`zd.jit` of model, zd.grad and Adam; replayed as CUDA graphs after its first calls),
then prints the median wall of a step and a cProfile of 20 steps by cumulative time: the host's Python against
the wait in the worker's synchronize (the device time of the step's kernels: benchmarks/h200/step_profile.py).

    python3 benchmarks/h200/jit_step_split.py 8 1024 768 12 bfloat16     # batch, block, embed, heads, dtype
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import time
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import train_bench

import zyx_dist as zd


def main() -> None:
    batch, block, embed, heads = map(int, sys.argv[1:5])
    dt = zd.dtype(sys.argv[5] if len(sys.argv) > 5 else "float32")
    gpt = train_bench.load_example()
    cfg = SimpleNamespace(batch=batch, block=block, embed=embed, heads=heads, layers=4)
    data, vocab = train_bench.batches(gpt, cfg, 2)
    zd.init(ray=False)
    params = [zd.tensor(p).astype(dt).realize() for p in gpt.init_params(vocab, cfg)]
    mask = zd.tensor(np.triu(np.full((block, block), -1e9, np.float32), 1)).astype(dt).realize()
    x, y = (zd.tensor(a).astype(dt).realize() for a in data[0])
    opt = zd.optim.Adam(params, lr=1e-3)

    @zd.jit
    def step(params, opt, x, y):
        loss = gpt.loss_fn(params, x, y, mask, cfg)
        return loss, opt.step(zd.grad(loss, params))

    state = {"params": params}

    def run() -> None:
        _, state["params"] = step(state["params"], opt, x, y)

    for _ in range(8):
        run()
    walls = []
    for _ in range(30):
        t = time.perf_counter()
        run()
        walls.append(time.perf_counter() - t)
    print(f"jitted step: wall median {statistics.median(walls) * 1e3:.2f} ms (IQR {np.subtract(*np.percentile(walls, [75, 25])) * 1e3:.2f}); "
          f"jit runs {step.runs}, replays {step.replays}; "
          f"CUDA graphs replayed {zd.stats()['graph_replays']}", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(20):
        run()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    zd.shutdown()


if __name__ == "__main__":
    main()
