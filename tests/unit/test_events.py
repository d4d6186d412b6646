"""Unit tests of the actor-side per-buffer event tracker (events are plain strings here)."""

from __future__ import annotations

from zyx_dist.runtime.events import EventTracker


def test_read_after_write_waits_for_write():
    t = EventTracker()
    assert t.wait_list((1,), (2,)) == []
    t.record((), (1,), "w1")
    assert t.wait_list((1,), ()) == ["w1"]
    assert t.wait_list((3,), ()) == []


def test_write_after_read_waits_for_reads_and_last_write():
    t = EventTracker()
    t.record((), (1,), "w1")
    t.record((1,), (2,), "k1")
    t.record((1,), (3,), "k2")
    assert t.wait_list((), (1,)) == ["w1", "k1", "k2"]
    # A reader of 1 only needs the write, not the other readers.
    assert t.wait_list((1,), ()) == ["w1"]


def test_new_write_replaces_history():
    t = EventTracker()
    t.record((), (1,), "w1")
    t.record((1,), (2,), "k1")
    t.record((), (1,), "w2")
    assert t.wait_list((1,), ()) == ["w2"]
    assert t.wait_list((), (1,)) == ["w2"]


def test_read_and_write_same_buffer_counts_as_write():
    t = EventTracker()
    t.record((), (1,), "w1")
    t.record((1,), (1,), "inplace")
    assert t.wait_list((), (1,)) == ["inplace"]


def test_no_duplicates():
    t = EventTracker()
    t.record((), (1, 2), "w")
    assert t.wait_list((1, 2), (1, 2)) == ["w"]


def test_forget_returns_all_pending_and_seed():
    t = EventTracker()
    t.record((), (1,), "w1")
    t.record((1,), (2,), "k1")
    assert sorted(t.forget(1)) == ["k1", "w1"]
    assert t.wait_list((1,), (1,)) == [] and t.forget(1) == ()
    t.seed(5, ["old_w", "old_r"])
    assert t.wait_list((5,), ()) == ["old_w", "old_r"]
    t.record((), (5,), "new")
    assert t.wait_list((), (5,)) == ["new"]
    t.clear()
    assert t.wait_list((2,), (2,)) == []
