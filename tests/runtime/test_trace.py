"""`with zd.trace(path):` writes Chrome trace JSON that Perfetto opens: a driver track with the realize phases,
one track per device with every kernel (device-side duration), transfer (bytes), allocation and free, and
the reads back. Runs on the suite's session when it has two devices or more (the Ray tier's), else on an
in-process session of two OpenCL CPU workers."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.engine import session as zsession


@pytest.fixture
def two_devices():
    s = zsession.running()
    if s is not None and len(s.device_names) >= 2:
        yield s.device_names[:2]
        return
    zd.shutdown()
    try:
        zd.init(ray=False, devices={"opencl-cpu": 2})
        yield zsession.running().device_names
    finally:
        zd.shutdown()
        zd.init(ray=False)


def load(path) -> tuple[list[dict], dict[int, str]]:
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in events:  # the fields Chrome/Perfetto need, with the right types
        assert e["ph"] in ("M", "X", "i", "C", "s", "f") and isinstance(e["pid"], int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and isinstance(e.get("tid", 0), int)
        if e["ph"] == "X":
            assert e["dur"] >= 0
    return events, tracks


def test_trace_has_a_track_per_device_kernels_transfers_and_allocations(tmp_path, two_devices):
    d0, d1 = two_devices
    a = np.arange(4096, dtype=np.float32)
    x = (zd.tensor(a, device=d0) * 2).realize()
    zd.reset_stats()
    path = tmp_path / "trace.json"
    with zd.trace(path):
        y = (x.to(d1) + 1).realize()
        total = float(y.sum())
    assert total == pytest.approx(float((a * 2 + 1).sum()))
    stats = zd.stats()
    events, tracks = load(path)
    by_name = {v: k for k, v in tracks.items()}
    assert {"driver", d0, d1} <= set(by_name)

    driver = [e for e in events if e.get("tid") == by_name["driver"] and e["ph"] == "X"]
    assert {"realize", "kernelize", "render", "schedule", "dispatch", "finish", "read"} <= {e["name"] for e in driver}

    kernels = [e for e in events if e.get("cat") == "kernel" and e["ph"] == "X"]
    assert len(kernels) == stats["kernels_launched"] >= 2  # + 1, and the sum (in one or two stages)
    assert all(e["tid"] == by_name[d1] and e["dur"] > 0 and e["args"]["device_us"] > 0 for e in kernels)

    moves = [e for e in events if e.get("cat") == "transfer" and e["ph"] == "X" and e["name"].startswith("transfer")]
    assert len(moves) == stats["transfers"] == 1
    assert moves[0]["args"]["bytes"] == a.nbytes == stats["bytes_transferred"]
    assert (moves[0]["args"]["src"], moves[0]["args"]["dst"]) == (d0, d1) and moves[0]["tid"] == by_name[d1]
    exports = [e for e in events if e["name"] == "export"]
    assert len(exports) == 1 and exports[0]["tid"] == by_name[d0] and exports[0]["ts"] <= moves[0]["ts"]
    flows = sorted(e["ph"] for e in events if e["ph"] in ("s", "f"))
    assert flows == ["f", "s"]

    allocs = [e for e in events if e["name"] == "alloc"]
    assert allocs and all(e["tid"] == by_name[d1] and e["args"]["bytes"] > 0 for e in allocs)
    assert sum(e["args"]["bytes"] for e in allocs) >= a.nbytes + 4  # the moved copy, y, and the sum
    assert any(e["ph"] == "C" and e["name"] == f"bytes in use {d1}" for e in events)
    # a device's kernels do not overlap each other
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in kernels)
    assert all(b[0] >= a_[1] - 1e-3 for a_, b in itertools.pairwise(spans))


def test_trace_records_spills(tmp_path):
    s = zsession.running()
    if s is not None and type(s.backend).__name__ == "RayBackend":
        pytest.skip("needs its own small-memory in-process session (the Ray tier shares one session)")
    zd.shutdown()
    try:
        zd.init({"memory_limit": 3 * 2**20}, ray=False, devices={"opencl-cpu": 1})
        path = tmp_path / "spill.json"
        with zd.trace(path):
            xs = [(zd.ones(2**18) * i).realize() for i in range(4)]  # 1 MiB each: the 4th spills one
            assert float(xs[0].sum()) == 0.0
        events, _ = load(path)
        spills = [e for e in events if e["name"] == "spill"]
        assert spills and zd.stats()["spills"] >= len(spills)
        assert all(e["args"]["bytes"] == 2**20 for e in spills)
    finally:
        zd.shutdown()
        zd.init(ray=False)


def test_trace_ends_cleanly_and_keeps_kernel_timing(tmp_path):
    s = zsession.current()
    with zd.trace(tmp_path / "a.json"):
        pass
    assert s.trace_events is None and "read" not in vars(s)
    assert json.loads((tmp_path / "a.json").read_text())["traceEvents"]  # the track names, at least
    for w in getattr(s.backend, "workers", {}).values():
        assert w.profile  # device timing stays on: the scheduler's cost model needs it


def test_a_trace_inside_another_leaves_the_outer_one_whole(tmp_path):
    x = zd.tensor(np.arange(8, dtype=np.float32))
    outer, inner = tmp_path / "outer.json", tmp_path / "inner.json"
    with zd.trace(outer):
        (x + 1).realize()
        with zd.trace(inner):
            (x + 2).realize()
        (x + 3).realize()  # (lost before: the inner trace's end switched all tracing off)
    def realizes(path):
        return sum(e.get("name") == "realize" for e in json.loads(path.read_text())["traceEvents"])
    assert realizes(inner) == 1 and realizes(outer) == 3


def test_a_trace_to_a_path_it_cannot_write_fails_before_its_block():
    ran = []
    with pytest.raises(OSError), zd.trace("/nonexistent-dir/t.json"):
        ran.append(1)
    assert not ran
