"""The link probe (engine/probe.py `links`): what a transfer between two workers costs, measured through the
steps the scheduler emits. Two workers of one kind get the better direction's figures both ways (a busy
host can slow one direction's measurement, and a lopsided figure makes the scheduler move every input one
way); workers of different kinds keep what each direction measured. A stand-in backend takes the steps and
sleeps as a slow or fast path would: what is tested is the probe's arithmetic, not a transfer."""

from __future__ import annotations

import itertools
import time

from zyx_dist.engine import probe
from zyx_dist.protocol import CopyOut


class _Paths:
    """Runs nothing; a transfer out of `slow_from` takes 4x as long as one the other way."""

    def __init__(self, slow_from: str) -> None:
        self.slow_from = slow_from

    def run_steps(self, steps, compiled: bool = False):
        for step in steps:
            for dev, cmds in step.items():
                for c in cmds:
                    if isinstance(c, CopyOut):  # the transfer's time: a latency and its bytes over the path
                        time.sleep(2e-4 + c.shape[0] * (4e-9 if dev == self.slow_from else 1e-9))
        return [{} for _ in steps]


def _links(kinds):
    ids = itertools.count(1)
    return probe.links(_Paths("a"), ["a", "b"], lambda: next(ids), {}, kinds)


def test_workers_of_one_kind_get_the_better_direction_both_ways():
    got = _links({"a": "cpu", "b": "cpu"})
    assert got[("a", "b")] == got[("b", "a")]
    assert got[("a", "b")][1] > 5e8  # the fast direction's ~1 GB/s, not the slow one's ~0.25


def test_workers_of_different_kinds_keep_each_direction():
    got = _links({"a": "cpu", "b": "gpu"})
    slow, fast = got[("a", "b")][1], got[("b", "a")][1]
    assert slow < fast / 2, (slow, fast)
    assert probe.links(_Paths("a"), ["a", "b"], itertools.count(1).__next__, {})[("a", "b")][1] < fast / 2
