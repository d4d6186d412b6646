"""Actor side: the Ray actor around one `Worker` (the only actor-side module that imports ray).
Takes command batches from the driver, resolves the ObjectRefs of incoming transfers when a CopyIn
needs them (so the batch's other work is not held up), and gives back the `BatchResult` followed by
the arrays of the batch's exports (exporting CopyOuts, a Replay's exports) as separate return values,
which Ray hands straight to the destination worker's next batch without passing through the driver.

The same worker also runs replayed plans as a node of a Ray Compiled Graph (`run_compiled`, see
engine/ray_compiled.py). Ray runs a compiled graph's tasks on a thread of its own while plain calls
(one-off plans, reads, probes) still arrive on the actor's main thread, so every use of the worker
holds one lock: the two never interleave inside a batch. A graph's replay that is only frees and one
template goes straight to `Worker.run_replay`, and what carries no arrays travels as one pickled bytes
object each way (`pack_steps`, `pack_result`), which Ray's channels pass without walking it. A driver on the
same host sends its one-worker replays through the worker's replay socket instead (runtime/replay_socket.py),
served on a thread of its own under the same lock.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import threading
from collections.abc import Sequence
from typing import Any

import ray

from .. import logs
from ..protocol import (
    BatchResult,
    Command,
    CopyOut,
    Done,
    DropTemplate,
    Free,
    Replay,
    export_value,
    exports_of,
)
from . import replay_socket
from .worker import Worker


def _resolve(data):
    return ray.get(data) if isinstance(data, ray.ObjectRef) else data


def local_spec(spec: str) -> str:
    """The device spec as this actor's process sees it. Ray gives a CUDA worker one GPU and narrows
    CUDA_VISIBLE_DEVICES to it, so it is cuda:0 there; where Ray left every GPU visible, it is the GPU
    Ray assigned; elsewhere (no GPU from Ray) the spec stands."""
    if spec.partition(":")[0] != "cuda":
        return spec
    ids = ray.get_gpu_ids()
    if not ids:
        return spec
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if visible:  # our GPU is at its position in the visible list (position 0 when Ray narrowed it)
        mine = str(ids[0])
        return f"cuda:{visible.index(mine)}" if mine in visible else "cuda:0"
    return f"cuda:{int(ids[0])}"


def _strip(res: BatchResult, exports: list[tuple[int, int, int]]) -> tuple[BatchResult, list]:
    """The result without its exported arrays (they travel as objects of their own), and the arrays."""
    values = [export_value(res.results, i, k) for i, k, _tid in exports]
    results = list(res.results)
    for i in {i for i, _k, _tid in exports}:
        if i < len(results) and isinstance(results[i], Done):
            results[i] = Done(i)
    return dataclasses.replace(res, results=tuple(results)), values


@ray.remote
class WorkerActor:
    def __init__(self, spec: str, memory_limit: int | None, name: str, debug: int | None = None):
        # the driver's ZYX_DIST_DEBUG bits (its config), else this process's environment; the lines go to this
        # process's stderr, which Ray forwards to the driver (log_to_driver)
        logs.apply_debug(logs.debug_from_env() if debug is None else debug)
        self.name = name
        self.lock = threading.Lock()  # plain calls, the compiled graph's thread and the replay socket take turns
        self.worker = Worker(local_spec(spec), memory_limit, profile=True, name=name)
        self.replay_socket: replay_socket.ReplaySocketServer | None = None

    def open_replay_socket(self, spin_seconds: float = 0.0) -> tuple[str, bytes] | None:
        """(address, token) of this worker's replay socket (runtime/replay_socket.py), opened on the first call,
        polling `spin_seconds` after each reply; None where the platform has none."""
        if self.replay_socket is None:
            if not replay_socket.available():
                return None
            self.replay_socket = replay_socket.ReplaySocketServer(self._socket_replay, self._socket_read,
                                                                  self.incarnation, self.name)
        self.replay_socket.spin_seconds = spin_seconds
        return self.replay_socket.address, self.replay_socket.token

    def _socket_replay(self, template: int, bufs: tuple, frees: tuple, uploads: tuple) -> tuple:
        """A replay from the replay socket (its errors are values: `Worker.run_replay`)."""
        with self.lock:
            failed, graphs, in_use = self.worker.run_replay(template, bufs, frees, None, uploads)
            return failed, graphs, in_use, self.worker.incarnation

    def _socket_read(self, reads: tuple, frees: tuple) -> tuple:
        """The frees, then each (buffer id, bytes) of `reads` copied out as raw bytes, as one batch (its errors
        are values: `Worker.run`)."""
        batch = [*(Free(b) for b in frees), *(CopyOut(buf, "uint8", (nbytes,)) for buf, nbytes in reads)]
        with self.lock:
            res = self.worker.run(batch)
        failed = next((r for r in res.results if r.__class__ is not Done), None)
        data = () if failed is not None else tuple([r.value for r in res.results[len(frees):]])
        return failed, (), res.bytes_in_use, res.incarnation, data

    def run(self, batch: list[Command], timed: bool = False, untimed: bool = False):
        """Run one batch; its kernels are timed as the worker's profile says (on: planned runs feed the cost
        model), always with `timed`, never with `untimed` (a replay's first run: its placement is frozen)."""
        with self.lock:
            w = self.worker
            old, w.profile = w.profile, (not untimed and (w.profile or timed))
            try:
                res = w.run(batch, resolve=_resolve)
            finally:
                w.profile = old
        exports = exports_of(batch)
        if not exports:
            return res
        res, values = _strip(res, exports)
        return (res, *values)

    def run_compiled(self, steps, step: int, me: int, *earlier):
        """One node of a compiled graph (engine/ray_compiled.py): run this worker's batch of `step` from
        `steps`, the graph's input (`pack_steps`: whether to time the kernels, then step -> worker -> batch
        in the compact form of `encode`), with the transfers that the previous step's nodes (`earlier`,
        every worker's, in graph order) exported. Gives, through `pack_result`, this worker's results of
        every step so far (each `encode_result`ed) and {transfer id: array} of what this batch exports."""
        timed, steps = unpack(steps)
        # only this worker's own results are read back; another node's output is read only for the arrays
        # it exports (a bytes output exports none)
        done = list(unpack_result(earlier[me])[0]) if earlier else []
        batch = steps[step].get(self.name) if step < len(steps) else None
        if not batch:
            done.append(None)
            return pack_result(done, {})
        first = batch[0]
        if first.__class__ is tuple and first[0] == REPLAY_ONLY:  # frees and one replay, untimed
            _q, template, bufs, frees, uploads = first
            with self.lock:
                failed, graphs, in_use = self.worker.run_replay(template, bufs, frees, None, uploads)
            res = BatchResult((failed,) if failed is not None else (), self.worker.incarnation, in_use, (), graphs)
            done.append(encode_result(res))
            return pack_result(done, {})
        imported: dict = {}
        for value in earlier:
            if value.__class__ is not bytes:
                imported.update(value[1])
        batch = decode(batch, imported)
        with self.lock:
            w = self.worker
            old, w.profile = w.profile, timed
            try:
                res = w.run(batch, resolve=_resolve)
            finally:
                w.profile = old
        exports = exports_of(batch)
        out = {}
        if exports:
            res, values = _strip(res, exports)
            out = {tid: v for (_i, _k, tid), v in zip(exports, values)}
        done.append(encode_result(res))
        return pack_result(done, out)

    def info(self) -> dict:
        return dict(self.worker.info(), name=self.name, node=ray.get_runtime_context().get_node_id())

    def incarnation(self) -> str:
        return self.worker.incarnation

    def reset(self) -> str:
        with self.lock:
            return self.worker.reset()

    def nccl_available(self) -> bool:
        """Whether this worker can join an NCCL communicator (a CUDA worker with NCCL loadable)."""
        if getattr(self.worker.backend, "kind", "") != "cuda":
            return False
        from . import cuda

        return cuda.nccl_available()

    def nccl_unique_id(self):
        from . import cuda

        return cuda.nccl_unique_id()

    def init_nccl(self, unique_id, world_size: int, rank: int) -> int:
        """Join the communicator of all CUDA workers (every rank must be called concurrently)."""
        with self.lock:
            self.worker.backend.init_nccl(unique_id, world_size, rank)
        return rank

    def close(self) -> None:
        if self.replay_socket is not None:
            self.replay_socket.close()
        with self.lock:
            self.worker.close()

    def limit_memory(self, nbytes: int | None) -> int:
        """Fault injection for tests: cap the worker's pool at `nbytes` behind the driver's back (None puts
        the real limit back), its cache of freed blocks emptied, so an allocation the driver planned
        fails here as on a device that filled up. Gives the limit in force before."""
        with self.lock:
            pool = self.worker.pool
            real = getattr(self, "_real_limit", pool.limit_bytes)
            self._real_limit = real
            before, pool.limit_bytes = pool.limit_bytes, real if nbytes is None else int(nbytes)
            pool.release_cached()
            return before

    def crash(self) -> None:
        """Fault injection for tests: the process dies at once, as if its GPU or host failed."""
        import os

        os._exit(1)


# ---- the compact form of a compiled graph's batches and results --------------------------------------------
# A compiled graph pickles its input and outputs on every execution, and cloudpickle costs a Python call per
# object of a class it does not know, so the replays' few kinds of commands and their results travel as
# tuples of plain values (which it pickles in C) and become protocol objects again on the other side.

REPLAY_ONLY = "Q"  # the tag of `replay_only`'s command


def replay_only(template: int, bufs: tuple[int, ...], frees: Sequence[int], uploads: tuple = ()) -> tuple:
    """The compact batch of an untimed one-worker replay: the frees, the uploads ((buffer id, bytes, host
    array) each), then the template with `bufs` bound (the actor runs it with `Worker.run_replay`, no
    command or result objects on either side)."""
    return ((REPLAY_ONLY, template, bufs, tuple(frees), uploads),)


def encode(batch: list[Command]) -> tuple:
    """A batch of a replay (Frees, DropTemplates, Replays; anything else as it is) in tuples."""
    out = []
    for c in batch:
        cls = c.__class__
        if cls is Replay:
            out.append(("R", c.template, c.bufs, tuple(r.id for r in c.imports), c.exports))
        elif cls is Free:
            out.append(("F", c.buf))
        elif cls is DropTemplate:
            out.append(("D", c.template))
        else:
            out.append(c)
    return tuple(out)


def decode(batch: tuple, imported: dict) -> list[Command]:
    """`encode`'s batch as commands; a Replay's imports are taken from `imported` (transfer id -> array)."""
    out: list[Command] = []
    for c in batch:
        if c.__class__ is tuple:
            kind = c[0]
            if kind == "R":
                out.append(Replay(c[1], c[2], tuple(imported.get(t) for t in c[3]), c[4]))
            elif kind == "F":
                out.append(Free(c[1]))
            else:
                out.append(DropTemplate(c[1]))
        else:
            out.append(c)
    return out


def encode_result(res: BatchResult) -> tuple:
    """A BatchResult in tuples: each Done without a value as its index (exports were taken out already)."""
    results = tuple(r.index if r.__class__ is Done and r.value is None else r for r in res.results)
    return results, res.incarnation, res.bytes_in_use, res.kernel_seconds, res.graphs


def decode_result(value: tuple) -> BatchResult:
    results, incarnation, nbytes, seconds, graphs = value
    return BatchResult(tuple(Done(r) if r.__class__ is int else r for r in results), incarnation, nbytes, seconds,
                       graphs)



# Ray hands a bytes object through a compiled graph's channel as it is, but walks any other value with its
# serializer (a Python call per container); pickling the compact tuples in C first halves the cost of a
# small replay's round trip. Arrays (uploads, exports) keep Ray's own path, which does not copy them twice.

def pack_steps(steps: list[dict[str, tuple]], timed: bool) -> Any:
    """A compiled graph's input: (whether to time the kernels, the encoded steps), as one bytes object
    when every command is in the compact form."""
    for step in steps:
        for batch in step.values():
            for c in batch:
                if c.__class__ is not tuple:
                    return timed, steps
    return pickle.dumps((timed, steps), pickle.HIGHEST_PROTOCOL)


def unpack(value: Any) -> Any:
    """`pack_steps`' value as it was."""
    return pickle.loads(value) if value.__class__ is bytes else value


def pack_result(done: list, exported: dict) -> Any:
    """A compiled graph node's output: (the results of every step so far, {transfer id: array}), as one
    bytes object when nothing is exported."""
    if exported:
        return done, exported
    try:
        return pickle.dumps(done, pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 -- a value plain pickle cannot take: Ray's serializer can
        return done, exported


def unpack_result(value: Any) -> tuple[list, dict]:
    """`pack_result`'s value as (results, exports)."""
    if value.__class__ is bytes:
        return pickle.loads(value), {}
    return value
