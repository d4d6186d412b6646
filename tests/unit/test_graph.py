"""Unit tests of the lazy graph constructors (`zyx_dist.graph.ir`): shape/dtype checks at the call (errors
name the shapes), the folding of trivial movement, constants and double flips, empty reductions, and
the two-stage split of long reductions into few outputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zyx_dist import dtypes as dt
from zyx_dist.errors import DTypeError, ShapeError
from zyx_dist.graph import ir as g

f32 = dt.float32


def leaf(*shape, dtype=f32):
    return g.leaf(np.zeros(shape, dtype.np_dtype), dtype)


# ---- constructor checks -----------------------------------------------------------------------------

def test_leaf_and_const_basics():
    x = leaf(2, 3)
    assert x.op is g.Op.LEAF and x.shape == (2, 3) and x.dtype is f32 and x.host is not None
    assert not x.realized  # host data only
    assert leaf(0, 3).realized  # nothing to upload
    assert g.const(300, (), dt.uint8).arg == 44  # normalised as NumPy's cast
    assert g.const(1.5, (2,), dt.int32).arg == 1
    assert isinstance(g.const(True, (2,), dt.float32).arg, float)


def test_binary_shape_mismatch_names_both_shapes():
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(3, 2\)"):
        g.binary(g.BinaryOp.ADD, leaf(2, 3), leaf(3, 2))


def test_binary_dtype_mismatch():
    with pytest.raises(DTypeError, match="float32.*int32"):
        g.binary(g.BinaryOp.ADD, leaf(2), leaf(2, dtype=dt.int32))


def test_binary_dtype_rules():
    with pytest.raises(DTypeError):
        g.binary(g.BinaryOp.AND, leaf(2), leaf(2))  # bitwise on floats
    with pytest.raises(DTypeError):
        g.binary(g.BinaryOp.DIV, leaf(2, dtype=dt.int32), leaf(2, dtype=dt.int32))  # true div on ints
    assert g.binary(g.BinaryOp.LT, leaf(2), leaf(2)).dtype is dt.bool_
    assert g.binary(g.BinaryOp.MAX, leaf(2), leaf(2)).dtype is f32


def test_unary_dtype_rules():
    with pytest.raises(DTypeError, match="int32"):
        g.unary(g.UnaryOp.EXP, leaf(2, dtype=dt.int32))
    with pytest.raises(DTypeError):
        g.unary(g.UnaryOp.NEG, leaf(2, dtype=dt.bool_))
    with pytest.raises(DTypeError):
        g.unary(g.UnaryOp.NOT, leaf(2))
    assert g.unary(g.UnaryOp.ISNAN, leaf(2)).dtype is dt.bool_
    assert g.unary(g.UnaryOp.ABS, leaf(2, dtype=dt.int8)).dtype is dt.int8


def test_reshape_error_names_shapes():
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(4, 2\)"):
        g.reshape(leaf(2, 3), (4, 2))
    with pytest.raises(ShapeError):
        g.reshape(leaf(0, 3), (-1, 0))


def test_permute_error():
    with pytest.raises(ShapeError, match=r"\(0, 0\).*\(2, 3\)"):
        g.permute(leaf(2, 3), (0, 0))
    with pytest.raises(ShapeError):
        g.permute(leaf(2, 3), (0, 1, 2))


def test_expand_error_names_shapes():
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(2, 4\)"):
        g.expand(leaf(2, 3), (2, 4))
    with pytest.raises(ShapeError):
        g.expand(leaf(3), (2, 3))  # rank must match (the tensor layer right-aligns)


def test_pad_errors():
    with pytest.raises(ShapeError, match=r"\(2, 3\)"):
        g.pad(leaf(2, 3), ((1, 1),))
    with pytest.raises(ShapeError, match=r"\(2, 3\)"):
        g.pad(leaf(2, 3), ((0, 0), (-2, -2)))
    with pytest.raises(ShapeError):
        g.pad(leaf(2, 3), ((-3, 0), (0, 0)))


def test_where_checks():
    c = leaf(2, dtype=dt.bool_)
    with pytest.raises(ShapeError, match=r"\(2,\).*\(3,\)"):
        g.where(c, leaf(2), leaf(3))
    with pytest.raises(DTypeError):
        g.where(leaf(2), leaf(2), leaf(2))  # condition not bool
    with pytest.raises(DTypeError):
        g.where(c, leaf(2), leaf(2, dtype=dt.int32))
    x, y = leaf(2), leaf(2)
    assert g.where(g.const(True, (2,), dt.bool_), x, y) is x
    assert g.where(g.const(False, (2,), dt.bool_), x, y) is y
    assert g.where(c, x, y).op is g.Op.WHERE


def test_reduce_and_flip_axes_out_of_range():
    with pytest.raises(ShapeError, match=r"\(2, 3\)"):
        g.reduce(g.ReduceOp.SUM, leaf(2, 3), (2,))
    with pytest.raises(ShapeError, match=r"\(2, 3\)"):
        g.flip(leaf(2, 3), (5,))


# ---- folding ----------------------------------------------------------------------------------------------

def test_identity_movement_returns_the_same_node():
    x = leaf(2, 3)
    assert g.reshape(x, (2, 3)) is x
    assert g.permute(x, (0, 1)) is x
    assert g.expand(x, (2, 3)) is x
    assert g.pad(x, ((0, 0), (0, 0))) is x
    assert g.flip(x, ()) is x
    assert g.flip(leaf(1, 3), (0,)).op is g.Op.LEAF  # flipping a size-1 axis does nothing
    assert g.cast(x, f32) is x
    assert g.reduce(g.ReduceOp.SUM, leaf(2, 1), (1,)).op is g.Op.LEAF  # reducing size-1 axes


def cancels_to(n, x) -> bool:
    """Whether view `n`, which undoes the view below it (whose source is `x`), is an identity reshape of x that
    records the view it undid (for a gradient with respect to that view: its `merged` field, graph/ir.py)."""
    return n.op is g.Op.RESHAPE and n.srcs == (x,) and n.shape == x.shape and n.merged is not None


def test_views_that_cancel_give_their_source_inside_the_gradient_pass():
    x = leaf(2, 6)
    tracked = g.track_views(False)
    try:
        assert g.reshape(g.reshape(x, (12,)), (2, 6)) is x
        assert g.permute(g.permute(x, (1, 0)), (1, 0)) is x
        assert g.flip(g.flip(x, (0,)), (0,)) is x
        assert g.pad(g.pad(x, ((1, 0), (0, 2))), ((-1, 0), (0, -2))) is x
        merged = g.reshape(g.reshape(x, (12,)), (3, 4))
        assert merged.srcs == (x,) and merged.merged is None
    finally:
        g.track_views(tracked)


def test_reshape_of_reshape_collapses():
    x = leaf(2, 6)
    r = g.reshape(g.reshape(x, (12,)), (3, 4))
    assert r.op is g.Op.RESHAPE and r.srcs[0] is x and r.shape == (3, 4)
    assert cancels_to(g.reshape(g.reshape(x, (12,)), (2, 6)), x)


def test_permute_of_permute_composes():
    x = leaf(2, 3, 4)
    p = g.permute(g.permute(x, (1, 2, 0)), (1, 2, 0))
    assert p.op is g.Op.PERMUTE and p.srcs[0] is x
    assert p.arg == (2, 0, 1) and p.shape == (4, 2, 3)
    assert cancels_to(g.permute(g.permute(x, (2, 0, 1)), (1, 2, 0)), x)  # a permute and its inverse cancel


def test_expand_of_expand_collapses():
    x = leaf(1, 3, 1)
    e = g.expand(g.expand(x, (2, 3, 1)), (2, 3, 5))
    assert e.op is g.Op.EXPAND and e.srcs[0] is x and e.shape == (2, 3, 5)


def test_movement_of_a_const_stays_const():
    c = g.const(2.5, (1, 3), f32)
    for n in (g.reshape(c, (3,)), g.permute(c, (1, 0)), g.expand(c, (4, 3)), g.flip(c, (1,)),
              g.pad(c, ((0, 0), (-1, 0))), g.pad(c, ((1, 1), (0, 0)), 2.5), g.cast(c, dt.float64)):
        assert n.op is g.Op.CONST and n.arg == 2.5
    assert g.permute(c, (1, 0)).shape == (3, 1)
    assert g.expand(c, (4, 3)).shape == (4, 3)
    assert g.cast(c, dt.int32).arg == 2
    # padding a constant with a different value is a real pad
    p = g.pad(c, ((1, 0), (0, 0)), 0.0)
    assert p.op is g.Op.PAD and p.shape == (2, 3)


def test_flip_twice_cancels():
    x = leaf(2, 3)
    assert cancels_to(g.flip(g.flip(x, (0,)), (0,)), x)
    assert cancels_to(g.flip(g.flip(x, (0, 1)), (1, 0)), x)
    f = g.flip(g.flip(x, (0,)), (1,))
    assert f.op is g.Op.FLIP and f.srcs[0] is x and f.arg == (0, 1)
    f = g.flip(g.flip(x, (0, 1)), (1,))
    assert f.op is g.Op.FLIP and f.srcs[0] is x and f.arg == (0,)


def test_crop_of_pad_crops_the_source():
    x = leaf(4, 3)
    p = g.pad(x, ((1, 2), (0, 1)), 7.0)
    assert p.op is g.Op.PAD and p.arg == (((1, 2), (0, 1)), 7.0)
    assert cancels_to(g.pad(p, ((-1, -2), (0, -1))), x)
    c = g.pad(p, ((-2, -3), (-1, -1)))  # crop into the source too
    assert c.op is g.Op.PAD and c.srcs[0] is x and c.arg[0] == ((-1, -1), (-1, 0)) and c.shape == (2, 2)


def test_pad_of_empty_and_to_empty():
    p = g.pad(leaf(0, 3), ((1, 1), (0, 0)), 5.0)
    assert p.op is g.Op.CONST and p.arg == 5.0 and p.shape == (2, 3)
    c = g.pad(leaf(2, 3), ((0, 0), (-3, 0)))
    assert c.op is g.Op.CONST and c.shape == (2, 0)


def test_pad_value_is_normalised_to_the_dtype():
    p = g.pad(leaf(2, dtype=dt.uint8), ((1, 0),), 300)
    assert p.arg == (((1, 0),), 44)


def test_expand_to_zero_size_is_const():
    e = g.expand(leaf(1, 3), (0, 3))
    assert e.op is g.Op.CONST and e.shape == (0, 3)


# ---- reduce -------------------------------------------------------------------------------------------

def test_reduce_shape_keeps_reduced_dims():
    r = g.reduce(g.ReduceOp.MAX, leaf(2, 3, 4), (2, 0))
    assert r.op is g.Op.REDUCE and r.shape == (1, 3, 1) and r.arg == (g.ReduceOp.MAX, (0, 2))


def test_reduce_over_an_empty_axis():
    x = leaf(3, 0)
    s = g.reduce(g.ReduceOp.SUM, x, (1,))
    assert s.op is g.Op.CONST and s.arg == 0 and s.shape == (3, 1)
    p = g.reduce(g.ReduceOp.PROD, x, (1,))
    assert p.op is g.Op.CONST and p.arg == 1
    for op in (g.ReduceOp.MAX, g.ReduceOp.MIN):
        with pytest.raises(ShapeError, match=r"\(3, 0\)"):
            g.reduce(op, x, (1,))


def test_max_over_a_non_empty_axis_of_an_empty_tensor():
    r = g.reduce(g.ReduceOp.MAX, leaf(0, 5), (1,))
    assert r.shape == (0, 1)


def test_reduce_identities():
    assert g.reduce_identity(g.ReduceOp.SUM, f32) == 0
    assert g.reduce_identity(g.ReduceOp.PROD, dt.int32) == 1
    assert g.reduce_identity(g.ReduceOp.MAX, f32) == -math.inf
    assert g.reduce_identity(g.ReduceOp.MIN, f32) == math.inf
    assert g.reduce_identity(g.ReduceOp.MAX, dt.int8) == -128
    assert g.reduce_identity(g.ReduceOp.MIN, dt.uint16) == 65535
    assert g.reduce_identity(g.ReduceOp.MAX, dt.bool_) is False
    assert g.reduce_identity(g.ReduceOp.MIN, dt.bool_) is True


def _reduces(n: g.Node) -> list[g.Node]:
    return [m for m in g.toposort([n]) if m.op is g.Op.REDUCE]


def test_long_reduce_into_few_outputs_is_split_in_two_stages():
    n = 40000  # not a multiple of SPLIT_PARTS: padded with the identity
    r = g.reduce(g.ReduceOp.MAX, leaf(2, n), (1,))
    assert r.shape == (2, 1)
    parts, total = _reduces(r)
    chunk = -(-n // g.SPLIT_PARTS)
    assert parts.shape == (2, g.SPLIT_PARTS, 1) and parts.arg == (g.ReduceOp.MAX, (2,))
    assert parts.srcs[0].shape == (2, g.SPLIT_PARTS, chunk)
    assert total.srcs[0] is parts and total.shape == (2, 1, 1) and total.arg == (g.ReduceOp.MAX, (1,))
    pads = [m for m in g.toposort([r]) if m.op is g.Op.PAD]
    assert len(pads) == 1 and pads[0].arg == (((0, 0), (0, chunk * g.SPLIT_PARTS - n)), -math.inf)


def test_split_reduce_over_leading_axes_permutes_them_last():
    r = g.reduce(g.ReduceOp.SUM, leaf(256, 3, 128, dtype=dt.int32), (0, 2))
    assert r.shape == (1, 3, 1)
    parts, _total = _reduces(r)
    perms = [m for m in g.toposort([r]) if m.op is g.Op.PERMUTE]
    assert [p.arg for p in perms] == [(1, 0, 2)]
    assert not [m for m in g.toposort([r]) if m.op is g.Op.PAD]  # 32768 divides evenly
    assert parts.srcs[0].shape == (3, g.SPLIT_PARTS, 256 * 128 // g.SPLIT_PARTS)


def test_int_max_split_pads_with_the_dtype_minimum():
    r = g.reduce(g.ReduceOp.MAX, leaf(g.SPLIT_REDUCE_AT + 1, dtype=dt.int32), (0,))
    (p,) = [m for m in g.toposort([r]) if m.op is g.Op.PAD]
    assert p.arg[1] == np.iinfo(np.int32).min


def test_short_or_wide_reduces_are_not_split():
    assert len(_reduces(g.reduce(g.ReduceOp.SUM, leaf(g.SPLIT_REDUCE_AT - 1), (0,)))) == 1
    assert len(_reduces(g.reduce(g.ReduceOp.SUM, leaf(17, g.SPLIT_REDUCE_AT), (1,)))) == 1  # 17 outputs
    assert len(_reduces(g.reduce(g.ReduceOp.SUM, leaf(16, g.SPLIT_REDUCE_AT), (1,)))) == 2


# ---- toposort ------------------------------------------------------------------------------------------

def test_toposort_producers_first_and_stop():
    x = leaf(3)
    a = g.unary(g.UnaryOp.EXP, x)
    b = g.binary(g.BinaryOp.ADD, a, a)
    c = g.binary(g.BinaryOp.MUL, b, x)
    order = g.toposort([c])
    pos = {n.id: i for i, n in enumerate(order)}
    assert len(order) == 4
    assert pos[x.id] < pos[a.id] < pos[b.id] < pos[c.id]
    stopped = g.toposort([c], stop=lambda n: n is b)
    assert {n.id for n in stopped} == {b.id, x.id, c.id}


def test_split_k_parts_only_for_long_contractions_into_few_tiles(monkeypatch):
    """Split-K (graph/ir.py; on in a session with a GPU) fires for a long contraction into few 128 x 128 tiles,
    in parts of at least 128 that divide the length, and stops once tiles x parts reach 256 work-groups."""
    monkeypatch.setattr(g, "SPLIT_K", True)
    parts = g._split_k_parts
    assert parts(2048, 256 * 256) == 16  # 4 tiles x 16 parts = 64 groups, chunks of 128
    assert parts(2048, 1024 * 256) == 16  # 16 tiles x 16 = 256
    assert parts(2048, 4096 * 1024) == 1  # 256 tiles: enough work-groups already
    assert parts(512, 256 * 256) == 1  # too short
    assert parts(1024, 64 * 64) == 1  # too little work
    assert parts(8192, 768 * 17) == 64  # little work, but a few work-groups in a row of 128 k-steps unsplit
    assert parts(3000, 512 * 512) == 8  # 3000 = 8 x 375 (16 parts would not divide it)
    assert parts(2049, 256 * 256) == 1  # odd: no even split
    x = g.mul(g.expand(leaf(2048, 300, 1), (2048, 300, 300)), g.expand(leaf(2048, 1, 300), (2048, 300, 300)))
    r = g.reduce(g.ReduceOp.SUM, x, (0,))
    assert r.shape == (1, 300, 300) and r.op is g.Op.RESHAPE  # the sum of the parts, reshaped back


def test_split_k_leaves_row_sums_of_elementwise_products_whole(monkeypatch):
    """Split-K is for contractions (both factors broadcast: what a GEMM reads). A row's sum of an elementwise
    product, as layer norm's variance and RMS norm's mean square are, stays one reduce: the row kernel's loop (split,
    layer norm (8, 1024, 1024) ran as three kernels on a GPU, 50 us against one of ~20). So does a matrix-vector
    product, whose one broadcast factor is no GEMM either."""
    from zyx_dist.frontend import linalg
    from zyx_dist.frontend.tensor import Tensor
    from zyx_dist.fuse.kernelize import kernelize

    monkeypatch.setattr(g, "SPLIT_K", True)
    x = leaf(8, 1024, 1024)
    assert g.reduce(g.ReduceOp.SUM, g.mul(x, x), (2,)).op is g.Op.REDUCE
    v = g.expand(leaf(1, 1, 1024), (8, 1024, 1024))
    assert g.reduce(g.ReduceOp.SUM, g.mul(x, v), (2,)).op is g.Op.REDUCE
    assert len(kernelize([linalg.layer_norm(Tensor(x), axis=-1).node])) == 1
    a = g.expand(leaf(8192, 1, 1024), (8192, 1024, 1024))  # a matmul's product does split (few tiles, long k)
    w = g.expand(leaf(1, 1024, 1024), (8192, 1024, 1024))
    assert g.reduce(g.ReduceOp.SUM, g.mul(a, w), (0,)).op is g.Op.RESHAPE


def test_split_k_keeps_probabilities_whole_but_splits_a_cross_entropys_head_gradient(monkeypatch):
    """A factor that divides exponentials by their sum (softmax's probabilities, p @ v: one fused attention
    kernel) keeps its contraction whole; the weight gradient of an LM head over a small vocabulary, whose factor
    is the cross-entropy's exp(y) * sum(g) (an exp, no division), is split (it took 324 us unsplit on an H100)."""
    monkeypatch.setattr(g, "SPLIT_K", True)
    from zyx_dist.graph import autograd

    x = g.reduce(g.ReduceOp.MAX, leaf(1, 2048, 2048), (2,))
    e = g.unary(g.UnaryOp.EXP, g.sub(leaf(1, 2048, 2048), g.expand(x, (1, 2048, 2048))))
    p = g.div(e, g.expand(g.reduce(g.ReduceOp.SUM, e, (2,)), e.shape))
    pv = g.mul(g.expand(g.reshape(p, (1, 2048, 1, 2048)), (1, 2048, 64, 2048)),
               g.expand(g.reshape(leaf(1, 2048, 64), (1, 1, 64, 2048)), (1, 2048, 64, 2048)))
    assert g.reduce(g.ReduceOp.SUM, pv, (3,)).op is g.Op.REDUCE  # whole
    h, w = leaf(8192, 768), leaf(768, 17)
    logits = g.reduce(g.ReduceOp.SUM, g.mul(g.expand(g.reshape(h, (8192, 768, 1)), (8192, 768, 17)),
                                            g.expand(g.reshape(w, (1, 768, 17)), (8192, 768, 17))), (1,))
    m = g.reduce(g.ReduceOp.MAX, logits, (2,))
    y = g.sub(g.sub(logits, g.expand(m, logits.shape)),
              g.unary(g.UnaryOp.LOG, g.expand(g.reduce(g.ReduceOp.SUM, g.unary(g.UnaryOp.EXP, g.sub(
                  logits, g.expand(m, logits.shape))), (2,)), logits.shape)))
    autograd.composite(y, "log_softmax", logits, (2,))
    (gw,) = autograd.gradients(y, [w], leaf(8192, 1, 17))
    sums = [n for n in g.toposort([gw]) if n.op is g.Op.REDUCE and n.arg[0] is g.ReduceOp.SUM]
    assert any(n.shape[0] == 64 for n in sums), [n.shape for n in sums]  # 64 parts of 128 rows


