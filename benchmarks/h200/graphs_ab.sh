#!/usr/bin/env bash
# One call (carry [".devbundle"]): short realizes with CUDA graph replay on and off (ZYX_DIST_CUDA_GRAPHS): the
# device-side wait of each (launch_latency.py: launch call to kernel start, kernel, kernel end to the synchronize's
# return, beside torch), then where their wall goes (realize_split.py), alternating. Files in $OUT: graphs.txt.
source benchmarks/h200/call_steps.sh
for g in 1 0; do
  ZYX_DIST_CUDA_GRAPHS=$g timeout -k 5 -s ABRT 90 python3 benchmarks/h200/launch_latency.py 2>&1 | grep -v -i warn \
    | sed "s/^/graphs $g: /" | tee -a $OUT/graphs.txt
done
for g in 1 0 1 0; do
  echo "=== CUDA graphs $g" | tee -a $OUT/graphs.txt
  ZYX_DIST_CUDA_GRAPHS=$g timeout -k 5 -s ABRT 80 python3 benchmarks/realize_split.py --device cuda:0 --rounds 400 \
    tiny layer_norm attention >> $OUT/graphs.txt 2>&1
  grep "wall\|^[a-z_]* (" $OUT/graphs.txt | tail -6
done
