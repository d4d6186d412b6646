"""Unit tests of the kernelizer (`zyx_dist.fuse.kernelize`): how many kernels a graph becomes and what each
holds (outputs, inputs, intermediates freed after their last consumer), the store-vs-recompute rules
ported from zyx, multi-output kernels, and a valid launch order."""

from __future__ import annotations

import numpy as np

from zyx_dist import dtypes as dt
from zyx_dist.codegen import gemm
from zyx_dist.fuse.kernelize import Kernel, kernelize
from zyx_dist.graph import ir as g

f32 = dt.float32


def leaf(*shape, dtype=f32):
    return g.leaf(np.zeros(shape, dtype.np_dtype), dtype)


def ids(nodes) -> list[int]:
    return [n.id for n in nodes]


def add(a, b):
    return g.binary(g.BinaryOp.ADD, a, b)


def mul(a, b):
    return g.binary(g.BinaryOp.MUL, a, b)


def exp(a):
    return g.unary(g.UnaryOp.EXP, a)


def matmul(a: g.Node, b: g.Node) -> g.Node:
    (m, k), (_, n) = a.shape, b.shape
    ae = g.expand(g.reshape(a, (m, k, 1)), (m, k, n))
    be = g.expand(g.reshape(b, (1, k, n)), (m, k, n))
    return g.reshape(g.reduce(g.ReduceOp.SUM, mul(ae, be), (1,)), (m, n))


def softmax(x: g.Node):
    """Softmax down the columns (axis 0): three kernels (a row softmax is one, see below)."""
    mx = g.reduce(g.ReduceOp.MAX, x, (0,))
    e = exp(g.binary(g.BinaryOp.SUB, x, g.expand(mx, x.shape)))
    s = g.reduce(g.ReduceOp.SUM, e, (0,))
    return g.binary(g.BinaryOp.DIV, e, g.expand(s, x.shape)), mx, s


def assert_launch_order(ks: list[Kernel]) -> None:
    """Every input is a leaf or an output of an earlier kernel; no output is computed twice."""
    produced: set[int] = set()
    for k in ks:
        for x in k.inputs:
            assert x.op is g.Op.LEAF or x.id in produced, (x, k)
        outs = set(ids(k.outputs))
        assert not outs & produced
        assert len({o.shape for o in k.outputs}) == 1
        produced |= outs


def computed(k: Kernel) -> set[int]:
    """Ids of the nodes kernel k evaluates (between its inputs and outputs)."""
    inputs = set(ids(k.inputs))
    seen: set[int] = set()
    stack = list(k.outputs)
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in inputs:
            continue
        seen.add(n.id)
        stack.extend(n.srcs)
    return seen


# ---- fusion counts ----------------------------------------------------------------------------------------

def test_nothing_to_do():
    x = leaf(3)
    assert kernelize([]) == []
    assert kernelize([x]) == []  # already a leaf
    assert kernelize([exp(leaf(0, 3))]) == []  # zero-size


def test_elementwise_chain_is_one_kernel():
    x = leaf(4, 4)
    y = x
    for i in range(12):
        y = exp(y) if i % 2 else add(y, x)
    y = g.cast(g.unary(g.UnaryOp.ISNAN, y), dt.int32)
    (k,) = kernelize([y])
    assert ids(k.outputs) == [y.id] and ids(k.inputs) == [x.id]
    assert k.frees_after == [] and k.shape == (4, 4) and k.device is None


def test_matmul_is_one_kernel():
    a, b = leaf(3, 5), leaf(5, 7)
    m = matmul(a, b)
    (k,) = kernelize([m])
    assert ids(k.outputs) == [m.id] and ids(k.inputs) == sorted([a.id, b.id])


def test_matmul_with_elementwise_epilogue_is_one_kernel():
    a, b, bias = leaf(3, 5), leaf(5, 7), leaf(3, 7)
    y = exp(add(matmul(a, b), bias))
    (k,) = kernelize([y])
    assert set(ids(k.inputs)) == {a.id, b.id, bias.id}


def test_softmax_is_three_kernels_and_frees_intermediates():
    x = leaf(4, 8)
    out, mx, s = softmax(x)
    ks = kernelize([out])
    assert_launch_order(ks)
    assert [ids(k.outputs) for k in ks] == [[mx.id], [s.id], [out.id]]
    assert ids(ks[0].inputs) == [x.id]
    assert ids(ks[1].inputs) == sorted([x.id, mx.id])
    assert ids(ks[2].inputs) == sorted([x.id, mx.id, s.id])
    # both intermediates are last read by the final kernel, and the target is never freed
    assert ks[0].frees_after == [] and ks[1].frees_after == []
    assert set(ids(ks[2].frees_after)) == {mx.id, s.id}


