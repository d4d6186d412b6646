#!/usr/bin/env bash
# One call on the H200 for the TMA form of the fused attention kernel (codegen/attention_tma.py). Run from a copy
# of the tree in a folder of the checkout (run: carry [".devbundle", "<folder>"], command
# `source .devbundle/setup.sh && cd <folder> && export PYTHONPATH=$PWD:$PYTHONPATH && bash benchmarks/h200/attention_tma.sh`):
# the attention GPU tests (every tensor-core form against NumPy, spread over 8 processes), each form's prologue +
# kernel time beside torch's sdpa (attention_forms.py, both half types), and Nsight Compute on the bfloat16 forms
# (the TMA forms, then the wgmma form's prologue and kernel). Logs under $OUT: attention-tma.log (the summary),
# gpu-attention.log, ncu-attention-tma.txt. TESTS=0 leaves the tests out, NCU=0 the profile.
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
log=$OUT/attention-tma.log
t0=$(date +%s)
python3 -c 'import zyx_dist; print("zyx_dist from", zyx_dist.__file__)' | tee -a $log
if [ "${TESTS:-1}" != 0 ]; then
  ZYX_DIST_GPU_SUITE=0 timeout -s ABRT ${TEST_S:-150} python3 -m pytest -q -m gpu tests/gpu/test_attention_gpu.py -n 8 \
    --dist load -p no:cacheprovider > $OUT/gpu-attention.log 2>&1
  echo "attention tests rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $log; tail -2 $OUT/gpu-attention.log | tee -a $log
  grep -E "^FAILED|^ERROR|Timeout|Thread 0x" $OUT/gpu-attention.log | head -30 | tee -a $log
fi
timeout -s ABRT ${BENCH_S:-100} python3 benchmarks/h200/attention_forms.py 2>&1 | grep -v -i warn | tee -a $log
echo "forms done at $(( $(date +%s) - t0 )) s" | tee -a $log
if [ "${NCU:-1}" != 0 ]; then
  timeout -s ABRT ${NCU_S:-100} ncu --clock-control none -k regex:kc_ -c 4 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section InstructionStats --section WarpStateStats --section SchedulerStats \
    python3 benchmarks/h200/attention_forms.py --ncu --dtypes bfloat16 > $OUT/ncu-attention-tma.txt 2>&1
  echo "ncu rc=$? at $(( $(date +%s) - t0 )) s" | tee -a $log
  grep -E "^  kc_|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Issue Slots Busy|No Eligible|Warp Cycles Per Issued" \
    $OUT/ncu-attention-tma.txt | tee -a $log
fi
