"""One-worker replays through the worker's replay socket (issue 15: engine/ray_replay_socket.py,
runtime/replay_socket.py): results, uploads, failures and recovery, beside the compiled graph that replays
on several workers still take; on 3 PoCL workers of one Ray session of this module's own
(`ray.max_restarts: 20`, since workers are killed here several times).

- A repeated one-worker graph replays through the socket (counted), with no compiled graph built for it; the
  frees the driver queued and a scalar uploaded each step ride in the request; memory holds steady.
- A step of replays on several workers that moves no data through the driver goes to their sockets side by
  side; one that does (a transfer through the object store) still goes through the compiled graph, and plain
  calls keep working beside both.
- A failure inside a socket replay raises the planned run's error and frees what it allocated.
- A worker killed between or during socket replays is recovered from lineage; its new process gets a socket.
- The socket serves only the driver that holds its token, and a malformed frame closes that connection
  without touching the worker.
"""

from __future__ import annotations

import os
import socket
import threading

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist import protocol

ray = pytest.importorskip("ray")

from ray_workers import (  # (after the skip: it imports ray)
    actor,
    backend,
    chain,
    failure_inside_a_replay,
    in_use,
    rng,
    steps_across_a_kill,
)

pytestmark = pytest.mark.own_session

WORKERS = [f"opencl:{i}" for i in range(3)]


@pytest.fixture(scope="module")
def ray3():
    zd.shutdown()
    s = zd.init(config={"ray": {"max_restarts": 20}}, devices={"opencl-cpu": 3})
    try:
        yield s
    finally:
        zd.shutdown()


def socket_replays() -> int:
    return backend().socket_replays


def warm(make, n: int = 3):
    """Plan (compile), plan again (keep the template), replay once (define it on the worker)."""
    for _ in range(n):
        make().realize()


def test_one_worker_replays_go_through_the_socket(ray3):
    dev = "opencl:1"
    a = rng((2048,), seed=1)
    x = zd.tensor(a, device=dev).realize()
    warm(lambda: x * 2 - 1)
    assert backend().sockets.get(dev) is not None
    assert backend().graph is None  # no compiled graph was built for one worker
    base, before = in_use(dev), socket_replays()
    zd.reset_stats()
    for _ in range(5):
        y = (x * 2 - 1).realize()  # the last round's result is dropped here: its free rides in the request
        np.testing.assert_array_equal(y.numpy(), a * 2 - 1)
    del y
    assert socket_replays() == before + 5
    assert zd.stats()["plan_replays"] == 5 and zd.stats()["kernels_launched"] == 5
    assert backend().graph is None
    assert 0 < backend().round_trip_seconds <= backend().sockets[dev].round_trip_seconds  # what guesses hide behind
    assert in_use(dev) == base


def test_a_scalar_uploaded_each_step_rides_in_the_request(ray3, monkeypatch):
    dev = "opencl:2"
    a = rng((4096,), seed=11)
    x = zd.tensor(a, device=dev).realize()
    sent = []

    def spy(template, bufs, frees, uploads=()):
        if template >= 0:  # (the reads of the results go the same way)
            sent.append(uploads)
        return send(template, bufs, frees, uploads)

    for i in range(8):
        if i == 4:  # (planned, kept, defined: replays alone from here)
            sock = backend().sockets[dev]
            send = sock.send
            monkeypatch.setattr(sock, "send", spy)
        y = (x * zd.tensor(np.float32(i + 0.5)) + 2).realize()
        np.testing.assert_array_equal(y.numpy(), a * np.float32(i + 0.5) + 2)
    assert len(sent) == 4 and all(len(u) == 1 for u in sent)
    assert float(np.asarray(sent[-1][0][2]).reshape(-1)[0]) == 7.5


def test_a_batch_of_host_data_each_step_rides_in_the_request(ray3):
    """Host data a step makes anew (a batch of inputs, 256 KiB here: more than a compiled graph's input carries)
    goes in the socket's request, not as commands through the object store."""
    dev = "opencl:2"
    a = rng((1 << 16,), seed=19)
    x = zd.tensor(a, device=dev).realize()
    socks, runs = socket_replays(), backend().graph.executions if backend().graph else 0
    for i in range(6):
        batch = rng((1 << 16,), seed=100 + i)
        y = (x * 2 + zd.tensor(batch, device=dev)).realize()
        np.testing.assert_array_equal(y.numpy(), a * 2 + batch)
    assert socket_replays() >= socks + 3  # (planned, kept, defined: replayed through the socket from there)
    assert (backend().graph.executions if backend().graph else 0) == runs


