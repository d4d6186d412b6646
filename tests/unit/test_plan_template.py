"""Unit tests of plan templates (`zyx_dist.sched.template`, pure): a schedule that ran becomes a template whose
batches name slots instead of buffer ids; binding fresh ids gives the batches the scheduler would have emitted
for them, and schedules that cannot be replayed by substituting ids (compiles, uploads, spills) give none."""

from __future__ import annotations

import numpy as np

from zyx_dist import dtypes as dt
from zyx_dist._util import bucket_size, picker
from zyx_dist.codegen.render import render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.fuse.plan_cache import PlanCache
from zyx_dist.graph import ir as g
from zyx_dist.protocol import Alloc, CopyIn, CopyOut, DefineTemplate, Free, Launch, Replay, Sync, TransferRef
from zyx_dist.sched.scheduler import BufferState, DeviceModel, IdCounter, SchedulerState, schedule
from zyx_dist.sched.template import leaf_positions, make_template

f32 = dt.float32


class FakeBuffer:
    def __init__(self, device: str, id: int) -> None:
        self.device, self.id = device, id


def state(*names: str, memory: int = 1 << 30) -> SchedulerState:
    return SchedulerState({n: DeviceModel(n, True, 100.0, 100.0, memory) for n in names})


def realized(st: SchedulerState, device: str, *shape) -> g.Node:
    x = g.leaf(np.ones(shape, np.float32), f32)
    buf = st.new_id()
    x.become_leaf(FakeBuffer(device, buf))
    st.buffers[buf] = BufferState(device, x.size * 4)
    st.used[device] += bucket_size(x.size * 4)
    return x


def graph(x, y):
    """(x * 2 + y) and its sum: two kernels, one intermediate kept (both are requested)."""
    a = g.binary(g.BinaryOp.ADD, g.binary(g.BinaryOp.MUL, x, g.const(2.0, x.shape, f32)), y)
    return [a, g.reduce(g.ReduceOp.SUM, a, (0,))]


def run(targets, st: SchedulerState):
    """Plan `targets` on `st` as the session does, add its Syncs, and 'run' it: (schedule, order, positions)."""
    order = PlanCache().lookup(targets)[1]
    inputs = leaf_positions(order)
    ks = kernelize(targets)
    ps = [render_kernel(k) for k in ks]
    sched = schedule(ks, ps, st, "d0")
    for step in sched.steps[-1:]:
        for cmds in step.values():
            cmds.append(Sync())
    return sched, order, inputs


def compiled(st: SchedulerState, targets) -> None:
    """Mark the programs of `targets` compiled on every device (as a first run would leave them)."""
    for k in kernelize(targets):
        p = render_kernel(k)
        for d in st.devices:
            st.compiled[d].setdefault(p.name, st.new_id())


def test_id_counter_hands_out_blocks():
    ids = IdCounter(5)
    assert next(ids) == 5 and ids.take(3) == 6 and next(ids) == 9 and list(zip(range(2), ids)) == [(0, 10), (1, 11)]


def test_picker():
    ids = (10, 20, 30, 40)
    assert picker(())(ids) == () and picker((2,))(ids) == (30,) and picker((3, 0, 3))(ids) == (40, 10, 40)


def test_a_clean_schedule_becomes_a_template_and_binds_to_fresh_ids():
    st = state("d0")
    x, y = realized(st, "d0", 64), realized(st, "d0", 64)
    targets = graph(x, y)
    compiled(st, targets)
    sched, order, inputs = run(targets, st)
    t = make_template(sched, order, inputs, st, st.new_id)
    assert t is not None
    assert t.signature == ("d0", "d0") and t.new == len(sched.allocated) and t.launches == sched.launches == 2
    assert t.transfers == 0 and t.outputs and {dev for _p, _s, dev, _n in t.outputs} == {"d0"}
    assert t.used == {"d0": sched.state.used["d0"] - st.used["d0"]}
    (wb,) = [b for step in t.steps for b in step.values()]
    # slots: the inputs first, then the plan's own buffers; the worker's are numbered in order of first use
    assert all(isinstance(c, (Alloc, Launch, Free, Sync)) for c in wb.commands)
    launches = [c for c in wb.commands if isinstance(c, Launch)]
    assert all(max(c.bufs) < len(wb.slots) for c in launches)
    # binding: each command of the planned batch with its ids replaced, slot by slot
    leaves = [order[p].buffer.id for p in inputs]  # the template's inputs, in the structure's order
    assert sorted(leaves) == sorted([x.buffer.id, y.buffer.id])
    ids = (*leaves, *range(500, 500 + t.new))
    (step,) = t.bind(ids)
    define, replay = step["d0"]
    assert isinstance(define, DefineTemplate) and define.template == wb.template and define.commands == wb.commands
    assert isinstance(replay, Replay) and replay.template == wb.template
    planned = {b: i for i, b in enumerate([*leaves, *(b for _d, b in sched.allocated)])}
    for proto, cmd in zip(sched.steps[0]["d0"], wb.commands):
        if isinstance(proto, Launch):
            assert tuple(replay.bufs[s] for s in cmd.bufs) == tuple(ids[planned[b]] for b in proto.bufs)
        elif isinstance(proto, (Alloc, Free)):
            assert replay.bufs[cmd.buf] == ids[planned[proto.buf]]
    t.defined = True
    assert t.bind(ids)[0]["d0"] == [replay]  # once every worker has it, the definition is not sent again


def test_transfers_become_imports_and_exports():
    st = state("d0", "d1")
    x, y = realized(st, "d0", 256), realized(st, "d1", 256)
    a = g.binary(g.BinaryOp.ADD, x, y)
    compiled(st, [a])
    sched, order, inputs = run([a], st)
    assert sched.transfers
    t = make_template(sched, order, inputs, st, st.new_id)
    assert t is not None and t.transfers == len(sched.transfers) and t.signature == ("d0", "d1")
    batches = [b for step in t.steps for b in step.values()]
    exports = [tid for b in batches for tid in b.exports]
    imports = [r.id for b in batches for r in b.imports]
    assert sorted(exports) == sorted(imports) == sorted(tr.id for tr in sched.transfers)
    for b in batches:
        assert [c.export for c in b.commands if isinstance(c, CopyOut)] == list(b.exports)
        assert [c.data for c in b.commands if isinstance(c, CopyIn)] == list(b.imports)
        assert all(isinstance(r, TransferRef) for r in b.imports)


def test_schedules_that_are_not_a_function_of_ids_alone_give_no_template():
    st = state("d0")
    x = realized(st, "d0", 64)
    a = g.unary(g.UnaryOp.EXP, x)
    sched, order, inputs = run([a], st)  # its program is compiled by this plan
    assert make_template(sched, order, inputs, st, st.new_id) is None
    host = g.leaf(np.ones(64, np.float32), f32)  # an upload of host data
    b = g.unary(g.UnaryOp.EXP, host)
    compiled(st, [b])
    sched, order, inputs = run([b], st)
    assert sched.uploads and make_template(sched, order, inputs, st, st.new_id) is None


def test_spilling_schedule_gives_no_template():
    st = state("d0", memory=2 * bucket_size(4096 * 4))
    x = realized(st, "d0", 4096)
    other = realized(st, "d0", 4096)  # fills the device: the result needs a spill
    a = g.unary(g.UnaryOp.EXP, x)
    compiled(st, [a])
    sched, order, inputs = run([a], st)
    assert sched.spills and make_template(sched, order, inputs, st, st.new_id) is None
    assert other.buffer.id in st.buffers
