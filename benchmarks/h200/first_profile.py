"""GPU machine: where the first forward of a new model goes (compile, tune, plan), as a cProfile. Builds
model_bench's `block` or `gpt2` in fp32 in a fresh process with empty kernel and tuning caches, realizes it once
under cProfile, and prints the largest functions by cumulative and by own time; the profile goes to PATH.

    CUPY_CACHE_DIR=$(mktemp -d) python3 benchmarks/h200/first_profile.py gpt2 $OUT/gpt2-first.prof
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import model_bench as mb

import zyx_dist as zd


def main() -> None:
    section, path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(3)
    B, T = 8, 1024
    D, build, forward = mb.model_of(section)
    params = build(rng)
    with tempfile.TemporaryDirectory() as cache:
        zd.init(ray=False, devices=["cuda:0"], config={"autotune": {"cache_dir": cache}})
        try:
            zp = mb._tree(params, lambda a: zd.tensor(a).realize())
            zx = zd.tensor(rng.standard_normal((B, T, D)).astype(np.float32)).realize()
            zm = zd.tensor(mb.causal_mask(T)).realize()
            out = forward(mb.Ops("zd"), zx, zp, zm)
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            prof.enable()
            out.realize()
            prof.disable()
            print(f"FIRST {section} fp32 {time.perf_counter() - t0:.2f} s; stats {zd.stats()}", flush=True)
            t0 = time.perf_counter()
            forward(mb.Ops("zd"), zx, zp, zm).realize()
            print(f"SECOND {section} fp32 {time.perf_counter() - t0:.3f} s", flush=True)
        finally:
            zd.shutdown()
    prof.dump_stats(path)
    st = pstats.Stats(prof)
    st.sort_stats("cumulative").print_stats(45)
    st.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
