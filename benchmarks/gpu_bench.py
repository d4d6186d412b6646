"""GPU benchmark (a script, not a test), run on the GPU machine beside ../shared/bench/anchors_gpu.py:

    source .devbundle/setup.sh && python3 benchmarks/gpu_bench.py --out $OUT

Workloads (fp32): ew_chain relu(x*2+1)*sigmoid(x) on 2^28, row softmax 8192x8192, sum 2^28, matmul 4096^3,
relu(A@B+b) 4096^3, each on cuda:0 (CUDA through CuPy) and on the NVIDIA OpenCL device when pyopencl lists
one, in-process. Time = wall clock of `realize()` (blocks until the result exists) after a warm-up that
compiles (and autotunes), best of --repeats; also the kernels' device-side time ("device time" rows, the
driver's overhead excluded); bytes are ideal traffic (inputs once, outputs once), as the anchors count.
With 2 GPUs and --ray: two independent MLP branches on 2 CUDA workers vs 1 (speed-up) and the rate of a
256 MiB tensor moved cuda:0 -> cuda:1 inside the runtime (NCCL). Rows {date, machine, system, workload,
value, unit} go to OUT/gpu_bench.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os

import numpy as np

import zyx_dist as zd
from zyx_dist.tools.bench import best_seconds

ROWS: list[dict] = []


def record(system: str, workload: str, value: float, unit: str) -> None:
    ROWS.append({"date": datetime.date.today().isoformat(), "machine": "nvidia-h200", "system": system,
                 "workload": workload, "value": round(value, 3), "unit": unit})
    print(f"{system:28s} {workload:14s} {value:10.2f} {unit}", flush=True)


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


def single(device: str, system: str, repeats: int) -> None:
    session = zd.init(ray=False, devices=[device])
    try:
        n, r, m = 1 << 28, 8192, 4096
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
                t = best_seconds(fn, 1, repeats)
            except Exception as e:  # noqa: BLE001 -- report and go on with the other workloads
                print(f"{system} {name} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            dev = min(device_seconds(session, device, fn) for _ in range(3))
            if nbytes:
                record(system, name, nbytes / t / 1e9, "GB/s")
                record(system + " device time", name, nbytes / dev / 1e9, "GB/s")
            else:
                record(system, name, flops / t / 1e12, "TFLOP/s")
                record(system + " device time", name, flops / dev / 1e12, "TFLOP/s")
        print(f"{system}: {session.tuner.trials} autotune trials", flush=True)
        # correctness spot check against NumPy on a small slice
        y = (zd.relu(A @ B + b))[:64, :64].numpy()
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

    times = {}
    for ndev in (1, 2):
        devs = [f"cuda:{i}" for i in range(ndev)]
        zd.init(devices=devs)
        try:
            params = make(devs if ndev == 2 else devs * 2)
            times[ndev] = best_seconds(lambda p=params: forward(p), 1, repeats)
            if ndev == 2:
                x = zd.rand(64 << 20, seed=5, device="cuda:0").realize()  # 256 MiB
                zd.reset_stats()
                t = best_seconds(lambda x=x: x.to("cuda:1").realize(), 1, repeats)
                st = zd.stats()
                record("zyx_dist-cuda (Ray, 2 GPUs)", "nccl_256MiB", x.nbytes / t / 1e9, "GB/s")
                print("transfers", st["transfers"], "bytes", st["bytes_transferred"], flush=True)
        finally:
            zd.shutdown()
    record("zyx_dist-cuda (Ray)", "mlp_branches_1gpu", times[1] * 1e3, "ms")
    record("zyx_dist-cuda (Ray)", "mlp_branches_2gpu", times[2] * 1e3, "ms")
    record("zyx_dist-cuda (Ray)", "mlp_branches_speedup", times[1] / times[2], "x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ray", action="store_true", help="also the 2-GPU Ray measurements")
    ap.add_argument("--no-opencl", action="store_true")
    args = ap.parse_args()
    single("cuda:0", "zyx_dist-cuda", args.repeats)
    if not args.no_opencl:
        try:
            from zyx_dist.runtime.opencl import list_opencl_devices

            nv = [d for d in list_opencl_devices() if "NVIDIA" in d["platform"] or d["type"] == "gpu"]
        except Exception:  # noqa: BLE001
            nv = []
        if nv:
            single(f"opencl:{nv[0]['index']}", "zyx_dist-opencl(nvidia)", args.repeats)
    if args.ray:
        two_gpus(args.repeats)
    with open(os.path.join(args.out, "gpu_bench.json"), "w") as f:
        json.dump(ROWS, f, indent=1)


if __name__ == "__main__":
    main()
