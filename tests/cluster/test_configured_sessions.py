"""Sessions configured differently from the shared one: scheduler policies (`round_robin`, `single`) and a
small `memory_limit` (spilling, `zd.OutOfMemoryError`), mostly in-process with 1-3 PoCL workers
(`ray=False, devices={"opencl-cpu": N}`: the same scheduler, protocol and workers as on Ray), and once on
Ray (policy `single` with an 8 MiB limit on 3 workers, which also checks that `zd.shutdown()` stops the Ray
instance `zd.init` started and is safe twice).

Every test here is marked `own_session`: it shuts the shared session down, starts its own and shuts it down
at the end; the cluster conftest starts the shared Ray session again for the next test that needs it. The
module's name sorts before the other modules of the tier, so the shared session is started only after it.
"""

from __future__ import annotations

import gc
import tempfile
from contextlib import contextmanager

import numpy as np
import pytest
import ray

import zyx_dist as zd
from zyx_dist.engine import probe

pytestmark = pytest.mark.own_session

WORKERS = ["opencl:0", "opencl:1", "opencl:2"]
MiB = 1 << 20


@contextmanager
def session(config=None, *, ray: bool = False, devices=None):
    zd.shutdown()
    s = zd.init(config, ray=ray, devices=devices)
    try:
        yield s
    finally:
        zd.shutdown()


