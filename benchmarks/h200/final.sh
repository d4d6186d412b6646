#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/final.sh`):
# the GPU tier, the matmuls and the block and GPT-2 forwards (fp32, bf16) beside torch, the first forwards
# (fresh process, then from the disk caches), and the bf16 training step.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 200 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1; echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
t1=$(date +%s)
timeout -s ABRT 300 python3 benchmarks/model_bench.py --sections matmul,block,gpt2,first --repeats 10 --out $OUT > $OUT/models.log 2>&1; echo "models rc=$? in $(( $(date +%s) - t1 )) s"; grep -vi "warn" $OUT/models.log | grep -E "fp32|bf16|first" | tail -20
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t2=$(date +%s)
timeout -s ABRT 120 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-h200-bf16.json > $OUT/train-bf16.log 2>&1; echo "train bf16 rc=$? in $(( $(date +%s) - t2 )) s"; grep -v -i "warn\|warm-up" $OUT/train-bf16.log | tail -7
