"""Training steps per second of the GPT of examples/train_gpt.py (forward, backward and Adam update of one batch),
ours beside torch eager and torch.compile of the same model when torch is importable, and the driver's cost of a
cached training step at several depths (it must stay linear in the graph's size).

    python benchmarks/train_bench.py                                   # tiny sizes, any machine (CPU: PoCL)
    python benchmarks/train_bench.py --embed 512 --layers 6 --heads 8 --block 256 --batch 32 --json out.json
    python benchmarks/train_bench.py --dtype bfloat16                  # half types: parameters, activations

Each system trains the same model from the same initial weights on the same batches (uploaded to the device
before timing, cycled); a round is `--steps` steps ended by a sync (ours: `zd.realize` of loss and parameters,
which blocks; torch: `cuda.synchronize`), and the figures are the median and interquartile range over `--rounds`
rounds after `--warmup` steps. The driver check times graph building (model, zd.grad, optimizer) and planning
(`Session.plan` on a plan-cache hit) of one step per depth and reports microseconds per graph node.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import zyx_dist as zd
from zyx_dist.engine import session as zsession
from zyx_dist.graph.ir import toposort

ROOT = Path(__file__).resolve().parents[1]


def load_example():
    spec = importlib.util.spec_from_file_location("train_gpt", ROOT / "examples" / "train_gpt.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def batches(gpt, cfg, n: int, seed: int = 1):
    """n batches of (input, target) one-hot arrays (B, T, V) float32, and the vocabulary size."""
    text, vocab = gpt.corpus(50_000)
    rng, eye = np.random.default_rng(seed), np.eye(vocab, dtype=np.float32)
    out = []
    for _ in range(n):
        window = text[rng.integers(0, len(text) - cfg.block - 1, cfg.batch)[:, None] + np.arange(cfg.block + 1)]
        out.append((eye[window[:, :-1]], eye[window[:, 1:]]))
    return out, vocab


def summary(rates: list[float]) -> dict:
    q1, med, q3 = np.percentile(rates, [25, 50, 75])
    return {"steps_per_s_median": float(med), "steps_per_s_iqr": float(q3 - q1), "rounds": [float(r) for r in rates]}


# ---- ours ------------------------------------------------------------------------------------------------------

def run_ours(gpt, cfg, data, vocab, args, jit: bool = False) -> dict:
    """`jit`: each step is one call of a zd.jit function of (params, optimizer, x, y), which replays the
    step's plan after its first calls instead of building the graph; its results come back realized."""
    dt = zd.dtype(args.dtype)
    params = [zd.tensor(p).astype(dt).realize() for p in gpt.init_params(vocab, cfg)]
    mask = zd.tensor(np.triu(np.full((cfg.block, cfg.block), -1e9, np.float32), 1)).astype(dt).realize()
    dev = [(zd.tensor(x).astype(dt).realize(), zd.tensor(y).astype(dt).realize()) for x, y in data]
    opt = zd.optim.Adam(params, lr=args.lr)
    losses: list[float] = []

    built = 0.0  # seconds spent building steps' graphs (model, grad, optimizer), for the split printed below

    def train_step(params, opt, x, y):
        loss = gpt.loss_fn(params, x, y, mask, cfg)
        return loss, opt.step(zd.grad(loss, params))

    jitted = zd.jit(train_step) if jit else None

    def step(i: int):
        nonlocal params, built
        x, y = dev[i % len(dev)]
        if jitted is not None:
            loss, params = jitted(params, opt, x, y)
            return loss
        t = time.perf_counter()
        loss, params = train_step(params, opt, x, y)
        built += time.perf_counter() - t
        zd.realize(loss, *params)
        return loss

    session = zsession.current()
    for i in range(max(args.warmup, 5) if jit else args.warmup):  # new plans: compile (and tune) new kernels
        t0 = time.perf_counter()
        loss = step(i)
        losses.append(loss.item())
        print(f"zyx_dist warm-up step {i}: {time.perf_counter() - t0:.2f} s; {len(session.programs)} programs, "
              f"{session.tuner.trials} candidates timed so far", file=sys.stderr, flush=True)
    rates, build_ms = [], []
    for r in range(args.rounds):
        built = 0.0
        if r == args.rounds - 1:
            zd.reset_stats()  # the last round's counters, per step, are printed
        t0 = time.perf_counter()
        for i in range(args.steps):
            loss = step(args.warmup + r * args.steps + i)
        rates.append(args.steps / (time.perf_counter() - t0))
        build_ms.append(1e3 * built / args.steps)
        losses.append(loss.item())
    st = zd.stats()  # of the last round: replayed from a plan template, and in how many CUDA graphs
    out = summary(rates)
    # of a step's time, the part spent building its graph (the rest is the realize: binding, dispatch, device)
    out["build_ms_per_step_median"] = float(np.median(build_ms))
    if jitted is not None:
        out.update(jit_runs=jitted.runs, jit_replays=jitted.replays)
    out.update(first_loss=losses[0], last_loss=losses[-1], kernels_per_step=st["kernels_launched"] / args.steps,
               replayed=bool(st["plan_replays"]), cuda_graphs_per_step=st["graph_replays"] / args.steps,
               device=zd.devices()[0].name, device_name=zd.devices()[0].device_name)
    return out


