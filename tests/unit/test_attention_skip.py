"""Unit tier: which fused attention kernels get whole-block skips (codegen/attention_skip.py) and with what
bound: an additive mask through casts and constant scales of q @ k^T, or `where(cond, s, -inf)`; none for
an unmasked kernel, a scoring the rule cannot bound, or a mask the same at every score; a mask that varies
with the batch gets flags per batch. The rendered CUDA carries the prologue line the runtime reads (the
same marker on both sides), and nvcc accepts it (test_cuda_render.py compiles the masked forms)."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from helpers import leaf, one

from zyx_dist import dtypes as dt
from zyx_dist.codegen import attention, attention_skip
from zyx_dist.codegen.render import CUDA, render_kernel
from zyx_dist.graph import ir as g
from zyx_dist.graph.ir import view_base

B, T, D = 2, 200, 32


def _bmm(a: g.Node, b: g.Node) -> g.Node:
    *batch, m, k = a.shape
    n = b.shape[-1]
    ae = g.expand(g.reshape(a, (*batch, m, 1, k)), (*batch, m, n, k))
    be = g.expand(g.reshape(g.permute(b, (0, 2, 1)), (b.shape[0], 1, n, k)), (*batch, m, n, k))
    return g.reshape(g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, ae, be), (3,)), (*batch, m, n))


def _kernel(dtype, scoring, head: int = D):
    """The attention kernel of softmax(scoring(q @ k^T)) @ v at (B, T, head)."""
    q, k, v = (leaf(B, T, head, dtype=dtype) for _ in range(3))
    s = scoring(_bmm(q, g.permute(k, (0, 2, 1))))
    mx = g.reduce(g.ReduceOp.MAX, s, (2,))
    e = g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.SUB, s, g.expand(mx, s.shape)))
    p = g.binary(g.BinaryOp.DIV, e, g.expand(g.reduce(g.ReduceOp.SUM, e, (2,)), e.shape))
    kern = one(_bmm(p, v))
    spec = attention.match(kern)
    assert spec is not None
    return kern, spec


def _scaled(c, dtype):
    return lambda s: g.binary(g.BinaryOp.MUL, s, g.const(c, s.shape, dtype))


def _masked(inner, dtype, shape=(1, T, T)):
    return lambda s: g.binary(g.BinaryOp.ADD, inner(s), g.expand(leaf(*shape, dtype=dtype), s.shape))


def _largest(dtype) -> float:
    return float(ml_dtypes.finfo(dtype.np_dtype).max if dtype is dt.bfloat16 else np.finfo(dtype.np_dtype).max)


@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.bfloat16], ids=lambda d: d.name)
def test_an_additive_mask_skips_blocks_under_a_bound_on_q_and_k(dtype):
    kern, spec = _kernel(dtype, _masked(_scaled(0.125, dtype), dtype))
    r = attention_skip.rule(spec, kern)
    assert r is not None and r.test == "{} == -INFINITY" and not r.batched
    assert r.clear == "{} == 0.0f" and r.value == "0.0f"  # a block whose mask is all 0 is scored without it
    # |q . k| * 0.125 must stay under the dtype's largest value at every rounding, and |q . k| under
    # D * max|q| * max|k|; the bound leaves a little slack for float32 rounding, never more than 10%
    exact = min(_largest(dtype) / 0.125, float(np.finfo(np.float32).max), _largest(dtype)) / D
    assert exact / 1.1 < r.limit < exact
    src = render_kernel(kern, CUDA).source
    assert attention_skip.PROLOGUE_MARK in src and "zd_mask[" in src and "zd_qmax" in src
    assert src.count("& 2)") >= 1 and "+ 0.0f)" in src  # the scoring of clear blocks, the mask a constant


def test_a_larger_scale_lowers_the_bound():
    kern, spec = _kernel(dt.float16, _masked(_scaled(0.125, dt.float16), dt.float16))
    small = attention_skip.rule(spec, kern).limit
    kern, spec = _kernel(dt.float16, _masked(_scaled(8.0, dt.float16), dt.float16))
    large = attention_skip.rule(spec, kern).limit
    # at scale 0.125 the float16 q @ k^T itself bounds it; at scale 8 the scaled scores, 8 times lower
    assert math.isclose(small / large, 8.0) and small < 65504 / D


def test_where_with_minus_inf_skips_without_a_bound():
    cond = leaf(1, T, T, dtype=dt.bool_)

    def scoring(s):
        return g.where(g.expand(cond, s.shape), s, g.const(-math.inf, s.shape, s.dtype))

    kern, spec = _kernel(dt.float32, scoring)
    r = attention_skip.rule(spec, kern)
    assert r is not None and r.limit is None and r.test == "!({})" and r.clear == "({})" and r.value == "true"
    src = render_kernel(kern, CUDA).source
    assert attention_skip.PROLOGUE_MARK in src and "zd_qmax" not in src


def test_a_mask_that_varies_with_the_batch_gets_flags_per_batch():
    kern, spec = _kernel(dt.float32, _masked(_scaled(0.125, dt.float32), dt.float32, (B, 1, T)))
    r = attention_skip.rule(spec, kern)
    assert r is not None and r.batched
    lay = attention_skip.layout(spec, r)
    assert (lay.batches, lay.row_blocks, lay.key_blocks, lay.mask_batches) == (B, 4, 4, B)
    # a work-group per (batch, key block) and per mask tile, side by side
    assert lay.mask_tiles == B * 4 * 4 and lay.groups == max(B * 4, B * 4 * 4)
    assert lay.nbytes == 8 * B * 4 + 4 * B * 16


@pytest.mark.parametrize("scoring", ["none", "scaled only", "tanh capped", "mask same everywhere"])
def test_no_skip_where_the_rule_does_not_hold(scoring):
    f32 = dt.float32
    forms = {
        "none": lambda s: s,
        "scaled only": _scaled(0.125, f32),
        "tanh capped": lambda s: g.binary(g.BinaryOp.ADD, g.unary(g.UnaryOp.TANH, s), g.expand(leaf(1, T, T), s.shape)),
        "mask same everywhere": lambda s: g.binary(g.BinaryOp.ADD, s, g.expand(leaf(1, 1, 1), s.shape)),
    }
    kern, spec = _kernel(f32, forms[scoring])
    assert attention_skip.rule(spec, kern) is None
    src = render_kernel(kern, CUDA).source
    assert attention_skip.PROLOGUE_MARK not in src and "zd_scratch" not in src


def test_no_skip_where_the_flags_would_not_fit_the_scratch_budget(monkeypatch):
    kern, spec = _kernel(dt.float32, _masked(_scaled(0.125, dt.float32), dt.float32, (B, 1, T)))
    lay = attention_skip.layout(spec, attention_skip.rule(spec, kern))
    assert attention_skip.PROLOGUE_MARK in render_kernel(kern, CUDA).source
    monkeypatch.setattr(attention_skip, "MAX_SCRATCH", lay.nbytes - 1)
    src = render_kernel(kern, CUDA).source
    assert attention_skip.PROLOGUE_MARK not in src and "zd_scratch" not in src


def test_the_runtime_reads_the_marker_the_renderer_writes():
    text = (Path(attention_skip.__file__).parents[1] / "runtime" / "cuda.py").read_text()
    assert f'PROLOGUE_MARK = "{attention_skip.PROLOGUE_MARK}"' in text
    # what the CUDA backend takes from a rendered source (no GPU needed: it only reads the marker lines)
    from zyx_dist.runtime import cuda

    kern, spec = _kernel(dt.bfloat16, _masked(_scaled(0.125, dt.bfloat16), dt.bfloat16))
    program = render_kernel(kern, CUDA)
    lay = attention_skip.layout(spec, attention_skip.rule(spec, kern))
    shared, pro, maps = cuda._declared(program.source)
    assert shared > 0  # the staged tiles live in dynamic shared memory
    assert pro == (f"{program.name}_pre", lay.groups, attention_skip.THREADS, lay.nbytes) and maps == ()
    assert cuda._declared("extern \"C\" __global__ void k() {}") == (0, None, ())


def test_the_tma_form_publishes_its_own_flags_in_module_memory():
    """attention_tma.py's kernel has no prologue: its work-groups publish the same flags (one 64-bit word each,
    tagged with the launch's number) in module memory sized for every (batch, key block) and mask tile, warp 0
    tests a masked block with the prologue's bound, and the runtime finds tensor maps and no prologue."""
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A
    from zyx_dist.runtime import cuda

    for shape, batched in (((1, T, T), False), ((B, 1, T), True)):
        kern, spec = _kernel(dt.bfloat16, _masked(_scaled(0.125, dt.bfloat16), dt.bfloat16, shape), 64)
        r = attention_skip.rule(spec, kern)
        lay = attention_skip.layout(spec, r)
        program = render_kernel(kern, CUDA_SM90A, KernelOpts(wgmma=2))
        src = program.source
        words = lay.batches * lay.key_blocks + lay.mask_tiles
        assert f"unsigned long long {program.name}_flags[{words}];" in src and f"{program.name}_epoch" in src
        assert lay.mask_tiles == (B if batched else 1) * 4 * 4 and r.batched == batched
        assert f"zd_qmax * zd_kp <= {r.limit:.9g}f" in src  # the prologue's bound (skip_test's)
        assert attention_skip.PROLOGUE_MARK not in src and "zd_scratch" not in src
        # k and v are scanned from the stages their copies fill, in the main loop, not read from global memory: each
        # work-group runs its own key blocks (whose flags it publishes) first
        k_in, v_in = (f"in{kern.inputs.index(view_base(n))}" for n in (spec.k, spec.v))
        assert f"{k_in} + (" not in src and f"{v_in} + (" not in src
        loop = src[src.index("for (int it = 0;; it++)"):]
        assert "an own block: its k and v flags, from the stage" in loop and "zd_next = zd_own;" in src
        shared, pro, maps = cuda._declared(src)
        # k and v by tensor maps, and a mask that varies along the rows (rows of 400 bytes: whole 16s); one per batch
        # and key, the same on every row, is no tile: the scoring reads it from global memory
        assert pro is None and len(maps) == (2 if batched else 3) and shared > 0
