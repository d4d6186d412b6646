#!/usr/bin/env bash
# One call on the GPU machine for the wgmma GEMM's epilogue inputs staged through shared memory (run: `device`
# tool, carry [".devbundle", ".oldzd"] with .oldzd/ holding the package to compare with, `bash
# benchmarks/h200/staged_loads.sh`): the GEMM and attention-gradient GPU tests, the training step's device time at
# GPT-2 widths (bf16; the old package's too with OLD=1), then the training benchmark beside torch. Each step has its
# own deadline.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-gemm-tests.log 150 tests/gpu/test_gemm_gpu.py
step_profiles new ${OLD:+old}  # (OLD=1: the old package's profile too)
train_gpt2w new train-gpt2w-bf16
# the score rows' softmax alone on causal rows (-1e9 above the diagonal) against random ones: is its in-step time the data's?
for c in "" --causal; do
  timeout -k 5 -s ABRT 60 python3 benchmarks/h200/row_forms.py --dtypes bfloat16 --forms softmax --launches 20 $c 2>&1 \
    | grep -v -i warn | sort -k5 -n | head -4 | sed "s/^/row forms${c}: /" | tee -a $OUT/row-forms-causal.txt
done
