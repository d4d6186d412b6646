#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"], `bash benchmarks/h200/attention_grad_tests.sh`):
# the attention GPU tests, the backward products' (ZYX_DIST_ATTENTION_GRAD=1) among them, and the GEMM tests.
source benchmarks/h200/call_steps.sh
gpu_tests attention-tests.log 200 tests/gpu/test_attention_gpu.py
gpu_tests gemm-tests.log 300 tests/gpu/test_gemm_gpu.py
