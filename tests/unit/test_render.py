"""Unit tests of the OpenCL C renderer (`zyx_dist.codegen.render`): the important substrings of the
generated source (index arithmetic of movement ops, guarded loads for pads, reduce loops and their
identities, hoisting of loop-invariant loads, half/bool/double storage, literals, the index type) and
the structural kernel key. No device: every test taking the `build` fixture runs again in
tests/runtime/test_render_build.py with its programs built by PoCL, so the text is checked to be valid OpenCL C.
"""

from __future__ import annotations

import math
import re

import pytest
from helpers import leaf, one, one_kernel

from zyx_dist import dtypes as dt
from zyx_dist.codegen.render import kernel_key, literal, render_kernel
from zyx_dist.fuse.kernelize import Kernel
from zyx_dist.graph import ir as g

f32 = dt.float32


@pytest.fixture
def build():
    """Render a kernel to its Program (tests/runtime/test_render_build.py runs every test taking this fixture
    again, with each program built by OpenCL)."""
    return lambda k, gpu=None: render_kernel(k, gpu=gpu)


def loads(src: str, arg: str = "in0") -> list[str]:
    return re.findall(rf"{arg}\[[^\]]*\]|vload_half\([^;]*{arg}\)", src)


# ---- index arithmetic ------------------------------------------------------------------------------------

def test_contiguous_elementwise_indexes_by_gid(build):
    x, y = leaf(4, 6), leaf(4, 6)
    n = g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.ADD, x, g.reshape(g.reshape(y, (24,)), (4, 6))))
    p = build(one(n))
    assert "in0[gid]" in p.source and "in1[gid]" in p.source
    assert "out0[gid] = (float)(" in p.source
    assert "/" not in p.source and "%" not in p.source
    assert "__kernel void " + p.name + "(" in p.source
    assert "__global const float* restrict in0" in p.source and "__global float* restrict out0" in p.source
    assert p.gws == (32,) and p.lws == (32,) and "if (gid >= 24) return;" in p.source
    assert p.flops == 2 * 24 and p.bytes == 3 * 24 * 4 and not p.uses_fp64


def test_reshape_of_contiguous_data_is_free(build):
    x = leaf(4, 6)
    for shape in ((6, 4), (24,), (2, 12)):
        p = build(one(g.unary(g.UnaryOp.NEG, g.reshape(x, shape))))
        assert loads(p.source) == ["in0[gid]"], p.source


def test_contiguous_3d_elementwise_indexes_by_gid(build):
    x = leaf(2, 3, 4)
    p = build(one(g.unary(g.UnaryOp.EXP, x)))
    assert loads(p.source) == ["in0[gid]"], p.source


def test_transpose_load_uses_div_and_mod(build):
    x = leaf(4, 6)
    p = build(one(g.permute(x, (1, 0))))
    (ld,) = loads(p.source)
    assert "gid/4" in ld and "gid%4" in ld and "*6" in ld


def test_expand_load_drops_the_broadcast_dim(build):
    x = leaf(4, 1)
    p = build(one(g.unary(g.UnaryOp.EXP, g.expand(x, (4, 6)))))
    assert loads(p.source) == ["in0[(gid/6)]"]


def test_flip_load_mirrors(build):
    p = build(one(g.flip(leaf(5), (0,))))
    assert loads(p.source) == ["in0[(-gid+4)]"]


def test_const_only_kernel_has_no_inputs(build):
    n = g.binary(g.BinaryOp.MUL, g.const(2.0, (3,), f32), g.const(3.0, (3,), f32))
    p = build(one(n))
    assert "in0" not in p.source and "(2.0f * 3.0f)" in p.source


# ---- pads -------------------------------------------------------------------------------------------

def test_pad_load_is_guarded(build):
    x = leaf(4, 6)
    p = build(one(g.pad(x, ((1, 1), (0, 2)), 3.0)))
    src = p.source
    assert "? in0[" in src
    for m in re.finditer(r"in0\[", src):  # every load of the padded input is behind a `?`
        assert src[:m.start()].rstrip().endswith("?"), src
    assert ": 3.0f)" in src  # the pad value is selected, not loaded


