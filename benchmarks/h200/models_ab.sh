#!/usr/bin/env bash
# One call on the GPU machine (run: `device` tool, carry [".devbundle", ".oldzd"], `bash benchmarks/h200/models_ab.sh`):
# the GEMM GPU tests, then the bf16 forwards of the Llama block, GPT-2 and the GPT block, this package against the one
# in .oldzd/ (alternating, two rounds, fresh caches each: benchmarks/h200/model_ab.py), then model_bench's llama
# section beside torch.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py -n 8 -p no:cacheprovider > $OUT/gpu-gemm.log 2>&1
echo "gpu gemm tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-gemm.log
for model in llama gpt2 block; do
  for round in 1 2; do
    for pkg in old new; do
      pp=$PYTHONPATH; [ $pkg = old ] && pp=$PWD/.oldzd:$PYTHONPATH
      PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -s ABRT 60 \
        python3 benchmarks/h200/model_ab.py $model bf16 10 2>&1 | grep -v -i warn | tail -1 | sed "s/^/$pkg: /"
    done
  done
done | tee $OUT/ab.log
t0=$(date +%s)
timeout -s ABRT 120 python3 benchmarks/model_bench.py --sections llama --repeats 10 --out $OUT > $OUT/llama.log 2>&1
echo "llama rc=$? in $(( $(date +%s) - t0 )) s"; grep -vi "warn" $OUT/llama.log | tail -8
