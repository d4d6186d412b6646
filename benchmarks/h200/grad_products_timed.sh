#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"], `bash benchmarks/h200/grad_products_timed.sh`):
# the bf16 training step at GPT-2 widths (step_profile.py: device time per step, its largest kernels) with the
# attention backward's products as stored T x T GEMMs (the default) and then recomputing their weights
# (codegen/attention_grad.py, ZYX_DIST_ATTENTION_GRAD=1), each with fresh caches; $OUT/step-profile.txt and
# $OUT/kernels-{stored,recomputed}.txt.
source benchmarks/h200/call_steps.sh
for form in stored recomputed; do
  mkdir -p $OUT/p
  ZYX_DIST_ATTENTION_GRAD=$([ $form = recomputed ] && echo 1 || echo 0) in_package new \
    timeout -k 5 -s ABRT 200 python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 8 1024 768 12 bfloat16 \
    2>/dev/null | grep -vi warn | tail -14 | sed "s/^/$form: /" | tee -a $OUT/step-profile.txt
  mv $OUT/p/kernels.txt $OUT/kernels-$form.txt 2>/dev/null
  rm -rf $OUT/p
done
