#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"], `bash benchmarks/h200/grad_default.sh`): the GPU
# tier with the attention backward's products recomputing by default on Hopper (engine/session._grad_heads), then the
# bf16 training step at GPT-2 widths (step_profile.py: device time per step, its largest kernels) with the stored T x T
# path (ZYX_DIST_ATTENTION_GRAD=0) and with the default, in one cache (the second run reuses the first's tuning);
# $OUT/step-profile.txt, the tuner's trials in $OUT/autotune-*.log. TIER=0 leaves the tier out; SHAPE="batch block"
# (default "8 1024"; "1 4096": few heads' worth of rows, whose products' sums split-K would split).
source benchmarks/h200/call_steps.sh
[ "${TIER:-1}" = 0 ] || gpu_tests gpu-tier.log ${TIER_SECONDS:-240} tests/gpu
export XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d)
for form in ${FORMS:-stored default}; do
  mkdir -p $OUT/p
  ZYX_DIST_DEBUG=32 ZYX_DIST_ATTENTION_GRAD=$([ $form = stored ] && echo 0) \
    timeout -k 5 -s ABRT ${STEP_SECONDS:-150} python3 benchmarks/h200/step_profile.py $OUT/p/trace.json ${SHAPE:-8 1024} 768 \
    12 bfloat16 2> $OUT/autotune-$form.log | grep -vi warn | tail -14 | sed "s/^/$form ${SHAPE:-8 1024}: /" | tee -a $OUT/step-profile.txt
  rm -rf $OUT/p
done
grep -h "of 2 candidates" $OUT/autotune-default.log | head -6
