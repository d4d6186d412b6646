"""GPU tier (marker `gpu`; skipped without cupy or a GPU): CUDA graph replay of repeated plans (issue 15,
runtime/replay.py and CudaBackend.capture_graph / launch_graph).

1. The worker on cuda:0 with a hand-written batch template: the first replay of a buffer assignment
   launches kernel by kernel, the second captures the launches into one CUDA graph and launches it, later
   ones replay it (`BatchResult.graphs`); values equal NumPy at every step; a new buffer (a new device
   address) is never run through a graph captured for another one; a freed buffer whose memory comes back
   at the same address replays correctly; ZYX_DIST_CUDA_GRAPHS=0 turns replay off.
2. A session on cuda:0 (in-process, then on Ray through a compiled graph): a training-loop step
   `y = relu(y @ w + b)` replayed from its plan template runs as CUDA graphs (`zd.stats()["graph_replays"]`)
   with the right values, every kernel still counted in `kernels_launched`, and `zd.trace` shows the
   replayed graphs.
   A loop that keeps every result (each result a new address) has its segment split after
   `SPLIT_AFTER_MISSES` replays: the rest replays as a graph, with NumPy's values at every step.
3. `zd.jit` on cuda:0 (in-process and on Ray): the MLP of tests/training.py trained with Adam through a
   jitted step gives the plain loop's losses and weights bit for bit, its replays run as CUDA graphs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from gpu_util import need_cuda

import zyx_dist as zd
from zyx_dist.protocol import Alloc, Compile, CopyIn, CopyOut, DefineTemplate, Failed, Free, Launch, Replay, Sync

pytestmark = pytest.mark.gpu

INC = """extern "C" __global__ void inc(float* a) { int i = blockIdx.x * blockDim.x + threadIdx.x; a[i] += 1.0f; }"""
AXPB = """extern "C" __global__ void axpb(const float* __restrict__ a, float* __restrict__ b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; b[i] = a[i] * 2.0f + 1.0f;
}"""
N = 1 << 16


def ok(res) -> list:
    bad = [r for r in res.results if isinstance(r, Failed)]
    assert not bad, bad[0].message
    return [r.value for r in res.results]


@pytest.fixture
def worker():
    need_cuda()
    from zyx_dist.runtime import Worker

    w = Worker("cuda:0", profile=True)
    assert w.graphs, "CUDA graph replay should be on for a CUDA worker"
    yield w
    w.close()


# template slots: 0 the input (read), 1 the output (written by axpb, then incremented 3 times)
TEMPLATE = (Launch(2, (0, 1), (N,), (256,), reads=(0,), writes=(1,)),
            *(Launch(1, (1,), (N,), (256,), reads=(1,), writes=(1,)) for _ in range(3)), Sync())


def setup(worker, bufs):
    x = np.arange(N, dtype=np.float32) % 13
    cmds = [Compile(1, INC, "inc"), Compile(2, AXPB, "axpb")]
    for b in bufs:
        cmds += [Alloc(b, x.nbytes), CopyIn(b, x)]
    ok(worker.run(cmds + [DefineTemplate(7, TEMPLATE)]))
    return x


def replay(worker, a, b):
    res = worker.run([Replay(7, (a, b)), CopyOut(b, "float32", (N,))])
    return res, ok(res)[-1]


def test_second_sighting_captures_then_replays(worker):
    x = setup(worker, [10, 11])
    want = x * 2 + 1 + 3
    graphs = []
    for _ in range(4):
        res, out = replay(worker, 10, 11)
        np.testing.assert_array_equal(out, want)
        assert len(res.kernel_seconds) == 4 and all(t >= 0 for t in res.kernel_seconds)
        graphs.append(res.graphs)
    assert graphs[0] == ()  # first sighting of these addresses: kernel by kernel
    for g in graphs[1:]:  # captured on the second, replayed from then on: one graph of the 4 launches
        assert len(g) == 1 and g[0][0] == 0 and g[0][1] == 4 and g[0][2] > 0


def test_a_new_address_never_runs_an_old_graph(worker):
    x = setup(worker, [10, 11, 12])
    for _ in range(3):
        replay(worker, 10, 11)
    res, out = replay(worker, 10, 12)  # another output buffer: other addresses
    assert res.graphs == ()
    np.testing.assert_array_equal(out, x * 2 + 1 + 3)
    res, out = replay(worker, 10, 11)  # the first assignment still replays its graph
    assert len(res.graphs) == 1
    np.testing.assert_array_equal(out, x * 2 + 1 + 3)


def test_freed_and_reallocated_buffers_replay_correctly(worker):
    x = setup(worker, [10, 11])
    for _ in range(3):
        replay(worker, 10, 11)
    y = (np.arange(N, dtype=np.float32) % 7) * 3
    for step in range(4):  # free the output, allocate it again (the pool hands back memory), new input data
        new = 20 + step
        ok(worker.run([Free(11 if step == 0 else 19 + step), Alloc(new, x.nbytes), CopyIn(10, y)]))
        _res, out = replay(worker, 10, new)
        np.testing.assert_array_equal(out, y * 2 + 1 + 3)


def test_graphs_can_be_turned_off(monkeypatch):
    need_cuda()
    from zyx_dist.runtime import Worker

    monkeypatch.setenv("ZYX_DIST_CUDA_GRAPHS", "0")
    w = Worker("cuda:0", profile=True)
    try:
        assert not w.graphs
        x = setup(w, [10, 11])
        for _ in range(4):
            res, out = replay(w, 10, 11)
            assert res.graphs == ()
        np.testing.assert_array_equal(out, x * 2 + 1 + 3)
    finally:
        w.close()


# ---- 2. sessions ----------------------------------------------------------------------------------------------

def training_loop(steps: int, rows: int = 256):
    rng = np.random.default_rng(0)
    w_host = (rng.standard_normal((rows, rows)) / np.sqrt(rows)).astype(np.float32)
    b_host = rng.standard_normal(rows).astype(np.float32) * 0.1
    y_host = rng.standard_normal((rows, rows)).astype(np.float32)
    w, b, y = zd.tensor(w_host).realize(), zd.tensor(b_host).realize(), zd.tensor(y_host).realize()
    want = y_host.astype(np.float64)
    for _ in range(steps):
        y = zd.relu(y @ w + b).realize()
        want = np.maximum(want @ w_host + b_host, 0)
    return y, want


def softmax_loop(steps: int):
    a = np.random.default_rng(1).standard_normal((512, 384)).astype(np.float32)
    x = zd.tensor(a).realize()
    for _ in range(steps):
        y = zd.softmax(x * 1.5, axis=0).realize()  # several kernels in one plan
    e = np.exp(a * 1.5 - (a * 1.5).max(0))
    return y, e / e.sum(0)


@pytest.fixture
def cuda_session():
    need_cuda()
    zd.shutdown()
    s = zd.init(ray=False, devices=["cuda:0"])
    try:
        yield s
    finally:
        zd.shutdown()


def test_training_loop_runs_as_cuda_graphs_in_process(cuda_session, tmp_path):
    zd.reset_stats()
    y, want = training_loop(20)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-3, atol=1e-4)
    s = zd.stats()
    assert s["plan_replays"] >= 15 and s["graph_replays"] >= 10, s
    assert s["kernels_launched"] >= 20  # launches replayed through graphs are counted as kernels
    y, want = softmax_loop(12)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-6)
    path = tmp_path / "trace.json"
    with zd.trace(path):
        training_loop(6)
    events = json.loads(path.read_text())["traceEvents"]
    graphs = [e for e in events if e.get("cat") == "graph"]
    assert graphs and all(e["name"].startswith("cuda graph replay") and e["args"]["launches"] >= 1 for e in graphs)
    assert any(e.get("cat") == "kernel" and e["args"].get("cuda_graph") for e in events)


def test_a_loop_that_keeps_its_results_replays_the_rest_as_cuda_graphs(cuda_session):
    from zyx_dist.runtime import replay as worker_replay

    rng = np.random.default_rng(5)
    xs = rng.standard_normal((4, 512, 256)).astype(np.float32)
    w = rng.standard_normal((256, 256)).astype(np.float32) / 16
    x, wt = zd.tensor(xs).realize(), zd.tensor(w).realize()
    kept, graphs = [], []
    for _ in range(worker_replay.SPLIT_AFTER_MISSES + 8):
        before = zd.stats()["graph_replays"]
        kept.append(zd.exp(zd.tanh(x @ wt).sum(axis=-1) / 64).realize())
        graphs.append(zd.stats()["graph_replays"] - before)
    want = np.exp(np.tanh(xs @ w).sum(axis=-1) / 64)
    for r in kept:
        np.testing.assert_allclose(r.numpy(), want, rtol=2e-3, atol=1e-4)
    assert sum(graphs[:worker_replay.SPLIT_AFTER_MISSES]) == 0, graphs  # every result new: nothing repeats
    assert all(g >= 1 for g in graphs[-4:]), graphs  # split: the launches before the result's replay as a graph


@pytest.mark.parametrize("sockets", [True, False])
def test_training_loop_runs_as_cuda_graphs_on_ray(sockets, monkeypatch):
    """Through Ray the replays reach the worker by its replay socket (the worker is on this host), or with
    sockets off through a Ray Compiled Graph; either way the worker replays them as CUDA graphs."""
    need_cuda()
    pytest.importorskip("ray")
    zd.shutdown()
    monkeypatch.setenv("ZYX_DIST_REPLAY_SOCKETS", "1" if sockets else "0")
    zd.init(devices=["cuda:0"])
    try:
        zd.reset_stats()
        y, want = training_loop(20)
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-3, atol=1e-4)
        s = zd.stats()
        assert s["plan_replays"] >= 15 and s["graph_replays"] >= 10, s
        from zyx_dist.engine import session as zsession

        backend = zsession.current().backend
        if sockets:
            assert backend.socket_replays >= 15 and backend.graph is None
        else:
            assert backend.graph is not None and backend.graph.executions >= 15
    finally:
        zd.shutdown()


@pytest.mark.parametrize("ray", [False, True])
def test_jitted_training_step_replays_as_cuda_graphs(ray):
    need_cuda()
    if ray:
        pytest.importorskip("ray")
    from training import train_zd

    zd.shutdown()
    zd.init(ray=ray, devices=["cuda:0"])
    try:
        make = (lambda ps: zd.optim.Adam(ps, lr=0.05))
        plain, plain_losses, _ = train_zd(make, 16, dtype=np.float32)
        zd.reset_stats()
        jitted, jit_losses, f = train_zd(make, 16, dtype=np.float32, jit=True)
        s = zd.stats()  # (a graph is captured at the second sighting of its buffers' addresses)
        assert f.replays >= 12 and s["graph_replays"] >= 4, (f.runs, f.replays, s)
        np.testing.assert_array_equal(jit_losses, plain_losses)
        for a, b in zip(jitted, plain):
            np.testing.assert_array_equal(a, b)
    finally:
        zd.shutdown()
