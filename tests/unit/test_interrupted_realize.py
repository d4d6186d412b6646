"""A realize interrupted part way (a KeyboardInterrupt out of a device call: Ctrl-C while kernels run) leaks no
device buffer (API.md section 8: "a failed realize leaves every other tensor usable: no device buffer is leaked"),
whether it ran as a planned schedule or replayed a plan template (one worker: its direct call; two: command
batches), also the buffers whose frees were queued in front of the interrupted run; and everything computes
right afterwards; a spill or reload the interrupted run made of a buffer that outlives it is put back where the
driver's mirror has it, so every tensor still reads. Runs on the unit tier's reference devices, whose `launch`
is made to raise. Also: a worker's Reload that cannot allocate keeps the spilled host copy (tried again, it
works)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from fuzzgraph import detached_session

import zyx_dist as zd
from zyx_dist.engine import session as zsession
from zyx_dist.protocol import Alloc, CopyIn, CopyOut, Done, Failed, Free, Reload, Spill
from zyx_dist.runtime.reference import ReferenceDevice
from zyx_dist.runtime.worker import Worker


def pools(s) -> dict[str, tuple[int, int]]:
    """(bytes in use, live blocks) of every worker's pool, after the frees of dropped tensors went out."""
    gc.collect()
    s.flush()
    return {name: (w.pool.bytes_in_use, w.pool.buffers) for name, w in s.backend.workers.items()}


@pytest.fixture
def interrupt(monkeypatch):
    """`interrupt(n)`: the launch after the next n raises KeyboardInterrupt (once); `interrupt(None)` disarms."""
    left: list[int] = []
    launch = ReferenceDevice.launch

    def failing(self, *args, **kwargs):
        if left:
            left[0] -= 1
            if left[0] < 0:
                left.clear()
                raise KeyboardInterrupt
        return launch(self, *args, **kwargs)

    monkeypatch.setattr(ReferenceDevice, "launch", failing)
    def arm(n: int | None) -> None:
        left.clear()
        if n is not None:
            left.append(n)

    return arm


@pytest.mark.parametrize("two", [False, True], ids=["one-device", "two-devices"])
def test_interrupted_realize_leaks_nothing(interrupt, two):
    s = zsession.current()
    devs = s.device_names[:2] if two else s.device_names[:1]
    a = (np.arange(32 * 32, dtype=np.float32).reshape(32, 32) / 1e3)
    x = zd.tensor(a, device=devs[0]).realize()
    y = zd.tensor(a.T.copy(), device=devs[-1]).realize()

    def graph():
        return ((x @ y).exp() + y.sum(0)).sum(1)

    want = (np.exp(a.astype(np.float64) @ a.T) + a.T.sum(0)).sum(1)
    for _ in range(3):  # planned once, then replayed from its plan template
        graph().realize()
    base = pools(s)
    for n in (0, 1, 2):
        for replayed in (False, True):
            junk = (y * 3).realize()  # its free is queued, to go in front of the next run
            del junk
            gc.collect()
            interrupt(n)
            with pytest.raises(KeyboardInterrupt):  # a structure seen before, or a new one (planned)
                (graph() if replayed else graph()[: 31 - 2 * n - replayed]).realize()
            assert pools(s) == base, (n, replayed)
            assert zd.stats()["bytes_in_use"] == {d: used for d, (used, _) in base.items()}
    np.testing.assert_allclose(graph().numpy(), want, rtol=1e-4)
    np.testing.assert_allclose(x.numpy(), a)
    assert pools(s) == base


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_interrupted_realize_puts_spills_back(interrupt, n):
    """Under a memory limit the run spills older tensors (and reloads spilled ones); interrupted after some of
    that ran, every tensor still reads right and the same work then succeeds."""
    with detached_session():
        zd.init(ray=False, devices=["reference:0"], config={"memory_limit": 300_000})
        arrays = [np.full((64, 64), i, np.float32) for i in range(3)]  # 16 KiB each
        small = [zd.tensor(v).realize() for v in arrays]
        big = [(t * 2 + zd.zeros((8, 64, 64))).realize() for t in small[:2]]  # 128 KiB each: some spilled

        def work():
            return ((small[2] + zd.zeros((8, 64, 64))) * 3).sum((0, 1))

        interrupt(n)
        try:
            work().realize()
        except KeyboardInterrupt:
            pass
        interrupt(None)  # (n may be more launches than the work has)
        for t, v in zip(small, arrays):
            np.testing.assert_array_equal(t.numpy(), v)
        for t, v in zip(big, arrays):
            np.testing.assert_array_equal(t.numpy(), np.broadcast_to(v * 2, (8, 64, 64)))
        np.testing.assert_array_equal(work().numpy(), np.full(64, 2 * 3 * 8 * 64, np.float32))


def test_reload_that_does_not_fit_keeps_the_host_copy():
    data = np.arange(1000, dtype=np.float32)
    with Worker("reference:0", memory_limit=6000) as w:
        res = w.run([Alloc(1, 4000), CopyIn(1, data), Spill(1), Alloc(2, 4000), Reload(1)])
        assert [type(r) for r in res.results] == [Done, Done, Done, Done, Failed]
        assert res.results[-1].error == "OutOfMemoryError"
        res = w.run([Free(2), Reload(1), CopyOut(1, "float32", (1000,)), Free(1)])
        assert all(type(r) is Done for r in res.results), res.results
        np.testing.assert_array_equal(res.results[2].value, data)
