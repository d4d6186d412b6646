#!/usr/bin/env bash
# One short call (carry [".devbundle", ".oldzd"]): the dispatch benchmark's overhead per cached realize (part a, in
# process and through Ray), the old package (.oldzd/) and the new one alternating, ROUNDS times. File: $OUT/overhead.log.
source benchmarks/h200/call_steps.sh
for r in $(seq 1 ${ROUNDS:-2}); do
  for pkg in old new; do
    echo "=== $pkg, round $r" >> $OUT/overhead.log
    in_package $pkg timeout -k 5 -s ABRT 70 python3 benchmarks/dispatch_bench.py --device cuda:0 --only a --repeats 400 \
      --out /tmp/ab-$pkg >> $OUT/overhead.log 2>&1
    echo "$pkg $r: $(grep 'overhead per realize\|Python per' $OUT/overhead.log | tail -3 | awk '{print $2, $3, $(NF-5), $(NF-4)}' | tr '\n' ';')"
  done
done
