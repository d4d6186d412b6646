"""runtime/replay.py's grouping of a batch template for CUDA graphs: the allocations and frees between two
other commands move in front of and behind that stretch's launches, so the stretch is one segment (one
captured graph), the order of launches is kept, and a sync or transfer still splits segments; consecutive
allocations and frees are one operation each, and a stretch allocates the slots it frees first."""

from __future__ import annotations

import pytest

from zyx_dist._util import bucket_size
from zyx_dist.protocol import Alloc, Free, Launch, Sync
from zyx_dist.runtime.replay import _ALLOC, _FREE, _LAUNCH, _SEGMENT, _SYNC, compile_template


def _launch(prog: int, reads: tuple, writes: tuple) -> Launch:
    return Launch(prog, reads + writes, (64,), (64,), reads=reads, writes=writes)


# a step whose intermediates are freed as soon as they are read: allocs and frees between every launch
STEP = (Alloc(2, 256), _launch(1, (0,), (2,)), Free(0), Alloc(3, 256), _launch(2, (2,), (3,)), Free(2),
        Alloc(4, 256), _launch(1, (3,), (4,)), Free(3), Sync(),
        Alloc(5, 256), _launch(2, (4,), (5,)), Free(4))
PROGRAMS = {1: "p1", 2: "p2"}


def kinds(t) -> list[int]:
    return [op[0] for op in t.ops]


def test_one_segment_per_stretch_between_syncs():
    t = compile_template(STEP, PROGRAMS, graphs=True)
    assert kinds(t) == [_ALLOC, _SEGMENT, _FREE, _SYNC, _ALLOC, _SEGMENT, _FREE]  # (allocs and frees in runs)
    seg = t.ops[1][1]
    assert [launch[0] for launch in seg.launches] == ["p1", "p2", "p1"]  # launch order kept
    assert t.ops[0][1] == [(2, 256, bucket_size(256)), (3, 256, bucket_size(256)), (4, 256, bucket_size(256))]
    assert t.ops[2][1] == [0, 2, 3]


def test_without_graphs_the_order_is_the_planned_one():
    t = compile_template(STEP, PROGRAMS, graphs=False)
    assert kinds(t) == [_ALLOC, _LAUNCH, _FREE, _ALLOC, _LAUNCH, _FREE, _ALLOC, _LAUNCH, _FREE, _SYNC,
                        _ALLOC, _LAUNCH, _FREE]


def test_a_stretch_allocates_what_its_template_frees_before_what_it_keeps():
    """Results kept alive from one replay to the next then take new blocks, and the freed slots the same ones."""
    step = (Alloc(5, 64), Alloc(2, 256), Alloc(3, 128), _launch(1, (0,), (2,)), _launch(2, (2,), (3,)),
            _launch(1, (3,), (5,)), Free(2), Free(3), Sync())
    t = compile_template(step, PROGRAMS, graphs=True)
    assert [entry[0] for entry in t.ops[0][1]] == [2, 3, 5]
    assert [entry[0] for entry in compile_template(step, PROGRAMS, graphs=False).ops[0][1]] == [5, 2, 3]


def test_a_negative_allocation_is_refused_when_the_template_is_defined():
    with pytest.raises(ValueError, match="-8 bytes for slot 2"):
        compile_template((Alloc(2, -8), _launch(1, (0,), (2,)), Sync()), PROGRAMS, graphs=True)


def test_only_the_last_launch_before_a_sync_goes_unrecorded():
    """The event tracker is cleared at a sync, so the launch (or segment) right before it, with only frees
    between, is not recorded; every other one is, since later launches and allocations wait on its event."""
    t = compile_template(STEP, PROGRAMS, graphs=True)
    recorded = [op[-1] for op in t.ops if op[0] == _SEGMENT]
    assert recorded == [False, True]  # the first segment ends at the sync; the second has none after it
    t = compile_template(STEP, PROGRAMS, graphs=False)
    recorded = [op[-1] for op in t.ops if op[0] == _LAUNCH]
    assert recorded == [True, True, False, True]
