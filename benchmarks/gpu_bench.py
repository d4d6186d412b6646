"""GPU benchmark (a script, not a test), run on the GPU machine beside ../shared/bench/anchors_gpu.py:

    source .devbundle/setup.sh && python3 benchmarks/gpu_bench.py --out $OUT

Workloads (fp32): ew_chain relu(x*2+1)*sigmoid(x) on 2^28, row softmax 8192x8192, sum 2^28, matmul 4096^3,
relu(A@B+b) 4096^3, each on cuda:0 (CUDA through CuPy) and on the NVIDIA OpenCL device when pyopencl lists
one, in-process. Time = wall clock of `realize()` (blocks until the result exists) after a warm-up that
compiles (and autotunes): the median of --repeats rounds, with their IQR; also the kernels' device-side time
("device time" rows, the driver's overhead excluded, median of 5 rounds); bytes are ideal traffic (inputs
once, outputs once), as the anchors count. With 2 GPUs and --ray: two independent MLP branches on 2 CUDA
workers vs 1 (speed-up of the medians) and the rate of a 256 MiB tensor moved cuda:0 -> cuda:1 inside the
runtime (NCCL). Rows {date, machine, system, workload, value, unit, rounds, min_ms, median_ms, q1_ms, q3_ms,
iqr_ms, max_ms, hardware, commit, versions, host} go to OUT/gpu_bench.json (zyx_dist/tools/records.py; the
device machine gets no .git: set ZYX_DIST_COMMIT to the commit you sent). `--device opencl:0 --small` runs
the same code at 1/64 of the sizes on any device (a smoke test of the script).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import numpy as np

import zyx_dist as zd
from zyx_dist.tools import records

ROWS: list[dict] = []
ENV: dict = {}


def record(system: str, workload: str, value: float, unit: str, rounds=None) -> None:
    """A result row; `value` comes from the median of `rounds` (seconds), whose spread the row keeps."""
    ROWS.append(records.row(ENV or records.environment(), system, workload, value, unit, rounds,
                            records.session_devices()))
    spread = f"  (IQR {100 * records.relative_iqr(ROWS[-1]):.0f}% of {len(rounds)} rounds)" if rounds else ""
    print(f"{system:28s} {workload:14s} {value:10.2f} {unit}{spread}", flush=True)


def device_seconds(session, device: str, fn) -> float:
    """Device-side seconds of the kernels one call of `fn` launches (the worker's timers)."""
    worker, run_steps = session.backend.workers[device], session.backend.run_steps
    seconds: list[float] = []

    def timed(steps, *args):
        results = run_steps(steps, *args)
        seconds.extend(s for step in results for res in step.values() for s in res.kernel_seconds)
        return results

    worker.profile, session.backend.run_steps = True, timed
    try:
        fn()
    finally:
        worker.profile = False
        del session.backend.run_steps
    return sum(seconds)


def single(device: str, system: str, repeats: int, small: bool = False) -> None:
    session = zd.init(ray=False, devices=[device])
    try:
        n, r, m = (1 << 22, 1024, 512) if small else (1 << 28, 8192, 4096)
        x = zd.rand(n, seed=0, device=device).realize()
        X = zd.rand(r, r, seed=1, device=device).realize()
        A = zd.rand(m, m, seed=2, device=device).realize()
        B = zd.rand(m, m, seed=3, device=device).realize()
        b = zd.rand(m, seed=4, device=device).realize()
        cases = [
            ("ew_chain", lambda: (zd.relu(x * 2 + 1) * zd.sigmoid(x)).realize(), 2 * n * 4, None),
            ("softmax", lambda: zd.softmax(X, axis=1).realize(), 2 * r * r * 4, None),
            ("sum", lambda: x.sum().realize(), n * 4, None),
            ("matmul", lambda: (A @ B).realize(), None, 2 * m**3),
            ("mlp", lambda: zd.relu(A @ B + b).realize(), None, 2 * m**3),
        ]
        for name, fn, nbytes, flops in cases:
            try:
                wall = records.time_rounds(fn, 1, repeats)
            except Exception as e:  # noqa: BLE001 -- report and go on with the other workloads
                print(f"{system} {name} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            dev = [device_seconds(session, device, fn) for _ in range(5)]
            t, d = statistics.median(wall), statistics.median(dev)
            if nbytes:
                record(system, name, nbytes / t / 1e9, "GB/s", wall)
                record(system + " device time", name, nbytes / d / 1e9, "GB/s", dev)
            else:
                record(system, name, flops / t / 1e12, "TFLOP/s", wall)
                record(system + " device time", name, flops / d / 1e12, "TFLOP/s", dev)
        print(f"{system}: {session.tuner.trials} autotune trials", flush=True)
        # correctness spot check against NumPy on a small slice
        y = zd.relu(A @ B + b)[:64, :64].numpy()
        ref = np.maximum(A.numpy()[:64] @ B.numpy()[:, :64] + b.numpy()[:64], 0)
        print(f"{system} mlp max rel err {float(np.abs(y - ref).max() / np.abs(ref).max()):.2e}", flush=True)
    finally:
        zd.shutdown()


def two_gpus(repeats: int) -> None:
    """Two independent MLP branches (4 layers of 4096x4096 each): on one GPU, then one branch per GPU.
    Inputs and weights are made and uploaded before timing; only the forward passes are timed."""

    def make(devs):
        params = []
        for i, d in enumerate(devs):
            h = zd.rand(4096, 4096, seed=10 + i, device=d).realize()
            ws = [(zd.rand(4096, 4096, seed=20 + 4 * i + j, device=d) * 0.01).realize() for j in range(4)]
            params.append((h, ws))
        return params

    def forward(params):
        outs = []
        for h, ws in params:
            for w in ws:
                h = zd.relu(h @ w)
            outs.append(h)
        zd.realize(*outs)

    rounds = {}
    for ndev in (1, 2):
        devs = [f"cuda:{i}" for i in range(ndev)]
        zd.init(devices=devs)
        try:
            params = make(devs if ndev == 2 else devs * 2)
            rounds[ndev] = records.time_rounds(lambda p=params: forward(p), 1, repeats)
            record("zyx_dist-cuda (Ray)", f"mlp_branches_{ndev}gpu", statistics.median(rounds[ndev]) * 1e3, "ms",
                   rounds[ndev])
            if ndev == 2:
                x = zd.rand(64 << 20, seed=5, device="cuda:0").realize()  # 256 MiB
                zd.reset_stats()
                moves = records.time_rounds(lambda x=x: x.to("cuda:1").realize(), 1, repeats)
                st = zd.stats()
                record("zyx_dist-cuda (Ray, 2 GPUs)", "nccl_256MiB", x.nbytes / statistics.median(moves) / 1e9, "GB/s",
                       moves)
                print("transfers", st["transfers"], "bytes", st["bytes_transferred"], flush=True)
        finally:
            zd.shutdown()
    record("zyx_dist-cuda (Ray)", "mlp_branches_speedup", statistics.median(rounds[1]) / statistics.median(rounds[2]),
           "x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ray", action="store_true", help="also the 2-GPU Ray measurements")
    ap.add_argument("--no-opencl", action="store_true")
    ap.add_argument("--device", default="cuda:0", help="the device of the single-device runs (default: cuda:0)")
    ap.add_argument("--small", action="store_true", help="1/64 of the sizes: a smoke test of the script")
    args = ap.parse_args()
    ENV.update(records.environment())
    single(args.device, f"zyx_dist-{args.device.split(':')[0]}", args.repeats, args.small)
    if not args.no_opencl:
        try:
            from zyx_dist.runtime.opencl import list_opencl_devices

            nv = [d for d in list_opencl_devices() if "NVIDIA" in d["platform"] or d["type"] == "gpu"]
        except Exception:  # noqa: BLE001
            nv = []
        if nv:
            single(f"opencl:{nv[0]['index']}", "zyx_dist-opencl(nvidia)", args.repeats, args.small)
    if args.ray:
        two_gpus(args.repeats)
    with open(os.path.join(args.out, "gpu_bench.json"), "w") as f:
        json.dump(ROWS, f, indent=1)


if __name__ == "__main__":
    main()
