"""GPU tier: fused attention against NumPy on CUDA (float32, float16, bfloat16; causal, additive float
mask, no mask; lengths that are not multiples of the key block; a permuted qkv view; the half types'
tensor-core kernel and the register-tiled float32 one at several head dims, cross-attention lengths and
a computed q, and head dims that leave half types on float32 arithmetic; on Hopper every tensor-core form,
the TMA one over launches that change the mask, and each form's row statistics for a backward pass) and on NVIDIA OpenCL (float32), through an in-process
session on each device."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from gpu_util import compute_capability_9, cuda_devices, nvidia_opencl_index
from helpers import ref_attention

import zyx_dist as zd
from zyx_dist.codegen import attention
from zyx_dist.fuse.kernelize import kernelize

BF = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(13)


def _one_kernel_as_numpy(out: zd.Tensor, exp: np.ndarray, dtype, tensor_cores: bool | None = None) -> None:
    """`out` is one fused attention kernel (on tensor cores in CUDA, or not, when `tensor_cores` says) and
    matches `exp` within the dtype's tolerance."""
    from zyx_dist.codegen.render import CUDA, render_kernel

    ks = kernelize([out.node])
    assert len(ks) == 1 and attention.match(ks[0]) is not None
    if tensor_cores is not None:
        assert ("mma.sync" in render_kernel(ks[0], CUDA).source) == tensor_cores
    tol = 2e-4 if dtype == np.float32 else 4e-3 if dtype == np.float16 else 2e-2
    np.testing.assert_allclose(out.numpy().astype(np.float32), exp, rtol=tol, atol=tol)


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
        _one_kernel_as_numpy(out, ref_attention(qn, kn, vn, scale, mask), dtype)
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


def _check_shapes(dtype, B, H, Tq, Tk, D, Dv, masked: bool, computed_q: bool, tensor_cores: bool):
    """Cross-attention shapes on CUDA; whether the kernel is the tensor-core one."""
    session = zd.init(ray=False, devices=["cuda:0"])
    try:
        qn, kn = (RNG.standard_normal((B, H, t, D)).astype(dtype) for t in (Tq, Tk))
        vn = RNG.standard_normal((B, H, Tk, Dv)).astype(dtype)
        mn = RNG.standard_normal((1, 1, Tq, Tk)).astype(dtype) if masked else None
        q, k, v = (zd.tensor(x) for x in (qn, kn, vn))
        if computed_q:  # q is an expression: the kernel fills it value by value
            q = q * 0.5
            qn = (qn.astype(np.float32) * 0.5).astype(dtype)
        s = (q @ k.mT) * (1 / math.sqrt(D))
        if masked:
            s = s + zd.tensor(mn)
        out = zd.softmax(s, axis=-1) @ v
        f = [x.astype(np.float32) for x in (qn, kn, vn)]
        exp = ref_attention(*f, 1 / math.sqrt(D), mn.astype(np.float32) if masked else None)
        _one_kernel_as_numpy(out, exp, dtype, tensor_cores)
    finally:
        zd.shutdown()
        del session


@pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("B,H,Tq,Tk,D,Dv,masked,computed_q,tensor_cores", [
    (2, 4, 1024, 1024, 64, 64, True, False, True),  # many key blocks
    (1, 3, 70, 300, 32, 64, True, False, True),  # cross-attention, partial blocks, v's head wider than q's
    (2, 2, 65, 64, 128, 128, False, True, True),  # head dim 128, q computed
    (1, 2, 33, 50, 16, 16, False, False, True),
    (1, 2, 40, 40, 40, 40, True, False, False),  # head dim 40: not whole k16 steps, float32 arithmetic
    (1, 2, 50, 70, 24, 20, True, False, False),  # head dims that are not multiples of 16 or of 4
], ids=["long", "cross", "d128_computed_q", "d16", "d40", "d24_v20"])
def test_cuda_attention_shapes(dtype, B, H, Tq, Tk, D, Dv, masked, computed_q, tensor_cores):
    """Half types with head dims in whole k16 steps on tensor cores, the rest (and float32) register-tiled."""
    _check_shapes(dtype, B, H, Tq, Tk, D, Dv, masked, computed_q, tensor_cores and dtype != np.float32)


@pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [np.float32, BF], ids=["float32", "bfloat16"])
def test_cuda_attention_skipped_blocks_keep_numpys_inf_and_nan(dtype):
    """Causal attention over several key blocks, so warps skip the blocks they mask out entirely, and give
    what NumPy gives where that would differ: in head 1 an inf in v at a key that only masked rows leave
    out still gives those rows NaN in its column (0 * inf); in head 0 a row of q and a masked key of k so
    large that their product overflows give that row NaN (inf - inf); a row masked at every key is NaN."""
    B, H, T, D = 1, 2, 320, 64
    qn, kn, vn = (RNG.standard_normal((B, H, T, D)).astype(dtype) for _ in range(3))
    vn[0, 1, 250, 3] = np.inf
    qn[0, 0, 7], kn[0, 0, 300] = 1e20, 1e20
    mask = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    mask[5] = -np.inf
    session = zd.init(ray=False, devices=["cuda:0"])
    try:
        q, k, v = (zd.tensor(x) for x in (qn, kn, vn))
        out = zd.softmax((q @ k.mT) * 0.125 + zd.tensor(mask.astype(dtype)), axis=-1) @ v
        qf, kf, vf = (x.astype(np.float32) for x in (qn, kn, vn))
        with np.errstate(over="ignore", invalid="ignore"):
            s = np.einsum("bhid,bhjd->bhij", qf, kf) * 0.125 + mask
            e = np.exp(s - s.max(-1, keepdims=True))
            exp = np.einsum("bhij,bhjd->bhid", e / e.sum(-1, keepdims=True), vf)  # no BLAS: 0 * inf stays NaN
        assert np.isnan(exp[0, 1, :250, 3]).all() and np.isnan(exp[:, :, 5]).all() and np.isnan(exp[0, 0, 7]).all()
        _one_kernel_as_numpy(out, exp, dtype)
    finally:
        zd.shutdown()
        del session


@pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [np.float32, BF], ids=["float32", "bfloat16"])
def test_cuda_attention_leaves_out_masked_blocks_for_where_and_padding_masks(dtype):
    """Whole key blocks that the mask hides are left out (the kernel's prologue flags them): a causal
    `zd.where(keep, s, -inf)` and a padding mask that differs per batch (whole padded blocks), against
    NumPy; the kernels carry the prologue, so the skip path is what ran."""
    from zyx_dist.codegen import attention_skip
    from zyx_dist.codegen.render import CUDA, render_kernel

    B, H, T, D = 2, 2, 300, 64
    qn, kn, vn = (RNG.standard_normal((B, H, T, D)).astype(dtype) for _ in range(3))
    qf, kf, vf = (x.astype(np.float32) for x in (qn, kn, vn))
    keep = np.tril(np.ones((T, T), bool))
    pad = np.zeros((B, 1, 1, T), np.float32)
    pad[0, ..., 100:], pad[1, ..., 260:] = -np.inf, -np.inf  # batch 0: keys 128-299 are whole padded blocks
    session = zd.init(ray=False, devices=["cuda:0"])
    try:
        q, k, v = (zd.tensor(x) for x in (qn, kn, vn))
        s = (q @ k.mT) * 0.125
        outs = {"where": zd.softmax(zd.where(zd.tensor(keep), s, -math.inf), axis=-1) @ v,
                "padding": zd.softmax(s + zd.tensor(pad.astype(dtype)), axis=-1) @ v}
        exps = {"where": ref_attention(qf, kf, vf, 0.125, np.where(keep, 0, -np.inf).astype(np.float32)),
                "padding": ref_attention(qf, kf, vf, 0.125, pad)}
        for name, out in outs.items():
            (kern,) = kernelize([out.node])
            assert attention_skip.PROLOGUE_MARK in render_kernel(kern, CUDA).source, name
            _one_kernel_as_numpy(out, exps[name], dtype)
    finally:
        zd.shutdown()
        del session


