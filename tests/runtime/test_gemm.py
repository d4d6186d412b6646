"""GEMM template against NumPy on PoCL at every shape class: plain 2-D products with tails, batched and
broadcast-batch products, operands read in place through permuted, sliced, flipped and expanded views
(`q @ k.mT` on a permuted qkv view), 3-D @ 2-D flattened, small K, thin sides, half-type operands,
fused epilogues, and every tile option of the tuner. Each case also checks that the product is one
kernel and that it is rendered by the GEMM template (its local tiles appear in the source)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import run_kernels
from training import NpAdam

import zyx_dist as zd
from zyx_dist.codegen import attention, gemm, options
from zyx_dist.codegen.options import KernelOpts, candidates
from zyx_dist.codegen.render import facts, render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.graph import ir
from zyx_dist.runtime.worker import Worker

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def worker():
    with Worker("opencl:0") as w:
        yield w


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def kernels_of(t: zd.Tensor):
    return kernelize([t.node])


def check(t: zd.Tensor, expected: np.ndarray, *, gemm_kernel: bool = True, rtol=2e-5, atol=2e-5, kernels=1):
    """One kernel (or `kernels`), rendered by a GEMM template, equal to NumPy: through the session (the CPU
    device's default, gemm_cpu's template) and, for a GEMM, with the tiled GPU template run on the CPU too."""
    ks = kernels_of(t)
    assert len(ks) == kernels, f"{len(ks)} kernels, expected {kernels}"
    results = []
    if gemm_kernel:
        assert gemm.match(ks[-1]) is not None, "not matched as a GEMM"
        assert "As[" in render_kernel(ks[-1], gpu=True).source  # the tiled template's local tiles
        assert "As[" not in render_kernel(ks[-1], gpu=False).source  # CPUs: gemm_cpu's, without them
        with Worker("opencl:0") as w:
            results.append(run_kernels(w, t, lambda k: options.default(facts(k, "opencl", True))))
    results.append(t.numpy())  # last: realizing makes the node a leaf
    for got in results:
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("m,k,n", [(16, 16, 16), (70, 33, 45), (129, 8, 130), (17, 200, 31), (64, 3, 64),
                                   (33, 1000, 20)])
def test_plain_2d_with_tails(m, k, n):
    a, b = arr(m, k), arr(k, n)
    check(zd.tensor(a) @ zd.tensor(b), a @ b, rtol=1e-4, atol=1e-4)


def test_transposed_operands():
    a, b = arr(40, 36), arr(52, 36)
    check(zd.tensor(a) @ zd.tensor(b).T, a @ b.T)
    check(zd.tensor(a).T @ zd.tensor(arr(40, 24) * 0 + b[:40, :24]), a.T @ b[:40, :24])


def test_batched_and_broadcast_batch():
    a, b = arr(3, 4, 33, 20), arr(3, 4, 20, 40)
    check(zd.tensor(a) @ zd.tensor(b), a @ b)
    c, d = arr(1, 3, 32, 20), arr(2, 1, 20, 24)
    check(zd.tensor(c) @ zd.tensor(d), c @ d)
    e, w = arr(5, 24, 18), arr(18, 30)  # a weight expanded over a batch of its own
    check(zd.tensor(e) @ zd.broadcast_to(zd.tensor(w), (4, 1, 18, 30)), e @ np.broadcast_to(w, (4, 1, 18, 30)))


def test_q_at_k_transposed_from_permuted_qkv_view():
    B, T, H, D = 2, 40, 3, 16
    qkv = arr(B, T, 3 * H * D)
    t = zd.tensor(qkv).reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
    q, k = t[0], t[1]
    ref = qkv.reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
    check(q @ k.mT, ref[0] @ np.swapaxes(ref[1], -1, -2))


def test_attention_output_projection_from_permuted_heads():
    B, H, T, D = 2, 4, 24, 8
    a, wo = arr(B, H, T, D), arr(H * D, 40)
    y = zd.tensor(a).permute(0, 2, 1, 3).reshape(B, T, H * D) @ zd.tensor(wo)
    check(y, a.transpose(0, 2, 1, 3).reshape(B, T, H * D) @ wo)


def test_3d_at_2d_is_one_flattened_gemm_with_bias_epilogue():
    x, w, b = arr(3, 50, 64), arr(64, 48), arr(48)
    y = zd.relu(zd.tensor(x) @ zd.tensor(w) + zd.tensor(b))
    ks = kernels_of(y)
    spec = gemm.match(ks[0])
    assert spec is not None and (spec.B, spec.M, spec.N, spec.K) == (1, 150, 48, 64)
    check(y, np.maximum(x @ w + b, 0))


def test_a_sum_over_several_axes_is_one_gemm_over_their_product():
    """A weight's gradient for a 3-D input sums over the batch and the sequence: K is their product, one GEMM
    (it was plain loops); also for reduced axes that are not adjacent, and through the autograd."""
    x, g = arr(3, 50, 64), arr(3, 50, 40)
    y = zd.sum(zd.tensor(x)[:, :, :, None] * zd.tensor(g)[:, :, None, :], axis=(0, 1))
    spec = gemm.match(kernels_of(y)[0])
    assert spec is not None and (spec.B, spec.M, spec.N, spec.K) == (1, 64, 40, 150)
    check(y, np.einsum("btk,btn->kn", x, g), rtol=1e-4, atol=1e-4)
    a, b = arr(6, 40, 5), arr(6, 5, 48)
    check(zd.sum(zd.tensor(a)[:, :, :, None] * zd.tensor(b)[:, None, :, :], axis=(0, 2)),
          np.einsum("bmk,bkn->mn", a, b), rtol=1e-4, atol=1e-4)
    w = zd.tensor(arr(64, 40))
    (dw,) = zd.grad(((zd.tensor(x) @ w) * zd.tensor(g)).sum(), [w])
    assert sum(gemm.match(k) is not None for k in kernels_of(dw)) == 1
    np.testing.assert_allclose(dw.numpy(), np.einsum("btk,btn->kn", x, g), rtol=1e-4, atol=1e-4)


def test_sliced_and_flipped_views():
    a, b = arr(50, 40), arr(45, 60)
    check(zd.tensor(a)[5:45:2, 3:33] @ zd.tensor(b)[10:40, ::-1], a[5:45:2, 3:33] @ b[10:40, ::-1])
    check(zd.flip(zd.tensor(a), 0) @ zd.tensor(b)[:40], a[::-1] @ b[:40])


def test_scaled_and_half_operands_evaluated_per_element():
    a, b = arr(33, 40), arr(40, 20)
    check((zd.tensor(a) * 0.5) @ zd.tensor(b), (a * 0.5) @ b, rtol=1e-4)
    ah, bh = a.astype(np.float16), b.astype(np.float16)
    y = zd.tensor(ah) @ zd.tensor(bh)
    assert y.dtype == zd.float16
    check(y, (ah.astype(np.float32) @ bh.astype(np.float32)).astype(np.float16), rtol=2e-3, atol=2e-2)


def test_thin_sides_and_vectors_use_plain_loops():
    a, v = arr(40, 30), arr(30)
    check(zd.tensor(a) @ zd.tensor(v), a @ v, gemm_kernel=False)
    m2 = arr(30, 50)
    check(zd.tensor(v) @ zd.tensor(m2), v @ m2, gemm_kernel=False)
    r = arr(1, 30)
    check(zd.tensor(r) @ zd.tensor(a.T), r @ a.T, gemm_kernel=False)


def test_k_of_one_is_an_outer_product():
    a, b = arr(20, 1), arr(1, 30)
    check(zd.tensor(a) @ zd.tensor(b), a @ b, gemm_kernel=False)


@pytest.mark.parametrize("opts", [KernelOpts(tile=t, tile_k=k, prefetch=p) for t in range(len(gemm.TILES))
                                  for k in (8, 16, 32) for p in (0, 1)] + [KernelOpts(tile=gemm.PLAIN)])
def test_every_tile_option(opts, worker):
    x, w = arr(2, 45, 36), arr(36, 70)
    y = zd.tensor(x) @ zd.tensor(w) * 2.0
    got = run_kernels(worker, y, lambda k: opts)
    np.testing.assert_allclose(got, (x @ w) * 2.0, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("opts", [KernelOpts(tile=t, tile_k=k, prefetch=1, cache=1) for t in range(len(gemm.TILES))
                                  for k in (8, 16)])
def test_staged_epilogue_every_tile(opts, worker):
    """The epilogue staged through local memory (`cache=1`) with tails on both sides, a bias read at the
    columns the staging hands each work-item, and a transposed store."""
    x, w, b = arr(2, 45, 36), arr(36, 70), arr(70)
    y = zd.relu(zd.tensor(x) @ zd.tensor(w) + zd.tensor(b))
    np.testing.assert_allclose(run_kernels(worker, y, lambda k: opts), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)
    a, c = arr(75, 40), arr(40, 66)
    t = ((zd.tensor(a) @ zd.tensor(c)) * 3.0).T
    np.testing.assert_allclose(run_kernels(worker, t, lambda k: opts), ((a @ c) * 3.0).T, rtol=1e-4, atol=1e-4)


def test_gpu_candidates_stage_the_epilogue_of_small_k_products():
    def staged(m, k, n):
        (kern,) = kernels_of(zd.tensor(arr(m, k)) @ zd.tensor(arr(k, n)))
        return {(c.tile, c.tile_k, c.prefetch) for c in candidates(facts(kern, "opencl", gpu=True)) if c.cache}

    assert len(staged(2048, 64, 2048)) == 8  # both big tiles, both depths, both prefetches
    assert len(staged(2048, 1024, 2048)) == 4  # the first tile only
    (kern,) = kernels_of(zd.tensor(arr(2048, 64)) @ zd.tensor(arr(64, 2048)))
    assert not any(c.cache for c in candidates(facts(kern, "opencl", gpu=False)))  # CPUs: their own template


def test_candidates_for_small_k_include_plain_loops():
    x, w = arr(512, 4), arr(4, 512)
    (k,) = kernels_of(zd.tensor(x) @ zd.tensor(w))
    cands = candidates(facts(k, "opencl", gpu=True))
    assert any(c.tile == gemm.PLAIN for c in cands[:2])


def test_products_too_small_for_a_gpu_start_with_the_small_tiles():
    """A product that cannot give each compute unit of a big GPU two 64 x 64 tiles starts with a small tile
    (what runs: it is too short to be timed); bigger products and CPUs keep their order."""
    def first(m, k, n, gpu=True):
        (kern,) = kernels_of(zd.relu(zd.tensor(arr(m, k)) @ zd.tensor(arr(k, n)) + zd.tensor(arr(n))))
        cands = candidates(facts(kern, "opencl", gpu=gpu))
        return cands[0], cands

    o, cands = first(256, 256, 256)
    assert gemm.TILES[o.tile] == (4, 4, 8, 8) and o.tile_k == 16 and o.prefetch == 1  # 32 x 32: 64 work-groups
    assert any(c.tile == 3 for c in cands)  # the 64 x 64 tile to compare against when there is time
    o, _ = first(1024, 256, 1024)  # 256 tiles of 64 x 64: the 32 x 64 (or 64 x 32) tiles give 512 work-groups
    assert gemm.TILES[o.tile] in ((4, 8, 8, 8), (8, 4, 8, 8))
    o, _ = first(128, 1024, 4096)  # 32 x 64 tiles would give 256 work-groups only: 32 x 32, 512 of them
    assert gemm.TILES[o.tile] == (4, 4, 8, 8)
    assert first(2048, 512, 1024)[0].tile < 4  # 512 tiles of 64 x 64: the wide tiles, as before
    assert first(256, 256, 256, gpu=False)[0].cpu_rows  # a CPU's own template


def test_views_of_a_computed_qkv_are_read_in_place_no_copy_kernels():
    B, T, H, D = 2, 24, 2, 16
    x, w = arr(B, T, 32), arr(32, 3 * H * D)
    qkv = (zd.tensor(x) @ zd.tensor(w)).reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
    s = qkv[0] @ qkv[1].mT
    ks = kernels_of(s)
    assert len(ks) == 2 and all(gemm.match(k) is not None for k in ks)  # the qkv GEMM, then the scores GEMM
    ref = (x @ w).reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
    np.testing.assert_allclose(s.numpy(), ref[0] @ np.swapaxes(ref[1], -1, -2), rtol=1e-4, atol=1e-4)


def test_transformer_block_kernel_count():
    """layer norm, QKV (+bias), the attention core (scores, softmax and p @ v in one kernel), the output
    projection (+bias, +residual), layer norm, the MLP's two GEMMs (+bias, GELU; +bias, +residual): 7
    kernels, no copies."""
    B, T, D, H = 2, 24, 32, 2
    hd = D // H
    x = zd.tensor(arr(B, T, D))
    p = {k: zd.tensor(arr(*s) * np.float32(0.1)) for k, s in (("wqkv", (D, 3 * D)), ("bqkv", (3 * D,)), ("wo", (D, D)),
                                                   ("w1", (D, 4 * D)), ("w2", (4 * D, D)))}
    mask = zd.tensor(np.triu(np.full((T, T), -np.inf, np.float32), 1))
    h = zd.layer_norm(x)
    qkv = (h @ p["wqkv"] + p["bqkv"]).reshape(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
    s = (qkv[0] @ qkv[1].mT) * float(1 / np.sqrt(hd)) + mask
    a = (zd.softmax(s, axis=-1) @ qkv[2]).permute(0, 2, 1, 3).reshape(B, T, D)
    x = x + a @ p["wo"]
    y = x + zd.tanh(zd.layer_norm(x) @ p["w1"]) @ p["w2"]
    ks = kernels_of(y)
    assert len(ks) == 7, [k.shape for k in ks]
    assert sum(gemm.match(k) is not None for k in ks) == 4
    assert sum(attention.match(k) is not None for k in ks) == 1


def test_llama_block_every_product_is_a_gemm():
    """A Llama-style block (RMS norm, grouped-query attention through a broadcast head axis, rotary embeddings by
    slices and a concatenation, a SwiGLU MLP): each of its 7 products is a GEMM and the attention one kernel,
    where rotary's slices and SwiGLU's two products in one expression used to make plain reduce loops. Equal to
    NumPy."""
    B, T, D, H, KV, F = 2, 24, 64, 4, 2, 48
    hd, rep = D // H, H // KV
    P = {k: arr(*s) * np.float32(0.1) for k, s in (("wq", (D, D)), ("wk", (D, KV * hd)), ("wv", (D, KV * hd)),
                                                   ("wo", (D, D)), ("w1", (D, F)), ("w3", (D, F)), ("w2", (F, D)))}
    X = arr(B, T, D)
    ang = np.outer(np.arange(T), 1.0 / 10000 ** (np.arange(0, hd, 2) / hd))
    COS, SIN = (np.concatenate([f(ang), f(ang)], -1).astype(np.float32) for f in (np.cos, np.sin))
    MASK = np.triu(np.full((T, T), -np.inf, np.float32), 1)

    def forward(x, p, cos, sin, mask, lib):
        cat = zd.concat if lib is zd else np.concatenate

        def rms(v):
            return v / lib.sqrt((v * v).mean(axis=-1, keepdims=True) + 1e-5)

        def rope(v):
            return v * cos + cat([-v[..., hd // 2:], v[..., :hd // 2]], axis=-1) * sin

        def heads(v, n):
            return lib.permute_dims(v.reshape(B, T, n, hd), (0, 2, 1, 3))

        h = rms(x)
        q = rope(heads(h @ p["wq"], H)).reshape(B, KV, rep, T, hd)
        k = rope(heads(h @ p["wk"], KV)).reshape(B, KV, 1, T, hd)
        v = heads(h @ p["wv"], KV).reshape(B, KV, 1, T, hd)
        s = (q @ k.mT) * float(1 / np.sqrt(hd)) + mask
        e = lib.exp(s - s.max(axis=-1, keepdims=True))
        a = lib.permute_dims(((e / e.sum(axis=-1, keepdims=True)) @ v).reshape(B, H, T, hd), (0, 2, 1, 3)).reshape(B, T, D)
        x = x + a @ p["wo"]
        h = rms(x)
        g = h @ p["w1"]
        return x + ((g / (1 + lib.exp(-g))) * (h @ p["w3"])) @ p["w2"]

    y = forward(zd.tensor(X), {k: zd.tensor(v) for k, v in P.items()}, zd.tensor(COS), zd.tensor(SIN),
                zd.tensor(MASK), zd)
    ks = kernels_of(y)
    assert sum(gemm.match(k) is not None for k in ks) == 7, [k.shape for k in ks]
    assert sum(attention.match(k) is not None for k in ks) == 1
    ref = forward(X.astype(np.float64), P, COS, SIN, MASK, np)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_optimizer_update_of_a_weight_gradient_is_one_gemm_with_three_outputs():
    """Adam's update of W from its gradient x.T @ g: new weight, first and second moments are one GEMM kernel
    (the gradient, summed in W's layout, is never written), equal to NumPy's Adam."""
    from zyx_dist.engine import session as zsession

    X, G, W = arr(300, 70), arr(300, 50), arr(70, 50)
    x, g, w = zd.tensor(X), zd.tensor(G), zd.tensor(W).realize()
    opt, ref = zd.optim.Adam([w], lr=0.01), NpAdam([W.astype(np.float64)], lr=0.01)
    for _ in range(3):
        loss = ((x @ w) * g).sum()
        new = opt.step(zd.grad(loss, [w]))
        ks, _, _ = zsession.current().plan([loss.node] + [n.node for n in new])
        update = [k for k in ks if len(k.outputs) == 3]
        assert len(update) == 1 and gemm.match(update[0]) is not None
        zd.realize(loss, *new)
        w = new[0]
        (want,) = ref.step([X.T.astype(np.float64) @ G])
        np.testing.assert_allclose(w.numpy(), want, rtol=1e-5, atol=1e-5)


def test_outputs_reading_the_product_at_different_indices_are_not_one_gemm():
    """A gradient and its transpose stored by one kernel read the product at two indices: plain loops, and right."""
    A, B = arr(40, 24), arr(24, 40)
    p = zd.tensor(A) @ zd.tensor(B)
    a, b = p * 2, p.mT + 1
    ks = kernelize([a.node, b.node])
    assert [len(k.outputs) for k in ks] == [2] and gemm.match(ks[0]) is None
    zd.realize(a, b)
    np.testing.assert_allclose(a.numpy(), (A @ B) * 2, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(b.numpy(), (A @ B).T + 1, rtol=2e-5, atol=2e-5)


def test_a_matmul_read_by_a_row_kernel_is_a_gemm_of_its_own():
    """softmax(x @ W) and the backward of layer_norm(x) @ W: the product is stored by a GEMM kernel, and the row
    kernel that reads it runs no loop over k (each of its passes would otherwise recompute the product)."""
    X, W, G = arr(96, 64), arr(64, 80), arr(96, 80)
    s = zd.softmax(zd.tensor(X) @ zd.tensor(W), axis=1)
    ks = kernels_of(s)
    assert len(ks) == 2 and gemm.match(ks[0]) is not None and ks[1].row == 1
    assert "< 64;" not in render_kernel(ks[1], gpu=False).source
    e = np.exp((X @ W) - (X @ W).max(1, keepdims=True))
    np.testing.assert_allclose(s.numpy(), e / e.sum(1, keepdims=True), rtol=2e-5, atol=2e-6)
    x = zd.tensor(X)
    dx, = zd.grad(((zd.layer_norm(x) @ zd.tensor(W)) * zd.tensor(G)).sum(), [x])
    ks = kernels_of(dx)
    rows = [k for k in ks if k.row]
    assert any(gemm.match(k) is not None for k in ks) and rows and all(gemm.match(k) is None for k in rows)
    assert all("< 80;" not in render_kernel(k, gpu=False).source for k in rows)
    mu, r = X.mean(1, keepdims=True), 1 / np.sqrt(X.var(1, keepdims=True) + 1e-5)
    xh, dxh = (X - mu) * r, G @ W.T
    ref = r * (dxh - dxh.mean(1, keepdims=True) - xh * (dxh * xh).mean(1, keepdims=True))
    np.testing.assert_allclose(dx.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_a_long_contraction_into_few_tiles_is_split_into_a_batched_gemm_and_a_sum(monkeypatch):
    """x.T @ g over 2048 rows into 256 x 256 (four tiles for a big GPU's work-groups): split-K (on here as in a
    session with a GPU), one
    batched GEMM over 16 parts of 128 rows (read in place, nothing stored but the partials) and a sum of the
    parts, in order; equal to NumPy, through the session and with the GPU templates run on the CPU."""
    monkeypatch.setattr(ir, "SPLIT_K", True)
    X, G = arr(2048, 256), arr(2048, 256)
    t = zd.tensor(X).T @ zd.tensor(G)
    ks = kernels_of(t)
    assert [k.outputs[0].shape for k in ks] == [(16, 256, 256, 1), (256, 256)]
    assert gemm.match(ks[0]) is not None and gemm.match(ks[1]) is None
    want = X.T.astype(np.float64) @ G
    with Worker("opencl:0") as w:
        got = run_kernels(w, t, lambda k: options.default(facts(k, "opencl", True)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-4, atol=1e-3)
    # below the thresholds (short, or little work), one GEMM as before
    assert len(kernels_of(zd.tensor(arr(512, 256)).T @ zd.tensor(arr(512, 256)))) == 1
    assert len(kernels_of(zd.tensor(arr(1024, 64)).T @ zd.tensor(arr(1024, 64)))) == 1


@pytest.mark.parametrize("half", [np.float16, "bfloat16"])
def test_widened_half_operands_are_read_at_their_half_type(half):
    """`a.astype(float32) @ b.astype(float32)` of half-type tensors, through permutes and a broadcast batch: the
    GEMM reads the narrow views (tensor cores take them in the CUDA dialect), the result is float32 and equal
    to NumPy's float64 product of the same values to float32 accuracy (the products are exact)."""
    from zyx_dist.codegen import gemm_tc
    from zyx_dist.codegen.dialects import DIALECTS

    dtype = np.dtype(half) if half != "bfloat16" else ml_dtypes.bfloat16
    a, b = arr(3, 40, 70).astype(dtype), arr(50, 40).astype(dtype)
    t = zd.tensor(a).astype(zd.float32).mT @ zd.tensor(b).astype(zd.float32).T
    assert t.dtype == zd.float32
    (k,) = kernels_of(t)
    spec = gemm.match(k)
    assert spec.a.dtype.name == spec.b.dtype.name == np.dtype(dtype).name
    assert spec.a_view is not None and spec.b_view is not None
    assert gemm_tc.usable(spec, k, DIALECTS["cuda"])
    want = a.astype(np.float64).transpose(0, 2, 1) @ b.astype(np.float64).T
    check(t, want, rtol=1e-5, atol=1e-4)
    # one factor truly float32: a float32 GEMM (not narrowed)
    mixed = zd.tensor(a[0]).astype(zd.float32).T @ zd.tensor(arr(40, 30))
    (k,) = kernels_of(mixed)
    assert gemm.match(k).a.dtype is zd.float32


@pytest.mark.parametrize("half", [np.float16, "bfloat16"])
def test_half_type_split_k_sums_float32_partials(monkeypatch, half):
    """x.T @ g of half types over 2048 rows into 256 x 256 with split-K on (a GPU session's rule): a batched GEMM
    of the narrow views into float32 partials, then their in-order sum rounded once to the half type; equal to
    the unsplit product's result within one rounding of the half type."""
    monkeypatch.setattr(ir, "SPLIT_K", True)
    dtype = np.dtype(half) if half != "bfloat16" else ml_dtypes.bfloat16
    X, G = arr(2048, 256).astype(dtype), arr(2048, 256).astype(dtype)
    t = zd.tensor(X).T @ zd.tensor(G)
    ks = kernels_of(t)
    assert [(k.outputs[0].shape, k.outputs[0].dtype.name) for k in ks] == [
        ((16, 256, 256, 1), "float32"), ((256, 256), np.dtype(dtype).name)]
    spec = gemm.match(ks[0])
    assert spec.a.dtype.name == np.dtype(dtype).name and spec.a_view is not None and spec.b_view is not None
    want = X.T.astype(np.float64) @ G.astype(np.float64)
    with Worker("opencl:0") as w:
        got = run_kernels(w, t, lambda k: options.default(facts(k, "opencl", True)))
    eps = 2.0 ** (-8 if half == "bfloat16" else -11)
    for res in (got, t.numpy()):
        assert res.dtype == dtype
        np.testing.assert_allclose(res.astype(np.float64), want, rtol=eps, atol=eps * np.abs(want).max() * 1e-2)


def test_gather_gradient_is_a_gemm_of_the_one_hot_mask():
    """The gradient of an embedding lookup (`zd.grad` through `table[ids]`) is a scatter-add: the sum over the ids of
    where(ids == arange(rows), g, 0). It is one GEMM whose mask operand is computed element by element (rows x
    columns x ids multiply-adds, not a loop over every id per element), equal to NumPy's `np.add.at` with repeated and
    negative ids; the lookup itself stays one indexed load, and a bfloat16 table's gradient takes tensor cores."""
    from zyx_dist.codegen import gemm_tc
    from zyx_dist.codegen.dialects import DIALECTS

    rng = np.random.default_rng(11)
    table, c = arr(300, 40), arr(6, 7, 40)
    ids = rng.integers(-300, 300, (6, 7))
    ids[0, :3] = 5  # repeats add up
    t, ix = zd.tensor(table), zd.tensor(ids.astype(np.int32))
    (g,) = zd.grad((t[ix] * zd.tensor(c)).sum(), [t])
    (k,) = [k for k in kernels_of(g) if k.outputs[0].size == table.size]
    assert gemm.match(k) is not None
    want = np.zeros_like(table, dtype=np.float64)
    np.add.at(want, ids % 300, c.astype(np.float64))
    with Worker("opencl:0") as w:  # the tiled GPU template, run on the CPU
        got = run_kernels(w, g, lambda k: options.default(facts(k, "opencl", True)))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-6)
    (lookup,) = kernelize([t[ix].node])
    assert gemm.match(lookup) is None and "for (" not in render_kernel(lookup, gpu=True).source
    tb = zd.tensor(table.astype(ml_dtypes.bfloat16))
    (gb,) = zd.grad((tb[ix] * zd.tensor(c.astype(ml_dtypes.bfloat16))).astype(zd.float32).sum(), [tb])
    (k,) = [k for k in kernels_of(gb) if k.outputs[0].size == table.size]
    assert gemm_tc.usable(gemm.match(k), k, DIALECTS["cuda"])


