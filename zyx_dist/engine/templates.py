"""Driver side: the session's replay of plan templates (sched/template.py), its fast path for a graph it
has planned before. Takes the session, the nodes to realize and their structure as the plan cache
looked it up; when a template of that structure exists for the devices where the inputs now live, and
there is room for its allocations, it binds fresh buffer ids, sends each worker one `Replay` (a
`DefineTemplate` first where the worker has not seen it), checks the results as a planned run is
checked, updates the driver's mirror and attaches the results to the nodes. Nothing is kernelized,
rendered or placed, and no command list is built. `keep` makes the template of a planned run that
qualifies. Through Ray the replay runs as a Ray Compiled Graph (engine/ray_compiled.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter
from typing import Any

from .. import logs
from .._util import bucket_size
from ..graph import history, lineage
from ..graph.ir import Node, Op
from ..protocol import Alloc, CopyIn, Failed, Free
from ..sched.scheduler import BufferState, Schedule, SchedulerState
from ..sched.template import PlanTemplate, leaf_positions, make_template
from .backends import LostWorkers
from .buffer_ref import BufferRef
from .failures import free_made

MAX_TEMPLATES_PER_STRUCTURE = 4  # input placements kept per graph structure
# (a replay's inputs read in C loops: a node's buffer handle, and the handle's and its mirror entry's fields)
_buffer_of, _id_of, _device_of, _spilled_of = (attrgetter(a) for a in ("buffer", "id", "device", "spilled"))
_position = itemgetter(0)  # of a template's output: (position in the structure's order, slot, device, bytes)


def enabled(policy: str) -> bool:
    """Plan templates are used unless ZYX_DIST_PLAN_TEMPLATES is 0/false/off, or the scheduler policy is
    round_robin (whose placement is meant to change from run to run)."""
    off = os.environ.get("ZYX_DIST_PLAN_TEMPLATES", "1").strip().lower() in ("0", "false", "off")
    return not off and policy != "round_robin"


def guesses_enabled(hidden: bool) -> bool:
    """Whether a repeated structure's plan is guessed and checked while it runs (`replay_guess`): by default
    where something hides the check (`hidden`: a GPU's kernels, which run beside the driver's Python, or
    the round trip to Ray workers); ZYX_DIST_PLAN_GUESSES=0/false/off never, =all on every device."""
    value = os.environ.get("ZYX_DIST_PLAN_GUESSES", "").strip().lower()
    return value == "all" or (hidden and value not in ("0", "false", "off"))


_ROOT_LOG = logging.getLogger(logs.ROOT)
_PLANNING_LOGS = tuple(logs.logger(a) for a in ("kernels", "ir", "scheduler"))
_TIMINGS_LOG = logs.logger("timings")


def _on(lg: logging.Logger) -> bool:
    """`logs.enabled` for a logger at hand (no getLogger lookups: this runs on every realize)."""
    level = lg.level or _ROOT_LOG.level
    return level != logging.NOTSET and level <= logging.DEBUG and lg.isEnabledFor(logging.DEBUG)


def replayable(nodes: list[Node]) -> bool:
    """Whether a realize of `nodes` may replay a template: every node an unrealized, non-empty computation, and no
    debug output that describes planning (kernels, IR, placements), which wants every realize planned."""
    leaf = Op.LEAF
    for n in nodes:
        if n.op is leaf or n.buffer is not None or not n.size:
            return False
    k, i, p = _PLANNING_LOGS
    if not (_ROOT_LOG.level or k.level or i.level or p.level):  # no level set anywhere: the usual case
        return True
    return not (_on(k) or _on(i) or _on(p))


def inputs_of(found: tuple) -> tuple[int, ...]:
    """The positions of a looked-up structure's leaves (taken before a run turns its results into leaves)."""
    return leaf_positions(found[1])