def test_intermediate_freed_by_its_last_consumer_not_the_first():
    x = leaf(4, 8)
    r = g.reduce(g.ReduceOp.SUM, x, (0,))  # stored: broadcast below (down the columns, so not a row kernel)
    a = add(x, g.expand(r, (4, 8)))
    b = g.reduce(g.ReduceOp.MAX, a, (0,))  # (1, 8): a different kernel reading a
    c = mul(exp(b), r)  # reads r again, after b
    ks = kernelize([c])
    assert_launch_order(ks)
    last = max(i for i, k in enumerate(ks) if r.id in ids(k.inputs))
    for i, k in enumerate(ks):
        assert (r.id in ids(k.frees_after)) == (i == last)


# ---- multi-output kernels and shared work ----------------------------------------------------------------

def test_two_same_shape_targets_sharing_a_subgraph_are_one_kernel():
    x, y = leaf(4, 4), leaf(4, 4)
    s = exp(add(x, y))
    a, b = mul(s, x), g.binary(g.BinaryOp.SUB, s, y)
    (k,) = kernelize([a, b])
    assert ids(k.outputs) == [a.id, b.id]
    assert ids(k.inputs) == sorted([x.id, y.id])


def test_duplicate_targets_are_stored_once():
    x = leaf(4)
    a = exp(x)
    (k,) = kernelize([a, a, x])
    assert ids(k.outputs) == [a.id]


def test_reduce_shared_by_targets_of_different_shapes_is_stored_once():
    x = leaf(4, 8)
    r = g.reduce(g.ReduceOp.SUM, x, (1,))  # (4, 1), never expanded
    t1 = mul(r, r)  # (4, 1)
    t2 = g.reshape(exp(r), (4,))  # (4,)
    ks = kernelize([t1, t2])
    assert_launch_order(ks)
    assert len(ks) == 3
    producers = [k for k in ks if r.id in ids(k.outputs)]
    assert len(producers) == 1 and ids(producers[0].inputs) == [x.id]
    for k in ks:
        if k is not producers[0]:
            assert ids(k.inputs) == [r.id]  # read, not recomputed
    assert r.id in ids(ks[-1].frees_after)


def test_reduce_shared_by_same_shape_targets_is_computed_in_their_kernel():
    x = leaf(4, 8)
    r = g.reduce(g.ReduceOp.SUM, x, (1,))
    t1, t2 = mul(r, r), exp(r)
    (k,) = kernelize([t1, t2])
    assert ids(k.outputs) == [t1.id, t2.id] and ids(k.inputs) == [x.id]


def test_elementwise_shared_by_different_shape_targets_is_recomputed():
    x = leaf(4, 8)
    e = exp(x)  # no reduce before it: cheaper to recompute than to store
    t1 = g.reduce(g.ReduceOp.SUM, e, (0,))
    t2 = add(e, x)
    ks = kernelize([t1, t2])
    assert len(ks) == 2
    for k in ks:
        assert ids(k.inputs) == [x.id] and e.id in computed(k)


def test_dependent_targets_are_never_in_one_kernel():
    x = leaf(4, 4)
    a = exp(x)
    b = add(a, x)  # same shape as a, but reads it
    ks = kernelize([a, b])
    assert_launch_order(ks)
    assert [ids(k.outputs) for k in ks] == [[a.id], [b.id]]
    assert ids(ks[1].inputs) == sorted([x.id, a.id])
    assert ks[1].frees_after == []  # a is requested, so kept


def test_dependent_targets_through_an_intermediate_of_another_shape():
    x = leaf(4, 4)
    a = exp(x)
    r = g.reduce(g.ReduceOp.SUM, a, (0,))
    b = add(x, g.expand(r, (4, 4)))  # depends on a through r (a column sum: stored, not a row kernel)
    ks = kernelize([b, a])
    assert_launch_order(ks)
    for k in ks:
        assert not {a.id, b.id} <= set(ids(k.outputs))
    assert len(ks) == 3


def test_independent_same_shape_targets_sharing_no_work_stay_separate():
    x, y = leaf(4), leaf(4)
    a, b = exp(x), exp(y)  # nothing computed in common: separate kernels, so they may run on two devices
    c = add(a, b)
    ks = kernelize([a, b, c])
    assert_launch_order(ks)
    assert sorted(ids(k.outputs) for k in ks) == [[a.id], [b.id], [c.id]]
    assert ids(ks[-1].outputs) == [c.id] and ids(ks[-1].inputs) == sorted([a.id, b.id])


