"""Actor side (and the driver when it lists devices): makes OpenCL runtimes installed from the package index
visible to the OpenCL ICD loader. Intel's CPU runtime (`intel-opencl-rt`, a dependency on x86-64 Linux) ships an
ICD file that names a placeholder path, so the loader never finds it; PoCL's wheel is found by pyopencl's own
loader. `register_pip_runtimes()` runs once per process before the first platform query: it writes a folder
holding every ICD file the loader would read anyway (OCL_ICD_VENDORS, else OPENCL_VENDOR_PATH, else
/etc/OpenCL/vendors) plus one for each pip-installed runtime with its real library path, and points
OCL_ICD_VENDORS at it, so no other vendor's driver is hidden. Takes nothing; gives the folder (or None when
there was nothing to add). `ZYX_DIST_REGISTER_ICD=0` turns it off.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import tempfile
from pathlib import Path

# distribution name -> the ICD library it installs (relative paths inside the distribution's file list)
PIP_RUNTIMES = {"intel-opencl-rt": "libintelocl.so"}
SYSTEM_VENDORS = "/etc/OpenCL/vendors"

_registered: list[str | None] = []  # once per process: the folder handed to the loader, or None


def pip_runtime_libraries() -> dict[str, str]:
    """{distribution: absolute path of its ICD library} for the pip-installed OpenCL runtimes present."""
    out = {}
    for dist, lib in PIP_RUNTIMES.items():
        try:
            files = importlib.metadata.distribution(dist).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in files:
            if Path(str(f)).name == lib:
                path = Path(str(f.locate())).resolve()
                if path.is_file():
                    out[dist] = str(path)
                break
    return out


def loader_icd_files(environ: dict | None = None) -> list[Path]:
    """The ICD files the loader reads without our help: OCL_ICD_VENDORS (a folder or one .icd file), else
    OPENCL_VENDOR_PATH, else the system folder."""
    env = os.environ if environ is None else environ
    where = env.get("OCL_ICD_VENDORS") or env.get("OPENCL_VENDOR_PATH") or SYSTEM_VENDORS
    p = Path(where)
    if p.is_file():
        return [p]
    if p.is_dir():
        return sorted(f for f in p.iterdir() if f.suffix == ".icd" and f.is_file())
    return []


def _names_library(icd: Path, lib: str) -> bool:
    """Whether the ICD file names a working copy of `lib` (a bare name for the dynamic linker to find, or an
    absolute path that exists: the placeholder path of Intel's shipped ICD file does not count)."""
    try:
        named = Path(icd.read_text().strip())
    except OSError:
        return False
    return named.name.startswith(lib) and (not named.is_absolute() or named.is_file())


def icd_folder_contents(existing: list[Path], libraries: dict[str, str]) -> dict[str, str]:
    """{file name: content} of the folder for the loader: the existing ICD files as they are, then one per
    pip runtime that no existing file already names (a system-wide Intel runtime is not listed twice)."""
    out: dict[str, str] = {}
    for f in existing:
        try:
            out[f.name] = f.read_text()
        except OSError:
            continue
    for dist, path in sorted(libraries.items()):
        lib = Path(path).name
        if any(_names_library(f, lib) for f in existing):
            continue
        out[f"zyx-dist-{dist}.icd"] = path + "\n"
    return out


def _cache_root() -> Path:
    from ..config import default_cache_dir  # the user cache dir of platformdirs, as autotune.cache_dir's default

    return Path(default_cache_dir()) / "opencl-icd"


def _write_folder(contents: dict[str, str]) -> Path:
    """A folder holding `contents`, named by their hash (so concurrent processes agree and share it)."""
    digest = hashlib.sha256(repr(sorted(contents.items())).encode()).hexdigest()[:16]
    for root in (_cache_root(), Path(tempfile.gettempdir()) / f"zyx_dist-{os.getuid()}" / "opencl-icd"):
        folder = root / digest
        try:
            if all((folder / n).is_file() and (folder / n).read_text() == c for n, c in contents.items()):
                return folder
            root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=root, prefix=".new-"))
            for name, content in contents.items():
                (tmp / name).write_text(content)
            try:
                os.replace(tmp, folder)
            except OSError:  # another process made it first: theirs has the same contents
                for f in tmp.iterdir():
                    f.unlink()
                tmp.rmdir()
            return folder
        except OSError:
            continue
    raise OSError("no writable folder for the OpenCL ICD list (tried the user cache and the temp folder)")


def register_pip_runtimes() -> str | None:
    """Point the ICD loader at a folder that adds the pip-installed runtimes to what it reads anyway; once per
    process, before the first platform query. Returns the folder, or None when nothing needed adding."""
    if _registered:
        return _registered[0]
    folder = None
    if os.environ.get("ZYX_DIST_REGISTER_ICD", "1").strip().lower() not in ("0", "false", "off", "no"):
        libraries = pip_runtime_libraries()
        existing = loader_icd_files()
        contents = icd_folder_contents(existing, libraries)
        if len(contents) > len(existing):  # something to add
            try:
                folder = str(_write_folder(contents))
            except OSError:
                folder = None
            if folder is not None:
                os.environ["OCL_ICD_VENDORS"] = folder
    _registered.append(folder)
    return folder
