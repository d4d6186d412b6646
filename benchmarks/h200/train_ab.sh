#!/usr/bin/env bash
# One call on the GPU machine (run: `device` tool, carry [".devbundle", ".oldzd"], `bash benchmarks/h200/train_ab.sh`):
# the GPU tests of in-group reductions, a profile of one training step (step_profile.py), then the GPT training
# step of train_bench.py at GPT-2-small widths (embed 768, 12 heads, 4 layers, block 1024, batch 8, bfloat16), this
# package (and with OLD=1 then the one in .oldzd/), each with fresh caches, beside torch eager and torch.compile.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
timeout -k 5 -s ABRT 120 python3 -m pytest -q -m gpu tests/gpu/test_group_reduce_gpu.py -n 8 \
    -p no:cacheprovider > $OUT/gpu-reduce.log 2>&1
echo "gpu reduce/autotune tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-reduce.log
mkdir -p $OUT/p
timeout -k 5 -s ABRT 120 python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 8 1024 768 12 bfloat16 2>&1 | grep -vi warn | tail -15
rm -f $OUT/p/trace.json
T="--embed 768 --layers 4 --heads 12 --block 1024 --batch 8 --rounds 5 --steps 5 --warmup 3 --depths="
for pkg in new ${OLD:+old}; do  # OLD=1: also the package in .oldzd/
  [ $pkg = old ] && [ ! -d .oldzd ] && continue
  pp=$PYTHONPATH; [ $pkg = old ] && pp=$PWD/.oldzd:$PYTHONPATH
  t0=$(date +%s)
  PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT ${LIMIT:-150} \
    python3 benchmarks/train_bench.py $T --dtype bfloat16 $([ $pkg = old ] && echo --no-torch) \
    --json $OUT/train-gpt2w-bf16-$pkg.json > $OUT/train-gpt2w-bf16-$pkg.log 2>&1
  echo "train ($pkg) rc=$? in $(( $(date +%s) - t0 )) s"; grep -v -i "warn\|warm-up" $OUT/train-gpt2w-bf16-$pkg.log | tail -7
done
