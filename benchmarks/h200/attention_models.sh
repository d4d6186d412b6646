#!/usr/bin/env bash
# One call on the H200 (run: `device` tool, carry [".devbundle"], `bash benchmarks/h200/attention_models.sh`): the GPU
# tier, the block and GPT-2 forwards (fp32, bf16) beside torch eager and torch.compile with the first forwards
# (fresh process, then from the disk caches), the sub-op table (the attention core beside sdpa), and Nsight
# Compute on the row kernels (layer norm, RMS norm, softmax at (8,1024,1024) fp32).
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
t1=$(date +%s)
timeout -s ABRT 260 python3 benchmarks/model_bench.py --sections block,gpt2,first,subops --repeats 10 --out $OUT > $OUT/models.log 2>&1
echo "models rc=$? in $(( $(date +%s) - t1 )) s"; grep -vi "warn" $OUT/models.log | grep -E "fp32|bf16|first|attention|layer_norm|sdpa" | tail -30
timeout 60 ncu -k regex:kc_ -c 6 --section SpeedOfLight python3 benchmarks/h200/row_kernels_profile.py > $OUT/ncu-row-kernels.txt 2>&1
echo "ncu rows rc=$?"; grep -E "^  kc_|Duration|DRAM Throughput|reads and writes" $OUT/ncu-row-kernels.txt
