#!/usr/bin/env bash
# A lead not yet measured (run: `device` tool, carry [".devbundle"], `bash benchmarks/h200/split_k_groups.sh`): the
# training step's weight gradients of 768 x 3072 with Adam fused into their GEMM's epilogue take ~120 us on an H100
# where the product alone takes 65 (one wave of 96 work-groups; nothing overlaps the epilogue). graph/ir.py splits
# a weight's gradient along K only while tiles x parts x 2 <= SPLIT_K_GROUPS (256), so these stay whole. This profiles
# the bf16 step at GPT-2 widths with that cap at 256 (as shipped) and 512 (split in two, Adam in the sum over the
# parts), alternating, each process with caches of its own.
source benchmarks/h200/call_steps.sh
for groups in 256 512 256 512; do
  mkdir -p $OUT/p
  in_package new timeout -k 5 -s ABRT 100 python3 -c '
import runpy, sys
import zyx_dist.graph.ir as ir
ir.SPLIT_K_GROUPS = int(sys.argv[1])
sys.argv = ["step_profile.py", *sys.argv[2:]]
runpy.run_path("benchmarks/h200/step_profile.py", run_name="__main__")
' $groups $OUT/p/trace.json 8 1024 768 12 bfloat16 2>/dev/null | tail -14 | sed "s/^/groups $groups: /" \
    | tee -a $OUT/step-profile-split-k.txt
  rm -rf $OUT/p
done
