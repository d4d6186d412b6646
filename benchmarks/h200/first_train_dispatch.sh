#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/first_train_dispatch.sh`):
# the first forwards of the block and GPT-2 (fresh process, then from the disk caches), the training benchmark in
# bf16, and the small-step loop (plain and zd.jit, in-process and Ray) beside torch eager.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 benchmarks/model_bench.py --sections first --out $OUT > $OUT/first.log 2>&1; echo "first rc=$? in $(( $(date +%s) - t0 )) s"; grep -vi warn $OUT/first.log | tail -5
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t1=$(date +%s)
timeout -s ABRT 130 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-h200-bf16.json > $OUT/train-bf16.log 2>&1; echo "train bf16 rc=$? in $(( $(date +%s) - t1 )) s"; grep -v -i "warn\|warm-up" $OUT/train-bf16.log | tail -8
t2=$(date +%s)
timeout -s ABRT 150 python3 benchmarks/dispatch_bench.py --device cuda:0 --only b --steps 200 --out $OUT --name dispatch-h200-small-step.json > $OUT/dispatch-b.log 2>&1; echo "dispatch b rc=$? in $(( $(date +%s) - t2 )) s"; grep -E "per step|torch|x torch" $OUT/dispatch-b.log | head -20
