"""GPU machine: torch's causal scaled_dot_product_attention at the attention core's shape (8,16,1024,64), run a
few times in one dtype, for Nsight Compute to show its kernel (grid, block, registers, shared memory, time)
beside ours (attention_profile.py):

    ncu -k regex:flash --set full python3 benchmarks/h200/sdpa_profile.py bfloat16
"""

from __future__ import annotations

import sys

import torch


def main() -> None:
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[sys.argv[1]]
    q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=dtype) for _ in range(3))
    for _ in range(3):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
