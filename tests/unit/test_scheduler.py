"""Unit tests of the pure scheduler (`zyx_dist.sched.scheduler`): kernels from the kernelizer and programs from
the renderer go in with a `SchedulerState` (the driver's mirror of the devices), and we check the
commands it emits per device and step: allocation before launch, compile once, uploads once, frees after
the last use, fp64 checks, placement by pins, data location and policy, transfers between devices,
spilling and out-of-memory. Realized data on a device is simulated with a fake buffer object."""

from __future__ import annotations

import numpy as np
import pytest

from zyx_dist import dtypes as dt
from zyx_dist._util import bucket_size
from zyx_dist.codegen.render import render_kernel
from zyx_dist.errors import DTypeError, OutOfMemoryError
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.graph import ir as g
from zyx_dist.protocol import Alloc, Compile, CopyIn, CopyOut, Free, Launch, Reload, Spill, TransferRef
from zyx_dist.sched.scheduler import BufferState, DeviceModel, SchedulerState, schedule

f32 = dt.float32


def leaf(*shape, dtype=f32):
    return g.leaf(np.ones(shape, dtype.np_dtype), dtype)


def state(*names: str, fp64: bool | tuple[str, ...] = True, memory: int = 1 << 30,
          policy: str = "heft") -> SchedulerState:
    """Identical devices (100 GFLOP/s, 100 GB/s); `fp64` is a flag for all or the names that have it."""
    has = (lambda n: fp64) if isinstance(fp64, bool) else (lambda n: n in fp64)
    models = {n: DeviceModel(n, has(n), 100.0, 100.0, memory) for n in names}
    return SchedulerState(models, policy=policy)


def plan(targets, st: SchedulerState, default: str = "d0"):
    ks = kernelize(targets)
    ps = [render_kernel(k) for k in ks]
    return ks, ps, schedule(ks, ps, st, default)


def cmds(sched, dev: str) -> list:
    """Every command for `dev`, in step order."""
    return [c for step in sched.steps for c in step.get(dev, [])]


def step_of(sched, dev: str, pred) -> int:
    return next(i for i, step in enumerate(sched.steps) for c in step.get(dev, []) if pred(c))


def of(kind, cs):
    return [c for c in cs if isinstance(c, kind)]


class FakeBuffer:
    """Stands in for the driver's handle of realized data: where it lives and its buffer id."""

    def __init__(self, device: str, id: int) -> None:
        self.device, self.id = device, id


def realized(st: SchedulerState, device: str, *shape, buf: int = 1000) -> g.Node:
    x = leaf(*shape)
    x.become_leaf(FakeBuffer(device, buf))
    st.buffers[buf] = BufferState(device, x.size * 4)
    st.used[device] += bucket_size(x.size * 4)
    return x


def exp(a):
    return g.unary(g.UnaryOp.EXP, a)


def softmax(x):
    """Softmax down the columns (axis 0): three kernels."""
    mx = g.reduce(g.ReduceOp.MAX, x, (0,))
    e = exp(g.binary(g.BinaryOp.SUB, x, g.expand(mx, x.shape)))
    s = g.reduce(g.ReduceOp.SUM, e, (0,))
    return g.binary(g.BinaryOp.DIV, e, g.expand(s, x.shape)), mx, s


# ---- one kernel -------------------------------------------------------------------------------------------

def test_single_kernel_commands_in_order():
    st = state("d0")
    x = leaf(4, 4)
    y = exp(x)
    _, (p,), sched = plan([y], st)
    c = cmds(sched, "d0")
    assert [type(a).__name__ for a in c] == ["Alloc", "CopyIn", "Alloc", "Compile", "Launch"]
    alloc_in, copy_in, alloc_out, comp, launch = c
    assert alloc_in.nbytes == 64 and copy_in.buf == alloc_in.buf and copy_in.data is x.host
    assert alloc_out.nbytes == 64 and alloc_out.buf != alloc_in.buf
    assert comp.name == p.name and comp.source == p.source
    assert launch.prog == comp.prog and launch.gws == p.gws and launch.lws == p.lws
    assert launch.reads == (alloc_in.buf,) and launch.writes == (alloc_out.buf,)
    assert launch.bufs == launch.reads + launch.writes
    assert sched.outputs == {y.id: ("d0", alloc_out.buf, 64)}
    assert sched.uploads == {x.id: ("d0", alloc_in.buf, 64)}
    assert sched.launches == 1 and sched.cache_hits == 0
    assert sched.placements[0].device == "d0" and sched.placements[0].kernel == p.name


def test_state_is_not_changed_until_the_caller_keeps_the_new_one():
    st = state("d0")
    _, (p,), sched = plan([exp(leaf(4))], st)
    assert st.compiled["d0"] == {} and st.buffers == {} and st.used["d0"] == 0
    assert p.name in sched.state.compiled["d0"]
    assert sched.state.used["d0"] == 2 * bucket_size(16) and len(sched.state.buffers) == 2