def test_tied_embedding_gradient_keeps_its_products_gemms(monkeypatch):
    """A table used as embedding and as LM head (`table[ids] @ table.T`): its gradient adds the lookup's scatter and
    the head's weight gradient. No kernel holds both reduces (either would run as a plain loop): each is a GEMM,
    split-K on as on a GPU; equal to NumPy."""
    monkeypatch.setattr(ir, "SPLIT_K", True)
    rng = np.random.default_rng(12)
    table, c = arr(512, 64) * 0.1, arr(96, 512)
    ids = rng.integers(0, 512, 96)
    t = zd.tensor(table)
    (g,) = zd.grad(((t[zd.tensor(ids)] @ t.T) * zd.tensor(c)).sum(), [t])
    ks = kernels_of(g)
    for k in ks:
        inputs = {x.id for x in k.inputs}
        nodes = ir.toposort(k.outputs, stop=lambda x, inputs=inputs: x.id in inputs)
        assert sum(n.op is ir.Op.REDUCE and n.id not in inputs for n in nodes) <= 1
    assert sum(gemm.match(k) is not None for k in ks) >= 3  # the head's input and weight gradients, the scatter
    h = table[ids].astype(np.float64)
    want = c.T.astype(np.float64) @ h
    np.add.at(want, ids, c.astype(np.float64) @ table.astype(np.float64))
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-4)


