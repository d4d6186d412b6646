"""Driver side, pure (no I/O, no ray/cupy/pyopencl): plan templates, the scheduler's output kept for a
repeated graph. Takes a `Schedule` that ran (planned for a graph of some structure, its inputs on some
devices) and the nodes of that structure in key order; gives a `PlanTemplate`: the same command batches
with every buffer id replaced by a slot number (the input leaves' buffers first, in structure order,
then each buffer the plan allocates), one batch template per worker per step, plus what the run does
to the driver's mirror (the buffers it leaves behind, the pool bytes they take). A later graph of the
same structure, whose inputs live on the same devices, is then run by binding the slots to its own
buffer ids (`bind`): no kernelize, no placement, no command lists built, and each worker receives a
small tuple of ids (`Replay`) for a template it was given once (`DefineTemplate`).

A schedule is kept only when replaying it is exactly what scheduling again would do apart from
placement: it compiles nothing, spills and reloads nothing, and touches no buffer that is neither an
input nor its own. Host leaves it uploads (an optimizer's step-dependent scalars, a learning rate made
each step with `zd.tensor`) become inputs of the template: a replay uploads the new host data to the
same devices first (`uploads`), in front of the template's batches. Placement is frozen with it (the measured kernel times
that refine HEFT's choice are not consulted again); the session replans when the inputs move, when
memory is too short for the template's allocations, or after a recovery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .._util import bucket_size, picker
from ..graph.ir import Node, Op
from ..protocol import Alloc, CopyIn, CopyOut, DefineTemplate, Free, Launch, Recv, Replay, Send, Sync, TransferRef
from .scheduler import Schedule, SchedulerState


@dataclass(frozen=True)
class WorkerBatch:
    """One worker's part of one step of a template."""

    template: int  # the worker-side template id (DefineTemplate / Replay)
    commands: tuple  # the batch with worker-local slot numbers in its buffer fields
    slots: tuple[int, ...]  # the template's slot of each worker-local slot
    imports: tuple[TransferRef, ...]  # transfers this batch copies in, in command order
    exports: tuple[int, ...]  # transfers this batch exports, in command order
    pick: Callable[[tuple], tuple] = field(repr=False, compare=False, default=None)  # template ids -> local


@dataclass
class PlanTemplate:
    inputs: tuple[int, ...]  # structure positions of the input leaves: slot i is the buffer of inputs[i]
    signature: tuple[str | None, ...]  # the device of each input, None for a host leaf (the key among a
    # structure's templates)
    new: int  # slots for the buffers the plan allocates, after the inputs' slots
    steps: list[dict[str, WorkerBatch]]
    outputs: tuple[tuple[int, int, str, int], ...]  # (structure position, slot, device, bytes) of each result
    alloc_bytes: dict[str, int]  # pool bytes (bucketed) of every allocation, per device: the room it needs
    used: dict[str, int]  # pool bytes the results add per device once the run is over
    allocated: tuple[tuple[str, int], ...]  # (device, slot) of every allocation, to free after a failure
    launches: int
    transfers: int
    bytes_transferred: int
    schedule: Schedule  # the prototype run (for traces)
    uploads: tuple[tuple[int, str], ...] = ()  # (input index, device) of each host leaf the replay uploads
    epoch: int = 0  # the session's device epoch when it was made (a recovery makes it stale)
    defined: bool = False  # every worker has been given its part (DefineTemplate) and kept it
    # the driver's plan for its results' recipes (graph/lineage.recipe_plan), made at the first replay that wants them
    recipe_plan: Any = field(default=None, repr=False, compare=False)

    @cached_property
    def pick_inputs(self) -> Callable[[list], tuple]:
        """A function giving the input leaves (by `inputs`) from the structure's nodes in key order."""
        return picker(self.inputs)

    @cached_property
    def single(self) -> tuple[str, WorkerBatch] | None:
        """(device, batch) of a template that is one batch on one worker, importing and exporting nothing, whose
        uploads (if any) go to that worker (most are: a training step on one device, its optimizer's step
        scalars uploaded); None for any other. Such a replay is one call of the worker's template with the
        bound ids (and the uploads' data), which a backend can make without commands."""
        if len(self.steps) != 1 or len(self.steps[0]) != 1:
            return None
        ((dev, wb),) = self.steps[0].items()
        if wb.imports or wb.exports or any(d != dev for _i, d in self.uploads):
            return None
        return dev, wb

    def bind(self, ids: tuple[int, ...]) -> list[dict[str, list]]:
        """The steps to send for buffer ids `ids` (one per slot): a Replay per worker per step, preceded
        by its DefineTemplate until the template is `defined` (sending it twice is harmless)."""
        out = []
        defined = self.defined
        for step in self.steps:
            batches = {}
            for dev, wb in step.items():
                replay = Replay(wb.template, wb.pick(ids), wb.imports, wb.exports)
                batches[dev] = [replay] if defined else [define(wb), replay]
            out.append(batches)
        return out


def define(wb: WorkerBatch) -> DefineTemplate:
    return DefineTemplate(wb.template, wb.commands)


def leaf_positions(order: list[Node]) -> tuple[int, ...]:
    """Positions of the leaves in a structure's node order: a template's inputs."""
    leaf = Op.LEAF
    return tuple([i for i, n in enumerate(order) if n.op is leaf])