def test_buffer_ids_are_unique():
    st = state("d0")
    x = leaf(4, 8)
    out, _, _ = softmax(x)
    _, _, sched = plan([out], st)
    allocs = [a.buf for a in of(Alloc, cmds(sched, "d0"))]
    assert len(allocs) == len(set(allocs)) == 4  # x, max, sum, out


# ---- compile cache ------------------------------------------------------------------------------------------

def test_compile_once_per_program_name():
    st = state("d0")
    x = leaf(8)
    a = exp(x)
    b = exp(a)  # structurally the same kernel as a: same program
    ks, ps, sched = plan([a, b], st)
    assert len(ks) == 2 and ps[0].name == ps[1].name
    c = cmds(sched, "d0")
    (comp,) = of(Compile, c)
    l1, l2 = of(Launch, c)
    assert l1.prog == l2.prog == comp.prog
    assert l2.reads == l1.writes  # b reads a's buffer
    assert sched.launches == 2 and sched.cache_hits == 1


def test_second_schedule_reuses_compiled_programs():
    st = state("d0")
    _, (p1,), s1 = plan([exp(leaf(4))], st)
    _, (p2,), s2 = plan([exp(leaf(4))], s1.state)
    assert p1.name == p2.name
    assert of(Compile, cmds(s2, "d0")) == []
    (launch,) = of(Launch, cmds(s2, "d0"))
    assert launch.prog == s1.state.compiled["d0"][p1.name]
    assert s2.cache_hits == 1
    # another device has its own cache
    st2 = state("d0", "d1")
    st2.compiled["d0"] = dict(s1.state.compiled["d0"])
    y = exp(leaf(4))
    y.device = "d1"
    _, _, s3 = plan([y], st2)
    assert len(of(Compile, cmds(s3, "d1"))) == 1 and s3.cache_hits == 0


# ---- uploads and frees ----------------------------------------------------------------------------------------

def test_host_leaf_uploaded_once_for_several_kernels():
    st = state("d0")
    x = leaf(4, 8)
    out, _, _ = softmax(x)
    ks, _, sched = plan([out], st)
    assert len(ks) == 3
    c = cmds(sched, "d0")
    (up,) = of(CopyIn, c)
    assert up.data is x.host and sched.uploads[x.id][1] == up.buf
    assert all(up.buf in launch.reads for launch in of(Launch, c))


def test_intermediates_freed_after_their_last_launch_and_not_outputs():
    st = state("d0")
    x = leaf(4, 8)
    out, mx, s = softmax(x)
    _, _, sched = plan([out], st)
    c = cmds(sched, "d0")
    launches = [i for i, a in enumerate(c) if isinstance(a, Launch)]
    written = {c[i].writes[0]: i for i in launches}
    frees = {a.buf: i for i, a in enumerate(c) if isinstance(a, Free)}
    inter = [b for b, i in written.items() if i != launches[-1]]
    assert len(inter) == 2 and set(frees) == set(inter)
    for b in inter:
        last_read = max(i for i in launches if b in c[i].reads)
        assert frees[b] > last_read
    assert set(sched.outputs) == {out.id}
    assert mx.id not in sched.outputs and s.id not in sched.outputs
    assert not set(inter) & set(sched.state.buffers)
    assert sched.state.used["d0"] == sum(bucket_size(b.nbytes) for b in sched.state.buffers.values())


def test_alloc_of_every_buffer_precedes_its_first_use():
    st = state("d0")
    out, _, _ = softmax(leaf(4, 8))
    _, _, sched = plan([out], st)
    seen: set[int] = set()
    for a in cmds(sched, "d0"):
        if isinstance(a, Alloc):
            seen.add(a.buf)
        elif isinstance(a, Launch):
            assert set(a.bufs) <= seen
        elif isinstance(a, (CopyIn, Free)):
            assert a.buf in seen


# ---- dtype support ---------------------------------------------------------------------------------------------

def test_float64_on_a_device_without_fp64_names_the_device():
    st = state("gpu7", fp64=False)
    with pytest.raises(DTypeError, match="gpu7"):
        plan([exp(leaf(4, dtype=dt.float64))], st, default="gpu7")


def test_float64_goes_where_fp64_is_pinned():
    st = state("d0", "d1", fp64=("d1",))
    y = exp(leaf(4, dtype=dt.float64))
    y.device = "d1"
    _, _, sched = plan([y], st)
    assert len(of(Launch, cmds(sched, "d1"))) == 1


# ---- placement ----------------------------------------------------------------------------------------------------

def test_pinned_kernel_goes_to_its_device():
    st = state("d0", "d1")
    y = exp(leaf(4))
    y.device = "d1"
    _, _, sched = plan([y], st)
    assert cmds(sched, "d0") == []
    assert len(of(Launch, cmds(sched, "d1"))) == 1
    assert sched.outputs[y.id][0] == "d1"
    assert sched.placements[0].device == "d1" and sched.placements[0].reason == "pinned"


