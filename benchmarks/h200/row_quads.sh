#!/usr/bin/env bash
# One call on the GPU machine for the row kernels in quads (run: `device` tool, carry [".devbundle", ".oldzd"] with
# .oldzd/ holding the package to compare with, `bash benchmarks/h200/row_quads.sh`): the GPU tier, the training step's
# device time at GPT-2 widths (bf16) for both packages, then every row-kernel candidate's kernel time (softmax, its
# gradient, layer norm; bfloat16 and float32). Each step has its own deadline; the most important first.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-tier.log 160 tests/gpu
step_profiles new old
timeout -k 5 -s ABRT 110 python3 benchmarks/h200/row_forms.py --launches 20 2>&1 | grep -v -i warn > $OUT/row-forms.txt
echo "row forms rc=$?"  # the three fastest of each form
for form in "bfloat16 softmax  " "bfloat16 softmax grad" "bfloat16 layer norm" "float32 softmax  " "float32 softmax grad" \
    "float32 layer norm"; do
  grep "^$form" $OUT/row-forms.txt | awk '{for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1), $0}' | sort -n \
    | head -3 | cut -d' ' -f2-
done
