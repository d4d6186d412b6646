#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `ZYX_DIST_COMMIT=<commit> bash benchmarks/h200/tests_and_interop.sh`): the whole GPU test tier (less the two whole-suite subprocess runs) on 8 xdist workers, then
# the interop figures.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export ZYX_DIST_GPU_SUITE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$(date +%s)
timeout 330 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -n 8 --dist loadgroup --durations=30 > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "FAILED|ERROR|passed|failed" $OUT/gpu-tests.log | tail -30
t1=$(date +%s)
timeout 90 python3 benchmarks/interop_bench.py --mib 1024 --repeats 5 --json $OUT/interop-h200.json > $OUT/interop.log 2>&1; echo "interop rc=$? in $(( $(date +%s) - t1 )) s"; tail -14 $OUT/interop.log