def test_kernel_follows_its_realized_input():
    st = state("d0", "d1")
    x = realized(st, "d1", 256, 256)
    y = exp(x)
    _, _, sched = plan([y], st)
    assert cmds(sched, "d0") == []
    (launch,) = of(Launch, cmds(sched, "d1"))
    assert launch.reads == (1000,)  # read in place: no copy
    assert of(CopyIn, cmds(sched, "d1")) == [] and sched.transfers == []
    assert sched.outputs[y.id][0] == "d1"


def test_policy_single_moves_inputs_to_the_default_device():
    st = state("d0", "d1", policy="single")
    x = realized(st, "d1", 16)
    y = exp(x)
    _, _, sched = plan([y], st)
    (t,) = sched.transfers
    assert (t.src, t.dst, t.nbytes) == ("d1", "d0", 64)
    out = of(CopyOut, cmds(sched, "d1"))
    assert [(o.buf, o.export) for o in out] == [(1000, t.id)]
    assert step_of(sched, "d1", lambda c: isinstance(c, CopyOut)) == t.step == 0
    d0 = cmds(sched, "d0")
    (cin,) = of(CopyIn, d0)
    assert cin.data == TransferRef(t.id)
    assert step_of(sched, "d0", lambda c: isinstance(c, CopyIn)) == 1
    assert step_of(sched, "d0", lambda c: isinstance(c, Launch)) == 1
    (launch,) = of(Launch, d0)
    assert launch.reads == (cin.buf,)
    # the moved copy is temporary: freed after the launch; the original stays
    assert [f.buf for f in of(Free, d0)] == [cin.buf]
    assert d0.index(Free(cin.buf)) > d0.index(launch)
    assert 1000 in sched.state.buffers and cin.buf not in sched.state.buffers


def test_output_of_a_pinned_kernel_moves_to_its_consumer():
    st = state("d0", "d1")
    x = leaf(8)
    a = exp(x)
    a.device = "d1"
    b = g.binary(g.BinaryOp.ADD, a, a)
    b.device = "d0"
    _, _, sched = plan([b], st)
    (t,) = sched.transfers
    assert (t.src, t.dst) == ("d1", "d0")
    assert step_of(sched, "d1", lambda c: isinstance(c, Launch)) == 0
    assert step_of(sched, "d0", lambda c: isinstance(c, Launch)) == 1
    (la,) = of(Launch, cmds(sched, "d1"))
    (exp_out,) = of(CopyOut, cmds(sched, "d1"))
    assert exp_out.buf == la.writes[0] and exp_out.export == t.id
    d1 = cmds(sched, "d1")
    assert Free(la.writes[0]) in d1 and d1.index(Free(la.writes[0])) > d1.index(exp_out)  # intermediate freed
    assert set(sched.outputs) == {b.id} and sched.outputs[b.id][0] == "d0"


def test_heft_spreads_independent_kernels_over_idle_devices():
    st = state("d0", "d1")
    a = exp(leaf(64, 64))
    b = exp(leaf(32, 32))  # another shape: its own kernel
    _, _, sched = plan([a, b], st)
    assert [p.device for p in sched.placements] == ["d0", "d1"]
    assert sched.estimated_seconds > 0


def test_round_robin_policy():
    st = state("d0", "d1", policy="round_robin")
    ts = [exp(leaf(n)) for n in (3, 5, 7)]
    _, _, sched = plan(ts, st)
    assert [p.device for p in sched.placements] == ["d0", "d1", "d0"]


def test_placement_is_deterministic():
    def run():
        st = state("d0", "d1", "d2")
        out, _, _ = softmax(leaf(16, 16))
        other = exp(leaf(9))
        _, _, sched = plan([out, other], st)
        return [(p.device, p.step) for p in sched.placements]

    assert run() == run()


# ---- memory -------------------------------------------------------------------------------------------------------

def test_spills_an_unused_buffer_to_make_room():
    st = state("d0", memory=2 * bucket_size(4096))  # the kernel needs both
    realized(st, "d0", 1024, buf=77)  # 4 KiB that the kernel does not read
    y = exp(leaf(1024))
    _, _, sched = plan([y], st)
    c = cmds(sched, "d0")
    assert of(Spill, c) == [Spill(77)] and sched.spills == 1
    assert c.index(Spill(77)) < c.index(of(Launch, c)[0])
    assert sched.state.buffers[77].spilled


def test_out_of_memory_names_the_device():
    st = state("d0", memory=bucket_size(4096))
    with pytest.raises(OutOfMemoryError, match="d0") as e:
        plan([exp(leaf(1024))], st)
    assert e.value.device == "d0" and e.value.requested > e.value.free


def test_spilled_input_is_reloaded_before_its_launch():
    st = state("d0")
    x = realized(st, "d0", 16, buf=55)
    st.buffers[55].spilled = True
    st.used["d0"] = 0
    _, _, sched = plan([exp(x)], st)
    c = cmds(sched, "d0")
    (launch,) = of(Launch, c)
    assert Reload(55) in c and c.index(Reload(55)) < c.index(launch) and launch.reads == (55,)
    assert not sched.state.buffers[55].spilled
    assert sched.state.used["d0"] == 2 * bucket_size(64)
