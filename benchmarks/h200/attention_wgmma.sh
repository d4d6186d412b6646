#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle", ".oldzd"], `bash benchmarks/h200/attention_wgmma.sh`):
# the GPU tier, the two tensor-core attention forms' kernel times beside torch's sdpa (attention_forms.py),
# Nsight Compute on both, the attention core's wall time against the package in .oldzd/ (if there), a cProfile
# of its realize, model_bench's attention sub-op, then the block and GPT-2 as long as the 600 s allow. One log
# ($OUT/attention-wgmma.log) and model_bench's JSON per section under $OUT (8 files come back at most).
# QUICK=1: no old/new comparison, no cProfile, no GPT-2 (GPT2=1 keeps it); TESTS=attention: only the attention tests; SECTIONS: the model_bench sections.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
log=$OUT/attention-wgmma.log
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 200 python3 -m pytest -q -m gpu tests/gpu/$([ "$TESTS" = attention ] && echo test_attention_gpu.py) -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $log; tail -2 $OUT/gpu-tier.log | tee -a $log
grep -E "^FAILED|^ERROR" $OUT/gpu-tier.log | head -20 | tee -a $log
timeout 120 python3 benchmarks/h200/attention_forms.py 2>&1 | grep -v -i warn | tee -a $log
timeout 150 ncu -k regex:kc_ -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats --section InstructionStats \
  python3 benchmarks/h200/attention_forms.py --ncu > $OUT/ncu-attention-forms.txt 2>&1
echo "ncu rc=$?" | tee -a $log; grep -E "^  kc_|Duration|Registers Per|Achieved Occupancy|SM Active|Elapsed Cycles|Executed Instructions  " $OUT/ncu-attention-forms.txt | tee -a $log
for dt in $([ -n "$QUICK" ] || echo bfloat16 float16 float32); do
  if [ -d .oldzd ]; then
    echo -n "old $dt: " | tee -a $log; PYTHONPATH=$PWD/.oldzd:$PYTHONPATH timeout 90 python3 benchmarks/h200/attention_profile.py $dt 30 2>&1 | tail -1 | tee -a $log
  fi
  echo -n "new $dt: " | tee -a $log; timeout 90 python3 benchmarks/h200/attention_profile.py $dt 30 2>&1 | tail -1 | tee -a $log
done
[ -n "$QUICK" ] || timeout 90 python3 benchmarks/h200/attention_profile.py bfloat16 30 --prof 2>&1 | head -45 | tee -a $log
for sec in ${SECTIONS:-subops block $([ -n "$QUICK" ] && [ -z "$GPT2" ] || echo gpt2)}; do
  left=$(( 580 - ($(date +%s) - t0) ))
  if [ $left -gt 50 ]; then
    timeout -s INT $left python3 benchmarks/model_bench.py --sections $sec --subops "attention core" --repeats 10 --out $OUT/$sec 2>&1 \
      | grep -v -i warn | grep -E "^(subops|block|gpt2) " | tee -a $log
    echo "model_bench $sec rc=${PIPESTATUS[0]}" | tee -a $log
  fi
done
