"""Driver side: measures a device's peak memory bandwidth and compute with two short kernels sent
through the ordinary protocol (device-side timers), for the scheduler's cost model and
`zd.devices()`. Takes a `run(batch) -> BatchResult` function for one worker and the worker's info;
gives (peak_gflops, peak_gbps). Results are cached per device model (and driver version) in memory and as
JSON under the autotune cache directory, so a second process does not measure again. The file's name and
contents carry `PROBE_FORMAT` (a change to the probe kernels or the file's layout bumps it, so old figures
are never read); writes merge under the file's lock, so processes probing different devices at once keep
each other's figures.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .._util import read_json, update_json
from ..protocol import Alloc, BatchResult, Compile, CopyIn, CopyOut, Free, Launch, Recv, Send, Sync, TransferRef

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
_BW_SRC_CUDA = """extern "C" __global__ void probe_bw(const float4* __restrict__ a, float4* __restrict__ b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; float4 v = a[i];
  b[i] = make_float4(v.x * 2.0f + 1.0f, v.y * 2.0f + 1.0f, v.z * 2.0f + 1.0f, v.w * 2.0f + 1.0f);
}"""
_FL_SRC_CUDA = f"""extern "C" __global__ void probe_flops(float* __restrict__ out) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x0 = i * 1e-6f, x1 = (i + 1) * 1e-6f, x2 = (i + 2) * 1e-6f, x3 = (i + 3) * 1e-6f;
  float y0 = x0 + 0.5f, y1 = x1 + 0.5f, y2 = x2 + 0.5f, y3 = x3 + 0.5f;
  for (int k = 0; k < {_FL_ITERS}; k++) {{
    x0 = x0 * 0.999f + 1e-3f; x1 = x1 * 0.999f + 1e-3f; x2 = x2 * 0.999f + 1e-3f; x3 = x3 * 0.999f + 1e-3f;
    y0 = y0 * 0.999f + 1e-3f; y1 = y1 * 0.999f + 1e-3f; y2 = y2 * 0.999f + 1e-3f; y3 = y3 * 0.999f + 1e-3f;
  }}
  out[i] = x0 + x1 + x2 + x3 + y0 + y1 + y2 + y3;
}}"""
_SOURCES = {"opencl": (_BW_SRC, _FL_SRC), "cuda": (_BW_SRC_CUDA, _FL_SRC_CUDA)}
PROBE_FORMAT = 2  # of the probe kernels and of probe-v<N>.json: {"format": N, "peaks": {model key: [GFLOP/s, GB/s]}}
_memory: dict[str, tuple[float, float]] = {}
# (GFLOP/s, GB/s) when nothing is measured; the reference device (NumPy, one op at a time) is never probed
_NOMINAL = {"opencl": (10.0, 5.0), "cuda": (10_000.0, 1_000.0), "reference": (1.0, 1.0)}


def _cache_file(cache_dir: str) -> Path:
    return Path(os.path.expanduser(cache_dir)) / f"probe-v{PROBE_FORMAT}.json"


def _peaks_of(data: object) -> dict:
    """The peaks of a probe file this version wrote; {} for anything else (missing, damaged, another format)."""
    if isinstance(data, dict) and data.get("format") == PROBE_FORMAT and isinstance(data.get("peaks"), dict):
        return data["peaks"]
    return {}


def _valid(peaks: object) -> bool:
    return isinstance(peaks, list) and len(peaks) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in peaks)


def measure(run: Callable[[list], BatchResult], key: str, cache_dir: str | None,
            dialect: str = "opencl", memory: int = 1 << 40) -> tuple[float, float]:
    """(peak_gflops, peak_gbps) of the device behind `run`, measured once per device model `key`, with
    kernels in the device's `dialect` ("opencl" or "cuda")."""
    if key in _memory:
        return _memory[key]
    if dialect not in _SOURCES:
        return _NOMINAL[dialect]
    peaks = _peaks_of(read_json(_cache_file(cache_dir))).get(key) if cache_dir else None
    if _valid(peaks):  # else missing or damaged: measure again
        _memory[key] = (float(peaks[0]), float(peaks[1]))
        return _memory[key]
    ids = range(-10, 0)  # negative ids never collide with the driver's
    a, b, c, p_bw, p_fl = ids[:5]
    bw_src, fl_src = _SOURCES[dialect]
    # GPUs: larger than their L2 cache, so the figure is memory bandwidth; always within the pool limit
    n = _BW_N * (16 if dialect == "cuda" else 1)
    while n > 4096 and 8 * n + 4 * _FL_N > memory // 2:
        n //= 2
    setup = [Alloc(a, n * 4), Alloc(b, n * 4), Alloc(c, _FL_N * 4),
             Compile(p_bw, bw_src, "probe_bw"), Compile(p_fl, fl_src, "probe_flops")]
    bw = Launch(p_bw, (a, b), (n // 4,), (64,), (a,), (b,))
    fl = Launch(p_fl, (c,), (_FL_N,), (64,), (), (c,))
    res = run(setup + [bw, fl, bw, fl, bw, fl, Sync(), Free(a), Free(b), Free(c)])
    secs = res.kernel_seconds
    if len(secs) < 6 or min(secs) <= 0:  # the probe could not run: nominal figures, not cached
        return _NOMINAL[dialect]
    gbps = 2 * n * 4 / min(secs[0::2]) / 1e9
    gflops = _FL_N * _FL_ITERS * 16 / min(secs[1::2]) / 1e9
    _memory[key] = (gflops, gbps)
    if cache_dir:
        def merge(current: object) -> dict:  # another process may have added other models meanwhile
            peaks = {k: v for k, v in _peaks_of(current).items() if _valid(v)}
            peaks[key] = [gflops, gbps]
            return {"format": PROBE_FORMAT, "peaks": peaks}

        update_json(_cache_file(cache_dir), merge)
    return _memory[key]


def links(backend, devices: list[str], new_id: Callable[[], int],
          nccl: dict[str, int | None] | None = None,
          kinds: dict[str, object] | None = None) -> dict[tuple[str, str], tuple[float, float]]:
    """(latency seconds, bytes per second) of the transfer path between every ordered pair of workers,
    measured by moving a small and a large buffer through the same steps the scheduler emits: through
    the host (4 MiB), or by NCCL Send/Recv in one step (64 MiB) where both workers have an NCCL rank.
    Pairs that take the same path get one figure, the best measured among them: the same source kind and
    destination kind (`kinds`: worker -> its device model and node; so both directions between two
    workers of one kind) and NCCL or not. Their copies are the same, on other devices of one model or
    mirrored, so differences are noise (a busy host), and unequal figures for equal paths make the
    scheduler move inputs toward whichever measured fastest (kernel times are averaged over devices of
    one kind in scheduler.py for the same reason)."""
    nccl = nccl or {}
    out = _measure_links(backend, devices, new_id, nccl)
    if not kinds:
        return out
    best: dict[tuple, tuple[float, float]] = {}
    groups = {}
    for (src, dst), (lat, bps) in out.items():
        if src not in kinds or dst not in kinds:
            continue
        peer = nccl.get(src) is not None and nccl.get(dst) is not None
        group = groups[(src, dst)] = (kinds[src], kinds[dst], peer)  # one kind: mirrored pairs alike
        b = best.get(group)
        best[group] = (lat, bps) if b is None else (min(b[0], lat), max(b[1], bps))
    for pair, group in groups.items():
        out[pair] = best[group]
    return out


def _measure_links(backend, devices: list[str], new_id: Callable[[], int],
                   nccl: dict[str, int | None]) -> dict[tuple[str, str], tuple[float, float]]:
    out = {}
    for src in devices:
        for dst in devices:
            if src == dst:
                continue
            ranks = nccl.get(src), nccl.get(dst)
            peer = ranks[0] is not None and ranks[1] is not None
            big = 1 << 26 if peer else 1 << 22
            times = {}
            for nbytes in (1 << 12, big):
                best = float("inf")
                for _ in range(3 if peer else 2):  # NCCL connects a pair on its first transfer
                    a, b, t = new_id(), new_id(), new_id()
                    if peer:
                        steps = [{src: [Alloc(a, nbytes)], dst: [Alloc(b, nbytes)]},  # contents do not matter
                                 {src: [Send(a, ranks[1], nbytes), Sync(), Free(a)],
                                  dst: [Recv(b, ranks[0], nbytes), Sync(), Free(b)]}]
                    else:
                        steps = [{src: [Alloc(a, nbytes), CopyIn(a, np.zeros(nbytes, np.uint8)), Sync()]},
                                 {src: [CopyOut(a, "uint8", (nbytes,), export=t), Free(a)]},
                                 {dst: [Alloc(b, nbytes), CopyIn(b, TransferRef(t)), Sync(), Free(b)]}]
                    backend.run_steps(steps[:1])
                    start = time.perf_counter()
                    backend.run_steps(steps[1:])
                    best = min(best, time.perf_counter() - start)
                times[nbytes] = best
            bps = (big - (1 << 12)) / max(times[big] - times[1 << 12], 1e-9)
            out[(src, dst)] = (times[1 << 12], bps)
    return out
