#!/usr/bin/env bash
# One call on the H200 for the TMA form of the fused attention kernel (codegen/attention_tma.py). Run from a copy
# of the tree in a folder of the checkout (run: carry [".devbundle", "<folder>"], command
# `source .devbundle/setup.sh && cd <folder> && export PYTHONPATH=$PWD:$PYTHONPATH && bash benchmarks/h200/attention_tma.sh`):
# each form's prologue + kernel time beside torch's sdpa (attention_forms.py, DTYPES: bfloat16 unless set), the
# attention GPU tests (TESTK: a pytest -k filter, by default every tensor-core form against NumPy and the TMA
# form's launches with changing masks; TESTK=all: the module), spread over 8 processes, and Nsight Compute on the
# bfloat16 forms (the TMA forms, then the wgmma form's prologue and kernel). A benchmark that does not finish
# (a kernel that never returns) ends the call. Logs under $OUT: attention-tma.log (the summary),
# gpu-attention.log, ncu-attention-tma.txt (with the warps' stall reasons). NCU=0 leaves the profile out; BASE=<folder>
# times the forms of the package copy there too (an A/B in one call).
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
log=$OUT/attention-tma.log
t0=$(date +%s)
python3 -c 'import zyx_dist; print("zyx_dist from", zyx_dist.__file__)' | tee -a $log
set -o pipefail
timeout -s ABRT ${BENCH_S:-60} python3 benchmarks/h200/attention_forms.py --dtypes ${DTYPES:-bfloat16} 2>&1 \
  | grep -v -i warn | tee -a $log
rc=$?
echo "forms rc=$rc at $(( $(date +%s) - t0 )) s" | tee -a $log
[ $rc -eq 134 ] && exit 1
if [ -n "$BASE" ] && [ -d "$BASE" ]; then  # the same table from another copy of the package, in the same call
  PYTHONPATH=$BASE:$PYTHONPATH timeout -s ABRT ${BENCH_S:-60} python3 benchmarks/h200/attention_forms.py --dtypes ${DTYPES:-bfloat16} \
    2>&1 | grep -v -i warn | sed "s|^|base $BASE: |" | tee -a $log
fi
k=${TESTK:-"tensor_core_form or earlier_launch"}
args=(-q -m gpu tests/gpu/test_attention_gpu.py -n 8 --dist load -p no:cacheprovider)
[ "$k" = all ] || args+=(-k "$k")
ZYX_DIST_GPU_SUITE=0 timeout -s ABRT ${TEST_S:-90} python3 -m pytest "${args[@]}" > $OUT/gpu-attention.log 2>&1
echo "attention tests rc=$? at $(( $(date +%s) - t0 )) s" | tee -a $log; tail -2 $OUT/gpu-attention.log | tee -a $log
grep -E "^FAILED|^ERROR|Timeout" $OUT/gpu-attention.log | head -30 | tee -a $log
if [ "${NCU:-1}" != 0 ]; then
  timeout -s ABRT ${NCU_S:-70} ncu --clock-control none -k regex:kc_ -c 4 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section InstructionStats --section WarpStateStats --section SchedulerStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    python3 benchmarks/h200/attention_forms.py --ncu --dtypes bfloat16 > $OUT/ncu-attention-tma.txt 2>&1
  echo "ncu rc=$? at $(( $(date +%s) - t0 )) s" | tee -a $log
  grep -E "^  kc_|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Issue Slots Busy|No Eligible|Warp Cycles Per Issued" \
    $OUT/ncu-attention-tma.txt | tee -a $log
fi
