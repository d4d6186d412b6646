"""Dispatch benchmark (a script, not a test): what a realize costs beyond its kernels, for plans the
session has seen before (replayed from their plan templates; through Ray as Compiled Graphs).

    python benchmarks/dispatch_bench.py [--device opencl-cpu | cuda:0] [--repeats 200] [--out DIR]
    (GPU machine: python3 benchmarks/dispatch_bench.py --device cuda:0 --workers 1 --out $OUT)

(a) Overhead per realize (wall minus device time) of a cached plan on 1, 2, 4 and 8 workers, through Ray
    and in-process: one small kernel per worker (`x_i * 2 + 1`, x_i realized on worker i), all realized
    by one `zd.realize` (the lazy graph is built before the clock starts). Device time is the workers'
    own kernel timers: the longest worker's through Ray (workers run in parallel), the sum in-process
    (one process runs them one after the other); replays run untimed (in-process since 37c5cfc, through
    Ray since 44f086f), so there it is 0 and the overhead is the whole wall, the kernel's few microseconds
    included. In-process also: the Python part alone (the time inside the device API calls taken out).
(b) The small-step loop `y = relu(y @ w + b).realize()` at 256x256, 200 steps, per step, in-process
    and through Ray, beside torch eager on the same device in the same run (skipped when torch is not
    importable).
(c) Dispatch per kernel: 200 independent small kernels in one `zd.realize` (in-process 1 worker; Ray
    1 worker and 3 workers), the graph built before the clock (its cost per kernel printed beside).
(d) The five benchmark kernels of benchmarks/gpu_bench.py (ew_chain, row softmax, sum, matmul,
    relu(A@B+b)), wall time of `realize()` (replays untimed, as users run them) and device time (the
    same replays again with the kernels timed, as under a trace), in-process and through Ray (smaller
    sizes on a CPU device; `--sizes full` for gpu_bench's).
(e) Reading a value back: `.item()` of a realized 1-element result and `.numpy()` of a realized 256x256
    float32, per read, in-process and through Ray on 1 worker (the value realized before the clock), beside
    torch's `.item()` / `.cpu().numpy()` on the same device when torch is importable.
(i) The cached tiny realize and the plain small step in process, interleaved round by round with torch's same
    operations, and each round's ratio to torch's (the host's speed drifts; a round's four blocks share it).
(u) A step that uploads new host data: `(x * 2 + zd.tensor(batch)).realize()` with a new 256 KiB float32 batch
    each step (graph built and uploaded inside the clock), in-process and through Ray on 1 worker.

Every figure is a median with its interquartile range (IQR) over `--repeats` runs after a warm-up, and
the share of realizes that were replayed from a template (`zd.stats()["plan_replays"]`). Prints a table
and writes `dispatch-<cpu|gpu>-<date>.json` to --out: rows in the schema of zyx_dist/tools/records.py
(value = the median; rounds, quartiles, IQR; commit, package versions, host with the load average and a
gauge of the machine's Python speed, devices).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import time

import numpy as np

import zyx_dist as zd
from zyx_dist.tools import records

ROWS: list[dict] = []


def quartiles(xs: list[float]) -> tuple[float, float]:
    """(median, interquartile range)."""
    if len(xs) < 4:
        return statistics.median(xs), 0.0
    q = statistics.quantiles(xs, n=4)
    return q[1], q[2] - q[0]


ENV: dict = {}  # records.environment() of this run


def record(system: str, workload: str, values: list[float], unit: str, **extra) -> tuple[float, float]:
    """One row in the team's schema (tools/records.py): the median of `values` (microseconds, or microseconds
    per kernel) as the value, the spread of the rounds, the session's devices; printed as a table line."""
    med, iqr = quartiles(values)
    ROWS.append(records.row(ENV, system, workload, med, unit, [v * 1e-6 for v in values],
                            records.session_devices(), iqr=round(iqr, 3), **extra))
    more = "".join(f"  {k}={v}" for k, v in extra.items())
    print(f"  {system:30s} {workload:34s} {med:10.1f} {unit:9s} IQR {iqr:8.1f}{more}", flush=True)
    return med, iqr


