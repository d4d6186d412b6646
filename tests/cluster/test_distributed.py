"""Distributed behaviour on the shared Ray session (3 PoCL workers `opencl:0..2`, one Ray instance for the
tier): independent heavy branches spread over the workers, a dependent chain stays on one worker without
transfers, cross-worker inputs are moved once (counted in `zd.stats()`) and the moved copy is freed after
use, results equal NumPy, pools go back to zero once every tensor is dead, the named actors and
`zd.devices()` describe the workers, pins are respected, and `ZYX_DIST_DEBUG=64` prints placements and
transfers.

Each test uses shapes of its own, so the kernels it plans have never run: their estimates come from the
probed peaks, not from device times measured by earlier tests (those differ between the identical workers
by the noise of 3 workers sharing 2 cores, and would make ties unpredictable).
"""

from __future__ import annotations

import gc
import re
import sys

import numpy as np
import pytest
import ray

import zyx_dist as zd
from zyx_dist.engine import session as zsession

WORKERS = ["opencl:0", "opencl:1", "opencl:2"]


def rnd(shape, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)


def relu(a: np.ndarray) -> np.ndarray:
    return np.maximum(a, 0)


def in_use() -> dict[str, int]:
    return zd.stats()["bytes_in_use"]


def collect() -> None:
    """Drop what could keep dead tensors alive: pytest keeps the last failure's traceback (xfail tests too)."""
    sys.last_type = sys.last_value = sys.last_traceback = None
    if hasattr(sys, "last_exc"):
        sys.last_exc = None
    gc.collect()


def chain(x, w, n: int):
    for _ in range(n):
        x = (x @ w).relu()
    return x


def np_chain(x, w, n: int):
    for _ in range(n):
        x = relu(x.astype(np.float64) @ w)
    return x


# ---- the workers -------------------------------------------------------------------------------------------------

def test_named_actors_exist_in_the_namespace(ray_session):
    for name in WORKERS:
        actor = ray.get_actor(f"zyx_dist/worker/{name}", namespace="zyx_dist")
        info = ray.get(actor.info.remote())
        assert info["name"] == name and info["backend"] == "opencl"
    with pytest.raises(ValueError):
        ray.get_actor("zyx_dist/worker/opencl:3", namespace="zyx_dist")


def test_devices_have_node_ids_and_measured_peaks(ray_session):
    devs = zd.devices()
    assert [d.name for d in devs] == WORKERS
    node = ray.get_runtime_context().get_node_id()
    for d in devs:
        assert isinstance(d, zd.DeviceInfo) and d.backend == "opencl"
        assert d.node == node and re.fullmatch(r"[0-9a-f]{56}", d.node)  # one machine: the driver's node
        assert d.peak_gflops > 0 and d.peak_gbps > 0
        assert d.memory_bytes > 0 and 0 <= d.free_bytes <= d.memory_bytes and d.compute_units >= 1


def test_each_cpu_worker_claims_one_cpu_and_no_gpu(ray_session):
    # a local zd.init() fakes no GPUs: Ray sees this machine's (none here), and gives at least one CPU per worker
    assert ray.cluster_resources().get("GPU", 0) == 0
    total = ray.cluster_resources()["CPU"]
    assert total >= 3 and ray.available_resources().get("CPU", 0) == total - 3


# ---- placement of independent and dependent work -----------------------------------------------------------------

def test_independent_heavy_branches_on_fresh_leaves_land_on_different_workers(ray_session):
    xs = [rnd((256, 256), i) for i in range(3)]
    ws = [rnd((256, 256), 10 + i) for i in range(3)]
    outs = [chain(zd.tensor(x), zd.tensor(w), 3) for x, w in zip(xs, ws)]
    plan = zd.explain(*outs)
    assert len(plan.kernels) == 9 and plan.transfers == []
    devs = [k.device for k in plan.kernels]
    assert sorted(devs) == sorted(WORKERS * 3)
    assert all(k.reason.startswith("earliest finish") for k in plan.kernels)
    before = zd.stats()
    zd.realize(*outs)
    after = zd.stats()
    assert sorted(o.device for o in outs) == WORKERS
    assert after["transfers"] == before["transfers"] and after["bytes_transferred"] == before["bytes_transferred"]
    assert after["kernels_launched"] - before["kernels_launched"] == 9
    for o, x, w in zip(outs, xs, ws):
        np.testing.assert_allclose(o.numpy(), np_chain(x, w, 3), rtol=1e-4, atol=1e-4)
    # again, now with measured kernel times: placement may change, results may not
    again = [chain(zd.tensor(x), zd.tensor(w), 3) for x, w in zip(xs, ws)]
    zd.realize(*again)
    for o, x, w in zip(again, xs, ws):
        assert o.device in WORKERS
        np.testing.assert_allclose(o.numpy(), np_chain(x, w, 3), rtol=1e-4, atol=1e-4)


