#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/first_forward.sh`):
# the block's first forward in a fresh process with compile timings (ZYX_DIST_DEBUG=34), then `model_bench.py
# --sections first` (a fresh process, then a second one from the disk caches). About 30 s.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1  # timeout -s ABRT: a stack on a hang
t1=$(date +%s)
export CUPY_CACHE_DIR=$(mktemp -d) ZYX_CACHE=$(mktemp -d)
timeout -s ABRT 60 env ZYX_DIST_DEBUG=34 python3 -c "
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
timeout -s ABRT 100 python3 benchmarks/model_bench.py --sections first --out $OUT > $OUT/first.log 2>&1; echo "first rc=$? in $(( $(date +%s) - t2 )) s"; grep -vi warn $OUT/first.log | tail -3
