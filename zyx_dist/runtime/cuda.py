"""Actor side: the CUDA backend of a worker, and the only module that imports cupy. It takes a CUDA
device index (as this process sees it: a Ray actor with one GPU sees its GPU as index 0) and gives the
interface a `Worker` drives, the same as `OpenCLBackend`'s: alloc/free device memory from a per-backend
CuPy memory pool capped at the worker's limit, non-blocking copy in through pinned staging buffers,
blocking copy out, compile (NVRTC through `cupy.RawModule`, cached: `device.ProgramCache`), launch, and the events
that order them on one non-blocking compute stream, plus NCCL point-to-point send/recv once
`init_nccl` has joined the communicator, and the capture and launch of CUDA graphs of kernel launches
(for the worker's replay of batch templates). CuPy errors become zyx_dist errors: allocation failures
`OutOfMemoryError`, NVRTC failures `CompileError` (numbered source and log), others `DeviceError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DeviceError, OutOfMemoryError
from ..protocol import KernelOps
from . import cuda_tma
from .device import BuildError, ProgramCache

try:
    import cupy as cp
except ImportError:  # reported when a device is opened, so importing zyx_dist never needs CUDA
    cp = None

COMPILE_OPTIONS = ("-std=c++17",)
# NVRTC builds at once (build_many); the cores this process may use, at most 16
BUILD_THREADS = min(16, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


# What to install for the CUDA backend; the README's set-up section says the same.
CUPY_INSTALL_HINT = (
    "install CuPy with its CUDA runtime parts for the CUDA major version of the driver (nvidia-smi shows it): "
    "pip install 'cupy-cuda12x[ctk]' nvidia-nccl-cu12 for CUDA 12, or 'cupy-cuda13x[ctk]' nvidia-nccl-cu13 for "
    "CUDA 13 (the same as the extras of a zyx_dist checkout: pip install -e '.[cuda12]' or -e '.[cuda13]')"
)


def _require_cupy(device: str = "cuda") -> Any:
    if cp is None:
        raise DeviceError(f"{device}: cupy is not installed: {CUPY_INSTALL_HINT}")
    return cp


def _device_count() -> int:
    _require_cupy()
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except cp.cuda.runtime.CUDARuntimeError:  # no driver, or no device
        return 0


def _text(v: Any) -> str:
    return v.decode(errors="replace").strip("\0 ") if isinstance(v, bytes) else str(v)


def _describe(index: int) -> dict:
    p = cp.cuda.runtime.getDeviceProperties(index)
    total = int(p.get("totalGlobalMem", 0))
    return {
        "index": index,
        "name": _text(p.get("name", b"")),
        "vendor": "NVIDIA",
        "platform": "CUDA",
        "type": "gpu",
        "global_mem_size": total,
        "max_mem_alloc_size": total,
        "max_compute_units": int(p.get("multiProcessorCount", 0)),
        "max_work_group_size": int(p.get("maxThreadsPerBlock", 1024)),
        "max_parameter_bytes": 4096,  # CUDA's kernel parameter space
        "compute_capability": f"{p.get('major', 0)}.{p.get('minor', 0)}",
        "l2_bytes": int(p.get("l2CacheSize", 0)),
        "fp16": True,
        "fp64": True,
        "driver_version": str(cp.cuda.runtime.driverGetVersion()),
        "runtime_version": str(cp.cuda.runtime.runtimeGetVersion()),
    }


def list_cuda_devices() -> list[dict]:
    """Every CUDA device this process can see (after CUDA_VISIBLE_DEVICES), in CUDA's order."""
    return [_describe(i) for i in range(_device_count())]


def nccl_available() -> bool:
    """Whether cupy can load NCCL here."""
    if cp is None:
        return False
    try:
        from cupy.cuda import nccl

        nccl.get_version()
    except Exception:  # noqa: BLE001 -- no libnccl, or a cupy built without it
        return False
    return True


def nccl_unique_id() -> Any:
    """A fresh NCCL unique id (opaque, picklable) for a new communicator, or None without NCCL."""
    if not nccl_available():
        return None
    from cupy.cuda import nccl

    return nccl.get_unique_id()


