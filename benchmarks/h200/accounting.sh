#!/usr/bin/env bash
# One short call (carry [".devbundle"]): where the wall of a realize goes beyond its kernels (wall_accounting.py:
# `x * 2 + 1` and the three memory-bound benchmark kernels, graphs built in the clock, beside torch; CASES to
# choose). File: $OUT/accounting.txt.
source benchmarks/h200/call_steps.sh
timeout -k 5 -s ABRT 200 python3 benchmarks/h200/wall_accounting.py ${CASES:-} 2>&1 | grep -v -i warn | tee $OUT/accounting.txt