def _forms_cases():
    """(label, dtype, build(tensors) -> output, arrays, expected) for the two tensor-core forms of the CUDA
    kernel: masks of each kind, tails of rows and keys, cross-attention with a wider v, head dim 128 with a
    computed q, a permuted qkv view, and the skipped blocks' inf and NaN."""
    def masked(t):
        return zd.softmax((t[0] @ t[1].mT) * 0.125 + t[3], axis=-1) @ t[2]

    def f32(*xs):
        return [x.astype(np.float32) for x in xs]

    cases = []
    for dtype in (np.float16, BF):
        B, H, T, D = 2, 3, 200, 64
        q, k, v = (RNG.standard_normal((B, H, T, D)).astype(dtype) for _ in range(3))
        causal = np.triu(np.full((T, T), -np.inf, np.float32), 1).astype(dtype)
        per_batch = RNG.standard_normal((B, 1, T, T)).astype(dtype)
        for label, mask in (("causal", causal), ("per_batch_mask", per_batch), ("no_mask", None)):
            arrays = [q, k, v] + ([mask] if mask is not None else [])
            build = masked if mask is not None else (lambda t: zd.softmax((t[0] @ t[1].mT) * 0.125, axis=-1) @ t[2])
            cases.append((label, dtype, build, arrays,
                          ref_attention(*f32(q, k, v), 0.125, None if mask is None else f32(mask)[0])))
        qc, kc = RNG.standard_normal((1, 2, 70, 64)).astype(dtype), RNG.standard_normal((1, 2, 300, 64)).astype(dtype)
        vc, mc = RNG.standard_normal((1, 2, 300, 128)).astype(dtype), RNG.standard_normal((1, 1, 70, 300)).astype(dtype)
        cases.append(("cross_v128", dtype, masked, [qc, kc, vc, mc], ref_attention(*f32(qc, kc, vc), 0.125, f32(mc)[0])))
        q2, k2, v2 = (RNG.standard_normal((2, 2, n, 128)).astype(dtype) for n in (65, 64, 64))
        q2h = (q2.astype(np.float32) * 0.5).astype(dtype)
        cases.append(("d128_computed_q", dtype, lambda t: zd.softmax((t[0] * 0.5) @ t[1].mT * (1 / math.sqrt(128)),
                                                                     axis=-1) @ t[2],
                      [q2, k2, v2], ref_attention(*f32(q2h, k2, v2), 1 / math.sqrt(128))))
        qkv = RNG.standard_normal((2, 130, 3 * 2 * 64)).astype(dtype)
        r = qkv.astype(np.float32).reshape(2, 130, 3, 2, 64).transpose(2, 0, 3, 1, 4)
        mask = np.triu(np.full((130, 130), -np.inf, np.float32), 1).astype(dtype)

        def from_view(t):
            h = t[0].reshape(2, 130, 3, 2, 64).permute(2, 0, 3, 1, 4)
            return zd.softmax((h[0] @ h[1].mT) * 0.125 + t[1], axis=-1) @ h[2]
        cases.append(("qkv_view", dtype, from_view, [qkv, mask], ref_attention(r[0], r[1], r[2], 0.125, f32(mask)[0])))
        T = 320
        qn, kn, vn = (RNG.standard_normal((1, 2, T, 64)).astype(dtype) for _ in range(3))
        vn[0, 1, 250, 3] = np.inf
        qn[0, 0, 7], kn[0, 0, 300] = 6e4 if dtype == np.float16 else 1e20, 6e4 if dtype == np.float16 else 1e20
        mask = np.triu(np.full((T, T), -np.inf, np.float32), 1)
        mask[5] = -np.inf
        with np.errstate(over="ignore", invalid="ignore"):
            s = np.einsum("bhid,bhjd->bhij", *f32(qn, kn)) * 0.125 + mask
            e = np.exp(s - s.max(-1, keepdims=True))
            exp = np.einsum("bhij,bhjd->bhid", e / e.sum(-1, keepdims=True), f32(vn)[0])
        cases.append(("inf_and_nan", dtype, masked, [qn, kn, vn, mask.astype(dtype)], exp))
        # a causal where-condition, a padding mask per batch entry (no row index: read from global memory, whole
        # padded blocks left out), and k flipped along the keys (no tensor map reads it: TMA's option keeps wgmma's)
        B, H, T = 2, 2, 300
        q, k, v = (RNG.standard_normal((B, H, T, 64)).astype(dtype) for _ in range(3))
        keep = np.tril(np.ones((T, T), bool))
        pad = np.zeros((B, 1, 1, T), np.float32)
        pad[0, ..., 100:], pad[1, ..., 260:] = -np.inf, -np.inf
        cases.append(("where_causal", dtype, lambda t: zd.softmax(zd.where(t[3], (t[0] @ t[1].mT) * 0.125, -math.inf),
                                                                  axis=-1) @ t[2],
                      [q, k, v, keep], ref_attention(*f32(q, k, v), 0.125, np.where(keep, 0, -np.inf).astype(np.float32))))
        cases.append(("padding", dtype, masked, [q, k, v, pad.astype(dtype)], ref_attention(*f32(q, k, v), 0.125, pad)))
        cases.append(("flipped_k", dtype, lambda t: zd.softmax((t[0] @ t[1].flip(2).mT) * 0.125 + t[3], axis=-1) @ t[2],
                      [q, k, v, causal_t := np.triu(np.full((T, T), -np.inf, np.float32), 1).astype(dtype)],
                      ref_attention(*f32(q, k[:, :, ::-1], v), 0.125, f32(causal_t)[0])))
    return cases