class _Event:
    """One command on the stream: the CUDA event recorded after it (and before it, for timed launches).
    An untimed launch's event is made only when something asks for it (`lazy_on`, a device): most never are,
    since commands on the worker's one stream run in order and a synchronize settles them all, and making
    and recording one costs a launch's worth of host time. Made later, it is recorded later, after this
    command and whatever followed it: waiting for it, or asking whether it is done, then waits for at least
    this command, which is all its readers need. Timed and copy events are recorded at once."""

    __slots__ = ("_end", "device", "start", "stream")

    def __init__(self, stream: Any, start: Any = None, lazy_on: Any = None) -> None:
        self.stream, self.start, self.device = stream, start, lazy_on
        if lazy_on is None or start is not None:
            self._end = cp.cuda.Event(block=False, disable_timing=start is None)
            self._end.record(stream)
        else:
            self._end = None

    @property
    def end(self) -> Any:
        e = self._end
        if e is None:
            with self.device:
                e = self._end = cp.cuda.Event(block=False, disable_timing=True)
                e.record(self.stream)
        return e


class _Kernel:
    """A compiled module and its function (fetched once), the dynamic shared memory its launches take, and
    the prologue the source declares, if any: a kernel of the same module launched first, over the same
    arguments and a scratch buffer of its own (passed last to both), in which it leaves what the main
    kernel reads (codegen/attention_skip.py: which blocks attention may leave out)."""

    __slots__ = ("entry", "function", "maps", "module", "name", "prologue", "scratch", "scratch_arg", "shared_bytes")

    def __init__(self, module: Any, function: Any, name: str, shared_bytes: int = 0,
                 prologue: tuple[Any, int, int] | None = None, scratch: Any = None,
                 maps: cuda_tma.Params | None = None) -> None:
        self.module, self.function, self.name, self.shared_bytes = module, function, name, shared_bytes
        self.prologue, self.scratch = prologue, scratch  # (function, work-groups, threads), device memory
        self.scratch_arg = np.uint64(scratch.ptr) if scratch is not None else None  # made once, not per launch
        self.maps = maps  # the tensor maps passed after the buffers (a kernel with TMA copies), else None
        self.entry = getattr(function, "kernel", function).ptr if maps is not None else 0  # its CUfunction, for the driver's launch


def _call(prog: _Kernel, grid: int, block: int, args: tuple) -> None:
    """Launch `prog` on the current stream (with its dynamic shared memory, when it declares some), after its
    prologue; the same calls whether they run now or are being captured into a CUDA graph. Launches on one
    stream run in order, so every launch of `prog` may reuse the one scratch buffer."""
    if prog.prologue is not None:
        function, groups, threads = prog.prologue
        args = (*args, prog.scratch_arg)
        function((groups,), (threads,), args)
    if prog.maps is not None:  # by the driver's launch: CuPy has no by-value struct of 64-byte alignment
        try:
            params = prog.maps.block(tuple([int(a) for a in args]))
        except ValueError as e:
            raise DeviceError(f"launch of {prog.name}: {e}") from None
        cp.cuda.driver.launchKernel(prog.entry, grid, 1, 1, block, 1, 1, prog.shared_bytes,
                                    cp.cuda.get_current_stream().ptr, params, 0)
    elif prog.shared_bytes:
        prog.function((grid,), (block,), args, shared_mem=prog.shared_bytes)
    else:
        prog.function((grid,), (block,), args)


ARCH_MARK = "// zyx_dist: arch sm_90a"  # a kernel built for compute capability 9.0's `a` target (wgmma)
SHARED_MARK = "// zyx_dist: dynamic shared bytes "  # a kernel that declares `extern __shared__` memory says how much
PROLOGUE_MARK = "// zyx_dist: prologue "  # "<entry> <work-groups> <threads> <scratch bytes>": see _Kernel


def _marked(source: str, mark: str) -> list[str] | None:
    """The words after `mark` on its line of `source`, or None when the source has no such line."""
    at = source.find(mark)
    return None if at < 0 else source[at + len(mark):].split("\n", 1)[0].split()


