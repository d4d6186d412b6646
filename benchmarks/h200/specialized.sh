#!/usr/bin/env bash
# One call (carry [".devbundle", ".oldzd"]): the warp-specialized wgmma GEMM's GPU tests (TESTS_S seconds, 150), then
# its kernel time beside the TMA forms the tuner picks today and cuBLAS (gemm_forms.py, bf16, SIZES), then, where
# ROUNDS > 0, overhead_interleaved.sh's rounds (old and new package alternating, no tier). Files in $OUT:
# gpu-tests-specialized.log, gemm-forms.txt, overhead-interleaved.log, dispatch-*.json.
source benchmarks/h200/call_steps.sh
t0=$(date +%s)
gpu_tests gpu-tests-specialized.log ${TESTS_S:-150} tests/gpu/test_gemm_gpu.py -k specialized
timeout -k 5 -s ABRT ${FORMS_S:-200} python3 benchmarks/h200/gemm_forms.py --dtypes bfloat16 --launches 20 \
  --sizes ${SIZES:-8192x8192x8192,8192x3072x768,8192x768x3072,8192x50304x768} \
  --forms "tma t256 s4 staged,tma t128 s3 staged,ws" 2>&1 | grep -v -i warn > $OUT/gemm-forms.txt
echo "forms rc=$? at $(( $(date +%s) - t0 )) s"; cat $OUT/gemm-forms.txt | cut -c1-110
[ "${ROUNDS:-0}" = 0 ] || TESTS_S=0 bash benchmarks/h200/overhead_interleaved.sh
