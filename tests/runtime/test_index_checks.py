"""Runtime tests of a gather's index checks (graph/guards.py, engine/index_checks.py): an integer tensor index
out of range raises IndexError at the realize that computes the gather, naming the index, the axis and its
size as NumPy does, wherever the index's values live (host data, a realized buffer, a computation), and no
tensor is left holding the zeros the one-hot gather reads there (API.md section 8: "no tensor is silently
wrong"). In-range indices, negative ones included, give NumPy's results, and a check that passed is not
made again."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.graph import guards


def in_use() -> int:
    gc.collect()
    return sum(zd.stats()["bytes_in_use"].values())


def test_host_index_out_of_range_raises_at_the_realize_not_the_call():
    x = zd.arange(5) * 10
    y = x[zd.tensor([0, 9])]  # lazy: accepted at the call
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 5"):
        y.numpy()
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        zd.take(x, zd.tensor([-6, 1])).numpy()


def test_computed_index_out_of_range_raises_and_leaves_nothing_realized_or_allocated():
    base = in_use()
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = zd.tensor(a)
    idx = zd.tensor(np.array([0, 1, 2], np.int32)) * 2  # 0, 2, 4: 4 is out of range for 4 rows
    y = x[idx]
    z = y.sum(1) + 1  # depends on the gather through another kernel
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        z.numpy()
    assert not z.node.realized and not y.node.realized
    with pytest.raises(IndexError, match="index 4"):  # again, and for the gather itself: no zeros handed out
        y.numpy()
    with pytest.raises(IndexError, match="index 4"):
        (y * 3).realize()
    ok = x[idx - 2]  # -2, 0, 2: in range, negatives counting from the end
    np.testing.assert_array_equal(ok.numpy(), a[[-2, 0, 2]])
    np.testing.assert_array_equal(x.numpy(), a)  # the session and other tensors are untouched
    del x, idx, y, z, ok
    assert in_use() == base


def test_realized_index_on_the_device_is_checked():
    x = zd.arange(6).reshape(2, 3)
    idx = zd.tensor(np.array([[2, 0], [3, 1]], np.int64)).realize()  # values on the device only
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x[:, idx].numpy()
    good = zd.tensor(np.array([[2, 0], [1, -3]], np.int64)).realize()
    np.testing.assert_array_equal(x[:, good].numpy(), np.arange(6).reshape(2, 3)[:, [[2, 0], [1, -3]]])


def test_a_failed_check_undoes_every_result_of_the_realize():
    """Tensors realized together with a bad gather are computations again (not realized, not wrong), and
    realize fine on their own."""
    a = zd.arange(8).astype(zd.float32)
    good = a * 2
    bad = a[zd.tensor([1, 2]) * 5]  # 5, 10: 10 is out of range
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 8"):
        zd.realize(good, bad)
    assert not good.node.realized and not bad.node.realized
    np.testing.assert_array_equal(good.numpy(), np.arange(8, dtype=np.float32) * 2)


def test_passed_check_is_not_made_again():
    x = zd.arange(10) * 3
    y = x[zd.tensor([1, 2]) + 1]
    np.testing.assert_array_equal(y.numpy(), [6, 9])
    (g,) = [g for g in (y.node.guards or ())] or [None]
    assert g is None  # a realized gather keeps no guard
    z = x[zd.tensor([1, 2]) + 1]
    w = z + 1
    (guard,) = w.node.guards
    np.testing.assert_array_equal(w.numpy(), [7, 10])
    assert guard.ok and guard.check is None
    v = z * 2  # z is unrealized still, its guard settled: no check in this realize's plan
    assert guards.pending([v.node]) == []
    np.testing.assert_array_equal(v.numpy(), [12, 18])


def test_gradient_through_a_checked_gather_matches_numpy():
    """The gradient of a gather by a computed index carries its check, and is NumPy's where it passes."""
    wn = np.arange(12, dtype=np.float32).reshape(4, 3)
    w = zd.tensor(wn)
    idx = zd.tensor(np.array([0, 1, 1], np.int32)) * 2 - 1  # -1, 1, 1
    (gw,) = zd.grad((w[idx] ** 2).sum(), [w])
    exp = np.zeros_like(wn)
    np.add.at(exp, [-1, 1, 1], 2 * wn[[-1, 1, 1]])
    np.testing.assert_allclose(gw.numpy(), exp)
    (gx,) = zd.grad(zd.take(w, zd.tensor([2, 0]) + 0, axis=1).sum(), [w])
    np.testing.assert_allclose(gx.numpy(), np.tile([1.0, 0.0, 1.0], (4, 1)))


