"""Actor side: per-buffer event bookkeeping for one worker's device queue. It takes the buffer ids a
command reads and writes plus the opaque event the backend returned for it, and gives the events the
next command on a buffer must wait for: the last write of everything it touches, and for what it
writes also the reads since that write (write-after-read). With this an out-of-order queue runs
independent commands concurrently and dependent ones in order. Events are never inspected here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class EventTracker:
    """For each buffer id: the events of its last write and the read events since that write."""

    def __init__(self) -> None:
        # A tuple, not one event, because a buffer reusing pooled memory starts out waiting on all the
        # pending events of the memory's previous owner (see `seed`). Both empty: nothing is pending (a
        # replay reads them to skip its wait list).
        self.last_writes: dict[int, tuple[Any, ...]] = {}
        self.last_reads: dict[int, list[Any]] = {}

    def wait_list(self, reads: Iterable[int], writes: Iterable[int]) -> list[Any]:
        """Events a command reading `reads` and writing `writes` must wait for, without duplicates."""
        last_writes, last_reads = self.last_writes, self.last_reads
        if not last_writes and not last_reads:  # right after a synchronize: nothing is pending
            return []
        out: list[Any] = []
        seen: set[int] = set()
        groups = [last_writes.get(b, ()) for b in reads]
        for b in writes:
            groups.append(last_writes.get(b, ()))
            groups.append(last_reads.get(b, ()))
        for events in groups:
            for e in events:
                if id(e) not in seen:
                    seen.add(id(e))
                    out.append(e)
        return out

    def record(self, reads: tuple[int, ...], writes: tuple[int, ...], event: Any) -> None:
        """Note that `event` reads `reads` and writes `writes` (a buffer in both counts as written)."""
        last_writes, last_reads = self.last_writes, self.last_reads
        alone = (event,)
        for b in writes:
            # The new write waited for the old write and reads, so it alone now stands for the buffer.
            last_writes[b] = alone
            if last_reads:
                last_reads.pop(b, None)
        if len(writes) > 8:  # (a captured graph's hundreds: a set; a kernel's few: the tuple's search is cheaper)
            writes = set(writes)
        for b in reads:
            if b not in writes:
                last_reads.setdefault(b, []).append(event)

    def seed(self, buf: int, events: Iterable[Any]) -> None:
        """Make `buf` start out as if last written by `events` (memory still in use by its previous owner)."""
        events = tuple(events)
        if events:
            self.last_writes[buf] = events
        else:
            self.last_writes.pop(buf, None)
        self.last_reads.pop(buf, None)

    def forget(self, buf: int) -> tuple[Any, ...]:
        """Drop `buf` and return every event still pending on it (its last write and later reads)."""
        last_writes, last_reads = self.last_writes, self.last_reads
        if not last_writes and not last_reads:  # right after a synchronize: nothing is pending
            return ()
        return (*last_writes.pop(buf, ()), *last_reads.pop(buf, ()))

    def clear(self) -> None:
        """Forget every event (after a full device synchronize, when all of them have completed)."""
        self.last_writes.clear()
        self.last_reads.clear()
