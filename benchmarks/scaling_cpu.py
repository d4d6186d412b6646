"""Scaling on N PoCL workers through Ray (a script, not a test): the shape of the multi-GPU runs of
issue 8, on what a CPU-only machine allows. For each worker count: a graph of 8 parallel matmul branches
followed by a reduction across them (its plan: kernels per worker and transfers, then the values
against NumPy and the wall time), and the dispatch cost of 200 small independent kernels.

    python benchmarks/scaling_cpu.py [--workers 1,2,4,8] [--size 256] [--json out.json]

The PoCL workers share this machine's cores, so times show overhead and plan shape, not speed-up.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import platform
import time

import numpy as np

import zyx_dist as zd


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
            best = min(_time(lambda i=inputs, w=weights: branches_graph(i, w).realize()) for _ in range(3))
            small = [zd.tensor(rng.random(64, dtype=np.float32), device=names[i % count]).realize()
                     for i in range(200)]
            zd.realize(*[s * 2 + 1 for s in small])
            disp = min(_time(lambda sm=small: zd.realize(*[s * 2 + 1 for s in sm])) for _ in range(5)) / 200
            print(f"{count} workers: 8 branches + reduction: {len(plan.kernels)} kernels "
                  f"({', '.join(f'{d}: {c}' for d, c in sorted(per.items()))}), {len(plan.transfers)} transfers "
                  f"({sum(t.nbytes for t in plan.transfers)} bytes), rel err {err:.1e}, {best * 1e3:.1f} ms; "
                  f"dispatch {disp * 1e6:.1f} us/kernel", flush=True)
            day = datetime.date.today().isoformat()
            for wl, v, unit in (("branches8_ms", best * 1e3, "ms"), ("dispatch_us_per_kernel", disp * 1e6, "us"),
                                ("branches8_transfers", len(plan.transfers), "count")):
                rows.append({"date": day, "machine": platform.node() or "cpu", "system": f"zyx_dist-opencl-cpu x{count}",
                             "workload": wl, "value": round(v, 2), "unit": unit})
            assert err < 1e-4, err
        finally:
            zd.shutdown()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
