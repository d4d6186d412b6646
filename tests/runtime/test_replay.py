"""Plan templates (issue 15): a graph planned before, whose inputs live where they did, is replayed from the
kept schedule with fresh buffer ids (engine/templates.py, sched/template.py, runtime/replay.py). Results must
equal NumPy exactly as a planned run's do, failures must raise the same errors and leak nothing, and anything
that changes the plan (the inputs on another device, a spilled input) must plan again. On the Ray tier
(tests/cluster/test_runtime_on_ray.py) the same tests run the replays through a Ray Compiled Graph."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.engine import session as zsession


def rng(shape, seed=0, scale=1.0) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(-1, 1, shape) * scale).astype(np.float32)


def session():
    return zsession.current()


def in_use(dev: str) -> int:
    gc.collect()
    return zd.stats()["bytes_in_use"].get(dev, 0)


def cap_memory(dev: str, nbytes: int | None) -> None:
    """Cap worker `dev`'s pool behind the driver's back (None restores it): the next allocation there fails."""
    backend = session().backend
    workers = getattr(backend, "workers", None)
    if workers is not None:
        pool = workers[dev].pool
        if not hasattr(pool, "real_limit"):
            pool.real_limit = pool.limit_bytes
        pool.limit_bytes = pool.real_limit if nbytes is None else nbytes
        pool.release_cached()
    else:
        import ray

        ray.get(backend.actors[dev].limit_memory.remote(nbytes))


def test_a_repeated_graph_is_replayed_with_the_same_results_and_counts():
    a = rng((1000,), seed=1)
    x = zd.tensor(a).realize()
    zd.reset_stats()
    for i in range(6):
        y = (x * 2 + 1).realize()
        np.testing.assert_array_equal(y.numpy(), a * 2 + 1)
        assert zd.stats()["kernels_launched"] == i + 1  # one kernel per realize, replayed or planned
    s = zd.stats()
    assert s["plan_replays"] >= 3  # the first plans and compiles, the second keeps the template
    assert s["kernel_cache_hits"] >= 5


def test_training_loop_replays_match_numpy_and_hold_steady_memory():
    rows = 64
    w_host, b_host, y_host = rng((rows, rows), 2, 0.2), rng((rows,), 3), rng((rows, rows), 4)
    w, b, y = zd.tensor(w_host).realize(), zd.tensor(b_host).realize(), zd.tensor(y_host).realize()
    want = y_host.astype(np.float64)
    zd.reset_stats()
    usage = []
    for _ in range(10):
        y = zd.relu(y @ w + b).realize()
        want = np.maximum(want @ w_host + b_host, 0)
        usage.append(in_use(y.device))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)
    assert zd.stats()["plan_replays"] >= 7
    assert usage[-1] == usage[4], usage  # each step's result replaces the last: nothing accumulates


def test_replayed_multi_kernel_plan_frees_its_intermediates():
    a = rng((64, 48), seed=5)
    x = zd.tensor(a).realize()
    dev = x.device
    base = None
    for i in range(6):
        y = zd.softmax(x, axis=0)  # along the leading axis: several kernels and intermediates
        y.realize()
        e = np.exp(a - a.max(0))
        np.testing.assert_allclose(y.numpy(), e / e.sum(0), rtol=1e-5, atol=1e-6)
        del y
        if i == 1:
            base = in_use(dev)
    assert zd.stats()["plan_replays"] >= 3
    assert in_use(dev) == base


def test_several_outputs_of_one_replayed_realize():
    a, b = rng((300,), seed=6), rng((300,), seed=7)
    x, y = zd.tensor(a).realize(), zd.tensor(b).realize()
    for _ in range(5):
        s, d, p = zd.realize(x + y, x - y, (x * y).sum())
        np.testing.assert_allclose(s.numpy(), a + b, rtol=1e-6)
        np.testing.assert_allclose(d.numpy(), a - b, rtol=1e-6)
        np.testing.assert_allclose(p.numpy(), (a * b).sum(), rtol=1e-4)
    assert zd.stats()["plan_replays"] >= 3


def test_a_failed_replay_raises_leaks_nothing_and_the_next_one_works():
    a = rng((4096,), seed=8)
    x = zd.tensor(a).realize()
    dev = x.device
    for _ in range(3):  # plan, keep the template, replay
        keep = (x * 3).realize()
    replays = zd.stats()["plan_replays"]
    del keep
    base = in_use(dev)
    mirror = session().state
    used, known = mirror.used[dev], set(mirror.buffers)
    cap_memory(dev, in_use(dev))  # the device is full, the driver does not know
    try:
        with pytest.raises(zd.OutOfMemoryError):
            (x * 3).realize()
        assert zd.stats()["plan_replays"] == replays  # the failed replay is not counted as one
        # nor is it in the driver's mirror (which a replay updates while the worker runs it)
        assert mirror.used[dev] == used and set(mirror.buffers) <= known
    finally:
        cap_memory(dev, None)
    assert in_use(dev) == base
    y = (x * 3).realize()
    np.testing.assert_array_equal(y.numpy(), a * 3)
    assert zd.stats()["plan_replays"] == replays + 1
    np.testing.assert_array_equal(x.numpy(), a)


def test_a_tensor_whose_replay_failed_keeps_its_graph_and_realizes_later():
    """A replay attaches its results while the worker runs; when the run then fails, the tensor is as it was:
    not realized, its graph whole, its buffer freed once (no second free queued by a dropped handle)."""
    a = rng((2048,), seed=9)
    x = zd.tensor(a).realize()
    dev = x.device
    for _ in range(3):
        (x * 5 - 1).realize()
    base = in_use(dev)
    z = x * 5 - 1
    cap_memory(dev, in_use(dev))
    try:
        with pytest.raises(zd.OutOfMemoryError):
            z.realize()
    finally:
        cap_memory(dev, None)
    assert not z.node.realized and z.node.srcs
    assert not session().pending_frees  # the failed run's handle queued nothing: the rollback freed it
    np.testing.assert_array_equal(z.realize().numpy(), a * 5 - 1)
    del z
    assert in_use(dev) == base
    np.testing.assert_array_equal((x * 5 - 1).numpy(), a * 5 - 1)


def test_in_process_one_worker_replays_are_one_direct_call_with_the_queued_frees():
    """In-process, the replay of a one-worker template is one `run_replay` call of its worker, no command
    batch, and the frees the garbage collector queued go with it: results equal NumPy, memory holds
    steady, and a failure there still raises and leaks nothing (test above)."""
    from zyx_dist.runtime.worker import Worker

    a = rng((2048,), seed=12)
    x = zd.tensor(a).realize()
    dev = x.device
    for _ in range(3):  # plan, keep the template, replay
        y = (x * 5 - 1).realize()
    calls = {"run": 0, "run_replay": 0}
    run, run_replay = Worker.run, Worker.run_replay

    def counted(name, f):
        def call(self, *args, **kwargs):
            calls[name] += 1
            return f(self, *args, **kwargs)
        return call

    base = in_use(dev)
    Worker.run, Worker.run_replay = counted("run", run), counted("run_replay", run_replay)
    try:
        for _ in range(5):
            y = (x * 5 - 1).realize()  # the last y's buffer is queued for freeing as y is rebound
            np.testing.assert_array_equal(y.numpy(), a * 5 - 1)
    finally:
        Worker.run, Worker.run_replay = run, run_replay
    assert calls["run_replay"] == 5
    assert calls["run"] == 5  # the reads (CopyOut) alone
    assert in_use(dev) == base


def test_trace_shows_replayed_realizes(tmp_path):
    import json

    x = zd.tensor(rng((256,), seed=9)).realize()
    for _ in range(3):
        (x + 1).realize()
    path = tmp_path / "t.json"
    with zd.trace(path):
        (x + 1).realize()
    events = json.loads(path.read_text())["traceEvents"]
    realizes = [e for e in events if e.get("name") == "realize"]
    assert realizes and realizes[-1]["args"]["replayed"] is True
    assert any(e.get("cat") == "kernel" for e in events)
    assert any(e.get("name") == "replay plan template" for e in events)



def test_replays_skip_kernel_timing_unless_traced(tmp_path, monkeypatch):
    backend = session().backend
    run, replayed = backend.run_steps, []

    def spy(steps, compiled=False, *more):
        out = run(steps, compiled, *more)
        if compiled:
            replayed.append([r.kernel_seconds for step in out for r in step.values()])
        return out

    monkeypatch.setattr(backend, "run_steps", spy)
    x = zd.tensor(rng((256,), seed=12)).realize()
    for _ in range(4):
        np.testing.assert_array_equal((x * 3).realize().numpy(), x.numpy() * 3)
    assert replayed and replayed[-1] == [()]  # a replay's placement is frozen: nothing reads its times
    if hasattr(backend, "workers"):  # in-process: planned runs still feed the cost model
        assert all(w.profile for w in backend.workers.values())
    with zd.trace(tmp_path / "t.json"):
        (x * 3).realize()
    assert len(replayed[-1]) == 1 and len(replayed[-1][0]) == 1  # the trace draws the kernel's time
    assert backend.time_replays is False


@pytest.fixture
def two_devices():
    s = zsession._session
    if s is not None and len(s.device_names) >= 2:
        yield s.device_names[:2]
        return
    zd.shutdown()
    try:
        zd.init(ray=False, devices={"opencl-cpu": 2})
        yield zsession._session.device_names
    finally:
        zd.shutdown()
        zd.init(ray=False)


def test_inputs_on_another_device_are_planned_again(two_devices):
    d0, d1 = two_devices
    a = rng((512,), seed=10)
    x0 = zd.tensor(a, device=d0).realize()
    x1 = zd.tensor(a, device=d1).realize()
    for _ in range(3):
        assert (x0 * 5).realize().device == d0
    replays = zd.stats()["plan_replays"]
    y = (x1 * 5).realize()  # same structure, its input elsewhere: not the template of x0's
    assert y.device == d1 and zd.stats()["plan_replays"] == replays
    np.testing.assert_array_equal(y.numpy(), a * 5)
    for _ in range(3):
        y = (x1 * 5).realize()
    assert y.device == d1 and zd.stats()["plan_replays"] >= replays + 2
    assert (x0 * 5).realize().device == d0  # both placements are kept


def test_a_replayed_plan_with_a_transfer_between_workers(two_devices):
    d0, d1 = two_devices
    a, b = rng((2000,), seed=11), rng((2000,), seed=12)
    x0 = zd.tensor(a, device=d0).realize()
    x1 = zd.tensor(b, device=d1).realize()
    zd.reset_stats()
    per = None
    for i in range(5):
        y = (x0 + x1 * 2).realize()
        np.testing.assert_allclose(y.numpy(), a + b * 2, rtol=1e-6)
        if i == 0:  # one transfer, or two where HEFT picks a third worker (the Ray tier has three)
            per = zd.stats()["transfers"]
    s = zd.stats()
    assert per >= 1 and s["transfers"] == 5 * per  # the same every realize, replayed ones included
    assert s["bytes_transferred"] == s["transfers"] * a.nbytes
    assert s["plan_replays"] >= 2


def test_host_leaves_made_each_step_are_uploaded_by_the_replay():
    """A scalar made with zd.tensor each step (a learning-rate schedule, Adam's bias corrections) is a host
    leaf: the template uploads it first instead of the step being planned again, results as NumPy's and
    the uploads freed with their leaves."""
    a = rng((2000,), seed=11)
    x = zd.tensor(a).realize()
    dev = x.device
    base = None
    for i in range(8):
        lr = np.float32(0.5 / (i + 1))
        y = (x * zd.tensor(lr) + zd.tensor(np.full(2000, i, np.float32))).realize()
        np.testing.assert_array_equal(y.numpy(), a * lr + np.float32(i))
        del y
        if i == 2:
            base = in_use(dev)
    assert zd.stats()["plan_replays"] >= 5
    assert in_use(dev) == base


def test_uploads_go_with_the_direct_call_up_to_the_backends_limit():
    """A replay's host leaves (an optimizer's step scalars, a batch of input data) upload within its one
    `run_replay` call up to what the backend's direct call carries (`direct_upload_bytes`: any amount in process;
    through Ray, 16 MiB on a replay socket or 64 KiB in a compiled graph's input); beyond that as command
    batches. Results equal NumPy's either way and memory holds steady. (In process only: it watches the
    Worker's methods.)"""
    from zyx_dist.engine import session as zsession
    from zyx_dist.runtime.worker import Worker

    backend = zsession.current().backend
    a = rng((1 << 15,), seed=21)  # float32: 128 KiB, twice the compiled graph's limit
    x = zd.tensor(a).realize()
    dev = x.device
    seen: list = []
    run, run_replay = Worker.run, Worker.run_replay

    def spy_run(self, batch, *args, **kwargs):
        seen.append(("run", tuple(type(c).__name__ for c in batch)))
        return run(self, batch, *args, **kwargs)

    def spy_replay(self, template, bufs, frees, before_sync=None, uploads=()):
        seen.append(("run_replay", len(uploads)))
        return run_replay(self, template, bufs, frees, before_sync, uploads)

    for limit in (None, 1 << 10):  # the in-process backend's own limit (none), then a small one
        base = None
        for i in range(6):
            lr = np.float32(0.25 * (i + 1))
            extra = np.full(a.size, i, np.float32)
            if i == 3:
                seen.clear()
                Worker.run, Worker.run_replay = spy_run, spy_replay
            try:
                if limit is not None:
                    backend.direct_upload_bytes = lambda _dev, n=limit: n
                y = (x * zd.tensor(lr) + zd.tensor(extra)).realize()
            finally:
                Worker.run, Worker.run_replay = run, run_replay
                backend.__dict__.pop("direct_upload_bytes", None)
            np.testing.assert_array_equal(y.numpy(), a * lr + np.float32(i))
            del y
            if i == 3:
                replays = [u for kind, u in seen if kind == "run_replay"]
                batches = [b for kind, b in seen if kind == "run" and "Replay" in b]
                if limit is not None:
                    assert not replays and batches and "CopyIn" in batches[0]
                else:
                    assert len(replays) == 1 and replays[0] >= 2 and not batches
                base = in_use(dev)
        assert in_use(dev) == base


