"""Batch templates on a Worker (runtime/replay.py), on a real OpenCL device (PoCL on the CPU, `opencl:0`)
with hand-written kernels, checked against NumPy: a DefineTemplate keeps a batch whose buffer fields are
slots, a Replay runs it with its slots bound to buffer ids, exactly as the same batch written out would run;
a failure inside a replay is one Failed for the Replay after which the template's frees still ran; a replay
of an unknown template, or with the wrong number of buffers, fails clearly; reset forgets templates; and the
worker's graph segments (on a backend with the graph capability) capture a buffer assignment the second
time they meet it and replay it after, never for other buffers; a segment whose results stay alive from one
replay to the next is split, its other launches replayed as a graph."""

from __future__ import annotations

import numpy as np
import pytest

from zyx_dist.protocol import (
    Alloc,
    Compile,
    CopyIn,
    CopyOut,
    DefineTemplate,
    Done,
    DropTemplate,
    Failed,
    Free,
    Launch,
    Replay,
    Sync,
    TransferRef,
)
from zyx_dist.runtime import Worker, replay

AXPB = "__kernel void axpb(__global const float* a, __global float* b){ int i=get_global_id(0); b[i]=a[i]*2.0f+1.0f; }"
ADD = """__kernel void add(__global const float* a, __global const float* b, __global float* c){
    int i = get_global_id(0);
    c[i] = a[i] + b[i];
}"""
N = 1000

# slots: 0 the input, 1 an intermediate (allocated and freed inside), 2 the result
TEMPLATE = (Alloc(1, N * 4), Alloc(2, N * 4),
            Launch(1, (0, 1), (N,), None, reads=(0,), writes=(1,)),
            Launch(2, (1, 0, 2), (N,), None, reads=(1, 0), writes=(2,)),
            Free(1), Sync())


@pytest.fixture
def worker():
    w = Worker("opencl:0", profile=True)
    yield w
    w.close()


def ok(res) -> list:
    bad = [r for r in res.results if isinstance(r, Failed)]
    assert not bad, bad[0].message
    return [r.value for r in res.results]


def setup(worker, x):
    ok(worker.run([Compile(1, AXPB, "axpb"), Compile(2, ADD, "add"), Alloc(10, x.nbytes), CopyIn(10, x),
                   DefineTemplate(5, TEMPLATE)]))


def test_replay_runs_the_template_with_its_slots_bound():
    w = Worker("opencl:0", profile=True)
    try:
        x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
        setup(w, x)
        before = w.stats()["bytes_in_use"]
        for i in range(4):
            res = w.run([Replay(5, (10, 100 + 2 * i, 101 + 2 * i)), CopyOut(101 + 2 * i, "float32", (N,))])
            values = ok(res)
            assert len(res.results) == 2 and values[0] == ()  # one result for the whole replay: no exports
            np.testing.assert_allclose(values[1], (x * 2 + 1) + x, rtol=1e-6)
            assert len(res.kernel_seconds) == 2 and res.graphs == ()  # OpenCL: no CUDA graphs
            assert 100 + 2 * i not in w._bufs  # the intermediate was freed inside the replay
        assert w.stats()["bytes_in_use"] == before + 4 * x.nbytes  # the four results are live
    finally:
        w.close()


def test_failure_inside_a_replay_still_runs_its_frees(worker):
    x = np.ones(N, np.float32)
    setup(worker, x)
    before = worker.stats()["bytes_in_use"]
    # slot 2 bound to a buffer that exists already: the second Alloc fails; the Free of slot 1 still runs
    ok(worker.run([Alloc(30, 16)]))
    res = worker.run([Replay(5, (10, 20, 30)), Free(30)])
    assert isinstance(res.results[0], Failed) and "already allocated" in res.results[0].message
    assert isinstance(res.results[1], Done)  # a Free after the failure runs, as in any batch
    assert 20 not in worker._bufs and worker.stats()["bytes_in_use"] == before


