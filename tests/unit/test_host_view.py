"""Small offset views read on the host (graph/host_view.py): `small_views` finds the small crops, pads and
flips of a leaf that a graph reads, and skips its walk when no small pad or flip is alive (ir.noted keeps
them in SMALL_OFFSET_VIEWS); the session turns the views it finds into host leaves, so `x[i] * y[j]` is one
kernel for every i and j."""

import weakref

import numpy as np

import zyx_dist as zd
from zyx_dist import dtypes as dt
from zyx_dist.engine import session as zsession
from zyx_dist.graph import host_view, lineage
from zyx_dist.graph import ir as g


def leaf(*shape):
    return g.leaf(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), dt.float32)


def test_small_pads_and_flips_are_noted_large_ones_not():
    x = leaf(8, 8)
    crop, flip = g.pad(x, ((-2, -5), (0, 0))), g.flip(x, (0,))  # 8 and 64 elements
    assert crop in g.SMALL_OFFSET_VIEWS and flip in g.SMALL_OFFSET_VIEWS
    big = leaf(9, 9)
    assert g.pad(big, ((-1, 0), (0, 0))) not in g.SMALL_OFFSET_VIEWS  # 72 elements
    assert g.flip(big, (1,)) not in g.SMALL_OFFSET_VIEWS
    ref = weakref.ref(crop)
    del crop
    assert ref() is None  # held weakly: a dead view costs nothing


def test_a_node_restored_as_a_pad_is_noted():
    x = leaf(4, 4)
    node = g.unary(g.UnaryOp.NEG, x)
    node.lineage = g.Node(g.Op.PAD, (x,), (((-1, -2), (0, 0)), 0.0), (1, 4), dt.float32)  # a recipe
    node.op, node.srcs, node.arg = g.Op.LEAF, (), None  # realized, then its worker was lost
    lineage.restore(node, lambda n: True, {})
    assert node.op is g.Op.PAD and node in g.SMALL_OFFSET_VIEWS


def test_every_view_found_has_a_noted_pad_or_flip_in_its_chain():
    x = leaf(16, 16)
    views = [
        g.reshape(g.pad(x, ((-3, -12), (0, 0))), (16,)),  # x[3]
        g.expand(g.reshape(g.pad(g.reshape(x, (256,)), ((-5, -240),)), (1, 11)), (4, 11)),  # a crop, broadcast
        g.permute(g.flip(g.pad(x, ((-8, 0), (-8, 0))), (0, 1)), (1, 0)),  # a 64-element corner, flipped
    ]
    found = host_view.small_views([g.binary(g.BinaryOp.ADD, v, v) for v in views], lambda n: True)
    assert set(found) == set(views)
    for v in found:
        _src, moves = host_view.movement_chain(v)
        assert any(m in g.SMALL_OFFSET_VIEWS for m in moves)


def test_no_small_pad_or_flip_alive_skips_the_walk(monkeypatch):
    empty: weakref.WeakSet = weakref.WeakSet()
    monkeypatch.setattr(host_view, "SMALL_OFFSET_VIEWS", empty)
    asked = []
    y = g.binary(g.BinaryOp.MUL, g.reshape(g.pad(leaf(4, 4), ((-1, -2), (0, 0))), (4,)), leaf(4))
    assert host_view.small_views([y], asked.append) == [] and not asked


def test_small_views_are_read_on_the_host():
    s = zsession.current()
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    x, y = zd.tensor(a).realize(), zd.tensor(10 * a).realize()
    programs = None
    for i in range(3):
        for j in range(3):
            v, w = x[i], y[j]
            assert v.node.srcs[0] in g.SMALL_OFFSET_VIEWS  # the crop under x[i]
            out = (v * w).numpy()
            assert np.array_equal(out, a[i] * 10 * a[j])
            assert v.node.op is g.Op.LEAF and w.node.op is g.Op.LEAF  # read on the host, then uploaded
            if programs is None:
                programs = len(s.programs)
    assert len(s.programs) == programs  # one kernel for every i and j