def test_replays_with_both_ends_polling_before_they_block(ray3, monkeypatch):
    """On hosts with cores to spare both ends poll for a while before a blocking read (ZYX_DIST_SOCKET_SPIN_US);
    this 2-core machine does not by default, so here it is switched on for one worker's socket."""
    dev = "opencl:0"
    a = rng((1024,), seed=13)
    x = zd.tensor(a, device=dev).realize()
    warm(lambda: x * 4 + 1)
    ray.get(actor(dev).open_replay_socket.remote(200e-6))  # (the open socket: it now polls after each reply)
    monkeypatch.setattr(backend().sockets[dev], "spin_seconds", 200e-6)
    socks = socket_replays()
    for _ in range(20):
        np.testing.assert_array_equal((x * 4 + 1).realize().numpy(), a * 4 + 1)
    assert socket_replays() == socks + 20
    ray.get(actor(dev).open_replay_socket.remote(0.0))


def test_two_worker_replays_keep_the_compiled_graph_beside_the_sockets(ray3):
    a, b = rng((3000,), seed=4), rng((3000,), seed=5)
    x0 = zd.tensor(a, device="opencl:0").realize()
    x2 = zd.tensor(b, device="opencl:2").realize()
    x1 = zd.tensor(a, device="opencl:1").realize()
    warm(lambda: x0 * x2 + 1)
    warm(lambda: x1 * 3)
    zd.reset_stats()
    socks, runs = socket_replays(), backend().graph.executions
    for i in range(4):
        y = (x0 * x2 + 1).realize()  # two workers: the compiled graph
        np.testing.assert_allclose(y.numpy(), a * b + 1, rtol=1e-6)
        z = (x1 * 3).realize()  # one worker: its socket
        np.testing.assert_allclose(z.numpy(), a * 3, rtol=1e-6)
        w = zd.tanh(x1[: 100 + i] * 1.5).realize()  # a new structure: plain calls (compile, tune, run)
        np.testing.assert_allclose(w.numpy(), np.tanh(a[: 100 + i] * 1.5), rtol=1e-5, atol=1e-6)
    assert backend().graph.executions == runs + 4 and socket_replays() == socks + 4
    assert zd.stats()["plan_replays"] == 8 and zd.stats()["recoveries"] == 0


def test_a_step_on_three_workers_goes_through_their_sockets_side_by_side(ray3):
    """Replays on several workers that move no data through the driver (each worker's part of one step) go
    to every worker's socket before any reply is read; a failure on one of them raises its error and frees
    what the step allocated on all three."""
    a = [rng((2048,), seed=20 + i) for i in range(3)]
    xs = [zd.tensor(v, device=d).realize() for v, d in zip(a, WORKERS)]

    def step():
        return [x * 2 + i for i, x in enumerate(xs)]

    for _ in range(3):
        zd.realize(*step())
    base = {d: in_use(d) for d in WORKERS}
    socks, runs = socket_replays(), backend().graph.executions if backend().graph else 0
    for _ in range(4):
        ys = step()
        zd.realize(*ys)
        for i, y in enumerate(ys):
            np.testing.assert_array_equal(y.numpy(), a[i] * 2 + i)
    del ys, y
    assert socket_replays() == socks + 12
    assert (backend().graph.executions if backend().graph else 0) == runs  # no compiled graph ran them
    assert {d: in_use(d) for d in WORKERS} == base
    replays = zd.stats()["plan_replays"]
    ray.get(actor(WORKERS[1]).limit_memory.remote(base[WORKERS[1]]))
    try:
        with pytest.raises(zd.OutOfMemoryError, match="out of memory"):
            zd.realize(*step())
    finally:
        ray.get(actor(WORKERS[1]).limit_memory.remote(None))
    assert zd.stats()["plan_replays"] == replays
    assert {d: in_use(d) for d in WORKERS} == base  # the other two workers' results were freed too
    ys = step()
    zd.realize(*ys)
    for i, y in enumerate(ys):
        np.testing.assert_array_equal(y.numpy(), a[i] * 2 + i)


