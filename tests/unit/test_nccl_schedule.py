"""Unit tests of the scheduler's CUDA side (`zyx_dist.sched.scheduler`), pure: devices with a dialect and an
NCCL rank (`DeviceModel.dialect`, `.nccl_rank`), kernels with one program per dialect. Checked: each
device compiles the program of its own dialect; a value moving between two NCCL devices goes by a Send in
the source's batch and a Recv in the destination's batch of the SAME step (after the producer, before the
consumer), and is usable in that step; without ranks (or from a spilled buffer) it goes through the host
(CopyOut with export, CopyIn one step later); and, on random graphs over three GPUs, executing the batches
with NCCL's semantics (a Send and its Recv complete together; the pairs between two ranks match in order)
never deadlocks, and every Launch finds its inputs.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from zyx_dist import dtypes as dt
from zyx_dist._util import bucket_size
from zyx_dist.codegen.render import render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.graph import ir as g
from zyx_dist.protocol import Alloc, Compile, CopyIn, CopyOut, Free, Launch, Recv, Reload, Send
from zyx_dist.sched.scheduler import BufferState, DeviceModel, SchedulerState, schedule

f32 = dt.float32
GiB = 1 << 30


def state(*devices: tuple) -> SchedulerState:
    """Devices as (name, dialect, nccl rank or None)."""
    models = {n: DeviceModel(n, True, 100.0, 100.0, GiB, dialect=d, nccl_rank=r) for n, d, r in devices}
    st = SchedulerState(models)
    st.link = {(a, b): (1e-5, 100e9) for a in models for b in models if a != b}
    return st


def gpus(n: int, nccl: bool = True) -> SchedulerState:
    return state(*[(f"cuda:{i}", "cuda", i if nccl else None) for i in range(n)])


class FakeBuffer:
    def __init__(self, device: str, id: int) -> None:
        self.device, self.id = device, id


def realized(st: SchedulerState, device: str, *shape, buf: int, spilled: bool = False) -> g.Node:
    x = g.leaf(np.ones(shape, np.float32), f32)
    x.become_leaf(FakeBuffer(device, buf))
    st.buffers[buf] = BufferState(device, x.size * 4, spilled=spilled)
    if not spilled:
        st.used[device] += bucket_size(x.size * 4)
    st.ids = itertools.count(max(buf + 1, next(st.ids)))
    return x


def pinned(n: g.Node, device: str) -> g.Node:
    n.device = device
    return n


def plan(targets, st: SchedulerState):
    ks = kernelize(targets)
    dialects = {m.dialect for m in st.devices.values()}
    ps = [{d: render_kernel(k, d) for d in dialects} for k in ks]
    return ks, ps, schedule(ks, ps, st, next(iter(st.devices)))


def cmds(sched, dev: str, step: int | None = None) -> list:
    return [c for i, s in enumerate(sched.steps) if step in (None, i) for c in s.get(dev, [])]


def exp(x):
    return g.unary(g.UnaryOp.EXP, x)


def add(a, b):
    return g.binary(g.BinaryOp.ADD, a, b)


def test_each_device_compiles_its_own_dialect():
    st = state(("opencl:0", "opencl", None), ("cuda:0", "cuda", None))
    a = pinned(exp(realized(st, "opencl:0", 8, buf=50)), "opencl:0")
    b = pinned(exp(realized(st, "cuda:0", 8, buf=51)), "cuda:0")
    _, _, sched = plan([a, b], st)
    (ca,) = [c for c in cmds(sched, "opencl:0") if isinstance(c, Compile)]
    (cb,) = [c for c in cmds(sched, "cuda:0") if isinstance(c, Compile)]
    assert ca.name.startswith("k_") and "__kernel" in ca.source
    assert cb.name.startswith("kc_") and "__global__" in cb.source
    assert [p.kernel for p in sched.placements] == [ca.name, cb.name]
    assert set(sched.state.compiled["cuda:0"]) == {cb.name}


def test_nccl_transfer_is_a_send_and_a_recv_in_the_same_step():
    st = gpus(2)
    x = realized(st, "cuda:0", 64, 64, buf=50)
    y = pinned(exp(x), "cuda:1")
    _, _, sched = plan([y], st)
    (t,) = sched.transfers
    assert (t.src, t.dst, t.nbytes, t.via, t.step) == ("cuda:0", "cuda:1", 64 * 64 * 4, "nccl", 0)
    assert cmds(sched, "cuda:0") == [Send(50, 1, 64 * 64 * 4)] + [c for c in cmds(sched, "cuda:0")
                                                                 if isinstance(c, Free)]
    dst = cmds(sched, "cuda:1", 0)
    recv = next(i for i, c in enumerate(dst) if isinstance(c, Recv))
    launch = next(i for i, c in enumerate(dst) if isinstance(c, Launch))
    assert dst[recv] == Recv(dst[recv].buf, 0, 64 * 64 * 4) and recv < launch
    assert isinstance(dst[recv - 1], Alloc) and dst[recv - 1].buf == dst[recv].buf
    assert dst[recv].buf in dst[launch].reads
    assert sched.placements[0].step == 0 and len(sched.steps) == 1


def test_nccl_transfer_of_a_value_made_in_the_same_step():
    st = gpus(2)
    x = realized(st, "cuda:0", 32, buf=50)
    a = pinned(exp(x), "cuda:0")
    b = pinned(add(a, a), "cuda:1")
    _, _, sched = plan([b], st)
    assert [p.step for p in sched.placements] == [0, 0]
    src = cmds(sched, "cuda:0", 0)
    produce = next(i for i, c in enumerate(src) if isinstance(c, Launch))
    send = next(i for i, c in enumerate(src) if isinstance(c, Send))
    assert produce < send and src[send].buf in src[produce].writes
    assert [t.via for t in sched.transfers] == ["nccl"]


def test_without_nccl_the_transfer_goes_through_the_host():
    st = gpus(2, nccl=False)
    x = realized(st, "cuda:0", 64, buf=50)
    _, _, sched = plan([pinned(exp(x), "cuda:1")], st)
    (t,) = sched.transfers
    assert t.via == "host" and t.step == 0
    assert any(isinstance(c, CopyOut) and c.export == t.id for c in cmds(sched, "cuda:0", 0))
    assert any(isinstance(c, CopyIn) for c in cmds(sched, "cuda:1", 1))
    assert not [c for c in cmds(sched, "cuda:0") + cmds(sched, "cuda:1") if isinstance(c, (Send, Recv))]
    assert sched.placements[0].step == 1


def test_between_an_nccl_gpu_and_another_device_it_goes_through_the_host():
    st = state(("cuda:0", "cuda", 0), ("cuda:1", "cuda", 1), ("opencl:0", "opencl", None))
    x = realized(st, "cuda:0", 64, buf=50)
    _, _, sched = plan([pinned(exp(x), "opencl:0")], st)
    assert [t.via for t in sched.transfers] == ["host"]


def test_a_spilled_source_goes_through_the_host():
    st = gpus(2)
    x = realized(st, "cuda:0", 64, buf=50, spilled=True)
    _, _, sched = plan([pinned(exp(x), "cuda:1")], st)
    assert [t.via for t in sched.transfers] == ["host"]
    assert not any(isinstance(c, (Send, Recv, Reload)) for s in sched.steps for b in s.values() for c in b)


# ---- executing the batches with NCCL semantics --------------------------------------------------------------

def simulate(sched, st: SchedulerState) -> None:
    """Run every step's batches as the workers would: each worker executes its batch in order, a Send and
    the matching Recv (the next unmatched one between the two ranks, in order) complete together, a Launch
    needs its inputs written. Fails on a deadlock or on a read of a buffer never written."""
    rank = {n: m.nccl_rank for n, m in st.devices.items()}
    by_rank = {r: n for n, r in rank.items() if r is not None}
    written = {n: {i for i, b in st.buffers.items() if b.device == n} for n in st.devices}
    exported: set[int] = set()
    for step in sched.steps:
        queues = {dev: list(batch) for dev, batch in step.items()}
        while any(queues.values()):
            progress = False
            for dev, q in queues.items():
                while q:
                    c = q[0]
                    if isinstance(c, (Send, Recv)):
                        peer = by_rank[c.peer]
                        pq = queues.get(peer, [])
                        other = Recv if isinstance(c, Send) else Send
                        if not (pq and isinstance(pq[0], other) and pq[0].peer == rank[dev]):
                            break  # blocks until the peer reaches the matching op
                        send, recv, src, dst = (c, pq[0], dev, peer) if isinstance(c, Send) else (pq[0], c, peer, dev)
                        assert send.buf in written[src], f"{src} sends {send.buf} before it is written"
                        assert send.nbytes == recv.nbytes
                        written[dst].add(recv.buf)
                        q.pop(0)
                        pq.pop(0)
                        progress = True
                        continue
                    if isinstance(c, Launch):
                        missing = set(c.reads) - written[dev]
                        assert not missing, f"{dev} launches reading {missing} before they are written"
                        written[dev] |= set(c.writes)
                    elif isinstance(c, CopyIn):
                        assert not hasattr(c.data, "id") or c.data.id in exported
                        written[dev].add(c.buf)
                    elif isinstance(c, CopyOut) and c.export:
                        exported.add(c.export)
                    elif isinstance(c, Free):
                        written[dev].discard(c.buf)
                    q.pop(0)
                    progress = True
            assert progress, f"deadlock: {[(d, q[0]) for d, q in queues.items() if q]}"


def test_both_directions_in_one_step():
    st = gpus(2)
    p = realized(st, "cuda:0", 16, 16, buf=50)
    q = realized(st, "cuda:1", 16, 16, buf=51)
    u = pinned(g.binary(g.BinaryOp.MUL, p, q), "cuda:1")
    v = pinned(add(q, p), "cuda:0")
    w = pinned(g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, u, v), (0, 1)), "cuda:0")
    _, _, sched = plan([u, v, w], st)
    assert len(sched.steps) == 1 and {t.via for t in sched.transfers} == {"nccl"}
    simulate(sched, st)


@pytest.mark.parametrize("seed", range(60))
def test_random_graphs_over_three_gpus_never_deadlock(seed):
    rng = random.Random(seed)
    st = gpus(3) if seed % 4 else state(("cuda:0", "cuda", 0), ("cuda:1", "cuda", 1), ("cuda:2", "cuda", None))
    names = list(st.devices)
    nodes = [realized(st, names[i % 3], 8, 8, buf=100 + i) for i in range(4)]
    for _ in range(rng.randint(3, 12)):
        a, b = rng.choice(nodes), rng.choice(nodes)
        n = rng.choice([add(a, b), exp(a), g.binary(g.BinaryOp.MUL, a, b)])
        if rng.random() < 0.7:
            pinned(n, rng.choice(names))
        nodes.append(n)
    targets = nodes[4:]
    _, _, sched = plan(targets, st)
    simulate(sched, st)
    for t in sched.transfers:
        both = st.devices[t.src].nccl_rank is not None and st.devices[t.dst].nccl_rank is not None
        assert t.via == ("nccl" if both else "host")
