"""Actor side: the Ray actor around one `Worker` (the only actor-side module that imports ray).
Takes command batches from the driver, resolves the ObjectRefs of incoming transfers when a CopyIn
needs them (so the batch's other work is not held up), and gives back the `BatchResult` followed by
the arrays of the batch's exports (exporting CopyOuts, a Replay's exports) as separate return values,
which Ray hands straight to the destination worker's next batch without passing through the driver.

The same worker also runs replayed plans as a node of a Ray Compiled Graph (`run_compiled`, see
engine/ray_compiled.py). Ray runs a compiled graph's tasks on a thread of its own while plain calls
(one-off plans, reads, probes) still arrive on the actor's main thread, so every use of the worker
holds one lock: the two never interleave inside a batch.
"""

from __future__ import annotations

import dataclasses
import os
import threading

import ray

from .. import logs
from ..protocol import (
    BatchResult,
    Command,
    Done,
    DropTemplate,
    Free,
    Replay,
    export_value,
    exports_of,
)
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
        self.lock = threading.Lock()  # plain calls and the compiled graph's thread take turns
        self.worker = Worker(local_spec(spec), memory_limit, profile=True)

    def run(self, batch: list[Command], timed: bool = False):
        with self.lock:
            w = self.worker
            old, w.profile = w.profile, (w.profile or timed)
            try:
                res = w.run(batch, resolve=_resolve)
            finally:
                w.profile = old
        exports = exports_of(batch)
        if not exports:
            return res
        res, values = _strip(res, exports)
        return (res, *values)

    def run_compiled(self, steps: list, step: int, me: int, *earlier):
        """One node of a compiled graph (engine/ray_compiled.py): run this worker's batch of `step` (from
        `steps`, the graph's input: step -> worker -> batch, in the compact form of `ray_compiled.encode`)
        with the transfers that the previous step's nodes (`earlier`, every worker's, in graph order)
        exported. Gives (this worker's results of every step so far, each `encode_result`ed, and
        {transfer id: array} of what this batch exports)."""
        done = list(earlier[me][0]) if earlier else []
        batch = steps[step].get(self.name) if step < len(steps) else None
        if not batch:
            done.append(None)
            return done, {}
        imported: dict = {}
        for _results, exported in earlier:
            imported.update(exported)
        batch = decode(batch, imported)
        with self.lock:
            res = self.worker.run(batch, resolve=_resolve)
        exports = exports_of(batch)
        out = {}
        if exports:
            res, values = _strip(res, exports)
            out = {tid: v for (_i, _k, tid), v in zip(exports, values)}
        done.append(encode_result(res))
        return done, out

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
        from .cuda import nccl_available

        return nccl_available()

    def nccl_unique_id(self):
        from .cuda import nccl_unique_id

        return nccl_unique_id()

    def init_nccl(self, unique_id, world_size: int, rank: int) -> int:
        """Join the communicator of all CUDA workers (every rank must be called concurrently)."""
        with self.lock:
            self.worker.backend.init_nccl(unique_id, world_size, rank)
        return rank

    def close(self) -> None:
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

