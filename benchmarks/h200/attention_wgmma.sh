#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle", ".oldzd"], `bash benchmarks/h200/attention_wgmma.sh`):
# the attention GPU tests (both tensor-core forms among them), the two forms' kernel times beside torch's sdpa
# (attention_forms.py), Nsight Compute on both, and the attention core's wall time against the package in
# .oldzd/ (if there), alternating. Everything goes to one log under $OUT.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
log=$OUT/attention-wgmma.log
t0=$(date +%s)
timeout -s ABRT 240 python3 -m pytest -q -m gpu tests/gpu/test_attention_gpu.py -p no:cacheprovider -n 8 > $OUT/attention-tests.log 2>&1
echo "attention tests rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $log; tail -3 $OUT/attention-tests.log | tee -a $log
grep -E "FAILED|Error" $OUT/attention-tests.log | head -20 | tee -a $log
timeout 120 python3 benchmarks/h200/attention_forms.py 2>&1 | grep -v -i warn | tee -a $log
timeout 150 ncu -k regex:kc_ -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats \
  python3 benchmarks/h200/attention_forms.py --ncu > $OUT/ncu-attention-forms.txt 2>&1
echo "ncu rc=$?" | tee -a $log; grep -E "^  kc_|Duration|Registers Per|Achieved Occupancy|SM Active|Elapsed Cycles" $OUT/ncu-attention-forms.txt | tee -a $log
if [ -d .oldzd ]; then
  for round in 1 2; do for dt in bfloat16 float16 float32; do
    echo -n "old $dt: " | tee -a $log; PYTHONPATH=$PWD/.oldzd:$PYTHONPATH timeout 90 python3 benchmarks/h200/attention_profile.py $dt 30 2>&1 | tail -1 | tee -a $log
    echo -n "new $dt: " | tee -a $log; timeout 90 python3 benchmarks/h200/attention_profile.py $dt 30 2>&1 | tail -1 | tee -a $log
  done; done
fi
# the models, as long as the call's 600 s allow (each section its own JSON)
for sec in block gpt2; do
  left=$(( 570 - ($(date +%s) - t0) ))
  if [ $left -gt 60 ]; then
    timeout -s INT $left python3 benchmarks/model_bench.py --sections $sec --repeats 10 --out $OUT/$sec > $OUT/model-$sec.log 2>&1
    echo "model_bench $sec rc=$?" | tee -a $log; grep -E "GPT|block|forward" $OUT/model-$sec.log | grep -v -i warn | tail -12 | tee -a $log
  fi
done
