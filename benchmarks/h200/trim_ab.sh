#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"], .oldzd/ holding the package to compare against, with its setup.py;
# call_steps.sh builds the C extensions of both): each package's driver alone on a no-op device
# (benchmarks/driver_alone.py, with the interpreter's speed), then, old and new alternating ROUNDS times, the dispatch
# benchmark's overhead per cached realize (part a) and its small step (part b: plain and zd.jit, in process and
# through Ray, beside torch eager); then, where CASES names them, where a realize's wall goes (wall_accounting.py,
# new package). PARTS="a b" by default, each run cut at PART_SECONDS (100); ALONE=0 skips the driver alone.
# Files in $OUT: trim-ab.log, accounting.txt.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
for pkg in old new; do
  [ "${ALONE:-1}" = 1 ] || break
  echo "=== $pkg, driver alone" >> $OUT/trim-ab.log
  in_package $pkg timeout -k 5 -s ABRT 60 python3 benchmarks/driver_alone.py >> $OUT/trim-ab.log 2>&1
done
for r in $(seq 1 ${ROUNDS:-2}); do
  for pkg in old new; do
    for part in ${PARTS:-a b}; do
      echo "=== $pkg, part $part, round $r" >> $OUT/trim-ab.log
      in_package $pkg timeout -k 5 -s ABRT ${PART_SECONDS:-100} python3 benchmarks/dispatch_bench.py --device cuda:0 --only $part \
        --steps 300 --repeats 400 --out /tmp/d-$pkg >> $OUT/trim-ab.log 2>&1
    done
    echo "$pkg round $r done at $(( $(date +%s) - t0 )) s"
  done
done
grep "===\|us (IQR\|function-call\|overhead per realize\|Python per\|per step  \|x torch" $OUT/trim-ab.log
if [ -n "${CASES:-}" ]; then
  timeout -k 5 -s ABRT 150 python3 benchmarks/h200/wall_accounting.py $CASES 2>&1 | grep -v -i warn > $OUT/accounting.txt
  echo "accounting rc=$? at $(( $(date +%s) - t0 )) s"; tail -25 $OUT/accounting.txt
fi
