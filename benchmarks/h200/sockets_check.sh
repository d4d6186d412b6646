#!/usr/bin/env bash
# One call on a GPU machine (`device` tool, carry [".devbundle"]): the CUDA-graph tests (in process, and through
# Ray on the replay socket and on the compiled graph), then the dispatch benchmark's overhead per cached realize
# (a) and reads (e), in process and through Ray. Files in $OUT: cuda-graphs.log, dispatch.{json,log}.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_cuda_graphs.py tests/gpu/test_interop_gpu.py -p no:cacheprovider > $OUT/cuda-graphs.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - t0 )) s"; tail -1 $OUT/cuda-graphs.log
timeout -s ABRT 200 python3 benchmarks/dispatch_bench.py --device cuda:0 --only ae --out $OUT --name dispatch.json > $OUT/dispatch.log 2>&1
echo "dispatch rc=$? at $(( $(date +%s) - t0 )) s"; grep "us \|gauge" $OUT/dispatch.log | grep -v "WARN\|INFO"
