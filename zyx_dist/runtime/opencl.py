"""Actor side: the OpenCL backend of a worker, and the only module that imports pyopencl. It takes a
position in the global list of OpenCL devices (every device of every platform, platform order then
device order) and gives the small interface a `Worker` drives: alloc/free device buffers, non-blocking
copy in, blocking copy out, compile (`device.ProgramCache`), launch, and the events that order them on one
command queue (out-of-order with profiling where the device allows it). pyopencl errors become
zyx_dist errors: allocation failures `OutOfMemoryError`, build failures `CompileError`, others
`DeviceError`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import logs
from ..errors import DeviceError, OutOfMemoryError
from ..protocol import KernelOps
from .device import BuildError, ProgramCache
from .icd import register_pip_runtimes
from .opencl_select import INTEL_FIX, by_index, choose, diagnose

try:
    import pyopencl as cl
except ImportError:  # reported when a device is opened, so importing zyx_dist never needs OpenCL
    cl = None

# the profiling queries of `event_seconds`, looked up once
_PROFILE_START = cl.profiling_info.START if cl is not None else None
_PROFILE_END = cl.profiling_info.END if cl is not None else None

_TYPES = {"GPU": "gpu", "CPU": "cpu", "ACCELERATOR": "accelerator", "CUSTOM": "custom", "DEFAULT": "default"}


def _require_cl() -> Any:
    if cl is None:
        raise DeviceError("pyopencl is not installed: `pip install pyopencl`, and an OpenCL driver "
                          f"(for the CPU: {INTEL_FIX})")
    return cl


def _devices() -> list[tuple[Any, Any]]:
    """(platform, device) pairs in the stable global order."""
    _require_cl()
    register_pip_runtimes()  # before the loader's first look at its ICD files
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD loader entries: clGetPlatformIDs fails with PLATFORM_NOT_FOUND_KHR
        platforms = []
    out = []
    for p in platforms:
        try:
            devices = p.get_devices()
        except cl.Error:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
        out.extend((p, d) for d in devices)
    return out


def _device_type(d: Any) -> str:
    names = [v for k, v in _TYPES.items() if d.type & getattr(cl.device_type, k)]
    return names[0] if names else str(d.type)


# A kernel every working device builds and runs: a platform whose compiler is broken for this machine (PoCL's
# LLVM on a CPU it does not know) fails here, when the device is listed, not on the user's first kernel.
SELF_TEST_SOURCE = """__kernel void zyx_dist_self_test(__global float *x) {
    int i = get_global_id(0);
    x[i] = x[i] * 2.0f + (float)i;
}"""
_SELF_TEST_N = 64
_self_tests: dict[tuple, str | None] = {}  # (platform, version, device, driver) -> None if it works, else why


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            fields = dict(line.split(":", 1) for line in f.read().split("\n\n", 1)[0].splitlines() if ":" in line)
    except OSError:
        return ""
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    return f"{fields.get('model name', '')}, CPU family {fields.get('cpu family', '?')}".strip(", ")


def self_test(p: Any, d: Any) -> str | None:
    """None when a tiny kernel builds and computes the right values on device `d`, else the reason (cached
    per process)."""
    key = (p.name, p.version, d.name, d.driver_version)
    if key in _self_tests:
        return _self_tests[key]
    problem = None
    host = np.arange(_SELF_TEST_N, dtype=np.float32)
    try:
        ctx = cl.Context([d])
        queue = cl.CommandQueue(ctx, d)
        program = cl.Program(ctx, SELF_TEST_SOURCE)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                program.build()
        except cl.Error as e:
            try:
                log = program.get_build_info(d, cl.program_build_info.LOG)
            except cl.Error:
                log = ""
            # the build log says why; pyopencl's own message repeats the status code
            problem = diagnose(log.strip() or str(e).split("\n")[0], p.name,
                               _cpu_model() if _device_type(d) == "cpu" else "")
        else:
            buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
            program.zyx_dist_self_test(queue, (_SELF_TEST_N,), None, buf)
            out = np.empty_like(host)
            cl.enqueue_copy(queue, out, buf, is_blocking=True)
            if not np.array_equal(out, host * 2 + np.arange(_SELF_TEST_N, dtype=np.float32)):
                problem = "its self-test kernel computed wrong values"
    except cl.Error as e:
        problem = f"its self-test failed: {' '.join(str(e).split())[:300]}"
    _self_tests[key] = problem
    return problem


def _describe(index: int, p: Any, d: Any) -> dict:
    ext = d.extensions.split()
    problem = self_test(p, d)
    return {
        "index": index,
        "name": d.name.strip(),
        "vendor": d.vendor.strip(),
        "platform": p.name.strip(),
        "platform_version": p.version.strip(),
        "type": _device_type(d),
        "global_mem_size": int(d.global_mem_size),
        "max_mem_alloc_size": int(d.max_mem_alloc_size),
        "max_compute_units": int(d.max_compute_units),
        "max_work_group_size": int(d.max_work_group_size),
        "max_parameter_bytes": int(d.max_parameter_size),  # the kernel argument space
        "fp16": "cl_khr_fp16" in ext,
        "fp64": "cl_khr_fp64" in ext or bool(d.double_fp_config),
        "driver_version": d.driver_version.strip(),
        "usable": problem is None,
        "problem": problem,
    }


_reported: set[tuple] = set()  # devices whose problem was printed (ZYX_DIST_DEBUG bit 1), once per process


def list_opencl_devices() -> list[dict]:
    """Every OpenCL device of every platform, in platform order then device order, each self-tested
    (`usable`, and `problem` saying why not; with ZYX_DIST_DEBUG bit 1 each problem is printed once)."""
    out = [_describe(i, p, d) for i, (p, d) in enumerate(_devices())]
    if logs.enabled("devices"):
        for d in out:
            key = (d["index"], d["name"], d["platform"])
            if d["problem"] and key not in _reported:
                _reported.add(key)
                logs.emit("devices", f"zyx_dist: left out opencl:{d['index']} ({d['name']}, {d['platform']}): "
                                     f"{d['problem']}")
    return out


def open_index(spec: str) -> int:
    """The global device index a worker spec names: `N`, or `cpu` / `auto` optionally narrowed to one platform
    (`cpu@pocl`, `auto@intel`), resolved on this machine by the selection rules of `opencl_select`."""
    what, _, platform = spec.partition("@")
    devices = list_opencl_devices()
    if what.isdigit():
        return by_index(devices, int(what))["index"]
    if what not in ("cpu", "auto", "gpu"):
        raise DeviceError(f"unknown OpenCL device {spec!r}: use a number, 'cpu' or 'auto' (optionally @platform)")
    return choose(devices, what, platform or None)[0]["index"]


_PAGE = 4096  # host memory this aligned is used in place by every CPU OpenCL runtime (USE_HOST_PTR)


class _View:
    """The array interface of a mapped buffer, read-only, holding the mapping and the driver's handle of
    the buffer: `np.asarray` of it is an array whose base keeps both alive (the map is released, and
    the buffer may be freed, only when the last view of it is gone)."""

    def __init__(self, mapped: np.ndarray, owner: Any) -> None:
        self.mapped, self.owner = mapped, owner
        iface = dict(mapped.__array_interface__)
        iface["data"] = (iface["data"][0], True)
        self.__array_interface__ = iface


def _is_alloc_failure(e: Exception) -> bool:
    if isinstance(e, cl.MemoryError):
        return True
    try:
        code = int(e.code)  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return False
    return code in (cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, cl.status_code.OUT_OF_HOST_MEMORY)


class _Kernel:
    """A built program and its one `cl.Kernel` (fetched once: creating kernels per launch is slow)."""

    __slots__ = ("kernel", "name", "program")

    def __init__(self, program: Any, kernel: Any, name: str) -> None:
        self.program, self.kernel, self.name = program, kernel, name


def host_available_bytes() -> int | None:
    """The host's available memory (Linux: MemAvailable of /proc/meminfo), or None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class OpenCLBackend:
    """One OpenCL device (a `device.Device`): a context and one command queue. `spec` is what `open_index`
    takes ("0", "cpu@pocl")."""

    kind = "opencl"

    def __init__(self, spec: str | int) -> None:
        index = open_index(str(spec))
        self.index = index
        self.platform, self.device = _devices()[index]
        self._info = _describe(index, self.platform, self.device)
        self.name = f"opencl:{index}"
        self.context = cl.Context([self.device])
        profiling = cl.command_queue_properties.PROFILING_ENABLE
        ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        # Out of order lets independent kernels overlap; the worker orders dependent ones by events.
        self.out_of_order = bool(self.device.queue_properties & ooo)
        props = profiling | ooo if self.out_of_order else profiling
        self.queue = cl.CommandQueue(self.context, self.device, properties=props)
        self._cache = ProgramCache(self.name, "OpenCL build")

    def info(self) -> dict:
        """The device's description (see `list_opencl_devices`) plus the queue mode."""
        return {**self._info, "out_of_order": self.out_of_order}

    @property
    def memory_bytes(self) -> int:
        return self._info["global_mem_size"]

    @property
    def free_bytes(self) -> int:
        """Memory free now: for a CPU device the host's available memory (its memory is the host's), else
        the device's whole memory (OpenCL reports no free memory for a GPU)."""
        total = self._info["global_mem_size"]
        return min(total, host_available_bytes() or total) if self._info["type"] == "cpu" else total

    def alloc(self, nbytes: int) -> Any:
        """A device buffer of `nbytes` (at least 1)."""
        nbytes = max(int(nbytes), 1)
        if nbytes > self._info["max_mem_alloc_size"]:
            raise OutOfMemoryError(
                f"{self.name}: {nbytes} bytes is above the device's largest allocation "
                f"({self._info['max_mem_alloc_size']} bytes)",
                device=self.name,
                requested=nbytes,
            )
        try:
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.Error as e:
            if _is_alloc_failure(e):
                raise OutOfMemoryError(f"{self.name}: allocating {nbytes} bytes failed: {e}", self.name, nbytes) from e
            raise DeviceError(f"{self.name}: allocating {nbytes} bytes failed: {e}") from e

    def free(self, handle: Any) -> None:
        # OpenCL keeps the memory until commands already queued on it finish, so this never races them.
        handle.release()

    def copy_in(self, handle: Any, array: np.ndarray, wait_for: Sequence[Any] = ()) -> Any:
        """Start copying `array` (C-contiguous) into `handle`; the caller keeps `array` alive until the event completes."""
        try:
            return cl.enqueue_copy(self.queue, handle, array, wait_for=list(wait_for) or None, is_blocking=False)
        except cl.Error as e:
            raise self._error("copy in", e) from e

    def copy_out(self, handle: Any, out: np.ndarray, wait_for: Sequence[Any] = ()) -> None:
        """Copy `out.nbytes` from `handle` into `out`, returning when it is there."""
        try:
            cl.enqueue_copy(self.queue, out, handle, wait_for=list(wait_for) or None, is_blocking=True)
        except cl.Error as e:
            raise self._error("copy out", e) from e

    # -- zero-copy views (DLPack, `np.asarray(x, copy=False)`) on CPU devices, whose buffers are host memory --

    def dlpack_device(self) -> tuple[int, int] | None:
        """(kDLCPU, 0) on a CPU device: its buffers map to host memory in place. None elsewhere."""
        return (1, 0) if self._info["type"] == "cpu" else None

    def export(self, handle: Any, dtype: np.dtype, shape: tuple[int, ...], wait_for: Sequence[Any],
               owner: Any) -> np.ndarray | None:
        """A read-only NumPy view of `handle` mapped for reading (on a CPU device the map is the buffer's
        own memory: no copy), which keeps the mapping and `owner` alive; None on other devices."""
        if self.dlpack_device() is None:
            return None
        try:
            mapped, _ = cl.enqueue_map_buffer(self.queue, handle, cl.map_flags.READ, 0, shape, dtype,
                                              wait_for=list(wait_for) or None, is_blocking=True)
        except cl.Error as e:
            raise self._error("map for export", e) from e
        view = np.asarray(_View(mapped, owner))
        # the array interface spells ml_dtypes' bfloat16 as raw bytes ("|V2"): view it as the dtype asked
        return view if view.dtype == dtype else view.view(dtype)

    def adopt(self, obj: Any) -> tuple[Any, int, np.dtype, tuple[int, ...], Any] | None:
        """A buffer over the host memory of `obj` (a CPU DLPack producer, C-contiguous) without a copy:
        on a CPU device a USE_HOST_PTR buffer is that memory itself. None when `obj` is not CPU memory,
        not contiguous, not page-aligned where the runtime needs that (all but PoCL), or the device is
        not a CPU."""
        if self.dlpack_device() is None or not hasattr(obj, "__dlpack__"):
            return None
        try:
            if obj.__dlpack_device__()[0] != 1:
                return None
            arr = np.from_dlpack(obj)
        except (BufferError, TypeError, ValueError, RuntimeError):
            return None
        if not arr.flags.c_contiguous or arr.nbytes == 0:
            return None
        # PoCL uses any host memory in place; other CPU runtimes (Intel's) only page-aligned memory, and
        # copy the rest when the buffer is made, slower than the worker's own upload: let that run instead
        if arr.ctypes.data % _PAGE and "portable computing language" not in self._info["platform"].lower():
            return None
        try:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=arr)
        except cl.Error:
            return None
        return buf, int(arr.nbytes), arr.dtype, tuple(arr.shape), arr

    def compile(self, source: str, name: str, options: str = "", ops: KernelOps | None = None) -> _Kernel:
        """Build `source` and return its kernel `name` (cached: `ProgramCache`; `ops` is not needed here)."""
        return self._cache.kernel(source, name, options, self._build, self._entry)

    def _build(self, source: str, options: str) -> Any:
        program = cl.Program(self.context, source)
        with warnings.catch_warnings():
            # pyopencl warns about any compiler output (and about reading a failed build's log); the log is
            # returned in errors instead.
            warnings.simplefilter("ignore")
            try:
                program.build(options=options.split() if options else [])
            except cl.Error as e:
                raise BuildError(self._build_log(program) or str(e)) from e
        return program

    def _entry(self, program: Any, name: str) -> _Kernel:
        try:
            return _Kernel(program, cl.Kernel(program, name), name)
        except cl.Error as e:
            raise BuildError(str(e)) from e

    def launch(
        self,
        prog: _Kernel,
        handles: Sequence[Any],
        gws: Sequence[int],
        lws: Sequence[int] | None,
        wait_for: Sequence[Any] = (),
        timed: bool = True,  # unused: OpenCL events always carry profiling times on this queue
    ) -> Any:
        """Enqueue `prog` over global size `gws` (local size `lws`, or the runtime's choice) and return its event."""
        try:
            kernel = prog.kernel
            kernel.set_args(*handles)
            return cl.enqueue_nd_range_kernel(
                self.queue,
                kernel,
                gws if type(gws) is tuple else tuple(gws),
                None if lws is None else lws if type(lws) is tuple else tuple(lws),
                wait_for=list(wait_for) or None,
            )
        except cl.Error as e:
            raise self._error(f"launch of {prog.name} (gws={tuple(gws)}, lws={lws})", e) from e

    def event_seconds(self, event: Any) -> float:
        """Device-side duration of a completed command (profiling end - start)."""
        # get_profiling_info directly: `event.profile.end` goes through two Python-level lookups
        info = event.get_profiling_info
        return (info(_PROFILE_END) - info(_PROFILE_START)) * 1e-9

    def is_done(self, event: Any) -> bool:
        return event.command_execution_status == cl.command_execution_status.COMPLETE

    def wait(self, events: Sequence[Any]) -> None:
        if events:
            cl.wait_for_events(list(events))

    def synchronize(self) -> None:
        self.queue.finish()

    def close(self) -> None:
        self.queue.finish()
        self._cache.clear()

    def _build_log(self, program: Any) -> str:
        try:
            return program.get_build_info(self.device, cl.program_build_info.LOG).strip()
        except cl.Error:
            return ""

    def _error(self, what: str, e: Exception) -> Exception:
        if _is_alloc_failure(e):
            return OutOfMemoryError(f"{self.name}: {what} failed, device memory exhausted: {e}", device=self.name)
        return DeviceError(f"{self.name}: {what} failed: {e}")
