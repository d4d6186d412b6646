"""Driver side: the autotuner. Takes a kernel, the device model it will run on (a `Target`: dialect,
device type, driver) and a function that runs a timed batch on one worker of that model; gives the
kernel's program, rendered with the chosen `KernelOpts`. The candidates come from `codegen.options` in
its order of preference; the first `autotune.budget` of them are compiled (all of a plan's in one `build_all`,
which a worker with a thread-safe compiler builds side by side) and launched on scratch buffers (never a user's tensor), timed by
device-side timers, and the fastest wins (a candidate whose first launch is far slower than the best so far is not
launched again). Trials are not user kernels: they go
through `run_timed`, outside `zd.stats()["kernels_launched"]`. Winners are kept in memory and on disk
as JSON under `autotune.cache_dir`, one file per device model and driver version, keyed by a hash of
the cache format, the renderer's version (a digest of the codegen sources, so a renderer change never
reuses a winner timed on other code) and the kernel's structure, so a second process launches the winner
at once. Several processes may tune at once: a save merges into the file under its lock. Kernels too short
to repay their trials, and searches that could time nothing, keep the first candidate, unremembered.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .. import logs
from .._util import bucket_size, read_json, update_json
from ..fuse.kernelize import Kernel
from ..protocol import Alloc, BatchResult, Build, Compile, Done, Free, Launch, Sync
from . import options as codegen_options
from .kernel_ops import kernel_ops
from .options import KernelOpts
from .program import Program, kernel_key
from .render import facts, render_kernel

MIN_SECONDS = 2e-4  # kernels estimated shorter than this are not timed: the trials would cost more than they win
TRIALS = 3  # launches per candidate; the fastest counts (the first may pay for a cold cache)
CUTOFF = 3.0  # a candidate whose first launch is this many times the best so far gets no more trials
AUTOTUNE_FORMAT = 3  # of autotune-v<N>-*.json and its keys; bump when either changes meaning
MAX_ENTRIES = 4096  # per file; beyond it the oldest winners of other renderer versions go first


@dataclass(frozen=True)
class Target:
    """One device model: programs tuned on one of its devices serve every device of the model."""

    key: str  # backend | device name | vendor | driver version
    dialect: str
    gpu: bool
    max_lws: int
    device: str  # the worker that times the candidates
    gflops: float
    gbps: float
    interpreted: bool = False  # a device that runs the kernel's op list, not its source: nothing to tune

    @staticmethod
    def dialect_of(backend: str, compute_capability: str = "") -> tuple[str, bool]:
        """(dialect, interpreted) of a worker's backend: the reference device runs op lists, and its
        programs carry OpenCL C beside them for `zd.explain` and the debug output; a CUDA device of compute
        capability 9.0 gets the dialect with wgmma GEMMs, unless ZYX_DIST_WGMMA is 0/false/off."""
        if backend == "reference":
            return "opencl", True
        if backend == "cuda" and compute_capability == "9.0" and os.environ.get(
                "ZYX_DIST_WGMMA", "1").strip().lower() not in ("0", "false", "off"):
            return "cuda_sm90a", False
        return backend, False


@functools.lru_cache(maxsize=1)
def renderer_version() -> str:
    """A digest of the code that turns a kernel and its options into source: every module of this package but
    the tuner itself. Any change to it gives a new version, so winners timed on other code are not reused."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha1()
    try:
        for path in sorted(here.glob("*.py")):
            if path.name not in ("autotune.py", "__init__.py"):
                digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:  # sources not readable (a frozen install): the package version stands in
        from importlib import metadata

        try:
            digest.update(metadata.version("zyx_dist").encode())
        except metadata.PackageNotFoundError:
            digest.update(b"unknown")
    return digest.hexdigest()[:12]


