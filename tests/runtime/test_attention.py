"""Fused attention against NumPy on PoCL: `softmax(q @ k^T * scale + mask) @ v` written with the public API
runs as one kernel (the scores never stored) for fp32 and the half types, with and without a mask (causal
through an additive -inf mask or `zd.where`, an additive float mask, broadcast or per batch), for
sequence lengths that are not multiples of the key block, cross-attention (queries and keys of
different lengths), q/k/v read through a permuted qkv view, and an epilogue on the output."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from helpers import ref_attention

import zyx_dist as zd
from zyx_dist.codegen import attention
from zyx_dist.codegen.render import render_kernel
from zyx_dist.fuse.kernelize import kernelize

BF = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(5)


def one_attention_kernel(t: zd.Tensor) -> None:
    ks = kernelize([t.node])
    assert len(ks) == 1, [k.shape for k in ks]
    assert attention.match(ks[0]) is not None
    assert "Ks[" in render_kernel(ks[0]).source


def causal(tq, tk):
    return np.triu(np.full((tq, tk), -np.inf, np.float32), 1 + tk - tq)


@pytest.mark.parametrize("B,H,Tq,Tk,D,masked", [
    (2, 2, 40, 40, 16, "none"), (2, 2, 40, 40, 16, "causal"), (2, 2, 40, 40, 16, "float"),
    (1, 3, 70, 70, 64, "causal"), (2, 1, 30, 50, 32, "float"), (2, 1, 30, 50, 32, "causal"),
    (1, 2, 100, 100, 8, "none"), (1, 1, 33, 65, 128, "causal")])
def test_attention_fp32(B, H, Tq, Tk, D, masked):
    q, k, v = (RNG.standard_normal((B, H, t, D)).astype(np.float32) for t in (Tq, Tk, Tk))
    scale = 1 / math.sqrt(D)
    mask = {"none": None, "causal": causal(Tq, Tk),
            "float": RNG.standard_normal((B, 1, Tq, Tk)).astype(np.float32)}[masked]
    s = (zd.tensor(q) @ zd.tensor(k).mT) * scale
    if mask is not None:
        s = s + zd.tensor(mask)
    out = zd.softmax(s, axis=-1) @ zd.tensor(v)
    one_attention_kernel(out)
    np.testing.assert_allclose(out.numpy(), ref_attention(q, k, v, scale, mask), rtol=1e-4, atol=1e-5)


def test_causal_through_where_and_an_output_epilogue():
    B, H, T, D = 2, 2, 45, 16
    q, k, v = (RNG.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    keep = np.tril(np.ones((T, T), bool))
    s = zd.where(zd.tensor(keep), (zd.tensor(q) @ zd.tensor(k).mT) * 0.25, -math.inf)
    out = zd.softmax(s, axis=-1) @ zd.tensor(v) * 2.0 + 1.0
    one_attention_kernel(out)
    np.testing.assert_allclose(out.numpy(), ref_attention(q, k, v, 0.25, causal(T, T)) * 2 + 1, rtol=1e-4,
                               atol=1e-5)


def test_qkv_from_a_permuted_view():
    B, T, H, D = 2, 37, 3, 16
    qkv = RNG.standard_normal((B, T, 3 * H * D)).astype(np.float32)
    t = zd.tensor(qkv).reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
    out = zd.softmax((t[0] @ t[1].mT) * 0.25 + zd.tensor(causal(T, T)), axis=-1) @ t[2]
    one_attention_kernel(out)
    r = qkv.reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
    np.testing.assert_allclose(out.numpy(), ref_attention(r[0], r[1], r[2], 0.25, causal(T, T)), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("dtype,tol", [(np.float16, 2e-3), (BF, 1.5e-2)], ids=["float16", "bfloat16"])
def test_attention_half_types(dtype, tol):
    B, H, T, D = 2, 2, 50, 32
    q, k, v = (RNG.standard_normal((B, H, T, D)).astype(dtype) for _ in range(3))
    mask = causal(T, T).astype(dtype)
    out = zd.softmax((zd.tensor(q) @ zd.tensor(k).mT) * 0.125 + zd.tensor(mask), axis=-1) @ zd.tensor(v)
    one_attention_kernel(out)
    assert out.dtype == zd.dtype(dtype)
    f = [x.astype(np.float32) for x in (q, k, v, mask)]
    np.testing.assert_allclose(out.numpy().astype(np.float32), ref_attention(f[0], f[1], f[2], 0.125, f[3]),
                               rtol=tol, atol=tol)


def test_scores_used_elsewhere_are_not_fused():
    q, k, v = (RNG.standard_normal((1, 1, 20, 8)).astype(np.float32) for _ in range(3))
    s = zd.tensor(q) @ zd.tensor(k).mT
    p = zd.softmax(s, axis=-1)
    out = p @ zd.tensor(v)
    ks = kernelize([out.node, p.node])
    assert len(ks) > 1
    got_out, got_p = zd.realize(out, p)
    np.testing.assert_allclose(got_out.numpy(), ref_attention(q, k, v, 1.0), rtol=1e-4, atol=1e-5)
    e = np.exp(q @ np.swapaxes(k, -1, -2) - (q @ np.swapaxes(k, -1, -2)).max(-1, keepdims=True))
    np.testing.assert_allclose(got_p.numpy(), e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_causal_mask_from_arange_comparison():
    B, H, T, D = 1, 2, 50, 16
    q, k, v = (RNG.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    i = zd.arange(T)
    s = zd.where(i.reshape(T, 1) >= i.reshape(1, T), (zd.tensor(q) @ zd.tensor(k).mT) * 0.25, -math.inf)
    out = zd.softmax(s, axis=-1) @ zd.tensor(v)
    one_attention_kernel(out)
    np.testing.assert_allclose(out.numpy(), ref_attention(q, k, v, 0.25, causal(T, T)), rtol=1e-4, atol=1e-5)


def test_split_k_leaves_a_long_single_head_attention_fused(monkeypatch):
    """p @ v over 2048 keys into one head's 2048 x 64 is a long contraction into few tiles, which split-K
    (graph/ir.py, on in GPU sessions) would cut; a factor computing an exp near its top (the probabilities)
    keeps it whole, so the attention stays one fused kernel. The weight-gradient shape still splits."""
    from zyx_dist.codegen import gemm
    from zyx_dist.graph import ir

    monkeypatch.setattr(ir, "SPLIT_K", True)
    T, D = 2048, 64
    rng = np.random.default_rng(9)
    q, k, v = (zd.tensor(rng.standard_normal((1, 1, T, D)).astype(np.float32)) for _ in range(3))
    mask = zd.tensor(np.triu(np.full((T, T), -np.inf, np.float32), 1))
    ks = kernelize([(zd.softmax(q @ k.mT * D ** -0.5 + mask) @ v).node])
    assert len(ks) == 1 and attention.match(ks[0]) is not None
    x, g = (zd.tensor(rng.standard_normal((T, 256)).astype(np.float32)) for _ in range(2))
    assert [gemm.match(kk) is not None for kk in kernelize([(x.T @ zd.relu(g)).node])] == [True, False]
