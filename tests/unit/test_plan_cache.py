"""The plan cache (`zyx_dist.fuse.plan_cache`): a repeated graph structure skips the kernelizer and maps the
stored kernels onto the new nodes; anything that changes the kernels (a constant, a shape, a pin) misses."""

import numpy as np

from zyx_dist import dtypes as dt
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.fuse.plan_cache import PlanCache, structure
from zyx_dist.graph import ir as g


def leaf(*shape):
    return g.leaf(np.ones(shape, np.float32), dt.float32)


def softmax(x):
    """Softmax down the columns (axis 0): three kernels."""
    m = g.reduce(g.ReduceOp.MAX, x, (0,))
    e = g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.SUB, x, g.expand(m, x.shape)))
    return g.binary(g.BinaryOp.DIV, e, g.expand(g.reduce(g.ReduceOp.SUM, e, (0,)), x.shape))


def scaled(x, c):
    return g.binary(g.BinaryOp.MUL, x, g.const(c, x.shape, dt.float32))


def test_repeated_structure_hits_and_maps_onto_the_new_nodes():
    cache, rendered = PlanCache(), []
    first = softmax(leaf(4, 8))
    cache.kernels([first], lambda ks: [rendered.append(k) or {"opencl": len(rendered)} for k in ks])
    x = leaf(4, 8)
    second = softmax(x)
    k2, progs = cache.kernels([second], lambda ks: [rendered.append(k) or {} for k in ks])
    assert cache.hits == 1 and len(rendered) == 3 and progs == [{"opencl": 1}, {"opencl": 2}, {"opencl": 3}]
    fresh = kernelize([second])
    assert [[o.id for o in k.outputs] for k in k2] == [[o.id for o in k.outputs] for k in fresh]
    assert [[i.id for i in k.inputs] for k in k2] == [[i.id for i in k.inputs] for k in fresh]
    assert [[f.id for f in k.frees_after] for k in k2] == [[f.id for f in k.frees_after] for k in fresh]
    assert k2[-1].outputs[0] is second and x in k2[0].inputs


def test_what_changes_the_kernels_misses():
    x = leaf(4, 8)
    key = structure([scaled(x, 0.0)])[0]
    assert structure([scaled(leaf(4, 8), 0.0)])[0] == key
    assert structure([scaled(x, -0.0)])[0] != key  # the constant is baked into the kernel
    assert structure([scaled(leaf(4, 9), 0.0)])[0] != key
    pinned = g.leaf(np.ones((4, 8), np.float32), dt.float32, device="opencl:1")
    assert structure([scaled(pinned, 0.0)])[0] != key
    assert structure([scaled(x, float("nan"))])[0] == structure([scaled(x, float("nan"))])[0]