def test_pad_of_an_expression_selects_the_value(build):
    x = leaf(6)
    p = build(one(g.pad(g.unary(g.UnaryOp.EXP, x), ((2, 0),), -1.0)))
    assert "? in0[" in p.source and "exp(" in p.source and ": (-1.0f))" in p.source


def test_crop_needs_no_guard(build):
    x = leaf(4, 6)
    p = build(one(g.pad(x, ((-1, -1), (-2, 0)))))
    assert "?" not in p.source
    (ld,) = loads(p.source)
    assert "+8" in ld  # offset of row 1, column 2


def test_pad_fully_outside_is_the_literal(build):
    x = leaf(2, 3)
    crop = g.pad(g.pad(x, ((0, 0), (0, 3)), 5.0), ((0, 0), (-3, 0)))  # only padding survives
    p = build(one(g.unary(g.UnaryOp.EXP, crop)))
    assert "in0" not in p.source.split("{", 1)[1] and "exp(5.0f)" in p.source


# ---- reduces --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, dtype, identity, update", [
    (g.ReduceOp.SUM, f32, "0.0f", "= ({acc} + "),
    (g.ReduceOp.PROD, f32, "1.0f", "= ({acc} * "),
    (g.ReduceOp.MAX, f32, "(-INFINITY)", ">"),
    (g.ReduceOp.MIN, f32, "INFINITY", "<"),
    (g.ReduceOp.MAX, dt.int32, "(-2147483647-1)", ">"),
    (g.ReduceOp.MIN, dt.int32, "2147483647", "<"),
    (g.ReduceOp.MAX, dt.int64, "(-9223372036854775807l-1l)", ">"),
    (g.ReduceOp.MIN, dt.uint8, "255u", "<"),
    (g.ReduceOp.MAX, dt.int8, "((char)-128)", ">"),
    (g.ReduceOp.MIN, dt.uint64, "18446744073709551615ul", "<"),
    (g.ReduceOp.SUM, dt.int16, "((short)0)", "= ({acc} + "),
    (g.ReduceOp.MAX, dt.bool_, "false", "||"),
    (g.ReduceOp.MIN, dt.bool_, "true", "&&"),
    (g.ReduceOp.SUM, dt.float64, "0.0", "= ({acc} + "),
])
def test_reduce_loop_and_identity(build, op, dtype, identity, update):
    x = leaf(4, 6, dtype=dtype)
    p = build(one(g.reduce(op, x, (1,))))
    src = p.source
    m = re.search(r"(\w+) (acc\d+) = (.*);\n\s*for \(int (r\d+) = 0; \4 < 6; \4\+\+\) \{", src)
    assert m, src
    assert m.group(3) == identity
    assert f"in0[(gid*6+{m.group(4)})]" in src
    body = src[m.end():src.index("}", m.end())]
    assert update.format(acc=m.group(2)) in body and m.group(2) in body


def test_float_max_reduce_propagates_nan(build):
    p = build(one(g.reduce(g.ReduceOp.MAX, leaf(4, 6), (1,))))
    assert re.search(r"acc\d+ != acc\d+", p.source)


def test_reduce_over_several_axes_splits_the_loop_index(build):
    x = leaf(3, 4, 5)
    p = build(one(g.reduce(g.ReduceOp.SUM, x, (0, 2))))
    assert "< 15;" in p.source
    (ld,) = loads(p.source)
    assert "/5" in ld and "%5" in ld and "gid*5" in ld


def test_loop_invariant_load_is_hoisted(build):
    x, y = leaf(4, 6), leaf(4, 1)
    n = g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, x, g.expand(y, (4, 6))), (1,))
    src = build(one(n)).source
    loop = src.index("for (")
    assert src.index("in1[gid]") < loop  # y[i] loaded once, before the loop
    assert src.index("in0[") > loop  # x[i, k] inside it
    assert src.count("in1[") == 1


def test_loop_invariant_arithmetic_is_hoisted(build):
    x, y = leaf(4, 6), leaf(4, 1)
    ey = g.unary(g.UnaryOp.EXP, g.expand(y, (4, 6)))
    n = g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, x, ey), (1,))
    src = build(one(n)).source
    assert src.index("exp(") < src.index("for (")


