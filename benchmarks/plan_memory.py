"""The peak of live intermediates in a training step's plan, without a device (a script, not a test): builds the
GPT of examples/train_gpt.py at the given widths, its loss and `zd.grad`, kernelizes them as a GPU session would
(split-K on), and walks the kernels in launch order, adding each kernel's outputs (the gradients excepted, which
are results) and taking away what it frees after. The pools round sizes up, so a device holds somewhat more.

    python benchmarks/plan_memory.py [--batch 8 --block 1024 --embed 768 --heads 12 --layers 4 --dtype bfloat16]
"""

from __future__ import annotations

import argparse
import os
import sys
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import train_bench

import zyx_dist as zd
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.graph import ir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("batch", 8), ("block", 1024), ("embed", 768), ("heads", 12), ("layers", 4)]:
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--dtype", default="bfloat16")
    args = ap.parse_args()
    ir.SPLIT_K = True
    gpt = train_bench.load_example()
    cfg = SimpleNamespace(**{k: getattr(args, k) for k in ("batch", "block", "embed", "heads", "layers")})
    data, vocab = train_bench.batches(gpt, cfg, 1)
    dt = zd.dtype(args.dtype)
    params = [zd.tensor(p).astype(dt) for p in gpt.init_params(vocab, cfg)]
    mask = zd.tensor(np.triu(np.full((cfg.block, cfg.block), -1e9, np.float32), 1)).astype(dt)
    x, y = (zd.tensor(a).astype(dt) for a in data[0])
    loss = gpt.loss_fn(params, x, y, mask, cfg)
    targets = [loss.node] + [g.node for g in zd.grad(loss, params)]
    results = {t.id for t in targets}
    live = peak = 0
    kernels = kernelize(targets)
    for k in kernels:
        live += sum(o.size * o.dtype.itemsize for o in k.outputs if o.id not in results)
        peak = max(peak, live)
        live -= sum(o.size * o.dtype.itemsize for o in k.frees_after)
    print(f"{len(kernels)} kernels; peak of live intermediates {peak / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
