"""Model benchmark (a script, not a test), for the GPU machine: real-model shapes beside torch in one run.

    source .devbundle/setup.sh && python3 benchmarks/model_bench.py --out $OUT            # everything
    python3 benchmarks/model_bench.py --sections matmul,subops --repeats 10                  # a part

Sections (each checked against torch in the same run; times are medians with the interquartile range):
- `matmul`: bf16 and fp16 8192^3 (and fp32 4096^3) on zyx_dist (tensor cores through mma.sync) and torch.
- `subops`: the sub-op table of issue 14 at B=8, T=1024, D=1024, 16 heads: `x3d @ W + b`, `x2d @ W`,
  batched `q @ k.mT`, `p @ v`, `q @ k.mT` on a permuted qkv view, the permuted heads `@ Wo`, layer norm,
  `softmax(s*c + mask)`, tanh-GELU; plus torch's `scaled_dot_product_attention` (causal) and the explicit
  attention core `softmax(q @ k.mT * c + mask) @ v` on zyx_dist.
- `block`: one GPT-style transformer block forward (pre-norm, QKV projection, causal attention, output
  projection, tanh-GELU MLP, residuals), fp32 and bf16: zyx_dist, torch eager, torch.compile.
- `gpt2`: a 12-layer GPT-2-small-shaped forward (D=768, 12 heads, T=1024, B=8, final layer norm and
  the LM head over the vocabulary padded to 50304, as GPT-2 trainers pad it), fp32 and bf16, the same
  three systems.
- `llama`: one Llama-style block at the shapes of a Llama-3.2-3B layer (D=3072, 24 query heads and 8 key/value
  heads of 128, SwiGLU MLP of 8192; B=4, T=1024): RMS norm, rotary embeddings (halves swapped by slices and a
  concatenation), grouped-query causal attention through a broadcast head axis, fp32 and bf16, the same three
  systems.
- `first`: the first forward of the block, of GPT-2 and of the Llama block (fp32, bf16) in a fresh process (compile + tune into an
  empty cache directory), then again in a second process that finds the disk caches.
zyx_dist times are the wall clock of `realize()` (it blocks until the result exists) in-process on
cuda:0, the graph rebuilt before each timed realize as a user's loop would (the plan cache serves
repeats); the first forward (compile + tune) is reported beside them; "zyx_dist zd.jit" is the wall clock of
a call of the forward wrapped in `zd.jit` (building the graph included, which a replay skips); torch
times are the wall clock of the call followed by `torch.cuda.synchronize()`. JSON goes to
OUT/model_bench.json (OUT: --out, else $OUT, else benchmarks/results).
"""

# ruff: noqa: B023 -- the timed closures run inside the iteration that made them
from __future__ import annotations

import argparse
import datetime
import functools
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

import zyx_dist as zd

ROWS: list[dict] = []
SECTIONS = ("matmul", "subops", "block", "gpt2", "llama", "first")


def stats(times: list[float]) -> dict:
    t = np.asarray(times)
    q1, med, q3 = np.percentile(t, [25, 50, 75])
    return {"median_ms": med * 1e3, "iqr_ms": (q3 - q1) * 1e3, "n": len(times)}


def timed(fn, repeats: int, warmup: int = 2, sync=None) -> dict:
    for _ in range(warmup):
        fn()
        if sync:
            sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t)
    return stats(times)


def timed_zd(build, repeats: int, warmup: int = 2) -> dict:
    """The wall clock of `realize()` alone: each iteration builds a fresh graph (a realized tensor is a
    leaf) before the timer starts, as a training loop would rebuild it."""
    for _ in range(warmup):
        build().realize()
    times = []
    for _ in range(repeats):
        y = build()
        t = time.perf_counter()
        y.realize()
        times.append(time.perf_counter() - t)
    return stats(times)