class DeviceClock:
    """Device-side seconds of the kernels of each run, from the workers' timers (BatchResult.kernel_seconds):
    wraps the backend's run_steps while the benchmark runs."""

    def __init__(self, session, parallel: bool):
        self.backend, self.parallel, self.per_run = session.backend, parallel, []
        self.inner = self.backend.run_steps

        def timed(steps, *args):
            results = self.inner(steps, *args)
            by_dev: dict[str, float] = {}
            for step in results:
                for dev, res in step.items():
                    by_dev[dev] = by_dev.get(dev, 0.0) + sum(res.kernel_seconds)
            self.per_run.append((max(by_dev.values()) if parallel else sum(by_dev.values())) if by_dev else 0.0)
            return results

        self.backend.run_steps = timed

    def take(self) -> float:
        """Device seconds since the last take (every run of one realize)."""
        total = sum(self.per_run)
        self.per_run.clear()
        return total

    def close(self) -> None:
        del self.backend.run_steps


class ApiClock:
    """Seconds spent inside the device API calls of in-process workers (launch, synchronize, event queries,
    copies): what is left of a realize's wall time without them is Python (driver and worker)."""

    CALLS = ("launch", "launch_graph", "capture_graph", "synchronize", "event_seconds", "wait", "is_done",
             "copy_in", "copy_out")

    def __init__(self, session):
        self.total, self.patched = 0.0, []
        for w in getattr(session.backend, "workers", {}).values():
            for name in self.CALLS:
                inner = getattr(w.backend, name, None)
                if inner is not None:
                    setattr(w.backend, name, self._timed(inner))
                    self.patched.append((w.backend, name))

    def _timed(self, inner):
        def call(*args, **kwargs):
            t = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.total += time.perf_counter() - t
        return call

    def take(self) -> float:
        total, self.total = self.total, 0.0
        return total

    def close(self) -> None:
        for obj, name in self.patched:
            delattr(obj, name)


def timed_realizes(fn, repeats: int, clock: DeviceClock, warmup: int = 5, build=None) -> tuple[list[float], list[float]]:
    """(wall seconds, device seconds) of `repeats` calls of fn (after `warmup`); the garbage collector is
    held off inside each call (it runs between them), so a collection does not land in one sample. With
    `build`, each call is `fn(build())` and only fn is timed (the lazy graph is built before the clock)."""
    for _ in range(warmup):
        fn(build()) if build else fn()
    clock.take()
    walls, devs = [], []
    for _ in range(repeats):
        arg = build() if build else None
        gc.disable()
        t = time.perf_counter()
        fn(arg) if build else fn()
        walls.append(time.perf_counter() - t)
        gc.enable()
        devs.append(clock.take())
    return walls, devs


def start(kind: str, workers: int, device: str):
    if device.startswith("cuda"):
        devices = [f"cuda:{i}" for i in range(workers)]
    else:
        devices = {"opencl-cpu": workers}
    return zd.init(ray=kind == "ray", devices=devices)


def replayed(before: int, calls: int) -> str:
    return f"{zd.stats()['plan_replays'] - before}/{calls}"


# ---- (e) reading values back -------------------------------------------------------------------------------

def reads(kind: str, device: str, repeats: int) -> None:
    start(kind, 1, device)
    try:
        dev = zd.devices()[0].name
        small = (zd.tensor(np.arange(4, dtype=np.float32), device=dev) * 2).realize()[3:]
        block = (zd.tensor(np.ones((256, 256), np.float32), device=dev) * 2).realize()
        for what, t, read in (("item() of 1 float32", small, lambda t: t.item()),
                              ("numpy() of 256x256 float32", block, lambda t: t.numpy())):
            ts = []
            for i in range(repeats + 10):
                x = (t * 1.0).realize()  # a fresh realized tensor each time: nothing is cached on the host
                gc.disable()
                t0 = time.perf_counter()
                read(x)
                dt = time.perf_counter() - t0
                gc.enable()
                if i >= 10:
                    ts.append(dt * 1e6)
            record(f"zyx_dist {kind}", what, ts, "us")
    finally:
        zd.shutdown()


