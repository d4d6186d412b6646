"""Unit tier: which operands of a Hopper GEMM the tensor memory accelerator loads (codegen/gemm_tma.py), the
marker lines that carry their tensor maps to the worker and how runtime/cuda_tma.py reads them back, and
that ptxas takes the kernels (no GPU needed; the GPU tier runs them against NumPy)."""

from __future__ import annotations

import tempfile

import pytest
from test_cuda_render import NVCC, _nvcc, _wgmma_kernels

from zyx_dist.codegen import gemm_tma
from zyx_dist.codegen.options import KernelOpts
from zyx_dist.codegen.render import CUDA_SM90A, render_kernel
from zyx_dist.runtime import cuda_tma


def _forms() -> dict:
    return {name.split("_wgmma_")[0]: k for name, (k, _) in _wgmma_kernels().items()}


def _maps(k) -> tuple[cuda_tma.MapSpec, ...]:
    return cuda_tma.parse(render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=2)).source)


def test_tensor_maps_cover_the_operands_tma_can_read():
    forms = _forms()
    for dtype, code in (("float16", 6), ("bfloat16", 9)):
        # both operands of x3d @ W (K-major A, MN-major B): 2-D maps over the whole inputs, 128- and 64-row boxes
        a, b = _maps(forms[f"x3d_bias_relu_{dtype}"])
        assert (a.arg, a.dtype, a.offset, a.dims, a.strides, a.box) == (0, code, 0, (64, 150), (128,), (64, 128))
        assert (b.arg, b.dims, b.strides, b.box) == (1, (96, 64), (192,), (64, 64))
        # a transposed A of 130 rows has rows 260 bytes apart, not whole 16 bytes: it keeps cp.async, B gets a map
        assert [m.arg for m in _maps(forms[f"transposed_{dtype}"])] == [1]
        # an operand computed element by element (scaled) is no buffer TMA could read
        assert [m.arg for m in _maps(forms[f"scaled_{dtype}"])] == [1]
        # q and k from one permuted qkv buffer: 4-D maps (k, rows, then two batch digits), k 64 bytes after q
        q, kk = _maps(forms[f"qk_view_{dtype}"])
        assert q.arg == kk.arg == 0 and (q.offset, kk.offset) == (0, 64) and len(q.dims) == 4
        assert q.strides == kk.strides and q.box[2:] == kk.box[2:] == (1, 1)


def test_no_tensor_map_for_what_tma_cannot_express():
    """x3d @ W's A (offset gi*64 + gk) has a map; each change below breaks one of TMA's rules and loses it."""
    from dataclasses import replace

    from zyx_dist.codegen import gemm
    from zyx_dist.codegen import symbolic as sym

    spec = gemm.match(_forms()["x3d_bias_relu_bfloat16"])
    gi, gk = (next(t for t, _ in spec.a_view.offset.terms if t.name == n) for n in ("gi", "gk"))

    def a(offset: sym.Expr, dtype: str = "bfloat16", mode: str = "k") -> gemm_tma.TensorMap | None:
        return gemm_tma.tensor_map(replace(spec, a_view=replace(spec.a_view, offset=offset, dtype=dtype)),
                                   True, mode, 128)

    assert a(sym.add(sym.mul(gi, 64), gk)) == gemm_tma.tensor_map(spec, True, "k", 128) is not None
    assert a(sym.add(sym.mul(gi, 64), gk, 8)).offset == 8  # a 16-byte-aligned start is fine
    assert a(sym.add(sym.mul(gi, 64), gk, 3)) is None  # a start 6 bytes into a 16-byte unit
    assert a(sym.add(sym.mul(gi, 65), gk)) is None  # rows 130 bytes apart
    assert a(sym.add(sym.mul(gi, 64), sym.mul(gk, 2))) is None  # k not contiguous in a K-major read
    assert a(sym.add(sym.mul(gi, 64), sym.mul(gk, -1), 63)) is None  # a flipped k walks backwards
    assert a(sym.add(sym.mul(gi, 64), gk), mode="mn") is None  # rows are not contiguous
    assert a(sym.add(sym.mul(gi, 64), gk), dtype="float32") is None  # wgmma's TMA form takes half types
    assert a(sym.mul(gi, 64)) is None  # no k index: a broadcast operand


