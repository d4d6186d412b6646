#!/usr/bin/env bash
# One call on the GPU machine for the attention backward's products on tensor cores (codegen/attention_grad.py;
# run: `device` tool, carry [".devbundle", ".oldzd"] with .oldzd/ holding the package to compare with,
# `bash benchmarks/h200/attention_grad.sh`): the attention GPU tests (the products' own among them), the training
# step's device time at GPT-2 widths (bf16) in both packages, then the training benchmark beside torch.
source benchmarks/h200/call_steps.sh
gpu_tests attention-tests.log 200 tests/gpu/test_attention_gpu.py
step_profiles new old
train_gpt2w new train-gpt2w-bf16
