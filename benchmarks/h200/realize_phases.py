"""GPU machine: where a replayed `realize()`'s wall goes, phase by phase, for realize_profile.py's cases. The
driver's own functions on a realize's path are wrapped (in this process only) to stamp the host clock as they
enter and leave: the realize, the plan-cache guess or lookup, the template's run, the worker's replay, the
segment's (CUDA graph's) launch, the driver's work riding beside the device (the guess's check and the commit),
the synchronize. Per case, the median of each stamp's time after the realize entered, over ROUNDS realizes (each
graph built before the clock, its result dropped before the next, as realize_profile's timed loop), then the
kernels' device time (torch.profiler) and torch's op and synchronize stamped the same way. A stamp a realize does
not reach (a lookup where the plan was guessed) is left out of it. The wrappers add a few tenths of a microsecond
each, so compare the cases with each other, not with realize_profile's plain walls.

    python3 benchmarks/h200/realize_phases.py [case ...]      (cases: tiny ew_chain softmax sum layer_norm attention)
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realize_profile as rp

import zyx_dist as zd
from zyx_dist.engine import session as session_mod
from zyx_dist.engine import templates
from zyx_dist.fuse import plan_cache
from zyx_dist.runtime import replay, worker

ROUNDS = 300
STAMPS: list[tuple[str, int]] = []
now = time.perf_counter_ns


def stamped(owner, attr: str, label: str) -> None:
    """Wrap `owner.attr` to stamp `label >` on entry and `label <` on leaving."""
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    def wrapper(*a, **k):
        STAMPS.append((label + " >", now()))
        try:
            return fn(*a, **k)
        finally:
            STAMPS.append((label + " <", now()))

    setattr(owner, attr, wrapper)


def instrument() -> None:
    stamped(plan_cache.PlanCache, "guess", "guess")
    stamped(plan_cache.PlanCache, "lookup", "lookup")
    stamped(plan_cache.PlanCache, "confirms", "check")
    stamped(templates, "run", "templates.run")
    stamped(templates, "_commit", "commit")
    stamped(worker, "run_template", "worker.run_template")
    stamped(replay, "_segment", "segment (launch)")
    stamped(replay, "_launch", "launch")
    stamped(worker.Worker, "_sync", "worker._sync")
    stamped(worker.Worker, "run_replay", "worker.run_replay")
    stamped(session_mod.Session, "_take_frees", "take_frees")


def phases(build, realize, n: int) -> dict[str, list[float]]:
    """Per stamp label (with its occurrence number when a realize has several), its times after the realize
    entered, in microseconds, over n realizes."""
    out: dict[str, list[float]] = defaultdict(list)
    for _ in range(n):
        g = build()
        STAMPS.clear()
        t0 = now()
        realize(g)
        t1 = now()
        seen: dict[str, int] = defaultdict(int)
        for label, t in STAMPS:
            seen[label] += 1
            key = label if seen[label] == 1 else f"{label} #{seen[label]}"
            out[key].append((t - t0) / 1e3)
        out["realize returned"].append((t1 - t0) / 1e3)
        del g
    return out


def report(case: str, stamps: dict[str, list[float]], n: int) -> None:
    rows = sorted(stamps.items(), key=lambda kv: statistics.median(kv[1]))
    print(f"{case}: stamps after realize() entered, medians (us) [realizes reaching it of {n}]")
    last = 0.0
    for label, ts in rows:
        m = statistics.median(ts)
        q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [m, m, m]
        print(f"  {m:8.1f}  (+{m - last:6.1f})  IQR {q[0]:.1f}-{q[2]:.1f}  {label} [{len(ts)}]")
        last = m


def main() -> None:
    import torch

    cases = sys.argv[1:] or ["tiny", "softmax", "sum", "layer_norm", "attention"]
    zd.init(ray=False, devices=["cuda:0"])
    rng = np.random.default_rng(0)
    instrument()
    try:
        for case in cases:
            build, realize, tfn = rp.warmed(case, rng, torch)
            report(case, phases(build, realize, ROUNDS), ROUNDS)
            print(f"  zd kernels: {rp.device_us(lambda b=build, r=realize: r(b()))}")
            ts: dict[str, list[float]] = defaultdict(list)
            for _ in range(ROUNDS):
                t0 = now()
                tfn()
                t1 = now()
                torch.cuda.synchronize()
                t2 = now()
                ts["op returned"].append((t1 - t0) / 1e3)
                ts["synchronize returned"].append((t2 - t0) / 1e3)
            report(f"{case} torch", ts, ROUNDS)
            print(f"  torch kernels: {rp.device_us(lambda f=tfn: (f(), torch.cuda.synchronize()))}", flush=True)
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