def test_a_failed_replay_with_uploads_frees_them_and_keeps_the_host_data():
    a = rng((4096,), seed=12)
    x = zd.tensor(a).realize()
    dev = x.device
    for _ in range(3):
        keep = (x * zd.tensor(np.float32(3))).realize()
    replays = zd.stats()["plan_replays"]
    del keep
    base = in_use(dev)
    s = zd.tensor(np.float32(5))
    cap_memory(dev, in_use(dev))
    try:
        with pytest.raises(zd.OutOfMemoryError):
            (x * s).realize()
    finally:
        cap_memory(dev, None)
    assert in_use(dev) == base
    assert zd.stats()["plan_replays"] == replays
    y = (x * s).realize()  # the scalar is still on the host, and uploads now
    np.testing.assert_array_equal(y.numpy(), a * 5)
    assert zd.stats()["plan_replays"] == replays + 1


def test_adam_steps_replay_and_match_planned_steps_exactly():
    """Adam's step-dependent scalars are host leaves: from the third step on a training step replays, with
    exactly the parameters that planning every step gives."""
    x_h, y_h, w_h = rng((32, 16), seed=13), rng((32, 4), seed=14), rng((16, 4), seed=15, scale=0.3)

    def train(replay: bool) -> tuple[np.ndarray, int]:
        s = session()
        s.replay_plans, before = replay, zd.stats()["plan_replays"]
        try:
            x, y, w = zd.tensor(x_h).realize(), zd.tensor(y_h).realize(), zd.tensor(w_h).realize()
            opt = zd.optim.Adam([w], lr=0.05)
            for _ in range(7):
                loss = ((x @ w - y) ** 2).mean()
                (w,) = opt.step(zd.grad(loss, [w]))
                zd.realize(loss, w)
            return w.numpy(), zd.stats()["plan_replays"] - before
        finally:
            s.replay_plans = True

    planned, none = train(False)
    replayed, replays = train(True)
    assert none == 0 and replays >= 4
    np.testing.assert_array_equal(replayed, planned)