def test_column_sums_split_in_sessions_with_a_gpu(monkeypatch):
    """A sum over leading axes into columns (a bias's gradient) is split into partials over row chunks, at least
    2^16 of them (a work-item each on a GPU), then their sum; half types sum their partials in float32. Not for
    trailing axes, short sums, a gather's one-hot or a contraction."""
    monkeypatch.setattr(g, "SPLIT_K", True)
    parts = g._column_parts
    assert parts((8, 1024, 768), (0, 1)) == 86  # 86 x 768 = 66048 partials of 96 rows
    assert parts((8192, 16), (0,)) == 1  # 16 columns: too few to read side by side
    assert parts((2048, 768), (0,)) == 1  # too short
    assert parts((768, 8192), (1,)) == 1  # a row sum
    assert parts((5000, 1 << 15), (0,)) == 1  # too many columns: enough outputs already
    for d in (dt.float32, dt.bfloat16):
        r = g.reduce(g.ReduceOp.SUM, leaf(8, 1024, 768, dtype=d), (0, 1))
        assert r.shape == (1, 1, 768) and r.dtype is d
        total = r.srcs[0] if d is dt.float32 else r.srcs[0].srcs[0]  # (under the cast back, for a half type)
        assert total.op is g.Op.RESHAPE or total.op is g.Op.REDUCE
    x = g.mul(g.expand(leaf(8192, 1, 300, dtype=dt.bfloat16), (8192, 300, 300)),
              g.expand(leaf(8192, 300, 1, dtype=dt.bfloat16), (8192, 300, 300)))
    part = g.reduce(g.ReduceOp.SUM, x, (0,)).srcs[0].srcs[0].srcs[0]  # a contraction: split-K, not a column split
    assert part.op is g.Op.REDUCE and part.srcs[0].op is g.Op.BINARY


