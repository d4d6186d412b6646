#!/usr/bin/env bash
# One call on the GPU machine for 2026-12-05's training-step kernels (run: `device` tool, carry [".devbundle", ".oldzd"]
# with .oldzd/ holding the package to compare with, `bash benchmarks/h200/train_kernels_ab.sh`): the GPU tier, a
# profile and the steps/s of the training step at GPT-2 widths (bf16) beside torch, then the bf16 GPT-2 forward of
# both packages and the attention scores' GEMM forms beside cuBLAS. Each step has its own deadline; the most
# important first.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT 200 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup \
    -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu-tier.log; grep -E "^FAILED|^ERROR" $OUT/gpu-tier.log | head -20
mkdir -p $OUT/p
timeout -k 5 -s ABRT 120 python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 8 1024 768 12 bfloat16 2>&1 \
    | grep -vi warn | tail -14 | tee $OUT/step-profile.txt
mv $OUT/p/top-kernels.cu $OUT/ 2>/dev/null; rm -rf $OUT/p
T="--embed 768 --layers 4 --heads 12 --block 1024 --batch 8 --rounds 5 --steps 5 --warmup 3 --depths="
XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 150 python3 benchmarks/train_bench.py $T \
    --dtype bfloat16 --json $OUT/train-gpt2w-bf16.json > $OUT/train-gpt2w-bf16.log 2>&1
echo "train rc=$?"; grep -v -i "warn\|warm-up" $OUT/train-gpt2w-bf16.log | tail -6
for pkg in old new; do
  [ $pkg = old ] && [ ! -d .oldzd ] && continue
  pp=$PYTHONPATH; [ $pkg = old ] && pp=$PWD/.oldzd:$PYTHONPATH
  PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -s ABRT 60 \
    python3 benchmarks/h200/model_ab.py gpt2 bf16 10 2>&1 | grep -v -i warn | tail -1 | sed "s/^/$pkg: /"
done | tee $OUT/gpt2-ab.log
timeout -k 5 -s ABRT 60 python3 benchmarks/h200/gemm_forms.py --sizes 96x1024x1024x64 --layouts nt --dtypes bfloat16 \
    --launches 10 --forms staged,"tma t128 s3" 2>&1 | grep -v -i warn | tee $OUT/gemm-forms-scores.txt
