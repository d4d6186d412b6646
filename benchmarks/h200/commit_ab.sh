#!/usr/bin/env bash
# One short call (carry [".devbundle", ".oldzd"], .oldzd/ holding an older package with its setup.py; call_steps.sh
# builds the C walks in both): old and new alternating ROUNDS times: the dispatch benchmark's overhead per cached realize
# and small step (parts a and b), and realize_split.py's tiny case. File: $OUT/commit-ab.log.
source benchmarks/h200/call_steps.sh
for r in $(seq 1 ${ROUNDS:-2}); do
  for pkg in old new; do
    echo "=== $pkg, round $r" >> $OUT/commit-ab.log
    in_package $pkg python3 -c "from zyx_dist.fuse import plan_cache as p; assert p.c_walks_enabled()" || echo "$pkg: no C walks"
    in_package $pkg timeout -k 5 -s ABRT 90 python3 benchmarks/dispatch_bench.py --device cuda:0 --only ab --repeats 300 \
      --steps 300 --out /tmp/ab-$pkg >> $OUT/commit-ab.log 2>&1
    in_package $pkg timeout -k 5 -s ABRT 40 python3 benchmarks/realize_split.py --device cuda:0 --rounds 300 tiny \
      2>&1 | grep "wall" | sed "s/^/$pkg tiny split: /" >> $OUT/commit-ab.log
  done
done
grep "===\|overhead per realize\|Python per\|per step  \|x torch eager\|tiny split" $OUT/commit-ab.log
