"""Driver side: the on-disk caches' file handling (the probe's peaks, the autotuner's winners). Takes a
path and plain data; gives the data back, or None when the file is missing or damaged. Files are JSON,
never pickle, so a cache file cannot run code; they are written whole and renamed into place, so a
reader never sees half a file, and a read-only or missing directory only costs a new measurement.
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