def make_template(sched: Schedule, order: list[Node], inputs: tuple[int, ...], before: SchedulerState,
                  new_id: Callable[[], int]) -> PlanTemplate | None:
    """The template of `sched` (planned for the nodes `order` on `before`, and run; `inputs` are the
    positions of the structure's leaves as `leaf_positions` gave them before the run turned its
    results into leaves too), or None when it cannot be replayed by substituting ids alone."""
    if sched.spills or not sched.steps or sched.cache_hits != sched.launches:
        return None
    uploaded = {buf: dev for dev, buf, _n in sched.uploads.values()}  # their leaves hold these buffers now
    slot_of: dict[int, int] = {}
    signature: list[str | None] = []
    uploads = []
    for i, p in enumerate(inputs):
        ref = order[p].buffer
        if ref is None or ref.id in slot_of:  # a leaf the run did not upload, or one buffer twice
            return None
        slot_of[ref.id] = i
        if ref.id in uploaded:
            signature.append(None)
            uploads.append((i, ref.device))
        else:
            signature.append(ref.device)
    if len(uploads) != len(uploaded):  # an upload of a leaf that is not an input (a target realized alone)
        return None
    allocated = [(dev, buf) for dev, buf in sched.allocated if buf not in uploaded]
    for j, (_dev, buf) in enumerate(allocated):
        slot_of[buf] = len(inputs) + j
    alloc_bytes: dict[str, int] = {}
    steps: list[dict[str, WorkerBatch]] = []
    for step in sched.steps:
        out = {}
        for dev, cmds in step.items():
            if uploaded:  # the replay makes these itself, with the new data
                cmds = [c for c in cmds if not ((c.__class__ is Alloc or c.__class__ is CopyIn) and c.buf in uploaded)]
            if not cmds:
                continue
            wb = _worker_batch(cmds, slot_of, new_id)
            if wb is None:
                return None
            out[dev] = wb
            for c in cmds:
                if c.__class__ is Alloc:
                    alloc_bytes[dev] = alloc_bytes.get(dev, 0) + bucket_size(c.nbytes)
        steps.append(out)
    pos_of = {n.id: i for i, n in enumerate(order)}
    outputs, used = [], {}
    for nid, (dev, buf, nbytes) in sched.outputs.items():
        if nid not in pos_of or buf not in slot_of:
            return None
        outputs.append((pos_of[nid], slot_of[buf], dev, nbytes))
        used[dev] = used.get(dev, 0) + bucket_size(nbytes)
    kept = {buf for _dev, buf in allocated if buf in sched.state.buffers}
    if kept != {sched.outputs[nid][1] for nid in sched.outputs}:
        return None  # the run leaves buffers behind that are not results: not a plain function of ids
    grown = dict(used)  # the uploads stay too, as their leaves' buffers
    for _dev, buf, nbytes in sched.uploads.values():
        grown[uploaded[buf]] = grown.get(uploaded[buf], 0) + bucket_size(nbytes)
    for dev in set(before.used) | set(sched.state.used):
        if sched.state.used.get(dev, 0) - before.used.get(dev, 0) != grown.get(dev, 0):
            return None
    return PlanTemplate(
        inputs=inputs, signature=tuple(signature), new=len(allocated), steps=steps,
        outputs=tuple(outputs), alloc_bytes=alloc_bytes, used=used,
        allocated=tuple((dev, slot_of[buf]) for dev, buf in allocated), launches=sched.launches,
        transfers=len(sched.transfers), bytes_transferred=sum(t.nbytes for t in sched.transfers), schedule=sched,
        uploads=tuple(uploads))


def _worker_batch(cmds: list, slot_of: dict[int, int], new_id: Callable[[], int]) -> WorkerBatch | None:
    """One batch in slot form (worker-local slots, numbered in order of first use), or None."""
    local: dict[int, int] = {}

    def ls(buf: int) -> int:
        s = slot_of[buf]  # KeyError: a buffer that is neither an input nor the plan's own
        if s not in local:
            local[s] = len(local)
        return local[s]

    out, imports, exports = [], [], []
    try:
        for c in cmds:
            cls = c.__class__
            if cls is Launch:
                out.append(Launch(c.prog, tuple(ls(b) for b in c.bufs), c.gws, c.lws, tuple(ls(b) for b in c.reads),
                                  tuple(ls(b) for b in c.writes)))
            elif cls is Alloc:
                out.append(Alloc(ls(c.buf), c.nbytes))
            elif cls is Free:
                out.append(Free(ls(c.buf)))
            elif cls is Sync:
                out.append(c)
            elif cls is Send or cls is Recv:
                out.append(cls(ls(c.buf), c.peer, c.nbytes))
            elif cls is CopyOut and c.export:
                out.append(CopyOut(ls(c.buf), c.dtype, c.shape, c.export))
                exports.append(c.export)
            elif cls is CopyIn and isinstance(c.data, TransferRef):
                out.append(CopyIn(ls(c.buf), c.data))
                imports.append(c.data)
            else:  # Compile, Spill, Reload, an upload or a read: not a function of buffer ids alone
                return None
    except KeyError:
        return None
    slots = tuple(local)  # dicts keep insertion order: local slot k is the k-th template slot met
    return WorkerBatch(new_id(), tuple(out), slots, tuple(imports), tuple(exports), picker(slots))
