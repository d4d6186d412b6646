#!/usr/bin/env bash
# One call on the H200 (`ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/train_debug.sh`): where the training benchmark's first step spends
# its time: plan/run timings and compile times (ZYX_DIST_DEBUG=2), the stacks of every thread every 30 s.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 2 --steps 5 --warmup 3 --depths= --no-torch"
t3=$(date +%s)
timeout 140 env ZYX_DIST_DEBUG=2 python3 -X faulthandler -c "
import faulthandler, sys, runpy
faulthandler.dump_traceback_later(30, repeat=True)
sys.argv = ['benchmarks/train_bench.py'] + '$T'.split()
runpy.run_path('benchmarks/train_bench.py', run_name='__main__')
" > $OUT/train-debug.log 2>&1; echo "train debug rc=$? in $(( $(date +%s) - t3 )) s"; grep -v -i warn $OUT/train-debug.log | grep -E "warm-up|steps/s|realize" | tail -12
