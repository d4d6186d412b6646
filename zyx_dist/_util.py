"""Driver side: the on-disk caches' file handling (the probe's peaks, the autotuner's winners). Takes a
path and plain data, or a merge function; gives the data back, or None when the file is missing or
damaged. Files are JSON, never pickle, so a cache file cannot run code; they are written whole and renamed
into place, so a reader never sees half a file. Several processes share one cache directory (the workers of
a cluster, parallel test runs, two checkouts): `update_json` reads, merges and writes under an exclusive
`fcntl.flock` on a sibling lock file, so one process's new entries never overwrite another's. A read-only or
missing directory only costs a new measurement.
"""

from __future__ import annotations

import contextlib
import json
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
