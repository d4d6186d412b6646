"""Gradients taken after a realize (API.md section 11, graph/history.py): a small crop or index of a leaf that a
realize read on the host (graph/host_view.py turns it into a host leaf) is walked through as the view it was,
so `loss.item()` and then `zd.grad(loss, [x])` gives the gradient through `x[i]` too. Expected values by NumPy."""

import numpy as np

import zyx_dist as zd


def test_grad_after_item_flows_through_an_indexed_element():
    a = np.array([1.0, 2.0, 5.0])
    x = zd.tensor(a)
    loss = (x[0] - 3.0) ** 2 + x.sum()
    assert loss.item() == 12.0
    (g,) = zd.grad(loss, [x])
    np.testing.assert_array_equal(g.numpy(), [2 * (a[0] - 3.0) + 1.0, 1.0, 1.0])


def test_grad_of_a_small_view_realized_with_other_results():
    a = np.arange(20.0).reshape(4, 5)
    x = zd.tensor(a)
    y, h = x[1, 2], (x[1:3, ::-2] * 2.0).sum()  # (results of one element: their computation is kept)
    zd.realize(y, h, x * 3.0)
    (gy,) = zd.grad(y, [x])
    (gh,) = zd.grad(h, [x])
    expected = np.zeros((4, 5))
    expected[1, 2] = 1.0
    np.testing.assert_array_equal(gy.numpy(), expected)
    expected = np.zeros((4, 5))
    expected[1:3, ::-2] = 2.0
    np.testing.assert_array_equal(gh.numpy(), expected)
