#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"], .oldzd/ holding the package before graph/_node.c with its setup.py;
# call_steps.sh builds the C extensions of both): old and new alternating ROUNDS times: the small step of the dispatch
# benchmark (part b: plain and zd.jit, in process and through Ray, beside torch eager), and the GPT-2 small bf16
# forward's realize and graph build (model_ab.py); then, new package only, where a realize's wall goes with its graph
# built inside the clock (wall_accounting.py). Files in $OUT: nodes-ab.log, accounting.txt.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
for r in $(seq 1 ${ROUNDS:-2}); do
  for pkg in old new; do
    echo "=== $pkg, round $r" >> $OUT/nodes-ab.log
    in_package $pkg python3 -P -c "from zyx_dist.graph import ir; print('C nodes:', hasattr(ir, 'PyNode') and ir.c_nodes_enabled())" >> $OUT/nodes-ab.log 2>&1
    in_package $pkg timeout -k 5 -s ABRT 100 python3 benchmarks/dispatch_bench.py --device cuda:0 --only b --steps 300 \
      --out /tmp/b-$pkg >> $OUT/nodes-ab.log 2>&1
    in_package $pkg timeout -k 5 -s ABRT 60 python3 benchmarks/h200/model_ab.py gpt2 bf16 10 2>&1 | grep -v -i warn \
      | tail -1 | sed "s/^/$pkg gpt2: /" >> $OUT/nodes-ab.log
    echo "$pkg round $r done at $(( $(date +%s) - t0 )) s"
  done
done
grep "===\|C nodes\|per step  \|x torch\|gpt2:" $OUT/nodes-ab.log
timeout -k 5 -s ABRT 150 python3 benchmarks/h200/wall_accounting.py ${CASES:-tiny step ew_chain softmax sum layer_norm} 2>&1 \
  | grep -v -i warn > $OUT/accounting.txt
echo "accounting rc=$? at $(( $(date +%s) - t0 )) s"; cat $OUT/accounting.txt | tail -25
