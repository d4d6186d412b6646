"""Interop benchmark (a script, not a test): the zero-copy paths of API.md section 10 beside the copies
they replace, timed in one run (median and IQR of --repeats runs).

    python benchmarks/interop_bench.py [--mib 256] [--repeats 20] [--json out.json]

Here (the CPU OpenCL device, in-process; `ZYX_DIST_DEVICES=opencl-cpu:1@pocl` for PoCL): NumPy ->
tensor with `zd.from_dlpack` (the worker adopts the array's memory) against `zd.tensor(a).realize()` (a
driver copy, then an upload), and tensor -> NumPy with `np.from_dlpack(x)` (a read-only view of the
mapped buffer) against `x.numpy()` (a copy out). On a GPU machine with cupy (the integrator runs it there; it skips that part cleanly without
cupy): a 1 GiB CuPy array into an in-process CUDA worker and back, `zd.from_dlpack` / `cupy.from_dlpack`
against the host round trip (`cupy.asnumpy` + `zd.tensor` + `x.numpy()` + `cupy.asarray`).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

import zyx_dist as zd


def _stats(f, repeats: int) -> dict:
    f()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    q1, med, q3 = np.percentile(times, [25, 50, 75])
    return {"median_s": float(med), "iqr_s": float(q3 - q1), "min_s": float(min(times)), "rounds": repeats}


def _row(name: str, nbytes: int, ours: dict, base: dict) -> dict:
    gbs = nbytes / ours["median_s"] / 1e9
    print(f"{name:34s}\n    from_dlpack {1e3 * ours['median_s']:9.3f} ms (IQR {1e3 * ours['iqr_s']:.3f})   "
          f"with a copy {1e3 * base['median_s']:9.3f} ms (IQR {1e3 * base['iqr_s']:.3f})   "
          f"x{base['median_s'] / ours['median_s']:.1f}, {gbs:.0f} GB/s equivalent")
    return {"workload": name, "bytes": nbytes, "zero_copy": ours, "copy": base}


def _page_aligned(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + 4096, np.uint8)
    off = (-raw.ctypes.data) % 4096
    return raw[off:off + nbytes].view(np.float32)


def cpu_rows(mib: int, repeats: int) -> list[dict]:
    """The default CPU device (Intel's OpenCL CPU runtime where it works, else PoCL; ZYX_DIST_DEVICES=
    opencl-cpu:1@pocl picks PoCL). NumPy memory as NumPy allocates it, and page-aligned: PoCL uses either
    in place, Intel's runtime only the aligned one (it copies the other when the buffer is made). On a GPU
    machine the default device would be the GPU, so the CPU device is asked for by name."""
    try:
        zd.init(ray=False, devices={"opencl-cpu": 1})
    except zd.DeviceError as e:
        print(f"CPU part skipped: {e}")
        return []
    dev = zd.devices()[0]
    print(f"device: {dev.name} ({dev.device_name})")
    nbytes = mib * (1 << 20)
    plain = np.random.default_rng(0).random(nbytes // 4, dtype=np.float32)
    aligned = _page_aligned(nbytes)
    aligned[:] = plain
    rows = []
    for label, a in (("numpy memory", plain), ("page-aligned", aligned)):
        in_place = zd.from_dlpack(a).device is not None  # adopted: realized at once, no upload
        rows.append(_row(f"numpy -> {dev.name} buffer, {label} ({mib} MiB), "
                         f"{'in place' if in_place else 'uploaded'}", a.nbytes,
                         _stats(lambda a=a: zd.from_dlpack(a).realize(), repeats),
                         _stats(lambda a=a: zd.tensor(a).realize(), repeats)))
        rows[-1]["in_place"] = in_place
    x = (zd.from_dlpack(plain) * 1).realize()
    rows.append(_row(f"{dev.name} buffer -> numpy ({mib} MiB), np.from_dlpack vs x.numpy()", plain.nbytes,
                     _stats(lambda: np.from_dlpack(x), repeats), _stats(lambda: x.numpy(), repeats)))
    assert np.array_equal(np.from_dlpack(x), plain)
    for r in rows:
        r["device"] = dev.device_name
    zd.shutdown()
    return rows


def cuda_rows(repeats: int) -> list[dict]:
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as e:  # noqa: BLE001 -- no cupy, no driver, no GPU: this part is for the GPU machine
        print(f"CUDA part skipped: {e}")
        return []
    zd.init(ray=False, devices=["cuda:0"])
    n = (1 << 30) // 4
    a = cp.arange(n, dtype=cp.float32)
    cp.cuda.Device(0).synchronize()

    def zero_copy():
        x = zd.from_dlpack(a)
        back = cp.from_dlpack(x)
        return back

    def host_round_trip():
        x = zd.tensor(cp.asnumpy(a)).realize()
        return cp.asarray(x.numpy())

    rows = [_row("cupy -> cuda:0 worker -> cupy (1 GiB)", a.nbytes, _stats(zero_copy, repeats),
                 _stats(host_round_trip, max(3, repeats // 4)))]
    assert bool((zero_copy() == a).all())
    zd.shutdown()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = cpu_rows(args.mib, args.repeats) + cuda_rows(args.repeats)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": platform.node(), "system": platform.platform(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
