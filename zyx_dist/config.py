"""Driver side: reads the configuration of API.md section 9. `load_config` takes a YAML file path, a
dict with the same keys, or None (defaults, or the file named by `ZYX_DIST_CONFIG`), applies the
`ZYX_DIST_DEVICES` and `ZYX_DIST_DEBUG` environment overrides, and gives back a validated, frozen
`Config`; any unknown key or bad value raises `ConfigError` with a one-line message naming the
dotted key and what is allowed. Files are read with yaml's safe loader only (a key given twice refused)."""

from __future__ import annotations

import copy
import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import yaml
from platformdirs import user_cache_dir

from .errors import ConfigError, DeviceError
from .logs import parse_debug

__all__ = [
    "BENCHMARK_BASELINES",
    "BENCHMARK_DTYPES",
    "BENCHMARK_WORKLOADS",
    "POLICIES",
    "AutotuneConfig",
    "BenchmarkConfig",
    "Config",
    "RayConfig",
    "SchedulerConfig",
    "WorkloadConfig",
    "default_cache_dir",
    "load_config",
    "parse_devices",
    "parse_devices_string",
    "parse_size",
]

POLICIES = ("heft", "round_robin", "single")
# The workloads of `zyx-dist bench` (zyx_dist/bench.py holds what each computes; a unit test keeps the two
# lists equal), the dtypes they take and the baselines that can run beside them.
BENCHMARK_WORKLOADS = ("ew_chain", "softmax", "layernorm", "sum", "matmul", "mlp", "attention", "branches")
BENCHMARK_DTYPES = ("float32", "float16", "float64")
BENCHMARK_BASELINES = ("numpy", "cupy", "torch")


def default_cache_dir() -> str:
    """The user's cache directory for zyx_dist as the platform defines it, read when asked (never at import):
    on Linux `$XDG_CACHE_HOME/zyx_dist`, or `~/.cache/zyx_dist` when XDG_CACHE_HOME is unset."""
    return user_cache_dir("zyx_dist", appauthor=False)


# `reference:N` is the NumPy test and debugging device (runtime/reference.py): accepted when named, never
# chosen by `auto` nor offered in messages
DEVICE_NAME = re.compile(r"^(cuda|opencl|reference):(\d+)$")
DEVICE_COUNT_KEYS = ("opencl-cpu", "platform")
_DEVICES_HELP = ("use 'auto', a list such as ['cuda:0', 'opencl:1'], or {'opencl-cpu': N} with N >= 1 "
                 "(and optionally 'platform': 'intel', 'pocl' or part of an OpenCL platform name)")
_SIZE_HELP = "use bytes or e.g. '512MiB', '2GiB', '1.5GB'"
_SIZE_UNITS = {
    "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}  # fmt: skip
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-z]*)\s*$", re.IGNORECASE)

# "auto", a tuple of device names, or {"opencl-cpu": N} (with an optional "platform": str).
Devices = str | tuple | dict


@dataclass(frozen=True)
class SchedulerConfig:
    policy: str = "heft"  # one of POLICIES


@dataclass(frozen=True)
class AutotuneConfig:
    enabled: bool = True
    budget: int = 20  # candidate variants timed per new kernel
    cache_dir: str = field(default_factory=default_cache_dir)  # expanded


@dataclass(frozen=True)
class RayConfig:
    address: str | None = None  # as zd.init(address=...)
    namespace: str = "zyx_dist"
    max_restarts: int = 3  # worker restarts before WorkerLostError


@dataclass(frozen=True)
class WorkloadConfig:
    name: str  # one of BENCHMARK_WORKLOADS
    sizes: tuple[int, ...]  # the size parameter of the workload (see configs/README.md), each >= 1
    dtypes: tuple[str, ...] = ("float32",)  # each one of BENCHMARK_DTYPES


