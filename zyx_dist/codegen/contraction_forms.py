"""Driver side: which template renders a contraction kernel (render.py's `render_gemm` calls it). Takes the
kernel's `gemm.GemmSpec` (with the fused attention's or the attention backward product's spec where the kernel is
one), the dialect, the chosen `KernelOpts` and the renderer's callbacks (operands, epilogue, row statistics); gives
the kernel's CUDA or OpenCL C and its launch sizes from the template that takes it: the backward product
(attention_grad.py), the fused attention (attention_tiled.py's CUDA forms, attention.py's OpenCL one), the CPU
GEMM, the wgmma and mma.sync GEMMs on tensor cores, else the register-tiled GEMM; and the flops it counts.
"""

from __future__ import annotations

from ..fuse.kernelize import Kernel
from . import attention, attention_grad, attention_tc, attention_tiled, gemm, gemm_cpu, gemm_tc, gemm_wgmma
from .attention import Evaluate, RowStats
from .gemm import Epilogue
from .options import KernelOpts


def render_body(spec: gemm.GemmSpec, fused: attention.AttentionSpec | None, grad: attention_grad.GradSpec | None,
                name: str, kernel: Kernel, dialect, params: list[str], operand: Evaluate, epilogue: Epilogue,
                T: str, o: KernelOpts, row_stats: RowStats, reads: list) -> tuple[str, tuple, tuple]:
    """`reads`: the epilogue's plain loads, as its last rendering made them (the wgmma GEMM stages them)."""
    if grad is not None:
        return attention_grad.render(grad, name, kernel, params, operand, epilogue, T,
                                     bool(o.wgmma) and attention_grad.wgmma_usable(grad, kernel, dialect))
    if fused is not None and dialect.name == "cuda":
        return attention_tiled.render_cuda(fused, name, kernel, params, operand, epilogue, T, row_stats,
                                           o.wgmma if attention_tc.wgmma_usable(fused, dialect) else 0, o.stages)
    if fused is not None:
        return attention.render(fused, name, dialect, params, operand, epilogue, T, row_stats)
    if o.cpu_rows and dialect.name == "opencl":
        return gemm_cpu.render(spec, name, dialect, params, operand, epilogue, T, o.cpu_rows)
    if gemm_tc.usable(spec, kernel, dialect) and o.wgmma and dialect.wgmma:
        return gemm_wgmma.render(spec, name, kernel, params, operand, epilogue, T, o.tile, o.stages, bool(o.prefetch),
                                 bool(o.cache), o.wgmma == 2, reads)
    if gemm_tc.usable(spec, kernel, dialect):
        return gemm_tc.render(spec, name, kernel, params, operand, epilogue, T, o.tile, o.stages)
    return gemm.render(spec, name, dialect, params, operand, epilogue, T, o.tile_k, bool(o.prefetch), o.tile,
                       bool(o.cache))


def flops(spec: gemm.GemmSpec, fused: attention.AttentionSpec | None, grad: attention_grad.GradSpec | None) -> int:
    if grad is not None:
        return grad.flops
    return int(2 * spec.B * spec.M * spec.N * spec.K * (1 + (fused.head / spec.N if fused else 0)))
