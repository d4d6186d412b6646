#!/usr/bin/env bash
# One call on a GPU machine (`device` tool, carry [".devbundle"]): where a replayed realize's wall goes, in process
# and through Ray (one-worker replays on the replay socket), for a tiny graph, layer norm and the bf16 attention
# core beside torch (realize_split.py), then the dispatch benchmark's 200 kernels in one realize (c) and the
# five benchmark kernels (d), in process and through Ray. Output in $OUT: split.txt, dispatch-cd.{json,log}.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 benchmarks/realize_split.py --device cuda:0 --rounds 200 tiny layer_norm attention > $OUT/split.txt 2>&1
echo "split in-process rc=$? at $(( $(date +%s) - t0 )) s"
timeout -s ABRT 120 python3 benchmarks/realize_split.py --device cuda:0 --rounds 200 --ray tiny attention 2>&1 | grep -v "WARN\|INFO" >> $OUT/split.txt
echo "split ray rc=$? at $(( $(date +%s) - t0 )) s"; cat $OUT/split.txt
timeout -s ABRT 380 python3 benchmarks/dispatch_bench.py --device cuda:0 --only cd --out $OUT --name dispatch-cd.json > $OUT/dispatch-cd.log 2>&1
echo "dispatch rc=$? at $(( $(date +%s) - t0 )) s"; grep -v "^zyx_dist: autotune\|WARN\|INFO" $OUT/dispatch-cd.log | tail -25
