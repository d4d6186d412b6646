"""Driver side: honest benchmark records, shared by `zyx-dist bench` and the scripts in benchmarks/. Takes the
seconds of each timed round of a case and where it ran; gives the spread every result row carries (rounds,
min, median, quartiles, IQR, in milliseconds), the environment a figure means nothing without (the commit,
the versions of the packages that were present, the machine, each device with its driver), and the
comparison of two runs on their medians with a limit that grows with the measured noise: a case counts as a
regression only when its median got worse by more than the threshold and by more than k IQRs of either run.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

# distributions whose versions go into every row when installed (cupy under any of its wheel names)
PACKAGES = ("numpy", "pyopencl", "pocl-binary-distribution", "ray", "cupy", "torch", "platformdirs")
_CUPY_DISTS = ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy")
STAT_KEYS = ("rounds", "min_ms", "median_ms", "q1_ms", "q3_ms", "iqr_ms", "max_ms")
NOISE_IQR = 2.0  # the default k of the comparison (see `regression`)


def time_rounds(fn: Callable[[], Any], warmup: int, repeats: int) -> list[float]:
    """Seconds of each of `repeats` timed calls of `fn`, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def summary(seconds: Sequence[float]) -> dict[str, Any]:
    """Rounds, min, median, first and third quartile, IQR and max of timed rounds, in milliseconds (rounded to
    0.1 us). Quartiles are those of the inclusive method (a single round has an IQR of 0)."""
    if not seconds:
        raise ValueError("no timed rounds")
    ms = sorted(s * 1e3 for s in seconds)
    q1, q3 = statistics.quantiles(ms, n=4, method="inclusive")[::2] if len(ms) > 1 else (ms[0], ms[0])
    out = {"rounds": len(ms), "min_ms": ms[0], "median_ms": statistics.median(ms), "q1_ms": q1, "q3_ms": q3,
           "iqr_ms": q3 - q1, "max_ms": ms[-1]}
    return {k: (v if k == "rounds" else round(v, 4)) for k, v in out.items()}


def rate_of(work: float, ms: float) -> float:
    """GB/s or GFLOP/s of `work` bytes or flops done in `ms` milliseconds."""
    return work / (ms * 1e-3) / 1e9 if ms > 0 else float("inf")


# ---- the environment ---------------------------------------------------------------------------------------


def git_commit(root: str | os.PathLike | None = None) -> str | None:
    """The commit of the checkout zyx_dist runs from, with "+dirty" when tracked files differ from it; the
    ZYX_DIST_COMMIT environment variable when set (a copy without .git, e.g. on the GPU machine); None when
    neither is known."""
    env = os.environ.get("ZYX_DIST_COMMIT", "").strip()
    if env:
        return env
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def package_versions() -> dict[str, str]:
    """Python's version and those of the PACKAGES installed here (absent ones are left out); no import."""
    out = {"python": platform.python_version()}
    for name in ("zyx_dist", *PACKAGES):
        for dist in (_CUPY_DISTS if name == "cupy" else (name,)):
            try:
                out[name if name != "cupy" else dist] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def host() -> dict[str, Any]:
    return {"machine": platform.node() or "unknown", "cpu": cpu_model(), "cores": os.cpu_count() or 0,
            "os": platform.platform()}


def session_devices(session: Any = None) -> list[dict[str, Any]]:
    """Each device of a running session (the current one by default): name, backend, device model, vendor,
    driver version, node."""
    if session is None:
        from ..engine import session as zsession

        session = zsession._session
    if session is None:
        return []
    out = []
    for name in session.device_names:
        i = session.infos[name]
        out.append({"name": name, "backend": i.get("backend", ""), "device": i.get("device_name", ""),
                    "vendor": i.get("vendor", ""), "driver": str(i.get("driver_version", "")),
                    "node": str(i.get("node", ""))})
    return out


def environment() -> dict[str, Any]:
    """What every row of one run shares: date, commit, package versions, host."""
    h = host()
    return {"date": datetime.date.today().isoformat(), "machine": h["machine"], "commit": git_commit(),
            "versions": package_versions(), "host": h}


def row(env: dict[str, Any], system: str, workload: str, value: float, unit: str,
        rounds: Sequence[float] | None = None, hardware: Sequence[dict] | None = None, **extra: Any) -> dict[str, Any]:
    """One result row: the headline `value` (computed by the caller from the median round), the spread of the
    timed `rounds` (seconds), the devices it ran on (`hardware`: dicts of name, backend, device, driver) and
    the run's environment. Keys: date, machine, system, workload, value, unit, then rounds/min_ms/median_ms/
    q1_ms/q3_ms/iqr_ms/max_ms when rounds are given, `extra`, hardware, commit, versions, host."""
    out: dict[str, Any] = {"date": env["date"], "machine": env["machine"], "system": system, "workload": workload,
                           "value": round(float(value), 4), "unit": unit}
    if rounds is not None:
        out.update(summary(rounds))
    out.update(extra)
    if hardware is not None:
        out["hardware"] = list(hardware)
    out.update({"commit": env["commit"], "versions": env["versions"], "host": env["host"]})
    return out


# ---- comparing two runs ------------------------------------------------------------------------------------


def relative_iqr(r: dict) -> float:
    """A row's IQR as a fraction of its median (0 for a row without a spread, e.g. from an older file)."""
    iqr, median = r.get("iqr_ms"), r.get("median_ms")
    if not isinstance(iqr, (int, float)) or not isinstance(median, (int, float)) or median <= 0:
        return 0.0
    return max(0.0, float(iqr)) / float(median)


def noise_limit(spread: float, noise: float = NOISE_IQR) -> float:
    """The drop of a value, in percent, that a median `noise` IQRs slower shows, for a relative IQR `spread`:
    100 (1 - 1 / (1 + noise x spread)); about noise x spread x 100 for small spreads, and below 100 for any,
    so that a many-fold slowdown still exceeds it."""
    return 100 * (1 - 1 / (1 + noise * spread))


def regression(new: dict, old: dict, threshold: float, noise: float = NOISE_IQR) -> tuple[float, float, bool]:
    """(change %, limit %, regressed) of a case between an old and a new row of the same case. The change is
    that of the values (every unit is higher-is-better: negative is worse), on the medians when both rows
    have them, else on the best rounds (older files kept only the best). It is a regression when the drop
    exceeds the limit max(threshold, noise_limit(the larger relative IQR of the two rows)): the new median
    must be slower than the old one by more than the threshold and by more than `noise` IQRs, since a drop
    inside the rounds' own spread is noise, not a finding."""
    old_v, new_v = float(old["value"]), float(new["value"])
    if "median_ms" not in old and new.get("best_value") is not None:
        new_v = float(new["best_value"])  # an old best-of-N figure: compare like with like
    change = (new_v - old_v) / old_v * 100 if old_v else 0.0
    limit = max(threshold, noise_limit(max(relative_iqr(old), relative_iqr(new)), noise))
    return change, limit, -change > limit
