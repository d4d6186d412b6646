#!/usr/bin/env bash
# A short call after benchmarks/h200/half_division.sh (carry [".devbundle"]): tests/gpu/test_cuda.py (half-type
# division among them) and the score-row softmax's forms on causal rows.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-cuda-tests.log 90 tests/gpu/test_cuda.py
timeout -k 5 -s ABRT 50 python3 benchmarks/h200/row_forms.py --dtypes bfloat16 --forms softmax --launches 20 --causal 2>&1 \
  | grep -v -i warn | sort -k5 -n | head -3 | sed "s/^/row forms --causal: /"
