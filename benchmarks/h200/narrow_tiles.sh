#!/usr/bin/env bash
# One call on the GPU machine for the wgmma GEMM's 128 x 64 and 128 x 192 tiles and a short K's epilogue inputs
# copied before the main loop (run: `device` tool, carry [".devbundle", ".oldzd"] with .oldzd/ holding the package
# to compare with, `bash benchmarks/h200/narrow_tiles.sh`): the GEMM GPU tests, the training step's device time at
# GPT-2 widths (bf16) in both packages, the forms of the step's GEMMs beside cuBLAS (attention scores q @ k.mT with
# K = 64, p @ v with N = 64, weight gradients x.T @ g with K = 8192, the layers' products with K = 768 and 3072),
# then the training benchmark beside torch, and the old package's without torch. Each step has its own deadline.
source benchmarks/h200/call_steps.sh
gpu_tests gpu-gemm-tests.log 150 tests/gpu/test_gemm_gpu.py
step_profiles new old
forms() { timeout -k 5 -s ABRT 100 python3 benchmarks/h200/gemm_forms.py --dtypes bfloat16 --launches 10 "$@" 2>&1 \
  | grep -v -i warn | tee -a $OUT/gemm-forms.txt; }
forms --sizes 96x1024x1024x64 --layouts nt --forms "tma t128 s3 staged,tma t64 s3 staged"
forms --sizes 96x1024x64x1024 --forms "tma t128 s3 staged,tma t64 s3 staged"
forms --sizes 768x3072x8192 --layouts tn --forms "tma t128 s3 staged,tma t256 s4 staged,tma t192"
forms --sizes 8192x3072x768,8192x768x3072 --forms "tma t128 s3 staged,tma t256 s4 staged,tma t64,tma t192"
train_gpt2w new train-gpt2w-bf16
train_gpt2w old train-gpt2w-bf16-old --no-torch
