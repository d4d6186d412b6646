"""In-group reductions (one work-group per output, a tree in local memory): the cost model picks them on
GPUs for long reduce loops into few outputs; here they are also picked for PoCL (as if it were a GPU) so
it runs them against NumPy, and the CUDA text is checked with nvcc where it is installed."""

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.codegen import options
from zyx_dist.codegen.render import CUDA, OPENCL, render_kernel
from zyx_dist.fuse.kernelize import kernelize


@pytest.fixture
def grouped(monkeypatch):
    as_gpu = options.candidates
    monkeypatch.setattr(options, "candidates", lambda s: as_gpu(dataclasses.replace(s, gpu=True)))
    zd.shutdown()
    zd.init(ray=False)
    yield
    zd.shutdown()
    zd.init(ray=False)


def test_group_reductions_match_numpy_on_pocl(grouped):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 1000)).astype(np.float32)
    X[3, 7] = np.nan
    x = zd.tensor(X)
    e = np.exp(X - X.max(1, keepdims=True))
    np.testing.assert_allclose(zd.softmax(x, axis=1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(x.sum(1).numpy(), X.sum(1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(zd.argmax(x, 1).numpy(), X.argmax(1))
    assert np.isnan(x.max(1).numpy()[3]) and x.min(1).numpy()[0] == X[0].min()
    b = zd.tensor(rng.random(300) > 0.5)
    assert bool(b.any().numpy()) and not bool((b & ~b).any().numpy())
    src = zd.explain(x.sum(1)).kernels[0].source
    assert "__local" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src and "if (lid == 0)" in src


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_group_reduction_compiles(tmp_path):
    x = zd.tensor(np.ones((8, 4096), np.float32)).node
    k = kernelize([zd.Tensor(x).max(1).node])[0]
    src = render_kernel(k, CUDA).source
    assert "__shared__" in src and "__syncthreads();" in src
    assert "__local" not in render_kernel(k, OPENCL).source  # PoCL keeps its work-item loops
    f = tmp_path / "k.cu"
    f.write_text(src)
    subprocess.run(["nvcc", "--ptx", "-arch=sm_90", "-x", "cu", str(f), "-o", str(tmp_path / "k.ptx")], check=True)