def test_split_weight_gradient_with_adam_matches_numpy(monkeypatch):
    """The backward's weight gradient (the product's factor a computed value, broadcast) splits as well: the
    partials are a batched GEMM read through the broadcast, never a stored T x D x D product, and Adam's
    3-output update rides on the sum of the parts; equal to NumPy's Adam."""
    from zyx_dist.engine import session as zsession

    monkeypatch.setattr(ir, "SPLIT_K", True)
    X, W = arr(2048, 256) * 0.1, arr(256, 256) * 0.1
    x, w = zd.tensor(X), zd.tensor(W).realize()
    opt, ref = zd.optim.Adam([w], lr=0.01), NpAdam([W.astype(np.float64)], lr=0.01)
    for _ in range(2):
        loss = ((x @ w) ** 2).sum()
        new = opt.step(zd.grad(loss, [w]))
        ks, _, _ = zsession.current().plan([loss.node] + [n.node for n in new])
        assert max(max(o.size for o in k.outputs) for k in ks) <= 16 * 256 * 256  # no broadcast product stored
        assert any(gemm.match(k) is not None and k.outputs[0].shape == (16, 256, 256, 1) for k in ks)
        update = [k for k in ks if len(k.outputs) == 3]
        assert len(update) == 1
        grad = 2 * X.T.astype(np.float64) @ (X @ w.numpy().astype(np.float64))
        zd.realize(loss, *new)
        w = new[0]
        (want,) = ref.step([grad])
        np.testing.assert_allclose(w.numpy(), want, rtol=1e-4, atol=1e-5)