def replay(s, found: tuple, t0: float, recipes: bool = True, check: Callable[[], bool] | None = None) -> bool:
    """Run the realize whose structure `found` (key, order, entry) names from one of its templates, its
    results attached to their nodes; False (nothing sent, nothing changed) when none applies, or when
    `check()` (asked while the workers run, as `run` says) says no. Raises as a planned run would.
    `recipes` False: the results get no lineage."""
    _key, order, entry = found
    templates = entry.templates
    if not templates:
        return False
    leaves = next(iter(templates.values())).pick_inputs(order)  # (the structure's leaves: alike in all its templates)
    return run(s, templates, leaves, t0,
               _recipes(order) if recipes and s.host_copies is not None else None, check, order) is not None


def hidden_seconds(s, entry: Any) -> float:
    """How long a guessed replay's check of a cached structure can run unseen: its plan's device time (its
    first template's kernels, the least any run measured: `Session.fastest`; 0 for a kernel never timed) and
    the backend's least round trip to its workers."""
    t = next(iter(entry.templates.values()))
    fastest = s.fastest
    return sum([fastest.get((p.kernel, p.device), 0.0) for p in t.schedule.placements]) + \
        s.backend.round_trip_seconds


def replay_guess(s, targets: list[Node], guess: tuple, t0: float) -> bool:
    """`replay` of the entry that `guess` names (`PlanCache.guess`: nodes in key order, fingerprint, entry)
    for `targets` before its key is checked, the check made while the workers run it (the walk and compare
    of `lookup`, off the critical path): True when it ran and the structure was the entry's; False when no
    template applied, or the guess was wrong: then what the run made is freed, nothing else changed but
    the queued frees it carried, and that fingerprint is not guessed from again. The fingerprint keeps a
    wrong guess safe: every input it binds has the shape, dtype and place the plan reads, and the plan
    writes only memory it allocates."""
    order, fingerprint, entry = guess
    verdict: list[bool] = []

    def check() -> bool:
        verdict.append(s.plans.confirms(targets, entry))
        return verdict[-1]

    if replay(s, (entry.key, order, entry), t0, check=check):
        s.plans.hits += 1
        s.plans.guessed += 1
        idle = getattr(s.backend, "idle_at_sync", None)  # (in process: the check ran before the synchronize)
        if idle is not None:
            s.plans.idle_guess(fingerprint, len(order), idle())
        return True
    if verdict and not verdict[-1]:
        s.plans.wrong_guess(fingerprint)
    return False


def _recipes(order: list[Node]) -> Callable[[PlanTemplate], None]:
    """Given the template that runs, the recipes of its results (graph/lineage.py), made while the workers
    run it: they read the history that `become_leaf` drops afterwards, and nothing a worker does. Should
    the run fail, the recipes stay on nodes still unrealized, where nothing reads them."""
    def make(t: PlanTemplate) -> None:
        plan = t.recipe_plan
        if plan is None:  # (the structure's walk for them, once per template)
            plan = t.recipe_plan = lineage.recipe_plan(order, [out[0] for out in t.outputs])
        for out, r in zip(t.outputs, lineage.planned_recipes(plan, order)):
            order[out[0]].lineage = r
    return make


