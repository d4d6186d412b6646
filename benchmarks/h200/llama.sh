#!/usr/bin/env bash
# One call on the GPU machine (run: `device` tool, carry [".devbundle", ".oldzd"], `ZYX_DIST_COMMIT=<commit> bash
# benchmarks/h200/llama.sh`): the GEMM GPU tests (new: K over several reduced axes), the Llama/GEMM runtime tests on
# cuda:0, model_bench's Llama-style block (fp32, bf16) beside torch eager and torch.compile, and the bf16 training
# step of train_bench, with the package in .oldzd/ (the commit before) timed beside this one where it is there.
source .devbundle/setup.sh
: "${ZYX_DIST_COMMIT:?set ZYX_DIST_COMMIT to the commit sent}"; export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
timeout -s ABRT 200 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py -n 8 -p no:cacheprovider > $OUT/gpu-gemm.log 2>&1
echo "gpu gemm tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 $OUT/gpu-gemm.log
t0=$(date +%s)
ZYX_DIST_DEVICES=cuda:0 timeout -s ABRT 90 python3 -m pytest -q tests/runtime/test_gemm.py -k "llama or several_axes or transformer" \
    -p no:cacheprovider > $OUT/runtime-gemm-cuda.log 2>&1
echo "runtime gemm tests on cuda:0 rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/runtime-gemm-cuda.log
t0=$(date +%s)
timeout -s ABRT 200 python3 benchmarks/model_bench.py --sections llama --repeats 10 --out $OUT > $OUT/llama.log 2>&1
echo "llama rc=$? in $(( $(date +%s) - t0 )) s"; grep -vi "warn" $OUT/llama.log | tail -12
T="--embed 256 --layers 4 --heads 4 --block 128 --batch 16 --rounds 5 --steps 10 --warmup 3 --depths="
for pkg in new old; do
  [ $pkg = old ] && [ ! -d .oldzd ] && continue
  pp=$PYTHONPATH; [ $pkg = old ] && pp=$PWD/.oldzd:$PYTHONPATH
  t0=$(date +%s)
  PYTHONPATH=$pp timeout -s ABRT 80 python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-bf16-$pkg.json \
      > $OUT/train-bf16-$pkg.log 2>&1
  echo "train bf16 ($pkg) rc=$? in $(( $(date +%s) - t0 )) s"; grep -v -i "warn\|warm-up" $OUT/train-bf16-$pkg.log | tail -6
done
