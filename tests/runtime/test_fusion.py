"""Runtime tests of fusion (ARCHITECTURE.md, Kernelizer): counted through `zd.stats()["kernels_launched"]`
after `zd.reset_stats()`. An elementwise chain is one kernel, `x @ y` (with a fused epilogue) is one,
softmax at most three, movement ops cost none, shared work in `zd.realize(a, b)` is done once, realized
tensors are never recomputed, and repeated graph shapes hit the kernel cache."""

from __future__ import annotations

import numpy as np
from helpers import assert_close, data

import zyx_dist as zd


def launched(*xs) -> int:
    """Kernels launched by realizing `xs` together."""
    zd.reset_stats()
    zd.realize(*xs)
    return zd.stats()["kernels_launched"]


def leaf(shape, seed=0, dtype=np.float32):
    a = data(shape, dtype, seed=seed)
    return zd.tensor(a).realize(), a


def test_elementwise_chain_is_one_kernel():
    x, a = leaf((16, 32))
    y = ((((x * 2 + 1).exp() - 3).abs().sqrt() / 4).tanh() + x).sigmoid()
    y = zd.maximum(y, 0.25) * zd.where(x > 0, 1.0, -1.0) + x.sin().square()
    assert launched(y) == 1
    a64 = a.astype(np.float64)
    w = np.tanh(np.sqrt(np.abs(np.exp(a64 * 2 + 1) - 3)) / 4) + a64
    w = 1 / (1 + np.exp(-w))
    want = np.maximum(w, 0.25) * np.where(a > 0, 1.0, -1.0) + np.sin(a64) ** 2
    assert_close(y, want, zd.float32, loose=10)


def test_elementwise_chain_with_broadcast_and_casts_is_one_kernel():
    x, a = leaf((8, 1))
    r, b = leaf((1, 12), seed=1)
    y = ((x + r).astype(zd.float16).astype(zd.float32) * 3 - r).relu().astype(zd.int32) + 1
    assert launched(y) == 1
    want = (np.maximum((a + b).astype(np.float16).astype(np.float32) * 3 - b, 0)).astype(np.int32) + 1
    assert_close(y, want, zd.int32)


def test_matmul_is_one_kernel():
    x, a = leaf((8, 16))
    w, b = leaf((16, 4), seed=1)
    y = x @ w
    assert launched(y) == 1
    assert_close(y, a @ b, zd.float32, loose=10)


def test_matmul_with_epilogue_is_one_kernel():
    x, a = leaf((8, 16))
    w, b = leaf((16, 4), seed=1)
    bias, c = leaf((4,), seed=2)
    y = zd.relu(x @ w + bias)
    assert launched(y) == 1
    assert_close(y, np.maximum(a @ b + c, 0), zd.float32, loose=10)


def test_softmax_at_most_three_kernels():
    x, a = leaf((6, 10))
    y = zd.softmax(x, axis=1)
    n = launched(y)
    assert 1 <= n <= 3
    e = np.exp(a - a.max(1, keepdims=True))
    assert_close(y, e / e.sum(1, keepdims=True), zd.float32, loose=4)


def _count_separately(make) -> int:
    a, b = make()
    zd.reset_stats()
    a.realize()
    b.realize()
    return zd.stats()["kernels_launched"]


def test_realize_together_shares_matmul():
    x, xa = leaf((8, 16))
    w, wa = leaf((16, 8), seed=1)

    def make():
        c = x @ w
        return c + 1, c * 2

    separate = _count_separately(make)
    p, q = make()
    together = launched(p, q)
    assert together < separate
    assert_close(p, xa @ wa + 1, zd.float32, loose=10)
    assert_close(q, (xa @ wa) * 2, zd.float32, loose=10)


def test_realize_together_shares_reduce():
    x, xa = leaf((8, 16))

    def make():
        s = x.sum(1)
        return s + 1, s * 2

    separate = _count_separately(make)
    p, q = make()
    together = launched(p, q)
    assert together < separate
    assert together == 1
    assert_close(p, xa.sum(1) + 1, zd.float32, loose=4)
    assert_close(q, xa.sum(1) * 2, zd.float32, loose=4)