def test_independent_branches_on_inputs_uploaded_to_different_workers_stay_there(ray_session):
    xs = [rnd((192, 192), 20 + i) for i in range(3)]
    ws = [rnd((192, 192), 30 + i) for i in range(3)]
    # uploaded in reverse order, so the placement follows the data and not the device order
    ins = [(zd.tensor(x, device=d).realize(), zd.tensor(w, device=d).realize())
           for x, w, d in zip(xs, ws, reversed(WORKERS))]
    assert [a.device for a, _ in ins] == WORKERS[::-1]
    outs = [chain(a, b, 2) for a, b in ins]
    plan = zd.explain(*outs)
    assert plan.transfers == [] and len(plan.kernels) == 6
    before = zd.stats()["transfers"]
    zd.realize(*outs)
    assert [o.device for o in outs] == WORKERS[::-1]
    assert zd.stats()["transfers"] == before
    for o, x, w in zip(outs, xs, ws):
        np.testing.assert_allclose(o.numpy(), np_chain(x, w, 2), rtol=1e-4, atol=1e-4)


def test_dependent_chain_stays_on_one_worker_without_transfers(ray_session):
    x, w = rnd((160, 160), 40), rnd((160, 160), 41)
    y = chain(zd.tensor(x), zd.tensor(w), 3)
    plan = zd.explain(y)
    assert len(plan.kernels) == 3 and len({k.device for k in plan.kernels}) == 1 and plan.transfers == []
    before = zd.stats()
    y.realize()
    assert y.device == plan.kernels[0].device
    assert zd.stats()["transfers"] == before["transfers"]
    np.testing.assert_allclose(y.numpy(), np_chain(x, w, 3), rtol=1e-4, atol=1e-4)


def test_dependent_chain_follows_its_input_to_the_worker_holding_it(ray_session):
    x, w = rnd((144, 144), 42), rnd((144, 144), 43)
    xd = zd.tensor(x, device="opencl:2").realize()
    wd = zd.tensor(w, device="opencl:2").realize()
    y = chain(xd, wd, 3)
    plan = zd.explain(y)
    assert [k.device for k in plan.kernels] == ["opencl:2"] * 3 and plan.transfers == []
    before = zd.stats()["transfers"]
    assert y.realize().device == "opencl:2" and zd.stats()["transfers"] == before
    np.testing.assert_allclose(y.numpy(), np_chain(x, w, 3), rtol=1e-4, atol=1e-4)


# ---- transfers ---------------------------------------------------------------------------------------------------

def test_cross_worker_input_is_moved_once_and_its_copy_freed(ray_session):
    collect()
    a = rnd((128, 96), 50)
    x = zd.tensor(a, device="opencl:0").realize()
    base = in_use()
    before = zd.stats()
    xt = x.to("opencl:1")
    y = xt * xt + xt.sum(axis=0)  # three reads of the moved tensor on opencl:1
    plan = zd.explain(y)
    assert [(t.src, t.dst, t.nbytes) for t in plan.transfers] == [("opencl:0", "opencl:1", x.nbytes)]
    assert {k.device for k in plan.kernels} == {"opencl:1"}
    y.realize()
    after = zd.stats()
    assert after["transfers"] - before["transfers"] == 1
    assert after["bytes_transferred"] - before["bytes_transferred"] == x.nbytes == 128 * 96 * 4
    assert y.device == "opencl:1" and x.device == "opencl:0"
    use = in_use()
    assert use["opencl:1"] - base["opencl:1"] == y.nbytes  # the moved copy and the `.to` value are gone
    assert use["opencl:0"] == base["opencl:0"] and use["opencl:2"] == base["opencl:2"]
    np.testing.assert_allclose(y.numpy(), a * a + a.sum(axis=0), rtol=1e-5, atol=1e-4)
    del y, xt
    collect()
    assert in_use()["opencl:1"] == base["opencl:1"]


def test_value_pinned_by_a_creation_device_is_made_there_and_moved_once(ray_session):
    a = rnd((64, 80), 51)
    x = zd.tensor(a, device="opencl:2").realize()
    base = in_use()
    before = zd.stats()
    f = zd.full((64, 80), 3.0, device="opencl:0")  # the pin holds for the constant's own value...
    y = f + x  # ...while the sum goes where one of its two inputs already is: one move, never two
    plan = zd.explain(y)
    assert [(k.device, k.reason) for k in plan.kernels[:1]] == [("opencl:0", "pinned")]
    assert plan.kernels[1].device in ("opencl:0", "opencl:2")
    assert len(plan.transfers) == 1 and plan.transfers[0].nbytes == x.nbytes
    y.realize()
    assert y.device == plan.kernels[1].device
    after = zd.stats()
    assert after["transfers"] - before["transfers"] == 1
    assert after["bytes_transferred"] - before["bytes_transferred"] == x.nbytes
    use = in_use()
    # only y stays: the pinned constant and the moved copy are freed after use
    assert {d: use[d] - base[d] for d in WORKERS} == {d: y.nbytes if d == y.device else 0 for d in WORKERS}
    np.testing.assert_allclose(y.numpy(), a + 3, rtol=1e-6)


