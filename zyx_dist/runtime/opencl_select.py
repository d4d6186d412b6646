"""Actor side (and the driver when it lists devices), pure: which OpenCL device a worker opens. Takes the device
descriptions `runtime/opencl.py` makes (platform, type, and the outcome of the self-test each device runs when it
is first listed) and a request: a CPU device, the best device, or a global index, optionally narrowed to one
platform (`pocl`, `intel`, or any part of a platform name); gives the devices to use, best first, or a
`DeviceError` that says why each device was left out and the command that fixes it. Imports no OpenCL, so the
selection rules are tested with made-up descriptions.

CPU platforms are preferred in a fixed order, Intel's CPU runtime ahead of PoCL: it builds kernels on every
current x86-64 CPU (the LLVM 14 of `pocl-binary-distribution` rejects CPUs newer than itself, e.g. AMD Zen 5),
and it ran the CPU benchmark set faster than PoCL on the development machine (README, "CPU figures").
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import DeviceError

# platform selector aliases -> a part of the platform name (matched case-insensitively)
PLATFORM_ALIASES = {"pocl": "portable computing language", "intel": "intel(r) opencl"}
# CPU platforms, best first; a platform not listed comes after these
CPU_PREFERENCE = ("intel(r) opencl", "portable computing language")
INTEL_FIX = "pip install intel-opencl-rt intel-cmplr-lib-rt"
TYPE_ORDER = ("gpu", "accelerator", "cpu")


def platform_matches(platform: str, selector: str | None) -> bool:
    if not selector:
        return True
    want = PLATFORM_ALIASES.get(selector.strip().lower(), selector.strip().lower())
    return want in platform.lower()


def cpu_rank(platform: str) -> int:
    name = platform.lower()
    return next((i for i, p in enumerate(CPU_PREFERENCE) if p in name), len(CPU_PREFERENCE))


def diagnose(log: str, platform: str, cpu: str = "") -> str:
    """A one-line cause for a failed self-test, with the fix where one is known."""
    text = " ".join(log.split())
    if "unknown target CPU" in text and "portable computing language" in platform.lower():
        return (f"PoCL's LLVM does not know this CPU ({cpu or 'this processor'}): it asks LLVM for the target CPU "
                f"'generic', which LLVM rejects (pocl-binary-distribution 3.0 is built on LLVM 14); install Intel's "
                f"CPU runtime instead: {INTEL_FIX}")
    return f"its self-test kernel failed: {text[:300]}"


def choose(devices: Sequence[dict], want: str = "auto", platform: str | None = None) -> list[dict]:
    """The usable devices for a request, best first. `want`: "cpu" (CPU devices, preferred platform first),
    "auto" (GPUs, then accelerators, then the preferred CPU), or "gpu". Raises DeviceError when none is usable."""
    if want not in ("auto", "cpu", "gpu"):
        raise ValueError(f"unknown device request {want!r}")
    candidates = [d for d in devices if platform_matches(d["platform"], platform)]
    if want != "auto":
        candidates = [d for d in candidates if d["type"] == want]
    usable = [d for d in candidates if d.get("usable", True)]

    def rank(d: dict) -> tuple:
        kind = TYPE_ORDER.index(d["type"]) if d["type"] in TYPE_ORDER else len(TYPE_ORDER)
        return kind, cpu_rank(d["platform"]) if d["type"] == "cpu" else 0, d["index"]

    usable.sort(key=rank)
    if not usable:
        raise DeviceError(no_device_message(devices, want, platform))
    return usable


def auto_devices(devices: Sequence[dict]) -> list[dict]:
    """`devices: auto` in one process: every usable OpenCL GPU, else the one preferred CPU device."""
    ranked = choose(devices, "auto")
    gpus = [d for d in ranked if d["type"] == "gpu"]
    return gpus or ranked[:1]


def no_device_message(devices: Sequence[dict], want: str, platform: str | None) -> str:
    what = {"auto": "OpenCL", "cpu": "OpenCL CPU", "gpu": "OpenCL GPU"}[want]
    where = f" on platform {platform!r}" if platform else ""
    if not devices:
        return (f"no {what} device{where}: no OpenCL platform found; the CPU runtimes come with zyx_dist "
                f"({INTEL_FIX}, or pip install pocl-binary-distribution)")
    lines = [f"no working {what} device{where}:"]
    for d in devices:
        status = d.get("problem") or ("works" if d.get("usable", True) else "unusable")
        if d.get("usable", True) and not platform_matches(d["platform"], platform):
            status = "works, but not on the platform asked for"
        elif d.get("usable", True) and want != "auto" and d["type"] != want:
            status = f"works, but is a {d['type']} device"
        lines.append(f"  opencl:{d['index']} {d['name']} ({d['platform']}): {status}")
    if any(d.get("problem") and "portable computing language" in d["platform"].lower() for d in devices):
        lines.append(f"fix: install Intel's OpenCL CPU runtime, which builds kernels on every current x86-64 CPU: "
                     f"{INTEL_FIX}")
    return "\n".join(lines)


def by_index(devices: Sequence[dict], index: int) -> dict:
    """The device at a global index (`opencl:N`), which must be usable."""
    if not 0 <= index < len(devices):
        names = ", ".join(f"opencl:{d['index']} ({d['name']}, {d['platform']})" for d in devices) or "none"
        raise DeviceError(f"no device opencl:{index}; available OpenCL devices: {names}")
    d = devices[index]
    if not d.get("usable", True):
        raise DeviceError(f"opencl:{index} ({d['name']}, {d['platform']}) does not work: {d.get('problem')}")
    return d