def run(s, templates: dict, leaves: Sequence[Node], t0: float, meanwhile: Callable[[PlanTemplate], None] | None = None,
        check: Callable[[], bool] | None = None, order: list[Node] | None = None
        ) -> tuple[PlanTemplate, tuple[int, ...]] | None:
    """Replay one of a structure's `templates` for the input leaves `leaves` (in the templates' input order):
    (the template, the buffer id of each of its slots), its results in the mirror, and attached to their nodes
    in `order` (the structure's nodes in key order) when given, else for the caller to attach (`t.outputs`:
    position, slot, device, bytes); None when none applies (nothing sent, nothing changed). `meanwhile(t)` is
    the caller's work to do while the workers run `t` (it must not touch them). `check()`, also asked while
    they run, says whether the run is wanted: when it says no, what the run made is freed and None is given
    (the frees queued before it went with it). Raises as a planned run would, with the mirror and the nodes as
    they were."""
    st: SchedulerState = s.state
    bufs = st.buffers
    refs = list(map(_buffer_of, leaves))
    if all(refs):  # every input on a device (the usual case: a model's weights, a step's state), loops in C
        ids_in = list(map(_id_of, refs))
        states = list(map(bufs.get, ids_in))
        if not all(states) or any(map(_spilled_of, states)):
            return None
        where = tuple(map(_device_of, refs))
    else:
        ids_in, where = [], []
        for leaf, ref in zip(leaves, refs):
            if ref is None:
                if leaf.host is None:  # a lost leaf: planning reports it
                    return None
                ids_in.append(0)  # a host leaf: the template uploads it (a slot taken below)
                where.append(None)
                continue
            b = bufs.get(ref.id)
            if b is None or b.spilled:
                return None
            ids_in.append(ref.id)
            where.append(ref.device)
        where = tuple(where)
    t: PlanTemplate | None = templates.get(where)
    if t is None or t.epoch != s.template_epoch:
        return None
    used, devices = st.used, st.devices
    need, uploads = t.alloc_bytes, ()
    if t.uploads:  # (input index, device, buffer id, bytes) of each host leaf to upload first
        first = st.ids.take(len(t.uploads))
        uploads = tuple((i, dev, first + j, leaves[i].size * leaves[i].dtype.itemsize)
                        for j, (i, dev) in enumerate(t.uploads))
        need = dict(need)
        for i, dev, buf, nbytes in uploads:
            need[dev] = need.get(dev, 0) + bucket_size(nbytes)
            ids_in[i] = buf
    for dev, n in need.items():
        m = devices.get(dev)
        if m is None or used[dev] + n > m.memory:  # would need spills: plan it
            return None
    base = st.ids.take(t.new)
    ids = (*ids_in, *range(base, base + t.new))
    timed = s.trace_events is not None or ((_TIMINGS_LOG.level or _ROOT_LOG.level) and _on(_TIMINGS_LOG))
    results: list = []
    wanted: list[bool] = []
    committed: list[list] = []  # the nodes attached while the workers ran (one list, once committed)
    try:
        if timed:  # (the check, and the caller's work, wait for the run's end)
            t1 = time.perf_counter()
            results, graphs = _run_commands(s, t, ids, uploads, leaves, None)
            t2 = time.perf_counter()
        else:
            # The caller's work, then the mirror's and the nodes' updates, ride along the run: the driver has
            # them done when the workers' synchronize returns. Not with uploads: the results' recipes read the
            # host copies of the leaves, which only a finished upload hands over.
            def riding() -> None:
                if check is not None:
                    wanted.append(check())
                    if not wanted[-1]:
                        return
                if not uploads:
                    if meanwhile is not None:
                        meanwhile(t)
                    attached: list = []
                    committed.append(attached)
                    _commit(s, t, ids, ids_in, (), order, attached)
            graphs = _run_direct(s, t, ids, riding, uploads, leaves)
            if graphs is None:
                results, graphs = _run_commands(s, t, ids, uploads, leaves, riding)
    except BaseException:
        if committed:
            _uncommit(s, t, ids, committed[0])
        raise
    if check is not None and not (wanted[-1] if wanted else check()):
        if committed:
            _uncommit(s, t, ids, committed[0])
        _rollback(s, t, ids, set(), uploads)
        return None
    if not t.defined:  # every worker has its part now (until a recovery, which retires the template)
        t.defined = True
        for step in t.steps:
            for dev, wb in step.items():
                s.known_templates.setdefault(dev, set()).add(wb.template)
    if graphs:
        s.counters["graph_replays"] += graphs
    if not committed:
        for i, dev, buf, nbytes in uploads:  # before the results' recipes, which read the leaves' host copies
            s.uploaded(leaves[i], dev, buf, nbytes)
        if meanwhile is not None:
            meanwhile(t)
        _commit(s, t, ids, ids_in, uploads, order, [])
    if timed:
        if s.trace_events is not None:
            s.trace_replay(t, results, (t0, t1, t2, time.perf_counter()))
        logs.emit("timings", f"zyx_dist: realize {t.launches} kernels replayed from a plan template "
                             f"({graphs} CUDA graphs): run {1e3 * (t2 - t1):.2f} ms")
    return t, ids


