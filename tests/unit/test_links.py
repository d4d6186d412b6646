"""The link probe (engine/probe.py `links`): what a transfer between two workers costs, measured through the
steps the scheduler emits. Pairs of workers that take the same path (the same kinds either way round) get
one figure, the best measured among them (a busy host can slow one pair's measurement, and unequal figures
make the scheduler move inputs toward whichever measured fastest); pairs of other kinds keep their own. A
stand-in backend takes the steps and sleeps as a slow or fast path would: what is tested is the probe's
arithmetic, not a transfer."""

from __future__ import annotations

import itertools
import time

from zyx_dist.engine import probe
from zyx_dist.protocol import CopyIn, CopyOut


class _Paths:
    """Runs nothing; a transfer takes 4x as long on the pairs `slow(src, dst)` names."""

    def __init__(self, slow) -> None:
        self.slow, self.src = slow, None

    def run_steps(self, steps, compiled: bool = False):
        for step in steps:
            for dev, cmds in step.items():
                for c in cmds:
                    if isinstance(c, CopyOut):
                        self.src, self.nbytes = dev, c.shape[0]
                    elif isinstance(c, CopyIn) and self.src is not None:  # the transfer's time, at its end
                        time.sleep(2e-4 + self.nbytes * (4e-9 if self.slow(self.src, dev) else 1e-9))
                        self.src = None
        return [{} for _ in steps]


def _links(workers, kinds, slow):
    ids = itertools.count(1)
    return probe.links(_Paths(slow), workers, lambda: next(ids), {}, kinds)


def test_workers_of_one_kind_get_the_better_direction_both_ways():
    got = _links(["a", "b"], {"a": "cpu", "b": "cpu"}, lambda s, d: s == "a")
    assert got[("a", "b")] == got[("b", "a")]
    assert got[("a", "b")][1] > 5e8  # the fast direction's ~1 GB/s, not the slow one's ~0.25


def test_workers_of_different_kinds_keep_each_direction():
    slow = lambda s, d: s == "a"
    got = _links(["a", "b"], {"a": "cpu", "b": "gpu"}, slow)
    assert got[("a", "b")][1] < got[("b", "a")][1] / 2
    without = _links(["a", "b"], None, slow)  # no kinds: what was measured
    assert without[("a", "b")][1] < without[("b", "a")][1] / 2


def test_pairs_of_one_path_share_its_best_figure():
    got = _links(["a", "b", "c"], {w: ("cpu", "node1") for w in "abc"}, lambda s, d: "c" in (s, d))
    assert len(got) == 6 and len(set(got.values())) == 1
    assert got[("a", "c")][1] > 5e8


def test_workers_on_other_nodes_are_another_path():
    kinds = {"a": ("cpu", "node1"), "b": ("cpu", "node1"), "c": ("cpu", "node2")}
    got = _links(["a", "b", "c"], kinds, lambda s, d: "c" in (s, d))  # across the nodes: slow
    assert got[("a", "c")] == got[("b", "c")] and got[("c", "a")] == got[("c", "b")]
    assert got[("a", "c")][1] < got[("a", "b")][1] / 2 and got[("c", "a")][1] < got[("b", "a")][1] / 2
