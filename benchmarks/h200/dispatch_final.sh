#!/usr/bin/env bash
# One call on the H200 (`device` tool, kind nvidia-h200, carry [".devbundle"]): the GPU tier, then issue 15's
# figures in one run (PARTS, default abcdef): the dispatch benchmark's overhead per cached realize (a), small-step
# loop beside torch eager (b), 200 kernels in one realize (c), the five benchmark kernels (d), reads (e) and Ray's
# own floor (f), in process and through Ray (one-worker replays and reads on the replay socket); then where a
# replayed realize's wall goes (realize_split.py). Files in $OUT: gpu-tier.log, dispatch.{json,log}, split.txt.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 200 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
timeout -s ABRT 300 python3 benchmarks/dispatch_bench.py --device cuda:0 --only ${PARTS:-abcdef} --out $OUT --name dispatch.json > $OUT/dispatch.log 2>&1
echo "dispatch rc=$? at $(( $(date +%s) - t0 )) s"; grep -v "^zyx_dist: autotune\|WARN\|INFO" $OUT/dispatch.log | grep "us\|x torch\|GB/s\|gauge" | tail -40
timeout -s ABRT 90 python3 benchmarks/realize_split.py --device cuda:0 --rounds 200 tiny layer_norm attention > $OUT/split.txt 2>&1
echo "split rc=$? at $(( $(date +%s) - t0 )) s"; grep "wall\|^[a-z_]* (" $OUT/split.txt