def test_split_k_of_half_types_sums_float32_partials(monkeypatch):
    """bfloat16/float16 contractions split with their factors widened to float32 (exact products, what tensor
    cores accumulate), so the partials are stored unrounded and the total is rounded to the half type once."""
    monkeypatch.setattr(g, "SPLIT_K", True)
    for d in (dt.bfloat16, dt.float16):
        x = g.mul(g.expand(leaf(2048, 256, 1, dtype=d), (2048, 256, 256)),
                  g.expand(leaf(2048, 1, 256, dtype=d), (2048, 256, 256)))
        r = g.reduce(g.ReduceOp.SUM, x, (0,))
        assert r.op is g.Op.RESHAPE and r.dtype is d
        back = r.srcs[0]
        assert back.op is g.Op.CAST and back.srcs[0].op is g.Op.REDUCE and back.srcs[0].dtype is dt.float32
        part = back.srcs[0].srcs[0]
        assert part.shape[0] == 16 and part.dtype is dt.float32
        product = part.srcs[0]
        assert product.op is g.Op.BINARY and all(f.op is g.Op.CAST and f.srcs[0].dtype is d for f in product.srcs)


def test_split_k_is_off_unless_the_session_has_a_gpu():
    import zyx_dist as zd
    from zyx_dist.engine import session as zsession

    with zsession.set_aside(), zd.init(ray=False, devices=["opencl:0"]):
        assert not g.SPLIT_K
        x = g.mul(g.expand(leaf(2048, 256, 1), (2048, 256, 256)), g.expand(leaf(2048, 1, 256), (2048, 256, 256)))
        assert g.reduce(g.ReduceOp.SUM, x, (0,)).op is g.Op.REDUCE
