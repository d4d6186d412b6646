#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"], .oldzd/ with the package before the C walks, which call_steps.sh builds in
# both packages): the GPU tier, then old and new package alternating: the dispatch benchmark's
# overhead per cached realize and small step (parts a, b), the GPT-2 small bf16 forward's realize and graph build
# (model_ab.py); last where a replayed realize's wall goes in the new package (realize_split.py).
# Files in $OUT: gpu-tier.log, ab.log, split.txt.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
python3 -c "from zyx_dist.fuse import plan_cache as p; print('C walks:', p.c_walks_enabled())"
[ "${TIER:-1}" = 1 ] && gpu_tests gpu-tier.log 200 tests/gpu
for pkg in old new; do
  echo "=== $pkg: dispatch" >> $OUT/ab.log
  in_package $pkg timeout -k 5 -s ABRT 150 python3 benchmarks/dispatch_bench.py --device cuda:0 --only ${PARTS:-ab} \
    --repeats 300 --out /tmp/ab-$pkg >> $OUT/ab.log 2>&1; echo "dispatch $pkg rc=$? at $(( $(date +%s) - t0 )) s"
done
for pkg in old new old new; do
  in_package $pkg timeout -k 5 -s ABRT 60 python3 benchmarks/h200/model_ab.py gpt2 bf16 10 2>&1 | grep -v -i warn \
    | tail -1 | sed "s/^/$pkg: /" | tee -a $OUT/ab.log
done
grep -v "autotune\|WARN\|INFO" $OUT/ab.log | grep "===\|us\|x torch" | head -60
timeout -k 5 -s ABRT 90 python3 benchmarks/realize_split.py --device cuda:0 --rounds 300 tiny layer_norm attention > $OUT/split.txt 2>&1
echo "split rc=$?"; grep "wall\|^[a-z_]* (" $OUT/split.txt; echo "total $(( $(date +%s) - t0 )) s"
