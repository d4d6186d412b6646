#!/usr/bin/env bash
# One call on the GPU machine for the wgmma GEMM's epilogue inputs staged through shared memory (run: `device`
# tool, carry [".devbundle", ".oldzd"] with .oldzd/ holding the package to compare with, `bash
# benchmarks/h200/staged_loads.sh`): the GEMM and attention-gradient GPU tests, the training step's device time at
# GPT-2 widths (bf16; the old package's too with OLD=1), then the training benchmark beside torch. Each step has its
# own deadline.
source .devbundle/setup.sh
source benchmarks/h200/step_profiles.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py -n 8 \
    --dist loadgroup -p no:cacheprovider > $OUT/gpu-gemm-tests.log 2>&1
echo "gemm tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu-gemm-tests.log
grep -E "^FAILED|^ERROR" $OUT/gpu-gemm-tests.log | head -10
step_profiles new ${OLD:+old}  # (OLD=1: the old package's profile too)
T="--embed 768 --layers 4 --heads 12 --block 1024 --batch 8 --rounds 5 --steps 5 --warmup 3 --depths="
XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 150 \
  python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-gpt2w-bf16.json > $OUT/train.log 2>&1
echo "train rc=$?"; grep -v -i "warn\|warm-up" $OUT/train.log | tail -6
# the score rows' softmax alone on causal rows (-1e9 above the diagonal) against random ones: is its in-step time the data's?
for c in "" --causal; do
  timeout -k 5 -s ABRT 60 python3 benchmarks/h200/row_forms.py --dtypes bfloat16 --forms softmax --launches 20 $c 2>&1 \
    | grep -v -i warn | sort -k5 -n | head -4 | sed "s/^/row forms${c}: /" | tee -a $OUT/row-forms-causal.txt
done
