"""Unit tests of the actor-side MemoryPool with a fake backend that records allocations (no device)."""

from __future__ import annotations

import pytest

from zyx_dist.errors import OutOfMemoryError
from zyx_dist.runtime.pool import MemoryPool, bucket_size


class FakeBackend:
    """Counts device allocations; `capacity` makes alloc fail like a full device."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.live: dict[int, int] = {}
        self.allocs = 0
        self.waited: list = []
        self._next = 0

    def alloc(self, nbytes: int) -> int:
        if self.capacity is not None and sum(self.live.values()) + nbytes > self.capacity:
            raise MemoryError("fake device full")
        self._next += 1
        self.allocs += 1
        self.live[self._next] = nbytes
        return self._next

    def free(self, handle: int) -> None:
        del self.live[handle]

    def wait(self, events) -> None:
        self.waited.extend(events)


def test_bucket_sizes():
    assert bucket_size(0) == 256 and bucket_size(1) == 256 and bucket_size(256) == 256 and bucket_size(257) == 512
    assert bucket_size(4096) == 4096 and bucket_size(4097) == 8192
    for n in (5000, 70_000, 1_000_001, 3 << 30):
        b = bucket_size(n)
        assert n <= b <= n * 1.125 + 4096  # at most 12.5% (or one 4 KiB page) wasted


def test_reuse_same_bucket_and_exact_accounting():
    be = FakeBackend()
    pool = MemoryPool(be, None, device="fake:0")
    a = pool.alloc(1000)
    assert pool.bytes_in_use == 1000 and pool.bytes_reserved == 1024 and be.allocs == 1
    b = pool.alloc(3)
    assert pool.bytes_in_use == 1003
    pool.free(a)
    assert pool.bytes_in_use == 3 and pool.bytes_reserved == 1024 + 256  # cached memory stays reserved
    c = pool.alloc(900)  # same 1024-byte bucket: the cached block comes back
    assert c.handle == a.handle and be.allocs == 2 and c.nbytes == 900
    assert pool.bytes_in_use == 903
    d = pool.alloc(2000)  # another bucket: a new device allocation
    assert d.handle not in (a.handle, b.handle) and be.allocs == 3
    for x in (b, c, d):
        pool.free(x)
    assert pool.bytes_in_use == 0 and pool.buffers == 0
    assert pool.release_cached() == 256 + 1024 + 2048
    assert pool.bytes_reserved == 0 and be.live == {}


def test_which_blocks_come_back_depends_on_what_is_free_not_on_the_order_of_frees():
    """A repeated step (CUDA graph replay) must meet the same addresses whatever order its frees came in."""
    got = []
    for order in ((0, 1, 2, 3), (3, 1, 0, 2), (2, 3, 1, 0)):
        pool = MemoryPool(FakeBackend(), None, device="fake:0")
        blocks = [pool.alloc(1000) for _ in range(4)]
        for i in order:
            pool.free(blocks[i])
        got.append([pool.alloc(1000).handle for _ in range(3)])
    assert got[0] == got[1] == got[2] == [1, 2, 3]  # the oldest first


def test_zero_bytes_accounts_zero():
    be = FakeBackend()
    pool = MemoryPool(be, None)
    z = pool.alloc(0)
    assert pool.bytes_in_use == 0 and be.live[z.handle] >= 1
    pool.free(z)
    assert pool.bytes_in_use == 0


def test_double_free_rejected():
    pool = MemoryPool(FakeBackend(), None)
    a = pool.alloc(10)
    pool.free(a)
    with pytest.raises(ValueError):
        pool.free(a)


def test_limit_raises_with_numbers():
    pool = MemoryPool(FakeBackend(), 10_000, device="fake:0")
    pool.alloc(4096)
    with pytest.raises(OutOfMemoryError) as ei:
        pool.alloc(8000)
    e = ei.value
    assert e.device == "fake:0" and e.requested == 8000 and e.free == 10_000 - 4096
    msg = str(e)
    assert "fake:0" in msg and "8000" in msg and str(10_000 - 4096) in msg
    assert pool.bytes_in_use == 4096  # the failed request changed nothing


def test_cache_is_emptied_even_when_raising():
    be = FakeBackend()
    pool = MemoryPool(be, 10_000, device="fake:0")
    pool.alloc(4096)
    pool.free(pool.alloc(2048))
    assert pool.bytes_reserved == 4096 + 2048
    with pytest.raises(OutOfMemoryError) as ei:
        pool.alloc(9000)
    assert pool.bytes_reserved == 4096 and len(be.live) == 1  # cached block went back to the device
    assert ei.value.free == 10_000 - 4096


def test_cached_blocks_released_before_raising():
    be = FakeBackend()
    pool = MemoryPool(be, 10_000, device="fake:0")
    a = pool.alloc(4096)
    pool.free(a, pending=["ev1"])
    assert pool.bytes_reserved == 4096 and be.live
    b = pool.alloc(8000)  # 8192-byte bucket fits only once the cached 4 KiB block is released
    assert pool.bytes_in_use == 8000 and pool.bytes_reserved == 8192
    assert a.handle not in be.live
    assert be.waited == ["ev1"]  # released memory still in use was waited for first
    pool.free(b)


def test_pending_events_handed_to_next_owner():
    pool = MemoryPool(FakeBackend(), None)
    a = pool.alloc(100)
    pool.free(a, pending=["w", "r"])
    b = pool.alloc(50)
    assert b is a and b.pending == ("w", "r")


def test_settle_drops_the_events_of_blocks_freed_since_and_only_those():
    """After a device synchronize every cached block's events are done: settle drops those freed with events
    since the last settle (the others have none), so its cost is what was freed, not the cache's size."""
    pool = MemoryPool(FakeBackend(), None)
    quiet = [pool.alloc(100 + i) for i in range(1000)]
    for b in quiet:
        pool.free(b)
    busy = [pool.alloc(5000) for _ in range(3)]
    for i, b in enumerate(busy):
        pool.free(b, pending=[f"e{i}"])
    assert len(pool._unsettled) == 3  # the quiet blocks are not walked
    pool.settle()
    assert all(b.pending == () for b in quiet + busy) and not pool._unsettled
    again = pool.alloc(5000)  # a settled block: its next owner waits for nothing
    assert again in busy and again.pending == ()
    pool.free(again, pending=["late"])
    pool.release_cached()  # released blocks are forgotten, events and all
    assert not pool._unsettled


def test_backend_failure_releases_cache_then_raises_oom():
    be = FakeBackend(capacity=8192)
    pool = MemoryPool(be, None, device="fake:1")
    a = pool.alloc(4096)
    pool.free(a)
    b = pool.alloc(8000)  # the device is full until the cached block goes
    assert be.live == {b.handle: 8192}
    with pytest.raises(OutOfMemoryError) as ei:
        pool.alloc(100)
    assert ei.value.device == "fake:1" and ei.value.requested == 100
    assert pool.bytes_in_use == 8000