def torch_reads(device: str, repeats: int) -> None:
    try:
        import torch
    except ImportError:
        return
    dev = "cuda" if device.startswith("cuda") else "cpu"
    small, block = torch.arange(4.0, device=dev)[3:], torch.ones(256, 256, device=dev)
    for what, t, read in (("item() of 1 float32", small, lambda t: t.item()),
                          ("numpy() of 256x256 float32", block, lambda t: t.cpu().numpy())):
        ts = []
        for i in range(repeats + 10):
            x = t * 1.0
            if dev == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            read(x)
            if i >= 10:
                ts.append((time.perf_counter() - t0) * 1e6)
        record(f"torch {torch.__version__} ({dev})", what, ts, "us")


# ---- (u) a step that uploads new host data ---------------------------------------------------------------------

def upload_step(kind: str, device: str, repeats: int) -> None:
    start(kind, 1, device)
    try:
        dev = zd.devices()[0].name
        rng = np.random.default_rng(0)
        x = zd.tensor(rng.standard_normal(1 << 16).astype(np.float32), device=dev).realize()
        batches = [rng.standard_normal(1 << 16).astype(np.float32) for _ in range(8)]
        ts = []
        for i in range(repeats + 10):
            gc.disable()
            t0 = time.perf_counter()
            (x * 2 + zd.tensor(batches[i % 8], device=dev)).realize()
            dt = time.perf_counter() - t0
            gc.enable()
            if i >= 10:
                ts.append(dt * 1e6)
        record(f"zyx_dist {kind}", "step uploading a 256 KiB batch", ts, "us", replayed=replayed(0, repeats + 10))
    finally:
        zd.shutdown()


# ---- (a) overhead per realize on N workers ------------------------------------------------------------------

def overhead(kind: str, workers: int, device: str, repeats: int) -> None:
    s = start(kind, workers, device)
    clock = DeviceClock(s, parallel=kind == "ray")
    try:
        devs = s.device_names
        xs = [zd.tensor(np.full(1024, i, np.float32), device=d).realize() for i, d in enumerate(devs)]

        def build():
            return [x * 2 + 1 for x in xs]

        def step(ys=None):
            zd.realize(*(ys if ys is not None else build()))

        before = zd.stats()["plan_replays"]
        walls, dev = timed_realizes(step, repeats, clock, build=build)
        over = [(w - d) * 1e6 for w, d in zip(walls, dev)]
        record(f"zyx_dist {kind} {workers}w", "overhead per realize", over, "us",
               wall_us=round(quartiles([w * 1e6 for w in walls])[0], 1),
               device_us=round(quartiles([d * 1e6 for d in dev])[0], 1), replayed=replayed(before, repeats + 5))
        if kind == "in-process":  # the same again, the time inside the device API calls taken out
            api = ApiClock(s)
            try:
                py = []
                for _ in range(repeats):
                    ys = build()
                    api.take()
                    gc.disable()
                    t = time.perf_counter()
                    step(ys)
                    wall = time.perf_counter() - t
                    gc.enable()
                    py.append((wall - api.take()) * 1e6)
                clock.take()
                record(f"zyx_dist {kind} {workers}w", "Python per realize (wall - device API)", py, "us")
            finally:
                api.close()
        if kind == "ray" and s.backend.graph is not None:
            print(f"    (compiled graph over {len(s.backend.graph.names)} workers, "
                  f"{s.backend.graph.executions} executions)")
    finally:
        clock.close()
        zd.shutdown()


# ---- (b) the small-step loop beside torch eager ---------------------------------------------------------------

