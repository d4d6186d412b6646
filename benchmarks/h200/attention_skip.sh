#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `bash benchmarks/h200/attention_skip.sh`; an older
# package unpacked in .oldzd/ is timed beside this one): the attention GPU tests, Nsight Compute on the causal
# attention core (8,16,1024,64) in bf16, fp32 and f16 (the prologue and the attention kernel), its wall time
# old/new alternating, and model_bench's sub-op table (torch's scaled_dot_product_attention beside it).
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_attention_gpu.py -p no:cacheprovider -n 8 > $OUT/attention-tests.log 2>&1
echo "attention tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/attention-tests.log
for dt in bfloat16 float32 float16; do
  timeout 90 ncu -k regex:kc_ -c 2 --section SpeedOfLight python3 benchmarks/h200/attention_profile.py $dt 2 > $OUT/ncu-attention-$dt.txt 2>&1
  echo "ncu $dt rc=$?"; grep -E "^  kc_|Duration" $OUT/ncu-attention-$dt.txt
done
if [ -d .oldzd ]; then
  for round in 1 2; do for dt in bfloat16 float32; do
    echo -n "old: "; PYTHONPATH=$PWD/.oldzd:$PYTHONPATH timeout 60 python3 benchmarks/h200/attention_profile.py $dt 30 2>&1 | tail -1
    echo -n "new: "; timeout 60 python3 benchmarks/h200/attention_profile.py $dt 30 2>&1 | tail -1
  done; done
fi
t1=$(date +%s)
timeout -s ABRT 200 python3 benchmarks/model_bench.py --sections subops --repeats 10 --out $OUT > $OUT/subops.log 2>&1
echo "subops rc=$? in $(( $(date +%s) - t1 )) s"; grep -vi "warn" $OUT/subops.log | tail -30
