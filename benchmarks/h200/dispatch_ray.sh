#!/usr/bin/env bash
# One call on the H200 (`device` tool, carry [".devbundle"]): the GPU tier, then the dispatch benchmark's
# overhead per cached realize (a), 200 kernels in one realize (c), Ray's own floor (f) and the small-step loop
# (b), in-process and through Ray with one CUDA worker. `PARTS=d` runs the five benchmark kernels instead
# (and skips the tier). Written for the compact Ray replays (44f086f).
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
PARTS=${PARTS:-acfb}
t0=$(date +%s)
if [ "$PARTS" != d ]; then
  ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 170 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
  echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu-tier.log
fi
timeout -s ABRT 380 python3 benchmarks/dispatch_bench.py --device cuda:0 --only $PARTS --out $OUT > $OUT/dispatch-$PARTS.log 2>&1
echo "dispatch rc=$? in $(( $(date +%s) - t0 )) s"; grep -v "^zyx_dist: autotune\|WARN\|INFO" $OUT/dispatch-$PARTS.log | tail -30