def test_affine_maps_of_any_input():
    """gemm_tma.affine_map, as attention_tma.py's k, v and mask tiles use it: the contiguous dim first (coefficient
    1), the row dim's stride, then digits of the batch index; none for another
    variable, an inner coefficient of 2, rows of no whole 16 bytes, or a float32 input."""
    from zyx_dist.codegen import symbolic as sym

    bz, gi, gk, dd = sym.Var("bz", 0, 127), sym.Var("gi", 0, 63), sym.Var("gk", 0, 1023), sym.Var("dd", 0, 63)
    k = gemm_tma.affine_map(1, "bfloat16", sym.add(sym.mul(bz, 65536), sym.mul(gk, 64), dd), ("dd", 64), ("gk", 1024),
                            128, (64, 64), True)
    assert (k.dtype, k.dims, k.strides, k.box, k.digits) == ("bf16", (64, 1024, 128), (64, 65536), (64, 64, 1), ((1, 0),))
    mask = gemm_tma.affine_map(3, "float16", sym.add(sym.mul(gi, 1024), gk), ("gk", 1024), ("gi", 64), 128, (64, 64), True)
    assert (mask.dims, mask.strides, mask.digits) == ((1024, 64), (1024,), ())
    assert mask.marker() == gemm_tma.MARK + "3 f16 0 2 1024 64 2048 64 64"
    assert gemm_tma.affine_map(3, "float32", sym.add(sym.mul(gi, 1024), gk), ("gk", 1024), ("gi", 64), 128, (32, 64),
                               True) is None
    assert gemm_tma.affine_map(3, "bfloat16", sym.add(sym.mul(gi, 1030), gk), ("gk", 1024), ("gi", 64), 1, (64, 64),
                               True) is None  # rows 2060 bytes apart
    assert gemm_tma.affine_map(3, "bfloat16", sym.add(sym.mul(gi, 2048), sym.mul(gk, 2)), ("gk", 1024), ("gi", 64), 1,
                               (64, 64), True) is None  # every other element
    assert gemm_tma.affine_map(1, "bfloat16", sym.add(sym.mul(gk, 64), dd), ("gk", 1024), ("gi", 64), 1, (64, 64),
                               True) is None  # dd is neither of the map's dims


def test_malformed_tensor_map_lines_are_refused():
    good = gemm_tma.TensorMap(2, "bf16", 8, (64, 32, 3), (96, 4096), (64, 128, 1), ((1, 0),), True).marker()
    (m,) = cuda_tma.parse("int x;\n" + good + "\n")
    assert m == cuda_tma.MapSpec(2, 9, 16, (64, 32, 3), (192, 8192), (64, 128, 1))  # bytes from elements
    for bad in (good.replace("bf16", "f32"), good.rsplit(" ", 1)[0], gemm_tma.MARK + "1 f16 0 6 " + "1 " * 17):
        with pytest.raises(ValueError, match="tensor map"):
            cuda_tma.parse(bad)


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
def test_ptxas_accepts_the_tma_forms():
    """Every form with the tuner's TMA options, through ptxas (-cubin): it checks the bulk tensor copies,
    the mbarrier waits and the registers of the inline PTX."""
    options = [KernelOpts(wgmma=2, tile=t, stages=st, prefetch=p, cache=c)
               for t, st, p, c in ((0, 4, 0, 1), (1, 4, 0, 0), (1, 3, 0, 1), (1, 3, 1, 1))]
    sources = {f"{name}_{i}": render_kernel(k, CUDA_SM90A, o).source
               for name, k in _forms().items() for i, o in enumerate(options)}
    assert all(gemm_tma.MARK in s for s in sources.values())
    with tempfile.TemporaryDirectory() as tmp:
        errors = _nvcc(sources, tmp, ["-cubin", "-arch=sm_90a", "-x", "cu"])
    assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in list(errors.items())[:2])
