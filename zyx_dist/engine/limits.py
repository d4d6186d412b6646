"""Driver side: what a session's devices allow its kernels, worked out once as the session starts. Takes the
devices' infos (runtime/worker.py's `info`) and the environment; gives the kernelizer's `Limits` (the argument
space every device has, and the head dims at which an attention's backward products recompute their weights)
and, where those products recompute, split-K's test of the sums it must leave whole (graph/ir.py's WHOLE_SUMS).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

from ..errors import ConfigError
from ..fuse.kernelize import Limits
from ..graph import attention_grad


def session_limits(infos: list[dict]) -> tuple[Limits, Callable | None]:
    """The limits every device of `infos` keeps, and split-K's test of the sums to leave whole (None: none). An
    attention's backward products recompute their weights where every device does, at head dims all of them
    take (`grad_heads`, multiples of 16 or of 64: the larger is a multiple of both)."""
    each = [grad_heads(i) for i in infos]
    heads = max(each) if all(each) else 0
    limits = Limits(param_bytes=min(int(i.get("max_parameter_bytes") or 1024) for i in infos), grad_heads=heads)
    return limits, partial(attention_grad.recomputes, head_multiple=heads) if heads else None


def grad_heads(info: dict) -> int:
    """The head dims (their multiple) at which an attention's backward products recompute their weights on this
    device (codegen/attention_grad.py), 0 where they never do. ZYX_DIST_ATTENTION_GRAD=1 asks for them at every
    head dim in whole 16s on CUDA with mma.sync on half types (compute capability 8.0 and up); =wgmma only where
    wgmma's form of them applies, Hopper (9.x) at head dims of whole 64s: on an H100 the GPT-2-width bf16
    training step took 7.90 ms that way against 8.18 with the stored p and dS GEMMs, and stores no T x T matrix,
    while mma.sync's form alone was slower than the stored path (an H200's step 8.51 against 7.58 ms). Unset or 0,
    the stored path everywhere (=wgmma becomes the default once the GPU tier has passed with it); any other value
    is a ConfigError."""
    asked = os.environ.get("ZYX_DIST_ATTENTION_GRAD", "").strip().lower()
    if asked not in ("", "0", "false", "off", "1", "true", "on", "wgmma"):
        raise ConfigError(f"ZYX_DIST_ATTENTION_GRAD: {asked!r} is not a setting (use 1, wgmma or 0)")
    cc = str(info.get("compute_capability", "")).split(".")[0]
    major = int(cc) if cc.isdigit() and info.get("backend") == "cuda" else 0
    if asked in ("1", "true", "on"):
        return 16 if major >= 8 else 0
    return 64 if asked == "wgmma" and major == 9 else 0
