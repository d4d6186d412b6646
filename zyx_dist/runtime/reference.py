"""Actor side: the reference device, a `device.Device` that runs kernels with NumPy instead of compiling
them, so the worker, the scheduler and the whole engine run (and are tested) with no OpenCL or CUDA at all.
It is a test and debugging device: named explicitly (`reference:N` in a device list), never chosen by
`devices: auto`, and slow (every op is one NumPy call over the whole tensor).

It takes what any backend takes: buffers are host memory (one uint8 array each), and a program is the
kernel's op list (`protocol.KernelOps`), which the driver attaches to every Compile for this device; the
C source beside it is not read. Compiling checks the op list; a launch interprets it over the launch's
buffers with the opset's semantics as the renderer implements them: half floats computed in float32 and
rounded once on store (and where cast to half), integer division and remainder by zero giving 0,
remainder with the divisor's sign, NaN-propagating max/min, round half to even, integer powers by
repeated squaring (negative exponents: 0 except for bases 1 and -1), bools combined as logical and/or.
Commands run when queued, so every event is complete when returned; a launch's event holds the wall
time of its interpretation, which `event_seconds` reports.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import DeviceError, OutOfMemoryError
from ..protocol import KernelOps
from .device import BuildError, ProgramCache

_HALF = ("float16", "bfloat16")  # stored narrow, computed in float32 (API.md section 2)


def _compute_dtype(name: str) -> np.dtype:
    return np.dtype(np.float32) if name in _HALF else dtypes.dtype(name).np_dtype


def _int_safe(fn):
    """Integer floor division / remainder with a zero divisor giving 0 (as the kernels do)."""

    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if x.dtype.kind not in "iu":
            return fn(x, y)
        zero = y == 0
        return np.where(zero, 0, fn(x, np.where(zero, 1, y))).astype(x.dtype)

    return f


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind not in "iu":
        return np.power(x, y)
    neg = y < 0  # C's ipow: 1 ** -n is 1, (-1) ** -n is +-1 by parity, anything else ** -n is 0
    out = np.power(x, np.where(neg, 0, y))
    if neg.any():
        odd = (y & 1) == 1
        out = np.where(neg, np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)), out)
    return out.astype(x.dtype)


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _float_only(fn):
    """Float functions (isnan, rounding) that are constant or the identity on integers and bools."""
    def f(x: np.ndarray) -> np.ndarray:
        return fn(x) if x.dtype.kind == "f" else x
    return f


def _shift(left: bool):
    """x << n or x >> n with NumPy's result for any count, as the kernels spell it out: counts outside [0, bits)
    give 0, or for >> the sign's fill."""
    def f(x: np.ndarray, n: np.ndarray) -> np.ndarray:
        bits = 8 * x.dtype.itemsize
        inside = (n >= 0) & (n < bits)
        count = np.where(inside, n, 0).astype(x.dtype)
        if left:
            return np.where(inside, np.left_shift(x, count), 0).astype(x.dtype)
        fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
        return np.where(inside, np.right_shift(x, count), fill).astype(x.dtype)
    return f


UNARY = {
    "neg": np.negative, "not": _not, "abs": lambda x: x if x.dtype.kind in "bu" else np.abs(x),
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "recip": lambda x: np.divide(x.dtype.type(1), x), "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "floor": _float_only(np.floor), "ceil": _float_only(np.ceil),
    "round": _float_only(np.rint), "trunc": _float_only(np.trunc), "log1p": np.log1p, "log10": np.log10,
    "expm1": np.expm1, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "isnan": lambda x: np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, np.bool_),
    "isinf": lambda x: np.isinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, np.bool_),
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": _int_safe(np.floor_divide), "mod": _int_safe(np.remainder), "pow": _pow,
    "max": np.maximum, "min": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "nextafter": np.nextafter, "shl": _shift(True), "shr": _shift(False),
}
BOOL_BINARY = {"add": np.logical_or, "max": np.logical_or, "or": np.logical_or, "mul": np.logical_and,
               "min": np.logical_and, "and": np.logical_and, "xor": np.not_equal}
REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
BOOL_REDUCE = {"sum": np.logical_or, "prod": np.logical_and, "max": np.logical_or, "min": np.logical_and}
MOVEMENT = ("reshape", "permute", "expand", "flip", "pad")
_ARITY = {"input": 0, "const": 0, **dict.fromkeys(MOVEMENT, 1), "cast": 1, "unary": 1, "reduce": 1,
          "binary": 2, "where": 3}


