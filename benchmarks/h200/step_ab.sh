#!/usr/bin/env bash
# One short call (carry [".devbundle", ".oldzd"]): the dispatch benchmark's small step (part b: plain and zd.jit, in
# process and through Ray, beside torch eager), the old package (.oldzd/) and the new one alternating. File:
# $OUT/step.log.
source benchmarks/h200/call_steps.sh
python3 setup.py -q build_ext --inplace > /tmp/build.log 2>&1
for pkg in old new old new; do
  echo "=== $pkg" >> $OUT/step.log
  in_package $pkg timeout -k 5 -s ABRT 60 python3 benchmarks/dispatch_bench.py --device cuda:0 --only b --steps 300 \
    --out /tmp/ab-$pkg >> $OUT/step.log 2>&1
done
grep "===\|per step  \|torch eager (cuda)" $OUT/step.log | grep -v "overhead\|Python"
