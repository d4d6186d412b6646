"""Driver side: the runtime session (API.md sections 1, 4, 7). Takes the nodes a user realizes or
reads; runs kernelize -> render -> schedule -> backend and gives back arrays, or, for a graph it has
planned before with its inputs where they were, replays the kept plan (engine/templates.py). It owns the workers
(through a backend), the driver's mirror of device buffers (a `BufferRef` per realized node, whose
destructor queues a `Free` when the last tensor using it goes away), the rendered-program cache, the
counters of `zd.stats()` and the debug output of `ZYX_DIST_DEBUG`. What it does on failures and lost workers
is in engine/failures.py, its DLPack exchange in engine/exchange.py, reading values back in
engine/readback.py (all parts of `Session`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import context, logs
from .._util import gc_paused
from ..codegen.autotune import Target, Tuner
from ..codegen.program import Program, kernel_key
from ..config import Config, load_config
from ..errors import ConfigError, DeviceError, WorkerLostError, ZyxError
from ..fuse.plan_cache import PlanCache
from ..graph import companions, guards, history, ir, lineage, shard
from ..graph.ir import Node, Op
from ..graph.lineage import LOST
from ..protocol import BatchResult, DropTemplate, Failed, Free, Sync
from ..sched.scheduler import DeviceModel, IdCounter, Schedule, SchedulerState, schedule
from . import debug, index_checks, probe, templates
from .backends import InProcessBackend, LostWorkers, resolve_devices
from .buffer_ref import BufferRef, refuse_foreign, refuse_stale
from .exchange import Exchange
from .failures import Recovery, worker_error
from .limits import session_limits
from .readback import Readback


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    backend: str
    node: str
    memory_bytes: int
    free_bytes: int
    compute_units: int
    peak_gflops: float
    peak_gbps: float
    device_name: str = ""
    fp16: bool = False
    fp64: bool = False


def host_copy_budget() -> int:
    """Bytes of uploaded host data a Ray session keeps so that tensors lost with a worker can be recomputed
    (ZYX_DIST_HOST_COPY_BYTES, read when a session starts; 2 GiB by default)."""
    text = os.environ.get("ZYX_DIST_HOST_COPY_BYTES", "").strip()
    try:
        return int(text) if text else 2 << 30
    except ValueError:
        raise ConfigError(f"ZYX_DIST_HOST_COPY_BYTES: {text!r} is not a number of bytes") from None


_STAT_KEYS = ("kernels_launched", "kernel_cache_hits", "bytes_transferred", "transfers", "spills", "recoveries",
              "plan_replays", "graph_replays")


class Session(Recovery, Exchange, Readback):
    """A running zyx_dist runtime; `with zd.init(...) as s:` shuts it down on exit."""

    def __init__(self, config: Config, devices: Any, ray: bool, address: str | None = None):
        self.config = config
        self.debug = config.debug
        logs.apply_debug(config.debug)  # before the workers open: in-process ones log through the same loggers
        self.closed = True
        self.weak = weakref.ref(self)
        pairs = resolve_devices(devices if devices is not None else config.devices)
        if ray:
            from .ray_backend import RayBackend

            self.backend: Any = RayBackend(pairs, config, address)
        else:
            self.backend = InProcessBackend(pairs, config.memory_limit)
        self.closed = False
        try:
            self._start(pairs)
        except BaseException:
            self.close()
            raise

    def _start(self, pairs: list[tuple[str, str]]) -> None:
        self.device_names = [name for name, _ in pairs]
        self.default_device = self.device_names[0]
        self.pending_frees: list[tuple[str, int]] = []  # appended to by BufferRef finalizers
        self.free_queue: list[tuple[str, int]] = []  # applied to the mirror, not yet sent
        self.programs: dict[tuple, Program] = {}  # (kernel key, dialect) -> program
        # plan templates (engine/templates.py): the worker templates each device was given, the ones to
        # forget with the next batch, and an epoch that a recovery moves on (stale templates are not run)
        self.known_templates: dict[str, set[int]] = {}
        self.template_drops: list[tuple[str, int]] = []
        self.template_epoch = 0
        # debug output of kernels, IR or placements describes planning: with it on, every realize plans
        self.replay_plans = templates.enabled(self.config.scheduler.policy)
        # whether a one-worker template's replay can be one direct call of its worker (templates._run_direct)
        self.direct_replays = getattr(self.backend, "run_replay", None) is not None
        self.bytes_in_use = {name: 0 for name in self.device_names}
        self.counters = dict.fromkeys(_STAT_KEYS, 0)
        self.trace_events: Any = None  # a trace.Recorder while zd.trace is on
        self.recorder: Any = None  # while a zd.jit function runs: told of each realize and read (engine/jit.py)
        # buffer -> weak reference to the node holding it (for recovery); dropped when the buffer's free is taken
        self.holders: dict[int, weakref.ref] = {}
        # lineage is kept only where a worker can be lost (a Ray actor); in-process workers die with us
        self.host_copies = lineage.HostCopies(host_copy_budget()) if hasattr(self.backend, "recover") else None
        self.infos = {name: self.backend.info(name) for name in self.device_names}
        # split-K pays where a few GEMM tiles leave most of a GPU idle; on CPUs it only adds partials and
        # kernels to tune (a 4-layer GPT step here: first step 23 -> 36 s, steady 0.68 -> 0.64 steps/s)
        self.split_k = any(i.get("type") == "gpu" for i in self.infos.values())
        ir.SPLIT_K = self.split_k
        # a repeated plan is guessed and its key checked while it runs where kernels run beside the driver's
        # Python (GPUs) or a round trip to Ray workers hides it; in process on CPU devices the check would
        # only add to the walk
        self.guess_plans = templates.guesses_enabled(self.split_k or self.backend.round_trip_seconds > 0)
        # graph structure -> kernels and their programs, within what every device allows (engine/limits.py); split-K
        # leaves whole the sums of the attention backward's products that recompute their weights
        limits, self.whole_sums = session_limits(list(self.infos.values()))
        self.plans = PlanCache(limits)
        ir.WHOLE_SUMS = self.whole_sums
        self.peaks = {}
        # (kernel, device) -> the least device time any run measured: a bound on how long its replays wait for
        # it (the cost model's moving average keeps half of a first, cold launch: templates.hidden_seconds)
        self.fastest: dict[tuple[str, str], float] = {}
        for name, info in self.infos.items():
            key = _variant_key(info)  # device model and driver version
            self.peaks[name] = probe.measure(lambda b, n=name: self.backend.run_timed(n, b), key,
                                             self.config.autotune.cache_dir, info["backend"],
                                             int(info["memory_bytes"]))
        # one program per kernel per device model (and driver): tuned on the model's first device
        self.targets: dict[str, Target] = {}
        for name, i in self.infos.items():
            key = _variant_key(i)
            dialect, interpreted = Target.dialect_of(i["backend"], str(i.get("compute_capability", "")))
            self.targets.setdefault(key, Target(key, dialect, i.get("type") == "gpu",
                                                int(i.get("max_work_group_size") or 1024), name, *self.peaks[name],
                                                interpreted))
        self.tuner = Tuner(self.config.autotune.enabled, self.config.autotune.budget, self.config.autotune.cache_dir)
        models = {name: DeviceModel(name, bool(i["fp64"]), self.peaks[name][0], self.peaks[name][1],
                                    int(i["memory_bytes"]), dialect=i["backend"], nccl_rank=i.get("nccl_rank"),
                                    variant=_variant_key(i))
                  for name, i in self.infos.items()}
        self.state = SchedulerState(models, policy=self.config.scheduler.policy, ids=_IDS)
        if len(self.device_names) > 1:
            self.state.link = probe.links(self.backend, self.device_names, self.state.new_id,
                                          {n: m.nccl_rank for n, m in models.items()},
                                          {n: (m.variant, self.infos[n]["node"]) for n, m in models.items()})
        if logs.enabled("devices"):
            for d in self.devices():
                logs.logger("devices").debug(
                    f"zyx_dist: {d.name} ({d.backend}, {d.device_name}, node {d.node}) "
                    f"{d.memory_bytes / 2**30:.1f} GiB, {d.compute_units} compute units, fp16={d.fp16} "
                    f"fp64={d.fp64}, peaks {d.peak_gflops:.0f} GFLOP/s {d.peak_gbps:.1f} GB/s")

    # ---- lifecycle -------------------------------------------------------------------------------------

    def __enter__(self) -> Session:  # noqa: PYI034 -- typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        shutdown()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            history.clear()  # (the histories kept for gradients hold this session's tensors)
            self.pending_frees.clear()
            self.backend.close()

    def devices(self) -> list[DeviceInfo]:
        self._take_frees()  # free memory as it is now, counting tensors just dropped
        out = []
        for name in self.device_names:
            i = self.infos[name]
            free = max(0, int(i["memory_bytes"]) - self.state.used[name])
            out.append(DeviceInfo(name, i["backend"], i["node"], i["memory_bytes"], free,
                                  i["compute_units"], *self.peaks[name], i["device_name"], i["fp16"], i["fp64"]))
        return out

    # ---- running ---------------------------------------------------------------------------------------

    def _take_frees(self, *states: SchedulerState) -> None:
        """Move the frees queued by the garbage collector into the mirror (of `self.state` and of any
        schedule being planned or run), so placement sees the memory as free; they are sent with the
        next batch."""
        if not self.pending_frees:
            return
        frees = self.pending_frees[:]
        del self.pending_frees[:len(frees)]  # (what a __del__ queues meanwhile stays queued)
        holders, free, queue = self.holders, self.state.free, self.free_queue
        for item in frees:
            buf = item[1]
            holders.pop(buf, None)
            if free(buf) or (states and any(buf in st.buffers for st in states)):
                for st in states:
                    st.free(buf)
                queue.append(item)

    def _run(self, steps: list[dict[str, list]], planned: SchedulerState | None = None,
             compiled: bool = False, meanwhile: Callable[[], None] | None = None) -> list[dict[str, BatchResult]]:
        """Send the steps, with the queued frees (and templates to forget) in front of the first.
        `compiled`: the steps replay plan templates (a backend may run them as a compiled graph), and
        `meanwhile` is work of the driver's to do while they run."""
        if self.pending_frees:
            self._take_frees(*([planned] if planned is not None else []))
        if self.plans.dropped:
            for t in self.plans.dropped:
                templates.drop(self, t)
            self.plans.dropped.clear()
        if self.free_queue or self.template_drops:
            if not steps:
                steps = [{}]
            for dev, buf in self.free_queue:
                steps[0].setdefault(dev, []).insert(0, Free(buf))
            self.free_queue = []
            for dev, tid in self.template_drops:
                if dev in self.state.devices:
                    steps[0].setdefault(dev, []).insert(0, DropTemplate(tid))
            self.template_drops = []
        try:
            results = self.backend.run_steps(steps, compiled, meanwhile) if compiled else self.backend.run_steps(steps)
        except LostWorkers as e:
            self._note_usage(e.results)
            raise
        self._note_usage(results)
        return results

    def _note_usage(self, results: list[dict[str, BatchResult]]) -> None:
        for step in results:
            for dev, res in step.items():
                self.bytes_in_use[dev] = res.bytes_in_use

    def flush(self) -> None:
        if self.pending_frees or self.free_queue:
            try:
                self._run([])
            except LostWorkers as e:  # the frees went with the dead worker's memory anyway
                self.recover(e.devices)

    def render(self, kernels: list) -> list[dict[str, Program]]:
        """`program` of each kernel; first, the programs of the new ones are built on each device model's timing
        worker, side by side where its compiler can, before the tuner times any of them."""
        keys = [kernel_key(k) for k in kernels]
        for variant, target in self.targets.items():
            new = [k for k, key in zip(kernels, keys) if (key, variant) not in self.programs]
            if new:
                self.tuner.build_all(new, target, *self._timing_worker(variant))
        return [self.program(k, key) for k, key in zip(kernels, keys)]

    def program(self, kernel, key: tuple | None = None) -> dict[str, Program]:
        """The kernel rendered once for each device model of this session (tuned there on first sight):
        device model key -> Program. `key`: its `kernel_key`, when the caller has it."""
        key = kernel_key(kernel) if key is None else key
        out = {}
        for variant, target in self.targets.items():
            prog = self.programs.get((key, variant))
            if prog is None:
                run, free = self._timing_worker(variant)
                prog = self.programs[(key, variant)] = self.tuner.program(kernel, target, run, free, self.state.new_id)
                if logs.enabled("source"):
                    logs.logger("source").debug(f"zyx_dist: source of {prog.name}\n{prog.source}")
            out[variant] = prog
        return out

    def _timing_worker(self, variant: str) -> tuple[Callable[[list], BatchResult] | None, int]:
        """How the tuner runs a timed batch on a live worker of device model `variant` (None: none is left),
        and that worker's free bytes."""
        dev = next((d for d, m in self.state.devices.items() if m.variant == variant), None)
        if dev is None:
            return None, 0
        return (lambda b: self.backend.run_timed(dev, b)), self.state.devices[dev].memory - self.state.used[dev]

    def plan(self, nodes: list[Node], found: tuple | None = None,
             affinity: dict[int, str] | None = None) -> tuple[list, list[dict[str, Program]], Schedule]:
        """Kernelize, render and schedule `nodes` (nothing runs; the session state does not change).
        `found`: their structure as the plan cache already looked it up (every node unrealized), after
        `_prepare` (which gave `affinity`)."""
        self._take_frees()
        if found is None:
            nodes = companions.with_companions(nodes)
        for n in nodes:
            if n.size == 0 and not n.realized:
                n.become_leaf(None)
        if found is None:  # (with `found`, the caller prepared the graph before its lookup)
            affinity = self._prepare([n for n in nodes if not n.realized])[0]
        ta = time.perf_counter()
        targets = [n for n in nodes if not n.realized]
        with gc_paused():
            if found is None:
                found = self.plans.lookup(targets, affinity)
            kernels, programs = self.plans.kernels_at(found, targets, self.render, affinity)
        tb = tc = time.perf_counter()
        leaves = [x for x in [*nodes, *(x for k in kernels for x in k.inputs)] if x.op is Op.LEAF]
        lost = [x for x in leaves if x.arg is LOST]
        if lost:
            raise WorkerLostError("lost with their worker and impossible to recompute: " + ", ".join(
                f"tensor #{x.id} {x.shape} {x.dtype}" for x in {x.id: x for x in lost}.values()))
        refuse_foreign(self, leaves, kernels)
        # leaves realized directly (zd.tensor(a).realize()) are uploads without a kernel
        uploads = [n for n in nodes if n.op is Op.LEAF and n.buffer is None and n.size and n.host is not None]
        with gc_paused():
            sched = schedule(kernels, programs, self.state, self.default_device, uploads)
        self.plan_phases = (ta, tb, tc, time.perf_counter())  # for zd.trace
        return kernels, programs, sched

    def _prepare(self, todo: list[Node]) -> tuple[dict[int, str], bool]:
        """The rewrites before the plan cache's lookup (whose key is the rewritten structure): small views
        read on the host, then data parallelism (graph/shard.py: work on sharded tensors per shard), which
        gives the per-shard devices the kernelizer places by: (those devices, whether a small view became
        a host leaf)."""
        # (a zd.jit capture must not bake a view's values in as host data)
        rewritten = self.recorder is None and self._host_small_views(todo)
        return shard.distribute(todo), rewritten  # (which leaves the leaves out)

    def uploaded(self, leaf: Node, dev: str, buf: int, nbytes: int) -> None:
        """A host leaf now uploaded into `buf` on `dev` (by a planned run or a template's replay): it holds the
        device copy; where workers can be lost, its host copy is kept first (before any result's recipe, which
        reads it)."""
        if self.host_copies is not None and leaf.lineage is None:
            leaf.lineage = self.host_copies.keep(leaf)
        leaf.buffer, leaf.host = BufferRef(self, leaf, dev, buf, nbytes), None

    def realize(self, nodes: list[Node]) -> None:
        """Compute `nodes`; when workers are lost on the way, recover and recompute from lineage."""
        try:
            try:  # the first attempt outside the loop: most realizes need no other
                return self._realize(nodes)
            except LostWorkers as e:
                self.recover(e.devices)
            for _ in range(self.config.ray.max_restarts):
                try:
                    return self._realize(nodes)
                except LostWorkers as e:
                    self.recover(e.devices)
            raise WorkerLostError(f"workers kept failing while realizing {len(nodes)} tensors "
                                  f"(more than ray.max_restarts={self.config.ray.max_restarts} recoveries)")
        except Exception:
            companions.failed(nodes)  # (an optimizer whose new state this was goes back to its old one)
            raise

    def _realize(self, nodes: list[Node], checked: bool = False) -> None:
        """Compute `nodes` once (`realize` recovers and tries again). Where they depend on value checks (a
        gather by a tensor index), engine/index_checks.py realizes them with the checks, `checked`."""
        if not checked:
            for n in nodes:
                if n.guards is not None:  # (rare: a gather by a tensor index is in the graph)
                    checks = guards.pending(nodes)
                    if checks:
                        return index_checks.realize_checked(self, nodes, checks)
                    break
        t0 = time.perf_counter()
        found = affinity = None
        if self.replay_plans and templates.replayable(nodes):
            if self.pending_frees:
                self._take_frees()
            given = nodes
            if companions.LIVE:
                nodes = companions.with_companions(nodes)  # an optimizer's state rides along
            if ir.SMALL_OFFSET_VIEWS.data or any(shard.LIVE):  # (else neither rewrite of _prepare applies)
                affinity, rewritten = self._prepare(nodes)  # what plan() does first: the key is the rewritten graph's
            else:
                affinity, rewritten = {}, False
            # (a companion, or a target that was a small view and is a host leaf now, may not replay)
            if (nodes is given and not rewritten) or templates.replayable(nodes):
                # no cyclic collection while the key (a tuple per node) is built and the replay binds its
                # commands, as in plan(): those allocations would start collections that find nothing (as
                # gc_paused does, without its two Python frames: this runs on every realize)
                collecting = gc.isenabled()
                gc.disable()
                try:
                    # a structure replayed before is guessed from the walk alone and checked while it runs
                    guessing = self.guess_plans and not affinity and self.recorder is None
                    if guessing:
                        guess = self.plans.guess(nodes)
                        if guess is not None and templates.replay_guess(self, nodes, guess, t0):
                            return
                    looked = time.perf_counter()
                    found = self.plans.lookup(nodes, affinity)
                    if self.recorder is not None and found is not None:  # (None: told once, below)
                        self.recorder(nodes, found)
                    if found is not None and found[2] is not None and found[2].templates:
                        if guessing and found[2].fingerprint is None:
                            check = time.perf_counter() - looked  # (the lookup's time: what a check costs)
                            self.plans.remember(nodes, found[2], len(found[1]), templates.hidden_seconds(self, found[2]),
                                                check)
                        if templates.replay(self, found, t0):
                            return
                finally:
                    if collecting:
                        gc.enable()
        if found is None and self.recorder is not None:
            self.recorder(nodes, None)
        kernels, programs, sched = self.plan(nodes, found, affinity)
        if not sched.steps:
            return
        t1 = time.perf_counter()
        if logs.enabled("kernels"):
            debug.print_kernels(kernels, programs)
        if logs.enabled("ir"):
            debug.print_ir(kernels)
        if logs.enabled("scheduler"):
            debug.print_schedule(sched)
        last: dict[str, list] = {}
        for step in sched.steps:
            last.update({dev: cmds for dev, cmds in step.items() if cmds})
        for cmds in last.values():  # realize() returns once the results exist on their devices
            cmds.append(Sync())
        # the batches as planned, for a plan template (the run puts the queued frees in front of them)
        planned = inputs = None
        if found is not None:
            planned = [{d: list(c) for d, c in step.items()} for step in sched.steps]
            inputs = templates.inputs_of(found)
        try:
            results = self._run(sched.steps, sched.state)
        except LostWorkers as e:
            self._rollback(sched, e.results, e.devices)
            raise
        except BaseException:  # interrupted part way (Ctrl-C): what it allocated must not stay behind
            self._rollback(sched, [], set(), interrupted=True)
            raise
        t2 = time.perf_counter()
        self._check(sched, results)
        before, self.state = self.state, sched.state
        self._measure(sched, results)
        self.counters["kernels_launched"] += sched.launches
        self.counters["kernel_cache_hits"] += sched.cache_hits
        self.counters["transfers"] += len(sched.transfers)
        self.counters["bytes_transferred"] += sum(t.nbytes for t in sched.transfers)
        self.counters["spills"] += sched.spills
        by_id = {o.id: o for k in kernels for o in k.outputs}
        leaves = {x.id: x for k in kernels for x in k.inputs}
        leaves.update({n.id: n for n in nodes})
        for nid, (dev, buf, nbytes) in sched.uploads.items():
            self.uploaded(leaves[nid], dev, buf, nbytes)
        memo: dict = {}
        with gc_paused():
            if self.host_copies is not None:  # recipes first: they read the history become_leaf drops
                for nid in sched.outputs:
                    by_id[nid].lineage = lineage.recipe(by_id[nid], memo)
            history.keep([by_id[nid] for nid in sched.outputs])  # (gradients after a read: before become_leaf)
            for nid, (dev, buf, nbytes) in sched.outputs.items():
                by_id[nid].become_leaf(BufferRef(self, by_id[nid], dev, buf, nbytes, True))
        if planned is not None:
            templates.keep(self, found, inputs, sched, planned, before)
        t3 = time.perf_counter()
        if self.trace_events is not None:
            self._trace(sched, results, (t0, t1, t2, t3))
        if logs.enabled("timings"):  # API.md section 7: kernelize, schedule, run (plan_phases: see plan)
            ta, _, tc, td = self.plan_phases
            logs.logger("timings").debug(
                f"zyx_dist: realize {len(kernels)} kernels in {len(sched.steps)} steps: plan {1e3 * (t1 - t0):.2f} ms "
                f"(kernelize and render {1e3 * (tc - ta):.2f}, schedule {1e3 * (td - tc):.2f}), "
                f"run {1e3 * (t2 - t1):.2f} ms")

    def _measure(self, sched: Schedule, results: list[dict[str, BatchResult]]) -> None:
        """Feed device-side kernel times back to the scheduler's cost model (and keep each kernel's least)."""
        measured, fastest = self.state.measured, self.fastest
        names: dict[tuple[int, str], list[str]] = {}  # (step, device) -> its kernels, in launch order
        for p in sched.placements:
            names.setdefault((p.step, p.device), []).append(p.kernel)
        for step, res in enumerate(results):
            for dev, r in res.items():
                if not r.kernel_seconds:
                    continue
                for name, secs in zip(names.get((step, dev), ()), r.kernel_seconds):
                    old = measured.get((name, dev))
                    measured[(name, dev)] = secs if old is None else 0.5 * (old + secs)
                    least = fastest.get((name, dev))
                    if least is None or secs < least:
                        fastest[(name, dev)] = secs

    def error_of(self, device: str, f: Failed) -> Exception:
        """The zyx_dist error a worker's Failed result stands for (for engine/templates.py)."""
        return worker_error(device, f)

    def trace_replay(self, template, results: list[dict[str, BatchResult]], times: tuple) -> None:
        """Chrome trace events of a realize replayed from a plan template: see trace.Recorder."""
        self.trace_events.record_replay(self, template, results, times)

    def _trace(self, sched: Schedule, results: list[dict[str, BatchResult]], times: tuple) -> None:
        """Chrome trace events of this run (driver phases, every worker's commands): see trace.Recorder."""
        self.trace_events.record(self, sched, results, times)

    def resolve_device(self, name: str | None) -> str | None:
        """`name` checked against this session's devices (None stays None); DeviceError names the choices."""
        if name is None:
            return None
        if name not in self.device_names:
            raise DeviceError(f"unknown device {name!r}; this session has {', '.join(self.device_names)}")
        return name

    def stats(self) -> dict:
        self.flush()
        out: dict[str, Any] = dict(self.counters)
        out["bytes_in_use"] = dict(self.bytes_in_use)
        return out


