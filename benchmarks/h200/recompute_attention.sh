#!/usr/bin/env bash
# One call on the GPU machine for the attention backward that recomputes p from the forward's row statistics
# (graph/recompute.py; run: `device` tool, carry [".devbundle", ".oldzd"] with .oldzd/ holding the package to compare
# with, `bash benchmarks/h200/recompute_attention.sh`): the attention GPU tests (each tensor-core form's row
# statistics among them) and the rest of the GPU tier, the training step's device time at GPT-2 widths (bf16) in both
# packages, then the training benchmark beside torch and the old package's without torch.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-tests.log 300 tests/gpu
step_profiles new old
train_gpt2w new train-gpt2w-bf16
train_gpt2w old train-gpt2w-bf16-old --no-torch
