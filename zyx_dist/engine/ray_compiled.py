"""Driver side: Ray Compiled Graphs for replayed plans (with ray_backend.py, the only driver modules that
import ray). Takes the worker actors of a session and the steps of a plan-template replay (per step,
per worker, a small batch: frees, maybe a DefineTemplate, one Replay); gives each worker's
`BatchResult` per step, as `RayBackend.run_steps` does, but through one compiled graph instead of one
actor call per worker per step.

The graph is built once per set of workers and number of steps and reused for every replay: layer s
has one node per worker (`WorkerActor.run_compiled`), each reading the graph's input (every step's
batches; a worker without a batch in a step returns at once) and the outputs of every node of layer
s - 1, which carry the arrays exported in that step, so a transfer between workers travels through
the graph's own channels (shared memory on one node). Between CUDA workers the plan's NCCL Send/Recv
pairs run inside the two batches of one step, on the communicator the session made at start (Ray's
NCCL channels carry torch tensors only; these buffers are CuPy memory). The last layer's outputs hold
each worker's results of every step. A one-worker replay is one compact tuple for the worker's
`run_replay` (RayBackend.run_replay); inputs and outputs without arrays travel pickled as one bytes
object (runtime/actor.py `pack_steps`), and replays are untimed unless a trace asks for kernel times.

Ray's limits this design follows: an actor runs one compiled graph at a time, so the graph covers the
union of the workers that replays use lately (rebuilt when a new one joins, when the steps get deeper,
or when a worker has had no work in it for SHRINK_AFTER executions: Ray's channel readers poll, so an
idle member costs CPU), a worker that a replay only gives frees gets them by a plain call instead of
joining, and a graph is torn down before a worker is reset or recovered; plain actor calls (one-off plans,
reads, probes) keep working beside a compiled graph, on the actor's main thread, and the actor's lock
keeps them from interleaving with the graph's thread; only the driver that compiled a graph may run
it. A worker that dies makes the graph unusable: its executions raise a channel or actor error, which
becomes `LostWorkers` for the workers that died (or came back as a new incarnation), as a plain call's
failure does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import ray
from ray.dag import InputNode, MultiOutputNode

from .. import logs
from ..protocol import BatchResult, DropTemplate, Free
from ..runtime.actor import REPLAY_ONLY, decode_result, encode, pack_steps, unpack_result

SHRINK_AFTER = 256  # executions without work after which a worker leaves the graph (at the next rebuild)
# host data a one-worker replay may carry pickled into a graph's input, whose channel is sized for commands, not
# tensors; more goes as commands with the data apart (RayBackend.direct_upload_bytes)
DIRECT_UPLOAD_BYTES = 1 << 16

# what a dead or restarted worker inside a compiled graph raises on the driver
GRAPH_ERRORS: tuple[type[BaseException], ...] = tuple(
    e for e in (getattr(ray.exceptions, n, None) for n in (
        "RayChannelError", "RayActorError", "ObjectLostError", "OwnerDiedError", "RayChannelTimeoutError"))
    if e is not None)



def compiled_graphs_enabled() -> bool:
    """Replays run as compiled graphs on Ray unless ZYX_DIST_COMPILED_GRAPHS is 0/false/off."""
    return os.environ.get("ZYX_DIST_COMPILED_GRAPHS", "1").strip().lower() not in ("0", "false", "off")


class CompiledSteps:
    """One compiled graph over the workers `names` (in this order), `depth` steps deep."""

    def __init__(self, actors: dict[str, Any], names: tuple[str, ...], depth: int):
        self.names, self.depth = names, depth
        # Ray logs every compile and teardown of a graph at INFO level on the driver: quiet, unless the
        # devices debug output is on (or the user set that logger's level)
        ray_log = logging.getLogger("ray.dag.compiled_dag_node")
        if ray_log.level == logging.NOTSET and not logs.enabled("devices"):
            ray_log.setLevel(logging.WARNING)
        with InputNode() as steps:
            layer: list = []
            for s in range(depth):
                layer = [actors[n].run_compiled.bind(steps, s, i, *layer) for i, n in enumerate(names)]
            dag = MultiOutputNode(layer)
        self.graph = dag.experimental_compile()
        self.executions = 0
        self.last_used = dict.fromkeys(names, 0)  # worker -> the last execution that gave it a batch

    def covers(self, names: set[str], depth: int) -> bool:
        return depth <= self.depth and names <= self.last_used.keys()

    def recent(self) -> set[str]:
        """The workers that had work in the last SHRINK_AFTER executions."""
        return {n for n, last in self.last_used.items() if self.executions - last < SHRINK_AFTER}

    def stale(self) -> bool:
        """Whether some worker of the graph had no work for SHRINK_AFTER executions: Ray's channel readers
        poll while they wait, so a worker idling in a graph costs CPU; rebuild without it."""
        return len(self.names) > 1 and len(self.recent()) < len(self.names)

    def run(self, steps: list[dict[str, list]], timed: bool = True,
            meanwhile: Callable[[], None] | None = None) -> list[dict[str, BatchResult]]:
        """Execute once and wait (a realize blocks until its results exist); raises what Ray raises.
        `timed`: the workers time their kernels. `meanwhile` runs on the driver while the workers work."""
        refs = self.graph.execute(pack_steps([{name: encode(batch) for name, batch in step.items()}
                                              for step in steps], timed))
        self.executions += 1
        for step in steps:
            for name in step:
                self.last_used[name] = self.executions
        try:
            if meanwhile is not None:
                meanwhile()
        finally:  # every execution's outputs are read, or the graph's next execution would find them
            per_worker = [unpack_result(ref.get(timeout=-1)) for ref in refs]  # no timeout: a long kernel is fine
        out: list[dict[str, BatchResult]] = [{} for _ in steps]
        for name, (done, _exports) in zip(self.names, per_worker):
            for s, res in enumerate(done[:len(steps)]):
                if res is not None:
                    out[s][name] = decode_result(res)
        return out

    def close(self) -> None:
        try:
            self.graph.teardown()
        except Exception:  # noqa: BLE001, S110 -- a graph whose worker died may already be torn down
            pass


def only_frees(batch: list) -> bool:
    """Whether a batch holds nothing but Free and DropTemplate commands (or nothing)."""
    return all(c.__class__ is Free or c.__class__ is DropTemplate for c in batch)


def frees_of(steps: list[dict[str, list]]) -> dict[str, list]:
    """The Free and DropTemplate commands of the first step's batches (what a failed graph may not have
    run on a surviving worker; sending them again is harmless)."""
    out: dict[str, list] = {}
    for dev, batch in (steps[0].items() if steps else ()):
        cmds = [c for c in batch if c.__class__ is Free or c.__class__ is DropTemplate]
        cmds += [Free(b) for c in batch if c.__class__ is tuple and c[0] == REPLAY_ONLY for b in c[3]]
        if cmds:
            out[dev] = cmds
    return out
