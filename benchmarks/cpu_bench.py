"""CPU benchmark (a script, not a test): zyx_dist on PoCL beside NumPy on the same machine, same run.

    python benchmarks/cpu_bench.py [--n-log2 24] [--repeats 10] [--json out.json]

Workloads: the fused elementwise chain relu(x*2+1)*sigmoid(x), row softmax, sum, and a 512x512 matmul,
all float32. Each figure is the median of `--repeats` wall-clock rounds of realize() (which blocks until the
result exists on the device) after a warm-up that compiles, with the IQR of the rounds; NumPy computes the
same expression in the same run. Prints GB/s or GFLOP/s for both and the ratio of the medians (>1 means
zyx_dist is faster); `--json` rows carry min/median/IQR/rounds, the commit, package versions and the device
with its driver (zyx_dist/tools/records.py).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import zyx_dist as zd
from zyx_dist.tools import records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-log2", type=int, default=24)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--matmul", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    zd.init(ray=False)
    dev = zd.devices()[0]
    rng = np.random.default_rng(0)
    n, r, m = 1 << args.n_log2, args.rows, args.matmul
    a = rng.standard_normal(n, dtype=np.float32)
    X = rng.standard_normal((r, r), dtype=np.float32)
    A = rng.standard_normal((m, m), dtype=np.float32)
    B = rng.standard_normal((m, m), dtype=np.float32)
    x, xX, xA, xB = (zd.tensor(v).realize() for v in (a, X, A, B))

    def np_softmax(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    workloads = [
        ("ew_chain", 2 * n * 4, None, lambda: (zd.relu(x * 2 + 1) * zd.sigmoid(x)).realize(),
         lambda: np.maximum(a * 2 + 1, 0) * (1 / (1 + np.exp(-a)))),
        ("softmax", 2 * r * r * 4, None, lambda: zd.softmax(xX, axis=1).realize(), lambda: np_softmax(X)),
        ("sum", n * 4, None, lambda: x.sum().realize(), lambda: a.sum()),
        ("matmul", None, 2 * m**3, lambda: (xA @ xB).realize(), lambda: A @ B),
    ]
    rows = []
    env = records.environment()
    ours_hw = records.session_devices()
    numpy_hw = [{"name": "cpu", "backend": "numpy", "device": records.cpu_model(), "driver": ""}]
    print(f"device {dev.name} ({dev.device_name}); NumPy {np.__version__}; {records.cpu_model()}; "
          f"commit {env['commit']}")
    print(f"{'workload':10s} {'zyx_dist (median, IQR)':>26s} {'numpy (median, IQR)':>26s} {'ratio':>7s}")
    for name, nbytes, flops, ours, theirs in workloads:
        r_ours, r_np = records.time_rounds(ours, 1, args.repeats), records.time_rounds(theirs, 1, args.repeats)
        unit, work = ("GB/s", nbytes) if nbytes else ("GFLOP/s", flops)
        s_ours, s_np = records.summary(r_ours), records.summary(r_np)
        v_ours, v_np = records.rate_of(work, s_ours["median_ms"]), records.rate_of(work, s_np["median_ms"])
        shown = [f"{v:9.2f} {unit:7s} {100 * records.relative_iqr(st):4.0f}%" for v, st in ((v_ours, s_ours),
                                                                                            (v_np, s_np))]
        print(f"{name:10s} {shown[0]:>26s} {shown[1]:>26s} {v_ours / v_np:6.2f}x")
        for system, v, rounds, hw in (("zyx_dist-opencl", v_ours, r_ours, ours_hw), ("numpy", v_np, r_np, numpy_hw)):
            rows.append(records.row(env, system, name, v, unit, rounds, hw,
                                    best_value=round(records.rate_of(work, records.summary(rounds)["min_ms"]), 4)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    zd.shutdown()


if __name__ == "__main__":
    main()
