#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"], .oldzd/ holding the package to compare against, with its setup.py): the
# GPU tier (TESTS_S seconds, 150; 0 leaves it out), then each package's loop that keeps its results beside the one
# that drops them (benchmarks/h200/kept_results.py: the GPT block in bf16 at B=1, T=256, 45 realizes; MODEL, DTYPE),
# then trim_ab.sh with what the environment says (ROUNDS, PARTS, PART_SECONDS, ALONE, CASES). Files in $OUT:
# gpu-tests.log, kept.txt, trim-ab.log, accounting.txt.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
[ "${TESTS_S:-150}" = 0 ] || gpu_tests gpu-tests.log ${TESTS_S:-150} tests/gpu
for pkg in old new; do
  in_package $pkg timeout -k 5 -s ABRT 100 python3 benchmarks/h200/kept_results.py ${MODEL:-block} ${DTYPE:-bf16} 45 10 1 256 \
    2>&1 | grep -v -i warn | tail -2 | sed "s/^/$pkg: /" | tee -a $OUT/kept.txt
  echo "kept $pkg done at $(( $(date +%s) - t0 )) s"
done
bash benchmarks/h200/trim_ab.sh
