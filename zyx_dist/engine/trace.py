"""Driver side: `zd.trace` (API.md section 7). While a trace is on, the session's `trace_events` is a
`Recorder`, and `Session.realize` hands it each run (its Schedule, the workers' BatchResults and the driver's
phase times) to turn into Chrome trace events; reads back are recorded too. On exit the events are written as
Chrome/Perfetto trace JSON, one track for the driver and one per device. Times are `time.perf_counter()`
seconds until the file is written. Kernel durations are the workers' device-side timings (`kernel_seconds`;
the kernels of a CUDA graph replay share its measured time, and the graph is one event spanning them; a
realize replayed from a plan template is drawn from the template's planned batches, marked `replayed`);
each device's commands are laid end to end from the start of their step (a step starts when every device has
finished the previous one), since a worker reports durations, not clocks shared with the driver.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..protocol import Alloc, BatchResult, Compile, CopyIn, CopyOut, Done, Free, Launch, Reload, Spill, TransferRef
from . import session as _session

DRIVER = "driver"


class Recorder(list):
    """The event list of one trace, and where each device's timeline has got to. The session calls
    `record` after each realize (it never imports this module: the recorder is handed to it)."""

    def __init__(self) -> None:
        super().__init__()
        self.device_end: dict[str, float] = {}

    def record(self, s, sched, results: list, times: tuple) -> None:
        realize_events(self, s, sched, results, times)

    def record_replay(self, s, template, results: list, times: tuple) -> None:
        replay_events(self, s, template, results, times)


def _x(name: str, tid: str, ts: float, dur: float, cat: str, **args) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": max(dur, 0.0), "args": args}


def _instant(name: str, tid: str, ts: float, cat: str, **args) -> dict:
    return {"name": name, "cat": cat, "ph": "i", "s": "t", "pid": 1, "tid": tid, "ts": ts, "args": args}


def replay_events(ev: Recorder, s, template, results: list, times: tuple) -> None:
    """The trace events of a realize replayed from a plan template (engine/templates.py): drawn as its
    prototype run (the template's planned batches, with prototype buffer ids), with this run's device-side
    kernel times and CUDA graph replays."""
    sched = template.schedule
    shown = []
    for batches, res in zip(sched.steps, results):
        step = {}
        for dev, cmds in batches.items():
            r = res.get(dev)
            if r is not None:
                step[dev] = BatchResult(tuple(Done(i) for i in range(len(cmds))), r.incarnation, r.bytes_in_use,
                                        r.kernel_seconds, r.graphs)
        shown.append(step)
    realize_events(ev, s, sched, shown, times, replayed=True)


def realize_events(ev: Recorder, s, sched, results: list, times: tuple, replayed: bool = False) -> None:
    """Append the trace events of one realize of session `s` to `ev`: driver phases, then every command of
    every worker."""
    t0, t1, t2, t3 = times
    ev.append(_x("realize", DRIVER, t0, t3 - t0, "driver", kernels=len(sched.placements), steps=len(sched.steps),
                 transfers=len(sched.transfers), estimated_us=round(sched.estimated_seconds * 1e6, 3),
                 replayed=replayed))
    phases = getattr(s, "plan_phases", None)  # (kernelize start, render start, schedule start, end)
    if replayed:  # no kernelize, render or schedule: the template's lookup and binding
        ev.append(_x("replay plan template", DRIVER, t0, t1 - t0, "driver"))
    elif phases and t0 <= phases[0] and phases[-1] <= t1:
        for name, a, b in zip(("kernelize", "render", "schedule"), phases, phases[1:]):
            ev.append(_x(name, DRIVER, a, b - a, "driver"))
    else:
        ev.append(_x("plan", DRIVER, t0, t1 - t0, "driver"))
    ev.append(_x("dispatch", DRIVER, t1, t2 - t1, "driver", steps=len(sched.steps)))
    ev.append(_x("finish", DRIVER, t2, t3 - t2, "driver"))

    transfers = {t.id: t for t in sched.transfers}
    buffers = {**s.state.buffers, **sched.state.buffers}
    exported: dict[int, float] = {}
    step_start = t1
    for step, (batches, res) in enumerate(zip(sched.steps, results)):
        step_start = max([step_start, *(ev.device_end.get(d, t1) for d in batches)])
        ends = []
        for dev, cmds in batches.items():
            r = res.get(dev)
            if r is None:
                continue
            t = step_start
            kernels = iter([p for p in sched.placements if p.device == dev and p.step == step])
            seconds = iter(r.kernel_seconds)
            graphs = {first: (n, secs) for first, n, secs in r.graphs}  # launches replayed as one CUDA graph
            launch, graph_end = 0, -1
            for cmd, _out in zip(cmds, r.results):
                if isinstance(cmd, Launch):
                    if launch in graphs:
                        n, total = graphs[launch]
                        graph_end = launch + n
                        ev.append(_x(f"cuda graph replay ({n} kernels)", dev, t, total, "graph", step=step,
                                     launches=n, device_us=round(total * 1e6, 3)))
                    p, secs = next(kernels, None), next(seconds, 0.0)
                    name = p.kernel if p is not None else f"program {cmd.prog}"
                    ev.append(_x(name, dev, t, secs, "kernel", step=step, device_us=round(secs * 1e6, 3),
                                 reason=p.reason if p else "", estimated_us=round(p.seconds * 1e6, 3) if p else None,
                                 cuda_graph=launch < graph_end))
                    launch += 1
                    t += secs
                elif isinstance(cmd, Alloc):
                    ev.append(_instant("alloc", dev, t, "memory", buf=cmd.buf, bytes=cmd.nbytes))
                elif isinstance(cmd, Free):
                    ev.append(_instant("free", dev, t, "memory", buf=cmd.buf))
                elif isinstance(cmd, (Spill, Reload)):
                    b = buffers.get(cmd.buf)
                    ev.append(_instant("spill" if isinstance(cmd, Spill) else "reload", dev, t, "memory",
                                       buf=cmd.buf, bytes=b.nbytes if b is not None else None))
                elif isinstance(cmd, CopyIn) and isinstance(cmd.data, TransferRef):
                    tr = transfers.get(cmd.data.id)
                    if tr is None:
                        continue
                    start = max(t, exported.get(tr.id, t))
                    dur = s.state.link_seconds(tr.src, tr.dst, tr.nbytes)
                    ev.append(_x(f"transfer {tr.src} -> {tr.dst}", dev, start, dur, "transfer", id=tr.id,
                                 src=tr.src, dst=tr.dst, bytes=tr.nbytes, estimated_us=round(dur * 1e6, 3)))
                    ev.append({"name": "transfer", "cat": "transfer", "ph": "f", "bp": "e", "id": tr.id, "pid": 1,
                               "tid": dev, "ts": start})
                    t = start + dur
                elif isinstance(cmd, CopyIn):
                    ev.append(_instant("upload", dev, t, "transfer", buf=cmd.buf,
                                       bytes=int(getattr(cmd.data, "nbytes", 0))))
                elif isinstance(cmd, CopyOut) and cmd.export:
                    tr = transfers.get(cmd.export)
                    nbytes = tr.nbytes if tr else None
                    ev.append(_instant("export", dev, t, "transfer", buf=cmd.buf, id=cmd.export, bytes=nbytes,
                                       dst=tr.dst if tr else None))
                    ev.append({"name": "transfer", "cat": "transfer", "ph": "s", "id": cmd.export, "pid": 1,
                               "tid": dev, "ts": t})
                    exported[cmd.export] = t
                elif isinstance(cmd, Compile):
                    ev.append(_instant("compile", dev, t, "kernel", program=cmd.name))
            ev.device_end[dev] = t
            ev.append({"name": f"bytes in use {dev}", "ph": "C", "pid": 1, "ts": t, "args": {"bytes": r.bytes_in_use}})
            ends.append(t)
        step_start = max([step_start, *ends])


def write_trace(path: str | os.PathLike, events: list[dict], devices: list[str], start: float) -> None:
    """Chrome trace JSON (what Perfetto and chrome://tracing open): one thread track for the driver and one per
    device, timestamps in microseconds from `start`."""
    tids = {DRIVER: 0, **{d: i + 1 for i, d in enumerate(devices)}}
    for e in events:
        if "tid" in e and e["tid"] not in tids:
            tids[e["tid"]] = len(tids)
    out = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "zyx_dist"}}]
    for name, tid in tids.items():
        out.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
    for e in sorted(events, key=lambda e: e["ts"]):
        e = dict(e, ts=round((e["ts"] - start) * 1e6, 3))
        if "tid" in e:
            e["tid"] = tids[e["tid"]]
        else:
            e["tid"] = 0
        if "dur" in e:
            e["dur"] = round(e["dur"] * 1e6, 3)
        out.append(e)
    with open(path, "w") as f:
        json.dump({"traceEvents": out, "displayTimeUnit": "ms",
                   "otherData": {"producer": "zyx_dist", "devices": list(devices)}}, f)


@contextmanager
def trace(path: str | os.PathLike) -> Iterator[None]:
    """Record every realize (driver phases; kernels with device-side durations, transfers with bytes, allocations,
    frees and spills on each device) and every read back, then write Chrome/Perfetto trace JSON to `path`."""
    with open(path, "w", encoding="utf-8"):  # a path that cannot be written fails here, before the block runs
        pass
    s = _session.current()
    events = Recorder()
    outer, outer_read = s.trace_events, s.__dict__.get("read")  # (a trace inside another: the outer's, restored)
    s.trace_events = events
    workers = getattr(s.backend, "workers", {})  # in-process workers; Ray actors always time their kernels
    profile = {name: w.profile for name, w in workers.items()}
    for w in workers.values():
        w.profile = True
    time_replays = getattr(s.backend, "time_replays", None)  # in-process replays are untimed otherwise
    if time_replays is not None:
        s.backend.time_replays = True
    read = s.read

    def traced_read(node):
        t = time.perf_counter()
        out = read(node)
        nbytes = int(getattr(out, "nbytes", 0))
        device = node.buffer.device if node.buffer is not None else None
        events.append(_x("read", DRIVER, t, time.perf_counter() - t, "transfer", bytes=nbytes, device=device,
                         shape=list(getattr(out, "shape", ()))))
        return out

    s.read = traced_read  # this session object only, until the trace ends
    start = time.perf_counter()
    try:
        yield
    finally:
        s.trace_events = outer
        if outer_read is None:
            s.__dict__.pop("read", None)
        else:
            s.read = outer_read
        if outer is not None:  # the outer trace covers this one's time too
            outer.extend(events)
        for name, w in workers.items():
            w.profile = profile[name]
        if time_replays is not None:
            s.backend.time_replays = time_replays
        write_trace(path, events, list(s.device_names), start)
