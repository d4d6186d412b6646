"""GPU machine: every candidate of the tuner (codegen/options.py) for the row kernels of a training step's
attention, on bfloat16 or float32 score rows (8, 12, 1024, 1024): softmax's forward (max, exp, sum, divide) and its
backward from the probabilities (p * (dp - sum(p * dp))); and a layer norm with weight and bias over rows of the
last axis of `--norm-shape` (issue 14's (8, 1024, 1024)). Each candidate's kernel time from CUDA events (median
and IQR of the launches) with the bandwidth its bytes give, so a slow row kernel can be told apart as a tuner's
pick or a template's limit.

    python3 benchmarks/h200/row_forms.py [--shape 8,12,1024,1024] [--norm-shape 8,1024,1024] [--dtypes bfloat16,float32]
        [--launches 20] [--causal] [--forms softmax,softmax grad,layer norm]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention_forms import spread, time_form

import zyx_dist as zd
from zyx_dist.codegen import options
from zyx_dist.codegen.render import facts
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.runtime.worker import Worker


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="8,12,1024,1024")
    ap.add_argument("--norm-shape", default="8,1024,1024")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--causal", action="store_true", help="score rows as a causal step has them: -1e9 above the "
                    "diagonal (is a kernel's time in the step, slower than alone, the data's?)")
    ap.add_argument("--forms", default="softmax,softmax grad,layer norm")
    args = ap.parse_args()
    shape = tuple(int(x) for x in args.shape.split(","))
    norm_shape = tuple(int(x) for x in args.norm_shape.split(","))
    rng = np.random.default_rng(0)
    with Worker("cuda:0", profile=True) as worker:
        for name in args.dtypes.split(","):
            np_dtype = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
            scores = rng.standard_normal(shape)
            if args.causal:
                scores = scores + np.triu(np.full(shape[-2:], -1e9), 1)
            s, dp = zd.tensor(scores.astype(np_dtype)), zd.tensor(rng.standard_normal(shape).astype(np_dtype))
            p = zd.softmax(s, axis=-1)
            p_in = zd.tensor(rng.random(shape).astype(np_dtype))
            x = zd.tensor(rng.standard_normal(norm_shape).astype(np_dtype))
            w, b = (zd.tensor(rng.standard_normal(norm_shape[-1:]).astype(np_dtype)) for _ in range(2))
            mean = x.mean(-1, keepdims=True)
            norm = (x - mean) / zd.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * w + b
            forms = {"softmax": (p, 2), "softmax grad": (p_in * (dp - (p_in * dp).sum(-1, keepdims=True)), 3),
                     "layer norm": (norm, 2)}
            for form, (t, tensors) in forms.items():
                if form not in args.forms.split(","):
                    continue
                (kernel,) = kernelize([t.node])
                nbytes = tensors * t.size * np.dtype(np_dtype).itemsize
                for opts in options.candidates(facts(kernel, "cuda_sm90a")):
                    secs = time_form(worker, kernel, opts, args.launches)
                    med = float(np.median(secs))
                    print(f"{name} {form:13s} {opts.tag():24s}: {spread(secs)}, {nbytes / med / 1e12:5.2f} TB/s",
                          flush=True)


if __name__ == "__main__":
    main()
