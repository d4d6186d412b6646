"""GPU tier: the GEMM templates against NumPy on CUDA (tensor cores for float16/bfloat16, the float32
template) and on NVIDIA OpenCL, at every shape class (tails, batched, broadcast batch, `q @ k.mT` on a
permuted qkv view, 3-D @ 2-D with a bias+relu epilogue, transposed operands, per-element operands) and
with every tile option the tuner may pick."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from gpu_util import compute_capability_9, cuda_devices, nvidia_opencl_index
from helpers import run_kernels
from training import NpAdam

import zyx_dist as zd
from zyx_dist.codegen import gemm, gemm_tc
from zyx_dist.codegen.dialects import DIALECTS
from zyx_dist.codegen.options import KernelOpts
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.runtime.worker import Worker

BF = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(11)


def _heads(t):
    return t.reshape(2, 80, 3, 3, 64).permute(2, 0, 3, 1, 4)


def _cases():
    B, T, H, D = 2, 80, 3, 64
    qkv = RNG.standard_normal((B, T, 3 * H * D)).astype(np.float32)
    a, b = RNG.standard_normal((200, 72)).astype(np.float32), RNG.standard_normal((72, 136)).astype(np.float32)
    x3, w, bias = (RNG.standard_normal((3, 50, 64)).astype(np.float32), RNG.standard_normal((64, 96)).astype(np.float32),
                   RNG.standard_normal(96).astype(np.float32))
    c, d = RNG.standard_normal((1, 3, 48, 40)).astype(np.float32), RNG.standard_normal((2, 1, 40, 24)).astype(np.float32)
    at = RNG.standard_normal((64, 130)).astype(np.float32)
    return [
        ("tails", [a, b], lambda t: t[0] @ t[1], lambda n: n[0] @ n[1]),
        ("qk_view", [qkv], lambda t: _heads(t[0])[0] @ _heads(t[0])[1].mT, None),
        ("pv_view", [qkv], lambda t: (_heads(t[0])[0] @ _heads(t[0])[1].mT) @ _heads(t[0])[2], None),
        ("x3d_bias_relu", [x3, w, bias], lambda t: zd.relu(t[0] @ t[1] + t[2]), lambda n: np.maximum(n[0] @ n[1] + n[2], 0)),
        ("broadcast_batch", [c, d], lambda t: t[0] @ t[1], lambda n: n[0] @ n[1]),
        ("transposed", [at, a[:64, :72]], lambda t: t[0].T @ t[1], lambda n: n[0].T @ n[1]),
        ("scaled_operand", [a, b], lambda t: (t[0] * 0.5) @ t[1], lambda n: (n[0] * 0.5) @ n[1]),
        # an epilogue that reads a tile of the output's extent (a gate and a residual): the wgmma GEMM's staged
        # form then stages the accumulators and runs the epilogue in its store loop
        ("tile_epilogue", [a, b, RNG.standard_normal((200, 136)).astype(np.float32)],
         lambda t: t[2] * zd.sigmoid(t[2]) * (t[0] @ t[1]) + t[2],
         lambda n: n[2] / (1 + np.exp(-n[2])) * (n[0] @ n[1]) + n[2]),
        # a mask broadcast over the batch, added to a batched product (attention's scores): staged as a tile too
        ("batch_mask", [RNG.standard_normal((3, 80, 64)).astype(np.float32), RNG.standard_normal((3, 64, 136)).astype(np.float32),
                        RNG.standard_normal((80, 136)).astype(np.float32)],
         lambda t: t[0] @ t[1] + t[2], lambda n: n[0] @ n[1] + n[2]),
        # the product stored transposed (a weight's gradient in the weight's layout): the staged form stores its tile
        # along the rows, where memory has neighbours
        ("stored_transposed", [a, b], lambda t: (t[0] @ t[1]).T * 2.0, lambda n: (n[0] @ n[1]).T * 2.0),
        # a 3-D input's weight gradient: K is the batch times the sequence; then two reduced axes not adjacent
        ("k_over_two_axes", [x3, x3[..., :48] * 0.5], lambda t: zd.sum(t[0][..., None] * t[1][..., None, :], axis=(0, 1)),
         lambda n: np.einsum("btk,btn->kn", n[0], n[1])),
        ("k_apart", [c[0, :, :, :20].reshape(3, 48, 20), d[:, 0, :20].reshape(2, 20, 24)[:1].repeat(3, 0)],
         lambda t: zd.sum(t[0][..., None] * t[1][:, None], axis=(0, 2)), lambda n: np.einsum("bmk,bkn->mn", n[0], n[1])),
    ]


CASES = _cases()


def _expected(name, arrays, dtype):
    conv = [x.astype(dtype).astype(np.float32) for x in arrays]
    if name == "qk_view":
        return _qk(conv[0])
    for n, _, _, ref in CASES:
        if n == name and ref is not None:
            return ref(conv) if name != "qk_view" else _qk(conv[0])
    B, T, H, D = 2, 80, 3, 64
    v = conv[0].reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
    s = v[0] @ np.swapaxes(v[1], -1, -2)
    if dtype != np.float32:
        s = s.astype(dtype).astype(np.float32)
    return s @ v[2]


def _qk(qkv):
    B, T, H, D = 2, 80, 3, 64
    v = qkv.reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
    return v[0] @ np.swapaxes(v[1], -1, -2)


pytestmark = pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("tile", [0, 3])
def test_cuda_gemm_against_numpy(cuda_worker, dtype, case, tile):
    name, arrays, build, _ = case
    t = build([zd.tensor(x.astype(dtype)) for x in arrays])
    exp = _expected(name, arrays, dtype)
    got = run_kernels(cuda_worker, t, lambda k: KernelOpts(tile=tile, prefetch=1), "cuda").astype(np.float32)
    scale = np.abs(exp).max()
    tol = 1e-4 if dtype == np.float32 else 5e-3 if dtype == np.float16 else 1.5e-2
    assert np.abs(got - exp).max() <= tol * scale, (name, np.abs(got - exp).max(), scale)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("tile_k", [8, 32])
@pytest.mark.parametrize("tile", range(4, len(gemm.TILES)), ids=lambda t: "x".join(map(str, gemm.TILES[t])))
def test_cuda_small_tiles_against_numpy(cuda_worker, case, tile, tile_k):
    """The 8 x 8-work-item tiles (float32 products too small for 64 x 64 tiles), every case, both prefetches."""
    name, arrays, build, _ = case
    exp = _expected(name, arrays, np.float32)
    for prefetch in (0, 1):
        t = build([zd.tensor(x) for x in arrays])
        got = run_kernels(cuda_worker, t, lambda k, p=prefetch: KernelOpts(tile=tile, tile_k=tile_k, prefetch=p), "cuda")
        assert np.abs(got - exp).max() <= 1e-4 * np.abs(exp).max(), (name, tile, tile_k, prefetch)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("tile", range(4), ids=lambda t: "x".join(map(str, gemm.TILES[t])))
def test_cuda_staged_epilogue_against_numpy(cuda_worker, case, tile):
    """The float32 template with its epilogue staged through shared memory (`cache=1`), every case and big
    tile, both depths: the rows and columns the staging maps back must be the ones each value belongs to."""
    name, arrays, build, _ = case
    exp = _expected(name, arrays, np.float32)
    for tile_k in (8, 16):
        t = build([zd.tensor(x) for x in arrays])
        got = run_kernels(cuda_worker, t, lambda k, d=tile_k: KernelOpts(tile=tile, tile_k=d, prefetch=1, cache=1),
                          "cuda")
        assert np.abs(got - exp).max() <= 1e-4 * np.abs(exp).max(), (name, tile, tile_k)


def _wgmma_cases():
    a, b = RNG.standard_normal((100, 520)).astype(np.float32), RNG.standard_normal((520, 300)).astype(np.float32)
    bt = RNG.standard_normal((300, 520)).astype(np.float32)
    # k-steps enough to wrap every stage ring (9 steps of 64, 8 past the last), tails on every side
    big_a = RNG.standard_normal((3, 1400, 200)).astype(np.float32)
    big_b = RNG.standard_normal((200, 1100)).astype(np.float32)
    return CASES + [("deep_k", [a, b], lambda t: t[0] @ t[1], lambda n: n[0] @ n[1]),
                    ("deep_k_bt", [a, bt], lambda t: t[0] @ t[1].mT, lambda n: n[0] @ n[1].T),
                    # more tiles than an H100 has SMs (3 x 11 x 5 = 165 of 128 x 256), 4 k-steps, the last a tail
                    ("many_tiles", [big_a, big_b], lambda t: t[0] @ t[1], lambda n: n[0] @ n[1])]


def _check_wgmma(cuda_worker, dtype, case, opts: KernelOpts) -> None:
    """One wgmma GEMM case run with `opts` on the worker, against NumPy at the half type's tolerance."""
    name, arrays, build, ref = case
    t = build([zd.tensor(x.astype(dtype)) for x in arrays])
    if name in _OWN_REFERENCE:
        exp = ref([x.astype(dtype).astype(np.float32) for x in arrays])
    else:
        exp = _expected(name, arrays, dtype)
    got = run_kernels(cuda_worker, t, lambda k: opts, "cuda_sm90a").astype(np.float32)
    scale = np.abs(exp).max()
    tol = 5e-3 if dtype == np.float16 else 1.5e-2
    assert np.abs(got - exp).max() <= tol * scale, (name, np.abs(got - exp).max(), scale)


