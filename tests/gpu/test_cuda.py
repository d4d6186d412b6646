"""GPU tier, CUDA through CuPy (marker `gpu`; skipped without cupy or a GPU):

1. The `Worker` on `cuda:0` with hand-written CUDA kernels: alloc / copy in / compile / launch / copy
   out against NumPy, ordering of dependent launches, kernel timing, spill and reload, a compile error
   (numbered source and NVRTC log), a missing kernel, out of memory under a memory limit.
2. Representative ops on an in-process session on `cuda:0` (`zd.init(ray=False, devices=["cuda:0"])`),
   and the whole runtime suite on `cuda:0` in a subprocess (ZYX_DIST_DEVICES=cuda:0).
3. Two GPUs: in-process (transfers through the host), and on Ray with two CUDA workers, where a tensor
   made on cuda:0 and used by a kernel pinned on cuda:1 moves by NCCL (checked in the plan, in
   `zd.stats()` and in the values), in both directions in one step; the same with NCCL disabled
   (ZYX_DIST_NCCL=0: the object-store path).
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_cases import CASES, check
from gpu_util import need_cuda, run_runtime_suite

import zyx_dist as zd
from zyx_dist.protocol import Alloc, Compile, CopyIn, CopyOut, Failed, Free, Launch, Recv, Reload, Send, Spill, Sync

pytestmark = pytest.mark.gpu

AXPB = """extern "C" __global__ void axpb(const float* __restrict__ a, float* __restrict__ b) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000) b[i] = a[i] * 2.0f + 1.0f;
}"""
INC = """extern "C" __global__ void inc(float* a) { int i = blockIdx.x * blockDim.x + threadIdx.x; a[i] += 1.0f; }"""
HALF = """#include <cuda_fp16.h>
extern "C" __global__ void twice(const __half* a, __half* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; b[i] = __float2half_rn(__half2float(a[i]) * 2.0f);
}"""


def ok(res) -> list:
    bad = [r for r in res.results if isinstance(r, Failed)]
    assert not bad, bad[0].message
    return [r.value for r in res.results]


# ---- 1. the worker ------------------------------------------------------------------------------------------

@pytest.fixture
def worker():
    need_cuda()
    from zyx_dist.runtime import Worker

    w = Worker("cuda:0", profile=True)
    yield w
    w.close()


def test_info(worker):
    info = worker.info()
    assert info["backend"] == "cuda" and info["name"] == "cuda:0" and info["type"] == "gpu"
    assert info["compute_units"] > 0 and info["memory_bytes"] > 0 and info["fp16"] and info["fp64"]
    assert info["nccl_rank"] is None
    d = worker.backend.info()
    assert d["compute_capability"].count(".") == 1 and d["name"]


def test_alloc_copy_compile_launch_copyout(worker):
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)  # a grid of 1024 threads, guarded
    res = worker.run([Alloc(1, x.nbytes), Alloc(2, x.nbytes), CopyIn(1, x), Compile(7, AXPB, "axpb"),
                      Launch(7, (1, 2), (1024,), (256,), reads=(1,), writes=(2,)), CopyOut(2, "float32", (10, 100))])
    out = ok(res)[-1]
    assert out.shape == (10, 100)
    np.testing.assert_allclose(out.ravel(), x * 2 + 1, rtol=1e-6)
    assert res.bytes_in_use == 2 * x.nbytes
    assert len(res.kernel_seconds) == 1 and 0 < res.kernel_seconds[0] < 1


def test_dependent_launches_are_ordered(worker):
    n, steps = 1 << 22, 20
    x = np.arange(n, dtype=np.float32) % 97
    batch = [Alloc(1, x.nbytes), CopyIn(1, x), Compile(1, INC, "inc")]
    batch += [Launch(1, (1,), (n,), (256,), reads=(1,), writes=(1,)) for _ in range(steps)]
    batch.append(CopyOut(1, "float32", (n,)))
    np.testing.assert_array_equal(ok(worker.run(batch))[-1], x + steps)


def test_float16_kernel_and_cuda_fp16(worker):
    x = np.linspace(-3, 3, 512).astype(np.float16)
    out = ok(worker.run([Alloc(1, x.nbytes), Alloc(2, x.nbytes), CopyIn(1, x), Compile(1, HALF, "twice"),
                         Launch(1, (1, 2), (512,), (128,), (1,), (2,)), CopyOut(2, "float16", (512,))]))[-1]
    np.testing.assert_array_equal(out, x * np.float16(2))


@pytest.mark.parametrize("elems", [1, 2])
def test_half_type_vector_form_against_numpy(worker, elems):
    """Loop-free half-type kernels in the vector form (four neighbours per 8-byte load and store, widened to a
    float4), forced by their options, with a tail past the last quad: bfloat16 and float16 inputs beside a float32
    one, exp (CUDA's fast intrinsic for half types) and a cast, equal to NumPy within the half type's rounding."""
    import ml_dtypes
    from helpers import run_kernels

    from zyx_dist.codegen.options import KernelOpts

    rng = np.random.default_rng(4)
    for dtype in (ml_dtypes.bfloat16, np.float16):
        a = rng.uniform(-4, 4, (3001, 7)).astype(dtype)
        b = rng.standard_normal((3001, 7)).astype(np.float32)
        t = zd.exp(zd.tensor(a)) * 0.5 + zd.tensor(b).astype(a.dtype)
        got = run_kernels(worker, t, lambda _k, e=elems: KernelOpts(vec=4, elems=e, lws=128), "cuda")
        assert got.dtype == dtype
        want = np.exp(a.astype(np.float64)) * 0.5 + b.astype(dtype).astype(np.float64)
        tol = 2.0 ** (-8 if dtype is ml_dtypes.bfloat16 else -10)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("group", [32, 64, 128, 256])
def test_row_kernels_in_quads_against_numpy(worker, group):
    """Row kernels in quads (the row in registers, four neighbours per 16-byte or 8-byte load and store; a warp
    alone shuffles without a barrier): softmax behind an int mask with NaN, inf and all -inf rows, and a layer norm
    with weights, in float32, bfloat16 and float16, rows of 1024 and of 96 (shorter than one pass), against NumPy."""
    import ml_dtypes
    from helpers import run_kernels

    from zyx_dist.codegen.options import KernelOpts

    rng = np.random.default_rng(9)
    opts = lambda k: KernelOpts(group=group, cache=1, vec=4) if k.row else None
    for dtype in (np.float32, ml_dtypes.bfloat16, np.float16):
        tol = {np.float32: 1e-5, np.float16: 2.0 ** -10}.get(dtype, 2.0 ** -8)
        for cols in (1024, 96):
            x = (rng.standard_normal((41, cols)) * 3).astype(dtype)
            x[3, 5], x[5, 7], x[4] = np.nan, np.inf, -np.inf
            keep = (rng.random((41, cols)) > 0.2).astype(np.int32)
            keep[:, 0] = 1
            t = zd.softmax(zd.where(zd.tensor(keep) == 1, zd.tensor(x), -np.inf), axis=-1)
            got = run_kernels(worker, t, opts, "cuda")
            assert got.dtype == dtype
            m = np.where(keep == 1, x.astype(np.float64), -np.inf)
            with np.errstate(invalid="ignore"):
                e = np.exp(m - m.max(-1, keepdims=True))
                want = e / e.sum(-1, keepdims=True)
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 1e-2)
            w = rng.standard_normal(cols).astype(dtype)
            tx = zd.tensor(np.nan_to_num(x, posinf=1.0, neginf=-1.0))
            mean = tx.mean(-1, keepdims=True)
            ln = (tx - mean) / zd.sqrt(((tx - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * zd.tensor(w)
            got = run_kernels(worker, ln, opts, "cuda").astype(np.float64)
            xf = np.nan_to_num(x, posinf=1.0, neginf=-1.0).astype(np.float64)
            mf = xf.mean(-1, keepdims=True)
            want = (xf - mf) / np.sqrt(((xf - mf) ** 2).mean(-1, keepdims=True) + 1e-5) * w.astype(np.float64)
            np.testing.assert_allclose(got, want, rtol=8 * tol, atol=8 * tol)


def test_spill_reload_free_and_reuse(worker):
    x = np.arange(1 << 16, dtype=np.int64)
    ok(worker.run([Alloc(1, x.nbytes), CopyIn(1, x), Spill(1)]))
    assert worker.stats()["spilled_bytes"] == x.nbytes and worker.stats()["bytes_in_use"] == 0
    out = ok(worker.run([Reload(1), CopyOut(1, "int64", x.shape), Free(1), Alloc(2, x.nbytes), Free(2), Sync()]))
    np.testing.assert_array_equal(out[1], x)
    assert worker.stats()["bytes_in_use"] == 0


def test_compile_error_has_numbered_source_and_log(worker):
    res = worker.run([Compile(1, 'extern "C" __global__ void bad(float* a) { a[0] = undefined_thing; }', "bad")])
    (f,) = res.results
    assert isinstance(f, Failed) and f.error == "CompileError"
    assert "   1| extern" in f.message and "undefined_thing" in f.data["log"]


def test_missing_kernel_is_a_compile_error(worker):
    (f,) = worker.run([Compile(1, INC, "not_there")]).results
    assert isinstance(f, Failed) and f.error == "CompileError" and "not_there" in f.message


def test_out_of_memory_under_a_limit():
    need_cuda()
    from zyx_dist.runtime import Worker

    with Worker("cuda:0", memory_limit=1 << 20) as w:
        assert w.info()["memory_bytes"] == 1 << 20
        ok(w.run([Alloc(1, 1 << 19)]))
        (f,) = w.run([Alloc(2, 1 << 20)]).results
        assert isinstance(f, Failed) and f.error == "OutOfMemoryError" and f.data["requested"] == 1 << 20
        ok(w.run([Free(1), Alloc(3, 1 << 20), Free(3)]))  # the memory came back


def test_unknown_cuda_device():
    need_cuda()
    from zyx_dist.runtime import Worker

    with pytest.raises(zd.DeviceError, match="cuda:99"):
        Worker("cuda:99")


def test_send_without_nccl_is_an_error(worker):
    (_, f) = worker.run([Alloc(1, 64), Send(1, 1, 64)]).results
    assert isinstance(f, Failed) and "NCCL" in f.message
    (f,) = worker.run([Recv(1, 1, 64)]).results
    assert isinstance(f, Failed)


# ---- 2. ops on cuda:0 -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_session():
    need_cuda()
    zd.shutdown()
    s = zd.init(ray=False, devices=["cuda:0"])
    yield s
    zd.shutdown()


def test_session_device(cuda_session):
    (d,) = zd.devices()
    assert d.name == "cuda:0" and d.backend == "cuda" and d.compute_units > 0
    assert d.peak_gbps > 0 and d.peak_gflops > 0


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_ops(cuda_session, case):
    check(case)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_type_division_against_numpy(cuda_session, dtype):
    """Half types divide as a product with the divisor's reciprocal on CUDA (codegen/cexpr.py HALF_DIVISION): the
    quotients of zeros, infinities, NaNs and large and small values agree with NumPy's float32 division rounded to
    the half type (within one unit of its last place), and a softmax over causal score rows (masked entries: 0
    divided by the row's sum) with NumPy's."""
    import ml_dtypes

    np_dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    big = 3e38 if dtype == "bfloat16" else 6e4
    a = np.array([0.0, -0.0, 1.0, -3.0, np.inf, -np.inf, np.nan, 7.0, 0.0, np.inf, 1e-3, big, 2.5, 1.0], np.float32)
    b = np.array([5.0, 5.0, 0.0, 0.0, 2.0, np.inf, 1.0, np.nan, 0.0, np.inf, 3e-3, big, -1e-2, 3.0], np.float32)
    x, y = (zd.tensor(v.astype(np_dt)) for v in (a, b))
    got = (x / y).numpy().astype(np.float32)
    with np.errstate(all="ignore"):
        want = (a.astype(np_dt).astype(np.float32) / b.astype(np_dt).astype(np.float32)).astype(np_dt).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    ulp = np.abs(want[finite]) * (2.0 ** -7 if dtype == "bfloat16" else 2.0 ** -10) + 1e-30
    assert np.all(np.abs(got[finite] - want[finite]) <= ulp), (got, want)
    rng = np.random.default_rng(3)
    scores = (rng.standard_normal((2, 3, 64, 64)) + np.triu(np.full((64, 64), -1e9), 1)).astype(np_dt)
    p = zd.softmax(zd.tensor(scores), axis=-1).numpy().astype(np.float32)
    s32 = scores.astype(np.float32)
    e = np.exp(s32 - s32.max(-1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(-1, keepdims=True), rtol=1e-2, atol=1e-3)
    assert np.all(p[..., np.triu_indices(64, 1)[0], np.triu_indices(64, 1)[1]] == 0)


def test_programs_are_cuda(cuda_session):
    x = zd.tensor(np.ones((4, 4), np.float32))
    _, programs, _ = cuda_session.plan([(x * 2).node])
    (p,) = [p for ps in programs for p in ps.values()]  # one device model: one program per kernel
    assert p.name.startswith("kc_") and p.dialect == "cuda" and "__global__" in p.source


def test_runtime_suite_on_cuda():
    need_cuda()
    run_runtime_suite("cuda:0")


# ---- 3. two GPUs ------------------------------------------------------------------------------------------

def _send_recv(sched) -> tuple[int, int]:
    cmds = [c for step in sched.steps for batch in step.values() for c in batch]
    return sum(isinstance(c, Send) for c in cmds), sum(isinstance(c, Recv) for c in cmds)


def _move_and_check(s, nccl: bool) -> None:
    n = 1 << 22  # 16 MiB of float32
    a = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    x = (zd.tensor(a, device="cuda:0") * 2 + 1).to("cuda:0").realize()
    assert x.device == "cuda:0"
    zd.reset_stats()
    y = zd.tensor(np.full(n, 3, np.float32), device="cuda:1")
    z = x.to("cuda:1") * y  # a kernel pinned on cuda:1 reading x from cuda:0
    _, _, sched = s.plan([z.node])
    assert [t.via for t in sched.transfers] == ["nccl" if nccl else "host"]
    assert _send_recv(sched) == ((1, 1) if nccl else (0, 0))
    z.realize()
    assert z.device == "cuda:1"
    stats = zd.stats()
    assert stats["transfers"] == 1 and stats["bytes_transferred"] == a.nbytes
    np.testing.assert_allclose(z.numpy(), (a * 2 + 1) * 3, rtol=1e-6)


def _both_directions(s, nccl: bool) -> None:
    """Transfers both ways in one step: Send/Recv posted in one global order cannot deadlock."""
    rng = np.random.default_rng(2)
    a0, b1 = rng.standard_normal((256, 512)).astype(np.float32), rng.standard_normal((256, 512)).astype(np.float32)
    p = (zd.tensor(a0, device="cuda:0") + 1).to("cuda:0").realize()
    q = (zd.tensor(b1, device="cuda:1") - 1).to("cuda:1").realize()
    zd.reset_stats()
    u = p.to("cuda:1") * q
    v = q.to("cuda:0") + p
    w = zd.sum(u.to("cuda:0") * v)  # and back again, after both
    _, _, sched = s.plan([u.node, v.node, w.node])
    assert len(sched.transfers) == 3 and {t.via for t in sched.transfers} == {"nccl" if nccl else "host"}
    zd.realize(u, v, w)
    assert zd.stats()["transfers"] == 3 and zd.stats()["bytes_transferred"] == 3 * a0.nbytes
    uu, vv = (a0 + 1) * (b1 - 1), (b1 - 1) + (a0 + 1)
    np.testing.assert_allclose(u.numpy(), uu, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), vv, rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), np.sum(uu.astype(np.float64) * vv), rtol=1e-4)


def test_two_gpus_in_process():
    need_cuda(2)
    zd.shutdown()
    s = zd.init(ray=False, devices=["cuda:0", "cuda:1"])
    try:
        assert [d.backend for d in zd.devices()] == ["cuda", "cuda"]
        _move_and_check(s, nccl=False)  # in-process workers move data through the host
        _both_directions(s, nccl=False)
    finally:
        zd.shutdown()


@pytest.fixture(params=["nccl", "object_store"])
def ray_two_gpus(request, monkeypatch):
    need_cuda(2)
    pytest.importorskip("ray")
    if request.param == "object_store":
        monkeypatch.setenv("ZYX_DIST_NCCL", "0")
    zd.shutdown()
    s = zd.init(ray=True, devices=["cuda:0", "cuda:1"])
    try:
        yield s, request.param == "nccl"
    finally:
        zd.shutdown()


def test_ray_two_cuda_workers_transfer(ray_two_gpus):
    s, nccl = ray_two_gpus
    ranks = {name: s.backend.info(name).get("nccl_rank") for name in s.device_names}
    assert ranks == ({"cuda:0": 0, "cuda:1": 1} if nccl else {"cuda:0": None, "cuda:1": None})
    assert {s.backend.info(n)["backend"] for n in s.device_names} == {"cuda"}
    _move_and_check(s, nccl)
    _both_directions(s, nccl)


def test_ray_two_cuda_workers_run_ops(ray_two_gpus):
    """A few ops placed by HEFT over both GPUs (transfers as the scheduler chooses), against NumPy."""
    for case in CASES[::4]:
        check(case)


def test_data_parallel_training_over_two_cuda_workers(ray_two_gpus):
    """Issue 16 on two GPUs: the MLP of tests/training.py trained with Adam, its batch sharded over cuda:0 and
    cuda:1 (the gradients' partial sums moved between the workers by NCCL, or the object store), plain and
    through zd.jit, against NumPy; the jitted loop gives the plain loop's weights bit for bit."""
    from training import NpAdam, init_params, train_np, train_zd

    s, _nccl = ray_two_gpus
    make = (lambda ps: zd.optim.Adam(ps, lr=0.05))
    zd.reset_stats()
    plain, plain_losses, _ = train_zd(make, 6, shard_devices=s.device_names)
    moved = zd.stats()
    jitted, jit_losses, f = train_zd(make, 6, shard_devices=s.device_names, jit=True)
    want, want_losses = train_np(NpAdam(init_params(), 0.05), 6)
    np.testing.assert_allclose(plain_losses, want_losses, rtol=1e-10)
    for a, w in zip(plain, want):
        np.testing.assert_allclose(a, w, rtol=1e-9, atol=1e-12)
    assert f.replays >= 2
    np.testing.assert_array_equal(jit_losses, plain_losses)
    for a, b in zip(jitted, plain):
        np.testing.assert_array_equal(a, b)
    assert moved["transfers"] > 0, moved
