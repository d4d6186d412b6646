"""GPU machine: where the time of the small step `relu(y @ w + b)` (256^2, fp32, zd.jit, in-process on cuda:0)
goes, beside torch eager in the same process. Prints, as medians of rounds of 500 steps: the step's wall time
with CUDA graphs on and off and torch's; each side's kernels and their device time (torch.profiler, whose
CUPTI sees CuPy's launches too); and the floors under any step here: an empty kernel launched and waited for,
directly and as a one-kernel CUDA graph (CuPy), and torch's; last, the driver alone: the same zd.jit step on
the reference device with its launches made no-ops and graph capture stubbed in (this process only), so the
step costs only the driver's and the worker's Python.

    python3 benchmarks/h200/small_step_breakdown.py [--n 256]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

import numpy as np


def median_us(step, n: int = 500, rounds: int = 3) -> tuple[float, float]:
    """(median, spread between the rounds' medians) of `step`'s wall time, in us."""
    meds = []
    for _ in range(rounds):
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            step()
            ts.append(time.perf_counter() - t)
        meds.append(statistics.median(ts) * 1e6)
    return statistics.median(meds), max(meds) - min(meds)


def kernels_of(step, n: int = 200) -> list[tuple[str, float, int]]:
    """(kernel name, mean device us per step, launches per step) of `step`, by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for e in prof.events():
        if e.device_type.name == "CUDA":
            total[e.name] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            count[e.name] += 1
    return sorted(((k[:70], total[k] / n, count[k] // n) for k in total), key=lambda r: -r[1])


def driver_alone(n: int, w0, b0, y0) -> tuple[float, float]:
    """The replayed step's wall on a device whose launches do nothing: the driver's and worker's Python."""
    import zyx_dist as zd

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from driver_alone import no_op_device  # (benchmarks/driver_alone.py: the same device, the same stubs)

    no_op_device()
    zd.init(ray=False, devices=["reference:0"])
    try:
        w, b = zd.tensor(w0).realize(), zd.tensor(b0).realize()
        y = [zd.tensor(y0).realize()]
        layer = zd.jit(lambda y, w, b: zd.relu(y @ w + b))

        def step():
            y[0] = layer(y[0], w, b)

        for _ in range(50):
            step()
        out = median_us(step)
        print(f"driver alone: {zd.stats()['graph_replays']} graph replays")
        return out
    finally:
        zd.shutdown()


def main() -> None:
    import cupy as cp
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    n = ap.parse_args().n
    rng = np.random.default_rng(0)
    w0 = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    b0 = (rng.standard_normal(n) * 0.1).astype(np.float32)
    y0 = rng.standard_normal((n, n)).astype(np.float32)
    tw, tb = torch.tensor(w0, device="cuda"), torch.tensor(b0, device="cuda")
    ty = [torch.tensor(y0, device="cuda")]

    def torch_step():
        ty[0] = torch.relu(ty[0] @ tw + tb)
        torch.cuda.synchronize()

    import zyx_dist as zd

    rows = {}
    for graphs in ("1", "0"):  # (the environment is read when a worker starts)
        os.environ["ZYX_DIST_CUDA_GRAPHS"] = graphs
        zd.init(ray=False, devices=["cuda:0"])
        try:
            w, b = zd.tensor(w0).realize(), zd.tensor(b0).realize()
            y = [zd.tensor(y0).realize()]
            layer = zd.jit(lambda y, w, b: zd.relu(y @ w + b))

            def step(y=y, layer=layer, w=w, b=b):
                y[0] = layer(y[0], w, b)

            for _ in range(50):
                step()
                torch_step()
            rows[f"zd.jit, CUDA graphs {'on' if graphs == '1' else 'off'}"] = median_us(step)
            rows[f"torch eager (beside graphs {graphs})"] = median_us(torch_step)
            print(f"graphs {graphs}: replays {layer.replays}, graph replays {zd.stats()['graph_replays']}")
            for name, us, k in kernels_of(step):
                print(f"  zd kernel {name}: {us:.2f} us/step ({k} per step)")
            got = y[0].numpy()
        finally:
            zd.shutdown()
        print("  result finite:", bool(np.isfinite(got).all()))
    for name, us, k in kernels_of(torch_step):
        print(f"  torch kernel {name}: {us:.2f} us/step ({k} per step)")

    empty = cp.RawKernel(r'extern "C" __global__ void empty(float* x) {}', "empty")
    buf = cp.zeros(1, cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)

    def cupy_launch():
        with stream:
            empty((1,), (32,), (buf,))
        stream.synchronize()

    with stream:
        stream.begin_capture()
        empty((1,), (32,), (buf,))
        graph = stream.end_capture()

    def cupy_graph():
        graph.launch(stream)
        stream.synchronize()

    dev = cp.cuda.Device(0)

    def cupy_event():
        cp.cuda.Event(block=False, disable_timing=True).record(stream)

    def cupy_device():
        with dev:
            pass

    tbuf = torch.zeros(1, device="cuda")

    def torch_empty():
        tbuf.add_(1)
        torch.cuda.synchronize()

    for name, fn in (("floor: CuPy empty kernel + stream sync", cupy_launch),
                     ("floor: CuPy one-kernel graph + stream sync", cupy_graph),
                     ("floor: torch add_ on 1 float + sync", torch_empty),
                     ("CuPy: an Event made and recorded", cupy_event),
                     ("CuPy: `with Device(0)` entered and left", cupy_device)):
        for _ in range(100):
            fn()
        rows[name] = median_us(fn)
    rows["driver alone (no-op device, graph path)"] = driver_alone(n, w0, b0, y0)
    print(f"\nsmall step relu(y @ w + b) at {n}^2, fp32, medians of 3 rounds of 500 (spread between rounds):")
    for name, (med, spread) in rows.items():
        print(f"  {name:48s} {med:8.1f} us  (+-{spread:.1f})")


if __name__ == "__main__":
    main()