def _pad(x: np.ndarray, widths: tuple, value: Any) -> np.ndarray:
    """Pad by (before, after) per dim; negative widths crop first."""
    crop = tuple(slice(max(-lo, 0), d - max(-hi, 0)) for d, (lo, hi) in zip(x.shape, widths))
    return np.pad(x[crop], [(max(lo, 0), max(hi, 0)) for lo, hi in widths], constant_values=value)


def _cast(x: np.ndarray, to: str) -> np.ndarray:
    if to == "bool":
        return x != 0
    if to in _HALF:  # rounded to the narrow type here, computed on in float32
        return x.astype(dtypes.dtype(to).np_dtype).astype(np.float32)
    return x.astype(_compute_dtype(to))


def evaluate(op: str, arg: Any, shape: tuple[int, ...], dtype: str, srcs: list[np.ndarray]) -> np.ndarray:
    """One row of an op list, from the values of its sources (in compute dtypes: float32 for halves)."""
    if op == "const":  # a broadcast view: a constant costs no memory here either
        return np.broadcast_to(np.array(arg, _compute_dtype(dtype)), shape)
    if op == "reshape":
        return srcs[0].reshape(shape)
    if op == "permute":
        return np.transpose(srcs[0], arg)
    if op == "expand":
        return np.broadcast_to(srcs[0], shape)
    if op == "flip":
        return np.flip(srcs[0], arg)
    if op == "pad":
        return _pad(srcs[0], *arg)
    if op == "cast":
        return _cast(srcs[0], arg)
    if op == "unary":
        return UNARY[arg](srcs[0])
    if op == "binary":
        fn = BOOL_BINARY.get(arg, BINARY[arg]) if srcs[0].dtype == np.bool_ else BINARY[arg]
        return fn(srcs[0], srcs[1])
    if op == "where":
        return np.where(srcs[0], srcs[1], srcs[2])
    if op == "reduce":
        rop, axes = arg
        x = srcs[0]
        fn = BOOL_REDUCE[rop] if x.dtype == np.bool_ else REDUCE[rop]
        return fn.reduce(x, axis=tuple(axes), keepdims=True, dtype=x.dtype)
    raise ValueError(f"unknown op {op!r}")


_NAMES = {d.name for d in dtypes.ALL}


def _row_ok(i: int, row: Any, n_inputs: int) -> bool:
    try:
        op, arg, shape, dtype, srcs = row
        return (op in _ARITY and dtype in _NAMES and all(type(d) is int and d >= 0 for d in shape)
                and len(srcs) == _ARITY[op] and all(type(s) is int and 0 <= s < i for s in srcs)
                and (op != "input" or 0 <= arg < n_inputs) and (op != "unary" or arg in UNARY)
                and (op != "binary" or arg in BINARY) and (op != "reduce" or arg[0] in REDUCE))
    except (TypeError, ValueError, IndexError):
        return False


def check(ops: KernelOps | None) -> None:
    """BuildError naming the first malformed row, when the op list could not be run."""
    if not isinstance(ops, KernelOps):
        raise BuildError("the reference device runs kernels from their op list (Compile.ops), and this program "
                         "came without one: it runs only kernels the driver generated, not hand-written source")
    for i, row in enumerate(ops.rows):
        if not _row_ok(i, row, len(ops.inputs)):
            raise BuildError(f"row {i} of the op list is malformed: {row!r}")
    if not ops.outputs or not all(type(o) is int and 0 <= o < len(ops.rows) for o in ops.outputs):
        raise BuildError(f"the op list's outputs {ops.outputs!r} name no rows")