FORMS_CASES = _forms_cases()


@pytest.mark.skipif(not compute_capability_9(), reason="wgmma needs compute capability 9.0")
@pytest.mark.parametrize("wgmma,stages", [(2, 2), (2, 3), (1, 0), (0, 0)], ids=["tma", "tma_s3", "wgmma", "mma_sync"])
@pytest.mark.parametrize("case", FORMS_CASES, ids=[f"{c[0]}_{np.dtype(c[1]).name}" for c in FORMS_CASES])
def test_cuda_attention_every_tensor_core_form_against_numpy(cuda_worker, case, wgmma, stages):
    """Each of the tuner's forms of the half-type kernel on Hopper (codegen/attention_tma.py: TMA copies in 2
    and 3 stages; codegen/attention_tc.py: wgmma, and mma.sync), rendered with that option and run kernel by
    kernel, against NumPy."""
    from helpers import run_kernels

    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A, render_kernel

    label, dtype, build, arrays, exp = case
    out = build([zd.tensor(x) for x in arrays])
    (kern,) = kernelize([out.node])
    opts = KernelOpts(wgmma=wgmma, stages=stages)
    src = render_kernel(kern, CUDA_SM90A, opts).source
    assert ("wgmma.mma_async" in src) == bool(wgmma) and ("mma.sync" in src) != bool(wgmma), label
    assert ("cp.async.bulk.tensor" in src) == (wgmma == 2 and label != "flipped_k"), label
    got = run_kernels(cuda_worker, out, lambda k: opts, "cuda_sm90a").astype(np.float32)
    tol = 4e-3 if dtype == np.float16 else 2e-2
    nan = np.isnan(exp)
    assert (np.isnan(got) == nan).all(), (label, np.isnan(got).sum(), nan.sum())
    np.testing.assert_allclose(got[~nan], exp[~nan], rtol=tol, atol=tol, err_msg=label)


FORMS = {"tma": (2, 2), "wgmma": (1, 0), "mma_sync": (0, 0)}
ROW_STATS_CASES = [(dtype, label, form) for dtype in (np.float16, BF) for label in ("causal", "per_batch", "where", "none")
                   for form in FORMS] + [(np.float32, label, "mma_sync") for label in ("causal", "where")]


@pytest.mark.skipif(not compute_capability_9(), reason="wgmma needs compute capability 9.0")
@pytest.mark.parametrize("dtype,label,form", ROW_STATS_CASES,
                         ids=[f"{lb}_{np.dtype(dt).name}_{f}" for dt, lb, f in ROW_STATS_CASES])
def test_cuda_attention_backward_from_each_forms_row_statistics(cuda_worker, dtype, label, form):
    """Training through a fused attention (graph/recompute.py): the forward kernel also stores each row's
    log-sum-exp, and the backward recomputes p from it. With the forward in each tensor-core form (float32:
    the register-tiled kernel), rows and keys not multiples of the blocks, and each kind of mask, the gradients
    of q, k and v match NumPy's."""
    from helpers import ref_attention_grads, run_kernels

    from zyx_dist.codegen.options import KernelOpts

    B, H, T, D = 2, 3, 200, 64
    q, k, v, g = (RNG.standard_normal((B, H, T, D)).astype(dtype) for _ in range(4))
    f32 = [x.astype(np.float32) for x in (q, k, v, g)]
    causal = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    mask = {"causal": causal, "per_batch": RNG.standard_normal((B, 1, T, T)).astype(np.float32),
            "where": causal, "none": None}[label]
    ts = [zd.tensor(x) for x in (q, k, v)]
    s = (ts[0] @ ts[1].mT) * 0.125
    if label == "where":
        s = zd.where(zd.tensor(np.isfinite(causal)), s, -math.inf)
    elif mask is not None:
        mask = mask.astype(dtype).astype(np.float32)
        s = s + zd.tensor(mask.astype(dtype))
    out = zd.softmax(s, axis=-1) @ ts[2]
    grads = zd.grad((out * zd.tensor(g)).sum(), ts)
    kernels = kernelize([x.node for x in grads])
    fused = [kern for kern in kernels if attention.match(kern) is not None]
    assert len(fused) == 1 and len(fused[0].outputs) == 2, label  # the output and the row statistics
    assert not any(o.size == B * H * T * T for o in fused[0].outputs + fused[0].inputs)
    wgmma, stages = FORMS[form]
    opts = KernelOpts(wgmma=wgmma, stages=stages)
    got = run_kernels(cuda_worker, tuple(grads), lambda kern: opts if attention.match(kern) else None, "cuda_sm90a")
    tol = 5e-3 if dtype == np.float32 else 0.05
    for name, x, want in zip("qkv", got, ref_attention_grads(*f32[:3], 0.125, mask, f32[3])):
        np.testing.assert_allclose(x.astype(np.float64), want, rtol=tol, atol=tol, err_msg=f"d{name} {label}")