def _declared(source: str) -> tuple[int, tuple[str, int, int, int] | None, tuple[cuda_tma.MapSpec, ...]]:
    """(the dynamic shared bytes, the prologue (entry, work-groups, threads, scratch bytes) or None, the
    tensor maps) that a kernel source declares in its marker lines."""
    digits = _marked(source, SHARED_MARK)
    shared = int(digits[0]) if digits and digits[0].isdigit() else 0
    try:
        maps = cuda_tma.parse(source) if cuda_tma.MARK in source else ()
    except ValueError as e:
        raise BuildError(str(e)) from None
    words = _marked(source, PROLOGUE_MARK)
    if words is None:
        return shared, None, maps
    if maps:  # the launch by the driver (for the maps) has no place for a prologue kernel
        raise BuildError("a kernel source declares both a prologue and tensor maps")
    if len(words) != 4 or not all(w.isdigit() for w in words[1:]):
        raise BuildError(f"a malformed prologue line in a kernel source: {' '.join(words)!r}")
    return shared, (words[0], int(words[1]), int(words[2]), int(words[3])), maps


class CudaBackend:
    """One CUDA device (a `device.PeerDevice` and `device.CappedDevice`): a CuPy memory pool, one non-blocking
    stream, NVRTC modules and (optionally) NCCL."""

    kind = "cuda"

    def __init__(self, index: int) -> None:
        _require_cupy(f"cuda:{index}")
        count = _device_count()
        if not 0 <= index < count:
            raise DeviceError(f"no CUDA device cuda:{index}; this process sees {count} CUDA device(s)")
        self.index = index
        self.name = f"cuda:{index}"
        self._dev = cp.cuda.Device(index)
        # Where this process sees one CUDA device, it is every thread's current device: the replay's hot calls
        # (a graph's launch, the synchronize) skip CuPy's switch to it, about a microsecond per realize.
        self._switch = count > 1
        self._info = _describe(index)
        with self._dev:
            self.pool = cp.cuda.MemoryPool()
            self.stream = cp.cuda.Stream(non_blocking=True)
        self._cache = ProgramCache(self.name, "NVRTC build")
        self._declared: dict[int, tuple] = {}  # id(module) -> what its source declares (`_declared`)
        self._staging: list[tuple[_Event, Any]] = []  # pinned buffers of copies in flight
        self.comm: Any = None
        self.nccl_rank: int | None = None

    # -- description and memory -------------------------------------------------------------

    def info(self) -> dict:
        return dict(self._info)

    @property
    def memory_bytes(self) -> int:
        return self._info["global_mem_size"]

    @property
    def free_bytes(self) -> int:
        """The device's free memory now (cudaMemGetInfo: other processes' use left out); its whole memory where
        the driver cannot say."""
        try:
            with self._dev:
                return int(cp.cuda.runtime.memGetInfo()[0])
        except Exception:  # noqa: BLE001 -- a limit from the total is still a working limit
            return self._info["global_mem_size"]

    def set_limit(self, nbytes: int | None) -> None:
        """Cap the CuPy pool at the worker's memory limit (None lifts the cap). The worker's own pool keeps
        the exact limit; this cap is the backstop, with a little slack for CuPy rounding every chunk up to
        512 bytes (the worker's smallest buckets are 256)."""
        self.pool.set_limit(size=int(nbytes) + int(nbytes) // 16 + (1 << 20) if nbytes else 0)

    def alloc(self, nbytes: int) -> Any:
        """Device memory of `nbytes` (at least 1): a `cupy.cuda.MemoryPointer` of this backend's pool."""
        nbytes = max(int(nbytes), 1)
        try:
            with self._dev, self.stream:  # chunks belong to the stream they are allocated on
                return self.pool.malloc(nbytes)
        except cp.cuda.memory.OutOfMemoryError as e:
            raise OutOfMemoryError(f"{self.name}: allocating {nbytes} bytes failed: {e}", self.name, nbytes) from e
        except cp.cuda.runtime.CUDARuntimeError as e:
            raise DeviceError(f"{self.name}: allocating {nbytes} bytes failed: {e}") from e

    def free(self, handle: Any) -> None:
        """Nothing to do here: the memory returns to the pool when the worker drops its last reference to
        `handle`. It returns to the pool of this backend's stream, so a later allocation from it is used
        only by commands queued after the ones still using it: this never races them."""

    # -- commands ------------------------------------------------------------------------------

    def _after(self, wait_for: Sequence[_Event]) -> None:
        """Make the stream wait for events recorded on other streams (its own are ordered already)."""
        for e in wait_for:
            if e.stream is not self.stream:
                self.stream.wait_event(e.end)

    def _prune(self) -> None:
        self._staging = [(e, m) for e, m in self._staging if not e.end.done]

    def copy_in(self, handle: Any, array: np.ndarray, wait_for: Sequence[_Event] = ()) -> _Event:
        """Start copying `array` (C-contiguous bytes) into `handle` through a pinned staging buffer."""
        nbytes = array.nbytes
        try:
            with self._dev:
                self._prune()
                pinned = cp.cuda.alloc_pinned_memory(nbytes)
                np.frombuffer(pinned, np.uint8, nbytes)[:] = array.reshape(-1).view(np.uint8)
                self._after(wait_for)
                cp.cuda.runtime.memcpyAsync(handle.ptr, pinned.ptr, nbytes, cp.cuda.runtime.memcpyHostToDevice,
                                            self.stream.ptr)
                event = _Event(self.stream)
        except cp.cuda.runtime.CUDARuntimeError as e:
            raise self._error("copy in", e) from e
        self._staging.append((event, pinned))  # the staging buffer lives until the copy is done
        return event

    def copy_out(self, handle: Any, out: np.ndarray, wait_for: Sequence[_Event] = ()) -> None:
        """Copy `out.nbytes` from `handle` into `out`, returning when it is there."""
        nbytes = out.nbytes
        try:
            with self._dev:
                pinned = cp.cuda.alloc_pinned_memory(nbytes)
                self._after(wait_for)
                cp.cuda.runtime.memcpyAsync(pinned.ptr, handle.ptr, nbytes, cp.cuda.runtime.memcpyDeviceToHost,
                                            self.stream.ptr)
                _Event(self.stream).end.synchronize()
                out.reshape(-1).view(np.uint8)[:] = np.frombuffer(pinned, np.uint8, nbytes)
        except cp.cuda.runtime.CUDARuntimeError as e:
            raise self._error("copy out", e) from e

    # -- zero-copy views and adoption (DLPack with CuPy and torch in this process) ---------------------

    def dlpack_device(self) -> tuple[int, int]:
        return (2, self.index)  # kDLCUDA, this device

    def export(self, handle: Any, dtype: np.dtype, shape: tuple[int, ...], wait_for: Sequence[_Event],
               owner: Any) -> Any:
        """A CuPy array over `handle`'s memory (no copy), ready to read: it waits for the buffer's last
        write. The array holds `handle` and `owner` (the driver's handle of the buffer), so the memory is
        neither freed nor reused while it lives. CUDA arrays have no read-only flag: writes through it
        change the tensor, which zyx_dist treats as immutable (do not write)."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        try:
            with self._dev:
                for e in wait_for:
                    e.end.synchronize()
                mem = cp.cuda.UnownedMemory(handle.ptr, max(nbytes, 1), (handle, owner), self.index)
                return cp.ndarray(shape, dtype, cp.cuda.MemoryPointer(mem, 0))
        except cp.cuda.runtime.CUDARuntimeError as e:
            raise self._error("export", e) from e

    def adopt(self, obj: Any) -> tuple[Any, int, np.dtype, tuple[int, ...], Any] | None:
        """The memory of `obj` (a DLPack producer on this GPU: CuPy, torch) as a buffer without a copy
        (a non-contiguous one is made contiguous on the device). The producer's pending work is ordered
        before this worker's stream (DLPack's stream handshake through cupy.from_dlpack). None when
        `obj` lives elsewhere."""
        try:
            where = obj.__dlpack_device__()
        except (AttributeError, TypeError, BufferError):
            return None
        if int(where[0]) != 2 or int(where[1]) != self.index:
            return None
        try:
            with self._dev, self.stream:
                arr = cp.from_dlpack(obj)
                if not arr.flags.c_contiguous:
                    arr = cp.ascontiguousarray(arr)
        except (BufferError, TypeError, ValueError, cp.cuda.runtime.CUDARuntimeError):
            return None
        if arr.nbytes == 0:
            return None
        return arr.data, int(arr.nbytes), np.dtype(arr.dtype), tuple(arr.shape), arr

    def compile(self, source: str, name: str, options: str = "", ops: KernelOps | None = None) -> _Kernel:
        """Compile `source` with NVRTC and return its kernel `name` (an `extern "C"` function), cached:
        `ProgramCache` (`ops` is not needed here)."""
        return self._cache.kernel(source, name, options, self._build, self._entry)

    def build_many(self, sources: Sequence[tuple[str, str]]) -> None:
        """NVRTC builds the new programs on threads side by side (it is thread-safe and CuPy releases the GIL
        around it): a plan's kernels and the tuner's candidates compile in about the time of the slowest."""
        self._cache.build_many(sources, self._build, BUILD_THREADS)

    def _build(self, source: str, options: str) -> Any:
        from cupy.cuda import compiler

        with self._dev:
            arch = ("-arch=sm_90a",) if ARCH_MARK in source else ()  # wgmma: the sm_90a features
            module = cp.RawModule(code=source, options=COMPILE_OPTIONS + arch + tuple(options.split()))
            try:
                module.compile()  # NVRTC runs here (RawModule is lazy)
            except compiler.CompileException as e:
                raise BuildError(_compile_log(e)) from e
        self._declared[id(module)] = _declared(source)  # read by _entry (the cache keeps the module alive)
        return module

    def _entry(self, module: Any, name: str) -> _Kernel:
        with self._dev:
            try:
                function = module.get_function(name)
            except cp.cuda.driver.CUDADriverError as e:
                raise BuildError(str(e)) from e
            shared, pro, maps = self._declared.get(id(module), (0, None, ()))
            if shared > 48 * 1024:  # past the default limit only once the function's attribute is raised
                try:
                    function.max_dynamic_shared_size_bytes = shared
                except Exception as e:  # cupy or the driver refused: report it as a failed build
                    raise BuildError(f"kernel {name!r} needs {shared} bytes of shared memory: {e}") from e
            if pro is None:
                return _Kernel(module, function, name, shared, maps=cuda_tma.Params(maps) if maps else None)
            try:
                first = module.get_function(pro[0])
            except cp.cuda.driver.CUDADriverError as e:
                raise BuildError(f"the prologue {pro[0]!r} of {name!r}: {e}") from e
            return _Kernel(module, function, name, shared, (first, pro[1], pro[2]), self.alloc(pro[3]))

    def launch(
        self,
        prog: _Kernel,
        handles: Sequence[Any],
        gws: Sequence[int],
        lws: Sequence[int] | None,
        wait_for: Sequence[_Event] = (),
        timed: bool = True,
    ) -> _Event:
        """Launch `prog` over `gws[0]` threads in blocks of `lws[0]` (256 when None) and return its event
        (with a start event too when `timed`, for `event_seconds`). Buffers are passed as explicitly typed
        64-bit pointers (numpy.uint64), never as bare ints."""
        block = int(lws[0]) if lws else 256
        grid = -(-int(gws[0]) // block)
        args = tuple([np.uint64(h.ptr) for h in handles])
        try:
            with self._dev, self.stream:  # RawKernel launches on the current stream
                self._after(wait_for)
                start = None
                if timed:
                    start = cp.cuda.Event(block=False, disable_timing=False)
                    start.record(self.stream)
                _call(prog, grid, block, args)
                return _Event(self.stream, start, self._dev)
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as e:
            raise self._error(f"launch of {prog.name} (gws={tuple(gws)}, lws={lws})", e) from e

    # -- CUDA graphs (runtime/replay.py captures a repeated run of launches once and replays it) --------

    def graph_key(self, handles: Sequence[Any]) -> tuple[int, ...]:
        """What a captured graph depends on besides its kernels: the device address of every argument."""
        return tuple([h.ptr for h in handles])

    def capture_graph(self, launches: Sequence[tuple[_Kernel, Sequence[Any], Sequence[int], Sequence[int] | None]]):
        """Capture `launches` ((program, handles, gws, lws) each, in order) into one CUDA graph, without
        running them (stream capture on this backend's stream records instead of executing). Only kernel
        launches are captured: no event, copy or allocation, which capture would forbid or record."""
        try:
            with self._dev, self.stream:
                self.stream.begin_capture()
                try:
                    for prog, handles, gws, lws in launches:
                        block = int(lws[0]) if lws else 256
                        _call(prog, -(-int(gws[0]) // block), block, tuple([np.uint64(h.ptr) for h in handles]))
                except BaseException:
                    with contextlib.suppress(Exception):  # end the broken capture; its graph is dropped
                        self.stream.end_capture()
                    raise
                return self.stream.end_capture()
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as e:
            raise self._error(f"capture of a CUDA graph of {len(launches)} launches", e) from e

    def launch_graph(self, graph: Any, wait_for: Sequence[_Event] = (), timed: bool = True) -> _Event:
        """Launch a captured graph on the stream; its event (timed as a whole when `timed`)."""
        try:
            if self._switch:
                with self._dev:
                    return self._launch_graph(graph, wait_for, timed)
            return self._launch_graph(graph, wait_for, timed)
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as e:
            raise self._error("launch of a CUDA graph", e) from e

    def _launch_graph(self, graph: Any, wait_for: Sequence[_Event], timed: bool) -> _Event:
        if wait_for:
            self._after(wait_for)
        start = None
        if timed:
            start = cp.cuda.Event(block=False, disable_timing=False)
            start.record(self.stream)
        graph.launch(self.stream)
        return _Event(self.stream, start, self._dev)

    # -- NCCL --------------------------------------------------------------------------------

    def init_nccl(self, unique_id: Any, world_size: int, rank: int) -> None:
        """Join the communicator `unique_id` as `rank` of `world_size` (blocks until every rank joins)."""
        from cupy.cuda import nccl

        with self._dev:
            self.comm = nccl.NcclCommunicator(int(world_size), unique_id, int(rank))
        self.nccl_rank = int(rank)

    def _nccl(self, what: str) -> Any:
        if self.comm is None:
            raise DeviceError(f"{self.name}: {what} needs NCCL, and this worker has joined no communicator")
        from cupy.cuda import nccl

        return nccl

    def send(self, handle: Any, peer: int, nbytes: int, wait_for: Sequence[_Event] = ()) -> _Event:
        """Send `nbytes` of `handle` to rank `peer`, on the compute stream (ordered with the kernels)."""
        nccl = self._nccl("Send")
        try:
            with self._dev:
                self._after(wait_for)
                self.comm.send(handle.ptr, int(nbytes), nccl.NCCL_INT8, int(peer), self.stream.ptr)
                return _Event(self.stream)
        except Exception as e:  # NcclError and CUDA errors alike
            raise DeviceError(f"{self.name}: NCCL send of {nbytes} bytes to rank {peer} failed: {e}") from e

    def recv(self, handle: Any, peer: int, nbytes: int, wait_for: Sequence[_Event] = ()) -> _Event:
        """Receive `nbytes` from rank `peer` into `handle`, on the compute stream."""
        nccl = self._nccl("Recv")
        try:
            with self._dev:
                self._after(wait_for)
                self.comm.recv(handle.ptr, int(nbytes), nccl.NCCL_INT8, int(peer), self.stream.ptr)
                return _Event(self.stream)
        except Exception as e:
            raise DeviceError(f"{self.name}: NCCL receive of {nbytes} bytes from rank {peer} failed: {e}") from e

    # -- events ------------------------------------------------------------------------------

    def event_seconds(self, event: _Event) -> float:
        """Device-side duration of a completed launch (between the events recorded around it)."""
        if event.start is None:
            return 0.0
        with self._dev:
            return cp.cuda.get_elapsed_time(event.start, event.end) * 1e-3

    def is_done(self, event: _Event) -> bool:
        with self._dev:
            return bool(event.end.done)

    def wait(self, events: Sequence[_Event]) -> None:
        with self._dev:
            for e in events:
                e.end.synchronize()

    def synchronize(self) -> None:
        if self._switch:
            with self._dev:
                self.stream.synchronize()
        else:
            self.stream.synchronize()
        if self._staging:
            self._staging.clear()

    def close(self) -> None:
        with self._dev:
            self.stream.synchronize()
            self._staging.clear()
            self._cache.clear()
            if self.comm is not None:
                with contextlib.suppress(Exception):  # closing anyway
                    self.comm.destroy()
                self.comm, self.nccl_rank = None, None
            self.pool.free_all_blocks()

    def _error(self, what: str, e: Exception) -> Exception:
        text = str(e)
        if "out of memory" in text.lower() or "OUT_OF_MEMORY" in text:
            return OutOfMemoryError(f"{self.name}: {what} failed, device memory exhausted: {e}", device=self.name)
        return DeviceError(f"{self.name}: {what} failed: {e}")


def _compile_log(e: Exception) -> str:
    get = getattr(e, "get_message", None)
    try:
        return str(get()) if get is not None else str(e)
    except Exception:  # noqa: BLE001
        return str(e)
