#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/train_dispatch_gpt2.sh`): the training benchmark (fp32, bf16), the five kernels through Ray and in-process, GPT-2 small.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t2=$(date +%s)
timeout 130 python3 benchmarks/train_bench.py $T --json $OUT/train-h200-fp32.json > $OUT/train.log 2>&1; echo "train fp32 rc=$? in $(( $(date +%s) - t2 )) s"; tail -8 $OUT/train.log
t3=$(date +%s)
timeout 100 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-h200-bf16.json >> $OUT/train.log 2>&1; echo "train bf16 rc=$? in $(( $(date +%s) - t3 )) s"; tail -6 $OUT/train.log
t4=$(date +%s)
timeout 150 python3 benchmarks/dispatch_bench.py --device cuda:0 --only d --sizes full --repeats 30 --out $OUT --name dispatch-h200-five.json > $OUT/dispatch-five.log 2>&1; echo "dispatch d rc=$? in $(( $(date +%s) - t4 )) s"; grep -E "zyx_dist" $OUT/dispatch-five.log
t5=$(date +%s)
timeout 170 python3 benchmarks/model_bench.py --sections gpt2 --repeats 5 --out $OUT > $OUT/model-gpt2.log 2>&1; echo "gpt2 rc=$? in $(( $(date +%s) - t5 )) s"; grep -vi warn $OUT/model-gpt2.log | tail -10