@pytest.mark.skipif(not compute_capability_9(), reason="wgmma needs compute capability 9.0")
def test_cuda_attention_tma_form_trusts_no_flags_of_an_earlier_launch(cuda_worker):
    """The TMA form's skip flags live in module memory across launches, tagged with each launch's number: the
    same kernel run on a causal mask, then on masks that hide nothing, hide other blocks and hide the causal
    blocks again with an inf in v where only hidden scores meet it, matches NumPy every time (a flag of the
    launch before, trusted, would leave out blocks that count or keep a NaN out)."""
    from helpers import run_kernels

    from zyx_dist.codegen.options import KernelOpts

    B, H, T = 2, 2, 320
    q, k, v = (RNG.standard_normal((B, H, T, 64)).astype(BF) for _ in range(3))
    causal = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    anti = np.tril(np.full((T, T), -np.inf, np.float32), -1)
    v_inf = v.copy()
    v_inf[0, 1, 250, 3] = np.inf
    for mask, vv in ((causal, v), (np.zeros((T, T), np.float32), v), (anti, v), (causal, v_inf), (causal, v)):
        ts = [zd.tensor(x) for x in (q, k, vv, mask.astype(BF))]
        out = zd.softmax((ts[0] @ ts[1].mT) * 0.125 + ts[3], axis=-1) @ ts[2]
        got = run_kernels(cuda_worker, out, lambda kern: KernelOpts(wgmma=2, stages=2), "cuda_sm90a").astype(np.float32)
        qf, kf, vf = (x.astype(np.float32) for x in (q, k, vv))
        with np.errstate(over="ignore", invalid="ignore"):
            s = np.einsum("bhid,bhjd->bhij", qf, kf) * 0.125 + mask.astype(BF).astype(np.float32)
            e = np.exp(s - s.max(-1, keepdims=True))
            exp = np.einsum("bhij,bhjd->bhid", e / e.sum(-1, keepdims=True), vf)  # no BLAS: 0 * inf stays NaN
        nan = np.isnan(exp)
        assert (np.isnan(got) == nan).all(), (np.isnan(got).sum(), nan.sum())
        np.testing.assert_allclose(got[~nan], exp[~nan], rtol=2e-2, atol=2e-2)


# (the last: sums over 1024 rows, which split-K leaves whole where the products are asked for)
BACKWARD_CASES = [(BF, "causal", 8, 200, 200, 64), (np.float16, "where", 2, 64, 130, 128), (BF, "none", 4, 96, 64, 32),
                  (BF, "per_batch", 2, 150, 150, 64), (np.float16, "causal", 32, 1024, 1024, 64)]


@pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("dtype,label,H,Tq,Tk,D", BACKWARD_CASES,
                         ids=[f"{np.dtype(c[0]).name}_{c[1]}_{c[3]}x{c[4]}_d{c[5]}" for c in BACKWARD_CASES])
def test_cuda_attention_backward_products_on_tensor_cores(dtype, label, H, Tq, Tk, D, monkeypatch):
    """On a GPU with tensor cores, asked for (ZYX_DIST_ATTENTION_GRAD=1: the session's limits then say so), dQ, dK
    and dV are each one mma.sync kernel that recomputes the scores, p and dS (codegen/attention_grad.py): nothing
    T x T is stored, and the gradients match NumPy's for each mask (an additive causal -1e9, `where` with -inf, one
    per batch entry, none), head dims 32 to 128, lengths past the blocks and cross-attention."""
    monkeypatch.setenv("ZYX_DIST_ATTENTION_GRAD", "1")
    assert _session_grads(dtype, label, 2, H, Tq, Tk, D) == (0, 3)


