#!/usr/bin/env bash
# A short call after the GEMM tile changes (carry [".devbundle", ".oldzd"], .oldzd/ with the package of f34581a):
# the GEMM GPU tests of the stored-transposed and Adam cases, then the GPT-2 small bf16 forward (first realize and
# the median of 10) in both packages, alternating, each in a fresh process with caches of its own.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-gemm-tests.log 100 tests/gpu/test_gemm_gpu.py -k "stored_transposed or adam"
for pkg in new old; do
  in_package $pkg timeout -k 5 -s ABRT 60 python3 benchmarks/h200/model_ab.py gpt2 bf16 10 2>&1 | grep -v -i warn \
    | tail -2 | sed "s/^/$pkg: /" | tee -a $OUT/gpt2-bf16-ab.log
done