def test_shared_subexpression_is_computed_once(build):
    x = leaf(8)
    e = g.unary(g.UnaryOp.EXP, x)
    n = g.binary(g.BinaryOp.MUL, g.binary(g.BinaryOp.ADD, e, e), e)
    src = build(one(n)).source
    assert src.count("exp(") == 1 and src.count("in0[") == 1


def test_matmul_kernel(build):
    a, b = leaf(30, 5), leaf(5, 70)
    ae = g.expand(g.reshape(a, (30, 5, 1)), (30, 5, 70))
    be = g.expand(g.reshape(b, (1, 5, 70)), (30, 5, 70))
    n = g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, ae, be), (1,))
    src = build(one(n), gpu=True).source  # the tiled GEMM: local-memory tiles of A and B, register blocks
    assert "__local float As[8][" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src and "k0 < 5;" in src
    # K = 5 rules out float4 reads of A's rows: element by element; B's rows of 70 likewise
    assert "in0[(gi*5+gk)]" in src and "in1[(gk*70+gj)]" in src


def test_matmul_views_are_read_in_place_as_aligned_float4s(build):
    a, b = leaf(4, 64, 32), leaf(4, 48, 32)  # batched a @ b.mT: both operands contiguous along k
    ae = g.expand(g.reshape(a, (4, 64, 1, 32)), (4, 64, 48, 32))
    be = g.expand(g.reshape(b, (4, 1, 48, 32)), (4, 64, 48, 32))
    n = g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, ae, be), (3,))
    src = build(one(n), gpu=True).source
    assert "(*(__global const float4*)(in0 + (bz*2048+gi*32+gk)))" in src
    assert "(*(__global const float4*)(in1 + (bz*1536+gj*32+gk)))" in src
    assert "vload4" not in src  # the local tiles are read as aligned float4s too


# ---- dtypes -----------------------------------------------------------------------------------------------

def test_float16_uses_vload_and_vstore_half(build):
    h = leaf(8, dtype=dt.float16)
    src = build(one(g.binary(g.BinaryOp.ADD, h, h))).source
    assert "vload_half(gid, in0)" in src and re.search(r"vstore_half\(\w+, gid, out0\);", src)
    assert "__global const half* restrict in0" in src
    assert "half " not in src.split("{", 1)[1]  # no arithmetic in half: PoCL has no cl_khr_fp16
    assert "cl_khr_fp16" not in src


def test_cast_to_float16_rounds_through_half(build):
    src = build(one(g.cast(leaf(8), dt.float16))).source
    assert "vstore_half((float)(" in src and "vload_half(0," in src


def test_bool_output_is_stored_as_uchar(build):
    x = leaf(6)
    src = build(one(g.binary(g.BinaryOp.LT, x, g.unary(g.UnaryOp.NEG, x)))).source
    assert "__global uchar* restrict out0" in src and "out0[gid] = (uchar)(" in src


def test_bool_input_is_read_as_uchar(build):
    b = leaf(6, dtype=dt.bool_)
    src = build(one(g.unary(g.UnaryOp.NOT, b))).source
    assert "__global const uchar* restrict in0" in src and "(in0[gid] != 0)" in src