def driver_cost(gpt, cfg, data, vocab, depths: list[int]) -> list[dict]:
    """Build + plan time of a cached step (plan cache hit: no kernelize, no render) per depth, per graph node."""
    s = zsession.current()
    rows = []
    for layers in depths:
        c = SimpleNamespace(**{**vars(cfg), "layers": layers})
        params = [zd.tensor(p).realize() for p in gpt.init_params(vocab, c)]
        mask = zd.tensor(np.triu(np.full((c.block, c.block), -1e9, np.float32), 1)).realize()
        x, y = (zd.tensor(a).realize() for a in data[0])
        opt = zd.optim.Adam(params, lr=1e-3)
        best = None
        for i in range(5):  # steps 1-2 are new graphs (no optimizer state yet); then the cache hits
            t0 = time.perf_counter()
            loss = gpt.loss_fn(params, x, y, mask, c)
            new = opt.step(zd.grad(loss, params))
            t1 = time.perf_counter()
            nodes = [loss.node] + [p.node for p in new]
            s.plan(nodes)
            t2 = time.perf_counter()
            count = len(toposort(nodes))
            zd.realize(loss, *new)
            params = new
            if i >= 3 and (best is None or t2 - t0 < best[0] + best[1]):
                best = (t1 - t0, t2 - t1, count)
        build, plan, count = best
        rows.append({"layers": layers, "nodes": count, "build_ms": 1e3 * build, "plan_ms": 1e3 * plan,
                     "us_per_node": 1e6 * (build + plan) / count})
    return rows


# ---- torch -----------------------------------------------------------------------------------------------------

