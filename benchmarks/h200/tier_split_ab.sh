#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"], .oldzd/ holding an older package with its setup.py): the GPU tier, then
# realize_split.py's medium cases (layer norm, the bf16 attention core: kernels the synchronize waits for), old and
# new package alternating twice. Files: $OUT/gpu-tier.log, $OUT/split-ab.txt.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-tier.log ${TIER_SECONDS:-260} tests/gpu
for pkg in old new old new; do
  echo "=== $pkg" >> $OUT/split-ab.txt
  in_package $pkg timeout -k 5 -s ABRT 60 python3 benchmarks/realize_split.py --device cuda:0 --rounds 300 \
    layer_norm attention >> $OUT/split-ab.txt 2>&1
done
grep "===\|wall\|^[a-z_]* (" $OUT/split-ab.txt