@pytest.mark.skipif(not compute_capability_9(), reason="ZYX_DIST_ATTENTION_GRAD=wgmma applies on compute capability 9.0")
@pytest.mark.parametrize("B,H,T,D", [(2, 4, 200, 64), (2, 4, 200, 32), (1, 2, 2048, 64)])
def test_cuda_attention_backward_recomputes_where_wgmma_applies(B, H, T, D, monkeypatch):
    """With ZYX_DIST_ATTENTION_GRAD=wgmma, a Hopper session recomputes the products where wgmma's form applies (head
    dim 64: three product kernels, nothing T x T stored; with few heads and long rows too, whose sums split-K
    leaves whole) and keeps the stored p and dS elsewhere (head dim 32); the gradients match NumPy's either way."""
    monkeypatch.setenv("ZYX_DIST_ATTENTION_GRAD", "wgmma")
    assert _session_grads(BF, "causal", B, H, T, T, D) == ((0, 3) if D == 64 else (2, 0))


def _session_grads(dtype, label: str, B: int, H: int, Tq: int, Tk: int, D: int) -> tuple[int, int]:
    """The attention's gradients (tests/helpers.attention_grads) in a session of its own on cuda:0, as
    ZYX_DIST_ATTENTION_GRAD sets it, checked against NumPy's: (the kernels' T x T outputs, the product kernels
    that recompute their weights) in its plan."""
    from helpers import attention_grads

    from zyx_dist.codegen import attention_grad
    from zyx_dist.engine import session as zsession

    session = zd.init(ray=False, devices=["cuda:0"])
    try:
        grads, want = attention_grads(RNG, dtype, label, B, H, Tq, Tk, D, 0.125)
        kernels, _, _ = zsession.current().plan([x.node for x in grads])
        square = sum(o.size == B * H * Tq * Tk for kern in kernels for o in kern.outputs)
        products = sum(attention_grad.match(kern) is not None for kern in kernels)
        zd.realize(*grads)
        for name, x, exp in zip("qkv", grads, want):
            np.testing.assert_allclose(x.numpy().astype(np.float64), exp, rtol=0.05, atol=0.05, err_msg=f"d{name}")
        return square, products
    finally:
        zd.shutdown()
        del session


# (wgmma's form only where the head dims are whole 64-half rows)
FORM_CASES = [(*c, form) for c in BACKWARD_CASES[:4] for form in ((1, 0) if c[5] % 64 == 0 else (0,))]


@pytest.mark.skipif(not compute_capability_9(), reason="wgmma needs compute capability 9.0")
@pytest.mark.parametrize("dtype,label,H,Tq,Tk,D,form", FORM_CASES,
                         ids=[f"{np.dtype(c[0]).name}_{c[1]}_{c[3]}x{c[4]}_d{c[5]}_{'wgmma' if c[6] else 'mma_sync'}"
                              for c in FORM_CASES])
def test_cuda_attention_backward_products_in_each_form(cuda_worker, dtype, label, H, Tq, Tk, D, form):
    """Each of the tuner's forms of the backward's products on Hopper (codegen/attention_grad.py: wgmma where the
    head dims are whole 64-half rows, and mma.sync), rendered with that option and run kernel by kernel, against
    NumPy, for each kind of mask, lengths past the blocks (the wgmma form's register reuse showed only with tails)
    and cross-attention."""
    from helpers import attention_grads, run_kernels

    from zyx_dist.codegen import attention_grad
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A, render_kernel
    from zyx_dist.fuse.kernelize import Limits

    grads, want = attention_grads(RNG, dtype, label, 2, H, Tq, Tk, D, 0.125)
    limits = Limits(grad_heads=16)
    products = [kern for kern in kernelize([x.node for x in grads], limits) if attention_grad.match(kern) is not None]
    assert len(products) == 3
    for kern in products:
        src = render_kernel(kern, CUDA_SM90A, KernelOpts(wgmma=form)).source
        assert ("wgmma.mma_async" in src) == bool(form) and ("mma.sync" in src) != bool(form), label
    got = run_kernels(cuda_worker, tuple(grads), lambda kern: KernelOpts(wgmma=form) if attention_grad.match(kern)
                      else None, "cuda_sm90a", limits=limits)
    for name, x, exp in zip("qkv", got, want):
        np.testing.assert_allclose(x.astype(np.float64), exp, rtol=0.05, atol=0.05, err_msg=f"d{name} {label}")