@functools.cache  # (asked once per row)
def gpu_name() -> str:
    """The GPU the rows were measured on (the lent machines are H200s or H100s), as torch names it."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"


def record(section: str, workload: str, system: str, st: dict | None, *, flops: float = 0, nbytes: float = 0,
           error: float | None = None, note: str = "") -> None:
    row = {"date": datetime.date.today().isoformat(), "machine": gpu_name(), "section": section,
           "workload": workload, "system": system, "error": error, "note": note}
    if st is not None:
        row.update(st)
        sec = st["median_ms"] / 1e3
        if flops:
            row["tflops"] = flops / sec / 1e12
        if nbytes:
            row["gbps"] = nbytes / sec / 1e9
    ROWS.append(row)
    rate = f"{row['tflops']:8.1f} TFLOP/s" if "tflops" in row else f"{row['gbps']:8.0f} GB/s" if "gbps" in row else ""
    shown = f"{st['median_ms']:9.3f} ms (IQR {st['iqr_ms']:.3f})" if st else "        -"
    err = f" err {error:.1e}" if error is not None else ""
    print(f"{section:7s} {workload:34s} {system:16s} {shown} {rate}{err} {note}", flush=True)


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


# ---- the models, written once for both libraries ----------------------------------------------------------

class Ops:
    """The few functions the models need, as zyx_dist or torch spells them."""

    def __init__(self, lib: str):
        self.lib = lib
        if lib == "torch":
            import torch

            self.t = torch

    def layer_norm(self, x, w, b):
        if self.lib == "torch":
            return self.t.nn.functional.layer_norm(x, x.shape[-1:], w, b, 1e-5)
        return zd.layer_norm(x, axis=-1, eps=1e-5) * w + b

    def softmax(self, x):
        return self.t.softmax(x, -1) if self.lib == "torch" else zd.softmax(x, axis=-1)

    def tanh(self, x):
        return self.t.tanh(x) if self.lib == "torch" else zd.tanh(x)

    def gelu(self, x):
        return 0.5 * x * (1 + self.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

    def rms_norm(self, x, w):
        if self.lib == "torch":
            return x * self.t.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
        return x * zd.rsqrt(zd.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w

    def silu(self, x):
        return self.t.nn.functional.silu(x) if self.lib == "torch" else x * zd.sigmoid(x)

    def cat(self, xs):
        return self.t.cat(xs, -1) if self.lib == "torch" else zd.concat(xs, axis=-1)


def block(o: Ops, x, p: dict, heads: int, mask):
    B, T, D = x.shape
    hd = D // heads
    h = o.layer_norm(x, p["ln1_w"], p["ln1_b"])
    qkv = (h @ p["w_qkv"] + p["b_qkv"]).reshape(B, T, 3, heads, hd).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    s = (q @ k.mT) * (1.0 / math.sqrt(hd)) + mask
    a = (o.softmax(s) @ v).permute(0, 2, 1, 3).reshape(B, T, D)
    x = x + (a @ p["w_o"] + p["b_o"])
    h = o.layer_norm(x, p["ln2_w"], p["ln2_b"])
    return x + (o.gelu(h @ p["w_1"] + p["b_1"]) @ p["w_2"] + p["b_2"])


def gpt2(o: Ops, x, layers: list[dict], final: dict, heads: int, mask):
    for p in layers:
        x = block(o, x, p, heads, mask)
    h = o.layer_norm(x, final["ln_w"], final["ln_b"])
    return h @ final["wte_t"]


def llama_block(o: Ops, x, p: dict, heads: int, kv: int, mask):
    """A Llama-style block as its reference code writes it: RMS norm, rotary embeddings on q and k (the halves
    swapped by slices and a concatenation), grouped-query attention (each key/value head serves `heads // kv`
    query heads through a broadcast axis), a SwiGLU MLP; no biases."""
    B, T, D = x.shape
    hd, rep = D // heads, heads // kv

    def rope(t):
        return t * p["cos"] + o.cat([-t[..., hd // 2:], t[..., :hd // 2]]) * p["sin"]

    h = o.rms_norm(x, p["n1"])
    q = rope((h @ p["wq"]).reshape(B, T, heads, hd).permute(0, 2, 1, 3)).reshape(B, kv, rep, T, hd)
    k = rope((h @ p["wk"]).reshape(B, T, kv, hd).permute(0, 2, 1, 3)).reshape(B, kv, 1, T, hd)
    v = (h @ p["wv"]).reshape(B, T, kv, hd).permute(0, 2, 1, 3).reshape(B, kv, 1, T, hd)
    s = (q @ k.mT) * (1.0 / math.sqrt(hd)) + mask
    a = (o.softmax(s) @ v).reshape(B, heads, T, hd).permute(0, 2, 1, 3).reshape(B, T, D)
    x = x + a @ p["wo"]
    h = o.rms_norm(x, p["n2"])
    return x + (o.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]


def llama_params(rng, D: int, heads: int, kv: int, F: int, T: int) -> dict:
    hd = D // heads

    def w(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    angles = np.outer(np.arange(T), 1.0 / 500000.0 ** (np.arange(0, hd, 2) / hd))  # Llama 3's rotary base
    angles = np.concatenate([angles, angles], -1)
    return {"n1": 1 + w(D), "n2": 1 + w(D), "wq": w(D, D), "wk": w(D, kv * hd), "wv": w(D, kv * hd), "wo": w(D, D),
            "w1": w(D, F), "w3": w(D, F), "w2": w(F, D), "cos": np.cos(angles).astype(np.float32),
            "sin": np.sin(angles).astype(np.float32)}


def block_params(rng, D: int) -> dict:
    def w(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {"ln1_w": 1 + w(D), "ln1_b": w(D), "w_qkv": w(D, 3 * D), "b_qkv": w(3 * D), "w_o": w(D, D),
            "b_o": w(D), "ln2_w": 1 + w(D), "ln2_b": w(D), "w_1": w(D, 4 * D), "b_1": w(4 * D),
            "w_2": w(4 * D, D), "b_2": w(D)}


def causal_mask(T: int) -> np.ndarray:
    return np.triu(np.full((T, T), -np.inf, np.float32), 1)


# ---- conversions ---------------------------------------------------------------------------------------

def to_zd(a: np.ndarray, dtype) -> zd.Tensor:
    return zd.tensor(a).astype(dtype).realize() if dtype is not zd.float32 else zd.tensor(a).realize()


def zd_inputs(params: dict, rng, x_shape: tuple, dtype: str) -> tuple:
    """A forward's inputs on the zyx_dist side in `dtype` ("fp32", "bf16", "fp16"): (params, a random x of
    `x_shape`, the causal mask), realized."""
    zdt = zd_dtype(dtype)
    return (_tree(params, lambda a: to_zd(a, zdt)), to_zd(rng.standard_normal(x_shape).astype(np.float32), zdt),
            to_zd(causal_mask(x_shape[1]), zdt))


def to_torch(a: np.ndarray, dtype):
    import torch

    return torch.from_numpy(np.ascontiguousarray(a)).to("cuda").to(dtype)


def torch_dtype(name: str):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def zd_dtype(name: str):
    return {"fp32": zd.float32, "bf16": zd.bfloat16, "fp16": zd.float16}[name]


def as_np(t) -> np.ndarray:
    if isinstance(t, zd.Tensor):
        return t.numpy().astype(np.float32)
    return t.float().cpu().numpy()


# ---- sections ------------------------------------------------------------------------------------------

def run_matmul(args) -> None:
    import torch

    sync = torch.cuda.synchronize
    rng = np.random.default_rng(0)
    for name, n in (("bf16", 8192), ("fp16", 8192), ("fp32", 4096)):
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        za, zb = to_zd(a, zd_dtype(name)), to_zd(b, zd_dtype(name))
        ta, tb = to_torch(a, torch_dtype(name)), to_torch(b, torch_dtype(name))
        flops = 2 * n**3
        ours = timed_zd(lambda: za @ zb, args.repeats)
        theirs = timed(lambda: ta @ tb, args.repeats, sync=sync)
        err = rel_err(as_np((za @ zb).realize())[:512], as_np(ta @ tb)[:512])
        record("matmul", f"{name} {n}^3", "zyx_dist", ours, flops=flops, error=err)
        record("matmul", f"{name} {n}^3", "torch", theirs, flops=flops)


def run_subops(args) -> None:
    import torch

    sync = torch.cuda.synchronize
    rng = np.random.default_rng(1)
    B, T, D, H = 8, 1024, 1024, 16
    hd = D // H
    x = rng.standard_normal((B, T, D)).astype(np.float32)
    W = (rng.standard_normal((D, 3 * D)) * 0.02).astype(np.float32)
    b = (rng.standard_normal(3 * D) * 0.02).astype(np.float32)
    W4 = (rng.standard_normal((D, 4 * D)) * 0.02).astype(np.float32)
    Wo = (rng.standard_normal((D, D)) * 0.02).astype(np.float32)
    qkv = rng.standard_normal((B, T, 3 * D)).astype(np.float32)
    q = rng.standard_normal((B, H, T, hd)).astype(np.float32)
    k = rng.standard_normal((B, H, T, hd)).astype(np.float32)
    p = rng.random((B, H, T, T)).astype(np.float32) / T
    v = rng.standard_normal((B, H, T, hd)).astype(np.float32)
    s = rng.standard_normal((B, H, T, T)).astype(np.float32)
    h4 = rng.standard_normal((B * T, 4 * D)).astype(np.float32)
    mask = causal_mask(T)
    c = 1.0 / math.sqrt(hd)

    def views(t):
        u = t.reshape(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
        return u[0], u[1]

    cases = [
        ("x3d @ W + b", (x, W, b), lambda x, W, b: x @ W + b, 2 * B * T * D * 3 * D, 0),
        ("x2d @ W", (x.reshape(B * T, D), W4), lambda x, W: x @ W, 2 * B * T * D * 4 * D, 0),
        ("q @ k.mT", (q, k), lambda q, k: q @ k.mT, 2 * B * H * T * T * hd, 0),
        ("p @ v", (p, v), lambda p, v: p @ v, 2 * B * H * T * T * hd, 0),
        ("qkv view, q @ k.mT", (qkv,), lambda t: views(t)[0] @ views(t)[1].mT, 2 * B * H * T * T * hd, 0),
        ("heads.permute @ Wo", (q, Wo), lambda a, W: a.permute(0, 2, 1, 3).reshape(B, T, D) @ W, 2 * B * T * D * D, 0),
        ("layer_norm", (x,), None, 0, 2 * x.nbytes),
        ("softmax(s*c + mask)", (s, mask), None, 0, 2 * s.nbytes + mask.nbytes),
        ("tanh-GELU", (h4,), None, 0, 2 * h4.nbytes),
        ("attention core", (q, k, v, mask), None, 4 * B * H * T * T * hd, 0),
    ]
    if args.subops:
        cases = [c for c in cases if any(part in c[0] for part in args.subops.split(","))]
    zo, to = Ops("zd"), Ops("torch")
    for name, arrays, fn, flops, nbytes in cases:
        zin = [to_zd(a, zd.float32) for a in arrays]
        tin = [to_torch(a, torch.float32) for a in arrays]
        if name == "layer_norm":
            zf, tf = (lambda x: zd.layer_norm(x, axis=-1)), (lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:]))
        elif name == "softmax(s*c + mask)":
            zf, tf = (lambda s, m: zd.softmax(s * c + m, axis=-1)), (lambda s, m: torch.softmax(s * c + m, -1))
        elif name == "tanh-GELU":
            zf, tf = zo.gelu, to.gelu
        elif name == "attention core":
            zf = lambda q, k, v, m: zd.softmax((q @ k.mT) * c + m, axis=-1) @ v
            tf = lambda q, k, v, m: torch.softmax((q @ k.mT) * c + m, -1) @ v
        else:
            zf = tf = fn
        try:
            ours = timed_zd(lambda: zf(*zin), args.repeats)
            err = rel_err(as_np(zf(*zin).realize()), as_np(tf(*tin)))
            record("subops", name, "zyx_dist", ours, flops=flops, nbytes=nbytes, error=err)
        except Exception as e:  # noqa: BLE001 -- report and go on
            record("subops", name, "zyx_dist", None, note=f"failed: {type(e).__name__}: {str(e)[:200]}")
        record("subops", name, "torch", timed(lambda: tf(*tin), args.repeats, sync=sync), flops=flops, nbytes=nbytes)
        if name == "attention core":
            for dt in ("fp32", "bf16"):
                tq, tk, tv = (to_torch(a, torch_dtype(dt)) for a in (q, k, v))
                sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
                record("subops", f"attention core {dt}", "torch sdpa", timed(sdpa, args.repeats, sync=sync),
                       flops=flops)
            zin16 = [to_zd(a, zd.bfloat16) for a in (q, k, v)] + [to_zd(mask, zd.bfloat16)]
            tin16 = [to_torch(a, torch.bfloat16) for a in (q, k, v, mask)]
            ours = timed_zd(lambda: zf(*zin16), args.repeats)
            err = rel_err(as_np(zf(*zin16).realize()), as_np(tf(*tin16)))
            record("subops", "attention core bf16", "zyx_dist", ours, flops=flops, error=err)
            record("subops", "attention core bf16", "torch", timed(lambda: tf(*tin16), args.repeats, sync=sync),
                   flops=flops)


def _model(args, section: str, build_params, forward, x_shape, flops: float) -> None:
    import torch

    sync = torch.cuda.synchronize
    rng = np.random.default_rng(2)
    params = build_params(rng)
    x = rng.standard_normal(x_shape).astype(np.float32)
    T = x_shape[1]
    mask = causal_mask(T)
    ref32 = None
    for dt in ("fp32", "bf16"):
        zdt, tdt = zd_dtype(dt), torch_dtype(dt)
        zp = _tree(params, lambda a: to_zd(a, zdt))
        tp = _tree(params, lambda a: to_torch(a, tdt))
        zx, tx = to_zd(x, zdt), to_torch(x, tdt)
        zm, tm = to_zd(mask, zdt), to_torch(mask, tdt)
        zo, to = Ops("zd"), Ops("torch")
        with torch.no_grad():
            eager = lambda: forward(to, tx, tp, tm)
            ref = as_np(eager())
            if dt == "fp32":
                ref32 = ref
            t0 = time.perf_counter()
            first = forward(zo, zx, zp, zm).realize()
            first_s = time.perf_counter() - t0
            got = as_np(first)
            err, err32 = rel_err(got, ref), rel_err(got, ref32)
            ours = timed_zd(lambda: forward(zo, zx, zp, zm), args.repeats)
            record(section, dt, "zyx_dist", ours, flops=flops, error=err,
                   note=f"first forward {first_s:.1f} s; err vs torch fp32 {err32:.1e}")
            # the whole forward as a zd.jit function: the graph is neither built nor walked once captured
            jitted = zd.jit(lambda x, p, m: forward(zo, x, p, m))
            replayed = timed(lambda: jitted(zx, zp, zm), args.repeats, warmup=3)
            same = bool(np.array_equal(as_np(jitted(zx, zp, zm)), got))
            record(section, dt, "zyx_dist zd.jit", replayed, flops=flops, error=err,
                   note=f"{jitted.replays} replays, {jitted.runs} runs; same values as realize(): {same}")
            record(section, dt, "torch eager", timed(eager, args.repeats, sync=sync), flops=flops)
            try:
                compiled = torch.compile(lambda x, p, m: forward(to, x, p, m))
                t0 = time.perf_counter()
                compiled(tx, tp, tm)
                sync()
                note = f"compile {time.perf_counter() - t0:.1f} s"
                record(section, dt, "torch.compile", timed(lambda: compiled(tx, tp, tm), args.repeats, sync=sync),
                       flops=flops, note=note)
            except Exception as e:  # noqa: BLE001 -- report and go on
                record(section, dt, "torch.compile", None, note=f"failed: {type(e).__name__}: {str(e)[:200]}")


def _tree(p, f):
    if isinstance(p, dict):
        return {k: _tree(v, f) for k, v in p.items()}
    if isinstance(p, list):
        return [_tree(v, f) for v in p]
    return f(p)


def block_flops(B, T, D, H) -> float:
    return 2 * B * T * (D * 3 * D + D * D + 8 * D * D) + 4 * B * T * T * D


LLAMA = {"D": 3072, "heads": 24, "kv": 8, "F": 8192, "B": 4, "T": 1024}  # a Llama-3.2-3B layer


def llama_flops(B, T, D, heads, kv, F) -> float:
    return 2 * B * T * (2 * D * D + 2 * D * (D // heads) * kv + 3 * D * F) + 4 * B * T * T * D


def model_of(section: str) -> tuple[int, Callable, Callable]:
    """(D, params(rng) as float32 arrays, forward(ops, x, params, mask)) of `block`, `gpt2` or `llama` at the
    benchmark's sizes (B=8, T=1024; the Llama block's are `LLAMA`)."""
    if section == "llama":
        c = LLAMA
        return c["D"], lambda rng: llama_params(rng, c["D"], c["heads"], c["kv"], c["F"], c["T"]), \
            lambda o, x, p, m: llama_block(o, x, p, c["heads"], c["kv"], m)
    if section == "block":
        D, H = 1024, 16
        return D, lambda rng: block_params(rng, D), lambda o, x, p, m: block(o, x, p, H, m)
    D, H, L, V = 768, 12, 12, 50304  # GPT-2's vocabulary padded to a multiple of 64, as usual

    def params(rng):
        final = {"ln_w": np.ones(D, np.float32), "ln_b": np.zeros(D, np.float32),
                 "wte_t": (rng.standard_normal((D, V)) * 0.02).astype(np.float32)}
        return {"layers": [block_params(rng, D) for _ in range(L)], "final": final}

    return D, params, lambda o, x, p, m: gpt2(o, x, p["layers"], p["final"], H, m)


def run_block(args) -> None:
    B, T, H = 8, 1024, 16
    D, params, forward = model_of("block")
    _model(args, "block", params, forward, (B, T, D), block_flops(B, T, D, H))


def run_llama(args) -> None:
    c = LLAMA
    D, params, forward = model_of("llama")
    _model(args, "llama", params, forward, (c["B"], c["T"], D),
           llama_flops(c["B"], c["T"], D, c["heads"], c["kv"], c["F"]))


def run_gpt2(args) -> None:
    B, T, H, L, V = 8, 1024, 12, 12, 50304
    D, params, forward = model_of("gpt2")
    _model(args, "gpt2", params, forward, (B, T, D), L * block_flops(B, T, D, H) + 2 * B * T * D * V)


FIRST = """
import sys, time, numpy as np
sys.path.insert(0, {here!r})
import model_bench as mb, zyx_dist as zd
zd.init(ray=False, devices=["cuda:0"], config={{"autotune": {{"cache_dir": {cache!r}}}}})
rng = np.random.default_rng(3)
D, params, forward = mb.model_of({model!r})
B = mb.LLAMA["B"] if {model!r} == "llama" else 8
p, x, m = mb.zd_inputs(params(rng), rng, (B, 1024, D), {dtype!r})
t = time.perf_counter(); forward(mb.Ops("zd"), x, p, m).realize(); print("FIRST", time.perf_counter() - t)
"""


def run_first(args) -> None:
    """Each model's first forward (fp32, bf16) in a fresh process with empty caches, then in a second process."""
    for dtype, model in itertools.product(("fp32", "bf16"), ("block", "gpt2", "llama")):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CUPY_CACHE_DIR=os.path.join(cache, "cupy"))
            for label in ("first process (compile + tune)", "second process (disk caches)"):
                code = FIRST.format(here=os.path.dirname(os.path.abspath(__file__)), cache=cache, model=model,
                                    dtype=dtype)
                r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                                   env=env, timeout=900)
                line = [ln for ln in r.stdout.splitlines() if ln.startswith("FIRST")]
                if not line:
                    record("first", f"{model} {dtype} first forward", label, None, note=f"failed: {r.stderr[-300:]}")
                    continue
                secs = float(line[0].split()[1])
                record("first", f"{model} {dtype} first forward", label, {"median_ms": secs * 1e3, "iqr_ms": 0.0, "n": 1})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--subops", default="", help="only the sub-ops whose names contain one of these (comma-separated)")
    args = ap.parse_args()
    wanted = [s for s in args.sections.split(",") if s]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    zd.init(ray=False, devices=[args.device])
    runners = {"matmul": run_matmul, "subops": run_subops, "block": run_block, "gpt2": run_gpt2, "llama": run_llama,
               "first": run_first}
    try:
        for s in wanted:
            try:
                runners[s](args)
            except Exception as e:  # noqa: BLE001 -- one section failing leaves the others
                print(f"section {s} failed: {type(e).__name__}: {str(e)[:500]}", flush=True)
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "model_bench.json"), "w") as f:
                json.dump(ROWS, f, indent=1)
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
