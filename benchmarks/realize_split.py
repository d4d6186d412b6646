"""Where the wall of one replayed `realize()` goes, in-process, on any device (a script, not a test): per
case, the median wall of `realize()` (the graph built before the clock), then a timeline of the driver's and
the worker's steps inside it: for each step, the median time from entering `realize()` to its start and to
its end, and its median own length, over the timed realizes. Each step is timed by a wrapper around its
function (about 0.3 us each, counted in the wall printed beside the plain one). What no step covers before
the first launch and after the synchronize is the driver's exposed cost.

    python benchmarks/realize_split.py [--device cuda:0|reference:0] [--rounds 300] [--ray] [case ...]
        (cases: tiny step layer_norm attention; on the CPU the last two are smaller)
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
import time
from collections import defaultdict

import ml_dtypes
import numpy as np

import zyx_dist as zd
from zyx_dist.engine import session as zsession
from zyx_dist.engine import templates
from zyx_dist.fuse import plan_cache
from zyx_dist.graph import companions
from zyx_dist.runtime import replay, worker

sys.path.insert(0, os.path.dirname(__file__))
import model_bench as mb  # its timers: realize() alone, and torch's op with a synchronize

_TRACE: list[tuple[str, float, float]] | None = None


def _timed(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            if _TRACE is not None:
                _TRACE.append((name, t, time.perf_counter()))
    return wrapper


def instrument(backend_cls: type | None, through_ray: bool) -> None:
    """Wrap the steps of the replay path (module globals and class methods, looked up at call time); through
    Ray, the driver's side of it (the worker's steps run in the actor, unseen here)."""
    for owner, attr in [(plan_cache.PlanCache, "guess"), (plan_cache.PlanCache, "lookup"),
                        (plan_cache.PlanCache, "confirms"), (plan_cache.PlanCache, "remember"),
                        (zsession.Session, "_take_frees"), (zsession.Session, "_prepare"),
                        (templates, "run"), (templates, "_direct"), (templates, "hidden_seconds"),
                        (worker.Worker, "run_replay"), (worker.Worker, "_sync"), (worker.Worker, "_free_id"),
                        (replay, "_segment"), (replay, "run_template"),
                        (templates, "device_seconds")]:  # (the older name of hidden_seconds, for A/B runs)
        if hasattr(owner, attr):
            setattr(owner, attr, _timed(_name(owner, attr), getattr(owner, attr)))
    zsession.companions.with_companions = _timed("with_companions", companions.with_companions)
    templates.lineage.recipe = _timed("recipe", templates.lineage.recipe)
    if through_ray:
        from zyx_dist.engine import ray_backend, ray_compiled, ray_replay_socket
        for owner, attr in [(ray_backend.RayBackend, "run_replay"), (ray_backend.RayBackend, "_graph"),
                            (ray_replay_socket.ReplaySocket, "send"), (ray_replay_socket.ReplaySocket, "receive"),
                            (ray_compiled.CompiledSteps, "run"), (ray_compiled, "pack_steps"),
                            (ray_compiled, "unpack_result"), (ray_compiled, "decode_result")]:
            setattr(owner, attr, _timed(_name(owner, attr), getattr(owner, attr)))
        return
    if backend_cls is not None:
        for attr in ("launch", "launch_graph", "synchronize"):
            if hasattr(backend_cls, attr):
                setattr(backend_cls, attr, _timed(_name(backend_cls, attr), getattr(backend_cls, attr)))


def _name(owner, attr: str) -> str:
    """A step's name: the class or module it belongs to, then the function (`run` is in several)."""
    return f"{getattr(owner, '__name__', '?').rsplit('.', 1)[-1]}.{attr}"


def cases(device: str, rng) -> dict:
    gpu = device.startswith("cuda")
    n, (b, t, d) = (8, (8, 16, 1024)) if gpu else (1, (1, 2, 128))
    x = zd.tensor(np.ones(1024, np.float32)).realize()
    a = zd.tensor(rng.standard_normal((n, 1024, 1024) if gpu else (64, 1024)).astype(np.float32)).realize()
    dt = ml_dtypes.bfloat16 if gpu else np.float32
    q, k, v = (zd.tensor(rng.standard_normal((b, t, d, 64)).astype(dt)).realize() for _ in range(3))
    mask = zd.tensor(np.triu(np.full((d, d), -np.inf, np.float32), 1).astype(dt)).realize()
    c = 1.0 / math.sqrt(64)
    w = zd.tensor((rng.standard_normal((256, 256)) / 16).astype(np.float32)).realize()
    bias, y = (zd.tensor(rng.standard_normal(s).astype(np.float32)).realize() for s in ((256,), (256, 256)))
    return {"tiny": lambda: x * 2 + 1, "step": lambda: zd.relu(y @ w + bias),
            "layer_norm": lambda: zd.layer_norm(a, axis=-1),
            "attention": lambda: zd.softmax((q @ k.mT) * c + mask, axis=-1) @ v}


