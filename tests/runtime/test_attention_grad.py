"""The backward products of an attention that recompute their weights (graph/attention_grad.py): with the limits
of a session whose devices all have tensor cores, dQ, dK and dV are each one kernel that recomputes the scores,
the probabilities and dS from q, k, v, dO and the row vectors, and nothing T x T is stored. Here on the OpenCL
CPU device those kernels run as plain loops (the tensor-core renderer is CUDA's: tests/gpu/test_attention_gpu.py
runs it), which checks the kernelizer's decision: the gradients equal NumPy's for each mask, tails past the
blocks, cross-attention and both half types. Without tensor cores the plan is as before.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile

import ml_dtypes
import numpy as np
import pytest
from helpers import attention_grads

import zyx_dist as zd
from zyx_dist.codegen import attention_grad
from zyx_dist.codegen.render import render_kernel
from zyx_dist.engine import session as zsession
from zyx_dist.fuse.kernelize import Limits, kernelize

pytestmark = pytest.mark.usefixtures("tuning_off")

CASES = [("bfloat16", "where", 70, 70, 16), ("bfloat16", "causal", 64, 64, 32), ("float16", "per_batch", 40, 72, 16),
         ("bfloat16", "none", 33, 50, 16)]


def _graph(dtype, mask: str, Tq: int, Tk: int, D: int, seed: int = 3):
    np_dtype = np.dtype(getattr(ml_dtypes, dtype) if dtype == "bfloat16" else dtype)
    B, H = 2, 3
    grads, want = attention_grads(np.random.default_rng(seed), np_dtype, mask, B, H, Tq, Tk, D, 0.25)
    return grads, want, B * H * Tq * Tk


@pytest.mark.parametrize("dtype,mask,Tq,Tk,D", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}x{c[3]}-d{c[4]}" for c in CASES])
def test_attention_backward_products_recompute_their_weights(dtype, mask, Tq, Tk, D, monkeypatch):
    plans = zsession.current().plans
    monkeypatch.setattr(plans, "limits", dataclasses.replace(plans.limits, grad_heads=16))
    grads, want, square = _graph(dtype, mask, Tq, Tk, D)
    kernels, _, _ = zsession.current().plan([g.node for g in grads])
    assert not any(x.size == square for kern in kernels for x in kern.outputs), "nothing T x T is stored"
    products = [kern for kern in kernels if attention_grad.match(kern) is not None]
    assert len(products) == 3
    for kern in products:  # the tensor-core kernel in CUDA (compiled by tests/unit/test_cuda_render.py)
        assert "mma.sync" in render_kernel(kern, "cuda").source
    zd.realize(*grads)
    for name, got, exp in zip("qkv", grads, want):
        np.testing.assert_allclose(got.numpy().astype(np.float64), exp, rtol=0.05, atol=0.05, err_msg=f"d{name}")


def test_without_tensor_cores_the_backward_stores_its_probabilities():
    """Elsewhere (plain loops would recompute each weight once per output column) the plan stores p and dS."""
    grads, _, square = _graph("bfloat16", "causal", 64, 64, 16)
    nodes = [g.node for g in grads]
    assert sum(x.size == square for kern in kernelize(nodes) for x in kern.outputs) == 2
    assert not any(x.size == square for kern in kernelize(nodes, Limits(grad_heads=16)) for x in kern.outputs)


def test_weights_requested_too_are_stored_and_nothing_recomputes_them():
    """dS requested beside the gradients is stored: the products that read it, and dV, whose p dS also reads, keep
    the plan of old (their weights have a reader outside them)."""
    from zyx_dist.graph.attention_grad import find
    from zyx_dist.graph.ir import toposort

    grads, _, _ = _graph("bfloat16", "none", 32, 32, 16)
    found = [g for n in toposort([g.node for g in grads]) if (g := find(n)) is not None]
    assert len(found) == 3
    ds = next(g.weights for g in found if len(g.contractions) == 2)
    kernels = kernelize([g.node for g in grads] + [ds], Limits(grad_heads=16))
    assert any(x is ds for kern in kernels for x in kern.outputs)
    assert not any(attention_grad.match(kern) for kern in kernels)


NVCC = shutil.which("nvcc")
COMPILED = [("bfloat16", "causal", 200, 200, 64), ("float16", "where", 64, 130, 128), ("bfloat16", "none", 96, 64, 32)]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_accepts_the_backward_products():
    """The tensor-core kernels of dQ, dK and dV, for head dims 32 to 128 (the loop's block halves past 64), tails,
    cross-attention lengths and both half types, compile for sm_80 and sm_90a, spilling at most a few bytes (ptxas
    may keep a kernel under 128 registers at the cost of one spilled word: 8 bytes, seen in dV's with tails)."""
    sources = {}
    for dtype, mask, Tq, Tk, D in COMPILED:
        grads, _, _ = _graph(dtype, mask, Tq, Tk, D)
        for kern in kernelize([g.node for g in grads], Limits(param_bytes=4096, grad_heads=16)):
            if attention_grad.match(kern) is not None:
                sources[f"{dtype}_{mask}_{Tq}x{Tk}_d{D}_{len(sources)}"] = render_kernel(kern, "cuda").source
    assert len(sources) == 3 * len(COMPILED)
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in sources.items():
            path = os.path.join(tmp, f"{name}.cu")
            with open(path, "w") as f:
                f.write(text)
            for arch in ("sm_80", "sm_90a"):
                r = subprocess.run([NVCC, "-cubin", f"-arch={arch}", "-Xptxas", "-v", path, "-o", path + ".cubin"],
                                   capture_output=True, text=True, check=False, timeout=600)
                assert r.returncode == 0, f"{name}\n{r.stderr[:3000]}"
                spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", r.stderr)]
                assert spills and max(spills) <= 16, f"{name} {arch} spills:\n{r.stderr}"


def test_sessions_recompute_the_products_where_asked(monkeypatch):
    """Unset, no device recomputes; =1 every CUDA device with mma.sync on half types at any head dim in 16s; =wgmma
    only Hopper (wgmma's form, head dims of whole 64s); never OpenCL; a misspelt value is a ConfigError."""
    from zyx_dist.engine.limits import grad_heads

    def at(cc: str, backend: str = "cuda") -> int:
        return grad_heads({"backend": backend, "compute_capability": cc})

    monkeypatch.delenv("ZYX_DIST_ATTENTION_GRAD", raising=False)
    assert (at("9.0"), at("8.0")) == (0, 0)
    monkeypatch.setenv("ZYX_DIST_ATTENTION_GRAD", "1")
    assert (at("9.0"), at("8.6"), at("7.0"), at("9.0", "opencl")) == (16, 16, 0, 0)
    monkeypatch.setenv("ZYX_DIST_ATTENTION_GRAD", "wgmma")
    assert (at("9.0"), at("8.0"), at("10.0"), at("9.0", "opencl")) == (64, 0, 0, 0)
    monkeypatch.setenv("ZYX_DIST_ATTENTION_GRAD", "off")
    assert at("9.0") == 0
    monkeypatch.setenv("ZYX_DIST_ATTENTION_GRAD", "wgmm")
    with pytest.raises(zd.ConfigError, match="ZYX_DIST_ATTENTION_GRAD: 'wgmm'"):
        at("9.0")
    with zsession.set_aside():  # a session refuses it as it starts, and a later one starts as usual
        with pytest.raises(zd.ConfigError, match="use 1, wgmma or 0"):
            zd.init(ray=False)
        monkeypatch.delenv("ZYX_DIST_ATTENTION_GRAD")
        with zd.init(ray=False):
            np.testing.assert_array_equal((zd.arange(4) * 2).numpy(), np.arange(4) * 2)


def test_at_grad_heads_64_only_products_at_whole_64_head_dims_recompute():
    """Limits(grad_heads=64): a head dim of 64 recomputes (nothing T x T stored), one of 32 keeps the stored p and
    dS, with the same gradients' kernels otherwise."""
    for D, recomputed in ((64, True), (32, False)):
        grads, _, square = _graph("bfloat16", "causal", 96, 96, D)  # (T != D: sizes tell p apart)
        kernels = kernelize([g.node for g in grads], Limits(grad_heads=64))
        assert sum(x.size == square for kern in kernels for x in kern.outputs) == (0 if recomputed else 2), D
        assert sum(attention_grad.match(kern) is not None for kern in kernels) == (3 if recomputed else 0), D


def test_split_k_leaves_the_products_whole_where_they_recompute(monkeypatch):
    """Few heads and long rows: split-K (on in GPU sessions) would cut each product's sum over 1024 queries or keys
    into partial GEMMs, which read p and dS stored T x T. Where the products recompute (the session's grad_heads in
    ir.WHOLE_SUMS), the sums stay whole, each product is one kernel and the gradients equal NumPy's; without it the
    split and the stored weights are as before."""
    from functools import partial

    from zyx_dist.graph import ir
    from zyx_dist.graph.attention_grad import recomputes

    plans = zsession.current().plans
    monkeypatch.setattr(plans, "limits", dataclasses.replace(plans.limits, grad_heads=16))
    monkeypatch.setattr(ir, "SPLIT_K", True)
    for heads in (0, 16):
        monkeypatch.setattr(ir, "WHOLE_SUMS", partial(recomputes, head_multiple=heads) if heads else None)
        grads, want = attention_grads(np.random.default_rng(5), np.dtype(ml_dtypes.bfloat16), "causal", 1, 1, 1024,
                                      1024, 16, 0.25)
        kernels, _, _ = zsession.current().plan([g.node for g in grads])
        square = sum(x.size == 1024 * 1024 for kern in kernels for x in kern.outputs)
        products = sum(attention_grad.match(kern) is not None for kern in kernels)
        assert (square, products) == ((0, 3) if heads else (2, 0)), heads
    zd.realize(*grads)
    for name, got, exp in zip("qkv", grads, want):
        np.testing.assert_allclose(got.numpy().astype(np.float64), exp, rtol=0.05, atol=0.05, err_msg=f"d{name}")
