"""GPU tier: fused attention against NumPy on CUDA (float32, float16, bfloat16; causal, additive float
mask, no mask; lengths that are not multiples of the key block; a permuted qkv view) and on NVIDIA
OpenCL (float32), through an in-process session on each device."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from gpu_util import cuda_devices, nvidia_opencl_index
from helpers import ref_attention

import zyx_dist as zd
from zyx_dist.codegen import attention
from zyx_dist.fuse.kernelize import kernelize

BF = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(13)


def _check(device: str, dtype, masked: str, B=2, H=3, T=200, D=64, view=False):
    session = zd.init(ray=False, devices=[device])
    try:
        scale = 1 / math.sqrt(D)
        if view:
            qkv = RNG.standard_normal((B, T, 3 * H * D)).astype(dtype)
            t = zd.tensor(qkv).reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
            q, k, v = t[0], t[1], t[2]
            r = qkv.astype(np.float32).reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
            qn, kn, vn = r[0], r[1], r[2]
        else:
            qn, kn, vn = (RNG.standard_normal((B, H, T, D)).astype(dtype) for _ in range(3))
            q, k, v = (zd.tensor(x) for x in (qn, kn, vn))
            qn, kn, vn = (x.astype(np.float32) for x in (qn, kn, vn))
        mask = {"none": None, "causal": np.triu(np.full((T, T), -np.inf, np.float32), 1),
                "float": RNG.standard_normal((B, 1, T, T)).astype(np.float32)}[masked]
        s = (q @ k.mT) * scale
        if mask is not None:
            s = s + zd.tensor(mask.astype(dtype))
            mask = mask.astype(dtype).astype(np.float32)
        out = zd.softmax(s, axis=-1) @ v
        ks = kernelize([out.node])
        assert len(ks) == 1 and attention.match(ks[0]) is not None
        got = out.numpy().astype(np.float32)
        exp = ref_attention(qn, kn, vn, scale, mask)
        tol = 2e-4 if dtype == np.float32 else 4e-3 if dtype == np.float16 else 2e-2
        np.testing.assert_allclose(got, exp, rtol=tol, atol=tol)
    finally:
        zd.shutdown()
        del session


@pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("masked", ["none", "causal", "float"])
def test_cuda_attention(dtype, masked):
    _check("cuda:0", dtype, masked)


@pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")
def test_cuda_attention_from_a_qkv_view_and_head_dim_128():
    _check("cuda:0", np.float32, "causal", view=True)
    _check("cuda:0", BF, "causal", B=1, H=2, T=130, D=128)


@pytest.mark.skipif(nvidia_opencl_index() is None, reason="no NVIDIA OpenCL device")
def test_nvidia_opencl_attention():
    _check(f"opencl:{nvidia_opencl_index()}", np.float32, "causal")
