#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"], .oldzd/ holding the package to compare against, with its setup.py; OLD_COMMIT
# names it in the records, ZYX_DIST_COMMIT this tree): old and
# new package alternating ROUNDS times (3), the dispatch benchmark's overhead per cached realize (part a, in process
# and through Ray) and its interleaved part (i: the cached tiny realize and the plain small step, round by round
# beside torch's same operations, with each round's ratio); then the GPU tier (TESTS_S seconds, 130; 0 leaves it
# out), last, since its load slows the host's Python for a minute after. Files in $OUT: overhead-interleaved.log,
# dispatch-{old,new}-<round>.json, gpu-tests.log.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
for r in $(seq 1 ${ROUNDS:-3}); do
  for pkg in old new; do
    echo "=== $pkg, round $r" >> $OUT/overhead-interleaved.log
    ZYX_DIST_COMMIT=$([ $pkg = old ] && echo "${OLD_COMMIT:-the package in .oldzd}" || echo "${ZYX_DIST_COMMIT:-}") \
      in_package $pkg timeout -k 5 -s ABRT 90 python3 benchmarks/dispatch_bench.py --device cuda:0 --only ai --repeats 200 \
      --out $OUT --name dispatch-$pkg-$r.json >> $OUT/overhead-interleaved.log 2>&1
    echo "$pkg round $r done at $(( $(date +%s) - t0 )) s"
  done
done
grep "===\|gauge\|overhead per realize\|Python per\|interleaved\|per round" $OUT/overhead-interleaved.log
[ "${TESTS_S:-130}" = 0 ] || gpu_tests gpu-tests.log ${TESTS_S:-130} tests/gpu
