"""Runtime tests of device memory accounting (`zd.stats()["bytes_in_use"]`): realized tensors hold their
buffers, dropping the last Python reference frees them, intermediates are freed after their last use,
and a failed realize (out of memory under a small `memory_limit`) leaks nothing and leaves every other
tensor usable (API.md sections 7 and 8)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from helpers import assert_close, data

import zyx_dist as zd

DEV = "opencl:0"


# Each test runs twice: "refcount" with the garbage collector off (dropping the last reference must free the
# buffer at once, as API.md promises), and "gc" after a full collection (no buffer may leak at all).
MODES = ["refcount", "gc"]
COLLECT = True


@pytest.fixture(autouse=True)
def _gc_mode(request):
    global COLLECT
    callspec = getattr(request.node, "callspec", None)
    COLLECT = (callspec.params.get("mode", "gc") if callspec else "gc") == "gc"
    was_enabled = gc.isenabled()
    gc.collect()
    if not COLLECT:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        COLLECT = True


def in_use() -> int:
    if COLLECT:
        gc.collect()
    return sum(zd.stats()["bytes_in_use"].values())  # every device: on Ray the scheduler may place work anywhere


def slack(nbytes: int) -> int:
    """What the pool may add to a request (size buckets round up by at most 12.5%, 256-byte steps)."""
    return nbytes // 8 + 256


@pytest.mark.parametrize("mode", MODES)
def test_leaf_buffer_freed_on_del(mode):
    base = in_use()
    x = zd.tensor(np.ones((64, 64), np.float32)).realize()
    grown = in_use() - base
    assert x.nbytes <= grown <= x.nbytes + slack(x.nbytes)
    del x
    assert in_use() == base


@pytest.mark.parametrize("mode", MODES)
def test_computed_buffer_freed_on_del(mode):
    x = zd.tensor(data((32, 50), np.float32)).realize()
    base = in_use()
    y = (x * 2 + 1).realize()
    assert y.nbytes <= in_use() - base <= y.nbytes + slack(y.nbytes)
    z = (y @ y.T).realize()
    assert in_use() - base >= y.nbytes + z.nbytes
    del y
    assert z.nbytes <= in_use() - base <= z.nbytes + slack(z.nbytes)
    assert_close(z, (data((32, 50), np.float32) * 2 + 1) @ (data((32, 50), np.float32) * 2 + 1).T, zd.float32,
                 loose=10)
    del z
    assert in_use() == base
    del x


@pytest.mark.parametrize("mode", MODES)
def test_lazy_tensor_holds_no_device_memory(mode):
    base = in_use()
    y = zd.ones((128, 128)) * 3 + zd.arange(128)
    assert in_use() == base
    del y
    assert in_use() == base


@pytest.mark.parametrize("mode", MODES)
def test_intermediates_are_freed_after_softmax(mode):
    x = zd.tensor(data((2, 4096), np.float32)).realize()
    base = in_use()
    s = zd.softmax(x, axis=0).realize()  # row maxima and sums are intermediates of 16 KiB each
    grown = in_use() - base
    assert s.nbytes <= grown <= s.nbytes + slack(s.nbytes)
    del s
    assert in_use() == base
    t = (x - x.max(1, keepdims=True)).exp().sum(1).realize()
    assert in_use() - base <= t.nbytes + slack(t.nbytes)
    del t
    assert in_use() == base


@pytest.mark.parametrize("mode", MODES)
def test_realize_together_then_free(mode):
    x = zd.tensor(data((40, 40), np.float32)).realize()
    base = in_use()
    c = x @ x
    a, b = c + 1, c.sum(0)
    zd.realize(a, b)
    assert a.nbytes + b.nbytes <= in_use() - base <= a.nbytes + b.nbytes + slack(a.nbytes) + slack(b.nbytes) + 256
    del c, a
    assert b.nbytes <= in_use() - base <= b.nbytes + slack(b.nbytes)
    del b
    assert in_use() == base


@pytest.mark.parametrize("mode", MODES)
def test_tensor_kept_alive_by_a_view(mode):
    x = zd.tensor(data((16, 16), np.float32)).realize()
    base = in_use()
    y = (x + 1).realize()
    v = y.T[::2]  # a lazy view still needs y's buffer
    del y
    assert in_use() - base >= 16 * 16 * 4
    assert_close(v, (data((16, 16), np.float32) + 1).T[::2], zd.float32)
    del v
    assert in_use() == base


@pytest.mark.parametrize("mode", MODES)
def test_out_of_memory_leaves_everything_usable(mode):
    zd.shutdown()
    try:
        zd.init(ray=False, config={"memory_limit": "1MiB"})
        a = data((32, 32), np.float32)
        small = zd.tensor(a).realize()
        kept = (small * 2).realize()
        base = in_use()
        big = zd.ones((1024, 1024)) * small[0, 0]  # 4 MiB result
        with pytest.raises(zd.OutOfMemoryError) as info:
            big.realize()
        err = info.value
        assert isinstance(err, MemoryError) and isinstance(err, zd.ZyxError)
        msg = str(err)
        assert DEV in msg
        assert str(4 * 2**20) in msg or f"{4 * 2**20:,}" in msg or "4194304" in msg.replace(",", "")
        assert in_use() == base
        with pytest.raises(zd.OutOfMemoryError):
            zd.tensor(np.zeros((1024, 1024), np.float32)).realize()  # an upload too big for the pool
        assert in_use() == base
        # everything else still works and is right
        assert_close(small, a, zd.float32)
        assert_close(kept, a * 2, zd.float32)
        assert_close(kept + small, a * 3, zd.float32)
        assert_close((small @ small).sum(0), (a.astype(np.float64) @ a).sum(0), zd.float32, loose=10)
        del kept
        assert in_use() < base
        # a smaller computation fits again
        assert_close(zd.ones((256, 256)) * small[1, 1], np.full((256, 256), a[1, 1]), zd.float32)
    finally:
        zd.shutdown()
        zd.init(ray=False)
    assert_close(zd.ones((1024, 1024)) * 2, np.full((1024, 1024), 2.0), zd.float32)
