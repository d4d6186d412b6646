#!/usr/bin/env bash
# One call on the GPU machine for half-type division by the reciprocal (run: `device` tool, carry [".devbundle"],
# `bash benchmarks/h200/half_division.sh`): the score-row softmax's forms on causal rows (-1e9 above the diagonal),
# the GPU tier, the training step's device time at GPT-2 widths (bf16), then the training benchmark beside torch.
source benchmarks/h200/call_steps.sh
timeout -k 5 -s ABRT 60 python3 benchmarks/h200/row_forms.py --dtypes bfloat16 --forms softmax --launches 20 --causal 2>&1 \
  | grep -v -i warn | sort -k5 -n | head -4 | sed "s/^/row forms --causal: /" | tee $OUT/row-forms-causal.txt
gpu_tests gpu-tier.log 150 tests/gpu
step_profiles new
train_gpt2w new train-gpt2w-bf16
