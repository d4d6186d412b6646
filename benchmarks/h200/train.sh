#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/train.sh`): the GEMM
# and group-reduce GPU tests, then the training benchmark (fp32, bf16) beside torch eager and torch.compile.
# A hang prints every stack (faulthandler on SIGABRT); benchmarks/h200/slow_launches.py names the kernel.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1  # timeout -s ABRT: a stack on a hang
t0=$(date +%s)
timeout -s ABRT 100 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py tests/gpu/test_group_reduce_gpu.py -k "cuda" -p no:cacheprovider -n 8 > $OUT/gpu-gemm-tests.log 2>&1; echo "gpu gemm tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 $OUT/gpu-gemm-tests.log
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t3=$(date +%s)
timeout -s ABRT 200 python3 benchmarks/train_bench.py $T --json $OUT/train-h200-fp32.json > $OUT/train.log 2>&1; echo "train fp32 rc=$? in $(( $(date +%s) - t3 )) s"; grep -v -i warn $OUT/train.log | tail -12
t4=$(date +%s)
timeout -s ABRT 140 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-h200-bf16.json > $OUT/train-bf16.log 2>&1; echo "train bf16 rc=$? in $(( $(date +%s) - t4 )) s"; grep -v -i warn $OUT/train-bf16.log | tail -10
