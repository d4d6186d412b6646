"""The gradient of an embedding lookup (a scatter-add of g's rows at the ids) on the default device: the first
`realize()` (compile and tune) and the median and IQR of later ones, each graph built before the clock, checked
against NumPy's `np.add.at`. A script, not a test:

    python benchmarks/embedding_grad.py [--rows 50304] [--dim 768] [--ids 64] [--repeats 7] [--dtype float32]
"""

from __future__ import annotations

import argparse
import statistics
import time

import ml_dtypes
import numpy as np

import zyx_dist as zd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50304)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--ids", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    np_dtype = ml_dtypes.bfloat16 if args.dtype == "bfloat16" else np.dtype(args.dtype)
    rng = np.random.default_rng(0)
    table = rng.standard_normal((args.rows, args.dim)).astype(np_dtype)
    ids = rng.integers(0, args.rows, args.ids).astype(np.int32)
    c = rng.standard_normal((args.ids, args.dim)).astype(np_dtype)
    t, ix, ct = zd.tensor(table).realize(), zd.tensor(ids).realize(), zd.tensor(c).realize()
    times, got = [], None
    for _ in range(args.repeats + 1):
        (g,) = zd.grad((t[ix] * ct).astype(zd.float32).sum(), [t])
        start = time.perf_counter()
        g.realize()
        times.append(time.perf_counter() - start)
        got = g.numpy()
    want = np.zeros((args.rows, args.dim))
    np.add.at(want, ids, c.astype(np.float64))
    err = float(np.abs(got.astype(np.float64) - want).max())
    q = statistics.quantiles(times[1:], n=4) if len(times) > 2 else [times[-1]] * 3
    print(f"embedding gradient {args.rows} x {args.dim} from {args.ids} ids, {args.dtype}, on "
          f"{zd.devices()[0].name}: first realize {times[0]:.2f} s, then median "
          f"{statistics.median(times[1:]) * 1e3:.1f} ms (IQR {(q[2] - q[0]) * 1e3:.1f}); max |diff| against "
          f"np.add.at {err:.1e}")


if __name__ == "__main__":
    main()