def _variant_key(info: dict) -> str:
    return "|".join(str(info.get(f, "")) for f in ("backend", "device_name", "vendor", "driver_version"))


# ---- the module-level session (API.md section 1) ---------------------------------------------------------

_session: Session | None = None
# buffer, program and transfer ids: one sequence for every session of the process, so that a tensor kept from a
# session that was shut down names no buffer of a later one (its replay finds no buffer and plans, which refuses it)
_IDS = IdCounter()


def init(config: Any = None, *, address: str | None = None, ray: bool = True, devices: Any = None) -> Session:
    global _session
    if not isinstance(ray, bool):
        raise TypeError(f"zd.init: ray must be True or False, got {ray!r}")
    if _session is not None:
        raise ZyxError("zd.init() was already called; call zd.shutdown() first")
    cfg = load_config(config)
    if devices is not None:
        from ..config import parse_devices

        devices = parse_devices(devices)
    _session = Session(cfg, devices, ray, address)
    return _session


def shutdown() -> None:
    global _session
    if _session is not None:
        s, _session = _session, None
        s.close()


def current(nodes: tuple | list = ()) -> Session:
    """The running session, started with defaults on first use (implicit init, as API.md section 1); not started
    where `nodes` (about to be read or realized) reach data of a session shut down, which no session can read."""
    if _session is None:
        refuse_stale(nodes)
        init()
    assert _session is not None
    return _session


def running() -> Session | None:
    """The running session, or None; starts nothing. The one way tests and tools look at it."""
    return _session


@contextlib.contextmanager
def set_aside() -> Iterator[None]:
    """Put the running session aside for the duration: inside, `zd.init(...)` starts a second one (or
    `zd.init` is refused as usual); on exit that one is shut down and the first is the running session again.
    For tests and tools that need a differently configured session without losing the current one."""
    global _session
    saved, _session = _session, None
    try:
        yield
    finally:
        try:
            shutdown()
        finally:
            _session = saved
            logs.apply_debug(saved.debug if saved is not None else 0)  # the debug output of the session back
            ir.SPLIT_K = saved is not None and saved.split_k
            ir.WHOLE_SUMS = saved.whole_sums if saved is not None else None


def devices() -> list[DeviceInfo]:
    return current().devices()


def stats() -> dict:
    if _session is None:
        out: dict[str, Any] = dict.fromkeys(_STAT_KEYS, 0)
        out["bytes_in_use"] = {}
        return out
    return _session.stats()


def reset_stats() -> None:
    if _session is not None:
        _session.counters = dict.fromkeys(_STAT_KEYS, 0)


context.register(current)
