#!/usr/bin/env bash
# One call on the GPU machine for half-type division by the reciprocal (run: `device` tool, carry [".devbundle"],
# `bash benchmarks/h200/half_division.sh`): the score-row softmax's forms on causal rows (-1e9 above the diagonal),
# the GPU tier, the training step's device time at GPT-2 widths (bf16), then the training benchmark beside torch.
source .devbundle/setup.sh
source benchmarks/h200/step_profiles.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout -k 5 -s ABRT 60 python3 benchmarks/h200/row_forms.py --dtypes bfloat16 --forms softmax --launches 20 --causal 2>&1 \
  | grep -v -i warn | sort -k5 -n | head -4 | sed "s/^/row forms --causal: /" | tee $OUT/row-forms-causal.txt
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup \
    -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu-tier.log; grep -E "^FAILED|^ERROR" $OUT/gpu-tier.log | head -10
step_profiles new
T="--embed 768 --layers 4 --heads 12 --block 1024 --batch 8 --rounds 5 --steps 5 --warmup 3 --depths="
XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 150 \
  python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-gpt2w-bf16.json > $OUT/train.log 2>&1
echo "train rc=$?"; grep -v -i "warn\|warm-up" $OUT/train.log | tail -6
