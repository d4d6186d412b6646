"""Driver side: the Ray backend (the only driver-side module that imports ray). Takes logical device
names bound to physical specs, the config and a Ray address; starts (or joins) Ray, creates one named
actor per device (`zyx_dist/worker/<device>` in the config's namespace; a CUDA worker claims a GPU, an
OpenCL worker a CPU: `worker_resources`), and runs scheduler steps on them: one actor call per worker per
step, all submitted at once. A transfer's array
goes from the exporting call's extra return value straight into the destination's later call, so Ray
orders the two workers by that data alone and the driver never blocks except to collect results.
Replayed plans (steps of `Replay` commands) run through a Ray Compiled Graph instead
(engine/ray_compiled.py), falling back to these plain calls when a graph cannot be compiled. Where the workers
run on the driver's own host, a step that moves nothing through the driver (replays, small reads, frees) goes
through their replay sockets instead (engine/ray_replay_socket.py), cheaper than either.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import ray

from .. import dtypes, logs
from ..errors import DeviceError, WorkerLostError
from ..protocol import (
    READ_TEMPLATE,
    Alloc,
    BatchResult,
    Command,
    CopyIn,
    CopyOut,
    DefineTemplate,
    Done,
    Failed,
    Free,
    Replay,
    aligned,
    batch_result,
)
from ..runtime.actor import replay_only
from .backends import LostWorkers, exports_of, substitute
from .ray_compiled import (
    DIRECT_UPLOAD_BYTES,
    GRAPH_ERRORS,
    CompiledSteps,
    compiled_graphs_enabled,
    frees_of,
    only_frees,
)
from .ray_replay_socket import ReplaySocket, Reply, SocketBroken

SOCKET_READ_BYTES = 16 << 20  # a read of more (per worker) takes a plain call: Ray's object store, shared memory
SOCKET_UPLOAD_BYTES = 16 << 20  # a replay uploading more (host data it takes anew) goes as commands, as above


def replay_sockets_enabled() -> bool:
    """One-worker replays go through a same-host worker's replay socket unless ZYX_DIST_REPLAY_SOCKETS is
    0/false/off (then through the compiled graph, as replays on several workers always do)."""
    return os.environ.get("ZYX_DIST_REPLAY_SOCKETS", "1").strip().lower() not in ("0", "false", "off")


def socket_spin_seconds() -> float:
    """How long both ends of a replay socket poll before they block: ZYX_DIST_SOCKET_SPIN_US microseconds, by
    default 200 on hosts of 8 or more cores and 0 on smaller ones (where a polling thread takes a core that
    the worker or Ray needs)."""
    default = "200" if (os.cpu_count() or 1) >= 8 else "0"
    try:
        return max(0.0, float(os.environ.get("ZYX_DIST_SOCKET_SPIN_US", default))) * 1e-6
    except ValueError:
        raise ValueError(f"ZYX_DIST_SOCKET_SPIN_US={os.environ['ZYX_DIST_SOCKET_SPIN_US']!r} is not a number "
                         "of microseconds") from None


def _is_gpu(spec: str) -> bool:
    return spec.startswith("cuda:")


def worker_resources(spec: str) -> dict[str, float]:
    """What a worker claims from Ray: a CUDA worker one GPU (Ray narrows CUDA_VISIBLE_DEVICES to it); an OpenCL
    worker one CPU, since the device it drives is a CPU or a GPU that Ray does not schedule."""
    return {"num_gpus": 1, "num_cpus": 0} if _is_gpu(spec) else {"num_gpus": 0, "num_cpus": 1}


class RayBackend:
    def __init__(self, devices: list[tuple[str, str]], config: Any, address: str | None = None):
        from ..runtime.actor import WorkerActor

        self.namespace = config.ray.namespace
        self.started_ray = False
        self.graph: CompiledSteps | None = None  # the compiled graph replays run through (ray_compiled.py)
        self.compiled = compiled_graphs_enabled()
        self.use_sockets = replay_sockets_enabled()
        self.spin_seconds = socket_spin_seconds()
        self.sockets: dict[str, ReplaySocket | None] = {}  # worker -> its replay socket; None: it has none
        self.socket_replays = self.socket_reads = 0  # (requests each socket carried: replays, reads)
        self.time_replays = False  # replays run with kernel timing only while a trace wants it (engine/trace.py)
        # the least a replay waits for its workers beyond their kernels' time (a compiled graph's execution
        # and its result: 30-50 us on a 2-core VM, ~136 us on a GPU host): driver work of that length hides
        self.round_trip_seconds = 30e-6
        address = address or config.ray.address or os.environ.get("RAY_ADDRESS")
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"namespace": self.namespace, "include_dashboard": False,
                                      "log_to_driver": True}
            if address:
                kwargs["address"] = address
            else:  # a new local instance, never a cluster that happens to run here; Ray finds the GPUs itself,
                # and CPU workers get a logical CPU each even where there are more workers than cores
                kwargs["address"] = "local"
                kwargs["num_cpus"] = max(os.cpu_count() or 1, sum(1 for _, spec in devices if not _is_gpu(spec)))
            try:
                ray.init(**kwargs)
            except Exception as e:
                raise DeviceError(f"could not start or join Ray (address={address!r}): {e}") from e
            self.started_ray = True
        self.actors: dict[str, Any] = {}
        try:
            for name, spec in devices:
                self.actors[name] = WorkerActor.options(
                    name=f"zyx_dist/worker/{name}", namespace=self.namespace, **worker_resources(spec),
                    max_restarts=config.ray.max_restarts, max_task_retries=0,
                ).remote(spec, config.memory_limit, name, config.debug)
            self.nccl_ranks = self._init_nccl([name for name, spec in devices if spec.startswith("cuda:")])
            self.infos = dict(zip(self.actors, self._get([a.info.remote() for a in self.actors.values()])))
            self.incarnations = {name: info["incarnation"] for name, info in self.infos.items()}
        except Exception:
            self.close()
            raise

    def _init_nccl(self, names: list[str]) -> dict[str, int]:
        """One NCCL communicator over the CUDA workers `names` (rank = position), when there are two or
        more, every one of them can load NCCL, and ZYX_DIST_NCCL is not 0; else none (transfers between
        them then go through the object store). The unique id is made by the first worker (rank 0, as NCCL
        has it; the driver needs no CUDA); every rank joins concurrently (ncclCommInitRank blocks until all do)."""
        if len(names) < 2 or os.environ.get("ZYX_DIST_NCCL", "1").strip() in ("0", "false", "off"):
            return {}
        actors = [self.actors[n] for n in names]
        if not all(self._get([a.nccl_available.remote() for a in actors])):
            return {}
        uid = self._get([actors[0].nccl_unique_id.remote()])[0]
        if uid is None:
            return {}
        refs = [a.init_nccl.remote(uid, len(names), rank) for rank, a in enumerate(actors)]
        try:
            ray.get(refs, timeout=float(os.environ.get("ZYX_DIST_NCCL_TIMEOUT", "300")))
        except ray.exceptions.GetTimeoutError as e:
            raise DeviceError(f"NCCL communicator over {', '.join(names)} did not form in time; "
                              "set ZYX_DIST_NCCL=0 to move data between GPUs through the object store") from e
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as e:
            raise DeviceError(f"NCCL communicator over {', '.join(names)} failed ({e}); "
                              "set ZYX_DIST_NCCL=0 to move data between GPUs through the object store") from e
        return {n: rank for rank, n in enumerate(names)}

    def _get(self, refs: list) -> list:
        try:
            return ray.get(refs)
        except ray.exceptions.RayActorError as e:
            raise WorkerLostError(f"a worker died: {e}") from e
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if hasattr(e, "cause") else e
            if isinstance(cause, Exception) and cause.__class__.__module__.startswith("zyx_dist"):
                raise cause from None
            raise

    def info(self, name: str) -> dict:
        return self.infos[name]

    def address(self) -> str | None:
        """The address of the Ray cluster the workers run on (its GCS), for `zyx-dist info`."""
        return ray.get_runtime_context().gcs_address if ray.is_initialized() else None

    def run(self, batches: dict[str, list[Command]]) -> dict[str, BatchResult]:
        return self.run_steps([batches])[0]

    def run_timed(self, name: str, batch: list[Command]) -> BatchResult:
        return batch_result(self._get([self.actors[name].run.remote(batch, True)])[0])

    def run_steps(self, steps: list[dict[str, list[Command]]], compiled: bool = False,
                  meanwhile: Callable[[], None] | None = None) -> list[dict[str, BatchResult]]:
        """Submit every step's batches at once, then collect. Raises LostWorkers when a worker died
        (its call failed) or answered from a new incarnation (Ray restarted it empty). `compiled`: the
        steps replay plan templates (untimed unless `time_replays`), and run through a compiled graph
        when one can be had; a worker that the steps only give frees gets them by a plain call beside the
        graph (it need not join). `meanwhile`: the driver's work that need not wait for the workers, run
        while they work."""
        if self.use_sockets and len(steps) == 1:  # replays, reads and frees that the sockets can carry
            out = self._socket_step(steps[0], meanwhile)
            if out is not None:
                return [out]
        if compiled and self.compiled:
            needed = {dev for step in steps for dev, batch in step.items() if not only_frees(batch)}
            # a template's first run on one worker with a replay socket (its later replays take the socket): a
            # compiled graph built for this one run would then idle with its readers polling
            alone = len(needed) == 1 and not self.time_replays and self.use_sockets and any(
                c.__class__ is DefineTemplate for step in steps for batch in step.values() for c in batch)
            graph = None if alone and self._socket(next(iter(needed))) is not None else \
                self._graph(needed, len(steps))
            if graph is not None:
                aside = [{dev: b for dev, b in step.items() if b and dev not in graph.names} for step in steps]
                pending = self._submit(aside) if any(aside) else None
                try:
                    results = self._run_compiled(graph, [{d: b for d, b in step.items() if d in graph.names}
                                                          for step in steps], meanwhile)
                finally:
                    if pending is not None:  # collected whatever happened in the graph
                        side, side_lost = self._collect(pending)
                if pending is not None:
                    if side_lost:
                        raise LostWorkers(side_lost, results)
                    for step, extra in zip(results, side):
                        step.update(extra)
                return results
        pending = self._submit(steps, compiled and not self.time_replays)  # (replays untimed, as in a graph)
        try:
            if meanwhile is not None:
                meanwhile()
        finally:  # (collected whatever happens: a later request on a replay socket must not overtake these)
            results, lost = self._collect(pending)
        if lost:
            raise LostWorkers(lost, results)
        return results

    def run_replay(self, name: str, template: int, bufs: tuple[int, ...], frees: list[int],
                   meanwhile: Callable[[], None] | None = None, uploads: tuple = ()) -> tuple[Any, int, int]:
        """Worker `name` frees `frees`, uploads `uploads` and replays its batch template `template` with `bufs`
        bound, untimed: (None or the first Failed, CUDA graphs replayed, bytes in use), as
        `InProcessBackend.run_replay`. Through the worker's replay socket it is one frame each way; through the
        compiled graph one compact tuple each way (runtime/actor.py `replay_only`; the uploads' arrays pickled
        in it); without either, the same commands as a plain call. Raises LostWorkers as `run_steps` does."""
        sock = self._socket(name) if self.use_sockets else None
        if sock is not None:
            replies, lost = self._exchange({name: (sock, template, bufs, frees, uploads)}, meanwhile)
            if lost:
                raise LostWorkers(lost, [])
            reply = replies[name]
            self.socket_replays += 1
            return reply.failed, len(reply.graphs), reply.in_use
        graph = self._graph({name}, 1) if self.compiled else None
        if graph is not None:
            batch = replay_only(template, bufs, frees, uploads)
            res = self._run_compiled(graph, [{name: batch}], meanwhile, False)[0][name]
        else:
            batch = [*(Free(b) for b in frees), *(c for buf, nbytes, data in uploads
                                                   for c in (Alloc(buf, nbytes), CopyIn(buf, data))),
                     Replay(template, bufs)]
            res = self.run_steps([{name: batch}], True, meanwhile)[0][name]
        failed = next((r for r in res.results if r.__class__ is Failed), None)
        return failed, len(res.graphs), res.bytes_in_use

    def _socket_step(self, step: dict[str, list[Command]], meanwhile: Callable[[], None] | None
                     ) -> dict[str, BatchResult] | None:
        """One step through the workers' replay sockets, every request sent before any reply is read, so the
        workers run side by side (NCCL pairs inside their templates included): each batch is frees and then one
        Replay that moves nothing through the driver, or non-exporting CopyOuts of at most SOCKET_READ_BYTES in
        all, or nothing more. None (nothing sent) for any other step, or where a worker has no socket. Raises
        LostWorkers as `run_steps` does."""
        requests: dict[str, tuple[ReplaySocket, int, tuple, list[int], tuple]] = {}
        rests: dict[str, list[Command]] = {}  # each worker's commands after its frees
        for dev, batch in step.items():
            if not batch:
                continue
            frees = [c.buf for c in batch if c.__class__ is Free]
            rest = batch[len(frees):]
            if any(c.__class__ is Free for c in rest):
                return None  # (frees not all in front: not a batch this path knows)
            first = rest[0] if rest else None
            if first is None:
                template, bufs = READ_TEMPLATE, ()
            elif first.__class__ is Replay:
                if len(rest) > 1 or first.imports or first.exports or self.time_replays:
                    return None
                template, bufs = first.template, first.bufs
            elif all(c.__class__ is CopyOut and not c.export for c in rest):
                pairs = [(c.buf, math.prod(c.shape) * dtypes.dtype(c.dtype).itemsize) for c in rest]
                if sum(n for _b, n in pairs) > SOCKET_READ_BYTES:
                    return None
                template, bufs = READ_TEMPLATE, tuple(x for pair in pairs for x in pair)
            else:
                return None
            sock = self._socket(dev)
            if sock is None:
                return None
            requests[dev], rests[dev] = (sock, template, bufs, frees, ()), rest
        if not requests:
            return None
        replies, lost = self._exchange(requests, meanwhile)
        out: dict[str, BatchResult] = {}
        for dev, reply in replies.items():
            _sock, template, _bufs, frees, _up = requests[dev]
            rest = rests[dev]
            if template >= 0:
                self.socket_replays += 1
            elif rest:
                self.socket_reads += 1
            failed = reply.failed
            done = [Done(i) for i in range(len(frees) + len(rest) if failed is None else failed.index)]
            if failed is None and template == READ_TEMPLATE:  # the CopyOuts' values, over the bytes read
                at = reply.data_at
                for i, c in enumerate(rest):
                    dt = dtypes.dtype(c.dtype).np_dtype
                    n = math.prod(c.shape)
                    at = aligned(at)
                    done[len(frees) + i] = Done(len(frees) + i, np.frombuffer(reply.body, dt, n, at).reshape(c.shape))
                    at += n * dt.itemsize
            out[dev] = BatchResult(tuple(done) if failed is None else (*done, failed), reply.incarnation,
                                   reply.in_use, (), reply.graphs)
        if lost:
            raise LostWorkers(lost, [out])
        return out

    def _exchange(self, requests: dict[str, tuple[ReplaySocket, int, tuple, list[int], tuple]],
                  meanwhile: Callable[[], None] | None) -> tuple[dict[str, Reply], set[str]]:
        """Each worker's request ((socket, template, bufs, frees, uploads)) sent before any reply is read, so the
        workers run side by side, and `meanwhile` run while they work: (the replies of the workers still the ones
        the driver knew, the workers lost: behind a broken socket, or answering from a new incarnation)."""
        broken: set[str] = set()
        for dev, (sock, template, bufs, frees, uploads) in requests.items():
            try:
                sock.send(template, bufs, frees, uploads)
            except SocketBroken:
                broken.add(dev)
        replies: dict[str, Reply] = {}
        try:
            if meanwhile is not None:
                meanwhile()
        finally:  # every reply is read, or a socket's next request would find this one's (an unread one, after
            # an exception here, leaves its socket `pending`: never used again)
            for dev, (sock, *_request) in requests.items():
                if dev not in broken:
                    try:
                        replies[dev] = sock.receive()
                    except SocketBroken:
                        broken.add(dev)
        lost = self._lost_with_sockets(broken) if broken else set()
        for dev, reply in list(replies.items()):
            if reply.incarnation != self.incarnations[dev]:
                lost.add(dev)
                del replies[dev]
        return replies, lost

    def _socket(self, name: str) -> ReplaySocket | None:
        """Worker `name`'s replay socket, connected on first use; None where it has none (another host, a
        platform without abstract Unix sockets, a connection that failed: those replays take the compiled
        graph)."""
        sock = self.sockets.get(name, False)
        if sock is not False and (sock is None or sock.usable):
            return sock
        if sock:  # closed or out of step (interrupted between a request and its reply): connect anew
            sock.close()
        self.sockets[name] = None
        try:
            if self.infos[name].get("node") != ray.get_runtime_context().get_node_id():
                return None  # (a worker on another host, or a driver that is a Ray client: no node of its own)
            opened = ray.get(self.actors[name].open_replay_socket.remote(self.spin_seconds), timeout=60)
            if opened is None:
                return None
            sock = ReplaySocket(*opened, self.spin_seconds)
        except Exception as e:  # noqa: BLE001 -- no socket (a failed connection, an old actor, Ray's error): the graph
            logs.emit("devices", f"zyx_dist: no replay socket to {name} ({type(e).__name__}: {e}); "
                                 "its replays use the compiled graph")
            return None
        self.sockets[name] = sock
        # what a replay waits for beyond its kernels is this round trip now, not the compiled graph's
        self.round_trip_seconds = min(self.round_trip_seconds, sock.round_trip_seconds)
        logs.emit("devices", f"zyx_dist: replay socket to {name}, round trip {1e6 * sock.round_trip_seconds:.0f} us")
        return sock

    def _lost_with_sockets(self, broken: set[str]) -> set[str]:
        """The workers lost, once the replay sockets of workers `broken` failed mid-request (dropped here): those,
        and any other that Ray finds dead or restarted."""
        for name in broken:
            self._drop_socket(name)
        # (a worker alive behind a broken socket may have missed its frees or run half a step: reset it too)
        lost = self._find_lost(tuple(sorted(broken))) | broken
        logs.emit("devices", f"zyx_dist: replay socket of {', '.join(sorted(broken))} failed; lost {', '.join(sorted(lost))}")
        return lost

    def _drop_socket(self, name: str) -> None:
        sock = self.sockets.pop(name, None)
        if sock is not None:
            sock.close()

    def direct_upload_bytes(self, name: str) -> int:
        """Host data a replay's direct call (`run_replay`) may carry to worker `name`: SOCKET_UPLOAD_BYTES through
        its replay socket (raw bytes in the frame), else DIRECT_UPLOAD_BYTES (pickled into the compiled graph's
        input, whose channel is sized for commands); more goes as commands, the data through the object store."""
        if self.use_sockets and self._socket(name) is not None:
            return SOCKET_UPLOAD_BYTES
        return DIRECT_UPLOAD_BYTES

    def _graph(self, names: set[str], depth: int) -> CompiledSteps | None:
        """The compiled graph for steps on workers `names`, `depth` steps deep: the current one if it
        covers them, else a new one over them and the current graph's workers that were used lately
        (the old one is torn down first: an actor runs one compiled graph at a time). None when
        compiling fails (then replays use plain calls from now on)."""
        g = self.graph
        if g is not None and g.covers(names, depth) and not g.stale():
            return g
        if g is not None:
            names = names | g.recent()
            depth = max(depth, g.depth)
            self._drop_graph()
        order = tuple(n for n in self.actors if n in names)
        try:
            self.graph = CompiledSteps(self.actors, order, depth)
        except Exception as e:  # noqa: BLE001 -- a Ray without compiled graphs here: plain calls still work
            self.compiled = False
            logs.emit("devices", f"zyx_dist: Ray Compiled Graphs unavailable ({type(e).__name__}: {e}); "
                                 "replays use plain actor calls")
            return None
        logs.emit("devices", f"zyx_dist: compiled graph over {', '.join(order)}, {depth} steps deep")
        return self.graph

    def _drop_graph(self) -> None:
        if self.graph is not None:
            g, self.graph = self.graph, None
            g.close()

    def _run_compiled(self, graph: CompiledSteps, steps: list[dict[str, Any]],
                      meanwhile: Callable[[], None] | None = None, timed: bool | None = None
                      ) -> list[dict[str, BatchResult]]:
        try:
            results = graph.run(steps, self.time_replays if timed is None else timed, meanwhile)
        except GRAPH_ERRORS as e:
            self._drop_graph()
            lost = self._find_lost(graph.names)
            logs.emit("devices", f"zyx_dist: compiled graph failed ({type(e).__name__}); lost {', '.join(sorted(lost))}")
            survivors = {d: cmds for d, cmds in frees_of(steps).items() if d not in lost}
            if survivors:  # the graph may have died before they ran; a second free fails harmlessly
                _, more = self._collect(self._submit([survivors]))
                lost |= more
            raise LostWorkers(lost, []) from None
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, Exception) and cause.__class__.__module__.startswith("zyx_dist"):
                raise cause from None
            raise
        lost = {name for step in results for name, res in step.items() if res.incarnation != self.incarnations[name]}
        if lost:
            raise LostWorkers(lost, results)
        return results

    def _find_lost(self, names: tuple[str, ...]) -> set[str]:
        """The workers among `names` that are dead or came back as a new incarnation (all of them when
        none can be told apart: a graph that failed without a dead worker is not trusted either)."""
        refs = {n: self.actors[n].incarnation.remote() for n in names}
        lost = set()
        for n, ref in refs.items():
            try:
                if ray.get(ref, timeout=30) != self.incarnations[n]:
                    lost.add(n)
            except Exception:  # noqa: BLE001 -- dead, restarting or unreachable: lost all the same
                lost.add(n)
        return lost or set(names)

    def _submit(self, steps: list[dict[str, list[Command]]], untimed: bool = False) -> list[list[tuple[str, Any]]]:
        """One plain actor call per worker per step, all submitted at once: (worker, ref) per step. `untimed`:
        no kernel timing (replays)."""
        exported: dict[int, Any] = {}
        pending: list[list[tuple[str, Any]]] = []
        for batches in steps:
            calls = []
            for name, batch in batches.items():
                if not batch:
                    continue
                exports = exports_of(batch)
                method = self.actors[name].run
                if exports:
                    method = method.options(num_returns=1 + len(exports))
                out = method.remote(substitute(batch, exported), untimed=untimed)
                if exports:
                    for (_i, _k, tid), ref in zip(exports, out[1:]):
                        exported[tid] = ref
                    out = out[0]
                calls.append((name, out))
            pending.append(calls)
        return pending

    def _collect(self, pending: list[list[tuple[str, Any]]]) -> tuple[list[dict[str, BatchResult]], set[str]]:
        """The results of submitted calls, and the workers found dead or restarted on the way."""
        results: list[dict[str, BatchResult]] = []
        lost: set[str] = set()
        refs = [ref for calls in pending for _name, ref in calls]
        if refs:  # every call ended, failed ones too, before any error below is raised (nothing left running)
            ray.wait(refs, num_returns=len(refs))
        for calls in pending:
            step = {}
            for name, ref in calls:
                try:
                    res = batch_result(ray.get(ref))
                except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError,
                        ray.exceptions.OwnerDiedError):
                    lost.add(name)
                    continue
                except ray.exceptions.RayTaskError as e:
                    if isinstance(getattr(e, "cause", None), (ray.exceptions.RayActorError,
                                                              ray.exceptions.ObjectLostError)):
                        lost.add(name)  # a transfer source died: this worker only lost its input
                        continue
                    raise
                if res.incarnation != self.incarnations[name]:
                    lost.add(name)
                step[name] = res
            results.append(step)
        return results, lost

    def recover(self, name: str, timeout: float = 60.0) -> bool:
        """Wait for Ray to restart worker `name`; True when it is back (empty), False when it is gone. Told
        apart by the exception Ray raises (`actor_restarting`), never by the text of its message."""
        import time

        self._drop_graph()  # its worker is being reset: no compiled graph may run on it meanwhile
        self._drop_socket(name)  # (a restarted worker has a socket of its own; the old one is gone with it)
        deadline = time.monotonic() + timeout
        while True:
            try:
                # empty it: a batch of the failed run may have allocated on the new incarnation already
                self.incarnations[name] = ray.get(self.actors[name].reset.remote(), timeout=timeout)
                return True
            except ray.exceptions.RayActorError as e:
                if not actor_restarting(e) or time.monotonic() > deadline:
                    return False
                time.sleep(0.2)
            except ray.exceptions.GetTimeoutError:
                return False

    def close(self) -> None:
        self._drop_graph()
        for name in list(self.sockets):
            self._drop_socket(name)
        for a in self.actors.values():
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001, S110 -- already gone is fine when shutting down
                pass
        self.actors = {}
        if self.started_ray and ray.is_initialized():
            ray.shutdown()
        self.started_ray = False


def actor_restarting(error: BaseException) -> bool:
    """Whether an actor call failed because Ray is restarting the actor (`ActorUnavailableError`: it may come
    back, with its state gone), as opposed to the actor being dead for good (`ActorDiedError`: killed with
    `no_restart=True`, or out of `max_restarts`; any other `RayActorError` counts as dead too)."""
    return isinstance(error, ray.exceptions.ActorUnavailableError)
