"""Shared by the driver and the workers: the commands a driver sends to a device worker and the
results it gets back. Everything here is a frozen dataclass of plain values (ints, strings, tuples,
NumPy arrays, or an opaque reference the transport resolves before the worker sees it), so a batch
can cross a process boundary through Ray, and no live handle or closure ever does. Buffers and
programs are named by integer ids that the driver allocates; the worker maps them to device objects.
Also the helpers both sides use to move transfers between batches: `exports_of`, `export_value`,
`substitute`; and the frames of a replay socket (a one-worker replay on the driver's own host, sent to the
actor without Ray: engine/ray_replay_socket.py, runtime/replay_socket.py), packed with `struct` and JSON,
never pickle, so what arrives on a socket can only ever be data.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Alloc:
    """Reserve `nbytes` of device memory for buffer `buf` (from the worker's pool)."""

    buf: int
    nbytes: int


@dataclass(frozen=True)
class Free:
    """Return buffer `buf` to the pool once every queued command that touches it has finished."""

    buf: int


@dataclass(frozen=True)
class TransferRef:
    """Placeholder for the data of transfer `id` in a CopyIn: the backend replaces it with the array (or a
    Ray ObjectRef) that the source worker's exporting CopyOut produced in an earlier step."""

    id: int


@dataclass(frozen=True)
class CopyIn:
    """Copy host data (a C-contiguous NumPy array, or a transport reference resolved to one) into `buf`."""

    buf: int
    data: Any


@dataclass(frozen=True)
class CopyOut:
    """Copy `buf` to the host after its last write; the result value is an array of `dtype`/`shape`."""

    buf: int
    dtype: str
    shape: tuple[int, ...]
    export: int = 0  # nonzero: the value is transfer `export`, shipped to another worker, not to the driver


@dataclass(frozen=True)
class KernelOps:
    """A fused kernel as plain data, for a device that interprets kernels instead of compiling their source
    (the reference device). `inputs`: (shape, dtype name) of each input buffer, in argument order. `rows`:
    the kernel's ops in topological order, each `(op, arg, shape, dtype name, source rows)`, where `op` is a
    graph op's name ("input", "const", "reshape", "permute", "expand", "flip", "pad", "cast", "unary",
    "binary", "where", "reduce") and `arg` plain data: the input's position, the constant, the shape, the
    axes, (pad widths, value), the dtype name, the unary or binary op's name, or (reduce op's name, axes).
    `outputs`: the row of each output buffer, whose arguments follow the inputs'."""

    inputs: tuple[tuple[tuple[int, ...], str], ...]
    rows: tuple[tuple, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Compile:
    """Build `source` (kernel entry point `name`) and keep it as program `prog` (cached by source). `ops`
    is the same kernel as an op list, sent only to devices that interpret kernels (the reference device)."""

    prog: int
    source: str
    name: str
    ops: KernelOps | None = None


@dataclass(frozen=True)
class Build:
    """Build `sources` now, side by side, where the device's compiler can run on several threads (a hint that
    never fails: a source that does not build is reported by its Compile); elsewhere it does nothing. The
    programs a plan will need, every candidate the tuner will time among them, compile at once."""

    sources: tuple[str, ...]


@dataclass(frozen=True)
class Launch:
    """Run program `prog` with `bufs` as its arguments, in order. `reads`/`writes` say which of them
    the kernel loads and stores, so the launch waits for their last writes (and, for writes, reads)."""

    prog: int
    bufs: tuple[int, ...]
    gws: tuple[int, ...]
    lws: tuple[int, ...] | None
    reads: tuple[int, ...]
    writes: tuple[int, ...]


@dataclass(frozen=True)
class Send:
    """Send `buf` to the worker of rank `peer` (NCCL on CUDA workers)."""

    buf: int
    peer: int
    nbytes: int


@dataclass(frozen=True)
class Recv:
    """Receive `nbytes` from the worker of rank `peer` into `buf`."""

    buf: int
    peer: int
    nbytes: int


@dataclass(frozen=True)
class Spill:
    """Copy `buf` to host memory held by the worker and release its device memory."""

    buf: int


@dataclass(frozen=True)
class Reload:
    """Bring spilled buffer `buf` back into device memory (the driver mirrors the pool, so it fits)."""

    buf: int


@dataclass(frozen=True)
class Sync:
    """Wait until every command queued so far on this worker has finished."""


@dataclass(frozen=True)
class DefineTemplate:
    """Keep `commands` as batch template `template`, for `Replay`. Its buffer fields (`buf`, a Launch's
    `bufs`/`reads`/`writes`) hold slot numbers 0..n-1 instead of buffer ids; a replay binds each slot
    to a buffer. Allowed commands: Alloc, Free, Launch, Sync, Send, Recv, an exporting CopyOut, and a
    CopyIn of a TransferRef (an incoming transfer). Programs must be compiled already."""

    template: int
    commands: tuple


@dataclass(frozen=True)
class Replay:
    """Run batch template `template` with slot i bound to buffer `bufs[i]`. `imports` holds the data of
    the template's incoming transfers in the order of its CopyIns (TransferRef placeholders until the
    backend substitutes the arrays); `exports` names the transfers its CopyOuts export, in order. The
    result is one Done whose value is the tuple of exported arrays, or one Failed naming the template's
    command that failed (the template's later Frees still run, as after a failure in a batch)."""

    template: int
    bufs: tuple[int, ...]
    imports: tuple = ()
    exports: tuple[int, ...] = ()


@dataclass(frozen=True)
class DropTemplate:
    """Forget batch template `template` (and any CUDA graphs captured for it)."""

    template: int


Command = (Alloc | Free | CopyIn | CopyOut | Compile | Build | Launch | Send | Recv | Spill | Reload | Sync | DefineTemplate
           | Replay | DropTemplate)


@dataclass(frozen=True)
class Done:
    """Command `index` of the batch succeeded; `value` holds what it returns (CopyOut: an array)."""

    index: int
    value: Any = None


@dataclass(frozen=True)
class Failed:
    """Command `index` of the batch failed. `error` names the zyx_dist error class
    (e.g. "CompileError", "OutOfMemoryError"), `data` carries its fields."""

    index: int
    error: str
    message: str
    traceback: str = ""
    data: dict = field(default_factory=dict)


Result = Done | Failed


@dataclass(frozen=True)
class BatchResult:
    """What a worker returns for one batch: one result per command run (a batch stops at the first
    failure, except that Free commands after it still run), the worker's incarnation id, the bytes its
    pool holds for live buffers, and device-side timings (seconds) of the launches in the batch.
    `graphs` has one (first launch, launches, seconds) per CUDA graph replayed in the batch: launches
    `first .. first + launches - 1` ran as one captured graph, timed as a whole, and their entries in
    `kernel_seconds` are that time split evenly."""

    results: tuple[Result, ...]
    incarnation: str
    bytes_in_use: int
    kernel_seconds: tuple[float, ...] = ()
    graphs: tuple[tuple[int, int, float], ...] = ()


def exports_of(batch: list[Command]) -> list[tuple[int, int, int]]:
    """(command index, position, transfer id) of each transfer a batch exports: an exporting CopyOut
    (position -1: the command's value is the array) or a Replay's exports (position k: the k-th array
    of its value)."""
    out = []
    for i, c in enumerate(batch):
        cls = c.__class__
        if cls is CopyOut and c.export:
            out.append((i, -1, c.export))
        elif cls is Replay and c.exports:
            out.extend((i, k, tid) for k, tid in enumerate(c.exports))
    return out


def export_value(results: tuple, index: int, position: int):
    """The array of one export (see `exports_of`) among a batch's results, None if its command failed."""
    r = results[index] if index < len(results) else None
    if not isinstance(r, Done):
        return None
    return r.value if position < 0 else r.value[position]


def substitute(batch: list[Command], data: dict) -> list[Command]:
    """The batch with each TransferRef (a CopyIn's data, a Replay's imports) replaced by `data[id]` (an
    array or an ObjectRef)."""
    out = []
    for c in batch:
        if isinstance(c, CopyIn) and isinstance(c.data, TransferRef):
            c = dataclasses.replace(c, data=data.get(c.data.id))
        elif c.__class__ is Replay and c.imports:
            c = dataclasses.replace(c, imports=tuple(data.get(r.id) if isinstance(r, TransferRef) else r
                                                     for r in c.imports))
        out.append(c)
    return out


def batch_result(value: Any) -> BatchResult:
    """The BatchResult part of what a worker's call returned: a Ray actor's `run` returns the BatchResult
    followed by the arrays of its exports (exporting CopyOuts, a Replay's exports) when the batch has any, else the BatchResult alone."""
    return value[0] if isinstance(value, tuple) else value


# ---- the replay socket's frames ----------------------------------------------------------------------------
# Each frame is its body's length (4 bytes) and the body. A request: its sequence number, the template, then the
# counts and values of the buffer ids bound to its slots, of the frees before it and of the uploads ((buffer id,
# bytes, raw host data) each); template PING_TEMPLATE asks for nothing but the reply, READ_TEMPLATE for buffers'
# bytes. A reply: the request's sequence number (a reply never answers another request), whether it failed, the
# CUDA graphs it replayed (first launch and launches of each), the bytes in use, the worker's incarnation, the
# Failed's fields as JSON, and the bytes a read asked for: each buffer at an offset of the body that is a multiple
# of DATA_ALIGN, so the arrays made over them are aligned.

FRAME = struct.Struct("<I")
_REQUEST = struct.Struct("<qqIII")
_UPLOAD = struct.Struct("<qqQ")
_REPLY = struct.Struct("<qBqqII")
PING_TEMPLATE = -1
# a read: `bufs` holds (buffer id, bytes) pairs to copy out after the frees; the reply carries their bytes in order
READ_TEMPLATE = -2
SOCKET_TOKEN_BYTES = 16
MAX_FRAME = 1 << 26  # bytes: a frame holds ids, uploads or a read of up to 16 MiB (engine/ray_backend.py)
DATA_ALIGN = 64


def aligned(n: int) -> int:
    """`n` rounded up to a multiple of DATA_ALIGN (where a read's next buffer starts)."""
    return -(-n // DATA_ALIGN) * DATA_ALIGN


def await_readable(sock: Any, seconds: float) -> None:
    """Poll `sock` for up to `seconds` until it has data or was closed (then a blocking read returns at once):
    a replay's reply, or the next request of a loop, usually comes within tens of microseconds, and a thread
    that blocks in `recv` pays the kernel's wake-up on top. Polls only (`MSG_PEEK`), so it reads nothing."""
    end = time.perf_counter() + seconds
    peek = socket.MSG_PEEK | socket.MSG_DONTWAIT
    while True:
        try:
            sock.recv(1, peek)
            return  # data, or b"" for a closed peer
        except BlockingIOError:
            if time.perf_counter() >= end:
                return
        except OSError:
            return  # (the blocking read that follows raises it)


def read_frame(sock: Any) -> bytearray | None:
    """The body of the next frame on socket `sock` (writeable, so arrays read from it are too); None when the
    peer closed it first. The two sides take turns (one reply per request), so a read that finds more than one
    frame is a broken peer: ValueError, as for a frame over MAX_FRAME."""
    data = sock.recv(1 << 16)  # (a whole frame, almost always)
    while 0 < len(data) < FRAME.size:
        more = sock.recv(FRAME.size - len(data))
        data = data + more if more else b""
    if not data:
        return None
    (length,) = FRAME.unpack_from(data)
    if length > MAX_FRAME or len(data) > FRAME.size + length:
        raise ValueError(f"malformed frame ({length} bytes announced, {len(data) - FRAME.size} read)")
    body = bytearray(length)
    body[:len(data) - FRAME.size] = memoryview(data)[FRAME.size:]
    view, got = memoryview(body), len(data) - FRAME.size
    while got < length:  # (a large read: straight into its place, no concatenation)
        n = sock.recv_into(view[got:], length - got)
        if not n:
            return None
        got += n
    return body


def replay_request(seq: int, template: int, bufs: tuple[int, ...], frees: Any, uploads: Any = ()) -> bytes:
    """The frame of request `seq`: one replay (as `Worker.run_replay` takes it; `uploads`: (buffer id, bytes, host
    array)), or a read or a ping (the templates above)."""
    parts = [_REQUEST.pack(seq, template, len(bufs), len(frees), len(uploads)),
             struct.pack(f"<{len(bufs)}q", *bufs), struct.pack(f"<{len(frees)}q", *frees)]
    for buf, nbytes, data in uploads:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8).tobytes()
        parts += [_UPLOAD.pack(buf, nbytes, len(raw)), raw]
    body = b"".join(parts)
    return FRAME.pack(len(body)) + body


def read_replay_request(body: bytes) -> tuple[int, int, tuple[int, ...], tuple[int, ...], tuple]:
    """(seq, template, bufs, frees, uploads) of a request's body, the uploads' data as byte arrays; ValueError for
    a body that is not one well-formed request."""
    try:
        seq, template, nbufs, nfrees, nuploads = _REQUEST.unpack_from(body, 0)
        at = _REQUEST.size
        bufs = struct.unpack_from(f"<{nbufs}q", body, at)
        at += 8 * nbufs
        frees = struct.unpack_from(f"<{nfrees}q", body, at)
        at += 8 * nfrees
        uploads = []
        for _ in range(nuploads):
            buf, nbytes, length = _UPLOAD.unpack_from(body, at)
            at += _UPLOAD.size
            if at + length > len(body):
                raise struct.error("an upload runs past the frame")
            uploads.append((buf, nbytes, np.frombuffer(body, np.uint8, length, at)))
            at += length
    except struct.error as e:
        raise ValueError(f"malformed replay request: {e}") from None
    if at != len(body):
        raise ValueError(f"malformed replay request: {len(body) - at} bytes left over")
    return seq, template, bufs, frees, tuple(uploads)


def replay_reply(seq: int, failed: Failed | None, graphs: tuple, in_use: int, incarnation: str,
                 data: tuple = ()) -> bytes:
    """The frame answering request `seq`: a replay's outcome (`Worker.run_replay`'s: `graphs` as
    `BatchResult.graphs`, untimed; and the worker's incarnation), or a read's (the buffers it copied out, in
    `data`, each at an aligned offset). A Failed whose fields JSON cannot hold is sent with them as text."""
    inc = incarnation.encode()
    err = b""
    if failed is not None:
        fields = [failed.index, failed.error, failed.message, failed.traceback, failed.data]
        try:
            err = json.dumps(fields, default=repr).encode()
        except (TypeError, ValueError):  # (e.g. a dict with keys that are not strings)
            err = json.dumps(fields[:4] + [{"data": repr(failed.data)}]).encode()
    spans = struct.pack(f"<{2 * len(graphs)}q", *(x for first, n, _s in graphs for x in (first, n)))
    parts = [_REPLY.pack(seq, failed is not None, len(graphs), in_use, len(inc), len(err)), spans, inc, err]
    size = _REPLY.size + len(spans) + len(inc) + len(err)
    for d in data:
        pad = aligned(size) - size
        n = memoryview(d).nbytes
        parts += [bytes(pad), d]
        size += pad + n
    return b"".join((FRAME.pack(size), *parts))


def read_replay_reply(body: bytes) -> tuple[int, Failed | None, tuple, int, str, int]:
    """(seq, None or the Failed, the CUDA graphs replayed as `BatchResult.graphs`, bytes in use, incarnation, the
    offset in `body` where a read's first buffer would begin, unaligned: `aligned` of it is where it does)."""
    seq, has_failed, ngraphs, in_use, ninc, nerr = _REPLY.unpack_from(body, 0)
    at = _REPLY.size
    spans = struct.unpack_from(f"<{2 * ngraphs}q", body, at)
    graphs = tuple([(spans[i], spans[i + 1], 0.0) for i in range(0, len(spans), 2)])
    at += 16 * ngraphs
    incarnation = body[at:at + ninc].decode()
    failed = Failed(*json.loads(body[at + ninc:at + ninc + nerr])) if has_failed else None
    return seq, failed, graphs, in_use, incarnation, at + ninc + nerr
