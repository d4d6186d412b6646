"""Both sides: small helpers with no home stage. The on-disk caches' file handling (the probe's peaks, the
autotuner's winners): a path and plain data, or a merge function, in; the data back, or None when the file
is missing or damaged. Files are JSON, never pickle, so a cache file cannot run code; they are written whole
and renamed into place, so a reader never sees half a file. Several processes share one cache directory (the
workers of a cluster, parallel test runs, two checkouts): `update_json` reads, merges and writes under an
exclusive `fcntl.flock` on a sibling lock file, so one process's new entries never overwrite another's. A
read-only or missing directory only costs a new measurement. `gc_paused`, for the driver's walks over a
whole graph. And `bucket_size`, the size classes of a
worker's memory pool, which the driver's scheduler and tuner mirror when they count device memory: one rule,
so both sides round every buffer alike.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import operator
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no locks (the project targets Linux; writes stay atomic)
    fcntl = None  # type: ignore[assignment]


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass


def lock_path(path: Path) -> Path:
    """The lock file of a cache file: `NAME.lock` beside it (never replaced, so every process locks the same
    inode; the data file itself is replaced by each write)."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[bool]:
    """Hold an exclusive lock on `path`'s lock file for the block; yields False when no lock could be taken
    (no fcntl, a read-only or missing directory): the block then runs unlocked."""
    fd = None
    if fcntl is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield fd is not None
    finally:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def update_json(path: Path, merge: Callable[[Any], Any]) -> Any:
    """Read-modify-write of a shared cache file: under the lock, `merge(current)` (current is None when the
    file is missing or damaged) gives what is written; returns it."""
    with locked(path):
        data = merge(read_json(path))
        write_json(path, data)
    return data


SMALL = 4096  # up to here buckets are 256-byte multiples
SMALL_STEP = 256
STEPS_PER_OCTAVE = 8  # above SMALL: 8 buckets per power of two, so rounding wastes at most 12.5%


def picker(slots: tuple[int, ...]) -> Callable[[tuple], tuple]:
    """A function giving `tuple(ids[s] for s in slots)` (an itemgetter, so no Python frame: of a slice where there
    are fewer than 2 slots, which gives a list for a list, and does not raise for `ids` too short, which every caller
    has checked): how a plan template's slots become the buffer ids of one replay, on the driver
    (sched/template.py) and on the worker (runtime/replay.py)."""
    if not slots:
        return operator.itemgetter(slice(0, 0))
    if len(slots) == 1:
        (s,) = slots
        return operator.itemgetter(slice(s, s + 1))
    return operator.itemgetter(*slots)


@functools.lru_cache(maxsize=4096)  # the driver's planner asks several times per kernel, for few sizes
def bucket_size(nbytes: int) -> int:
    """The bytes a worker's pool actually reserves for a request of `nbytes` (0 bytes still takes one small
    bucket)."""
    n = max(int(nbytes), 1)
    if n <= SMALL:
        return -(-n // SMALL_STEP) * SMALL_STEP
    step = max(SMALL, (1 << (n - 1).bit_length()) // STEPS_PER_OCTAVE)  # next power of two / 8
    return -(-n // step) * step


class gc_paused:  # a lower-case name: used as `with gc_paused():`, like the contextlib function it was
    """No cyclic garbage collection inside: for the driver's passes over a whole graph, whose allocations
    (a row per node, then freed by reference counting) would otherwise start full collections that
    traverse every live node of a graph of 100,000 for nothing. Collection resumes (if it was on) after.
    A class rather than a generator context manager: it is entered on every realize and replay, and this
    costs a third as much."""

    __slots__ = ("enabled",)

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()
