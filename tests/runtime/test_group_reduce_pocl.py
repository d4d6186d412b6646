"""In-group reductions (one work-group per output, a tree in local memory): the cost model picks them on
GPUs for long reduce loops into few outputs; here they are also picked for PoCL (as if it were a GPU) so
it runs them against NumPy. (The CUDA text is checked with nvcc in tests/unit/test_group_reduce.py.)"""

import dataclasses

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.codegen import options


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
