"""Both sides: small helpers with no home stage. The on-disk caches' file handling (the probe's peaks, the
autotuner's winners): a path and plain data in, the data back, or None when the file is missing or damaged.
Files are JSON, never pickle, so a cache file cannot run code; they are written whole and renamed into place,
so a reader never sees half a file, and a read-only or missing directory only costs a new measurement. And
`debug_flags`, the ZYX_DIST_DEBUG bitmask as every module of either side reads it (one parser).
"""

from __future__ import annotations

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