def small_step(kind: str, device: str, steps: int, n: int = 256, jit: bool = False) -> float:
    """`jit`: the step as a zd.jit function of (y, w, b), replayed after its first calls."""
    s = start(kind, 1, device)
    clock = DeviceClock(s, parallel=kind == "ray")
    try:
        rng = np.random.default_rng(0)
        w = zd.tensor((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)).realize()
        b = zd.tensor((rng.standard_normal(n) * 0.1).astype(np.float32)).realize()
        y = [zd.tensor(rng.standard_normal((n, n)).astype(np.float32)).realize()]
        layer = zd.jit(lambda y, w, b: zd.relu(y @ w + b)) if jit else None

        def one():
            y[0] = layer(y[0], w, b) if jit else zd.relu(y[0] @ w + b).realize()

        before = zd.stats()["plan_replays"]
        walls, dev = timed_realizes(one, steps, clock)
        name = f"zyx_dist {kind}{' zd.jit' if jit else ''}"
        med, _ = record(name, f"relu(y@w+b) {n}^2 per step", [t * 1e6 for t in walls], "us",
                        device_us=round(quartiles([d * 1e6 for d in dev])[0], 1),
                        replayed=replayed(before, steps + 5), graph_replays=zd.stats()["graph_replays"])
        record(name, f"relu(y@w+b) {n}^2 overhead per step", [(a - d) * 1e6 for a, d in zip(walls, dev)], "us")
        if kind == "in-process" and not jit:  # and the Python part of a step: the time inside the device API taken out
            api = ApiClock(s)
            try:
                py = []
                for _ in range(min(steps, 50)):
                    api.take()
                    gc.disable()
                    t = time.perf_counter()
                    one()
                    wall = time.perf_counter() - t
                    gc.enable()
                    py.append((wall - api.take()) * 1e6)
                clock.take()
                record(f"zyx_dist {kind}", f"relu(y@w+b) {n}^2 Python per step (wall - device API)", py, "us")
            finally:
                api.close()
        return med
    finally:
        clock.close()
        zd.shutdown()


def torch_small_step(device: str, steps: int, n: int = 256) -> float | None:
    try:
        import torch
    except ImportError:
        print("  torch eager: skipped (torch is not importable here)")
        return None
    dev = "cuda" if device.startswith("cuda") else "cpu"
    if dev == "cuda" and not torch.cuda.is_available():
        print("  torch eager: skipped (torch has no CUDA here)")
        return None
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    g = torch.Generator().manual_seed(0)
    w = (torch.randn(n, n, generator=g) / n**0.5).to(dev)
    b = (torch.randn(n, generator=g) * 0.1).to(dev)
    y = torch.randn(n, n, generator=g).to(dev)
    with torch.no_grad():
        for _ in range(5):
            y = torch.relu(y @ w + b)
        sync()
        walls = []
        for _ in range(steps):
            t = time.perf_counter()
            y = torch.relu(y @ w + b)
            sync()
            walls.append(time.perf_counter() - t)
    med, _ = record(f"torch {torch.__version__} eager ({dev})", f"relu(y@w+b) {n}^2 per step",
                    [t * 1e6 for t in walls], "us", threads=torch.get_num_threads())
    return med


# ---- (i) the same, interleaved with torch: figures that hold on a host whose speed drifts ---------------------

