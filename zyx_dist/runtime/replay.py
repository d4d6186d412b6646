"""Actor side: batch templates, a worker's fast path for a repeated plan. It takes a `DefineTemplate`
(a batch whose buffer fields are slot numbers) and the worker's compiled programs, and turns it once
into a flat list of operations with everything resolved that does not depend on the buffers: program
objects, work sizes, which slots each launch reads and writes. A `Replay` then binds the slots to
buffer ids and runs the list without building a command object per step: allocations, frees and
launches go straight to the pool, the event tracker and the backend. On a backend that can capture
CUDA graphs (`capture_graph`/`launch_graph`), the launches between two syncs or transfers are one
segment (the allocations and frees among them moved around them, `_grouped`), captured into one graph
the second time it meets the same device addresses, and replayed as one graph launch from then on; a new address (a buffer that is new, or was freed and came back elsewhere)
simply misses, so a graph never runs on memory it was not captured for. A segment that keeps meeting new
addresses (results kept alive from one replay to the next get new blocks every time) is split: the launches
that touch the changing buffers run one by one, the runs between them are segments of their own. Gives back the
tuple of the template's exported arrays; a failure re-raises the first error after the template's later frees
ran.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from operator import attrgetter
from typing import Any

from .._util import bucket_size, picker
from ..protocol import Alloc, CopyIn, CopyOut, Free, Launch, Recv, Send, Sync, TransferRef

# operation kinds of a compiled template
_ALLOC, _FREE, _LAUNCH, _SEGMENT, _SEND, _RECV, _EXPORT, _IMPORT, _SYNC = range(9)

_handle = attrgetter("handle")  # a pool Block's device handle
GRAPHS_PER_SEGMENT = 32  # captured graphs kept per segment (one per buffer assignment seen twice): a loop
# cycling through 8 uploaded batches, whose outputs alternate between two sets of blocks, meets 16
SEEN_PER_SEGMENT = 64  # buffer assignments remembered per segment, to capture on the second sighting
# new assignments in a row after which a segment is split around the buffers that changed: a loop cycling through
# up to GRAPHS_PER_SEGMENT assignments meets its first one again before that and replays whole graphs; a longer
# cycle would evict each graph before its reuse, so splitting never loses a replay the whole would have had
SPLIT_AFTER_MISSES = GRAPHS_PER_SEGMENT + 1


def cuda_graphs_enabled() -> bool:
    """CUDA graph replay is on unless ZYX_DIST_CUDA_GRAPHS is 0/false/off."""
    return os.environ.get("ZYX_DIST_CUDA_GRAPHS", "1").strip().lower() not in ("0", "false", "off")


class Segment:
    """Consecutive launches of a template that may run as one captured CUDA graph."""

    __slots__ = ("args", "broken", "graphs", "last_key", "launches", "misses", "parts", "reads", "seen", "slot_ids",
                 "slots", "writes")

    def __init__(self, launches: list[tuple], splittable: bool = True) -> None:
        # per launch: (program, picker of its argument slots, gws, lws, argument slots, read slots, written
        # slots, picker of the read slots, picker of the written slots)
        self.launches = launches
        # each slot the segment touches once (a training step's graph: ~300 buffers in ~700 arguments), and
        # per launch where its arguments are among them: a replay looks up and keys the buffers once each
        slots = tuple(dict.fromkeys(s for launch in launches for s in launch[4]))
        self.slot_ids = slots
        self.slots = picker(slots)
        at = {s: i for i, s in enumerate(slots)}
        self.args = [tuple([at[s] for s in launch[4]]) for launch in launches]
        reads = {s for launch in launches for s in launch[5]}
        writes = {s for launch in launches for s in launch[6]}
        # what the graph as a whole reads and writes, for the event tracker (a slot both read and written
        # counts as written: the graph's one event then stands for its last write)
        self.reads = picker(tuple(sorted(reads - writes)))
        self.writes = picker(tuple(sorted(writes)))
        self.graphs: OrderedDict[tuple, Any] = OrderedDict()  # device addresses -> captured graph
        self.seen: OrderedDict[tuple, None] = OrderedDict()
        self.broken = False  # capture failed once: launch one by one from then on
        # new assignments met in a row (None: never split, as the parts of a split segment are not), the last
        # one met, and once split, the parts in order: a Segment, or the index of a launch that runs alone
        self.misses: int | None = 0 if splittable else None
        self.last_key: tuple | None = None
        self.parts: list[Segment | int] | None = None

    def split(self, changed: set[int]) -> None:
        """Split around the launches that touch the slots `changed`: those run alone, the runs between them
        become segments of their own (which are not split again)."""
        parts: list[Segment | int] = []
        run: list[tuple] = []
        for i, launch in enumerate(self.launches):
            if changed.isdisjoint(launch[4]):
                run.append(launch)
                continue
            if run:
                parts.append(Segment(run, splittable=False))
                run = []
            parts.append(i)
        if run:
            parts.append(Segment(run, splittable=False))
        self.parts = parts
        self.graphs.clear()  # (the whole's graphs: not launched again)
        self.seen.clear()


class WorkerTemplate:
    """A compiled template: operations, slot count, and how many transfers it imports and exports."""

    __slots__ = ("imports", "nslots", "ops")

    def __init__(self, ops: list[tuple], nslots: int, imports: int) -> None:
        self.ops, self.nslots, self.imports = ops, nslots, imports


def _grouped(commands: tuple) -> list:
    """`commands` with the allocations between two other commands (a sync, a transfer, an export) moved in
    front of that stretch's launches and its frees behind them, so each stretch is one segment, one CUDA
    graph, instead of one per run of launches between frees (a training step: 51-63 graphs -> 1). A
    slot is allocated once per template and freed after its last use, so this only moves memory use
    earlier and releases later; the replay checks room for every allocation of the template at once
    (engine/templates.py), so the peak it allows is never exceeded. A stretch allocates the slots the
    template frees before those it keeps (its results): where results stay alive from one replay to the
    next, the pool then hands the freed slots the same blocks every time and only the results new ones, so
    only the launches that touch the results meet new addresses."""
    freed = {cmd.buf for cmd in commands if cmd.__class__ is Free}
    out: list = []
    allocs: list = []
    launches: list = []
    frees: list = []

    def stretch() -> list:
        return [a for a in allocs if a.buf in freed] + [a for a in allocs if a.buf not in freed] + launches + frees

    for cmd in commands:
        cls = cmd.__class__
        if cls is Alloc:
            allocs.append(cmd)
        elif cls is Launch:
            launches.append(cmd)
        elif cls is Free:
            frees.append(cmd)
        else:
            out += stretch()
            out.append(cmd)
            allocs, launches, frees = [], [], []
    return out + stretch()


def compile_template(commands: tuple, programs: dict[int, Any], graphs: bool) -> WorkerTemplate:
    """Resolve `commands` (a DefineTemplate's) against the worker's `programs`; with `graphs`, group
    the launches into CUDA graph segments (`_grouped`). Raises ValueError/KeyError naming a bad command."""
    if graphs:
        commands = tuple(_grouped(commands))
    ops: list[tuple] = []
    nslots = 0
    imports = 0
    run: list[tuple] = []  # launches not yet closed into a segment

    def close_run() -> None:
        if run and graphs:
            ops.append((_SEGMENT, Segment(list(run)), True))
        else:
            ops.extend((_LAUNCH, launch, True) for launch in run)
        run.clear()

    for cmd in commands:
        cls = cmd.__class__
        if cls is Launch:
            try:
                prog = programs[cmd.prog]
            except KeyError:
                raise KeyError(f"template launches program {cmd.prog}, which is not compiled here") from None
            reads, writes = tuple(cmd.reads), tuple(cmd.writes)
            if cmd.bufs != reads + writes:  # the scheduler lists reads then writes; anything else is written
                listed = set(reads) | set(writes)
                writes = writes + tuple(b for b in cmd.bufs if b not in listed)
            nslots = max([nslots, *(s + 1 for s in cmd.bufs)])
            if 0 in cmd.gws:  # an empty launch does nothing (and OpenCL rejects it)
                continue
            lws = None if cmd.lws is None else tuple(cmd.lws)
            args = tuple(cmd.bufs)
            run.append((prog, picker(args), tuple(cmd.gws), lws, args, reads, writes, picker(reads), picker(writes)))
            continue
        close_run()
        if cls is Alloc:  # (consecutive ones are one operation: a run of (slot, bytes, bucket))
            if cmd.nbytes < 0:
                raise ValueError(f"template allocates {cmd.nbytes} bytes for slot {cmd.buf}")
            entry = (cmd.buf, cmd.nbytes, bucket_size(cmd.nbytes))
            if ops and ops[-1][0] == _ALLOC:
                ops[-1][1].append(entry)
            else:
                ops.append((_ALLOC, [entry]))
        elif cls is Free:  # (likewise: a run of slots)
            if ops and ops[-1][0] == _FREE:
                ops[-1][1].append(cmd.buf)
            else:
                ops.append((_FREE, [cmd.buf]))
        elif cls is Sync:
            ops.append((_SYNC, cmd))
        elif cls is Send or cls is Recv:
            ops.append((_SEND if cls is Send else _RECV, cmd))
        elif cls is CopyOut and cmd.export:
            ops.append((_EXPORT, cmd))
        elif cls is CopyIn and isinstance(cmd.data, TransferRef):
            ops.append((_IMPORT, cmd.buf, imports))
            imports += 1
        else:
            raise ValueError(f"a batch template cannot hold {cmd!r}")
        if cls is not Sync:
            nslots = max(nslots, cmd.buf + 1)
    close_run()
    _unrecorded_before_syncs(ops)
    return WorkerTemplate(ops, nslots, imports)


def _unrecorded_before_syncs(ops: list[tuple]) -> None:
    """Mark the last launch (or segment) before each synchronize, with only frees between, as not to be
    recorded in the event tracker: the synchronize clears the tracker, and nothing between can reuse memory
    (a free's block waits for its pending events only in the hands of a later allocation). This saves the
    record, and makes those frees' and the synchronize's bookkeeping empty."""
    last_sync = False
    for i in range(len(ops) - 1, -1, -1):
        kind = ops[i][0]
        if kind == _SYNC:
            last_sync = True
        elif kind == _LAUNCH or kind == _SEGMENT:
            if last_sync:
                ops[i] = (*ops[i][:-1], False)
            last_sync = False
        elif kind != _FREE:
            last_sync = False


def run_template(worker: Any, t: WorkerTemplate, template: int, ids: tuple[int, ...], imports: tuple,
                 launches: list, before_sync: list | None = None) -> tuple:
    """Run template `t` (id `template`) on `worker` with its slots bound to buffer ids `ids` and its
    incoming transfers' data `imports`; the exported arrays, in order. `before_sync`: a list of at most
    one callable, taken out and called at the first synchronize, before it waits (what is queued runs
    meanwhile)."""
    if len(ids) != t.nslots:
        raise ValueError(f"{worker.device}: replay of template {template} binds {len(ids)} buffers, "
                         f"it has {t.nslots} slots")
    if len(imports) != t.imports:
        raise ValueError(f"{worker.device}: replay of template {template} brings {len(imports)} "
                         f"transfers, it imports {t.imports}")
    bufs, pool, events = worker._bufs, worker.pool, worker.events
    exports: list = []
    error: BaseException | None = None
    alloc, free_id = pool.alloc_bucketed, worker._free_id
    for op in t.ops:
        kind = op[0]
        if error is not None:  # after a failure only frees run, of buffers that exist
            if kind == _FREE:
                _free_existing(worker, op[1], ids)
            continue
        try:
            if kind == _SEGMENT:
                _segment(worker, op[1], ids, launches, op[2])
            elif kind == _LAUNCH:
                _launch(worker, op[1], ids, launches, op[2])
            elif kind == _ALLOC:
                for slot, nbytes, size in op[1]:
                    buf = ids[slot]
                    if buf in bufs:
                        raise ValueError(f"{worker.device}: buffer {buf} is already allocated")
                    block = alloc(size, nbytes)
                    if block.pending:  # (a buffer id is new when allocated: the tracker has nothing of it else)
                        events.seed(buf, block.pending)
                        block.pending = ()
                    bufs[buf] = block
            elif kind == _FREE:
                for slot in op[1]:
                    free_id(ids[slot])
            elif kind == _SYNC:
                if before_sync:
                    before_sync.pop()()
                worker._sync(op[1], launches)
            elif kind == _EXPORT:
                c = op[1]
                exports.append(worker._copy_out(CopyOut(ids[c.buf], c.dtype, c.shape, c.export)))
            elif kind == _IMPORT:
                worker._copy_in(CopyIn(ids[op[1]], imports[op[2]]))
            else:  # Send / Recv
                c = op[1]
                worker._peer(c.__class__(ids[c.buf], c.peer, c.nbytes), launches)
        except Exception as e:  # noqa: BLE001 -- re-raised below, after the frees
            error = e
            if kind == _FREE:  # the rest of the run still frees
                _free_existing(worker, op[1], ids)
    if error is not None:
        raise error
    return tuple(exports)


def _free_existing(worker: Any, slots: list[int], ids: tuple) -> None:
    """Free the buffers of `slots` that exist (after a failure: those its allocation runs made)."""
    bufs, spilled = worker._bufs, worker._spilled
    for slot in slots:
        buf = ids[slot]
        if buf in bufs or buf in spilled:
            worker._free_id(buf)


def _segment(worker: Any, seg: Segment, ids: tuple, launches: list, record: bool) -> None:
    """Run a segment's launches: as a captured graph when these addresses were seen before. `record` False:
    the graph's event is not recorded in the tracker (`_unrecorded_before_syncs`)."""
    if seg.parts is not None:
        _parts(worker, seg, ids, launches, record)
        return
    bufs, events, backend = worker._bufs, worker.events, worker.backend
    handles = list(map(_handle, map(bufs.__getitem__, seg.slots(ids))))
    graph = None
    if not seg.broken:
        key = backend.graph_key(handles)
        graph = seg.graphs.get(key)
        if graph is not None:
            seg.graphs.move_to_end(key)
            if seg.misses:
                seg.misses = 0
        elif key in seg.seen:  # the second time: capture (the capture itself does not run anything)
            del seg.seen[key]
            if seg.misses:
                seg.misses = 0
            try:
                graph = backend.capture_graph(_launch_args(seg, handles))
            except Exception:  # noqa: BLE001 -- a backend that cannot capture this: launch one by one
                seg.broken = True
                graph = None
            else:
                seg.graphs[key] = graph
                if len(seg.graphs) > GRAPHS_PER_SEGMENT:
                    seg.graphs.popitem(last=False)
        else:
            seg.seen[key] = None
            if len(seg.seen) > SEEN_PER_SEGMENT:
                seg.seen.popitem(last=False)
            if seg.misses is not None:
                _missed(seg, key)
    if graph is not None:
        count = len(seg.launches)
        if record or events.last_writes or events.last_reads:  # (else, as right after a synchronize, nothing to wait for)
            reads, writes = seg.reads(ids), seg.writes(ids)
            event = backend.launch_graph(graph, events.wait_list(reads, writes), worker.profile)
            if record:
                events.record(reads, writes, event)
        else:
            event = backend.launch_graph(graph, (), worker.profile)
        worker._graph_spans.append((len(launches), count, 0.0))
        launches.extend([event] * count)
        return
    profile = worker.profile
    for (prog, _args, gws, lws, _slots, _rs, _ws, pick_reads, pick_writes), args in zip(seg.launches, seg.args):
        reads, writes = pick_reads(ids), pick_writes(ids)
        event = backend.launch(prog, [handles[i] for i in args], gws, lws, events.wait_list(reads, writes), profile)
        events.record(reads, writes, event)
        launches.append(event)


def _missed(seg: Segment, key: tuple) -> None:
    """Count a new buffer assignment met by splittable segment `seg` (`key`: its addresses, slot by slot);
    at SPLIT_AFTER_MISSES in a row, split it around the slots whose addresses differ from the last
    assignment's, unless every launch touches one (then nothing is gained)."""
    seg.misses += 1
    last, seg.last_key = seg.last_key, key
    if seg.misses < SPLIT_AFTER_MISSES or last is None:
        return
    seg.misses = 0
    slots = seg.slot_ids
    changed = {slots[i] for i, (a, b) in enumerate(zip(key, last)) if a != b}
    if changed and any(changed.isdisjoint(launch[4]) for launch in seg.launches):
        seg.split(changed)


def _parts(worker: Any, seg: Segment, ids: tuple, launches: list, record: bool) -> None:
    """Run split segment `seg`: its segments as segments, its lone launches one by one; only the last part
    may go unrecorded (`record`), as `_unrecorded_before_syncs` allows for the whole."""
    last = len(seg.parts) - 1
    for at, part in enumerate(seg.parts):
        if part.__class__ is Segment:
            _segment(worker, part, ids, launches, record or at < last)
        else:
            _launch(worker, seg.launches[part], ids, launches, record or at < last)


def _launch(worker: Any, launch: tuple, ids: tuple, launches: list, record: bool) -> None:
    """One launch (a template's, as `compile_template` resolved it) with its slots bound to `ids`, after what
    it must wait for; its event recorded in the tracker where `record`."""
    prog, args, gws, lws, _slots, _rs, _ws, pick_reads, pick_writes = launch
    events = worker.events
    reads, writes = pick_reads(ids), pick_writes(ids)
    handles = list(map(_handle, map(worker._bufs.__getitem__, args(ids))))
    event = worker.backend.launch(prog, handles, gws, lws, events.wait_list(reads, writes), worker.profile)
    if record:
        events.record(reads, writes, event)
    launches.append(event)


def _launch_args(seg: Segment, handles: list) -> list[tuple]:
    """(program, handles, gws, lws) of every launch of a segment (`handles`: of `seg.slots`), for a capture."""
    return [(launch[0], [handles[i] for i in args], launch[2], launch[3])
            for launch, args in zip(seg.launches, seg.args)]
