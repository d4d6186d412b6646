"""GPU machine: where a cached training step's time goes. Trains the GPT of examples/train_gpt.py (4 layers,
4 heads) for a few steps, then prints the medians of building the step's graph (model, zd.grad, Adam) and
of its realize, and, from a `zd.trace` of three steps, the device time per step and its largest kernels;
the source and IR of those kernels go beside the trace, in `top-kernels.cu`, and every kernel's time and
outputs in `kernels.txt`.

    python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 16 128 256     # trace path, batch, block, embed
    python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 8 1024 768 12 bfloat16     # ..., heads, dtype
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
# a replayed CUDA graph is traced with its time split evenly over its kernels: per-kernel times need them
# launched one by one
os.environ.setdefault("ZYX_DIST_CUDA_GRAPHS", "0")
import train_bench

import zyx_dist as zd
from zyx_dist.engine import session as zsession


def kernel_times(path: str, runs: int) -> tuple[dict[str, float], dict[str, int]]:
    """From a `zd.trace` file of `runs` equal runs: each kernel's device time per run (us) and its launches per
    run. A CUDA graph replay is traced as one graph event and as each of its kernels: the kernels count."""
    with open(path) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    per: dict[str, float] = collections.defaultdict(float)
    launches: dict[str, int] = collections.defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            per[e.get("name")] += e.get("dur", 0) / runs
            launches[e.get("name")] += 1
    return per, {name: n // runs for name, n in launches.items()}


def main() -> None:
    path, batch, block, embed = sys.argv[1], *map(int, sys.argv[2:5])
    heads = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    dt = zd.dtype(sys.argv[6] if len(sys.argv) > 6 else "float32")
    gpt = train_bench.load_example()
    cfg = SimpleNamespace(batch=batch, block=block, embed=embed, heads=heads, layers=4)
    data, vocab = train_bench.batches(gpt, cfg, 2)
    zd.init(ray=False)
    params = [zd.tensor(p).astype(dt).realize() for p in gpt.init_params(vocab, cfg)]
    mask = zd.tensor(np.triu(np.full((cfg.block, cfg.block), -1e9, np.float32), 1)).astype(dt).realize()
    x, y = (zd.tensor(a).astype(dt).realize() for a in data[0])
    opt = zd.optim.Adam(params, lr=1e-3)
    build, run = [], []
    for i in range(16):  # 6 warm-up steps (plans, compiles, the template), then 10 timed
        t0 = time.perf_counter()
        loss = gpt.loss_fn(params, x, y, mask, cfg)
        params = opt.step(zd.grad(loss, params))
        t1 = time.perf_counter()
        zd.realize(loss, *params)
        if i >= 6:
            build.append(t1 - t0)
            run.append(time.perf_counter() - t1)
    print(f"build (model + grad + adam) median {1e3 * np.median(build):.2f} ms, realize median "
          f"{1e3 * np.median(run):.2f} ms", flush=True)
    with zd.trace(path):
        for _ in range(3):
            loss = gpt.loss_fn(params, x, y, mask, cfg)
            params = opt.step(zd.grad(loss, params))
            zd.realize(loss, *params)
    per, launches = kernel_times(path, 3)
    top = sorted(per.items(), key=lambda kv: -kv[1])
    print(f"device time per step {sum(per.values()) / 1e3:.2f} ms in {sum(launches.values())} launches; largest:")
    programs = {p.name: (key, p) for key, p in zsession.current().programs.items()}
    with open(os.path.join(os.path.dirname(path), "top-kernels.cu"), "w") as f:
        for name, us in top[:12]:
            n = max(launches[name], 1)
            print(f"  {us / 1e3:8.3f} ms  {name}  ({n} launches, {us / n:7.1f} us each)")
            if name in programs:
                (rows, outs, row), p = programs[name][0][0], programs[name][1]
                f.write(f"// ==== {name}: {us / 1e3:.3f} ms per step in {n} launches, gws={p.gws} lws={p.lws} "
                        f"opts={p.opts}\n// IR outputs {outs} row {row}\n")
                f.writelines(f"//  {i:3d} {r}\n" for i, r in enumerate(rows))
                f.write(p.source)
    with open(os.path.join(os.path.dirname(path), "kernels.txt"), "w") as f:  # every kernel, its outputs' IR rows
        for name, us in top:
            n = max(launches[name], 1)
            outs = ""
            if name in programs:
                rows, ids, _ = programs[name][0][0]
                outs = "; ".join(str(rows[i][:4]) for i in ids)
            f.write(f"{us / 1e3:8.3f} ms {n:3d} x {us / n:7.1f} us  {name}  {outs}\n")


if __name__ == "__main__":
    main()
