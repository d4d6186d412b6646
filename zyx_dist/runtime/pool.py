"""Actor side: a worker's device memory pool. It takes a backend (anything with `alloc(nbytes)` and
`free(handle)`, plus `wait(events)` for memory released while commands still use it) and an optional
byte limit, and gives `Block`s of device memory. Sizes are rounded up to buckets and freed blocks are
cached per bucket, so the steady state of a training loop allocates nothing on the device. A bucket
hands out its oldest cached block first (a heap by creation number): which blocks a run gets then
depends only on which are free, not on the order they were freed in, so a repeated step meets the same
addresses again and replays its captured CUDA graph (a stack permutes with every differently ordered
batch of frees, and a training step's addresses never came back). It tracks
`bytes_in_use` (exact requested bytes of live blocks, what the driver mirrors) and `bytes_reserved`
(bucket bytes of live and cached blocks, what the device actually holds). Running out raises
`OutOfMemoryError` naming the device and the numbers, after releasing the cache first.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._util import bucket_size
from ..errors import OutOfMemoryError


@dataclass(eq=False)
class Block:
    """A piece of device memory: the backend's `handle`, the bytes asked for and the bucket reserved.
    `pending` holds events of the previous owner that the first command on it must wait for."""

    handle: Any
    nbytes: int
    size: int
    pending: tuple[Any, ...] = field(default=())
    # memory the worker adopted (zd.from_dlpack): not the pool's, never cached; `owner` keeps it alive
    owner: Any = None
    adopted: bool = False
    seq: int = 0  # creation number: the order of a bucket's cached blocks


class MemoryPool:
    """Size-bucketed device memory with a cache of freed blocks and an optional byte limit."""

    def __init__(self, backend: Any, limit_bytes: int | None = None, device: str = "") -> None:
        self.backend = backend
        self.limit_bytes = limit_bytes
        self.device = device
        self.bytes_in_use = 0  # sum of requested nbytes of live blocks
        self.bytes_reserved = 0  # sum of bucket sizes of live and cached blocks
        self._live: set[Block] = set()
        self._cache: dict[int, list[tuple[int, Block]]] = {}  # bucket -> heap of (seq, block)
        self._seq = itertools.count()
        self._unsettled: list[Block] = []  # cached blocks freed with pending events since the last settle

    @property
    def buffers(self) -> int:
        """Number of live blocks."""
        return len(self._live)

    def alloc(self, nbytes: int) -> Block:
        """A block of at least `nbytes` (a cached one of the same bucket when there is one)."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        return self.alloc_bucketed(bucket_size(nbytes), nbytes)

    def alloc_bucketed(self, size: int, nbytes: int) -> Block:
        """`alloc(nbytes)` for a caller that has checked `nbytes` (>= 0) and knows its bucket `size` (a batch
        template, which works both out once)."""
        cached = self._cache.get(size)
        if cached:
            block = heapq.heappop(cached)[1]
            block.nbytes = nbytes
        else:
            block = Block(self._new(size, nbytes), nbytes, size, seq=next(self._seq))
            self.bytes_reserved += size
        self._live.add(block)
        self.bytes_in_use += nbytes
        return block

    def adopt(self, handle: Any, nbytes: int, owner: Any) -> Block:
        """A live block over memory that is not the pool's (an array handed in zero-copy); `owner` keeps
        that memory alive until the block is freed, and the pool never reuses it."""
        block = Block(handle, nbytes, 0, owner=owner, adopted=True)
        self._live.add(block)
        self.bytes_in_use += nbytes
        return block

    def free(self, block: Block, pending: Sequence[Any] = ()) -> None:
        """Return `block` to the cache; `pending` are events still using it, waited for by its next owner."""
        try:
            self._live.remove(block)
        except KeyError:
            raise ValueError("block is not live in this pool (double free?)") from None
        self.bytes_in_use -= block.nbytes
        if pending:
            block.pending = (*block.pending, *pending)
        if block.adopted:  # the owner's memory goes back to its owner once no command uses it
            self._release(block)
            block.owner = None
            return
        if block.pending:
            self._unsettled.append(block)
        cached = self._cache.get(block.size)
        if cached is None:
            cached = self._cache[block.size] = []
        heapq.heappush(cached, (block.seq, block))

    def release_cached(self) -> int:
        """Give every cached block back to the device; returns the bytes released."""
        released = 0
        for blocks in self._cache.values():
            for _, block in blocks:
                self._release(block)
                released += block.size
        self._cache.clear()
        self._unsettled.clear()
        self.bytes_reserved -= released
        return released

    def settle(self) -> None:
        """Drop the pending events of cached blocks (call after a device synchronize): only those freed with
        events since the last settle have any, so a Sync costs what was freed, not the size of the cache."""
        if self._unsettled:
            for block in self._unsettled:
                block.pending = ()
            self._unsettled.clear()

    def close(self) -> None:
        """Release every block, live or cached."""
        for block in list(self._live):
            self.free(block)
        self.release_cached()

    def _free_bytes(self) -> int:
        return max(0, self.limit_bytes - self.bytes_reserved) if self.limit_bytes is not None else 0

    def _oom(self, nbytes: int, why: str) -> OutOfMemoryError:
        free = self._free_bytes()
        limit = f"limit {self.limit_bytes} bytes, " if self.limit_bytes is not None else ""
        return OutOfMemoryError(
            f"{self.device or 'device'}: out of memory: asked for {nbytes} bytes, {free} bytes free "
            f"({limit}{self.bytes_in_use} bytes in use); {why}",
            device=self.device,
            requested=nbytes,
            free=free,
        )

    def _new(self, size: int, nbytes: int) -> Any:
        if self.limit_bytes is not None and self.bytes_reserved + size > self.limit_bytes:
            self.release_cached()
            if self.bytes_reserved + size > self.limit_bytes:
                raise self._oom(nbytes, "the memory limit would be exceeded")
        try:
            return self.backend.alloc(size)
        except MemoryError:  # includes OutOfMemoryError raised by a backend
            pass
        # The device itself is full: drop the cache and try once more.
        if not self.release_cached():
            raise self._oom(nbytes, "the device could not allocate it")
        try:
            return self.backend.alloc(size)
        except MemoryError as e:
            raise self._oom(nbytes, f"the device could not allocate it ({e})") from e

    def _release(self, block: Block) -> None:
        if block.pending:
            self.backend.wait(block.pending)
            block.pending = ()
        self.backend.free(block.handle)
