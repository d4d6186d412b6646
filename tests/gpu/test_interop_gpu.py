"""GPU tier: DLPack between zyx_dist's in-process CUDA worker and CuPy / torch on the same GPU
(API.md section 10): `zd.from_dlpack` adopts the producer's device memory without a copy (the tensor's
buffer is the producer's pointer), `cupy.from_dlpack(x)` / `torch.from_dlpack(x)` view the worker's
buffer in place, and values round-trip exactly. Skips without cupy and a CUDA GPU (and the torch test
without a CUDA build of torch)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import cuda_devices

import zyx_dist as zd

pytestmark = pytest.mark.skipif(cuda_devices() < 1, reason="needs cupy and a CUDA GPU")


@pytest.fixture(scope="module", autouse=True)
def cuda_session():
    zd.shutdown()
    zd.init(ray=False, devices=["cuda:0"])
    yield
    zd.shutdown()


def test_cupy_round_trip_zero_copy():
    import cupy as cp

    a = cp.arange(1 << 20, dtype=cp.float32)
    x = zd.from_dlpack(a)
    assert x.device == "cuda:0" and x.dtype == zd.float32
    assert x.__dlpack_device__() == (2, 0)
    back = cp.from_dlpack(x)  # a view of the adopted buffer: the producer's own memory
    assert back.data.ptr == a.data.ptr
    y = (x * 2 + 1).realize()
    out = cp.from_dlpack(y)
    cp.testing.assert_array_equal(out, a * 2 + 1)
    del x, back
    np.testing.assert_array_equal(y.numpy(), cp.asnumpy(a * 2 + 1))


def test_cupy_export_outlives_the_tensor():
    import cupy as cp

    x = (zd.arange(4096, dtype=zd.float32) * 3).realize()
    view = cp.from_dlpack(x)
    del x
    junk = [zd.full((4096,), 7.0).realize() for _ in range(4)]  # would reuse a freed buffer
    cp.testing.assert_array_equal(view, cp.arange(4096, dtype=cp.float32) * 3)
    del junk


def test_cupy_non_contiguous_and_copy_flags():
    import cupy as cp

    a = cp.arange(64, dtype=cp.int32).reshape(8, 8)[:, ::2]
    np.testing.assert_array_equal(zd.from_dlpack(a).numpy(), cp.asnumpy(a))
    b = cp.arange(16, dtype=cp.float32)
    c = zd.from_dlpack(b, copy=True)  # a host copy, uploaded: later writes to b do not show
    b[0] = 99
    assert float(c[0]) == 0.0


def test_torch_round_trip_zero_copy():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.arange(1 << 16, dtype=torch.float32, device="cuda:0")
    x = zd.from_dlpack(t)
    assert x.device == "cuda:0"
    y = (x + 1).realize()
    back = torch.from_dlpack(y)
    assert back.device.type == "cuda"
    assert torch.equal(back, t + 1)
    assert torch.from_dlpack(x).data_ptr() == t.data_ptr()
