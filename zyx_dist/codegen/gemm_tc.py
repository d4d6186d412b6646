"""Driver side: tensor-core GEMM for half-type operands in the CUDA dialect (placeholder)."""

from __future__ import annotations


def usable(spec, kernel, dialect) -> bool:
    return False


def render(*args, **kwargs):
    raise NotImplementedError
