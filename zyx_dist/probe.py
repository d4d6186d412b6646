"""Driver side: measures a device's peak memory bandwidth and compute with two short kernels sent
through the ordinary protocol (device-side timers), for the scheduler's cost model and
`zd.devices()`. Takes a `run(batch) -> BatchResult` function for one worker and the worker's info;
gives (peak_gflops, peak_gbps). Results are cached per device model in memory and as JSON under the
autotune cache directory, so a second process does not measure again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import time

import numpy as np

from .protocol import Alloc, BatchResult, Compile, CopyIn, CopyOut, Free, Launch, Sync, TransferRef

_BW_N = 1 << 22  # floats per buffer: 16 MiB in, 16 MiB out
_FL_N = 1 << 16  # work-items of the compute probe
_FL_ITERS = 256
_BW_SRC = """__kernel void probe_bw(__global const float4* restrict a, __global float4* restrict b) {
  int i = get_global_id(0); b[i] = a[i] * 2.0f + 1.0f;
}"""
_FL_SRC = f"""__kernel void probe_flops(__global float* restrict out) {{
  int i = get_global_id(0);
  float4 x = (float4)(i, i + 1, i + 2, i + 3) * 1e-6f, y = x + 0.5f, m = (float4)(0.999f), c = (float4)(1e-3f);
  for (int k = 0; k < {_FL_ITERS}; k++) {{ x = x * m + c; y = y * m + c; }}
  out[i] = x.x + x.y + x.z + x.w + y.x + y.y + y.z + y.w;
}}"""
_memory: dict[str, tuple[float, float]] = {}


def _cache_file(cache_dir: str) -> Path:
    return Path(os.path.expanduser(cache_dir)) / "probe.json"


def measure(run: Callable[[list], BatchResult], key: str, cache_dir: str | None) -> tuple[float, float]:
    """(peak_gflops, peak_gbps) of the device behind `run`, measured once per device model `key`."""
    if key in _memory:
        return _memory[key]
    disk: dict = {}
    if cache_dir:
        try:
            disk = json.loads(_cache_file(cache_dir).read_text())
            if key in disk:
                _memory[key] = tuple(disk[key])  # type: ignore[assignment]
                return _memory[key]
        except (OSError, ValueError):
            disk = {}
    ids = range(-10, 0)  # negative ids never collide with the driver's
    a, b, c, p_bw, p_fl = ids[:5]
    setup = [Alloc(a, _BW_N * 4), Alloc(b, _BW_N * 4), Alloc(c, _FL_N * 4),
             Compile(p_bw, _BW_SRC, "probe_bw"), Compile(p_fl, _FL_SRC, "probe_flops")]
    bw = Launch(p_bw, (a, b), (_BW_N // 4,), (64,), (a,), (b,))
    fl = Launch(p_fl, (c,), (_FL_N,), (64,), (), (c,))
    res = run(setup + [bw, fl, bw, fl, bw, fl, Sync(), Free(a), Free(b), Free(c)])
    secs = res.kernel_seconds
    if len(secs) < 6 or min(secs) <= 0:
        return (0.0, 0.0)
    gbps = 2 * _BW_N * 4 / min(secs[0::2]) / 1e9
    gflops = _FL_N * _FL_ITERS * 16 / min(secs[1::2]) / 1e9
    _memory[key] = (gflops, gbps)
    if cache_dir:
        try:
            disk[key] = [gflops, gbps]
            path = _cache_file(cache_dir)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(disk, indent=1))
        except OSError:
            pass  # a read-only cache directory only costs a new measurement next time
    return _memory[key]


def links(backend, devices: list[str], new_id: Callable[[], int]) -> dict[tuple[str, str], tuple[float, float]]:
    """(latency seconds, bytes per second) of the transfer path between every ordered pair of workers,
    measured by moving a small and a 4 MiB buffer through the same steps the scheduler emits."""
    out = {}
    for src in devices:
        for dst in devices:
            if src == dst:
                continue
            times = {}
            for nbytes in (1 << 12, 1 << 22):
                best = float("inf")
                for _ in range(2):
                    a, b, t = new_id(), new_id(), new_id()
                    steps = [{src: [Alloc(a, nbytes), CopyIn(a, np.zeros(nbytes, np.uint8)), Sync()]},
                             {src: [CopyOut(a, "uint8", (nbytes,), export=t), Free(a)]},
                             {dst: [Alloc(b, nbytes), CopyIn(b, TransferRef(t)), Sync(), Free(b)]}]
                    backend.run_steps(steps[:1])
                    start = time.perf_counter()
                    backend.run_steps(steps[1:])
                    best = min(best, time.perf_counter() - start)
                times[nbytes] = best
            bps = ((1 << 22) - (1 << 12)) / max(times[1 << 22] - times[1 << 12], 1e-9)
            out[(src, dst)] = (times[1 << 12], bps)
    return out
