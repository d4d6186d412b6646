#!/usr/bin/env bash
# Sourced first by the GPU machine's call scripts (`source benchmarks/h200/call_steps.sh`): sets up the machine
# (.devbundle/setup.sh, unbuffered Python, the card's name printed), builds the C extensions (the plan cache's walks,
# the graph's node) in place for this checkout and for the older package in .oldzd/ where it came with its setup.py
# (PYTHONPATH imports both unbuilt, and `carry` replaces .oldzd/ on every call), then gives each script its common
# steps, each under its own deadline:
#   gpu_tests LOG SECONDS PYTEST_ARGS...   the GPU-marked tests named, into $OUT/LOG; prints the count and failures
#   step_profiles new [old]                the bf16 training step at GPT-2 widths (benchmarks/h200/step_profile.py:
#                                          device time per step, the largest kernels) for each package named, `old`
#                                          being the one in .oldzd/ (skipped where there is none), appended to
#                                          $OUT/step-profile.txt; the new package's autotune trials
#                                          (ZYX_DIST_DEBUG=32) go to $OUT/autotune-new.log, its top kernels'
#                                          source to $OUT/top-kernels.cu, every kernel's time to $OUT/kernels.txt
#   train_gpt2w PKG NAME [ARGS...]         benchmarks/train_bench.py at GPT-2 widths (4 layers, bf16) in package PKG
#                                          (new or old), beside torch unless ARGS say --no-torch, into $OUT/NAME.log
#                                          and $OUT/NAME.json; prints its summary
#   in_package PKG CMD...                  CMD with the package PKG (new: this checkout; else .PKGzd/) first on
#                                          PYTHONPATH, caches of its own
# (a script that a call script runs after sourcing this one inherits the set-up: it is done once per call)
if [ -z "${ZD_CALL_STEPS_READY:-}" ]; then
  source .devbundle/setup.sh
  export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 ZD_CALL_STEPS_READY=1
  nvidia-smi --query-gpu=name --format=csv,noheader
  python3 setup.py -q build_ext --inplace > /tmp/build.log 2>&1 || { echo "C extensions: build failed"; tail -3 /tmp/build.log; }
  if [ -f .oldzd/setup.py ]; then
    (cd .oldzd && python3 setup.py -q build_ext --inplace > /tmp/build-old.log 2>&1) \
      || { echo "C extensions of .oldzd/: build failed"; tail -3 /tmp/build-old.log; }
  fi
fi

in_package() {
  local pkg=$1; shift
  local pp=$PYTHONPATH
  [ "$pkg" != new ] && pp=$PWD/.${pkg}zd:$PYTHONPATH  # (old: .oldzd/; any other NAME: .NAMEzd/, unbuilt)
  PYTHONPATH=$pp XDG_CACHE_HOME=$(mktemp -d) CUPY_CACHE_DIR=$(mktemp -d) "$@"
}

gpu_tests() {
  local log=$1 seconds=$2; shift 2
  local t0=$(date +%s)
  ZYX_DIST_GPU_SUITE=0 timeout -k 5 -s ABRT $seconds python3 -m pytest -q -m gpu -n 8 --dist loadgroup \
    -p no:cacheprovider "$@" > $OUT/$log 2>&1
  echo "$* rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/$log; grep -E "^FAILED|^ERROR" $OUT/$log | head -10
}

step_profiles() {
  local pkg
  for pkg in "$@"; do
    [ "$pkg" = old ] && [ ! -d .oldzd ] && continue
    mkdir -p $OUT/p
    ZYX_DIST_DEBUG=$([ "$pkg" = new ] && echo 32 || echo 0) in_package $pkg \
      timeout -k 5 -s ABRT 100 python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 8 1024 768 12 bfloat16 \
      2> $OUT/autotune-$pkg.log | grep -vi warn | tail -14 | sed "s/^/$pkg: /" | tee -a $OUT/step-profile.txt
    [ "$pkg" = new ] && mv $OUT/p/top-kernels.cu $OUT/p/kernels.txt $OUT/ 2>/dev/null
    rm -rf $OUT/p
  done
}

train_gpt2w() {
  local pkg=$1 name=$2; shift 2
  in_package $pkg timeout -k 5 -s ABRT 150 python3 benchmarks/train_bench.py --embed 768 --layers 4 --heads 12 \
    --block 1024 --batch 8 --rounds 5 --steps 5 --warmup 3 --depths= --dtype bfloat16 --json $OUT/$name.json "$@" \
    > $OUT/$name.log 2>&1
  echo "train ($pkg) rc=$?"; grep -v -i "warn\|warm-up" $OUT/$name.log | tail -6
}
