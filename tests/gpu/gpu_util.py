"""Helpers of the GPU tier: what the machine has (CUDA GPUs through cupy, an NVIDIA OpenCL device), and
a run of the whole runtime test suite in a subprocess on one device (ZYX_DIST_DEVICES)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def cuda_devices() -> int:
    """How many CUDA devices cupy sees (0 without cupy or a driver)."""
    try:
        import cupy
    except ImportError:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 -- no driver, no device
        return 0


def compute_capability_9() -> bool:
    """Whether CUDA device 0 is a Hopper (compute capability 9.0, where wgmma runs)."""
    if cuda_devices() == 0:
        return False
    import cupy

    return cupy.cuda.Device(0).compute_capability == "90"


def nvidia_opencl_index() -> int | None:
    """The global OpenCL index (zyx_dist's `opencl:N`) of the first NVIDIA OpenCL device, if any."""
    try:
        from zyx_dist.runtime.opencl import list_opencl_devices

        devices = list_opencl_devices()
    except Exception:  # noqa: BLE001 -- no pyopencl or no platform
        return None
    for d in devices:
        if "nvidia" in (d["vendor"] + d["platform"]).lower():
            return d["index"]
    return None


def need_cuda(n: int = 1) -> None:
    pytest.importorskip("cupy")
    have = cuda_devices()
    if have < n:
        pytest.skip(f"needs {n} CUDA GPU(s), cupy sees {have}")


def run_runtime_suite(devices: str, timeout: int = 300) -> None:
    """Run the runtime test suite in a subprocess whose session uses `devices` (ZYX_DIST_DEVICES)."""
    if os.environ.get("ZYX_DIST_GPU_SUITE", "1").strip() in ("0", "false", "off"):
        pytest.skip("ZYX_DIST_GPU_SUITE=0")
    modules = [f"tests/runtime/{m}" for m in ("test_ops.py", "test_reduce.py", "test_movement.py", "test_linalg.py",
                                             "test_creation.py", "test_fusion.py", "test_property.py",
                                             "test_index_checks.py")]
    modules = [m for m in modules if (ROOT / m).exists()]
    if importlib.util.find_spec("hypothesis") is None:  # not on every GPU image
        modules = [m for m in modules if not m.endswith("test_property.py")]
    env = dict(os.environ, ZYX_DIST_DEVICES=devices, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    # tests that name the PoCL session's device ("opencl:0") themselves
    named = ("test_creation_device_keyword", "test_device_none_before_realize_and_repr_does_not_realize",
             "test_stats_shape", "test_zd_realize_several")
    cmd = [sys.executable, "-m", "pytest", "-q", "--maxfail=25", "-p", "no:cacheprovider",
           "-k", " and ".join(f"not {n}" for n in named), *modules]
    try:
        r = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"")[-6000:]
        pytest.fail(f"runtime suite on {devices} did not finish in {timeout} s:\n{out!r}")
    tail = (r.stdout + r.stderr)[-8000:]
    print(tail)
    assert r.returncode == 0, f"runtime suite on {devices} failed:\n{tail}"
