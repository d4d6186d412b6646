#!/usr/bin/env bash
# One call on the H200 (`device` tool, carry [".devbundle"]): the GPU tier, where a big GEMM's realize wall goes
# (matmul_wall.py), the small step split (small_step_breakdown.py) and the dispatch benchmark's small-step loop
# (in-process and Ray, plain and zd.jit, beside torch eager). Run at 86380e5 without its last part, and at
# 37c5cfc (the direct in-process replay) without matmul_wall.py.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 170 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu-tier.log
timeout -s ABRT 200 python3 benchmarks/h200/matmul_wall.py > $OUT/matmul-wall.txt 2>&1
echo "matmul rc=$?"; grep -v "^zyx_dist: autotune kc" $OUT/matmul-wall.txt | head -40
timeout -s ABRT 150 python3 benchmarks/h200/small_step_breakdown.py > $OUT/small-step.txt 2>&1
echo "small rc=$?"; tail -12 $OUT/small-step.txt
timeout -s ABRT 200 python3 benchmarks/dispatch_bench.py --device cuda:0 --only b --out $OUT > $OUT/dispatch-b.log 2>&1
echo "dispatch rc=$?"; grep -v "^zyx_dist: autotune" $OUT/dispatch-b.log | tail -15
