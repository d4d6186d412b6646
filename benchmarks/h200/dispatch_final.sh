#!/usr/bin/env bash
# One call on the H200 (`device` tool, kind nvidia-h200, carry [".devbundle"]): the GPU tier, then issue 15's
# figures in one run (PARTS, default abcdef): the dispatch benchmark's overhead per cached realize (a), small-step
# loop beside torch eager (b), 200 kernels in one realize (c), the five benchmark kernels (d), reads (e) and Ray's
# own floor (f), in process and through Ray (one-worker replays and reads on the replay socket); then where a
# replayed realize's wall goes (realize_split.py). TESTS_S (200) bounds the tier, 0 leaves it out; DISPATCH_S (300)
# bounds the benchmark. Files in $OUT: gpu-tier.log, dispatch.{json,log}, split.txt.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
[ "${TESTS_S:-200}" = 0 ] || gpu_tests gpu-tier.log ${TESTS_S:-200} tests/gpu
timeout -s ABRT ${DISPATCH_S:-300} python3 benchmarks/dispatch_bench.py --device cuda:0 --only ${PARTS:-abcdef} --out $OUT --name dispatch.json > $OUT/dispatch.log 2>&1
echo "dispatch rc=$? at $(( $(date +%s) - t0 )) s"; grep -v "^zyx_dist: autotune\|WARN\|INFO" $OUT/dispatch.log | grep "us\|x torch\|GB/s\|gauge" | tail -40
timeout -s ABRT 90 python3 benchmarks/realize_split.py --device cuda:0 --rounds 200 tiny layer_norm attention > $OUT/split.txt 2>&1
echo "split rc=$? at $(( $(date +%s) - t0 )) s"; grep "wall\|^[a-z_]* (" $OUT/split.txt
