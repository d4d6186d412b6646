"""Scaling on N PoCL workers through Ray (a script, not a test): the shape of the multi-GPU runs of
issue 8, on what a CPU-only machine allows. For each worker count: a graph of 8 parallel matmul branches
followed by a reduction across them (its plan: kernels per worker and transfers, then the values
against NumPy and the wall time), and the dispatch cost of 200 small independent kernels.

    python benchmarks/scaling_cpu.py [--workers 1,2,4,8] [--size 256] [--json out.json]

The PoCL workers share this machine's cores, so times show overhead and plan shape, not speed-up. Times
are medians of timed rounds; `--json` rows keep the rounds' spread, the devices with their drivers, the
commit and package versions (zyx_dist/tools/records.py).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics

import numpy as np

import zyx_dist as zd
from zyx_dist.tools import records


def branches_graph(inputs, weights):
    outs = [zd.relu(x @ w) @ w for x, w in zip(inputs, weights)]
    total = outs[0]
    for o in outs[1:]:
        total = total + o
    return total.sum(axis=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.size
    xs = [rng.standard_normal((n, n), dtype=np.float32) / n**0.5 for _ in range(8)]
    ws = [rng.standard_normal((n, n), dtype=np.float32) / n**0.5 for _ in range(8)]
    want = sum((np.maximum(x @ w, 0) @ w) for x, w in zip(xs, ws)).sum(axis=0)
    rows = []
    env = records.environment()
    for count in (int(c) for c in args.workers.split(",")):
        zd.init(devices={"opencl-cpu": count})
        try:
            names = [d.name for d in zd.devices()]
            inputs = [zd.tensor(x, device=names[i % count]).realize() for i, x in enumerate(xs)]
            weights = [zd.tensor(w, device=names[i % count]).realize() for i, w in enumerate(ws)]
            plan = zd.explain(branches_graph(inputs, weights))
            per = collections.Counter(k.device for k in plan.kernels)
            got = branches_graph(inputs, weights).numpy()
            err = float(np.abs(got - want).max() / np.abs(want).max())
            rounds = records.time_rounds(lambda i=inputs, w=weights: branches_graph(i, w).realize(), 0, 5)
            median = statistics.median(rounds)
            small = [zd.tensor(rng.random(64, dtype=np.float32), device=names[i % count]).realize()
                     for i in range(200)]
            zd.realize(*[s * 2 + 1 for s in small])
            disp_rounds = [t / 200 for t in records.time_rounds(lambda sm=small: zd.realize(*[s * 2 + 1 for s in sm]),
                                                                  0, 5)]
            disp = statistics.median(disp_rounds)
            print(f"{count} workers: 8 branches + reduction: {len(plan.kernels)} kernels "
                  f"({', '.join(f'{d}: {c}' for d, c in sorted(per.items()))}), {len(plan.transfers)} transfers "
                  f"({sum(t.nbytes for t in plan.transfers)} bytes), rel err {err:.1e}, {median * 1e3:.1f} ms median; "
                  f"dispatch {disp * 1e6:.1f} us/kernel", flush=True)
            hardware = records.session_devices()
            for wl, v, unit, rs in (("branches8_ms", median * 1e3, "ms", rounds),
                                    ("dispatch_us_per_kernel", disp * 1e6, "us", disp_rounds),
                                    ("branches8_transfers", len(plan.transfers), "count", None)):
                rows.append(records.row(env, f"zyx_dist-opencl-cpu x{count}", wl, v, unit, rs, hardware))
            assert err < 1e-4, err
        finally:
            zd.shutdown()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