def run_torch(gpt, cfg, data, vocab, args, compiled: bool) -> dict:
    import torch
    import torch.nn.functional as F

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dt = getattr(torch, args.dtype)
    params = [torch.tensor(p, device=dev, dtype=dt, requires_grad=True) for p in gpt.init_params(vocab, cfg)]
    mask = torch.triu(torch.full((cfg.block, cfg.block), -1e9, device=dev, dtype=dt), 1)
    batch = [(torch.tensor(x, device=dev, dtype=dt), torch.tensor(y, device=dev, dtype=dt)) for x, y in data]
    c, h = cfg.embed, cfg.heads

    def loss_fn(params, x_hot, y_hot):  # the same model as examples/train_gpt.py's loss_fn
        b, t, v = x_hot.shape
        ln = lambda z: F.layer_norm(z, (z.shape[-1],), eps=1e-5)
        emb, pos, rest = params[0], params[1], params[2:]
        x = (x_hot.reshape(b * t, v) @ emb).reshape(b, t, c) + pos
        for i in range(cfg.layers):
            wq, wk, wv, wo = rest[4 * i:4 * i + 4]
            w1, w2 = rest[4 * cfg.layers + 2 * i:4 * cfg.layers + 2 * i + 2]
            a = ln(x).reshape(b * t, c)
            q, k, vv = ((a @ w).reshape(b, t, h, c // h).permute(0, 2, 1, 3) for w in (wq, wk, wv))
            att = torch.softmax(q @ k.transpose(-1, -2) * (c // h) ** -0.5 + mask, dim=-1)
            x = x + ((att @ vv).permute(0, 2, 1, 3).reshape(b * t, c) @ wo).reshape(b, t, c)
            x = x + (torch.relu(ln(x).reshape(b * t, c) @ w1) @ w2).reshape(b, t, c)
        logits = ln(x).reshape(b * t, c) @ rest[-1]
        return -(torch.log_softmax(logits, dim=-1) * y_hot.reshape(b * t, v)).sum() / (b * t)

    fn = torch.compile(loss_fn) if compiled else loss_fn
    opt = torch.optim.Adam(params, lr=args.lr)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    losses = []

    def step(i: int):
        x, y = batch[i % len(batch)]
        opt.zero_grad(set_to_none=True)
        loss = fn(params, x, y)
        loss.backward()
        opt.step()
        return loss

    for i in range(args.warmup):
        losses.append(step(i).item())
    rates = []
    for r in range(args.rounds):
        sync()
        t0 = time.perf_counter()
        for i in range(args.steps):
            loss = step(args.warmup + r * args.steps + i)
        sync()
        rates.append(args.steps / (time.perf_counter() - t0))
        losses.append(loss.item())
    out = summary(rates)
    out.update(first_loss=losses[0], last_loss=losses[-1], device=dev, torch=torch.__version__)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("batch", 8), ("block", 16), ("embed", 32), ("heads", 2), ("layers", 2), ("rounds", 5),
                          ("steps", 10), ("warmup", 3)]:
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--dtype", default="float32", help="float32, bfloat16 or float16 (the optimizer state stays float32)")
    ap.add_argument("--depths", default="1,2,4,8", help="layer counts of the driver-cost check ('' skips it)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    try:
        zd.dtype(args.dtype)
    except (zd.ZyxError, TypeError, ValueError, KeyError):
        sys.exit(f"train_bench: zyx_dist has no dtype {args.dtype!r} yet")
    gpt = load_example()
    cfg = SimpleNamespace(batch=args.batch, block=args.block, embed=args.embed, heads=args.heads, layers=args.layers)
    data, vocab = batches(gpt, cfg, 8)
    zd.init(ray=False)
    results = {"zyx_dist": run_ours(gpt, cfg, data, vocab, args),
               "zyx_dist_jit": run_ours(gpt, cfg, data, vocab, args, jit=True)}
    driver = driver_cost(gpt, cfg, data, vocab, [int(d) for d in args.depths.split(",") if d])
    zd.shutdown()
    try:
        import torch  # noqa: F401
    except ImportError:
        torch_ok = False
    else:
        torch_ok = not args.no_torch
    if torch_ok:
        results["torch_eager"] = run_torch(gpt, cfg, data, vocab, args, compiled=False)
        try:
            results["torch_compile"] = run_torch(gpt, cfg, data, vocab, args, compiled=True)
        except Exception as e:  # noqa: BLE001 -- e.g. no C compiler for inductor on this machine
            results["torch_compile"] = {"error": f"{type(e).__name__}: {e}"[:500]}
    print(f"GPT training step: batch {cfg.batch} x block {cfg.block}, embed {cfg.embed}, {cfg.layers} layers, "
          f"{cfg.heads} heads, vocabulary {vocab}, {args.dtype}")
    for name, r in results.items():
        if "error" in r:
            print(f"  {name:14s} failed: {r['error']}")
            continue
        how = ""
        if "replayed" in r:
            built = (f"zd.jit ran the step's Python {r['jit_runs']} times and replayed it {r['jit_replays']}"
                     if "jit_runs" in r else f"{r['build_ms_per_step_median']:.2f} ms of each step building its graph")
            how = (f"; {r['kernels_per_step']:.0f} kernels per step, {'replayed' if r['replayed'] else 'planned'}, "
                   f"{r['cuda_graphs_per_step']:.1f} CUDA graphs, {built}")
        print(f"  {name:14s} {r['steps_per_s_median']:9.2f} steps/s (IQR {r['steps_per_s_iqr']:.2f}) on "
              f"{r['device']}; loss {r['first_loss']:.3f} -> {r['last_loss']:.3f}{how}")
    base = results.get("torch_compile", {}).get("steps_per_s_median")
    if base:
        for name in ("zyx_dist", "zyx_dist_jit"):
            print(f"  {name} / torch.compile: {results[name]['steps_per_s_median'] / base:.2f}x")
    if not torch_ok:
        print("  (torch is not importable: no torch baselines)")
    print("driver cost of a cached step (build + plan), by depth:")
    for row in driver:
        print(f"  {row['layers']:2d} layers: {row['nodes']:6d} nodes, build {row['build_ms']:7.2f} ms, "
              f"plan {row['plan_ms']:7.2f} ms, {row['us_per_node']:.1f} us/node")
    if args.json:
        out = {"benchmark": "train_gpt", "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "host": platform.node(), "config": {**vars(cfg), "vocab": vocab, "dtype": args.dtype, "lr": args.lr,
                                                   "rounds": args.rounds, "steps": args.steps, "warmup": args.warmup},
               "results": results, "driver": driver}
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
