"""GPU tier, the OpenCL backend on the NVIDIA OpenCL platform (marker `gpu`; skipped when pyopencl lists
no NVIDIA device: setup.sh makes the NVIDIA ICD visible next to PoCL). The same representative ops as the
CUDA tier on an in-process session on that device, and the whole runtime suite on it in a subprocess,
so both dialects of the renderer run on the same GPU."""

from __future__ import annotations

import pytest
from gpu_cases import CASES, check
from gpu_util import nvidia_opencl_index, run_runtime_suite

import zyx_dist as zd

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def device() -> str:
    index = nvidia_opencl_index()
    if index is None:
        pytest.skip("no NVIDIA OpenCL device (is the NVIDIA ICD visible? source .devbundle/setup.sh)")
    return f"opencl:{index}"


@pytest.fixture(scope="module")
def session(device):
    zd.shutdown()
    s = zd.init(ray=False, devices=[device])
    yield s
    zd.shutdown()


def test_device(session, device):
    (d,) = zd.devices()
    assert d.name == device and d.backend == "opencl" and d.device_name
    assert d.fp64


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_ops(session, case):
    check(case)


def test_runtime_suite_on_nvidia_opencl(device):
    run_runtime_suite(device)
