"""Both sides: small helpers with no home stage. The on-disk caches' file handling (the probe's peaks, the
autotuner's winners): a path and plain data in, the data back, or None when the file is missing or damaged.
Files are JSON, never pickle, so a cache file cannot run code; they are written whole and renamed into place,
so a reader never sees half a file, and a read-only or missing directory only costs a new measurement. And
`debug_flags`, the ZYX_DIST_DEBUG bitmask as every module of either side reads it (one parser). And
`bucket_size`, the size classes of a worker's memory pool, which the driver's scheduler and tuner mirror
when they count device memory: one rule, so both sides round every buffer alike.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def parse_debug(text: str) -> int:
    """ZYX_DIST_DEBUG's value: an integer in any Python base (`6`, `0x2`, `0b110`); ValueError otherwise."""
    text = text.strip()
    if not text:
        return 0
    try:
        value = int(text, 0)
    except ValueError:
        value = int(text)  # decimal with leading zeros ("010"), which base 0 refuses
    if value < 0:
        raise ValueError(f"{text!r} is negative")
    return value


def debug_flags() -> int:
    """The ZYX_DIST_DEBUG bits of this process's environment (0 when unset or not a number)."""
    try:
        return parse_debug(os.environ.get("ZYX_DIST_DEBUG", ""))
    except ValueError:
        return 0


SMALL = 4096  # up to here buckets are 256-byte multiples
SMALL_STEP = 256
STEPS_PER_OCTAVE = 8  # above SMALL: 8 buckets per power of two, so rounding wastes at most 12.5%


@functools.lru_cache(maxsize=4096)  # the driver's planner asks several times per kernel, for few sizes
def bucket_size(nbytes: int) -> int:
    """The bytes a worker's pool actually reserves for a request of `nbytes` (0 bytes still takes one small
    bucket)."""
    n = max(int(nbytes), 1)
    if n <= SMALL:
        return -(-n // SMALL_STEP) * SMALL_STEP
    step = max(SMALL, (1 << (n - 1).bit_length()) // STEPS_PER_OCTAVE)  # next power of two / 8
    return -(-n // step) * step
