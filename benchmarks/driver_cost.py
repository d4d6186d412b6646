"""The driver's warm cost per graph op (a script, not a test): build a chain of n elementwise ops with a
row max every 10 ops on a 64x64 tensor, then realize it, with every kernel compiled and every plan cached
by a first run; in-process (`zd.init(ray=False)`), so no Ray call is counted. The shape is the one
tinygrad was measured on (research/gpu-measurements.md: 390-550 us per op, printed beside ours as
recorded there, not measured here). Goal: flat in n and at most 20 us per op.

    python benchmarks/driver_cost.py [--sizes 100,1000,10000,100000] [--rounds 9] [--json PATH]
                                     [--profile N]

Per size it prints the median and the spread (IQR) of the per-op wall time over the rounds, split into
build (the Python front end making nodes) and realize (plan-cache lookup, schedule, launch, and the wait
for the device), and the driver thread's CPU time per op (what the driver itself spends: the PoCL
threads that run the kernels are not in it, and it moves less with other load on the machine); writes
the rows to benchmarks/results/driver-cost-<date>.json. `--profile N` prints a cProfile of one warm
round of size N instead.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import json
import os
import platform
import pstats
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

import zyx_dist as zd

TINYGRAD_US = {100: 554, 1000: 391, 3000: 448}  # recorded: research/gpu-measurements.md, tinygrad 0.14 DEV=CPU


def chain(x: zd.Tensor, n: int) -> zd.Tensor:
    for i in range(n):
        if i % 10 == 9:
            x = x - x.max(axis=1, keepdims=True)
        elif i % 2 == 0:
            x = x * 0.999
        else:
            x = x + 0.001
    return x


def one_round(base: zd.Tensor, n: int) -> tuple[float, float, float]:
    """(build, realize) wall seconds and the driver thread's CPU seconds for both (the device's own
    threads, which run the kernels, are not in it)."""
    c0, t0 = time.thread_time(), time.perf_counter()
    y = chain(base, n)
    t1 = time.perf_counter()
    y.realize()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, time.thread_time() - c0


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000,100000")
    ap.add_argument("--rounds", type=int, default=9, help="timed rounds per size (fewer for the largest)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", type=int, default=0)
    args = ap.parse_args()
    zd.init(ray=False, devices={"opencl-cpu": 1})
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    base = zd.tensor(a).realize()
    if args.profile:
        one_round(base, args.profile)  # compile and cache
        prof = cProfile.Profile()
        prof.runcall(one_round, base, args.profile)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return
    today = datetime.date.today().isoformat()
    rows = []
    print(f"{'ops':>7} {'rounds':>6} {'build us/op':>12} {'realize us/op':>14} {'total us/op':>12} {'IQR':>6}"
          f" {'driver CPU us/op':>17} {'tinygrad (recorded)':>20}")
    for n in (int(s) for s in args.sizes.split(",")):
        rounds = max(3, args.rounds if n <= 10_000 else args.rounds // 3)
        first = one_round(base, n)  # compiles the kernels and caches the plan
        builds, realizes, totals, cpus = [], [], [], []
        launched = zd.stats()["kernels_launched"]
        for _ in range(rounds):
            b, r, c = one_round(base, n)
            builds.append(b / n * 1e6)
            realizes.append(r / n * 1e6)
            totals.append((b + r) / n * 1e6)
            cpus.append(c / n * 1e6)
        lo, med, hi = quartiles(totals)
        clo, cmed, chi = quartiles(cpus)
        tg = TINYGRAD_US.get(n)
        print(f"{n:>7} {rounds:>6} {statistics.median(builds):>12.2f} {statistics.median(realizes):>14.2f}"
              f" {med:>12.2f} {hi - lo:>6.2f} {cmed:>17.2f} {(f'{tg} us/op' if tg else '-'):>20}")
        rows.append({"date": today, "machine": platform.node() or "unknown", "commit": commit(),
                     "workload": f"chain{n}_rowmax10_64x64", "median_us_per_op": round(med, 3),
                     "iqr_us_per_op": round(hi - lo, 3), "build_us_per_op": round(statistics.median(builds), 3),
                     "realize_us_per_op": round(statistics.median(realizes), 3),
                     "driver_cpu_us_per_op": round(cmed, 3), "driver_cpu_iqr": round(chi - clo, 3), "rounds": rounds,
                     "first_run_s": round(first[0] + first[1], 3), "load_average": round(os.getloadavg()[0], 2),
                     "kernels_per_round": (zd.stats()["kernels_launched"] - launched) // rounds})
    zd.shutdown()
    path = Path(args.json) if args.json else Path(__file__).parent / "results" / f"driver-cost-{today}.json"
    path.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