def test_run_replay_calls_its_hook_once_after_the_launches_and_before_the_wait(worker, monkeypatch):
    """`run_replay`'s `before_sync` (the driver's work in process, e.g. checking a guessed plan) runs once,
    when the template's launches are queued and before the synchronize waits for them; and once as well
    when the replay fails before reaching it."""
    x = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    setup(worker, x)
    events: list[str] = []
    launch, sync = worker.backend.launch, worker.backend.synchronize
    monkeypatch.setattr(worker.backend, "launch", lambda *a, **k: events.append("launch") or launch(*a, **k))
    monkeypatch.setattr(worker.backend, "synchronize", lambda: events.append("sync") or sync())
    failed, _graphs, _in_use = worker.run_replay(5, (10, 40, 41), (), lambda: events.append("hook"))
    assert failed is None and events == ["launch", "launch", "hook", "sync"]
    np.testing.assert_allclose(ok(worker.run([CopyOut(41, "float32", (N,))]))[0], (x * 2 + 1) + x, rtol=1e-6)
    events.clear()
    failed, _graphs, _in_use = worker.run_replay(5, (10, 42, 41), (), lambda: events.append("hook"))
    assert failed is not None and "already allocated" in failed.message  # slot 2's buffer exists: no launch
    assert events == ["hook"]


def test_bad_replays_fail_clearly(worker):
    x = np.ones(N, np.float32)
    setup(worker, x)
    res = worker.run([Replay(6, (10, 11, 12))])
    assert isinstance(res.results[0], Failed) and "no batch template 6" in res.results[0].message
    res = worker.run([Replay(5, (10, 11))])
    assert isinstance(res.results[0], Failed) and "3 slots" in res.results[0].message
    res = worker.run([DefineTemplate(7, (Launch(99, (0,), (N,), None, reads=(0,), writes=()),))])
    assert isinstance(res.results[0], Failed) and "program 99" in res.results[0].message
    ok(worker.run([DropTemplate(5)]))
    res = worker.run([Replay(5, (10, 11, 12))])
    assert isinstance(res.results[0], Failed)
    ok(worker.run([DefineTemplate(5, TEMPLATE)]))
    worker.reset()
    res = worker.run([Replay(5, (10, 11, 12))])
    assert isinstance(res.results[0], Failed)  # a reset worker has no templates left


def test_replay_imports_and_exports_transfers(worker):
    x = np.arange(N, dtype=np.float32)
    ok(worker.run([Compile(1, AXPB, "axpb"), Alloc(10, x.nbytes), CopyIn(10, x),
                   DefineTemplate(8, (Alloc(1, N * 4), CopyIn(1, TransferRef(77)),
                                      Launch(1, (1, 0), (N,), None, reads=(1,), writes=(0,)),
                                      CopyOut(0, "uint8", (N * 4,), export=78), Free(1), Sync()))]))
    incoming = (np.arange(N, dtype=np.float32) * 3).view(np.uint8)
    res = worker.run([Replay(8, (10, 11), imports=(incoming,), exports=(78,))])
    (exported,) = ok(res)[0]
    np.testing.assert_allclose(exported.view(np.float32), np.arange(N) * 3 * 2 + 1, rtol=1e-6)
    res = worker.run([Replay(8, (10, 12), imports=(None,), exports=(78,))])  # the transfer's source failed
    assert isinstance(res.results[0], Failed) and "no data" in res.results[0].message
    assert 12 not in worker._bufs


class RecordingGraphs:
    """Mixed into the worker's real OpenCL backend: the graph capability (`device.GraphDevice`) with a
    'capture' that records the launches and a 'graph launch' that queues them again, so the worker's segment
    logic (capture on the second sighting of the same buffers, replay after, a new buffer never replaying an
    old graph, the launches' times and events) runs on a real device. CUDA's own capture is tested on the GPU
    (tests/gpu/test_cuda_graphs.py)."""

    captures = 0
    graph_launches = 0

    def graph_key(self, handles):
        return tuple(h.int_ptr for h in handles)

    def capture_graph(self, launches):
        self.captures += 1
        return list(launches)

    def launch_graph(self, graph, wait_for=(), timed=True):
        self.graph_launches += 1
        event, wait = None, list(wait_for)
        for prog, handles, gws, lws in graph:
            event = self.launch(prog, handles, gws, lws, wait, timed)
            wait = [event]
        return event


