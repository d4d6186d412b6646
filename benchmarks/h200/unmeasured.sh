#!/usr/bin/env bash
# One call on the GPU machine for what 2026-12-05's last commits changed without a GPU to measure it (run: `device`
# tool, carry [".devbundle", ".oldzd"] with .oldzd/ holding the package of 43a31c1, `bash benchmarks/h200/unmeasured.sh`):
# the GPU tier, then the training step at GPT-2 widths (train_ab.sh) and the bf16 forwards (models_ab.sh) against 43a31c1 (warp per row for score
# rows, softmax gradients from their result, dq/dk as two GEMMs, gathers as indexed loads, column sums in two stages).
# Each step has its own deadline; the most important come first.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT 200 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup \
    -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
OLD=1 LIMIT=110 bash benchmarks/h200/train_ab.sh 2>&1 | grep -v "^device setup\|^NVIDIA"
bash benchmarks/h200/models_ab.sh 2>&1 | grep -v "^device setup\|^NVIDIA"
