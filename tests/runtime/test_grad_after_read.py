"""Gradients taken after a read (API.md section 11, graph/history.py): a loss read with `item()`, or a gradient
read and then differentiated again, still differentiates through the computation it was; what that keeps
alive goes when the result is dropped, and an optimizer's new parameters keep nothing."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.graph import history

pytestmark = pytest.mark.usefixtures("tuning_off")

A = np.array([0.5, 1.0, 2.0, -1.5], np.float32)


def in_use() -> int:
    gc.collect()
    zd.tensor(np.zeros(1, np.float32)).realize()  # (a realize takes the frees queued by dropped tensors)
    gc.collect()
    return sum(zd.stats()["bytes_in_use"].values())


def test_a_loss_read_with_item_is_still_differentiated():
    x = zd.tensor(A)
    y = (zd.exp(x) * x).sum()
    assert y.item() == pytest.approx(float((np.exp(A) * A).sum()), rel=1e-5)
    (g,) = zd.grad(y, [x])
    np.testing.assert_allclose(g.numpy(), np.exp(A) * (A + 1), rtol=1e-5)


def test_a_gradient_read_then_differentiated_again():
    x = zd.tensor(A)
    (g,) = zd.grad((x**3).sum(), [x])
    np.testing.assert_allclose(g.numpy(), 3 * A**2, rtol=1e-5)
    (h,) = zd.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), 6 * A, rtol=1e-5)
    (k,) = zd.grad(h.sum(), [x])  # read again, third order
    np.testing.assert_allclose(k.numpy(), np.full_like(A, 6), rtol=1e-5)


def test_a_training_step_realized_and_differentiated_again():
    w = zd.tensor(A)
    loss = ((w - 1) ** 2).mean()
    (g,) = zd.grad(loss, [w])
    zd.realize(loss, g)
    np.testing.assert_allclose(g.numpy(), 2 * (A - 1) / A.size, rtol=1e-5)
    (again,) = zd.grad(loss, [w])
    np.testing.assert_allclose(again.numpy(), g.numpy(), rtol=1e-6)


def test_a_dropped_result_takes_what_its_history_kept():
    base = in_use()
    x = zd.tensor(np.ones((64, 64), np.float32))
    y = (x * 2).sum()
    y.item()
    del x  # y's history holds x while y lives
    assert in_use() - base >= 64 * 64 * 4
    del y
    assert in_use() == base


def test_an_optimizer_step_keeps_no_history():
    w = zd.tensor(A)
    (g,) = zd.grad((w * w).sum(), [w])
    opt = zd.optim.Adam([w], lr=0.1)
    (w2,) = opt.step([g])
    w2.realize()
    assert history.former(w2.node) is None
    assert all(history.former(t.node) is None for t in opt.m + opt.v)


def test_a_gradient_cut_by_an_earlier_read_warns():
    """A tensor of more than one element realized before zd.grad is a constant to the gradient (its computation
    is not kept): where an x then gets no gradient, zd.grad says why instead of returning the zeros silently."""
    w = zd.tensor(np.ones(3, np.float32))
    h = w * 3
    h.numpy()
    with pytest.warns(RuntimeWarning, match="before zd.grad was called"):
        (g,) = zd.grad((h * h).sum(), [w])
    np.testing.assert_array_equal(g.numpy(), np.zeros(3))  # (the zeros API.md gives an x y does not depend on)
    h2 = w * 3  # not read: the gradient flows, and nothing is said
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        (g,) = zd.grad((h2 * h2).sum(), [w])
    np.testing.assert_allclose(g.numpy(), np.full(3, 18.0))


def test_a_host_decomposition_in_y_warns_where_an_x_gets_no_gradient():
    """zd.linalg's decompositions run in NumPy on the host and have no gradient: zd.grad says so where an x is
    left without one (its zeros were silent), and says nothing where the decomposition only reads a constant."""
    a = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    x = zd.tensor(a)
    for y in (lambda: zd.linalg.det(x), lambda: zd.linalg.inv(x).sum(), lambda: zd.linalg.svdvals(x * 2).sum()):
        with pytest.warns(RuntimeWarning, match=r"zd\.linalg\.\w+, which NumPy computes on the host"):
            (g,) = zd.grad(y(), [x])
        np.testing.assert_array_equal(g.numpy(), np.zeros((2, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        (g,) = zd.grad((x @ zd.linalg.inv(zd.tensor(a))).sum(), [x])
    np.testing.assert_allclose(g.numpy(), np.linalg.inv(a).sum(axis=1)[None, :].repeat(2, 0), rtol=1e-6)