def test_graph_segments_capture_on_the_second_sighting_and_never_replay_for_other_buffers(worker):
    backend = worker.backend
    backend.__class__ = type("OpenCLWithGraphs", (RecordingGraphs, type(backend)), {})
    worker.graphs = True  # as a CUDA worker's is
    x = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    setup(worker, x)  # defines template 5 now that the backend can capture: its two launches are one segment
    want = (x * 2 + 1) + x
    graphs = []
    for i in range(6):  # each result freed before the next replay: the pool hands the same two blocks back
        inter, out = 100 + 2 * i, 101 + 2 * i
        res = worker.run([Replay(5, (10, inter, out)), CopyOut(out, "float32", (N,)), Free(out)])
        np.testing.assert_allclose(ok(res)[1], want, rtol=1e-6)
        assert len(res.kernel_seconds) == 2
        graphs.append(res.graphs)
    # the pool hands out its oldest free block first, so every replay meets the same buffer assignment:
    # captured the second time it is met, and replayed from then on
    assert graphs[0] == ()
    assert all(len(g) == 1 and g[0][:2] == (0, 2) for g in graphs[1:])
    assert backend.captures == 1 and backend.graph_launches == 5
    held = [901, 902]  # results kept alive: the pool must hand out new blocks, never seen before
    ok(worker.run([Alloc(b, x.nbytes) for b in held]))
    res = worker.run([Replay(5, (10, 903, 904)), CopyOut(904, "float32", (N,))])
    np.testing.assert_allclose(ok(res)[-1], want, rtol=1e-6)
    assert res.graphs == () and backend.captures == 1 and backend.graph_launches == 5


def test_a_segment_whose_results_stay_alive_is_split_and_the_rest_replays_as_a_graph(worker, monkeypatch):
    monkeypatch.setattr(replay, "SPLIT_AFTER_MISSES", 4)
    backend = worker.backend
    backend.__class__ = type("OpenCLWithGraphs", (RecordingGraphs, type(backend)), {})
    worker.graphs = True
    x = np.random.default_rng(4).standard_normal(N).astype(np.float32)
    # the result allocated first, as a plan may order them: the intermediate must still get the same block
    # every time (the template allocates what it frees before what it keeps), else every launch meets a new
    # address and there is nothing to split off
    result_first = (TEMPLATE[1], TEMPLATE[0], *TEMPLATE[2:])
    ok(worker.run([Compile(1, AXPB, "axpb"), Compile(2, ADD, "add"), Alloc(10, x.nbytes), CopyIn(10, x),
                   DefineTemplate(5, result_first)]))
    want = (x * 2 + 1) + x
    graphs, kept = [], []
    for i in range(10):  # every result kept: each replay's result gets a block never seen before
        inter, out = 100 + 2 * i, 101 + 2 * i
        res = worker.run([Replay(5, (10, inter, out)), CopyOut(out, "float32", (N,))])
        np.testing.assert_allclose(ok(res)[1], want, rtol=1e-6)
        assert len(res.kernel_seconds) == 2
        graphs.append(res.graphs)
        kept.append(out)
    # four new assignments in a row split the segment: the launch that writes the result runs alone, the one
    # before it is a segment of its own, met for the first time at the fifth replay and captured at the sixth
    assert graphs[:5] == [()] * 5
    assert all(len(g) == 1 and g[0][:2] == (0, 1) for g in graphs[5:])
    assert backend.captures == 1 and backend.graph_launches == 5
    assert len(worker._bufs) == 1 + len(kept)  # the input and the results: every intermediate freed


def test_a_session_loop_that_keeps_its_results_replays_the_rest_as_graphs(monkeypatch):
    import zyx_dist as zd

    monkeypatch.setattr(replay, "SPLIT_AFTER_MISSES", 6)
    zd.shutdown()
    s = zd.init(ray=False, devices=["opencl:0"])
    try:
        worker = s.backend.workers["opencl:0"]
        worker.backend.__class__ = type("OpenCLWithGraphs", (RecordingGraphs, type(worker.backend)), {})
        worker.graphs = True  # before any template is defined, as on a CUDA worker
        rng = np.random.default_rng(5)
        xs = rng.standard_normal((4, 64, 32)).astype(np.float32)
        w = rng.standard_normal((32, 32)).astype(np.float32) / 8
        x, wt = zd.tensor(xs).realize(), zd.tensor(w).realize()
        kept, graphs = [], []
        for _ in range(16):
            before = zd.stats()["graph_replays"]
            kept.append(zd.exp(zd.tanh(x @ wt).sum(axis=-1) / 8).realize())
            graphs.append(zd.stats()["graph_replays"] - before)
        want = np.exp(np.tanh(xs @ w).sum(axis=-1) / 8)
        for r in kept:
            np.testing.assert_allclose(r.numpy(), want, rtol=1e-5, atol=1e-6)
        assert zd.stats()["plan_replays"] >= 14
        assert sum(graphs[:7]) == 0, graphs  # (the plan's first run, then 6 replays, each result new)
        assert all(g >= 1 for g in graphs[-6:]), graphs
    finally:
        zd.shutdown()
        zd.init(ray=False)  # the module-wide in-process session again, not a default one started through Ray