def _commit(s, t: PlanTemplate, ids: tuple, ids_in: list, uploads: tuple, order: list[Node] | None,
            attached: list) -> None:
    """The mirror as the run of `t` leaves it (the inputs used now, the uploads' and the results' buffers
    added), its counters, and the results attached to their nodes in `order`, each node also put in
    `attached` with the fields `become_leaf` replaces, for `_uncommit`."""
    st = s.state
    bufs, used = st.buffers, st.used
    st.clock = clock = st.clock + 1
    for _i, dev, buf, nbytes in uploads:
        bufs[buf] = BufferState(dev, nbytes, False, clock)
        used[dev] += bucket_size(nbytes)
    for i in ids_in:
        bufs[i].last_use = clock
    for _pos, slot, dev, nbytes in t.outputs:
        bufs[ids[slot]] = BufferState(dev, nbytes, False, clock)
    for dev, n in t.used.items():
        used[dev] += n
    _count(s, t, 1)
    if order is not None:
        history.keep(map(order.__getitem__, map(_position, t.outputs)))  # (before become_leaf drops them)
        for pos, slot, dev, nbytes in t.outputs:
            n = order[pos]
            attached.append((n, n.op, n.srcs, n.arg, n.host, n.guards))
            n.become_leaf(BufferRef(s, n, dev, ids[slot], nbytes, True))


def _uncommit(s, t: PlanTemplate, ids: tuple, attached: list) -> None:
    """Undo `_commit` (made without uploads) for a run that failed, or was not wanted, after it: the nodes as
    they were, their buffer handles dropped without queueing frees (the rollback frees the buffers), the
    mirror and the counters as before."""
    for n, op, srcs, arg, host, guards in attached:
        ref = n.buffer
        ref.frees = []  # (its __del__ appends there: the rollback frees the buffer once)
        s.holders.pop(ref.id, None)
        n.op, n.srcs, n.arg, n.buffer, n.host, n.guards = op, srcs, arg, None, host, guards
    st = s.state
    bufs, used = st.buffers, st.used
    for _pos, slot, _dev, _nbytes in t.outputs:
        bufs.pop(ids[slot], None)
    for dev, n in t.used.items():
        used[dev] -= n
    _count(s, t, -1)


def _count(s, t: PlanTemplate, sign: int) -> None:
    """Add one replay of `t` to the session's counters (`sign` -1: take it back)."""
    c = s.counters
    launches = sign * t.launches
    c["kernels_launched"] += launches
    c["kernel_cache_hits"] += launches
    c["plan_replays"] += sign
    if t.transfers:
        c["transfers"] += sign * t.transfers
        c["bytes_transferred"] += sign * t.bytes_transferred


def _run_direct(s, t: PlanTemplate, ids: tuple, meanwhile: Callable[[], None] | None, uploads: tuple,
                leaves: Sequence[Node]) -> int | None:
    """The replay of `t` (ids and uploads as `run` made them) as one direct call of its worker, the queued frees and
    the uploads with it (`run_replay`: in process, or one compact message each way through Ray, untimed, so not
    while `time_replays` asks for kernel times): the CUDA graphs it replayed; None (nothing sent) where that does
    not apply: a template of more than one worker, or one the worker does not have yet, uploads beyond what the
    backend's direct call carries (`direct_upload_bytes`), or anything queued for other workers (frees elsewhere,
    templates to forget) that its batch would carry. Raises the worker's error, or LostWorkers, after a rollback."""
    single = t.single
    backend = s.backend
    if single is None or not t.defined or s.template_drops or s.plans.dropped or not s.direct_replays or \
            backend.time_replays:
        return None
    dev, wb = single
    if uploads and sum([u[3] for u in uploads]) > backend.direct_upload_bytes(dev):
        return None
    if s.pending_frees:
        s._take_frees()
    frees = ()
    if s.free_queue:
        frees = []
        for d, buf in s.free_queue:
            if d != dev:
                return None
            frees.append(buf)
        s.free_queue = []
    data = tuple([(buf, nbytes, leaves[i].host) for i, _dev, buf, nbytes in uploads]) if uploads else ()
    try:
        failed, graphs, in_use = backend.run_replay(dev, wb.template, wb.pick(ids), frees, meanwhile, data)
    except LostWorkers as e:
        _rollback(s, t, ids, e.devices, uploads)
        raise
    except BaseException:  # interrupted part way (Ctrl-C): the frees sent with it may not have run either
        _rollback(s, t, ids, set(), uploads, [(dev, buf) for buf in frees])
        raise
    s.bytes_in_use[dev] = in_use
    if failed is not None:
        _rollback(s, t, ids, set(), uploads)
        raise s.error_of(dev, failed)
    return graphs


