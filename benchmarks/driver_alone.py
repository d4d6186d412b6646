"""The driver's own cost per cached realize (a script, not a test): the reference device with its launches made
no-ops and CUDA graph capture stubbed in (this process only), so a realize costs only the driver's and the
worker's Python, on any machine. Cases: `x * 2 + 1` on 1024 floats and the small step `relu(y @ w + b)` at
256^2 and the causal attention core in bf16, each realized fresh every time (the graph built outside the clock, and the build's own cost apart).

    python benchmarks/driver_alone.py [--batches 15] [--calls 1000]

Prints, per case, the median and IQR over batches of the thread's CPU time per call (steadier than wall time on
a shared host), the Python bytecodes one call executes and its Python function calls (exact: counted with
sys.settrace, the same on every machine), and the interpreter's speed on a plain function-call loop, which
relates one machine's figures to another's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import ml_dtypes
import numpy as np


def no_op_device() -> None:
    """Launches and graph replays on the reference device do nothing; captures give a placeholder."""
    from zyx_dist.runtime import reference

    dev = reference.ReferenceDevice
    dev.launch = lambda self, prog, handles, gws, lws, wait_for=(), timed=True: reference._Event(0.0)
    dev.graph_key = lambda self, handles: tuple(map(id, handles))
    dev.capture_graph = lambda self, launches: object()
    dev.launch_graph = lambda self, graph, wait_for=(), timed=True: reference._Event(0.0)
    os.environ["ZYX_DIST_CUDA_GRAPHS"] = "1"  # the graph path, as on a GPU


def per_call_us(f, batches: int, calls: int) -> tuple[float, float]:
    """(median, IQR) over `batches` of the thread CPU time per call of `f`, in us."""
    rows = []
    for _ in range(batches):
        t = time.thread_time()
        for _ in range(calls):
            f()
        rows.append((time.thread_time() - t) / calls * 1e6)
    q = statistics.quantiles(rows, n=4)
    return statistics.median(rows), q[2] - q[0]


def bytecodes(f) -> tuple[int, int]:
    """(bytecodes, Python function calls) of one call of `f`."""
    counts = [0, 0]

    def tracer(frame, event, arg):
        if event == "call":
            frame.f_trace_opcodes = True
            counts[1] += 1
        elif event == "opcode":
            counts[0] += 1
        return tracer

    sys.settrace(tracer)
    try:
        f()
    finally:
        sys.settrace(None)
    return counts[0], counts[1] - 1  # (less the call of f itself)


def interpreter_ns(n: int = 1_000_000) -> float:
    """ns per iteration of a loop that calls a two-argument Python function (best of 5)."""
    def add(a, b):
        return a + b

    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for i in range(n):
            add(i, 1)
        best = min(best, time.perf_counter() - t)
    return best / n * 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--calls", type=int, default=1000)
    args = ap.parse_args()
    no_op_device()
    import zyx_dist as zd

    zd.init(ray=False, devices=["reference:0"])
    rng = np.random.default_rng(0)
    x = zd.tensor(rng.standard_normal(1024).astype(np.float32)).realize()
    w = zd.tensor(rng.standard_normal((256, 256)).astype(np.float32)).realize()
    b = zd.tensor(rng.standard_normal(256).astype(np.float32)).realize()
    y = [zd.tensor(rng.standard_normal((256, 256)).astype(np.float32)).realize()]
    T = 128  # the attention core of realize_profile.py (bf16, causal mask), at a shape the no-op device takes
    q, k, v = (zd.tensor(rng.standard_normal((2, 2, T, 64)).astype(ml_dtypes.bfloat16)).realize() for _ in range(3))
    mask = zd.tensor(np.triu(np.full((T, T), -np.inf, np.float32), 1).astype(ml_dtypes.bfloat16)).realize()

    def tiny() -> None:
        (x * 2 + 1).realize()

    def tiny_build() -> None:
        x * 2 + 1

    def step() -> None:
        y[0] = zd.relu(y[0] @ w + b).realize()

    def step_build() -> None:
        zd.relu(y[0] @ w + b)

    def attention() -> None:
        (zd.softmax((q @ k.mT) * 0.125 + mask, axis=-1) @ v).realize()

    def attention_build() -> None:
        zd.softmax((q @ k.mT) * 0.125 + mask, axis=-1) @ v

    for _ in range(200):
        tiny()
        step()
        attention()
    print(f"Python {sys.version.split()[0]}: a function-call loop {interpreter_ns():.1f} ns per iteration")
    for name, f in (("x * 2 + 1", tiny), ("  its build", tiny_build), ("small step", step), ("  its build", step_build),
                    ("attention", attention), ("  its build", attention_build)):
        med, iqr = per_call_us(f, args.batches, args.calls)
        ops, calls = bytecodes(f)
        print(f"{name:12s} {med:7.2f} us (IQR {iqr:.2f})  {ops:5d} bytecodes, {calls:3d} Python calls")
    stats = zd.stats()
    print(f"plan replays {stats['plan_replays']}, graph replays {stats['graph_replays']}")
    zd.shutdown()


if __name__ == "__main__":
    main()
