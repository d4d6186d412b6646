"""GPU machine: the tensor-core forms of the fused attention kernel (codegen/attention_tma.py's TMA form in 2
and 3 stages, attention_tc.py's wgmma and mma.sync: the tuner's candidates on Hopper) on the attention core
`softmax(q @ k.mT * c + mask) @ v` with a causal mask tensor, B=8, 16 heads, T=1024, head dim 64 (`--shape B,H,T,D`),
in bfloat16 and float16. Each form is rendered with its option and launched on one worker (prologue, where the form has
one, and attention kernel, as the runtime launches them), its time per launch from CUDA events (median and
interquartile range of 50); torch's `scaled_dot_product_attention(is_causal=True)` beside it in the same
process, also by CUDA events. Each form's result is checked against torch.

    python3 benchmarks/h200/attention_forms.py            # the table
    ncu -k regex:kc_ -c 4 python3 benchmarks/h200/attention_forms.py --ncu --dtypes bfloat16
        # each form once, in FORMS' order (-c 4: the TMA forms, then wgmma's prologue and kernel)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from helpers import run_kernels

import zyx_dist as zd
from zyx_dist.codegen.options import KernelOpts
from zyx_dist.codegen.render import render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.protocol import Alloc, Compile, CopyIn, Free, Launch, Sync
from zyx_dist.runtime.worker import Worker

SHAPE = "8,16,1024,64"  # B, H, T, D
FORMS = {"tma": KernelOpts(wgmma=2, stages=2), "tma s3": KernelOpts(wgmma=2, stages=3), "wgmma": KernelOpts(wgmma=1),
         "mma.sync": KernelOpts()}


def spread(xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=4)
    return f"median {statistics.median(xs) * 1e6:7.1f} us (IQR {(q[2] - q[0]) * 1e6:5.1f})"


def time_form(worker: Worker, kernel, opts: KernelOpts, launches: int) -> list[float]:
    prog = render_kernel(kernel, "cuda_sm90a", opts)
    ids = iter(range(10**6, 2 * 10**6))
    bufs = [next(ids) for _ in kernel.inputs + kernel.outputs]
    cmds = [Alloc(b, max(n.size * n.dtype.itemsize, 1)) for b, n in zip(bufs, kernel.inputs + kernel.outputs)]
    cmds += [CopyIn(b, n.host) for b, n in zip(bufs, kernel.inputs)]
    pid = next(ids)
    launch = Launch(pid, tuple(bufs), prog.gws, prog.lws, tuple(bufs[:len(kernel.inputs)]),
                    tuple(bufs[len(kernel.inputs):]))
    worker.run([*cmds, Compile(pid, prog.source, prog.name), launch, Sync()])
    res = worker.run([launch] * launches + [Sync()])
    worker.run([Free(b) for b in bufs])
    return list(res.kernel_seconds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ncu", action="store_true", help="each form launched once, for Nsight Compute")
    ap.add_argument("--launches", type=int, default=50)
    ap.add_argument("--dtypes", default="bfloat16,float16", help="comma-separated: bfloat16, float16")
    ap.add_argument("--shape", default=SHAPE, help="B,H,T,D (default: %(default)s)")
    args = ap.parse_args()
    B, H, T, D = map(int, args.shape.split(","))
    import torch

    rng = np.random.default_rng(0)
    launches = 1 if args.ncu else args.launches
    with Worker("cuda:0", profile=True) as worker:
        for name, np_dtype, torch_dtype in (("bfloat16", ml_dtypes.bfloat16, torch.bfloat16),
                                            ("float16", np.float16, torch.float16)):
            if name not in args.dtypes.split(","):
                continue
            qkv = [rng.standard_normal((B, H, T, D)).astype(np_dtype) for _ in range(3)]
            mask = np.triu(np.full((T, T), -np.inf, np.float32), 1).astype(np_dtype)
            q, k, v, m = (zd.tensor(x) for x in (*qkv, mask))
            out = zd.softmax((q @ k.mT) * (1 / math.sqrt(D)) + m, axis=-1) @ v
            (kernel,) = kernelize([out.node])
            results = {f: run_kernels(worker, out, lambda _k, o=o: o, "cuda_sm90a").astype(np.float32)
                       for f, o in FORMS.items()}
            tq, tk, tv = (torch.from_numpy(x.astype(np.float32)).to("cuda", torch_dtype) for x in qkv)
            ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True).float().cpu().numpy()
            for f, got in results.items():
                print(f"{name} {f:8s}: max |diff| against torch sdpa {np.abs(got - ref).max():.2e}")
            for f, o in FORMS.items():
                secs = time_form(worker, kernel, o, launches)
                if not args.ncu:
                    print(f"{name} {f:8s} prologue + attention kernel: {spread(secs)}")
            if args.ncu:
                continue
            times = []
            for _ in range(launches + 1):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e-3)
            print(f"{name} torch sdpa(is_causal)       : {spread(times[1:])}")


if __name__ == "__main__":
    main()