def test_gradient_through_a_bad_gather_raises():
    w = zd.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    idx = zd.tensor(np.array([0, 1], np.int32)) * 3  # 0, 3: 3 is out of range
    loss = w[idx].sum()
    (gw,) = zd.grad(loss, [w])
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        gw.numpy()


def test_optimizer_step_with_a_bad_gather_changes_no_parameter():
    """The new parameters and the optimizer's state are realized together (companions): a failed check
    leaves every one of them a computation, and the old parameters as they were."""
    w = zd.tensor(np.ones((4, 2), np.float32))
    opt = zd.optim.SGD([w], lr=0.1, momentum=0.9)
    idx = zd.tensor(np.array([1, 2], np.int32)) * 2  # 2, 4: 4 is out of range
    (gw,) = zd.grad((w[idx] ** 2).sum(), [w])
    (new_w,) = opt.step([gw])
    with pytest.raises(IndexError, match="index 4"):
        new_w.numpy()
    np.testing.assert_array_equal(w.numpy(), np.ones((4, 2), np.float32))


def test_jit_checks_the_index_of_every_call():
    """A jitted step that gathers by its argument checks each call's index in its plan, host data too."""
    emb = zd.tensor(np.arange(20, dtype=np.float32).reshape(10, 2))

    @zd.jit
    def lookup(ids):
        return emb[ids] * 2

    table = np.arange(20, dtype=np.float32).reshape(10, 2) * 2
    for ids in ([1, 2, 3], [9, 0, -10], [4, 4, 4], [0, 8, -1]):
        np.testing.assert_array_equal(lookup(zd.tensor(np.array(ids, np.int32))).numpy(), table[ids])
    assert lookup.replays >= 1
    base = in_use()
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
        lookup(zd.tensor(np.array([1, 10, 2], np.int32)))
    assert in_use() == base
    replays = lookup.replays
    np.testing.assert_array_equal(lookup(zd.tensor(np.array([5, 6, 7], np.int32))).numpy(), table[[5, 6, 7]])
    assert lookup.replays == replays + 1


def test_searchsorted_sorter_out_of_range_raises():
    a = zd.tensor(np.array([3.0, 1.0, 2.0], np.float32))
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        zd.searchsorted(a, zd.tensor(np.array([1.5], np.float32)), sorter=zd.tensor([1, 2, 3])).numpy()


@pytest.mark.parametrize("dtype,values,size,expect", [
    (np.uint8, [0, 200], 300, None),  # every uint8 is in range for 300 rows: no guard
    (np.int8, [-128, 127], 1000, None),
    (np.uint8, [0, 7], 5, "index 7"),  # only the upper end can fail
    (np.int16, [-9, 2], 5, "index -9"),
])
def test_index_dtypes(dtype, values, size, expect):
    x = zd.arange(size)
    idx = zd.tensor(np.array(values, dtype)) + zd.tensor(np.zeros(2, dtype))  # computed: checked on the device
    y = x[idx]
    if expect is None:
        assert y.node.guards is None
        np.testing.assert_array_equal(y.numpy(), np.arange(size)[np.array(values, dtype)])
    else:
        with pytest.raises(IndexError, match=expect):
            y.numpy()


def test_a_failed_read_of_the_checks_leaves_the_results_unrealized(monkeypatch):
    """Where reading the checks back fails (a lost worker, say), the results are computations again: a retry
    must not find them realized and unchecked. The next realize checks again."""
    from zyx_dist.engine import session as zsession

    s = zsession.current()
    x = zd.arange(6) * 10
    y = x[zd.tensor([1, 5]) + 0]
    real = type(s)._copy_out
    calls = []

    def failing(self, nodes, compiled=False):
        calls.append(compiled)
        if len(calls) == 1:
            raise RuntimeError("the worker went away")
        return real(self, nodes, compiled)

    monkeypatch.setattr(type(s), "_copy_out", failing)
    with pytest.raises(RuntimeError, match="went away"):
        y.realize()
    assert not y.node.realized and y.node.guards
    np.testing.assert_array_equal(y.numpy(), [10, 50])
    # the failed read of the check, the read of the check again, then numpy's own read (a plain one)
    assert calls == [True, True, False] and y.node.guards is None
