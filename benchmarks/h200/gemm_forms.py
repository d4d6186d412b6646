"""GPU machine: the wgmma GEMM (codegen/gemm_wgmma.py) on half-type matmuls with several of the tuner's tile
and stage options, each one's kernel time from CUDA events (median and IQR of the launches), beside torch's
matmul (cuBLAS) timed the same way in the same process. Each result is checked against torch. (Two warp-specialized
forms were timed here and reverted: one copying with cp.async at d368238,
benchmarks/results/gemm-forms-h200-2026-12-04-*.txt; one copying both operands by TMA at 6b4a91b,
benchmarks/results/gemm-forms-specialized-tried-h100-2026-12-07-6b4a91b.txt.)

    python3 benchmarks/h200/gemm_forms.py [--sizes 8192x8192x8192,8192x3072x768] [--launches 20] [--forms "t256 s4,..."]
        [--layouts nn,tn,nt]  (tn: A stored (k, m) and read as its .T, a weight's gradient x.T @ g; nt: B stored
        (n, k), q @ k.mT)   sizes BxMxNxK: a batch of B products (attention's scores)
    ncu -k regex:kc_ --section WarpStateStats python3 benchmarks/h200/gemm_forms.py --sizes 8192x8192x8192 \
        --launches 2 --dtypes bfloat16 --forms "t256 s4"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention_forms import spread, time_form
from helpers import run_kernels

import zyx_dist as zd
from zyx_dist.codegen.gemm_wgmma import TILES
from zyx_dist.codegen.options import KernelOpts
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.runtime.worker import Worker

FORMS = {f"{'tma ' if w == 2 else ''}t{TILES[t]} s{st}{' deep' if p else ''}{' staged' if c else ''}":
         KernelOpts(wgmma=w, tile=t, stages=st, prefetch=p, cache=c)
         for w, t, st, p, c in ((1, 0, 4, 0, 0), (1, 1, 4, 0, 0), (1, 0, 3, 0, 0), (1, 1, 5, 0, 0), (1, 0, 4, 0, 1),
                                (2, 0, 4, 0, 0), (2, 1, 4, 0, 0), (2, 1, 3, 1, 0), (2, 0, 4, 0, 1),
                                (2, 1, 3, 0, 0), (2, 1, 3, 0, 1), (2, 2, 3, 0, 0), (2, 2, 3, 0, 1),
                                (2, 3, 4, 0, 0), (2, 3, 4, 0, 1))}  # the tuner's (and two tried beside them)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192x8192x8192,8192x3072x768")  # M x N x K
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--forms", default="", help="only the forms whose names contain one of these (comma-separated)")
    ap.add_argument("--dtypes", default="bfloat16,float16")
    ap.add_argument("--layouts", default="nn", help="nn: A (m, k) row-major; tn: A stored (k, m), read as its .T; nt: B stored (n, k)")
    args = ap.parse_args()
    forms = {f: o for f, o in FORMS.items() if not args.forms or any(x in f for x in args.forms.split(","))}
    import torch

    rng = np.random.default_rng(0)
    with Worker("cuda:0", profile=True) as worker:
        for size, layout in ((s, t) for s in args.sizes.split(",") for t in args.layouts.split(",")):
            *bat, m, n, k = map(int, size.split("x"))
            flops = 2 * m * n * k * (bat[0] if bat else 1)
            for name, np_dtype, torch_dtype in (("bfloat16", ml_dtypes.bfloat16, torch.bfloat16),
                                                ("float16", np.float16, torch.float16)):
                if name not in args.dtypes.split(","):
                    continue
                a = rng.standard_normal((*bat, *((k, m) if layout == "tn" else (m, k)))).astype(np_dtype)
                b = rng.standard_normal((*bat, *((n, k) if layout == "nt" else (k, n)))).astype(np_dtype)
                za, zb = zd.tensor(a), zd.tensor(b)
                out = (za.mT if layout == "tn" else za) @ (zb.mT if layout == "nt" else zb)
                (kernel,) = kernelize([out.node])
                ta, tb = (torch.from_numpy(x.astype(np.float32)).to("cuda", torch_dtype) for x in (a, b))
                ta, tb = ta.mT if layout == "tn" else ta, tb.mT if layout == "nt" else tb
                ref = (ta @ tb).float().cpu().numpy()
                scale = np.abs(ref).max()
                for form, opts in forms.items():
                    got = run_kernels(worker, out, lambda _k, o=opts: o, "cuda_sm90a").astype(np.float32)
                    secs = time_form(worker, kernel, opts, args.launches)
                    med = float(np.median(secs))
                    print(f"{size} {layout} {name} {form:20s}: {spread(secs)}, {flops / med / 1e12:6.1f} TFLOP/s; "
                          f"max |diff| against torch {np.abs(got - ref).max() / scale:.1e} of the largest", flush=True)
                times = []
                for _ in range(args.launches + 1):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    ta @ tb
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end) * 1e-3)
                med = float(np.median(times[1:]))
                print(f"{size} {layout} {name} {'torch (cuBLAS)':20s}: {spread(times[1:])}, {flops / med / 1e12:6.1f} TFLOP/s",
                      flush=True)


if __name__ == "__main__":
    main()
