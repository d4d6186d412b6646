"""GPU machine, debugging: run `benchmarks/train_bench.py` (its arguments follow) with every CUDA launch
synchronized, so a kernel that is slow or never returns is named while it runs. Prints each launch over
100 ms and, every 2 s, the launch still running past 3 s; writes the source of each such kernel to
`$OUT/slow-NAME.cu` and the kernels' total times to `$OUT/launch-totals.txt`. This is how the hang of the
training step on the H200 (a warp shuffle not reached by every lane) was found.

    python3 benchmarks/h200/slow_launches.py --embed 256 --layers 4 --heads 4 --block 128 --batch 16 --depths=
"""

from __future__ import annotations

import collections
import os
import runpy
import sys
import threading
import time

from zyx_dist.runtime import cuda as zc

OUT = os.environ.get("OUT", "/tmp")
SOURCES: dict[int, str] = {}
CURRENT: dict = {"prog": None, "t": 0.0, "grid": (0, 0)}
TOTALS: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])
DUMPED: set[str] = set()
_build, _call = zc.CudaBackend._build, zc._call


def build(self, source: str, options: str):
    module = _build(self, source, options)
    SOURCES[id(module)] = source
    return module


def call(prog, grid: int, block: int, args: tuple) -> None:
    import cupy as cp

    CURRENT.update(prog=prog, t=time.perf_counter(), grid=(grid, block))
    _call(prog, grid, block, args)
    cp.cuda.get_current_stream().synchronize()
    seconds = time.perf_counter() - CURRENT["t"]
    CURRENT["prog"] = None
    total = TOTALS[prog.name]
    total[0] += 1
    total[1] += seconds
    if seconds > 0.1:
        print(f"slow launch {prog.name} grid={grid} block={block} {seconds * 1e3:.1f} ms", file=sys.stderr, flush=True)
        dump(prog)


def dump(prog) -> None:
    if prog.name not in DUMPED:
        DUMPED.add(prog.name)
        with open(f"{OUT}/slow-{prog.name[:60]}.cu", "w") as f:
            f.write(SOURCES.get(id(prog.module), "(source not seen)"))


def watch() -> None:
    while True:
        time.sleep(2)
        prog = CURRENT["prog"]
        if prog is not None and time.perf_counter() - CURRENT["t"] > 3:
            print(f"still running {prog.name} grid/block={CURRENT['grid']} for "
                  f"{time.perf_counter() - CURRENT['t']:.1f} s", file=sys.stderr, flush=True)
            dump(prog)
        top = sorted(TOTALS.items(), key=lambda kv: -kv[1][1])[:20]
        with open(f"{OUT}/launch-totals.txt", "w") as f:
            f.writelines(f"{s * 1e3:10.1f} ms {c:6d} x {name}\n" for name, (c, s) in top)


if __name__ == "__main__":
    zc.CudaBackend._build, zc._call = build, call
    threading.Thread(target=watch, daemon=True).start()
    sys.argv = ["train_bench.py", *sys.argv[1:]]
    runpy.run_path(os.path.join(os.path.dirname(__file__), "..", "train_bench.py"), run_name="__main__")