def interpret(ops: KernelOps, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The kernel's outputs (in their storage dtypes) from its inputs, row by row; a value is dropped after
    its last use, so a long chain holds few arrays at once."""
    last_use = {s: i for i, row in enumerate(ops.rows) for s in row[4]}
    for o in ops.outputs:
        last_use[o] = len(ops.rows)
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # casts of NaN or out-of-range values, as C's
        for i, (op, arg, shape, dtype, srcs) in enumerate(ops.rows):
            if op == "input":
                value = inputs[arg].astype(_compute_dtype(dtype), copy=False)
            else:
                value = evaluate(op, arg, shape, dtype, [values[s] for s in srcs])
                if value.dtype != _compute_dtype(dtype):  # NumPy's own promotions (e.g. int8 + int8 via sums)
                    value = value.astype(_compute_dtype(dtype))
            values[i] = value
            for s in set(srcs):  # x + x reads one value twice
                if last_use[s] == i:
                    del values[s]
        return [values[o].astype(dtypes.dtype(ops.rows[o][3]).np_dtype) for o in ops.outputs]


class _Event:
    """A command that already ran: its wall time (launches) or 0."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds


_DONE = _Event()


class _Program:
    __slots__ = ("name", "ops")

    def __init__(self, ops: KernelOps, name: str) -> None:
        self.ops, self.name = ops, name


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 << 30


class ReferenceDevice:
    """`reference:N`: host memory and NumPy. Reports a quarter of the host's memory (at most 16 GiB) as its
    own, so a worker's default limit leaves the host room."""

    kind = "reference"

    def __init__(self, index: int) -> None:
        if index < 0:
            raise DeviceError(f"no reference device reference:{index}")
        self.index = index
        self.name = f"reference:{index}"
        self._memory = min(_host_memory() // 4, 16 << 30)
        self._cache = ProgramCache(self.name, "reference interpreter check")

    def info(self) -> dict:
        return {"index": self.index, "name": "NumPy reference interpreter", "vendor": "zyx_dist",
                "platform": "NumPy", "type": "cpu", "global_mem_size": self._memory,
                "max_mem_alloc_size": self._memory, "max_compute_units": 1, "max_work_group_size": 1024,
                "fp16": True, "fp64": True, "driver_version": np.__version__}

    @property
    def memory_bytes(self) -> int:
        return self._memory

    def alloc(self, nbytes: int) -> np.ndarray:
        nbytes = max(int(nbytes), 1)
        try:
            return np.empty(nbytes, np.uint8)
        except MemoryError as e:
            raise OutOfMemoryError(f"{self.name}: allocating {nbytes} bytes failed: {e}", self.name, nbytes) from e

    def free(self, handle: np.ndarray) -> None:
        """Nothing to do: the array goes when the worker drops it."""

    def copy_in(self, handle: np.ndarray, array: np.ndarray, wait_for: Sequence[Any] = ()) -> _Event:
        handle[: array.nbytes] = array.reshape(-1).view(np.uint8)
        return _DONE

    def copy_out(self, handle: np.ndarray, out: np.ndarray, wait_for: Sequence[Any] = ()) -> None:
        out.reshape(-1).view(np.uint8)[:] = handle[: out.nbytes]

    def compile(self, source: str, name: str, options: str = "", ops: KernelOps | None = None) -> _Program:
        """The program is `ops`, checked once per source (the source itself is not read)."""
        def build(_source: str, _options: str) -> _Program:
            check(ops)
            return _Program(ops, name)

        return self._cache.kernel(source, name, options, build, lambda program, _name: program)

    def launch(self, prog: _Program, handles: Sequence[np.ndarray], gws: Sequence[int], lws: Sequence[int] | None,
               wait_for: Sequence[Any] = (), timed: bool = True) -> _Event:
        """Interpret `prog` with `handles` as its inputs then outputs (the work sizes do not matter here)."""
        ops = prog.ops
        if len(handles) != len(ops.inputs) + len(ops.outputs):
            raise DeviceError(f"{self.name}: {prog.name} takes {len(ops.inputs) + len(ops.outputs)} buffers, "
                              f"the launch gave {len(handles)}")
        start = time.perf_counter()
        inputs = [_view(h, shape, name, self.name) for h, (shape, name) in zip(handles, ops.inputs)]
        outs = interpret(ops, inputs)
        for h, value in zip(handles[len(ops.inputs):], outs):
            _view(h, value.shape, value.dtype, self.name)[...] = value
        return _Event(time.perf_counter() - start)

    def event_seconds(self, event: _Event) -> float:
        return event.seconds

    def is_done(self, event: _Event) -> bool:
        return True

    def wait(self, events: Sequence[_Event]) -> None:
        """Nothing to wait for: every command ran when it was queued."""

    def synchronize(self) -> None:
        """Nothing queued: every command ran when it was queued."""

    def close(self) -> None:
        self._cache.clear()


def _view(handle: np.ndarray, shape: tuple[int, ...], dtype: Any, device: str) -> np.ndarray:
    """The buffer's first bytes as an array of `shape` and `dtype` (a NumPy dtype or a zyx_dist dtype name)."""
    dt = dtypes.dtype(dtype).np_dtype if isinstance(dtype, str) else np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes > handle.nbytes:
        raise DeviceError(f"{device}: a buffer of {handle.nbytes} bytes holds no {dt.name}{tuple(shape)}")
    return handle[:nbytes].view(dt).reshape(shape)
