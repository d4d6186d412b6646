#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/first_forward_train.sh`):
# GPU tests of the tuner and CUDA worker, the block's first forward (fresh process with compile timings, then
# fresh and from the disk caches), the training benchmark (fp32, bf16).
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1
t0=$(date +%s)
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_cuda.py tests/gpu/test_autotune_gpu.py -k "not every_gpu_candidate" -p no:cacheprovider -n 8 > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 $OUT/gpu-tests.log
t1=$(date +%s)
export CUPY_CACHE_DIR=$(mktemp -d) ZYX_CACHE=$(mktemp -d)
timeout 60 env ZYX_DIST_DEBUG=34 python3 -c "
import sys, time, numpy as np
sys.path.insert(0, 'benchmarks')
import model_bench as mb, zyx_dist as zd
zd.init(ray=False, devices=['cuda:0'], config={'autotune': {'cache_dir': '$ZYX_CACHE'}})
rng = np.random.default_rng(3); B, T, D, H = 8, 1024, 1024, 16
p = mb._tree(mb.block_params(rng, D), lambda a: zd.tensor(a).realize())
x = zd.tensor(rng.standard_normal((B, T, D)).astype(np.float32)).realize()
m = zd.tensor(mb.causal_mask(T)).realize()
t = time.perf_counter(); mb.block(mb.Ops('zd'), x, p, H, m).realize(); print('FIRST', time.perf_counter() - t, flush=True)
" > $OUT/first-debug.log 2>&1; echo "debug first rc=$? in $(( $(date +%s) - t1 )) s"; grep -E "FIRST|side by side|winner" $OUT/first-debug.log | tail -12
unset CUPY_CACHE_DIR
t2=$(date +%s)
timeout 100 python3 benchmarks/model_bench.py --sections first --out $OUT > $OUT/first.log 2>&1; echo "first rc=$? in $(( $(date +%s) - t2 )) s"; grep -vi warn $OUT/first.log | tail -3
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t3=$(date +%s)
timeout 230 python3 benchmarks/train_bench.py $T --json $OUT/train-h200-fp32.json > $OUT/train.log 2>&1; echo "train fp32 rc=$? in $(( $(date +%s) - t3 )) s"; tail -12 $OUT/train.log
t4=$(date +%s)
timeout 120 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-h200-bf16.json > $OUT/train-bf16.log 2>&1; echo "train bf16 rc=$? in $(( $(date +%s) - t4 )) s"; tail -10 $OUT/train-bf16.log
