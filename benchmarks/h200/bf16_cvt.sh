#!/usr/bin/env bash
# One call on the GPU machine for bfloat16 stores by one cvt instruction (run: `device` tool, carry [".devbundle",
# ".oldzd"] with .oldzd/ holding the package before it, `bash benchmarks/h200/bf16_cvt.sh`): the GPU tier, then
# the training step's device time at GPT-2 widths (bf16) in both packages, twice, alternating.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-tests.log 300 tests/gpu
step_profiles new old
step_profiles new old
