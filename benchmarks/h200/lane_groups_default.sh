#!/usr/bin/env bash
# One call on the GPU machine for lane groups as the default of short rows (run: `device` tool, carry [".devbundle",
# ".oldzd"] with .oldzd/ holding the package before it, `bash benchmarks/h200/lane_groups_default.sh`): the
# in-group reduction and CUDA GPU tests, then the training step's device time at GPT-2 widths (bf16) in both.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-tests.log 120 tests/gpu/test_group_reduce_gpu.py tests/gpu/test_cuda.py
step_profiles new old
