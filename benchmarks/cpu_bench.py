"""CPU benchmark (a script, not a test): zyx_dist on PoCL beside NumPy on the same machine, same run.

    python benchmarks/cpu_bench.py [--n-log2 24] [--repeats 10] [--json out.json]

Workloads: the fused elementwise chain relu(x*2+1)*sigmoid(x), row softmax, sum, and a 512x512 matmul,
all float32. Times are the best of `--repeats` wall-clock runs of realize() (which blocks until the result
exists on the device) after a warm-up that compiles; NumPy computes the same expression. Prints GB/s or
GFLOP/s for both and the ratio (>1 means zyx_dist is faster).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform

import numpy as np

import zyx_dist as zd
from zyx_dist.tools.bench import best_seconds


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
    print(f"device {dev.name} ({dev.device_name}); NumPy {np.__version__}; {platform.processor() or platform.machine()}")
    print(f"{'workload':10s} {'zyx_dist':>14s} {'numpy':>14s} {'ratio':>7s}")
    for name, nbytes, flops, ours, theirs in workloads:
        t_ours, t_np = best_seconds(ours, 1, args.repeats), best_seconds(theirs, 1, args.repeats)
        unit, scale = ("GB/s", nbytes) if nbytes else ("GFLOP/s", flops)
        v_ours, v_np = scale / t_ours / 1e9, scale / t_np / 1e9
        print(f"{name:10s} {v_ours:9.2f} {unit:4s} {v_np:9.2f} {unit:4s} {t_np / t_ours:6.2f}x")
        day = datetime.date.today().isoformat()
        for system, v in (("zyx_dist-opencl", v_ours), ("numpy", v_np)):
            rows.append({"date": day, "machine": platform.node() or "cpu", "system": system, "workload": name,
                         "value": round(v, 3), "unit": unit})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    zd.shutdown()


if __name__ == "__main__":
    main()
