source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 170 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
timeout -s ABRT 200 python3 benchmarks/h200/matmul_wall.py > $OUT/matmul-wall.txt 2>&1
echo "matmul rc=$?"; grep -v "^zyx_dist: autotune kc" $OUT/matmul-wall.txt | head -80
timeout -s ABRT 150 python3 benchmarks/h200/small_step_breakdown.py > $OUT/small-step.txt 2>&1
echo "small rc=$?"; tail -14 $OUT/small-step.txt