def test_movement_ops_cost_no_kernel():
    x, a = leaf((4, 6))
    views = [
        (x.reshape(3, 8) + 1, a.reshape(3, 8) + 1),
        (x.permute(1, 0) + 1, a.T + 1),
        (zd.pad(x, ((1, 2), (3, 0))) + 1, np.pad(a, ((1, 2), (3, 0))) + 1),
        (zd.flip(x, 1) + 1, np.flip(a, 1) + 1),
        (x[1:, ::-2] + 1, a[1:, ::-2] + 1),
        (zd.flip(zd.pad(x.T.reshape(2, 12), 1), 0)[:, 2:].expand(3, 4, 12) + 1,
         np.broadcast_to(np.flip(np.pad(a.T.reshape(2, 12), 1), 0)[:, 2:], (3, 4, 12)) + 1),
    ]
    for y, want in views:
        assert launched(y) == 1
        assert_close(y, want, zd.float32)


def test_realized_tensor_is_not_recomputed():
    x, a = leaf((8, 8))
    y = (x @ x).exp()
    assert launched(y) == 1
    z = y + 1
    assert launched(z) == 1  # only the add: y's matmul is not run again
    w = (y * 2).sum()
    assert launched(w) == 1
    assert_close(z, np.exp(a @ a) + 1, zd.float32, loose=10)


def test_reading_realized_tensor_launches_nothing():
    x, a = leaf((5, 5))
    y = (x * 2).realize()
    zd.reset_stats()
    for _ in range(3):
        y.numpy()
        np.asarray(y)
        y.tolist()
    y.realize()
    zd.realize(y)
    assert zd.stats()["kernels_launched"] == 0
    zd.reset_stats()
    x.numpy()  # a realized leaf
    zd.tensor(a).numpy()  # a host leaf
    assert zd.stats()["kernels_launched"] == 0


def test_kernel_cache_hits_on_repeated_graph():
    def run(seed):
        x, _ = leaf((7, 9), seed=seed)
        return ((x * 3).exp() + x).sum(0)

    run(0).realize()  # compile once
    zd.reset_stats()
    before = zd.stats()["kernel_cache_hits"]
    for s in (1, 2):
        y = run(s)
        y.realize()
        assert_close(y, (np.exp(data((7, 9), np.float32, seed=s).astype(np.float64) * 3)
                         + data((7, 9), np.float32, seed=s)).sum(0), zd.float32, loose=4)
    stats = zd.stats()
    assert stats["kernel_cache_hits"] >= before + 2
    assert stats["kernels_launched"] == 2


def test_stats_shape():
    s = zd.stats()
    for key in ("kernels_launched", "kernel_cache_hits", "bytes_transferred", "transfers", "spills", "recoveries"):
        assert isinstance(s[key], int) and s[key] >= 0
    assert isinstance(s["bytes_in_use"], dict) and "opencl:0" in s["bytes_in_use"]
    zd.reset_stats()
    assert zd.stats()["kernels_launched"] == 0


def test_residual_stream_is_stored_by_each_matmul_epilogue():
    """x = x + (layer_norm(x) @ w + b), six times: each matmul kernel stores the residual sum (bias and
    residual in its epilogue), so each layer is two kernels that each read one activation, however deep the
    stack (the sum used to be recomputed from every earlier product in each layer norm)."""
    layers = 6
    x, a = leaf((16, 32))
    want = a.astype(np.float64)
    y = x
    for i in range(layers):
        w, wa = leaf((32, 32), seed=2 * i + 1)
        b, ba = leaf((32,), seed=2 * i + 2)
        y = y + (zd.layer_norm(y, axis=-1) @ w + b)
        mu = want.mean(-1, keepdims=True)
        ln = (want - mu) / np.sqrt(want.var(-1, keepdims=True) + 1e-5)
        want = want + (ln @ wa + ba)
    assert launched(y) == 2 * layers
    assert_close(y, want, zd.float32, loose=50)