def interleaved(device: str, blocks: int, per_block: int = 25, n: int = 256) -> None:
    """In process on `device`, `blocks` rounds of four blocks of `per_block` calls each, one after the other: a
    cached `x * 2 + 1` realize (its graph built before the clock), torch's `x * 2 + 1` and synchronize, the plain
    small step `y = relu(y @ w + b).realize()` (graph built inside the clock, as a user's loop runs it) and
    torch's eager step. A lent GPU host's Python speed moves by 2x from minute to minute; the four blocks of a
    round see the same host, so the median over rounds of each round's ratio (ours / torch) holds where the
    absolute figures drift. The Python gauge of each round is printed beside."""
    try:
        import torch
    except ImportError:
        print("  interleaved: skipped (torch is not importable here)")
        return
    dev = "cuda" if device.startswith("cuda") else "cpu"
    if dev == "cuda" and not torch.cuda.is_available():
        print("  interleaved: skipped (torch has no CUDA here)")
        return
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    start("in-process", 1, device)
    try:
        rng = np.random.default_rng(0)
        x = zd.tensor(np.full(1024, 1.0, np.float32)).realize()
        w0 = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
        b0 = (rng.standard_normal(n) * 0.1).astype(np.float32)
        y0 = rng.standard_normal((n, n)).astype(np.float32)
        w, b, y = zd.tensor(w0).realize(), zd.tensor(b0).realize(), [zd.tensor(y0).realize()]
        xt = torch.ones(1024, device=dev)
        wt, bt, yt = (torch.from_numpy(a).to(dev) for a in (w0, b0, y0))
        ty = [yt]

        def ours_tiny(arg):
            zd.realize(arg)

        def torch_tiny(_arg):
            xt * 2 + 1
            sync()

        def ours_step(_arg):
            y[0] = zd.relu(y[0] @ w + b).realize()

        def torch_step(_arg):
            ty[0] = torch.relu(ty[0] @ wt + bt)
            sync()

        cases = (("zyx_dist in-process", "x * 2 + 1 realize (cached)", ours_tiny, lambda: x * 2 + 1),
                 ("torch eager", "x * 2 + 1, synchronize", torch_tiny, None),
                 ("zyx_dist in-process", f"relu(y@w+b) {n}^2 per step", ours_step, None),
                 ("torch eager", f"relu(y@w+b) {n}^2 per step", torch_step, None))
        times: list[list[float]] = [[] for _ in cases]
        ratios: tuple[list[float], list[float]] = ([], [])
        gauges = []
        with torch.no_grad():
            for r in range(blocks + 1):
                medians = []
                for (_sys, _work, fn, build), out in zip(cases, times):
                    walls = []
                    for _ in range(per_block):
                        arg = build() if build else None
                        gc.disable()
                        t = time.perf_counter()
                        fn(arg)
                        walls.append(time.perf_counter() - t)
                        gc.enable()
                    if r:  # (the first round warms up)
                        out.extend(v * 1e6 for v in walls)
                    medians.append(statistics.median(walls))
                if r:
                    ratios[0].append(medians[0] / medians[1])
                    ratios[1].append(medians[2] / medians[3])
                    gauges.append(_python_speed())
        for (system, work, _fn, _b), values in zip(cases, times):
            record(system, f"{work}, interleaved", values, "us")
        for (system, work, _fn, _b), values in zip(cases[::2], ratios):
            record(system, f"{work} / torch's, per round", values, "x")
        print(f"    {blocks} rounds of {per_block} calls a case; the Python gauge moved between {min(gauges):.1f} and "
              f"{max(gauges):.1f} us over the rounds", flush=True)
    finally:
        zd.shutdown()


# ---- (c) 200 independent small kernels ------------------------------------------------------------------------

def many_kernels(kind: str, workers: int, device: str, kernels: int, repeats: int) -> None:
    s = start(kind, workers, device)
    clock = DeviceClock(s, parallel=kind == "ray")
    try:
        devs = s.device_names
        rng = np.random.default_rng(1)
        xs = [zd.tensor(rng.standard_normal(64).astype(np.float32), device=devs[i % len(devs)]).realize()
              for i in range(kernels)]

        def build():
            return [x * 2 + 1 for x in xs]

        t = time.perf_counter()
        for _ in range(5):
            build()
        build_us = (time.perf_counter() - t) / 5 / kernels * 1e6
        before = zd.stats()["plan_replays"]
        walls, dev = timed_realizes(lambda ys: zd.realize(*ys), repeats, clock, build=build)
        record(f"zyx_dist {kind} {workers}w", f"dispatch, {kernels} kernels in one realize",
               [t / kernels * 1e6 for t in walls], "us/kernel",
               device_us_per_kernel=round(quartiles([d / kernels * 1e6 for d in dev])[0], 2),
               graph_build_us_per_kernel=round(build_us, 2), replayed=replayed(before, repeats + 5))
        if kind == "in-process":  # again, the time inside the device API calls taken out
            api = ApiClock(s)
            try:
                py = []
                for _ in range(repeats):
                    ys = build()
                    api.take()
                    gc.disable()
                    t = time.perf_counter()
                    zd.realize(*ys)
                    wall = time.perf_counter() - t
                    gc.enable()
                    py.append((wall - api.take()) / kernels * 1e6)
                clock.take()
                record(f"zyx_dist {kind} {workers}w", "  Python per kernel (wall - device API)", py, "us/kernel")
            finally:
                api.close()
    finally:
        clock.close()
        zd.shutdown()


# ---- (d) the five benchmark kernels -----------------------------------------------------------------------------