def kernel_hash(kernel: Kernel) -> str:
    """The cache key of a kernel's winner: format, renderer version and the kernel's structure."""
    text = f"{AUTOTUNE_FORMAT}|{renderer_version()}|{kernel_key(kernel)!r}"
    return hashlib.sha1(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class _Search:
    """A kernel's options to time (`timed`) or its one choice, with the program of each."""

    opts: tuple[KernelOpts, ...]
    programs: tuple[Program, ...]
    timed: bool


class Tuner:
    def __init__(self, enabled: bool, budget: int, cache_dir: str | None) -> None:
        self.enabled, self.budget = enabled, budget
        self.cache_dir = Path(os.path.expanduser(cache_dir)) if cache_dir else None
        self.chosen: dict[tuple[str, str], KernelOpts] = {}  # (target key, kernel hash) -> options
        self.disk: dict[str, dict] = {}  # target key -> the file's entries
        self.trials = 0  # candidates timed (for tests and debug output)
        self._searches: dict[tuple[str, str], _Search] = {}  # kernels build_all saw, until program takes them

    def program(self, kernel: Kernel, target: Target, run: Callable[[list], BatchResult] | None,
                free_bytes: int, new_id: Callable[[], int]) -> Program:
        """`kernel` rendered for `target` with its tuned options (tuned now if it is new and worth it; `run`
        None means: do not time anything now). An interpreting target's program carries the op list."""
        if target.interpreted:
            return dataclasses.replace(render_kernel(kernel, target.dialect, None, target.gpu), ops=kernel_ops(kernel))
        return self._choose(kernel, target, run, free_bytes, new_id)[1]

    def build_all(self, kernels: list[Kernel], target: Target, run: Callable[[list], BatchResult] | None,
                  free_bytes: int) -> None:
        """Build every program that `program` will compile or time for `kernels` on `target` in one `Build` to
        the worker that times them: where its compiler runs on several threads, a plan's programs (every
        candidate of every kernel to tune, and the chosen program of the others) compile side by side, in about
        the time of the slowest, before the candidates are timed one kernel after another."""
        if target.interpreted or run is None:
            return
        if len(self._searches) > MAX_ENTRIES:  # searches started and never finished (a plan that failed)
            self._searches.clear()
        sources: dict[str, None] = {}
        for kernel in kernels:
            h = kernel_hash(kernel)
            search = self._searches.get((target.key, h)) or self._search(kernel, h, target, True, free_bytes)
            self._searches[(target.key, h)] = search
            sources.update(dict.fromkeys(p.source for p in search.programs))
        try:
            run([Build(tuple(sources))])
        except Exception as e:  # noqa: BLE001 -- only a hint; a lost worker is found by the realize that follows
            logs.emit("autotune", f"zyx_dist: builds on {target.device} not run: {type(e).__name__}: {e}")

    def _search(self, kernel: Kernel, h: str, target: Target, can_time: bool, free_bytes: int) -> _Search:
        """What `program` does for a kernel: its remembered winner, or its candidates to time (rendered), or the
        cost model's first choice when timing would not pay (or `can_time` is false)."""
        opts = self.chosen.get((target.key, h))
        if opts is None:
            stored = self._entries(target).get(h)
            opts = _opts(stored.get("opts")) if isinstance(stored, dict) else None
            if opts is not None and max(opts.lws, opts.group) > target.max_lws:
                opts = None
        if opts is not None:
            self.chosen[(target.key, h)] = opts
            return _Search((opts,), (render_kernel(kernel, target.dialect, opts, target.gpu),), False)
        cands = codegen_options.candidates(facts(kernel, target.dialect, target.gpu, target.max_lws))
        first = render_kernel(kernel, target.dialect, cands[0], target.gpu)
        estimate = max(first.bytes / (target.gbps * 1e9), first.flops / (target.gflops * 1e9))
        scratch = sum(bucket_size(max(n.size * n.dtype.itemsize, 1)) for n in kernel.inputs + kernel.outputs)
        if (not self.enabled or not can_time or len(cands) == 1 or estimate < MIN_SECONDS
                or scratch > free_bytes // 2):
            return _Search((cands[0],), (first,), False)  # not remembered: a later call with time to spare may tune
        cands = cands[: self.budget]
        return _Search(tuple(cands), (first, *(render_kernel(kernel, target.dialect, o, target.gpu) for o in cands[1:])),
                       True)

    def _choose(self, kernel: Kernel, target: Target, run: Callable[[list], BatchResult] | None,
                free_bytes: int, new_id: Callable[[], int]) -> tuple[KernelOpts, Program]:
        h = kernel_hash(kernel)
        search = self._searches.pop((target.key, h), None)
        if search is None or (search.timed and run is None):
            search = self._search(kernel, h, target, run is not None, free_bytes)
        if not search.timed:
            return search.opts[0], search.programs[0]
        try:
            won = self._time(kernel, target, run, new_id, search)
        except Exception as e:  # noqa: BLE001 -- e.g. the worker was lost: the realize that follows finds out
            logs.emit("autotune", f"zyx_dist: autotune of {search.programs[0].name} on {target.device} stopped: "
                                  f"{type(e).__name__}: {e}")
            won = None
        if won is None:  # nothing timed: the default, not remembered
            return search.opts[0], search.programs[0]
        self.chosen[(target.key, h)] = won[0]
        self._save(target, h, won[0])
        return won

    def _time(self, kernel: Kernel, target: Target, run: Callable[[list], BatchResult], new_id: Callable[[], int],
              search: _Search) -> tuple[KernelOpts, Program] | None:
        """The fastest candidate and its program; None when nothing could be timed."""
        bufs = [new_id() for _ in kernel.inputs + kernel.outputs]
        sizes = [max(n.size * n.dtype.itemsize, 1) for n in kernel.inputs + kernel.outputs]
        reads = tuple(bufs[: len(kernel.inputs)])
        writes = tuple(bufs[len(kernel.inputs):])
        times: list[tuple[float, int, KernelOpts, Program]] = []
        res = run([Alloc(b, n) for b, n in zip(bufs, sizes)])
        try:
            if not all(isinstance(r, Done) for r in res.results):
                return None  # no room for the scratch buffers after all
            best = float("inf")
            for opts, prog in zip(search.opts, search.programs):
                pid = new_id()
                launch = Launch(pid, tuple(bufs), prog.gws, prog.lws, reads, writes)
                # one launch first: a candidate already CUTOFF times slower than the best so far is not launched
                # again (a bad variant on a CPU can take a thousand times the estimate; its trials dominated)
                ok, seconds = _timed(run([Compile(pid, prog.source, prog.name), launch, Sync()]), 1)
                if ok and seconds[0] <= CUTOFF * best:
                    ok, more = _timed(run([*[launch] * (TRIALS - 1), Sync()]), TRIALS - 1)
                    seconds += more
                self.trials += 1
                secs = min(seconds) if ok else float("inf")
                best = min(best, secs)
                times.append((secs, len(times), opts, prog))
                if logs.enabled("autotune"):
                    shown = f"{secs * 1e6:9.1f} us" if ok else "   failed"
                    logs.emit("autotune", f"zyx_dist: autotune {prog.name} on {target.device}: {opts.tag()} {shown}")
        finally:
            run([Free(b) for b in bufs])
        secs, _, best_opts, prog = min(times, key=lambda t: (t[0], t[1]))
        if secs == float("inf"):
            return None
        logs.emit("autotune", f"zyx_dist: autotune winner {best_opts.tag()} ({secs * 1e6:.1f} us) of {len(times)} "
                              "candidates")
        return best_opts, prog

    # ---- the disk cache: one JSON file per device model, never code ----------------------------------------

    def _file(self, target: Target) -> Path | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / f"autotune-v{AUTOTUNE_FORMAT}-{hashlib.sha1(target.key.encode()).hexdigest()[:16]}.json"

    def _entries(self, target: Target) -> dict:
        if target.key not in self.disk:
            path = self._file(target)
            self.disk[target.key] = _kernels_of(read_json(path) if path is not None else None, target.key)
        return self.disk[target.key]

    def _save(self, target: Target, h: str, opts: KernelOpts) -> None:
        entry = {"opts": asdict(opts), "renderer": renderer_version(), "saved": round(time.time(), 3)}
        self._entries(target)[h] = entry
        path = self._file(target)
        if path is None:
            return

        def merge(current: object) -> dict:  # what other processes saved since we read the file stays
            kernels = _kernels_of(current, target.key)
            kernels[h] = entry
            if len(kernels) > MAX_ENTRIES:
                mine = renderer_version()
                order = sorted(kernels, key=lambda k: (kernels[k].get("renderer") == mine, kernels[k].get("saved", 0)))
                for k in order[: len(kernels) - MAX_ENTRIES]:
                    del kernels[k]
            return {"format": AUTOTUNE_FORMAT, "device": target.key, "kernels": kernels}

        self.disk[target.key] = update_json(path, merge)["kernels"]


def _timed(res: BatchResult, launches: int) -> tuple[bool, tuple[float, ...]]:
    """Whether every command of a trial batch ran and timed its `launches` launches, and their seconds."""
    ok = all(isinstance(r, Done) for r in res.results) and len(res.kernel_seconds) == launches
    return ok, res.kernel_seconds


def _kernels_of(data: object, device: str) -> dict:
    """The entries of an autotune file of this format and device model whose options this version reads;
    {} for a missing, damaged or foreign file (tune again)."""
    if not (isinstance(data, dict) and data.get("format") == AUTOTUNE_FORMAT and data.get("device") == device
            and isinstance(data.get("kernels"), dict)):
        return {}
    return {h: e for h, e in data["kernels"].items()
            if isinstance(h, str) and isinstance(e, dict) and _opts(e.get("opts")) is not None}


def _opts(data: object) -> KernelOpts | None:
    """Options read back from disk, when they are what this version writes (else tune again)."""
    names = {f.name for f in fields(KernelOpts)}
    if not isinstance(data, dict) or set(data) != names or not all(type(v) is int and v >= 0 for v in data.values()):
        return None
    opts = KernelOpts(**data)
    return opts if opts.lws > 0 and opts.vec in (1, 4) and opts.elems >= 1 and opts.tile_k in (8, 16, 32) \
        and opts.prefetch in (0, 1) and opts.cache in (0, 1) \
        and opts.lanes in (0, 4, 8) and opts.tile <= codegen_options.PLAIN_GEMM and opts.stages in (0, 3, 4, 5) \
        and opts.cpu_rows in (0, 4, 8) else None
