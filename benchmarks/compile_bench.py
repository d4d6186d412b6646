"""How long the autotuner's candidates of one kernel take to compile on a CUDA worker, one after another and built
side by side (`ProgramCache.build_many`, what a worker does with a plan's programs and a batch's new ones), for a few kernels
of a transformer: a float32 and a bfloat16 GEMM with an epilogue, a row softmax, a layer norm.

    python benchmarks/compile_bench.py [--json out.json]

Each mode compiles sources of its own (a comment names the mode), so neither finds the other's programs in
CuPy's disk cache; the figure per mode is the wall time to have every candidate's kernel.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import zyx_dist as zd
from zyx_dist.codegen import options
from zyx_dist.codegen.render import facts, render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.runtime.cuda import BUILD_THREADS, CudaBackend


def kernels() -> list[tuple[str, object]]:
    rng = np.random.default_rng(0)
    a = zd.tensor(rng.standard_normal((1024, 1024)).astype(np.float32))
    w = zd.tensor(rng.standard_normal((1024, 1024)).astype(np.float32))
    b = zd.tensor(rng.standard_normal(1024).astype(np.float32))
    x = zd.tensor(rng.standard_normal((4096, 1024)).astype(np.float32))
    graphs = [("gemm fp32 + bias, relu", zd.relu(a @ w + b)),
              ("gemm bf16 + bias", (a.astype(zd.bfloat16) @ w.astype(zd.bfloat16)) + b.astype(zd.bfloat16)),
              ("row softmax", zd.softmax(x, axis=1)),
              ("layer norm", zd.layer_norm(x, axis=-1))]
    return [(label, kernelize([t.node])[-1]) for label, t in graphs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    rows = []
    stamp = time.time_ns()
    for label, kernel in kernels():
        cands = options.candidates(facts(kernel, "cuda", True))[:20]
        progs = [render_kernel(kernel, "cuda", o, True) for o in cands]
        row = {"kernel": label, "candidates": len(progs), "threads": BUILD_THREADS}
        for mode in ("serial", "parallel"):
            backend = CudaBackend(0)
            sources = [f"// {mode} {stamp}\n{p.source}" for p in progs]
            t0 = time.perf_counter()
            if mode == "parallel":
                backend.build_many([(s, "") for s in sources])
            for s, p in zip(sources, progs):
                backend.compile(s, p.name)
            row[f"{mode}_s"] = round(time.perf_counter() - t0, 3)
        row["speedup"] = round(row["serial_s"] / row["parallel_s"], 2)
        rows.append(row)
        print(f"{label:24s} {row['candidates']:3d} candidates: serial {row['serial_s']:6.2f} s, "
              f"side by side ({BUILD_THREADS} threads) {row['parallel_s']:6.2f} s, {row['speedup']:.1f}x", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