def torch_cases() -> dict:
    """The torch equivalent of each case on cuda:0 (the same shapes and dtypes, random data): its wall, with a
    synchronize (what a blocking realize() is), is printed beside ours."""
    import torch
    import torch.nn.functional as F

    t = {}
    x = torch.ones(1024, device="cuda")
    t["tiny"] = lambda: x * 2 + 1
    w, bias = torch.randn(256, 256, device="cuda") / 16, torch.randn(256, device="cuda")
    y = torch.randn(256, 256, device="cuda")
    t["step"] = lambda: torch.relu(y @ w + bias)
    ln = torch.randn(8, 1024, 1024, device="cuda")
    t["layer_norm"] = lambda: F.layer_norm(ln, ln.shape[-1:])
    q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    t["attention"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return t


def split(build, rounds: int, theirs=None) -> None:
    global _TRACE
    plain = mb.timed_zd(build, rounds, warmup=30)  # (the graph built before the clock)
    starts, ends, lens = defaultdict(list), defaultdict(list), defaultdict(list)
    walls = []
    for _ in range(rounds):
        g = build()
        _TRACE = []
        t0 = time.perf_counter()
        g.realize()
        t1 = time.perf_counter()
        trace, _TRACE = _TRACE, None
        walls.append(t1 - t0)
        seen = set()
        for name, a, b in trace:
            if name in seen:  # a step run more than once in a realize: its first start, last end, total
                lens[name][-1] += b - a
                ends[name][-1] = b - t0
                continue
            seen.add(name)
            starts[name].append(a - t0)
            ends[name].append(b - t0)
            lens[name].append(b - a)
        del g
    med = statistics.median
    torch_wall = ""
    if theirs is not None:
        import torch

        t = mb.timed(theirs, rounds, 30, torch.cuda.synchronize)
        torch_wall = f"; torch {t['median_ms'] * 1e3:.1f} us (IQR {t['iqr_ms'] * 1e3:.1f})"
    print(f"  wall {plain['median_ms'] * 1e3:.1f} us (IQR {plain['iqr_ms'] * 1e3:.1f}); instrumented "
          f"{med(walls) * 1e6:.1f}{torch_wall}")
    print(f"  {'step':<30}{'from':>9}{'to':>9}{'own':>9}  (us after entering realize; medians)")
    for name in sorted(starts, key=lambda s: med(starts[s])):
        print(f"  {name:<30}{med(starts[name]) * 1e6:>9.1f}{med(ends[name]) * 1e6:>9.1f}{med(lens[name]) * 1e6:>9.1f}"
              f"{'' if len(starts[name]) == rounds else f'  ({len(starts[name])} of {rounds} realizes)'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="opencl-cpu")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--ray", action="store_true", help="through one Ray worker (the driver's steps only)")
    ap.add_argument("cases", nargs="*", default=["tiny", "layer_norm", "attention"])
    args = ap.parse_args()
    backend_cls = None
    if args.device.startswith("cuda"):
        from zyx_dist.runtime import cuda
        backend_cls = cuda.CudaBackend
        zd.init(ray=args.ray, devices=[args.device])
    elif args.device.startswith("reference"):  # NumPy runs the kernels: the driver's Python alone, on any host
        from zyx_dist.runtime import reference
        backend_cls = reference.ReferenceDevice
        zd.init(ray=args.ray, devices=[args.device])
    else:
        from zyx_dist.runtime import opencl
        backend_cls = opencl.OpenCLBackend
        zd.init(ray=args.ray, devices={args.device: 1})
    instrument(backend_cls, args.ray)
    try:
        built = cases(args.device, np.random.default_rng(0))
        theirs = torch_cases() if args.device.startswith("cuda") else {}
        for name in args.cases:
            print(f"{name} ({args.device}):", flush=True)
            split(built[name], args.rounds, theirs.get(name))
        print(f"plan replays {zd.stats()['plan_replays']}, graph replays {zd.stats().get('graph_replays', 0)}")
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
