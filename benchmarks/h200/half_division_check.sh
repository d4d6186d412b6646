#!/usr/bin/env bash
# A short call after benchmarks/h200/half_division.sh (carry [".devbundle"]): tests/gpu/test_cuda.py (half-type
# division among them) and the score-row softmax's forms on causal rows.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT 90 python3 -m pytest -q -m gpu tests/gpu/test_cuda.py \
    -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-cuda-tests.log 2>&1
echo "cuda tests rc=$?"; tail -1 $OUT/gpu-cuda-tests.log; grep -E "^FAILED|^ERROR|^E  " $OUT/gpu-cuda-tests.log | head -10
timeout -k 5 -s ABRT 50 python3 benchmarks/h200/row_forms.py --dtypes bfloat16 --forms softmax --launches 20 --causal 2>&1 \
  | grep -v -i warn | sort -k5 -n | head -3 | sed "s/^/row forms --causal: /"
