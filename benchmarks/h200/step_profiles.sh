#!/usr/bin/env bash
# Sourced by the GPU machine's call scripts: `step_profiles new [old]` profiles the bf16 training step at GPT-2 widths
# (benchmarks/h200/step_profile.py: device time per step, the largest kernels) for each package named, `old` being
# the one in .oldzd/ (skipped where there is none), appending to $OUT/step-profile.txt; the new package's autotune
# trials (ZYX_DIST_DEBUG=32) go to $OUT/autotune-new.log and its top kernels' source to $OUT/top-kernels.cu.
step_profiles() {
  local pkg pp
  for pkg in "$@"; do
    [ "$pkg" = old ] && [ ! -d .oldzd ] && continue
    pp=$PYTHONPATH; [ "$pkg" = old ] && pp=$PWD/.oldzd:$PYTHONPATH
    mkdir -p $OUT/p
    PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) \
      ZYX_DIST_DEBUG=$([ "$pkg" = new ] && echo 32 || echo 0) \
      timeout -k 5 -s ABRT 100 python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 8 1024 768 12 bfloat16 \
      2> $OUT/autotune-$pkg.log | grep -vi warn | tail -14 | sed "s/^/$pkg: /" | tee -a $OUT/step-profile.txt
    [ "$pkg" = new ] && mv $OUT/p/top-kernels.cu $OUT/ 2>/dev/null
    rm -rf $OUT/p
  done
}
