"""Driver side: what the session does when work fails. Takes a worker's `Failed` result, a failed schedule,
or the set of workers found lost; gives the API's error for a failure (`worker_error`), a mirror of the
device buffers kept true with everything the failed schedule allocated freed (`Recovery._rollback`), and,
after lost workers, the workers restarted or dropped and every tensor they held turned back into a
computation from its lineage (`Recovery.recover`). `Recovery` is a part of `engine.session.Session`.
"""

from __future__ import annotations

import dataclasses

from .._util import bucket_size
from ..errors import CompileError, DeviceError, DTypeError, OutOfMemoryError, WorkerLostError, ZyxError
from ..graph import lineage
from ..graph.ir import Node
from ..protocol import BatchResult, Done, Failed, Free, Reload, Spill
from ..sched.scheduler import Schedule
from .backends import LostWorkers


def worker_error(device: str, f: Failed) -> Exception:
    """The zyx_dist error (API.md section 8) that a worker's Failed result stands for."""
    if f.error == "CompileError":
        return CompileError(f"{device}: {f.message}", f.data.get("source", ""), f.data.get("log", ""))
    if f.error == "OutOfMemoryError":
        return OutOfMemoryError(f.message, f.data.get("device", device), f.data.get("requested", 0),
                                f.data.get("free", 0))
    if f.error == "DTypeError":
        return DTypeError(f"{device}: {f.message}")
    if f.error == "DeviceError":
        return DeviceError(f"{device}: {f.message}")
    return ZyxError(f"{device}: {f.error}: {f.message}\n--- worker traceback ---\n{f.traceback}")


class Recovery:
    """Session methods for failures (they use the session's state, backend, holders and counters)."""

    def recover(self, devices: set[str]) -> None:
        """Workers were lost: bring them back (or drop them), forget their buffers, and turn every live
        tensor that lived there back into a computation from its lineage."""
        self.counters["recoveries"] += 1
        self.template_epoch += 1  # every plan template was made for the workers as they were
        for dev in devices:
            self.known_templates.pop(dev, None)
        if any(m.nccl_rank is not None for n, m in self.state.devices.items() if n in devices):
            # the NCCL communicator lost a rank: from now on data moves between GPUs through the host
            self.state.devices = {n: dataclasses.replace(m, nccl_rank=None) for n, m in self.state.devices.items()}
        for dev in sorted(devices):
            back = self.backend.recover(dev)
            self.state.drop_device(dev, keep=back)
            self.bytes_in_use[dev] = 0
            if not back:
                del self.bytes_in_use[dev]
            if not back:
                self.device_names.remove(dev)
                if self.default_device == dev and self.device_names:
                    self.default_device = self.device_names[0]
        if not self.device_names:
            raise WorkerLostError(f"every worker is gone (lost: {', '.join(sorted(devices))})")
        lost = [n for r in list(self.holders.values())
                if (n := r()) is not None and n.buffer is not None and n.buffer.device in devices]
        memo: dict = {}

        def alive(n: Node) -> bool:
            return n.buffer.device not in devices

        for n in lost:  # every lost tensor becomes a computation again, or is marked LOST (read -> error)
            self.holders.pop(n.buffer.id, None)
            if n.device in devices and n.device not in self.device_names:
                n.device = None  # its pinned device is gone for good
            lineage.restore(n, alive, memo)

    def _check(self, sched: Schedule, results: list[dict[str, BatchResult]]) -> None:
        failures = [(dev, r) for step in results for dev, res in step.items()
                    for r in res.results if isinstance(r, Failed)]
        if failures:
            self._rollback(sched, results, set())
            dev, f = failures[0]
            raise worker_error(dev, f)

    def _rollback(self, sched: Schedule, results: list[dict[str, BatchResult]], lost: set[str],
                  interrupted: bool = False) -> None:
        """A schedule failed: keep the mirror true (spills and reloads that ran stay done) and free
        everything it allocated on the workers still alive, so nothing leaks. `interrupted`: the run stopped
        part way with no results (a KeyboardInterrupt, or another exception out of the backend): the frees
        queued in front of its batches may not have run either, so they are sent again."""
        for step, res in zip(sched.steps, results):
            for dev, r in res.items():
                for cmd, out in zip(step[dev], r.results):
                    b = self.state.buffers.get(getattr(cmd, "buf", None))
                    if isinstance(out, Done) and b is not None and isinstance(cmd, (Spill, Reload)) \
                            and b.spilled != isinstance(cmd, Spill):
                            b = self.state.touch(cmd.buf)
                            b.spilled = isinstance(cmd, Spill)
                            self.state.used[dev] += bucket_size(b.nbytes) * (-1 if b.spilled else 1)
        rollback: dict[str, list] = {}
        made = list(sched.allocated)
        if interrupted:  # (a buffer freed twice fails harmlessly, as below: ids are never reused)
            made += [(dev, cmd.buf) for step in sched.steps for dev, cmds in step.items()
                     for cmd in cmds if isinstance(cmd, Free)]
        for dev, buf in dict.fromkeys(made):
            if dev not in lost:
                rollback.setdefault(dev, []).append(Free(buf))
        # After an interruption, a spill or reload of a buffer that outlives the run may or may not have run: each
        # is put back where the mirror has it, one batch each (the one that finds it there already fails alone),
        # the spills first (they make the room the reloads take)
        spills: dict[tuple[str, int], None] = {}
        reloads: dict[tuple[str, int], None] = {}
        for step in sched.steps if interrupted else ():
            for dev, cmds in step.items():
                for cmd in cmds:
                    if isinstance(cmd, (Spill, Reload)) and (b := self.state.buffers.get(cmd.buf)) is not None:
                        (spills if b.spilled else reloads)[(dev, cmd.buf)] = None
        back = [{dev: [Spill(buf)]} for dev, buf in spills] + [{dev: [Reload(buf)]} for dev, buf in reloads]
        free_made(self, rollback, interrupted, back)


def free_made(s, frees: dict[str, list], interrupted: bool, after: list[dict[str, list]] = ()) -> None:
    """Send the frees of a failed run's buffers (`frees`: device -> Free commands), then the steps `after`, and
    note the bytes in use. A free of a buffer that a failed batch never made fails harmlessly; so do lost workers
    (the next run notices and recovers). After an interrupted run the backend may fail too: the interruption is
    what the caller raises, not that."""
    try:
        for step in s.backend.run_steps([frees, *after]):
            for dev, res in step.items():
                s.bytes_in_use[dev] = res.bytes_in_use
    except LostWorkers:
        pass
    except Exception:  # (only after an interruption, whose exception the caller re-raises)
        if not interrupted:
            raise
