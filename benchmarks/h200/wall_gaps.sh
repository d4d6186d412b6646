#!/usr/bin/env bash
# One call on the H200 (`device` tool, carry [".devbundle", ".oldzd"]; .oldzd holds an older package, unpacked
# with `git archive <commit> zyx_dist benchmarks | tar -x -C .oldzd`): the GEMM GPU tests, where the batched attention matmuls'
# wall goes (batched_matmul_wall.py, then Nsight Compute on our kernels and torch's), and the plain small step
# profiled at this tree and at the older one, alternating (small_step_profile.py --plain, run from /tmp so
# that PYTHONPATH alone picks the package).
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
timeout -s ABRT 150 python3 -m pytest -q -m gpu tests/gpu/test_gemm_gpu.py -p no:cacheprovider -n 8 > $OUT/gemm-tests.log 2>&1
echo "gemm tests rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 $OUT/gemm-tests.log
cd benchmarks/h200
ZYX_DIST_DEBUG=32 timeout -s ABRT 150 python3 batched_matmul_wall.py > $OUT/batched-wall.txt 2>&1
echo "batched rc=$?"; grep -v "^zyx_dist: autotune kc" $OUT/batched-wall.txt | head -30; grep "autotune kc" $OUT/batched-wall.txt | sort -k7 -n | head -40
timeout -s ABRT 120 python3 ../model_bench.py --sections subops --subops "q @ k.mT,p @ v,heads" --repeats 10 --out $OUT > $OUT/subops.log 2>&1
echo "subops rc=$?"; grep -v "autotune" $OUT/subops.log | tail -12
sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats --section ComputeWorkloadAnalysis"
for c in qk pv; do
  timeout 75 ncu -k regex:kc_ -c 1 $sections python3 batched_matmul_wall.py --cases $c --ncu > $OUT/ncu-batched-$c.txt 2>&1
  echo "ncu $c rc=$?"; grep -E "^  kc_|Duration|Throughput|Achieved Occupancy|Registers Per|Shared Memory Config|Block Size|Grid Size" $OUT/ncu-batched-$c.txt | head -20
done
cat > /tmp/torch_bmm.py <<'PY'
import sys, torch
B, H, T, D = 8, 16, 1024, 64
q, k = torch.randn(B, H, T, D, device="cuda"), torch.randn(B, H, T, D, device="cuda")
p = torch.rand(B, H, T, T, device="cuda") / T
for _ in range(3):
    (q @ k.mT) if sys.argv[1] == "qk" else (p @ q)
torch.cuda.synchronize()
PY
for c in qk pv; do
  timeout 75 ncu -k regex:'gemm|Gemm|Kernel' -s 2 -c 1 $sections python3 /tmp/torch_bmm.py $c > $OUT/ncu-torch-batched-$c.txt 2>&1
  echo "ncu torch $c rc=$?"; grep -E "^  [a-z_]|Duration|Throughput|Achieved Occupancy|Registers Per|Block Size|Grid Size" $OUT/ncu-torch-batched-$c.txt | head -16
done
cd ../..
cp benchmarks/h200/small_step_profile.py /tmp/ssp.py
for round in 1 2; do  # one file for all four runs: $OUT brings back only so many files
  for which in old new; do
    echo "== $which, round $round" >> $OUT/plain-step.txt
    if [ $which = old ]; then pp=$PWD/.oldzd:$PYTHONPATH; else pp=$PYTHONPATH; fi
    PYTHONPATH=$pp timeout 100 python3 /tmp/ssp.py --plain >> $OUT/plain-step.txt 2>&1
  done
done
grep -E "^==|^package|^round" $OUT/plain-step.txt