# ---- inputs ---------------------------------------------------------------------------------------------

class FakeBuffer:
    def __init__(self, device: str, id: int) -> None:
        self.device, self.id = device, id


def test_realized_leaf_is_an_input_never_recomputed():
    x = leaf(4)
    a = exp(add(x, x))
    a.become_leaf(FakeBuffer("d0", 1))
    b = mul(a, a)
    (k,) = kernelize([b])
    assert ids(k.inputs) == [a.id]
    assert x.id not in computed(k) and a.id not in computed(k)


def test_consts_are_inlined_not_inputs():
    x = leaf(4)
    y = add(x, g.const(2.0, (4,), f32))
    (k,) = kernelize([y])
    assert ids(k.inputs) == [x.id]
    (k,) = kernelize([exp(g.const(1.0, (3,), f32))])
    assert k.inputs == []


def test_movement_ops_never_make_a_kernel():
    x = leaf(4, 6)
    y = g.pad(g.flip(g.permute(g.reshape(exp(x), (6, 4)), (1, 0)), (0,)), ((1, 1), (0, 0)))
    (k,) = kernelize([y])
    assert ids(k.inputs) == [x.id]


# ---- store rules ---------------------------------------------------------------------------------------

def test_pinned_nodes_are_stored():
    x = leaf(4, 4)
    a = exp(x)
    a.device = "d1"
    b = add(a, x)
    ks = kernelize([b])
    assert_launch_order(ks)
    assert [ids(k.outputs) for k in ks] == [[a.id], [b.id]]
    assert [k.device for k in ks] == ["d1", None]
    assert ids(ks[1].frees_after) == [a.id]


def test_pinned_and_unpinned_targets_are_not_grouped():
    x = leaf(4)
    a, b = exp(x), add(x, x)
    a.device = "d1"
    ks = kernelize([a, b])
    assert len(ks) == 2 and {k.device for k in ks} == {"d1", None}


def test_reduce_inside_a_reduce_is_stored():
    x = leaf(4, 8)
    r1 = g.reduce(g.ReduceOp.SUM, x, (1,))
    r2 = g.reduce(g.ReduceOp.MAX, exp(r1), (0,))
    ks = kernelize([r2])
    assert_launch_order(ks)
    assert len(ks) == 2
    assert ids(ks[1].outputs) == [r2.id]
    (inner,) = ks[0].outputs
    assert inner.id in (r1.id, r2.srcs[0].id)
    assert ids(ks[1].inputs) == [inner.id] and ids(ks[1].frees_after) == [inner.id]
    assert r1.id not in computed(ks[1])  # the outer loop does not rerun the inner reduce


def test_split_reduce_is_two_kernels():
    x = leaf(g.SPLIT_REDUCE_AT * 2)
    r = g.reduce(g.ReduceOp.SUM, x, (0,))
    ks = kernelize([r])
    assert_launch_order(ks)
    assert len(ks) == 2
    assert ks[0].shape == (1, g.SPLIT_PARTS, 1) and ids(ks[1].outputs) == [r.id]


def test_broadcast_reduce_result_is_not_recomputed_per_element():
    x = leaf(4, 8)
    r = g.reduce(g.ReduceOp.MAX, x, (0,))
    y = g.binary(g.BinaryOp.SUB, x, g.expand(r, (4, 8)))
    ks = kernelize([y])
    assert [ids(k.outputs) for k in ks] == [[r.id], [y.id]]
    assert r.id not in computed(ks[1])


def test_launch_order_on_a_wider_graph():
    x, w1, w2 = leaf(4, 8), leaf(8, 8), leaf(8, 3)
    h = g.unary(g.UnaryOp.TANH, matmul(x, w1))
    p, mx, s = softmax(matmul(h, w2))
    loss = g.reduce(g.ReduceOp.SUM, g.unary(g.UnaryOp.LOG, p), (0, 1))
    ks = kernelize([loss, p, h])
    assert_launch_order(ks)
    outs = {o.id for k in ks for o in k.outputs}
    assert {loss.id, p.id, h.id} <= outs
    freed = {n.id for k in ks for n in k.frees_after}
    assert not freed & {loss.id, p.id, h.id}
    assert {mx.id, s.id} <= freed


