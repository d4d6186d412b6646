#!/usr/bin/env bash
# One call on the GPU machine for the pipelined TMA attention form and the softmax's cuts (codegen/attention_tma.py,
# attention_tc.py), against the package in .oldzd/ (run: carry [".devbundle", ".oldzd"], command
# `source benchmarks/h200/call_steps.sh && bash benchmarks/h200/attention_pipelined.sh`): the CUDA free-memory query
# (runtime/cuda.py) once; each form's kernel time beside torch's sdpa for both packages, the pipelined form's GPU
# tests and Nsight Compute on the TMA forms (attention_tma.sh); the attention core's `realize()` against sdpa
# (realize_profile.py, the tuner choosing) in both packages; then the GPU tier. Logs under $OUT.
source benchmarks/h200/call_steps.sh
python3 -c "
from zyx_dist.runtime.worker import Worker
w = Worker('cuda:0'); b = w.backend
print('cuda free', b.free_bytes, 'total', b.memory_bytes, 'limit', w.pool.limit_bytes, round(w.pool.limit_bytes / b.free_bytes, 3))
" 2>&1 | grep -v -i warn
TESTK=${TESTK:-tma_pipelined} BASE=.oldzd DTYPES=bfloat16,float16 BENCH_S=100 TEST_S=150 NCU_S=90 \
  bash benchmarks/h200/attention_tma.sh > /dev/null
cat $OUT/attention-tma.log
for pkg in new old; do
  in_package $pkg timeout -s ABRT 80 python3 benchmarks/h200/realize_profile.py attention 2>&1 | grep -v -i warn \
    | head -12 | sed "s/^/$pkg: /" | tee -a $OUT/attention-realize.txt
done
gpu_tests gpu-tests.log ${TIER_S:-200} tests/gpu
