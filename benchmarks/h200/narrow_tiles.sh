#!/usr/bin/env bash
# One call on the GPU machine for the wgmma GEMM's 128 x 64 and 128 x 192 tiles and a short K's epilogue inputs
# copied before the main loop (run: `device` tool, carry [".devbundle", ".oldzd"] with .oldzd/ holding the package
# to compare with, `bash benchmarks/h200/narrow_tiles.sh`): the GEMM GPU tests, the training step's device time at
# GPT-2 widths (bf16) in both packages, the forms of the step's GEMMs beside cuBLAS (attention scores q @ k.mT with
# K = 64, p @ v with N = 64, weight gradients x.T @ g with K = 8192, the layers' products with K = 768 and 3072),
# then the training benchmark beside torch, and the old package's without torch. Each step has its own deadline.
source .devbundle/setup.sh
source benchmarks/h200/step_profiles.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py -n 8 \
    --dist loadgroup -p no:cacheprovider > $OUT/gpu-gemm-tests.log 2>&1
echo "gemm tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu-gemm-tests.log
grep -E "^FAILED|^ERROR" $OUT/gpu-gemm-tests.log | head -10
step_profiles new old
forms() { timeout -k 5 -s ABRT 100 python3 benchmarks/h200/gemm_forms.py --dtypes bfloat16 --launches 10 "$@" 2>&1 \
  | grep -v -i warn | tee -a $OUT/gemm-forms.txt; }
forms --sizes 96x1024x1024x64 --layouts nt --forms "tma t128 s3 staged,tma t64 s3 staged"
forms --sizes 96x1024x64x1024 --forms "tma t128 s3 staged,tma t64 s3 staged"
forms --sizes 768x3072x8192 --layouts tn --forms "tma t128 s3 staged,tma t256 s4 staged,tma t192"
forms --sizes 8192x3072x768,8192x768x3072 --forms "tma t128 s3 staged,tma t256 s4 staged,tma t64,tma t192"
T="--embed 768 --layers 4 --heads 12 --block 1024 --batch 8 --rounds 5 --steps 5 --warmup 3 --depths="
XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 150 \
  python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-gpt2w-bf16.json > $OUT/train.log 2>&1
echo "train rc=$?"; grep -v -i "warn\|warm-up" $OUT/train.log | tail -6
PYTHONPATH=$PWD/.oldzd:$PYTHONPATH XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 100 \
  python3 benchmarks/train_bench.py $T --dtype bfloat16 --no-torch > $OUT/train-old.log 2>&1
echo "train (old package) rc=$?"; grep -v -i "warn\|warm-up" $OUT/train-old.log | grep zyx_dist_jit | sed "s/^/old: /"
