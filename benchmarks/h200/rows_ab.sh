#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"], .oldzd/ with the package before split-K was kept to contractions): the
# kernels of a layer norm's realize (launch_latency.py), then the GPT block (bf16, fp32) and the
# Llama-style block (bf16) forwards in the old and the new package, alternating (model_ab.py); last where a
# replayed layer norm's wall goes now (realize_split.py), and the GPU tier. Files in $OUT: rows.txt, gpu-tier.log.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
timeout -k 5 -s ABRT 60 python3 benchmarks/h200/launch_latency.py layer_norm 2>&1 | grep -v -i warn | tee -a $OUT/rows.txt
for m in "block bf16" "block fp32" "llama bf16"; do
  for pkg in old new; do
    in_package $pkg timeout -k 5 -s ABRT 70 python3 benchmarks/h200/model_ab.py $m 10 2>&1 | grep -v -i warn \
      | tail -1 | sed "s/^/$pkg: /" | tee -a $OUT/rows.txt
  done
done
echo "models done at $(( $(date +%s) - t0 )) s"
timeout -k 5 -s ABRT 40 python3 benchmarks/realize_split.py --device cuda:0 --rounds 300 layer_norm >> $OUT/rows.txt 2>&1
grep "wall\|^[a-z_]* (" $OUT/rows.txt | tail -2
[ "${TIER:-1}" = 1 ] && gpu_tests gpu-tier.log 200 tests/gpu
echo "total $(( $(date +%s) - t0 )) s"