def five_kernels(kind: str, device: str, sizes: str, repeats: int) -> None:
    s = start(kind, 1, device)
    clock = DeviceClock(s, parallel=kind == "ray")
    try:
        if sizes == "full":
            n, r, m = 1 << 28, 8192, 4096
        else:
            n, r, m = 1 << 22, 2048, 512
        d = s.device_names[0]
        x = zd.rand(n, seed=0, device=d).realize()
        X = zd.rand(r, r, seed=1, device=d).realize()
        A = zd.rand(m, m, seed=2, device=d).realize()
        B = zd.rand(m, m, seed=3, device=d).realize()
        b = zd.rand(m, seed=4, device=d).realize()
        cases = [
            (f"ew_chain 2^{n.bit_length() - 1}", lambda: (zd.relu(x * 2 + 1) * zd.sigmoid(x)).realize(), 2 * n * 4, 0),
            (f"row softmax {r}^2", lambda: zd.softmax(X, axis=1).realize(), 2 * r * r * 4, 0),
            (f"sum 2^{n.bit_length() - 1}", lambda: x.sum().realize(), n * 4, 0),
            (f"matmul {m}^3", lambda: (A @ B).realize(), 0, 2 * m**3),
            (f"relu(A@B+b) {m}^3", lambda: zd.relu(A @ B + b).realize(), 0, 2 * m**3),
        ]
        for name, fn, nbytes, flops in cases:
            walls, _ = timed_realizes(fn, repeats, clock, warmup=3)  # replays untimed, as users run them
            s.backend.time_replays = True  # then the same replays with the kernels timed, for device time
            try:
                _, dev = timed_realizes(fn, repeats, clock, warmup=1)
            finally:
                s.backend.time_replays = False
            med, _ = quartiles(walls)
            dmed, _ = quartiles(dev)
            rate = (f"{nbytes / med / 1e9:.1f} GB/s wall, {nbytes / dmed / 1e9:.1f} device" if nbytes else
                    f"{flops / med / 1e9:.1f} GFLOP/s wall, {flops / dmed / 1e9:.1f} device")
            record(f"zyx_dist {kind}", name, [t * 1e6 for t in walls], "us",
                   device_us=round(dmed * 1e6, 1), wall_over_device=round(med / dmed, 3) if dmed else None,
                   rate=rate)
    finally:
        clock.close()
        zd.shutdown()


# ---- the floor: a Ray Compiled Graph that does nothing ---------------------------------------------------------

