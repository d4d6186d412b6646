#!/usr/bin/env bash
# A short call after the GEMM tile changes (carry [".devbundle", ".oldzd"], .oldzd/ with the package of f34581a):
# the GEMM GPU tests of the stored-transposed and Adam cases, then the GPT-2 small bf16 forward (first realize and
# the median of 10) in both packages, alternating, each in a fresh process with caches of its own.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT 100 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py -k "stored_transposed or adam" -n 8 -p no:cacheprovider > $OUT/gpu-gemm-tests.log 2>&1; tail -1 $OUT/gpu-gemm-tests.log; grep -E "^FAILED" $OUT/gpu-gemm-tests.log | head
for pkg in new old; do
  pp=$PYTHONPATH; [ $pkg = old ] && pp=$PWD/.oldzd:$PYTHONPATH
  PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 60 python3 benchmarks/h200/model_ab.py gpt2 bf16 10 2>&1 | grep -v -i warn | tail -2 | sed "s/^/$pkg: /" | tee -a $OUT/gpt2-bf16-ab.log
done
