"""Actor side: the Ray actor around one `Worker` (the only actor-side module that imports ray).
Takes command batches from the driver, resolves the ObjectRefs of incoming transfers when a CopyIn
needs them (so the batch's other work is not held up), and gives back the `BatchResult` followed by
the arrays of the batch's exporting CopyOuts as separate return values, which Ray hands straight to
the destination worker's next batch without passing through the driver.
"""

from __future__ import annotations

import dataclasses
import os

import ray

from .. import logs
from ..protocol import Command, CopyOut, Done
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


@ray.remote
class WorkerActor:
    def __init__(self, spec: str, memory_limit: int | None, name: str, debug: int | None = None):
        # the driver's ZYX_DIST_DEBUG bits (its config), else this process's environment; the lines go to this
        # process's stderr, which Ray forwards to the driver (log_to_driver)
        logs.apply_debug(logs.debug_from_env() if debug is None else debug)
        self.name = name
        self.worker = Worker(local_spec(spec), memory_limit, profile=True)

    def run(self, batch: list[Command], timed: bool = False):
        w = self.worker
        old, w.profile = w.profile, (w.profile or timed)
        try:
            res = w.run(batch, resolve=_resolve)
        finally:
            w.profile = old
        exports = [i for i, c in enumerate(batch) if isinstance(c, CopyOut) and c.export]
        if not exports:
            return res
        results = list(res.results)
        values = []
        for i in exports:
            r = results[i] if i < len(results) else None
            values.append(r.value if isinstance(r, Done) else None)
            if isinstance(r, Done):
                results[i] = Done(i)  # the array travels as its own object, not inside the result
        return (dataclasses.replace(res, results=tuple(results)), *values)

    def info(self) -> dict:
        return dict(self.worker.info(), name=self.name, node=ray.get_runtime_context().get_node_id())

    def incarnation(self) -> str:
        return self.worker.incarnation

    def reset(self) -> str:
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
        self.worker.backend.init_nccl(unique_id, world_size, rank)
        return rank

    def close(self) -> None:
        self.worker.close()

    def crash(self) -> None:
        """Fault injection for tests: the process dies at once, as if its GPU or host failed."""
        import os

        os._exit(1)