def rnd(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def in_use() -> dict[str, int]:
    gc.collect()
    return zd.stats()["bytes_in_use"]


# ---- policies ----------------------------------------------------------------------------------------------------

def test_round_robin_cycles_over_the_workers():
    with session({"scheduler": {"policy": "round_robin"}}, devices={"opencl-cpu": 3}):
        arrs = [rnd((8, 8 + i), i) for i in range(6)]
        outs = [zd.tensor(a) * 2 for a in arrs]  # six independent kernels
        plan = zd.explain(*outs)
        assert [k.device for k in plan.kernels] == WORKERS * 2
        assert all(k.reason == "policy round_robin" for k in plan.kernels)
        zd.realize(*outs)
        assert [o.device for o in outs] == WORKERS * 2
        for o, a in zip(outs, arrs):
            np.testing.assert_allclose(o.numpy(), a * 2)


def test_round_robin_ignores_data_locality_and_moves_inputs():
    with session({"scheduler": {"policy": "round_robin"}}, devices={"opencl-cpu": 3}):
        a = rnd((16, 16), 0)
        x = zd.tensor(a, device="opencl:2").realize()
        outs = [x * (i + 1) + i for i in range(3)]  # three kernels, all reading x on opencl:2
        plan = zd.explain(*outs)
        assert [k.device for k in plan.kernels] == WORKERS
        assert sorted((t.src, t.dst) for t in plan.transfers) == [("opencl:2", "opencl:0"), ("opencl:2", "opencl:1")]
        zd.realize(*outs)
        assert zd.stats()["transfers"] == 2 and zd.stats()["bytes_transferred"] == 2 * x.nbytes
        for i, o in enumerate(outs):
            np.testing.assert_allclose(o.numpy(), a * (i + 1) + i, rtol=1e-6)


def test_single_policy_runs_everything_on_the_first_worker():
    with session({"scheduler": {"policy": "single"}}, devices={"opencl-cpu": 3}):
        a, b = rnd((32, 32), 1), rnd((32, 32), 2)
        x = zd.tensor(a, device="opencl:1").realize()  # a pinned upload still goes where it is pinned
        assert x.device == "opencl:1"
        outs = [(x @ zd.tensor(b)).relu(), zd.tensor(b).exp(), x.sum(axis=1)]
        plan = zd.explain(*outs)
        assert {k.device for k in plan.kernels} == {"opencl:0"}
        assert all(k.reason == "policy single" for k in plan.kernels)
        assert [(t.src, t.dst, t.nbytes) for t in plan.transfers] == [("opencl:1", "opencl:0", x.nbytes)]
        zd.realize(*outs)
        assert [o.device for o in outs] == ["opencl:0"] * 3
        assert zd.stats()["transfers"] == 1
        np.testing.assert_allclose(outs[0].numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(outs[1].numpy(), np.exp(b), rtol=1e-5)
        np.testing.assert_allclose(outs[2].numpy(), a.sum(axis=1), rtol=1e-4, atol=1e-5)
        # a pin still beats the policy
        y = (x * 2).to("opencl:2").realize()
        assert y.device == "opencl:2"


def test_in_process_heft_spreads_independent_work_like_ray():
    with session(devices={"opencl-cpu": 3}) as s:
        assert s.device_names == WORKERS
        assert [d.node for d in zd.devices()] == ["local"] * 3
        xs = [rnd((96, 96), 10 + i) for i in range(3)]
        outs = [(zd.tensor(x) @ zd.tensor(x)).relu() @ zd.tensor(x) for x in xs]
        zd.realize(*outs)
        assert sorted(o.device for o in outs) == WORKERS
        assert zd.stats()["transfers"] == 0
        for o, x in zip(outs, xs):
            np.testing.assert_allclose(o.numpy(), np.maximum(x @ x, 0) @ x, rtol=1e-4, atol=1e-3)


# ---- memory ------------------------------------------------------------------------------------------------------

def test_working_set_larger_than_the_limit_completes_by_spilling():
    with session({"memory_limit": "8MiB"}, devices={"opencl-cpu": 1}):
        arrs = [rnd((512, 512), 20 + i) for i in range(8)]  # 1 MiB each
        # every tensor stays alive until the end (a tensor dying mid-way trips the bug of the test below)
        leaves = [zd.tensor(a) for a in arrs]
        outs = [(x * 2).realize() for x in leaves]  # 16 MiB kept alive: uploads and results
        assert zd.stats()["spills"] > 0
        assert in_use()["opencl:0"] <= 8 * MiB
        more = [o * 3 + 1 for o in outs]  # 8 more MiB in one realize: spills and reloads inside it
        spills = zd.stats()["spills"]
        zd.realize(*more)
        assert zd.stats()["spills"] > spills
        for a, o, m in zip(arrs, outs, more):
            np.testing.assert_allclose(o.numpy(), a * 2, rtol=1e-6)
            np.testing.assert_allclose(m.numpy(), a * 6 + 1, rtol=1e-5, atol=1e-5)
        totals = [outs[0]]
        for o in outs[1:]:  # reloads spilled buffers as they are needed
            totals.append((totals[-1] + o).realize())
        np.testing.assert_allclose(totals[-1].numpy(), 2 * sum(arrs), rtol=1e-4, atol=1e-4)
        del leaves, outs, more, totals, o, m  # the loop variables hold tensors too
        assert in_use()["opencl:0"] == 0


def test_working_set_of_temporaries_larger_than_the_limit():
    with session({"memory_limit": "8MiB"}, devices={"opencl-cpu": 1}):
        arrs = [rnd((512, 512), 30 + i) for i in range(10)]
        outs = [(zd.tensor(a) * 2).realize() for a in arrs]  # each uploaded leaf dies right after its realize
        for a, o in zip(arrs, outs):
            np.testing.assert_allclose(o.numpy(), a * 2, rtol=1e-6)


def test_free_bytes_of_devices_follow_freed_tensors():
    with session(devices={"opencl-cpu": 1}):
        x = zd.tensor(rnd((512, 512), 35)).realize()
        del x
        gc.collect()
        y = (zd.tensor(rnd((256, 256), 36)) * 2).realize()  # the realize that sends x's Free
        (d,) = zd.devices()
        assert in_use() == {"opencl:0": y.nbytes}
        assert d.memory_bytes - d.free_bytes == y.nbytes  # 1 MiB of x stays counted in the driver's mirror


def test_memory_fit_spreads_a_working_set_over_workers_before_spilling():
    with session({"memory_limit": "8MiB"}, devices={"opencl-cpu": 3}):
        arrs = [rnd((512, 512), 40 + i) for i in range(12)]
        outs = [(zd.tensor(a) + 1).realize() for a in arrs]
        assert zd.stats()["spills"] == 0
        use = in_use()
        assert sum(use.values()) == 12 * MiB and max(use.values()) <= 8 * MiB
        assert len({o.device for o in outs}) >= 2
        for a, o in zip(arrs, outs):
            np.testing.assert_allclose(o.numpy(), a + 1, rtol=1e-6)


@pytest.mark.parametrize("workers", [1, 3])
def test_tensor_larger_than_the_limit_raises_and_leaves_everything_usable(workers):
    with session({"memory_limit": "8MiB"}, devices={"opencl-cpu": workers}):
        a = rnd((256, 256), 60)
        x = zd.tensor(a).realize()
        y = (x * 2).realize()
        before = in_use()
        big = zd.ones((1536, 1536)) * x[0, 0]  # 9 MiB: more than any worker's pool
        with pytest.raises(zd.OutOfMemoryError) as info:
            big.realize()
        e = info.value
        assert isinstance(e, MemoryError) and isinstance(e, zd.ZyxError)
        assert e.device in WORKERS[:workers] and e.device in str(e)
        assert e.requested >= 1536 * 1536 * 4 and 0 <= e.free < e.requested
        assert str(e.requested) in str(e) and str(e.free) in str(e)
        assert in_use() == before
        with pytest.raises(zd.OutOfMemoryError) as info:  # an upload without a kernel: the pool says no
            zd.tensor(np.zeros((1536, 1536), np.float32)).realize()
        assert info.value.device in str(info.value)
        assert in_use() == before
        np.testing.assert_allclose(x.numpy(), a)
        np.testing.assert_allclose(y.numpy(), 2 * a)
        np.testing.assert_allclose((x + y).numpy(), 3 * a, rtol=1e-6)
        np.testing.assert_allclose((zd.ones((1024, 1024)) * x[1, 1]).numpy(), np.full((1024, 1024), a[1, 1]))


def test_peaks_are_measured_under_a_small_memory_limit(monkeypatch):
    monkeypatch.setattr(probe, "_memory", {})  # as in a new process: no probe result in memory
    with tempfile.TemporaryDirectory() as cache, \
            session({"memory_limit": "8MiB", "autotune": {"cache_dir": cache}}, devices={"opencl-cpu": 1}):
        (d,) = zd.devices()  # ...nor on disk (a fresh cache directory)
        assert d.peak_gflops > 0 and d.peak_gbps > 0


# ---- the same on Ray ---------------------------------------------------------------------------------------------

def test_ray_single_policy_session_and_shutdown():
    """One Ray session with policy `single` and an 8 MiB pool per worker: placement, spilling and
    OutOfMemoryError through the actors; then `zd.shutdown()` (twice) stops the Ray instance it started."""
    with session({"scheduler": {"policy": "single"}, "memory_limit": "8MiB"}, ray=True, devices={"opencl-cpu": 3}):
        assert ray.is_initialized()
        assert [d.memory_bytes for d in zd.devices()] == [8 * MiB] * 3
        a = rnd((256, 256), 70)
        x = zd.tensor(a, device="opencl:2").realize()
        ys = [x * (i + 1) for i in range(3)]
        plan = zd.explain(*ys)
        assert {k.device for k in plan.kernels} == {"opencl:0"} and len(plan.transfers) == 1
        zd.realize(*ys)
        assert [y.device for y in ys] == ["opencl:0"] * 3
        # spilling on a Ray worker: 12 MiB kept alive on opencl:0, with 3 MiB of ys
        arrs = [rnd((512, 512), 80 + i) for i in range(6)]
        leaves = [zd.tensor(b) for b in arrs]  # kept alive, so the working set outgrows the pool
        outs = [(t - 1).realize() for t in leaves]
        assert zd.stats()["spills"] > 0
        assert all(o.device == "opencl:0" for o in outs)
        for b, o in zip(arrs, outs):
            np.testing.assert_allclose(o.numpy(), b - 1, rtol=1e-6)
        before = in_use()
        with pytest.raises(zd.OutOfMemoryError) as info:
            (zd.ones((1536, 1536)) * x[0, 0]).realize()
        assert info.value.device == "opencl:0" and "opencl:0" in str(info.value)
        assert in_use() == before
        for i, y in enumerate(ys):
            np.testing.assert_allclose(y.numpy(), a * (i + 1), rtol=1e-6)
        del outs, leaves, ys, x, o, y, info  # loop variables and the traceback of the error hold tensors too
        assert all(v == 0 for v in in_use().values())
    assert not ray.is_initialized()  # zd.init started it, zd.shutdown stopped it
    zd.shutdown()  # safe twice
    zd.shutdown()