def test_float64_kernel_enables_fp64(build):
    p = build(one(g.unary(g.UnaryOp.EXP, leaf(5, dtype=dt.float64))))
    assert p.uses_fp64 and p.source.startswith("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    assert "__global double* restrict out0" in p.source
    p = build(one(g.cast(leaf(5, dtype=dt.float64), f32)))  # a double input alone needs it too
    assert p.uses_fp64 and "cl_khr_fp64" in p.source
    p = build(one(g.unary(g.UnaryOp.EXP, leaf(5))))
    assert not p.uses_fp64 and "cl_khr_fp64" not in p.source


def test_integer_pow_helper_is_emitted(build):
    x = leaf(4, dtype=dt.int32)
    src = build(one(g.binary(g.BinaryOp.POW, x, x))).source
    assert "int ipow_int(int a, int b)" in src and "ipow_int(" in src.split("__kernel", 1)[1]


@pytest.mark.parametrize("dtype", [f32, dt.int32, dt.uint16, dt.int64, dt.float64, dt.int8])
def test_binary_ops_build(build, dtype):
    x, y = leaf(4, dtype=dtype), leaf(4, dtype=dtype)
    ops = [op for op in g.BinaryOp if not (op is g.BinaryOp.DIV and not dtype.is_float)
           and not (op in g.BITWISE and dtype.is_float)]
    k = one_kernel([g.binary(op, x, y) for op in ops])
    assert len(k.outputs) == len(ops)
    src = build(k).source
    assert ("fmod(" in src) == dtype.is_float


def test_bool_binary_ops_build(build):
    x, y = leaf(4, dtype=dt.bool_), leaf(4, dtype=dt.bool_)
    ops = [g.BinaryOp.ADD, g.BinaryOp.MUL, g.BinaryOp.MAX, g.BinaryOp.MIN, g.BinaryOp.AND, g.BinaryOp.OR,
           g.BinaryOp.XOR, g.BinaryOp.EQ, g.BinaryOp.LT]
    build(one_kernel([g.binary(op, x, y) for op in ops]))


@pytest.mark.parametrize("dtype", [f32, dt.float16, dt.int32, dt.uint8])
def test_unary_ops_build(build, dtype):
    x = leaf(4, dtype=dtype)
    ops = [op for op in g.UnaryOp if not (op in g.FLOAT_ONLY_UNARY and not dtype.is_float)
           and not (op is g.UnaryOp.NOT and dtype.is_float)]
    build(one_kernel([g.unary(op, x) for op in ops]))


def test_casts_build(build):
    x = leaf(4, dtype=dt.float64)
    outs = [g.reshape(g.cast(x, d), (2, 2)) for d in dt.ALL if d is not dt.float64]
    build(one_kernel([*outs, g.reshape(g.where(g.cast(x, dt.bool_), x, x), (2, 2))]))


# ---- literals ---------------------------------------------------------------------------------------------

def test_literals():
    assert literal(math.inf, f32) == "INFINITY"
    assert literal(-math.inf, dt.float64) == "(-INFINITY)"
    assert literal(math.nan, f32) == "NAN"
    assert literal(1.5, f32) == "1.5f" and literal(1.5, dt.float64) == "1.5"
    assert literal(1.5, dt.float16) == "1.5f"
    assert literal(-(2**31), dt.int32) == "(-2147483647-1)"
    assert literal(-(2**63), dt.int64) == "(-9223372036854775807l-1l)"
    assert literal(7, dt.int64) == "7l"
    assert literal(2**32 - 1, dt.uint32) == "4294967295u"
    assert literal(True, dt.bool_) == "true" and literal(0, dt.bool_) == "false"


def test_special_literals_build(build):
    vals = [(math.inf, f32), (-math.inf, f32), (math.nan, f32), (1e-45, f32), (3.4028234663852886e38, f32),
            (-(2**31), dt.int32), (-(2**63), dt.int64), (2**64 - 1, dt.uint64), (-128, dt.int8),
            (math.nan, dt.float64), (5e-324, dt.float64), (65504.0, dt.float16)]
    for v, dtype in vals:
        x = leaf(3, dtype=dtype)
        src = build(one(g.binary(g.BinaryOp.MAX, x, g.const(v, (3,), dtype)))).source
        assert literal(g.const(v, (), dtype).arg, dtype) in src


# ---- kernel key -------------------------------------------------------------------------------------------

def _graph(a: g.Node, b: g.Node, op=g.BinaryOp.ADD) -> g.Node:
    return g.reduce(g.ReduceOp.SUM, g.binary(op, g.unary(g.UnaryOp.EXP, a), g.permute(b, (1, 0))), (1,))


def test_kernel_key_is_structural():
    k1 = one(_graph(leaf(4, 4), leaf(4, 4)))
    k2 = one(_graph(leaf(4, 4), leaf(4, 4)))
    assert kernel_key(k1) == kernel_key(k2)
    assert render_kernel(k1) == render_kernel(k2)
    assert kernel_key(k1) != kernel_key(one(_graph(leaf(5, 5), leaf(5, 5))))  # shape
    assert kernel_key(k1) != kernel_key(one(_graph(leaf(4, 4), leaf(4, 4), g.BinaryOp.MUL)))  # op
    f64 = one(_graph(leaf(4, 4, dtype=dt.float64), leaf(4, 4, dtype=dt.float64)))
    assert kernel_key(k1) != kernel_key(f64)  # dtype
    p1, p2 = render_kernel(k1), render_kernel(one(_graph(leaf(5, 5), leaf(5, 5))))
    assert p1.name != p2.name


def test_kernel_key_distinguishes_input_positions_and_constants():
    x, y = leaf(4), leaf(4)
    a = one(g.binary(g.BinaryOp.SUB, x, y))
    b = one(g.binary(g.BinaryOp.SUB, y, x))  # y is in0 there too: inputs are ordered by id
    assert kernel_key(a) != kernel_key(b)
    c1 = one(g.binary(g.BinaryOp.ADD, leaf(4), g.const(1.0, (4,), f32)))
    c2 = one(g.binary(g.BinaryOp.ADD, leaf(4), g.const(2.0, (4,), f32)))
    assert kernel_key(c1) != kernel_key(c2)
    p1 = one(g.pad(leaf(4), ((1, 0),), 0.0))
    p2 = one(g.pad(leaf(4), ((0, 1),), 0.0))
    assert kernel_key(p1) != kernel_key(p2)


# ---- index type -------------------------------------------------------------------------------------------

def test_index_type_is_int_for_small_buffers(build):
    src = build(one(g.unary(g.UnaryOp.EXP, leaf(8)))).source
    assert "  int gid = get_global_id(0);" in src


def test_index_type_is_long_for_a_huge_output(build):
    x = leaf(1, 1)  # nothing large is allocated: the output is only rendered
    n = g.cast(g.expand(x, (2**16, 2**15)), dt.float16)
    p = build(one(n))
    assert "  long gid = get_global_id(0);" in p.source
    assert p.gws == (2**31,)


def test_index_type_is_long_for_a_huge_input(build):
    big = g.expand(leaf(1, 1), (2**16, 2**15))
    k = Kernel([g.reduce(g.ReduceOp.SUM, big, (1,))], [big])  # pretend the expanded view is a stored buffer
    p = build(k)
    assert "  #define gid ((long)get_global_id(0))" in p.source  # (OpenCL: the call at each use, see render.py)
    assert re.search(r"for \(long r\d+ = 0; r\d+ < 32768;", p.source)


def test_index_type_accounts_for_huge_intermediates(build):
    x = leaf(1, 1)
    n = g.reduce(g.ReduceOp.SUM, g.expand(x, (20, 2**31 + 3)), (1,))  # 20 outputs: not split
    src = build(one(n)).source
    assert not re.search(r"for \(int r\d+ = 0; r\d+ < 2147483651;", src), src


def test_matmul_on_a_cpu_has_columns_in_simd_lanes_and_no_local_tiles(build):
    a, b = leaf(30, 5), leaf(5, 70)
    ae = g.expand(g.reshape(a, (30, 5, 1)), (30, 5, 70))
    be = g.expand(g.reshape(b, (1, 5, 70)), (30, 5, 70))
    prod = g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, ae, be), (1,))
    n = g.binary(g.BinaryOp.ADD, prod, g.const(1.0, (30, 1, 70), dt.float32))
    prog = build(one(n), gpu=False)
    src = prog.source  # gemm_cpu: a column per work-item (dimension 0), 8 rows each, A broadcast, B per lane
    assert "__local" not in src and "barrier" not in src
    assert "get_global_id(0)" in src and "c[r] += a" not in src and "c[7] += a7 * b;" in src
    assert prog.gws == (80, 4, 1) and prog.lws == (16, 1, 1)  # 70 columns padded to work-groups of 16, 30/8 rows
    assert "min(i0 + 7, (int)29)" in src  # rows past the edge read the last row, store nothing