WGMMA_CASES = _wgmma_cases()
_OWN_REFERENCE = {"deep_k", "deep_k_bt", "many_tiles"}  # cases checked against their own NumPy expression


@pytest.mark.skipif(not compute_capability_9(), reason="wgmma needs compute capability 9.0")
@pytest.mark.parametrize("dtype", [np.float16, BF], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("case", WGMMA_CASES, ids=[c[0] for c in WGMMA_CASES])
@pytest.mark.parametrize("staged", [0, 1], ids=["direct", "staged"])
@pytest.mark.parametrize("tile,stages,deep", [(0, 4, 0), (1, 4, 0), (0, 3, 0), (1, 3, 0), (1, 3, 1), (1, 5, 0),
                                               (2, 3, 0), (3, 4, 0)],
                         ids=["t256s4", "t128s4", "t256s3", "t128s3", "t128s3deep", "t128s5", "t64s3", "t192s4"])
def test_cuda_wgmma_gemm_against_numpy(cuda_worker, dtype, case, tile, stages, deep, staged):
    """Hopper's wgmma GEMM (codegen/gemm_wgmma.py, the dialect of compute capability 9.0) at every shape class,
    each tile and stage option the tuner may pick."""
    _check_wgmma(cuda_worker, dtype, case, KernelOpts(wgmma=1, tile=tile, stages=stages, prefetch=deep, cache=staged))


@pytest.mark.skipif(not compute_capability_9(), reason="TMA needs compute capability 9.0")
@pytest.mark.parametrize("dtype", [np.float16, BF], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("case", WGMMA_CASES, ids=[c[0] for c in WGMMA_CASES])
@pytest.mark.parametrize("staged", [0, 1], ids=["direct", "staged"])
@pytest.mark.parametrize("tile,stages,deep", [(0, 4, 0), (1, 4, 0), (1, 3, 1), (1, 3, 0), (2, 3, 0), (3, 4, 0)],
                         ids=["t256s4", "t128s4", "t128s3deep", "t128s3", "t64s3", "t192s4"])
def test_cuda_wgmma_tma_gemm_against_numpy(cuda_worker, dtype, case, tile, stages, deep, staged):
    """The wgmma GEMM with its operands loaded by tensor-map copies where TMA can express them (`wgmma=2`): batch
    digits of a permuted qkv view, broadcast batch, flattened 3-D rows, MN-major (transposed) operands, tails past
    every edge (zero-filled by the copies), an operand evaluated element by element beside a TMA one."""
    _check_wgmma(cuda_worker, dtype, case, KernelOpts(wgmma=2, tile=tile, stages=stages, prefetch=deep, cache=staged))


@pytest.mark.parametrize("dtype", [np.float16, BF], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("opts", [KernelOpts(), KernelOpts(tile=1, stages=3), KernelOpts(wgmma=1, tile=1, stages=4),
                                  KernelOpts(wgmma=2, tile=0, stages=4), KernelOpts(wgmma=2, tile=1, stages=3,
                                                                                      cache=1)],
                         ids=["mma", "mma-t1s3", "wgmma", "tma", "tma-staged"])
def test_cuda_float32_products_of_widened_half_operands(cuda_worker, dtype, opts):
    """`a.astype(float32) @ b.astype(float32)` (batched, k-major and MN-major operands, tails) on tensor cores
    (mma.sync, wgmma, TMA where the GPU has them): float32 results equal to NumPy's float64 product of the same
    half values to float32 accumulation accuracy, far tighter than a half-type result."""
    if opts.wgmma and not compute_capability_9():
        pytest.skip("wgmma needs compute capability 9.0")
    a, b = (RNG.standard_normal(s).astype(dtype) for s in ((3, 130, 200), (200, 150)))
    x, g = (RNG.standard_normal(s).astype(dtype) for s in ((1000, 72), (1000, 136)))
    for t, exp in (
            (zd.tensor(a).astype(zd.float32) @ zd.tensor(b).astype(zd.float32),
             a.astype(np.float64) @ b.astype(np.float64)),
            (zd.tensor(x).astype(zd.float32).T @ zd.tensor(g).astype(zd.float32),
             x.astype(np.float64).T @ g.astype(np.float64))):
        (k,) = kernelize([t.node])
        assert gemm_tc.usable(gemm.match(k), k, DIALECTS["cuda"])
        got = run_kernels(cuda_worker, t, lambda _k: opts, "cuda_sm90a")
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-4 * np.abs(exp).max())


@pytest.mark.skipif(nvidia_opencl_index() is None, reason="no NVIDIA OpenCL device")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nvidia_opencl_gemm_against_numpy(case):
    name, arrays, build, _ = case
    with Worker(f"opencl:{nvidia_opencl_index()}") as w:
        for tile in range(len(gemm.TILES)):
            t = build([zd.tensor(x) for x in arrays])
            got = run_kernels(w, t, lambda k, tile=tile: KernelOpts(tile=tile, prefetch=1))
            exp = _expected(name, arrays, np.float32)
            assert np.abs(got - exp).max() <= 1e-4 * np.abs(exp).max()


def _adam_on_cuda(shapes, dtype, steps: int, check_kernels) -> None:
    """Adam on W from the gradient of sum((x @ W) * g) on cuda:0 for `steps` steps, `check_kernels(kernels)` on
    each step's plan, the weights against NumPy's Adam on the same rounded operands."""
    from zyx_dist.engine import session as zsession

    X, G, W = (RNG.standard_normal(s).astype(np.float32) for s in shapes)
    grad = X.astype(dtype).astype(np.float64).T @ G.astype(dtype).astype(np.float64)
    ref = NpAdam([W.astype(dtype).astype(np.float64)], lr=0.01)
    tol = 1e-4 if dtype == np.float32 else 2e-2  # bfloat16: the weight is rounded to 8 bits every step
    with zd.init(ray=False, devices=["cuda:0"]):
        x, g, w = zd.tensor(X.astype(dtype)), zd.tensor(G.astype(dtype)), zd.tensor(W.astype(dtype)).realize()
        opt = zd.optim.Adam([w], lr=0.01)
        for _ in range(steps):
            new = opt.step(zd.grad(((x @ w) * g).astype(zd.float32).sum(), [w]))
            ks, _, _ = zsession.current().plan([n.node for n in new])
            check_kernels(ks)
            zd.realize(*new)
            w = new[0]
            (want,) = ref.step([grad])
            np.testing.assert_allclose(w.numpy().astype(np.float64), want, rtol=tol / 2, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, BF], ids=["float32", "bfloat16"])
def test_cuda_split_k_weight_gradient_with_adam(dtype):
    """A weight's gradient over 2048 rows into 256 x 256 on CUDA, equal to NumPy's Adam: split-K, a batched GEMM
    over 16 parts (float32 partials, from tensor cores reading the bfloat16 views for bfloat16) and the in-order
    sum carrying Adam's update."""
    def check(ks):
        parts = [k for k in ks if gemm.match(k) is not None and k.outputs[0].shape == (16, 256, 256, 1)]
        assert len(parts) == 1 and parts[0].outputs[0].dtype is zd.float32
        assert gemm_tc.usable(gemm.match(parts[0]), parts[0], DIALECTS["cuda"]) == (dtype != np.float32)

    _adam_on_cuda(((2048, 256), (2048, 256), (256, 256)), dtype, 2, check)


@pytest.mark.parametrize("dtype", [np.float32, BF], ids=["float32", "bfloat16"])
def test_cuda_adam_update_of_a_weight_gradient_is_one_gemm(dtype):
    """Adam's update of W from x.T @ g on CUDA: new weight (W's dtype) and float32 moments from one GEMM kernel
    (tensor cores for bfloat16), equal to NumPy's Adam on the same rounded operands."""
    def check(ks):
        assert [gemm.match(k) is not None for k in ks if len(k.outputs) == 3] == [True]

    _adam_on_cuda(((300, 72), (300, 136), (72, 136)), dtype, 3, check)


def adam_of_a_weight_gradient(layout: str):
    """(the new weight, m and v of one Adam step on a bfloat16 W from x.T @ g, written as `layout`, with float32
    moments given; the same in float64 NumPy on the rounded operands)."""
    rng = np.random.default_rng(3)
    x, g, w = (rng.standard_normal(s).astype(BF) for s in ((300, 72), (300, 136), (72, 136)))
    m0, v0 = rng.standard_normal((72, 136)).astype(np.float32), rng.random((72, 136)).astype(np.float32)
    zx, zg = zd.tensor(x), zd.tensor(g)
    grad = (zx.T @ zg if layout == "x.T @ g" else (zg.T @ zx).T).astype(zd.float32)
    opt = zd.optim.Adam([zd.tensor(w)], lr=0.01)
    opt.m, opt.v = [zd.tensor(m0)], [zd.tensor(v0)]
    (w1,) = opt.step([grad])
    G = x.astype(np.float64).T @ g.astype(np.float64)
    m1, v1 = 0.9 * m0 + 0.1 * G, 0.999 * v0 + 0.001 * G * G
    w_new = w.astype(np.float64) - 0.01 / (1 - 0.9) * m1 / (np.sqrt(v1) / np.sqrt(1 - 0.999) + 1e-8)
    return (w1, opt.m[0], opt.v[0]), (w_new, m1, v1)


@pytest.mark.skipif(not compute_capability_9(), reason="wgmma needs compute capability 9.0")
@pytest.mark.parametrize("layout", ["x.T @ g", "(g.T @ x).T"])
@pytest.mark.parametrize("opts", [KernelOpts(wgmma=2, tile=1, stages=3), KernelOpts(wgmma=2, tile=3, stages=4),
                                  KernelOpts(wgmma=1, tile=0, stages=4), KernelOpts(wgmma=2, tile=2, stages=3)],
                         ids=["tma-t128s3", "tma-t192s4", "t256s4", "tma-t64s3"])
def test_cuda_wgmma_adam_update_of_a_weight_gradient_against_numpy(cuda_worker, layout, opts):
    """Adam's update fused into a weight gradient's wgmma GEMM (three outputs: the bfloat16 weight and two float32
    moments, too much for the staged output tiles, so every form runs the update in the accumulators' layout) in
    each tile form, the weight's gradient in either layout, against NumPy."""
    outs, (w_new, m1, v1) = adam_of_a_weight_gradient(layout)
    w1, m, v = run_kernels(cuda_worker, outs, lambda k: opts if gemm.match(k) is not None else None, "cuda_sm90a")
    for got, want, tol in ((m, m1, 1e-5), (v, v1, 1e-5), (w1.astype(np.float64), w_new, 2 ** -7)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", [np.float32, BF], ids=["float32", "bfloat16"])
def test_cuda_embedding_gradient_is_a_gemm_against_numpy(dtype):
    """The gradient of an embedding lookup on cuda:0 (a scatter-add of g's rows at the ids, repeats included): one
    GEMM with the one-hot mask computed element by element (tensor cores for bfloat16), equal to NumPy's
    `np.add.at` (exactly for float32 sums of few terms; to bfloat16's rounding of the result)."""
    from zyx_dist.engine import session as zsession

    rng = np.random.default_rng(5)
    table, c = RNG.standard_normal((5000, 96)).astype(dtype), RNG.standard_normal((4, 300, 96)).astype(dtype)
    ids = rng.integers(0, 5000, (4, 300))
    ids[0, :50] = 7
    want = np.zeros((5000, 96))
    np.add.at(want, ids, c.astype(np.float64))
    with zd.init(ray=False, devices=["cuda:0"]):
        t = zd.tensor(table)
        (g,) = zd.grad((t[zd.tensor(ids.astype(np.int32))] * zd.tensor(c)).astype(zd.float32).sum(), [t])
        ks, _, _ = zsession.current().plan([g.node])
        assert any(gemm.match(k) is not None and k.outputs[0].size == table.size for k in ks)
        got = g.numpy().astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 2 ** -8
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", [np.float32, BF], ids=["float32", "bfloat16"])
def test_cuda_attention_backward_and_weight_gradients_against_numpy(dtype):
    """A causal attention's backward on cuda:0, its row sums from the output (p * (g - D) the epilogue of the GEMM
    of g = do @ v.T: no T x T gradient stored), with a projection weight's gradient summed in the weight's layout
    (split-K on, as in any session with a GPU): q, k, v and weight gradients equal to NumPy's in float64 on the same
    rounded operands (bfloat16: to its rounding)."""
    from zyx_dist.engine import session as zsession

    rng = np.random.default_rng(12)
    B, H, T, D = 2, 4, 256, 64
    X = (rng.standard_normal((B * T, H * D)) * 0.5).astype(dtype)
    Wq = (rng.standard_normal((H * D, H * D)) * 0.05).astype(dtype)
    K, V, G = (rng.standard_normal((B, H, T, D)).astype(dtype) for _ in range(3))
    mask = np.triu(np.full((T, T), -1e9, np.float32), 1).astype(dtype)
    with zd.init(ray=False, devices=["cuda:0"]):
        x, w, k, v = (zd.tensor(a) for a in (X, Wq, K, V))
        q = (x @ w).reshape(B, T, H, D).permute(0, 2, 1, 3)
        p = zd.softmax(q @ k.mT * 0.125 + zd.tensor(mask), axis=-1)
        loss = ((p @ v) * zd.tensor(G)).astype(zd.float32).sum()
        grads = zd.grad(loss, [w, k, v])
        ks, _, _ = zsession.current().plan([loss.node] + [g.node for g in grads])
        assert not [k for k in ks if sum(t.size == B * H * T * T for t in k.inputs) >= 2]
        got = [g.numpy().astype(np.float64) for g in grads]
    f = [a.astype(np.float64) for a in (X, Wq, K, V, G, mask)]
    qf = (f[0] @ f[1]).reshape(B, T, H, D).transpose(0, 2, 1, 3)
    s = qf @ f[2].transpose(0, 1, 3, 2) * 0.125 + f[5]
    pr = np.exp(s - s.max(-1, keepdims=True))
    pr /= pr.sum(-1, keepdims=True)
    dp = f[4] @ f[3].transpose(0, 1, 3, 2)
    ds = pr * (dp - (pr * dp).sum(-1, keepdims=True)) * 0.125
    dq = (ds @ f[2]).transpose(0, 2, 1, 3).reshape(B * T, H * D)
    want = [f[0].T @ dq, ds.transpose(0, 1, 3, 2) @ qf, pr.transpose(0, 1, 3, 2) @ f[4]]
    tol = 1e-4 if dtype == np.float32 else 0.03
    for name, g, w_ in zip(("w", "k", "v"), got, want):
        np.testing.assert_allclose(g, w_, rtol=tol, atol=tol * np.abs(w_).max(), err_msg=name)
