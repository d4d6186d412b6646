#!/usr/bin/env bash
# One call on the H200 (`device` tool, carry [".devbundle", ".oldzd"], `bash benchmarks/h200/driver_ab.sh`): the
# driver's cost per replayed realize, this tree against an older package copied into .oldzd/ (`git archive
# <commit> zyx_dist | tar -x -C .oldzd`), alternating in one call (the host's speed drifts between calls), then
# where the wall of short realizes goes (realize_profile.py) and the CUDA worker's tests. Logs under $OUT.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_cuda.py tests/gpu/test_cuda_graphs.py -n 8 --dist loadgroup \
  -p no:cacheprovider > $OUT/gpu-cuda.log 2>&1
echo "cuda tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu-cuda.log; grep -E "^(FAILED|ERROR)" $OUT/gpu-cuda.log | head
for v in ${ORDER:-old new old new}; do
  [ "$v" = old ] && [ ! -d .oldzd ] && continue
  P=$PYTHONPATH; [ "$v" = old ] && P=$PWD/.oldzd:$PYTHONPATH
  echo "== $v"
  PYTHONPATH=$P timeout -s ABRT 100 python3 benchmarks/dispatch_bench.py --device cuda:0 --workers 1 --only a --repeats 300 \
    --out $OUT/$v 2>&1 | grep -E "overhead per|Python per|gauge"
done
timeout -s ABRT ${PROFILE_S:-200} python3 benchmarks/h200/realize_profile.py ${CASES:-tiny layer_norm ew_chain softmax sum} 2>&1 \
  | grep -v -i warn > $OUT/realize-profile.txt
echo "realize_profile rc=$?"; grep -E "^[a-z_]+: zd realize|kernels:" $OUT/realize-profile.txt
