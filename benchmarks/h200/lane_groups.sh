#!/usr/bin/env bash
# One call on the GPU machine for the lane-group row reductions and the bfloat16 cvt stores (run: `device` tool,
# carry [".devbundle", ".oldzd"] with .oldzd/ holding the package before the cvt stores, `bash
# benchmarks/h200/lane_groups.sh`): the in-group reduction, CUDA and attention GPU tests, the training step's device
# time at GPT-2 widths (bf16) in both packages, then the training benchmark beside torch.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-tests.log 200 tests/gpu/test_group_reduce_gpu.py tests/gpu/test_cuda.py tests/gpu/test_attention_gpu.py
step_profiles new old
train_gpt2w new train-gpt2w-bf16
