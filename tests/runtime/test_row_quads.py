"""Row kernels in quads (`KernelOpts(group=g, cache=1, vec=4)`): each work-item keeps its part of the row in
registers, read and written four neighbours at a time (OpenCL's vload4/vstore4 here; CUDA's 16-byte and 8-byte
forms are compiled by nvcc in tests/unit/test_cuda_render.py and run in tests/gpu/test_group_reduce_gpu.py).
Softmax with NaN and all -inf rows, its gradient, layer norm and RMS norm with weights, an int mask read element
by element beside the quads, rows shorter than one pass of the work-group, and rows whose length is no multiple
of 4 (the plain cached form then), each against NumPy on the CPU device at every work-group size the tuner offers.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_kernels

import zyx_dist as zd
from zyx_dist.codegen import options
from zyx_dist.codegen.options import KernelOpts
from zyx_dist.codegen.render import facts, render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.runtime.worker import Worker

RNG = np.random.default_rng(11)
GROUPS = (32, 64, 128, 256)


@pytest.fixture(scope="module")
def worker():
    with Worker("opencl:0") as w:
        yield w


def quads(group: int):
    """The quad form for the graph's row kernels, defaults elsewhere."""
    return lambda k: KernelOpts(group=group, cache=1, vec=4) if k.row else None


def row_source(t: zd.Tensor, group: int) -> str:
    (k,) = [k for k in kernelize([t.node]) if k.row]
    return render_kernel(k, "opencl", KernelOpts(group=group, cache=1, vec=4)).source


def np_softmax(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("cols", [1024, 96, 520])
def test_softmax_in_quads_against_numpy(worker, group, cols):
    x = (RNG.standard_normal((37, cols)) * 4).astype(np.float32)
    x[3, 5] = np.nan
    x[4] = -np.inf
    x[5, 7] = np.inf
    t = zd.softmax(zd.tensor(x), axis=-1)
    assert "vload4" in row_source(t, group) and "vstore4" in row_source(t, group)
    np.testing.assert_allclose(run_kernels(worker, t, quads(group)), np_softmax(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("group", GROUPS)
def test_softmax_gradient_in_quads_against_numpy(worker, group):
    p, dp = (RNG.random((3, 50, 256)).astype(np.float32) for _ in range(2))
    tp, tdp = zd.tensor(p), zd.tensor(dp)
    t = tp * (tdp - (tp * tdp).sum(-1, keepdims=True))
    want = p * (dp - (p * dp).sum(-1, keepdims=True))
    np.testing.assert_allclose(run_kernels(worker, t, quads(group)), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("group", GROUPS)
def test_layer_norm_and_rms_norm_in_quads_against_numpy(worker, group):
    x = RNG.standard_normal((4, 9, 512)).astype(np.float32) * 3 + 1
    w, b = RNG.standard_normal(512).astype(np.float32), RNG.standard_normal(512).astype(np.float32)
    tx = zd.tensor(x)
    mean = tx.mean(-1, keepdims=True)
    var = ((tx - mean) ** 2).mean(-1, keepdims=True)
    ln = (tx - mean) / zd.sqrt(var + 1e-5) * zd.tensor(w) + zd.tensor(b)
    m = x.mean(-1, keepdims=True)
    want = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(run_kernels(worker, ln, quads(group)), want, rtol=1e-4, atol=1e-5)
    rms = tx / zd.sqrt((tx * tx).mean(-1, keepdims=True) + 1e-6) * zd.tensor(w)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(run_kernels(worker, rms, quads(group)), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("group", GROUPS)
def test_an_int_input_beside_the_quads_against_numpy(worker, group):
    """An int32 mask read at the row's own element has no vector form: it is read element by element at
    each slot's column, beside the float32 quads."""
    x = RNG.standard_normal((21, 384)).astype(np.float32)
    keep = (RNG.random((21, 384)) > 0.3).astype(np.int32)
    keep[:, 0] = 1
    t = zd.softmax(zd.where(zd.tensor(keep) == 1, zd.tensor(x), -np.inf), axis=-1)
    np.testing.assert_allclose(run_kernels(worker, t, quads(group)), np_softmax(np.where(keep == 1, x, -np.inf)),
                               rtol=1e-5, atol=1e-7)


def test_rows_of_no_whole_quads_keep_the_element_form(worker):
    """Rows of 1022: no quad form among the candidates, and a forced one renders the cached element form."""
    x = RNG.standard_normal((13, 1022)).astype(np.float32)
    t = zd.softmax(zd.tensor(x), axis=-1)
    (k,) = kernelize([t.node])
    shape = facts(k, "cuda", gpu=True)
    assert not shape.quads and all(o.vec == 1 for o in options.candidates(shape))
    assert "vload4" not in row_source(t, 64)
    np.testing.assert_allclose(run_kernels(worker, t, quads(64)), np_softmax(x), rtol=1e-5, atol=1e-7)


def test_gpu_candidates_of_whole_quad_rows_put_the_quads_first():
    t = zd.softmax(zd.tensor(np.zeros((64, 1024), np.float32)), axis=-1)
    (k,) = kernelize([t.node])
    cands = options.candidates(facts(k, "cuda", gpu=True))
    firsts = [(o.group, o.vec, o.cache) for o in cands[:4]]
    assert firsts == [(64, 4, 1), (128, 4, 1), (32, 4, 1), (256, 4, 1)]
    assert all(o.vec == 1 for o in options.candidates(facts(k, "opencl", gpu=False))[:1])
