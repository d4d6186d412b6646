"""Gradients with respect to views (API.md section 11: `zd.grad(y, xs)` for any tensors in xs): the graph merges
a view of a view into one (a reshape of a reshape, a permute of a permute, ...) or drops two that cancel, so the
view the user holds is not in y's graph; the gradient walks through it all the same (a node's `merged` record, graph/ir.py). Also a
logsumexp over size-1 axes of the user's own max, which must not mark that max as a shift."""

from __future__ import annotations

import numpy as np
import pytest

import zyx_dist as zd

pytestmark = pytest.mark.usefixtures("tuning_off")


def _t(shape, start=0.0):
    return zd.tensor(np.arange(start, start + np.prod(shape), dtype=np.float32).reshape(shape))


def test_a_reshape_of_a_reshaped_tensor():
    x = _t(6).reshape(2, 3)
    (g,) = zd.grad(x.reshape(6).sum(), [x])
    np.testing.assert_array_equal(g.numpy(), np.ones((2, 3)))
    a = zd.arange(12, dtype=zd.float32).reshape(3, 4)
    for back in ((12,), (4, 3), (2, 6)):  # back to arange's own shape (the two cancel), and past it
        (g,) = zd.grad((a.reshape(back) ** 2).sum(), [a])
        np.testing.assert_allclose(g.numpy(), 2 * np.arange(12.0).reshape(3, 4))


def test_a_view_used_directly_and_through_a_merged_view_gets_both_parts():
    t = _t(6)
    x = t.reshape(2, 3)
    y = (x * 2).sum() + x.reshape(6).sum()
    gx, gt = zd.grad(y, [x, t])
    np.testing.assert_array_equal(gx.numpy(), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(gt.numpy(), np.full(6, 3.0))
    (g,) = zd.grad(t.sum() + y, [x])  # t read directly too: only what came through x counts
    np.testing.assert_array_equal(g.numpy(), np.full((2, 3), 3.0))


def test_transposed_views_flips_expands_and_crops():
    xt = _t((2, 3)).T
    (g,) = zd.grad((zd.ones((2, 3)) @ xt).sum(), [xt])  # matmul transposes its right operand back
    np.testing.assert_array_equal(g.numpy(), np.full((3, 2), 2.0))
    f = zd.flip(_t(3), 0)
    w = np.array([1.0, 2.0, 3.0], np.float32)
    (g,) = zd.grad((zd.flip(f, 0) * zd.tensor(w)).sum(), [f])
    np.testing.assert_array_equal(g.numpy(), w[::-1])
    e = zd.broadcast_to(zd.ones((1, 3)), (2, 3))
    (g,) = zd.grad((zd.broadcast_to(e.reshape(2, 1, 3), (2, 2, 3)) * zd.tensor(np.arange(12.0).reshape(2, 2, 3)
                                                                              .astype(np.float32))).sum(), [e])
    np.testing.assert_array_equal(g.numpy(), np.arange(12.0).reshape(2, 2, 3).sum(1))
    p = zd.pad(_t((2, 3)), 1)
    (g,) = zd.grad((p[1:-1, 1:-1] * 3).sum(), [p])
    want = np.zeros((4, 5))
    want[1:-1, 1:-1] = 3
    np.testing.assert_array_equal(g.numpy(), want)
    x = _t((2, 3))
    (g,) = zd.grad((zd.expand_dims(x, 0) * 5).sum(), [x])
    np.testing.assert_array_equal(g.numpy(), np.full((2, 3), 5.0))


def test_views_merged_twice_and_second_order():
    t = _t(6)
    x1 = t.reshape(2, 3)
    x2 = x1.reshape(3, 2)
    y = (x2.reshape(6) ** 3).sum()
    g1, g2 = zd.grad(y, [x1, x2])
    np.testing.assert_allclose(g1.numpy(), 3 * np.arange(6.0).reshape(2, 3) ** 2)
    np.testing.assert_allclose(g2.numpy(), 3 * np.arange(6.0).reshape(3, 2) ** 2)
    (h,) = zd.grad(g1.sum(), [x1])
    np.testing.assert_allclose(h.numpy(), 6 * np.arange(6.0).reshape(2, 3))


def test_the_forward_values_of_cancelled_views_are_unchanged():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = zd.tensor(a)
    np.testing.assert_array_equal(x.permute(2, 0, 1).permute(1, 2, 0).numpy(), a)
    np.testing.assert_array_equal(x.reshape(6, 4).reshape(2, 3, 4).numpy(), a)
    np.testing.assert_array_equal(zd.flip(zd.flip(x, 1), 1).numpy(), a)
    np.testing.assert_array_equal(zd.pad(x, 1)[1:-1, 1:-1, 1:-1].numpy(), a)


def test_logsumexp_over_size_one_axes_of_a_max_the_user_holds():
    z = zd.tensor(np.array([[1.0, 3, 2], [0, -1, 5]], np.float32))
    m = zd.max(z, axis=1, keepdims=True)
    want = np.array([[0.0, 1, 0], [0, 0, 1]])
    (g,) = zd.grad(zd.logsumexp(m, axis=1).sum(), [z])
    np.testing.assert_array_equal(g.numpy(), want)
    (g,) = zd.grad(m.sum(), [z])  # and the max itself still differentiates afterwards
    np.testing.assert_array_equal(g.numpy(), want)
    (g,) = zd.grad(zd.logsumexp(zd.max(z)), [z])
    np.testing.assert_array_equal(g.numpy(), [[0.0, 0, 0], [0, 0, 1]])
