#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle", ".oldzd"], `bash benchmarks/h200/driver_models.sh`):
# where the driver's time goes in a model forward (driver_exposed.py: realize, zd.jit, the time before the first
# launch, the plan-cache walk, the graph build; GPT-2 and the block in bf16, alternating with guessed plans off and
# with the package in .oldzd/ if there), then model_bench's block and GPT-2 (fp32 and bf16,
# beside torch eager and torch.compile), then the GPU tier with the time left (of BUDGET seconds, 585 unless set).
# One log: $OUT/driver-models.log.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
log=$OUT/driver-models.log
t0=$(date +%s)
exposed() { timeout -s ABRT 90 python3 benchmarks/h200/driver_exposed.py $1 bf16 2>&1 | grep -v -i -E "warn|autotune|^device setup" | head -${2:-1} | tee -a $log; }
for round in 1 2; do
  if [ -d .oldzd ]; then echo -n "old: " | tee -a $log; PYTHONPATH=$PWD/.oldzd:$PYTHONPATH exposed gpt2; fi
  echo -n "guesses off: " | tee -a $log; ZYX_DIST_PLAN_GUESSES=0 exposed gpt2
  echo -n "new: " | tee -a $log; exposed gpt2 $([ $round = 2 ] && echo 24)
done
for round in 1 2; do
  echo -n "guesses off: " | tee -a $log; ZYX_DIST_PLAN_GUESSES=0 exposed block
  echo -n "new: " | tee -a $log; exposed block
done
timeout -s INT 330 python3 benchmarks/model_bench.py --sections block,gpt2 --repeats 10 --out $OUT 2>&1 \
  | grep -v -i warn | grep -E "^(block|gpt2) " | tee -a $log
left=$(( ${BUDGET:-585} - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
  ZYX_DIST_GPU_SUITE=0 timeout -s ABRT $left python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
  echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $log; tail -2 $OUT/gpu-tier.log | tee -a $log
  grep -E "^FAILED|^ERROR" $OUT/gpu-tier.log | head -20 | tee -a $log
fi
