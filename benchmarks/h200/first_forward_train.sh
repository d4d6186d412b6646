#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/first_forward_train.sh`):
# NVRTC serial vs side by side, the block's first forward (fresh process, then from the disk caches) with a profile
# of a third fresh one, the training benchmark (fp32, bf16).
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1
t0=$(date +%s)
timeout 100 python3 benchmarks/compile_bench.py --json $OUT/compile-h200.json > $OUT/compile.log 2>&1; echo "compile rc=$? in $(( $(date +%s) - t0 )) s"; cat $OUT/compile.log | tail -6
t1=$(date +%s)
timeout 120 python3 benchmarks/model_bench.py --sections first --out $OUT > $OUT/first.log 2>&1; echo "first rc=$? in $(( $(date +%s) - t1 )) s"; grep -vi warn $OUT/first.log | tail -4
t2=$(date +%s)
export CUPY_CACHE_DIR=$(mktemp -d) ZYX_CACHE=$(mktemp -d)
timeout 90 python3 -c "
import cProfile, pstats, sys, time, numpy as np
sys.path.insert(0, 'benchmarks')
import model_bench as mb, zyx_dist as zd
zd.init(ray=False, devices=['cuda:0'], config={'autotune': {'cache_dir': '$ZYX_CACHE'}})
rng = np.random.default_rng(3); B, T, D, H = 8, 1024, 1024, 16
p = mb._tree(mb.block_params(rng, D), lambda a: zd.tensor(a).realize())
x = zd.tensor(rng.standard_normal((B, T, D)).astype(np.float32)).realize()
m = zd.tensor(mb.causal_mask(T)).realize()
pr = cProfile.Profile(); t = time.perf_counter(); pr.enable()
mb.block(mb.Ops('zd'), x, p, H, m).realize()
pr.disable(); print('FIRST', time.perf_counter() - t)
pstats.Stats(pr).sort_stats('cumulative').print_stats(40)
pstats.Stats(pr).sort_stats('tottime').print_stats(25)
" > $OUT/first-profile.log 2>&1; echo "profile rc=$? in $(( $(date +%s) - t2 )) s"; grep FIRST $OUT/first-profile.log
unset CUPY_CACHE_DIR
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
t3=$(date +%s)
timeout 170 python3 benchmarks/train_bench.py $T --json $OUT/train-h200-fp32.json > $OUT/train.log 2>&1; echo "train fp32 rc=$? in $(( $(date +%s) - t3 )) s"; tail -8 $OUT/train.log
t4=$(date +%s)
timeout 130 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-h200-bf16.json >> $OUT/train.log 2>&1; echo "train bf16 rc=$? in $(( $(date +%s) - t4 )) s"; tail -6 $OUT/train.log
