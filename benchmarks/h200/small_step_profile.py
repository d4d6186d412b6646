"""GPU machine: where a replayed `zd.jit` small step goes, in-process on cuda:0. Runs the dispatch benchmark's
step `relu(y @ w + b)` at 256^2 through zd.jit, prints the median wall per step beside torch eager's, then a
cProfile of 2000 replays by own time (what the driver, the worker and CuPy each cost per step). With
`--plain`, the same step without zd.jit (`relu(y @ w + b).realize()`, the graph built every step).

    python3 benchmarks/h200/small_step_profile.py [--plain]
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import sys
import time

import numpy as np

import zyx_dist as zd


def walls(step, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        step()
        out.append((time.perf_counter() - t) * 1e6)
    return out


def main() -> None:
    import torch

    n = 256
    rng = np.random.default_rng(0)
    w0 = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    b0 = (rng.standard_normal(n) * 0.1).astype(np.float32)
    y0 = rng.standard_normal((n, n)).astype(np.float32)
    tw, tb, ty = (torch.tensor(a, device="cuda") for a in (w0, b0, y0))
    ty = [ty]

    def torch_step():
        ty[0] = torch.relu(ty[0] @ tw + tb)
        torch.cuda.synchronize()

    print("package:", zd.__file__, flush=True)
    zd.init(ray=False, devices=["cuda:0"])
    try:
        w, b = zd.tensor(w0).realize(), zd.tensor(b0).realize()
        y = [zd.tensor(y0).realize()]
        plain = "--plain" in sys.argv[1:]
        layer = zd.jit(lambda y, w, b: zd.relu(y @ w + b))

        def step():
            y[0] = zd.relu(y[0] @ w + b).realize() if plain else layer(y[0], w, b)

        for _ in range(50):
            step()
            torch_step()
        for rnd in range(3):
            ours, theirs = walls(step, 500), walls(torch_step, 500)
            replays = "" if plain else f"{layer.replays} replays, "
            print(f"round {rnd}: {'plain' if plain else 'zd.jit'} {statistics.median(ours):.1f} us, torch eager "
                  f"{statistics.median(theirs):.1f} us per step ({replays}"
                  f"{zd.stats()['graph_replays']} graph replays)", flush=True)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            step()
        prof.disable()
    finally:
        zd.shutdown()
    pstats.Stats(prof).sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()