def test_a_worker_on_another_host_replays_through_the_compiled_graph(ray3, monkeypatch):
    """A worker whose node is not the driver's gets no socket (an abstract Unix socket reaches only this host):
    its replays take the compiled graph, with the same results."""
    dev = "opencl:0"
    a = rng((1536,), seed=15)
    x = zd.tensor(a, device=dev).realize()
    monkeypatch.setitem(backend().infos[dev], "node", "a node elsewhere")
    backend()._drop_socket(dev)
    warm(lambda: x / 4 + 3)
    socks = socket_replays()
    for _ in range(4):
        np.testing.assert_allclose((x / 4 + 3).realize().numpy(), a / 4 + 3, rtol=1e-6)
    assert socket_replays() == socks and backend().sockets[dev] is None
    assert backend().graph is not None and dev in backend().graph.names
    monkeypatch.undo()
    backend()._drop_socket(dev)  # (back on this host: the next replay connects)
    np.testing.assert_allclose((x / 4 + 3).realize().numpy(), a / 4 + 3, rtol=1e-6)
    assert socket_replays() == socks + 1


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16", "float16"])
def test_values_are_read_through_the_socket(ray3, dtype):
    """`numpy()` and `item()` of tensors on a worker of this host copy out through its socket (a Ray call costs a
    millisecond), any dtype and shape, as writeable arrays; a read over SOCKET_READ_BYTES takes the plain call."""
    import ml_dtypes

    from zyx_dist.engine.ray_backend import SOCKET_READ_BYTES

    dev = "opencl:2"
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    a = (rng((3, 5, 7), seed=16) * 40).astype(np_dtype)
    x = zd.tensor(a, device=dev).realize()
    ys = [zd.where(zd.tensor(a[i] == a[i], device=dev), x[i], x[i][::-1]).realize() for i in range(3)]  # kernels
    reads = backend().socket_reads
    got = x.numpy()
    assert got.dtype == np_dtype and got.shape == a.shape and got.flags.writeable
    np.testing.assert_array_equal(got.astype(np.float64), a.astype(np.float64))
    assert x[1, 2, 3].item() == a[1, 2, 3].item()
    for i, y in enumerate(ys):
        np.testing.assert_array_equal(y.numpy().astype(np.float64), a[i].astype(np.float64))
    assert backend().socket_reads >= reads + 4
    big = (zd.zeros(SOCKET_READ_BYTES // 4 + 1, device=dev) + 1).realize()  # one float32 over the limit
    reads = backend().socket_reads
    assert float(big.numpy().sum()) == SOCKET_READ_BYTES // 4 + 1
    assert backend().socket_reads == reads


def test_a_failure_inside_a_socket_replay(ray3):
    failure_inside_a_replay("opencl:2", socket_replays)


@pytest.mark.parametrize("how", ["ray.kill", "os._exit"])
def test_worker_killed_between_socket_replays(ray3, how):
    dev = {"ray.kill": "opencl:1", "os._exit": "opencl:0"}[how]
    old = []
    steps_across_a_kill(dev, how, lambda: old.append(backend().sockets[dev]))
    socks = socket_replays()
    # (the recomputed inputs may have been placed on another worker: a new one-worker graph on the restarted one)
    a = rng((64, 64), seed=7)
    z = zd.tensor(a, device=dev).realize()
    warm(lambda: z * 5, 4)
    np.testing.assert_allclose((z * 5).realize().numpy(), a * 5, rtol=1e-6)
    new = backend().sockets.get(dev)
    assert new is not None and new is not old[0] and socket_replays() > socks  # the restarted worker's own socket
    assert [d.name for d in zd.devices()] == WORKERS


def test_worker_killed_during_a_socket_replay(ray3):
    """The worker's process dies while it runs a replayed chain of matmuls sent through its socket (armed inside
    the actor, so the death lands in the replay whatever the machine's speed): the realize still returns the
    right values, recomputed on the restarted worker."""
    dev = "opencl:2"
    a, w = rng((320, 320), seed=9), rng((320, 320), seed=10, scale=0.1)
    x0, wt = zd.tensor(a, device=dev).realize(), zd.tensor(w, device=dev).realize()
    n = 48  # ~3 GFLOP: tens of ms even on a fast CPU runtime, so the replay outlasts the 5 ms
    for _ in range(4):  # compile, keep the template, define it, replay through the socket
        chain(x0, wt, a, w, n)[0].realize()
    socks, before = socket_replays(), zd.stats()["recoveries"]

    def die_inside_the_next_replay(self) -> int:  # (run in the actor; nested, so Ray ships it by value)
        real = self.replay_socket._replay

        def dying(*args):  # the process exits 5 ms into the replay, while its kernels run
            threading.Timer(0.005, os._exit, (1,)).start()
            return real(*args)

        self.replay_socket._replay = dying
        return os.getpid()

    pid = ray.get(actor(dev).__ray_call__.remote(die_inside_the_next_replay))
    x, want = chain(x0, wt, a, w, n)
    x.realize()  # the socket closes under the replay: recovered, then the chain is planned again
    assert zd.stats()["recoveries"] > before
    assert ray.get(actor(dev).__ray_call__.remote(lambda self: os.getpid())) != pid  # a new process
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(x0.numpy(), a)
    for _ in range(3):  # and replays work again afterwards, through the new worker's socket
        x, want = chain(x0, wt, a, w, n)
        x.realize()
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-4, atol=1e-4)
    assert socket_replays() > socks


def test_a_replay_interrupted_before_its_reply_leaves_the_next_ones_right(ray3, monkeypatch):
    """Ctrl-C while the driver waits for a reply: the realize raises KeyboardInterrupt, the connection (now out
    of step: the reply would arrive late, for the next request) is closed, and the next replay connects anew
    and gets its own results."""
    from zyx_dist.engine import ray_replay_socket

    dev = "opencl:1"
    a = rng((1024,), seed=14)
    x = zd.tensor(a, device=dev).realize()
    warm(lambda: x * 6 - 2, 4)
    old = backend().sockets[dev]
    read = ray_replay_socket.read_frame
    calls = []

    def interrupted(sock):
        if not calls:
            calls.append(1)
            raise KeyboardInterrupt
        return read(sock)

    monkeypatch.setattr(ray_replay_socket, "read_frame", interrupted)
    with pytest.raises(KeyboardInterrupt):
        (x * 6 - 2).realize()
    monkeypatch.undo()
    assert old.closed
    for i in range(3):
        np.testing.assert_array_equal((x * 6 - 2 + i).realize().numpy(), a * 6 - 2 + i)
        np.testing.assert_array_equal((x * 6 - 2).realize().numpy(), a * 6 - 2)
    new = backend().sockets[dev]
    assert new is not None and new is not old and not new.closed


def test_a_read_interrupted_between_its_request_and_its_reply_is_never_taken_for_the_next(ray3, monkeypatch):
    """Ctrl-C after a read's request went out but before its reply was read: that connection is out of step
    (the old reply would answer the next request), so it is not used again, and the next read gets its own
    value."""
    from zyx_dist.engine import ray_replay_socket

    dev = "opencl:1"
    a, b = rng((64,), seed=17), rng((64,), seed=18)
    x = (zd.tensor(a, device=dev) * 1.0).realize()
    y = (zd.tensor(b, device=dev) * 1.0).realize()
    np.testing.assert_array_equal(x.numpy(), a)  # (the socket is open)
    old = backend().sockets[dev]
    receive = ray_replay_socket.ReplaySocket.receive
    calls = []

    def interrupted(self):
        if not calls:
            calls.append(1)
            raise KeyboardInterrupt  # before reading anything: the reply stays in the socket
        return receive(self)

    monkeypatch.setattr(ray_replay_socket.ReplaySocket, "receive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        x.numpy()
    monkeypatch.undo()
    assert old.pending and not old.usable
    np.testing.assert_array_equal(y.numpy(), b)  # y's value, not x's waiting reply
    np.testing.assert_array_equal(x.numpy(), a)
    assert backend().sockets[dev] is not old and backend().sockets[dev].usable


def _connect(address: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(address)
    return s


def test_the_socket_serves_only_its_token_and_well_formed_frames(ray3):
    dev = "opencl:0"
    a = rng((512,), seed=12)
    x = zd.tensor(a, device=dev).realize()
    warm(lambda: x - 3)
    address, token = ray.get(actor(dev).open_replay_socket.remote())
    recoveries = zd.stats()["recoveries"]
    # a wrong token: the connection is closed before any frame is read
    with _connect(address) as s:
        s.sendall(bytes(len(token)))
        assert s.recv(2) == b""
    # the right token, then a frame that is not a request: closed, the worker untouched
    with _connect(address) as s:
        s.sendall(token)
        assert s.recv(2, socket.MSG_WAITALL) == b"ok"
        s.sendall(protocol.FRAME.pack(5) + b"\x01\x02\x03\x04\x05")
        assert s.recv(64) == b""
    # the right token and a ping: the worker's incarnation
    with _connect(address) as s:
        s.sendall(token)
        assert s.recv(2, socket.MSG_WAITALL) == b"ok"
        s.sendall(protocol.replay_request(41, protocol.PING_TEMPLATE, (), ()))
        seq, failed, graphs, _in_use, inc, _at = protocol.read_replay_reply(protocol.read_frame(s))
        assert seq == 41 and failed is None and graphs == () and inc == backend().incarnations[dev]
    socks = socket_replays()
    for _ in range(3):  # the driver's own connection was never disturbed
        np.testing.assert_array_equal((x - 3).realize().numpy(), a - 3)
    assert socket_replays() == socks + 3 and zd.stats()["recoveries"] == recoveries
