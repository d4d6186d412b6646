#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"], `bash benchmarks/h200/grad_wgmma_tier.sh`): what
# making ZYX_DIST_ATTENTION_GRAD=wgmma the default wants (engine/limits.grad_heads: the attention backward's products
# recompute their weights on Hopper where wgmma's form applies). The GPU tier with it set, then the bf16 training step
# at GPT-2 widths (step_profile.py: device time per step, its largest kernels) with the stored T x T path (unset) and
# with it, in one cache (the second run reuses the first's tuning); $OUT/step-profile.txt, the tuner's trials in
# $OUT/autotune-*.log. TIER=0 leaves the tier out; SHAPE="batch block" (default "8 1024"; "1 4096": long rows and
# few heads, whose products' sums split-K would otherwise split).
source benchmarks/h200/call_steps.sh
[ "${TIER:-1}" = 0 ] || ZYX_DIST_ATTENTION_GRAD=wgmma gpu_tests gpu-tier.log ${TIER_SECONDS:-240} tests/gpu
export XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d)
for form in ${FORMS:-stored wgmma}; do
  mkdir -p $OUT/p
  ZYX_DIST_DEBUG=32 ZYX_DIST_ATTENTION_GRAD=$([ $form = wgmma ] && echo wgmma) \
    timeout -k 5 -s ABRT ${STEP_SECONDS:-150} python3 benchmarks/h200/step_profile.py $OUT/p/trace.json ${SHAPE:-8 1024} 768 \
    12 bfloat16 2> $OUT/autotune-$form.log | grep -vi warn | tail -14 | sed "s/^/$form ${SHAPE:-8 1024}: /" | tee -a $OUT/step-profile.txt
  rm -rf $OUT/p
done
grep -h "of 2 candidates" $OUT/autotune-wgmma.log | head -6