def ray_floor(workers: int, repeats: int) -> None:
    """An echo through a compiled graph over `workers` plain actors, and one plain actor call each: what
    Ray itself costs on this machine, whatever zyx_dist does."""
    import ray
    from ray.dag import InputNode, MultiOutputNode

    # a new local instance, never a cluster that another process happens to run here (as zd.init does)
    ray.init(address="local", num_cpus=max(2, workers), include_dashboard=False, log_to_driver=False)
    try:
        @ray.remote(num_cpus=0)
        class Echo:
            def echo(self, x):
                return x

        actors = [Echo.remote() for _ in range(workers)]
        ray.get([a.echo.remote(0) for a in actors])
        with InputNode() as inp:
            dag = MultiOutputNode([a.echo.bind(inp) for a in actors])
        graph = dag.experimental_compile()
        try:
            for _ in range(20):  # no timeout: on an oversubscribed machine the first ones can take seconds
                [r.get(timeout=-1) for r in graph.execute(0)]
            for name, arg in (("one execution", None), ("one execution, 64 bytes", bytes(64))):
                walls = []  # (an int, and a bytes object as our replays send: Ray passes bytes unwalked)
                for i in range(repeats):
                    t = time.perf_counter()
                    [r.get(timeout=-1) for r in graph.execute(i if arg is None else arg)]
                    walls.append(time.perf_counter() - t)
                record(f"ray compiled graph echo {workers}w", name, [t * 1e6 for t in walls], "us")
        finally:
            graph.teardown()
        walls = []
        for i in range(repeats):
            t = time.perf_counter()
            ray.get([a.echo.remote(i) for a in actors])
            walls.append(time.perf_counter() - t)
        record(f"ray actor call {workers}w", "one call per actor", [t * 1e6 for t in walls], "us")
    finally:
        ray.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="opencl-cpu", help="opencl-cpu (PoCL workers) or cuda:0")
    ap.add_argument("--workers", type=int, nargs="*", default=None,
                    help="worker counts for (a) (default 1 2 4 8 on CPU, 1 on a GPU)")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--steps", type=int, default=200, help="steps of the small-step loop")
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--sizes", choices=("small", "full"), default=None,
                    help="sizes of (d): small on a CPU (default there), full = gpu_bench's (default on a GPU)")
    ap.add_argument("--only", default="abcdf", help="which parts to run (letters a b c d e i u, f: Ray's floor)")
    ap.add_argument("--machine", default=None)
    ap.add_argument("--name", default=None, help="file name of the JSON (default dispatch-<cpu|gpu>-<date>.json)")
    ap.add_argument("--out", default=os.environ.get("OUT", "benchmarks/results"))
    args = ap.parse_args()
    gpu = args.device.startswith("cuda")
    workers = args.workers or ([1] if gpu else [1, 2, 4, 8])
    sizes = args.sizes or ("full" if gpu else "small")
    ENV.update(records.environment())
    if args.machine:
        ENV["machine"] = args.machine
    machine = f"{ENV['machine']} ({records.cpu_model()}, {os.cpu_count()} cores)"
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    t_py = min(_python_speed() for _ in range(3))
    ENV["host"] = dict(ENV["host"], load_average=[round(v, 2) for v in load], python_gauge_us=round(t_py, 2))
    print(f"dispatch benchmark on {machine}, device {args.device}, commit {ENV['commit']}; load average "
          f"{', '.join(f'{v:.1f}' for v in load)}; Python {platform.python_version()}, sum(range(1000)) takes "
          f"{t_py:.1f} us here (a gauge of this machine's Python speed)", flush=True)
    if "a" in args.only:
        print("(a) overhead per realize of a cached plan, one small kernel per worker (wall - device time)")
        for kind in ("in-process", "ray"):
            for n in workers:
                overhead(kind, n, args.device, args.repeats)
    if "f" in args.only:
        print("    Ray's own floor on this machine (no zyx_dist):")
        for n in workers:
            ray_floor(n, args.repeats)
    if "b" in args.only:
        print(f"(b) small-step loop, {args.steps} steps")
        ours = {kind: small_step(kind, args.device, args.steps) for kind in ("in-process", "ray")}
        ours.update({f"{kind} zd.jit": small_step(kind, args.device, args.steps, jit=True)
                     for kind in ("in-process", "ray")})
        base = torch_small_step(args.device, args.steps)
        if base:
            for kind, t in ours.items():
                print(f"    {kind}: {t / base:.2f}x torch eager (targets: in-process <= 1.3x, Ray <= 2x)")
    if "c" in args.only:
        print(f"(c) {args.kernels} independent small kernels in one zd.realize")
        many_kernels("in-process", 1, args.device, args.kernels, max(20, args.repeats // 10))
        for n in (1, 3) if not gpu else (1,):
            many_kernels("ray", n, args.device, args.kernels, max(20, args.repeats // 10))
    if "d" in args.only:
        print(f"(d) the five benchmark kernels ({sizes} sizes)")
        for kind in ("in-process", "ray"):
            five_kernels(kind, args.device, sizes, max(10, args.repeats // 10))
    if "i" in args.only:
        print("(i) in process, interleaved with torch's same operations, round by round")
        interleaved(args.device, max(4, args.repeats // 25))
    if "u" in args.only:
        print("(u) a step that uploads a new 256 KiB batch, per step")
        for kind in ("in-process", "ray"):
            upload_step(kind, args.device, args.repeats)
    if "e" in args.only:
        print("(e) reading a value back, per read")
        for kind in ("in-process", "ray"):
            reads(kind, args.device, args.repeats)
        torch_reads(args.device, args.repeats)
    os.makedirs(args.out, exist_ok=True)
    day = datetime.date.today().isoformat()
    path = os.path.join(args.out, args.name or f"dispatch-{'gpu' if gpu else 'cpu'}-{day}.json")
    with open(path, "w") as f:
        json.dump(ROWS, f, indent=1)
    print(f"wrote {len(ROWS)} rows to {path}")


def _python_speed() -> float:
    t = time.perf_counter()
    for _ in range(200):
        sum(range(1000))
    return (time.perf_counter() - t) / 200 * 1e6


if __name__ == "__main__":
    main()
