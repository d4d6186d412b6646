#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"]): builds the plan cache's C walks there
# (setup.py build_ext --inplace; the bundle installs no package), runs the GPU tier, then A/B rounds of the
# dispatch benchmark's overhead per cached realize (a) and small step (b) with the C walks and without
# (ZYX_DIST_C_WALKS=0), alternating, and where a replayed realize's wall goes (realize_split.py) both ways.
# Files in $OUT: build.log, gpu-tier.log, ab.log, split-{c,py}.txt.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
python3 setup.py -q build_ext --inplace > $OUT/build.log 2>&1; echo "build rc=$?"; tail -3 $OUT/build.log
python3 -c "from zyx_dist.fuse import plan_cache as p; print('C walks:', p.c_walks_enabled())"
if [ "${TIER:-1}" = 1 ]; then
  ZYX_DIST_GPU_SUITE=0 timeout -s ABRT 200 python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
  echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
fi
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in c py; do
    w=1; [ $v = py ] && w=0
    echo "=== round $r, C walks $v" >> $OUT/ab.log
    ZYX_DIST_C_WALKS=$w timeout -s ABRT 150 python3 benchmarks/dispatch_bench.py --device cuda:0 --only ${PARTS:-ab} \
      --repeats 300 --out /tmp/ab --name dispatch-$v-$r.json >> $OUT/ab.log 2>&1
    echo "round $r $v rc=$?"
  done
done
grep -v "autotune\|WARN\|INFO" $OUT/ab.log | grep "===\|us\|x torch" | head -80
for v in c py; do
  w=1; [ $v = py ] && w=0
  ZYX_DIST_C_WALKS=$w timeout -s ABRT 90 python3 benchmarks/realize_split.py --device cuda:0 --rounds 300 tiny layer_norm attention > $OUT/split-$v.txt 2>&1
  echo "split $v rc=$?"; grep "wall\|^[a-z_]* (" $OUT/split-$v.txt
done
echo "total $(( $(date +%s) - t0 )) s"