def _run_commands(s, t: PlanTemplate, ids: tuple, uploads: tuple, leaves: Sequence[Node],
                  meanwhile: Callable[[], None] | None) -> tuple[list, int]:
    """The replay of `t` as command batches (a Replay per worker per step, after any uploads and queued
    frees): the batches' results and the CUDA graphs replayed. Raises the first failure after a rollback."""
    steps = t.bind(ids)
    for i, dev, buf, nbytes in uploads:  # in front of the first batch on the device: before any reader
        steps[0].setdefault(dev, [])[0:0] = [Alloc(buf, nbytes), CopyIn(buf, leaves[i].host)]
    try:
        results = s._run(steps, compiled=True, meanwhile=meanwhile)
    except LostWorkers as e:
        _rollback(s, t, ids, e.devices, uploads)
        raise
    except BaseException:  # interrupted part way (Ctrl-C), or the driver's work beside it raised
        _rollback(s, t, ids, set(), uploads, [(dev, c.buf) for step in steps for dev, cmds in step.items()
                                              for c in cmds if c.__class__ is Free])
        raise
    graphs = 0
    for step in results:
        for dev, r in step.items():
            for x in r.results:
                if x.__class__ is Failed:
                    _rollback(s, t, ids, set(), uploads)
                    raise s.error_of(dev, x)
            if r.graphs:
                graphs += len(r.graphs)
    return results, graphs


def _rollback(s, t: PlanTemplate, ids: tuple, lost: set[str], uploads: tuple = (),
              queued: list[tuple[str, int]] | None = None) -> None:
    """A replay failed: free whatever it allocated (its uploads too) on the workers still alive (a free of a
    buffer that a failed batch never made fails harmlessly), so nothing leaks; host leaves stay on the host.
    `queued`: after an interrupted run (no results), the frees sent with it, which are sent again."""
    frees: dict[str, list] = {}
    made = [(dev, ids[slot]) for dev, slot in t.allocated] + [(dev, buf) for _i, dev, buf, _n in uploads]
    for dev, buf in dict.fromkeys(made + (queued or [])):
        if dev not in lost and dev in s.state.devices:
            frees.setdefault(dev, []).append(Free(buf))
    free_made(s, frees, queued is not None)


def keep(s, found: tuple, inputs: tuple[int, ...], sched: Schedule, steps: list[dict[str, list]],
         before: SchedulerState) -> None:
    """Make the template of `sched` (planned on `before` for the structure `found`, whose leaves were at
    `inputs`, and run successfully; `steps` are its batches as planned, before the session added frees)
    when it qualifies."""
    entry = s.plans.entries.get(found[0])
    if entry is None:
        return
    proto = Schedule(sched.state, steps, sched.outputs, sched.uploads, sched.transfers, sched.placements,
                     sched.allocated, sched.launches, sched.cache_hits, sched.spills, sched.estimated_seconds)
    t = make_template(proto, found[1], inputs, before, s.state.new_id)
    if t is None:
        return
    t.epoch = s.template_epoch
    templates = entry.templates
    old = templates.pop(t.signature, None)  # a stale one (made before a recovery): its workers forget it
    if old is not None:
        drop(s, old)
    templates[t.signature] = t
    while len(templates) > MAX_TEMPLATES_PER_STRUCTURE:
        drop(s, templates.pop(next(iter(templates))))


def drop(s, t: PlanTemplate) -> None:
    """Queue the forgetting of template `t` on the workers that were given it."""
    for step in t.steps:
        for dev, wb in step.items():
            if wb.template in s.known_templates.get(dev, ()):
                s.known_templates[dev].discard(wb.template)
                s.template_drops.append((dev, wb.template))