def test_a_reduce_needed_by_several_kernels_is_stored_with_its_epilogue():
    """`x + (a @ w + b)` read by two kernels is stored as the sum (the product's kernel adds bias and
    residual), not as the bare product each reader would add them to again."""
    x, a, w, b = leaf(8, 16), leaf(8, 16), leaf(16, 16), leaf(16)
    y = add(x, add(matmul(a, w), g.expand(g.reshape(b, (1, 16)), (8, 16))))
    r1 = g.reduce(g.ReduceOp.SUM, y, (1,))
    r2 = g.reduce(g.ReduceOp.MAX, y, (1,))
    ks = kernelize([r1, r2])
    assert_launch_order(ks)
    assert ids(ks[0].outputs) == [y.id]
    assert all(ids(k.inputs) == [y.id] for k in ks[1:])


def _gemms(ks: list[Kernel]) -> int:
    return sum(gemm.match(k) is not None for k in ks)


def test_swiglu_products_are_two_gemms():
    """`silu(h @ w1) * (h @ w3)`: each product is a GEMM, the second one's epilogue multiplies by the first
    (stored), instead of one kernel of two plain reduce loops."""
    h, w1, w3 = leaf(32, 16), leaf(16, 24), leaf(16, 24)
    gate = matmul(h, w1)
    silu = mul(gate, g.unary(g.UnaryOp.TANH, gate))  # (the shape of silu: a product used twice)
    out = mul(silu, matmul(h, w3))
    ks = kernelize([out])
    assert_launch_order(ks)
    assert len(ks) == 2 and _gemms(ks) == 2
    assert ids(ks[-1].outputs) == [out.id]


def test_a_product_read_through_a_slice_is_stored():
    """Rotary embeddings read a projection at two places per element (its halves swapped by slices and a
    concatenation): the projection is stored, one GEMM, and the rotation is an elementwise kernel, rather
    than one kernel computing every dot product twice in plain loops."""
    h, wq = leaf(32, 16), leaf(16, 32)
    p = matmul(h, wq)
    lo = g.pad(p, ((0, 0), (0, -16)))  # p[:, :16]
    hi = g.pad(p, ((0, 0), (-16, 0)))  # p[:, 16:]
    rot = add(g.pad(g.unary(g.UnaryOp.NEG, hi), ((0, 0), (0, 16))), g.pad(lo, ((0, 0), (16, 0))))
    out = add(p, rot)
    ks = kernelize([out])
    assert_launch_order(ks)
    assert len(ks) == 2 and gemm.match(ks[0]) is not None
    assert ids(ks[0].outputs) == [p.srcs[0].id]  # (the reduce under the product's reshape)


def test_a_small_slice_of_a_product_is_computed_in_place():
    """The last position of an LM head's logits, `(h @ w)[:, -1]`, keeps 1/64 of the product: one kernel computes
    only that part, rather than a GEMM of the whole product and a copy."""
    h, w = leaf(2 * 64, 16), leaf(16, 40)
    p = g.reshape(matmul(h, w), (2, 64, 40))
    last = g.pad(p, ((0, 0), (-63, 0), (0, 0)))
    ks = kernelize([last])
    assert len(ks) == 1 and ids(ks[0].outputs) == [last.id]


def test_a_flipped_product_is_stored():
    a, w = leaf(32, 16), leaf(16, 24)
    out = g.flip(matmul(a, w), (1,))
    ks = kernelize([out])
    assert len(ks) == 2 and gemm.match(ks[0]) is not None


def test_a_dot_product_per_row_stays_fused():
    """Not a contraction: `(x * y).sum(-1)` twice in one sum is one kernel, as before."""
    x, y, z = leaf(32, 16), leaf(32, 16), leaf(32, 16)
    r1 = g.reduce(g.ReduceOp.SUM, mul(x, y), (1,))
    r2 = g.reduce(g.ReduceOp.SUM, mul(x, z), (1,))
    assert len(kernelize([add(r1, r2)])) == 1


def test_two_products_in_one_sum_are_two_gemms():
    """A kernel holds one contraction: of `p + q`, q is stored (the reduce under its reshape) and p's kernel
    adds it in its epilogue, storing the sum that two kernels read."""
    a, w, c, v = leaf(32, 16), leaf(16, 16), leaf(32, 16), leaf(16, 16)
    p, q = matmul(a, w), matmul(c, v)
    y = add(p, q)
    ks = kernelize([g.reduce(g.ReduceOp.SUM, y, (1,)), g.reduce(g.ReduceOp.MAX, y, (1,))])
    assert_launch_order(ks)
    by_input = {x.id: ids(k.outputs) for k in ks for x in k.inputs}
    assert by_input[c.id] == [q.srcs[0].id] and by_input[a.id] == [y.id]
    assert all(gemm.match(k) is not None for k in ks if a.id in ids(k.inputs) or c.id in ids(k.inputs))
