#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/jit.sh`):
# the CUDA-graph and attention GPU tests, then the training benchmark (fp32, bf16; plain and zd.jit beside torch eager
# and torch.compile) and the small-step loop (plain and zd.jit, in-process and Ray, beside torch eager).
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_cuda_graphs.py tests/gpu/test_attention_gpu.py -p no:cacheprovider > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -4 $OUT/gpu-tests.log
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t1=$(date +%s)
timeout -s ABRT 170 python3 benchmarks/train_bench.py $T --json $OUT/train-h200-fp32.json > $OUT/train.log 2>&1; echo "train fp32 rc=$? in $(( $(date +%s) - t1 )) s"; grep -v -i "warn\|warm-up" $OUT/train.log | tail -9
t2=$(date +%s)
timeout -s ABRT 130 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-h200-bf16.json > $OUT/train-bf16.log 2>&1; echo "train bf16 rc=$? in $(( $(date +%s) - t2 )) s"; grep -v -i "warn\|warm-up" $OUT/train-bf16.log | tail -9
t3=$(date +%s)
timeout -s ABRT 120 python3 benchmarks/dispatch_bench.py --device cuda:0 --only b --steps 200 --out $OUT --name dispatch-h200-small-step.json > $OUT/dispatch-b.log 2>&1; echo "dispatch b rc=$? in $(( $(date +%s) - t3 )) s"; grep -E "per step|torch|x torch" $OUT/dispatch-b.log | head -20
