"""GPU machine: where the wall of one replayed `realize()` goes, in-process on cuda:0, for the short graphs whose
wall the driver's fixed cost sets: `x * 2 + 1` on 1024 floats, layer_norm (8,1024,1024) fp32, the plain small
step `relu(y @ w + b)` at 256^2 and the causal attention core in bf16 (model_bench's shapes). Per case: the
median wall of `realize()` (the graph built before the clock, as model_bench's timed_zd), the device time of its
kernels (torch.profiler, whose CUPTI sees CuPy's launches) and the torch equivalent's wall beside it; then a
cProfile of 300 more realizes (the builds left out) by own time.

    python3 benchmarks/h200/realize_profile.py [case ...]      (cases: tiny layer_norm step attention ew_chain softmax sum)
"""

from __future__ import annotations

import cProfile
import math
import pstats
import statistics
import sys
import time
from collections import defaultdict

import ml_dtypes
import numpy as np

import zyx_dist as zd


def median_us(fn, n: int = 300, build=None) -> float:
    ts = []
    for _ in range(n):
        arg = build() if build else None
        t = time.perf_counter()
        fn(arg) if build else fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def device_us(fn, n: int = 50) -> str:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for e in prof.events():
        if e.device_type.name == "CUDA":
            total[e.name] += e.device_time_total
            count[e.name] += 1
    return ", ".join(f"{k[:40]} {total[k] / n:.1f} us x{count[k] / n:.0f}" for k in sorted(total, key=lambda k: -total[k]))


def setup(case: str, rng, torch):
    """(build the graph, realize it, the torch equivalent) of one case."""
    if case == "tiny":
        x = zd.tensor(np.ones(1024, np.float32)).realize()
        tx = torch.ones(1024, device="cuda")
        return (lambda: x * 2 + 1), (lambda t: t.realize()), (lambda: tx * 2 + 1)
    if case in ("ew_chain", "softmax", "sum"):  # three of gpu_bench's five kernels, at its full sizes
        shape = (8192, 8192) if case == "softmax" else (1 << 28,)
        x = zd.rand(*shape, seed=0).realize()
        tx = torch.tensor(x.numpy(), device="cuda")
        ours, theirs = {
            "ew_chain": ((lambda: zd.relu(x * 2 + 1) * zd.sigmoid(x)), (lambda: torch.relu(tx * 2 + 1) * torch.sigmoid(tx))),
            "softmax": ((lambda: zd.softmax(x, axis=1)), (lambda: torch.softmax(tx, dim=1))),
            "sum": ((lambda: x.sum()), (lambda: tx.sum()))}[case]
        return ours, (lambda t: t.realize()), theirs
    if case == "layer_norm":
        a = rng.standard_normal((8, 1024, 1024)).astype(np.float32)
        x, tx = zd.tensor(a).realize(), torch.tensor(a, device="cuda")
        return (lambda: zd.layer_norm(x, axis=-1)), (lambda t: t.realize()), \
            (lambda: torch.nn.functional.layer_norm(tx, tx.shape[-1:]))
    if case == "step":
        n = 256
        w = zd.tensor((rng.standard_normal((n, n)) / 16).astype(np.float32)).realize()
        b = zd.tensor((rng.standard_normal(n) * 0.1).astype(np.float32)).realize()
        y = [zd.tensor(rng.standard_normal((n, n)).astype(np.float32)).realize()]
        tw, tb = torch.tensor(w.numpy(), device="cuda"), torch.tensor(b.numpy(), device="cuda")
        ty = [torch.tensor(y[0].numpy(), device="cuda")]

        def realize(t):
            y[0] = t.realize()

        def tfn():
            ty[0] = torch.relu(ty[0] @ tw + tb)

        return (lambda: zd.relu(y[0] @ w + b)), realize, tfn
    B, H, T, D = 8, 16, 1024, 64
    bf = ml_dtypes.bfloat16
    q, k, v = (zd.tensor(rng.standard_normal((B, H, T, D)).astype(bf)).realize() for _ in range(3))
    mask = zd.tensor(np.triu(np.full((T, T), -np.inf, np.float32), 1).astype(bf)).realize()
    tq, tk, tv = (torch.tensor(t.numpy().astype(np.float32), device="cuda").bfloat16() for t in (q, k, v))
    c = 1.0 / math.sqrt(D)
    return (lambda: zd.softmax((q @ k.mT) * c + mask, axis=-1) @ v), (lambda t: t.realize()), \
        (lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True))


def warmed(case: str, rng, torch, rounds: int = 30):
    """`setup(case, ...)` after `rounds` realizes and torch calls: kernels compiled and tuned, plans kept."""
    build, realize, tfn = setup(case, rng, torch)
    for _ in range(rounds):
        realize(build())
        tfn()
    torch.cuda.synchronize()
    return build, realize, tfn


def profile_case(case: str, build, realize, tfn, sync) -> None:
    for _ in range(30):
        realize(build())
    t_build = median_us(build, 300)
    ours = median_us(realize, 300, build)
    theirs = median_us(lambda: (tfn(), sync()), 300)
    print(f"{case}: zd realize {ours:.1f} us (graph build {t_build:.1f} us before it), torch {theirs:.1f} us; "
          f"replays {zd.stats()['plan_replays']}, graph replays {zd.stats()['graph_replays']}", flush=True)
    print(f"  zd kernels: {device_us(lambda: realize(build()))}", flush=True)
    print(f"  torch kernels: {device_us(lambda: (tfn(), sync()))}", flush=True)
    prof = cProfile.Profile()  # each result dropped before the next realize, as in the timed loop (held, every
    for _ in range(300):       # result would take new memory and new addresses: no pool reuse, no graph replay)
        g = build()
        prof.enable()
        realize(g)
        prof.disable()
        del g
    pstats.Stats(prof).sort_stats("tottime").print_stats(28)


def main() -> None:
    import torch

    rng = np.random.default_rng(0)
    zd.init(ray=False, devices=["cuda:0"])
    try:
        for case in sys.argv[1:] or ["tiny", "layer_norm", "step", "attention"]:
            profile_case(case, *setup(case, rng, torch), torch.cuda.synchronize)
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