def test_same_worker_reads_move_nothing(ray_session):
    a = rnd((48, 48), 52)
    x = zd.tensor(a, device="opencl:1").realize()
    before = zd.stats()
    y = (x.to("opencl:1") * 2 + x).realize()
    assert y.device == "opencl:1"
    assert zd.stats()["transfers"] == before["transfers"]
    np.testing.assert_allclose(y.numpy(), 3 * a, rtol=1e-6)


def test_value_moved_between_three_workers_keeps_its_value(ray_session):
    a = rnd((40, 56), 53)
    x = zd.tensor(a, device="opencl:0").realize()
    y = (x + 1).to("opencl:1")
    z = (y * 2).to("opencl:2")
    w = (z - x.to("opencl:2")).realize()
    assert w.device == "opencl:2"
    np.testing.assert_allclose(w.numpy(), (a + 1) * 2 - a, rtol=1e-5, atol=1e-6)
    assert zd.explain(w).kernels == []  # realized: nothing left to do


# ---- pins --------------------------------------------------------------------------------------------------------

def test_to_pins_the_kernel_and_the_result(ray_session):
    a = rnd((72, 72), 60)
    for dev in WORKERS:
        y = (zd.tensor(a) * 2).to(dev)
        plan = zd.explain(y)
        assert plan.kernels[-1].device == dev and plan.kernels[-1].reason.startswith("pinned")
        assert y.realize().device == dev
        np.testing.assert_allclose(y.numpy(), 2 * a, rtol=1e-6)


def test_creation_device_pins_where_a_realized_leaf_lives(ray_session):
    a = rnd((24, 40), 61)
    for dev in WORKERS:
        for t in (zd.tensor(a, device=dev), zd.rand(24, 40, seed=1, device=dev), zd.arange(17, device=dev)):
            assert t.realize().device == dev


def test_creation_device_pins_a_leaf_read_by_a_kernel(ray_session):
    a = rnd((24, 40), 62)
    t = zd.tensor(a, device="opencl:2")
    y = (t + 1).realize()
    np.testing.assert_allclose(y.numpy(), a + 1, rtol=1e-6)
    assert t.device == "opencl:2"


# ---- observability -----------------------------------------------------------------------------------------------

def test_debug_64_prints_placements_with_reasons_and_transfers_with_bytes(ray_session, caplog, monkeypatch):
    from zyx_dist import logs
    from zyx_dist.config import load_config

    monkeypatch.setenv("ZYX_DIST_DEBUG", "64")
    assert load_config(None).debug & 64  # what zd.init reads; switched on for the running session below
    logs.apply_debug(64)
    a = rnd((88, 88), 70)
    x = zd.tensor(a, device="opencl:0").realize()
    caplog.clear()
    try:
        y = (x.to("opencl:2") + 1).realize()
    finally:
        logs.apply_debug(0)
    out = caplog.text  # pytest's handlers on the root logger get the lines (else they go to stderr)
    places = re.findall(r"zyx_dist: place (\S+) on (opencl:\d) at step (\d+): (.+)", out)
    assert places and all(dev == "opencl:2" for _, dev, _, _ in places)
    assert any(reason.startswith("pinned") for *_, reason in places)
    moves = re.findall(r"zyx_dist: transfer #\d+ (opencl:\d) -> (opencl:\d): (\d+) bytes", out)
    assert moves == [("opencl:0", "opencl:2", str(x.nbytes))]
    np.testing.assert_allclose(y.numpy(), a + 1, rtol=1e-6)
    caplog.clear()
    (x * 3).realize()
    assert "zyx_dist: place" not in caplog.text


def test_explain_runs_nothing(ray_session):
    a = rnd((100, 36), 71)
    y = zd.tensor(a) @ zd.tensor(a.T.copy()) + 1
    before = zd.stats()
    plan = zd.explain(y)
    assert isinstance(plan, zd.Plan) and plan.estimated_seconds > 0
    assert all(k.device in WORKERS and k.source for k in plan.kernels)
    assert "Plan:" in str(plan)
    assert zd.stats() == before and y.device is None


# ---- everything freed --------------------------------------------------------------------------------------------

def test_every_pool_back_to_zero_after_all_tensors_die(ray_session):
    collect()
    assert in_use() == dict.fromkeys(WORKERS, 0), "a tensor of an earlier test leaked"
    ts = {}
    for i, dev in enumerate(WORKERS):
        x = zd.tensor(rnd((64, 64), 80 + i), device=dev).realize()
        ts[f"x{i}"] = x
        ts[f"y{i}"] = chain(x, x, 2)
    ts["cross"] = ts["y0"].to("opencl:1") + ts["y2"].to("opencl:1")
    ts["sum"] = ts["x1"].sum()
    zd.realize(*ts.values())
    assert all(v > 0 for v in in_use().values())
    assert {t.device for t in ts.values()} == set(WORKERS)
    del ts, x
    collect()
    assert in_use() == dict.fromkeys(WORKERS, 0)
    assert zsession.running() is ray_session
