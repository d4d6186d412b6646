"""What building a lazy graph costs (a script, not a test), with the graph's node and constructors in C
(graph/_node.c) beside the same code in Python (ZYX_DIST_C_NODES=0), in one run: each form in its own process,
the two alternating round by round. Building touches no device, so any machine measures it; the cases are the
graphs the GPU benchmarks build before each realize: `x * 2 + 1`, the three memory-bound benchmark kernels,
layer norm, the small step `relu(y @ w + b)`, a batched `q @ k.mT`, three slices of a tensor, a GPT block and
GPT-2 small's 12 layers (model_bench.py's models; node counts do not depend on their sizes, so they are small).

    python benchmarks/build_cost.py [--rounds 5] [--json PATH]

Prints per case the median build time of each form over the rounds (each round's figure the median of many
builds), the spread between rounds (IQR), and the ratio; writes the rows as JSON where --json says.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = ("tiny", "ew_chain", "softmax", "sum", "layer_norm", "step", "batched_matmul", "slices", "gpt_block", "gpt2")


def builders() -> dict:
    """Each case's build function, its inputs realized on the reference device (a build reads only their nodes)."""
    import numpy as np

    import zyx_dist as zd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import model_bench as mb

    rng = np.random.default_rng(0)

    def t(*shape):
        return zd.tensor(rng.standard_normal(shape).astype(np.float32)).realize()

    x, rows, x3 = t(1024), t(64, 64), t(8, 16, 64)
    w, b, y = t(256, 256), t(256), t(256, 256)
    q, k = t(2, 4, 16, 8), t(2, 4, 16, 8)
    qkv = t(3, 2, 4, 16, 8)
    D, H, T, B = 64, 4, 16, 2
    o = mb.Ops("zd")
    layers = [{n: t(*a.shape) for n, a in mb.block_params(rng, D).items()} for _ in range(12)]
    final = {"ln_w": t(D), "ln_b": t(D), "wte_t": t(D, 50)}
    h, mask = t(B, T, D), zd.tensor(mb.causal_mask(T)).realize()
    return {
        "tiny": lambda: x * 2 + 1,
        "ew_chain": lambda: zd.relu(x * 2 + 1) * zd.sigmoid(x),
        "softmax": lambda: zd.softmax(rows, axis=1),
        "sum": lambda: x.sum(),
        "layer_norm": lambda: zd.layer_norm(x3, axis=-1),
        "step": lambda: zd.relu(y @ w + b),
        "batched_matmul": lambda: q @ k.mT,
        "slices": lambda: (qkv[0], qkv[1], qkv[2]),
        "gpt_block": lambda: mb.block(o, h, layers[0], H, mask),
        "gpt2": lambda: mb.gpt2(o, h, layers, final, H, mask),
    }


def one_round() -> dict[str, float]:
    """This process's form: the median build time of each case, in us (after a warm-up)."""
    import zyx_dist as zd

    zd.init(ray=False, devices=["reference:0"])
    try:
        out = {}
        for name, build in builders().items():
            for _ in range(20):
                build()
            n = max(20, min(2000, int(0.2 / max(_time(build), 1e-7))))
            out[name] = statistics.median(_time(build) for _ in range(n)) * 1e6
        return out
    finally:
        zd.shutdown()


def _time(build) -> float:
    t = time.perf_counter()
    build()
    return time.perf_counter() - t


def run_form(c_nodes: bool) -> dict[str, float]:
    env = {**os.environ, "ZYX_DIST_C_NODES": "1" if c_nodes else "0"}
    out = subprocess.run([sys.executable, __file__, "--one-round"], env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def quartiles(xs: list[float]) -> tuple[float, float]:
    if len(xs) < 4:
        return statistics.median(xs), max(xs) - min(xs)
    q = statistics.quantiles(xs, n=4)
    return q[1], q[2] - q[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", default=None)
    p.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one_round:
        print(json.dumps(one_round()))
        return
    from zyx_dist.graph import ir

    if ir._c_node is None:
        sys.exit("graph/_node.c is not built here: `python setup.py build_ext --inplace` (or pip install) first")
    rounds: dict[bool, list[dict]] = {True: [], False: []}
    for r in range(args.rounds):
        for c in (False, True) if r % 2 == 0 else (True, False):
            rounds[c].append(run_form(c))
    print(f"graph build, median of {args.rounds} rounds (IQR between rounds), us; Python form against C form")
    rows = []
    for case in CASES:
        py, py_iqr = quartiles([r[case] for r in rounds[False]])
        c, c_iqr = quartiles([r[case] for r in rounds[True]])
        print(f"  {case:15s} Python {py:9.1f} (IQR {py_iqr:6.1f})   C {c:9.1f} (IQR {c_iqr:6.1f})   {py / c:4.2f}x")
        rows.append({"case": case, "python_us": round(py, 2), "python_iqr": round(py_iqr, 2), "c_us": round(c, 2),
                     "c_iqr": round(c_iqr, 2), "rounds": args.rounds})
    if args.json:
        Path(args.json).write_text(json.dumps({"host": os.uname().nodename, "python": sys.version.split()[0],
                                               "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
