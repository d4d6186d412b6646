#!/usr/bin/env bash
# One call on a GPU machine (`device` tool, carry [".devbundle"]): the CUDA-graph tests (in process and through
# Ray, whose one-worker replays take the replay socket, or the compiled graph with sockets off), then the replay
# socket's polling before a blocking read (ZYX_DIST_SOCKET_SPIN_US) at 200 us against 0, alternating, by the
# dispatch benchmark's overhead per cached realize (a) and small-step loop (b).
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_cuda_graphs.py -p no:cacheprovider > $OUT/gpu-cuda-graphs.log 2>&1
echo "cuda graph tests rc=$? at $(( $(date +%s) - t0 )) s"; grep -v "WARN\|INFO" $OUT/gpu-cuda-graphs.log | tail -30
for round in 1 2 3; do
  for spin in 200 0; do
    echo "== round $round, spin $spin us"
    ZYX_DIST_SOCKET_SPIN_US=$spin timeout -s ABRT 110 python3 benchmarks/dispatch_bench.py --device cuda:0 --only ab \
      --repeats 150 --out $OUT --name dispatch-spin$spin-round$round.json > $OUT/dispatch-spin$spin-round$round.log 2>&1
    echo "rc=$? at $(( $(date +%s) - t0 )) s"
    grep "overhead per realize\|zd.jit     relu.*per step  \|ray zd.jit.*per step  \|torch.*per step" $OUT/dispatch-spin$spin-round$round.log
  done
done
