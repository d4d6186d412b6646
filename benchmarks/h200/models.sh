#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/models.sh`):
# the GEMM GPU tests, GPT-2's first forward under cProfile (fresh caches), the block and GPT-2 forwards (fp32, bf16)
# beside torch eager and torch.compile, the training benchmark in fp32, and the replayed zd.jit small step.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 100 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py -k cuda -p no:cacheprovider -n 8 > $OUT/gpu-gemm-tests.log 2>&1; echo "gemm tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-gemm-tests.log
t1=$(date +%s)
CUPY_CACHE_DIR=$(mktemp -d) timeout -s ABRT 100 python3 benchmarks/h200/first_profile.py gpt2 $OUT/gpt2-first.prof > $OUT/gpt2-first.log 2>&1; echo "first rc=$? in $(( $(date +%s) - t1 )) s"; grep -E "FIRST|SECOND" $OUT/gpt2-first.log | cut -c1-120
t2=$(date +%s)
timeout -s ABRT 260 python3 benchmarks/model_bench.py --sections block,gpt2 --repeats 10 --out $OUT > $OUT/models.log 2>&1; echo "models rc=$? in $(( $(date +%s) - t2 )) s"; grep -vi "warn" $OUT/models.log | grep -E "fp32|bf16|first" | tail -20
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t3=$(date +%s)
timeout -s ABRT 150 python3 benchmarks/train_bench.py $T --json $OUT/train-h200-fp32.json > $OUT/train.log 2>&1; echo "train fp32 rc=$? in $(( $(date +%s) - t3 )) s"; grep -v -i "warn\|warm-up" $OUT/train.log | tail -8
t4=$(date +%s)
timeout -s ABRT 60 python3 benchmarks/h200/small_step_profile.py > $OUT/small.log 2>&1; echo "small rc=$? in $(( $(date +%s) - t4 )) s"; grep round $OUT/small.log