@dataclass(frozen=True)
class BenchmarkConfig:
    """The `benchmark:` section of a config (schema in configs/README.md)."""

    workloads: tuple[WorkloadConfig, ...]
    warmup: int = 1  # untimed runs per case before timing (compiles kernels, fills caches)
    repeats: int = 5  # timed runs per case; the best one is reported
    ray: bool = False  # run the workers as Ray actors (join ray.address / RAY_ADDRESS or start Ray)
    baselines: tuple[str, ...] = ("numpy",)  # default for `zyx-dist bench --baseline`
    check: bool = True  # compare each workload's result with NumPy before timing it

    def to_dict(self) -> dict[str, Any]:
        return {
            "workloads": [{"name": w.name, "sizes": list(w.sizes), "dtypes": list(w.dtypes)} for w in self.workloads],
            "warmup": self.warmup,
            "repeats": self.repeats,
            "ray": self.ray,
            "baselines": list(self.baselines),
            "check": self.check,
        }


@dataclass(frozen=True)
class Config:
    """The validated configuration. `devices` is "auto", a tuple of names like ("cuda:0", "opencl:1"),
    or {"opencl-cpu": N}; `memory_limit` is a per-device byte cap or None (90% of free memory);
    `benchmark` is the validated `benchmark:` section (used by `zyx-dist bench`) or None."""

    devices: Devices = "auto"
    memory_limit: int | None = None
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    autotune: AutotuneConfig = field(default_factory=AutotuneConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    debug: int = 0
    benchmark: BenchmarkConfig | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict with the keys of the YAML file; `load_config(c.to_dict()) == c`."""
        devices = list(self.devices) if isinstance(self.devices, tuple) else copy.deepcopy(self.devices)
        out: dict[str, Any] = {
            "devices": devices,
            "memory_limit": self.memory_limit,
            "scheduler": {"policy": self.scheduler.policy},
            "autotune": {
                "enabled": self.autotune.enabled,
                "budget": self.autotune.budget,
                "cache_dir": self.autotune.cache_dir,
            },
            "ray": {
                "address": self.ray.address,
                "namespace": self.ray.namespace,
                "max_restarts": self.ray.max_restarts,
            },
            "debug": self.debug,
        }
        if self.benchmark is not None:
            out["benchmark"] = self.benchmark.to_dict()
        return out


_TOP_KEYS = ("devices", "memory_limit", "scheduler", "autotune", "ray", "debug", "benchmark")
_SECTION_KEYS = {
    "scheduler": ("policy",),
    "autotune": ("enabled", "budget", "cache_dir"),
    "ray": ("address", "namespace", "max_restarts"),
    "benchmark": ("workloads", "warmup", "repeats", "ray", "baselines", "check"),
}
_WORKLOAD_KEYS = ("name", "sizes", "dtypes")


# ---------------------------------------------------------------------------------------------- helpers


def _show(value: Any) -> str:
    """A short one-line repr of a user value for error messages."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _dotted(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _check_keys(data: Mapping, allowed: tuple[str, ...], prefix: str) -> None:
    for key in data:
        if key in allowed:
            continue
        name = _dotted(prefix, key)
        msg = f"unknown key {name!r} (allowed: {', '.join(allowed)})"
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        if close:
            msg += f"; did you mean {_dotted(prefix, close[0])!r}?"
        raise ConfigError(msg)


def _int(value: Any, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}: {_show(value)} is not an integer (use an integer >= {minimum})")
    if value < minimum:
        raise ConfigError(f"{key}: {value} is too small (use an integer >= {minimum})")
    return int(value)


def _str(value: Any, key: str, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value.strip():
        what = "a non-empty string or null" if allow_none else "a non-empty string"
        raise ConfigError(f"{key}: {_show(value)} is not allowed (use {what})")
    return value


def _section(data: Any, key: str) -> Mapping:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{key}: {_show(data)} is not a mapping (use a mapping with keys {', '.join(_SECTION_KEYS[key])})"
        )
    _check_keys(data, _SECTION_KEYS[key], key)
    return data


# ------------------------------------------------------------------------------------------ public parsers


def parse_size(value: Any, key: str = "size") -> int:
    """Bytes from an int or a string such as '512MiB', '2 GiB', '1.5GB', '4096' (units are
    case-insensitive; KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB powers of 1024). The result
    must be at least one byte. Raises ConfigError naming `key`."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: {_show(value)} is not a size ({_SIZE_HELP})")
    if isinstance(value, int):
        nbytes = value
    elif isinstance(value, float) and value.is_integer():
        nbytes = int(value)
    elif isinstance(value, str):
        m = _SIZE_RE.match(value)
        unit = m.group(2).lower() if m else ""
        if not m or (unit and unit not in _SIZE_UNITS):
            raise ConfigError(f"{key}: {_show(value)} is not a size ({_SIZE_HELP})")
        nbytes = int(Fraction(m.group(1)) * _SIZE_UNITS[unit or "b"])
    else:
        raise ConfigError(f"{key}: {_show(value)} is not a size ({_SIZE_HELP})")
    if nbytes < 1:
        raise ConfigError(f"{key}: {_show(value)} is not a positive size ({_SIZE_HELP})")
    return nbytes


class DeviceNameError(ConfigError, DeviceError):
    """A device list naming something that is no device: a bad value of the devices key (ConfigError) and an
    unknown device name (DeviceError), as API.md section 8 lists both."""


def parse_devices(value: Any, key: str = "devices") -> Devices:
    """Validate a devices value: "auto", a list/tuple of names matching (cuda|opencl):N (returned as
    a tuple, no duplicates), or {"opencl-cpu": N} with an int N >= 1 (returned as a new dict)."""
    if isinstance(value, str):
        if value == "auto":
            return "auto"
        raise ConfigError(f"{key}: {_show(value)} is not allowed ({_DEVICES_HELP})")
    if isinstance(value, (list, tuple)):
        if not value:
            raise ConfigError(f"{key}: empty list ({_DEVICES_HELP})")
        names: list[str] = []
        for i, name in enumerate(value):
            if not isinstance(name, str) or not DEVICE_NAME.match(name):
                raise DeviceNameError(f"{key}[{i}]: {_show(name)} is not a device name (use 'cuda:N' or 'opencl:N')")
            if name in names:
                raise ConfigError(f"{key}[{i}]: {name!r} is listed twice (name each device once)")
            names.append(name)
        return tuple(names)
    if isinstance(value, Mapping):
        if not value:
            raise ConfigError(f"{key}: empty mapping ({_DEVICES_HELP})")
        _check_keys(value, DEVICE_COUNT_KEYS, key)
        if "opencl-cpu" not in value:
            raise ConfigError(f"{key}: {_show(value)} asks for no worker ({_DEVICES_HELP})")
        out: dict[str, Any] = {"opencl-cpu": _int(value["opencl-cpu"], _dotted(key, "opencl-cpu"), 1)}
        if "platform" in value:
            out["platform"] = _str(value["platform"], _dotted(key, "platform"))
        return out
    raise ConfigError(f"{key}: {_show(value)} is not allowed ({_DEVICES_HELP})")


def parse_devices_string(text: str, key: str = "ZYX_DIST_DEVICES") -> Devices:
    """Devices from a string as ZYX_DIST_DEVICES (or a --devices option) gives them: "auto", a comma
    list such as "opencl:0,opencl:1", "opencl-cpu:3" (meaning {"opencl-cpu": 3}) or "opencl-cpu:3@pocl"
    (3 workers on PoCL's CPU device: {"opencl-cpu": 3, "platform": "pocl"})."""
    text = text.strip()
    if text == "auto":
        return "auto"
    m = re.match(r"^(opencl-cpu):([0-9]+)(?:@(\S+))?$", text)
    value: Any = [p.strip() for p in text.split(",")]
    if m:
        value = {m.group(1): int(m.group(2)), **({"platform": m.group(3)} if m.group(3) else {})}
    try:
        return parse_devices(value, key)
    except ConfigError as e:
        reason = str(e).split(": ", 1)[-1].split(" (")[0]
        raise ConfigError(
            f"{key}: {_show(text)} is not allowed: {reason} "
            "(use 'auto', a comma list such as 'opencl:0,opencl:1', or 'opencl-cpu:N' with N >= 1, "
            "optionally 'opencl-cpu:N@PLATFORM' with PLATFORM intel, pocl or part of a platform name)"
        ) from None


# ------------------------------------------------------------------------------------------------ loading


class _StrictLoader(yaml.SafeLoader):
    """yaml's safe loader, refusing a key given twice in one mapping (safe_load keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool):
                continue  # (an unhashable key: construct_mapping refuses it itself)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _read_file(path: str | os.PathLike) -> Any:
    path = os.fspath(path)
    shown = os.path.expanduser(path)
    if not os.path.isfile(shown):
        what = "is a directory, not a file" if os.path.isdir(shown) else "does not exist"
        raise ConfigError(f"config file {shown!r} {what}")
    try:
        with open(shown, encoding="utf-8") as f:
            return yaml.load(f, _StrictLoader)  # (safe: SafeLoader's constructors only)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"config file {shown!r} is not valid YAML{where}: {problem}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {shown!r} cannot be read: {e}") from None


def _build(data: Any) -> Config:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"config: {_show(data)} is not a mapping (use a mapping with keys {', '.join(_TOP_KEYS)})")
    _check_keys(data, _TOP_KEYS, "")

    kwargs: dict[str, Any] = {}
    if "devices" in data:
        kwargs["devices"] = parse_devices(data["devices"], "devices")
    if data.get("memory_limit") is not None:
        kwargs["memory_limit"] = parse_size(data["memory_limit"], "memory_limit")
    if "debug" in data:
        kwargs["debug"] = parse_debug(str(_int(data["debug"], "debug", 0)), "debug")  # (bits no area has refused)

    sched = _section(data.get("scheduler"), "scheduler")
    if "policy" in sched:
        policy = sched["policy"]
        if policy not in POLICIES:
            raise ConfigError(f"scheduler.policy: {_show(policy)} is not one of {', '.join(POLICIES)}")
        kwargs["scheduler"] = SchedulerConfig(policy=policy)

    at = _section(data.get("autotune"), "autotune")
    at_kwargs: dict[str, Any] = {}
    if "enabled" in at:
        if not isinstance(at["enabled"], bool):
            raise ConfigError(f"autotune.enabled: {_show(at['enabled'])} is not a boolean (use true or false)")
        at_kwargs["enabled"] = at["enabled"]
    if "budget" in at:
        at_kwargs["budget"] = _int(at["budget"], "autotune.budget", 1)
    if "cache_dir" in at:
        cache_dir = at["cache_dir"]
        if isinstance(cache_dir, os.PathLike):
            cache_dir = os.fspath(cache_dir)
        at_kwargs["cache_dir"] = os.path.expanduser(_str(cache_dir, "autotune.cache_dir"))
    kwargs["autotune"] = AutotuneConfig(**at_kwargs)

    ray = _section(data.get("ray"), "ray")
    ray_kwargs: dict[str, Any] = {}
    if "address" in ray:
        ray_kwargs["address"] = _str(ray["address"], "ray.address", allow_none=True)
    if "namespace" in ray:
        ray_kwargs["namespace"] = _str(ray["namespace"], "ray.namespace")
    if "max_restarts" in ray:
        ray_kwargs["max_restarts"] = _int(ray["max_restarts"], "ray.max_restarts", 0)
    kwargs["ray"] = RayConfig(**ray_kwargs)

    if data.get("benchmark") is not None:
        kwargs["benchmark"] = _benchmark(data["benchmark"])
    return Config(**kwargs)


def _bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: {_show(value)} is not a boolean (use true or false)")
    return value


def _choices(value: Any, key: str, allowed: tuple[str, ...], default: tuple[str, ...] | None = None) -> tuple:
    """A non-empty list (or one string) of names from `allowed`, without duplicates, as a tuple."""
    if value is None and default is not None:
        return default
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise ConfigError(f"{key}: {_show(value)} is not allowed (use a non-empty list of {', '.join(allowed)})")
    out: list[str] = []
    for i, item in enumerate(items):
        if item not in allowed:
            raise ConfigError(f"{key}[{i}]: {_show(item)} is not one of {', '.join(allowed)}")
        if item not in out:
            out.append(item)
    return tuple(out)


def _benchmark(bench: Any) -> BenchmarkConfig:
    if not isinstance(bench, Mapping):
        raise ConfigError(
            f"benchmark: {_show(bench)} is not a mapping (use a mapping with keys {', '.join(_SECTION_KEYS['benchmark'])};"
            " see configs/README.md)"
        )
    if "policy" in bench:
        raise ConfigError(f"unknown key 'benchmark.policy' (the placement policy is scheduler.policy: {', '.join(POLICIES)})")
    _check_keys(bench, _SECTION_KEYS["benchmark"], "benchmark")
    workloads = bench.get("workloads")
    if not isinstance(workloads, (list, tuple)) or not workloads:
        raise ConfigError(
            f"benchmark.workloads: {'missing' if workloads is None else _show(workloads) + ' is not allowed'} (use a "
            f"non-empty list of {{name, sizes, dtypes}} with name one of {', '.join(BENCHMARK_WORKLOADS)})"
        )
    parsed = []
    for i, w in enumerate(workloads):
        key = f"benchmark.workloads[{i}]"
        if isinstance(w, str):  # a bare name is not enough: sizes are required
            raise ConfigError(f"{key}: {w!r} is a workload's name alone (use {{name: {w}, sizes: [...]}}: its sizes "
                              "are required)")
        if not isinstance(w, Mapping):
            raise ConfigError(f"{key}: {_show(w)} is not a mapping (use {{name, sizes, dtypes}})")
        _check_keys(w, _WORKLOAD_KEYS, key)
        name = w.get("name")
        if name is None:
            raise ConfigError(f"{key}.name: missing (use one of {', '.join(BENCHMARK_WORKLOADS)})")
        if name not in BENCHMARK_WORKLOADS:
            raise ConfigError(f"{key}.name: {_show(name)} is not one of {', '.join(BENCHMARK_WORKLOADS)}")
        sizes = w.get("sizes")
        if isinstance(sizes, int) and not isinstance(sizes, bool):
            sizes = [sizes]
        if not isinstance(sizes, (list, tuple)) or not sizes:
            what = "missing" if sizes is None else f"{_show(sizes)} is not allowed"
            raise ConfigError(f"{key}.sizes: {what} (use a non-empty list of integers >= 1)")
        sizes = tuple(_int(n, f"{key}.sizes[{j}]", 1) for j, n in enumerate(sizes))
        dtypes = _choices(w.get("dtypes"), f"{key}.dtypes", BENCHMARK_DTYPES, ("float32",))
        parsed.append(WorkloadConfig(name, sizes, dtypes))
    kwargs: dict[str, Any] = {"workloads": tuple(parsed)}
    if bench.get("warmup") is not None:
        kwargs["warmup"] = _int(bench["warmup"], "benchmark.warmup", 0)
    if bench.get("repeats") is not None:
        kwargs["repeats"] = _int(bench["repeats"], "benchmark.repeats", 1)
    for flag in ("ray", "check"):
        if bench.get(flag) is not None:
            kwargs[flag] = _bool(bench[flag], f"benchmark.{flag}")
    if "baselines" in bench:
        base = bench["baselines"]
        kwargs["baselines"] = () if base in (None, [], ()) else _choices(base, "benchmark.baselines", BENCHMARK_BASELINES)
    return BenchmarkConfig(**kwargs)


def load_config(config: str | os.PathLike | Mapping | Config | None = None) -> Config:
    """A validated Config from a YAML path, a dict of the same keys, or None.

    None means the file named by ZYX_DIST_CONFIG if that is set, else the defaults; an explicit path
    or dict wins over ZYX_DIST_CONFIG. In every case ZYX_DIST_DEVICES and ZYX_DIST_DEBUG then override
    the devices and debug values. A Config is returned unchanged. Raises ConfigError."""
    if isinstance(config, Config):
        return config
    source: str | None = None
    if config is None:
        env_path = os.environ.get("ZYX_DIST_CONFIG", "").strip()
        if env_path:
            source = env_path
            try:
                data = _read_file(env_path)
            except ConfigError as e:
                raise ConfigError(f"{e} (from ZYX_DIST_CONFIG)") from None
        else:
            data = None
    elif isinstance(config, (str, os.PathLike)):
        source = os.fspath(config)
        data = _read_file(config)
    elif isinstance(config, Mapping):
        data = config
    else:
        raise ConfigError(f"config: {_show(config)} is not allowed (use a YAML file path, a dict, or None)")

    try:
        cfg = _build(data)
    except ConfigError as e:
        if source is None:
            raise
        raise ConfigError(f"{e} (in {os.path.expanduser(source)})") from None

    overrides: dict[str, Any] = {}
    env_devices = os.environ.get("ZYX_DIST_DEVICES", "").strip()
    if env_devices:
        overrides["devices"] = parse_devices_string(env_devices)
    env_debug = os.environ.get("ZYX_DIST_DEBUG", "").strip()
    if env_debug:
        overrides["debug"] = parse_debug(env_debug)
    if overrides:
        cfg = replace(cfg, **overrides)
    return cfg