def test_weight_gradients_are_computed_in_the_weights_layout(monkeypatch):
    """matmul reads a weight transposed (a permuted view); its gradient is summed with the kept axes in the weight's
    order, so the GEMM writes it as the weight is laid out and nothing reads it across rows: the split-K partials
    of W (128, 320) are (parts, 128, 320, 1) and their total reads them along memory; unsplit, the gradient is
    the GEMM's own output. Values equal NumPy's for a 2-D and a 3-D input, a weight used twice, and a batched
    weight read through its own transpose."""
    X, W = arr(2048, 128) * 0.1, arr(128, 320) * 0.1
    monkeypatch.setattr(ir, "SPLIT_K", True)
    x, w = zd.tensor(X), zd.tensor(W)
    (dw,) = zd.grad(((x @ w) ** 2).sum(), [w])
    ks = kernels_of(dw)
    parts = [k for k in ks if gemm.match(k) is not None and k.outputs[0].shape[1:] == (128, 320, 1)]
    assert len(parts) == 1, [k.outputs[0].shape for k in ks]
    total = [k for k in ks if parts[0].outputs[0] in k.inputs]
    assert total and "%" not in render_kernel(total[0], gpu=False).source.split("{", 1)[1]
    np.testing.assert_allclose(dw.numpy(), 2 * X.T.astype(np.float64) @ (X @ W), rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(ir, "SPLIT_K", False)

    X3, Y, G = arr(4, 64, 70), arr(30, 70), arr(4, 64, 50)
    w = zd.tensor(arr(70, 50))
    loss = ((zd.tensor(X3) @ w) * zd.tensor(G)).sum() + (zd.tensor(Y) @ w).sum()
    (dw,) = zd.grad(loss, [w])
    assert all(gemm.match(k) is None or k.outputs[0].size != 70 * 50 or k.outputs[0].shape[0] == 70
               for k in kernels_of(dw))
    want = X3.reshape(-1, 70).T.astype(np.float64) @ G.reshape(-1, 50) + Y.T.astype(np.float64) @ np.ones((30, 50))
    np.testing.assert_allclose(dw.numpy(), want, rtol=1e-4, atol=1e-4)
    (dw,) = zd.grad(((zd.tensor(X3[0]) @ w) * zd.tensor(G[0])).sum(), [w])
    (k,) = kernels_of(dw)
    assert gemm.match(k) is not None and [d for d in k.outputs[0].shape if d > 1] == [70, 50]
    np.testing.assert_allclose(dw.numpy(), X3[0].T.astype(np.float64) @ G[0], rtol=1e-4, atol=1e-4)

    W3, X3b, G3 = arr(3, 50, 70), arr(3, 40, 70), arr(3, 40, 50)
    w3 = zd.tensor(W3)
    (dw3,) = zd.grad(((zd.tensor(X3b) @ w3.mT) * zd.tensor(G3)).sum(), [w3])
    want = np.einsum("bij,bik->bjk", G3.astype(np.float64), X3b)
    np.testing.assert_allclose(dw3.numpy(), want, rtol=1e-4, atol=1e-4)
