#!/usr/bin/env bash
# One call on the GPU machine after benchmarks/h200/row_quads.sh (run: `device` tool, carry [".devbundle", ".oldzd"] with
# .oldzd/ holding the package to compare with, `bash benchmarks/h200/train_split.sh`): where a jitted training step's
# wall goes (host against the wait), then the steps/s of the training step at GPT-2 widths (bf16) beside torch for
# both packages, then the bf16 GPT-2 forward of both. Each step has its own deadline; the most important first.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 110 \
  python3 benchmarks/h200/jit_step_split.py 8 1024 768 12 bfloat16 2>&1 | grep -vi warn > $OUT/jit-step-split.txt
echo "split rc=$?"; head -40 $OUT/jit-step-split.txt
T="--embed 768 --layers 4 --heads 12 --block 1024 --batch 8 --rounds 5 --steps 5 --warmup 3 --depths="
for pkg in new old; do
  pp=$PYTHONPATH; [ $pkg = old ] && pp=$PWD/.oldzd:$PYTHONPATH
  [ $pkg = old ] && T="$T --no-torch"  # (torch beside the new package only)
  PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -k 5 -s ABRT 150 \
    python3 benchmarks/train_bench.py $T --dtype bfloat16 --json $OUT/train-gpt2w-bf16-$pkg.json > $OUT/train-$pkg.log 2>&1
  echo "train $pkg rc=$?"; grep -v -i "warn\|warm-up" $OUT/train-$pkg.log | tail -6
done
for pkg in new old; do
  pp=$PYTHONPATH; [ $pkg = old ] && pp=$PWD/.oldzd:$PYTHONPATH
  PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) timeout -s ABRT 60 \
    python3 benchmarks/h200/model_ab.py gpt2 bf16 10 2>&1 | grep -v -i warn | tail -1 | sed "s/^/$pkg: /"
done | tee $OUT/gpt2-ab.log
