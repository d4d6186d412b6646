#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"], and ".oldzd" for an A/B): the GPU test tier,
# then where a replayed realize()'s wall goes: realize_split.py in-process (tiny, layer_norm, bf16 attention core,
# each beside torch), and through one Ray worker ray_step_split.py and realize_split.py --ray (tiny). Where .oldzd
# holds an older package (`git archive <commit> zyx_dist | tar -x -C .oldzd`), that one and this tree take turns,
# run from /tmp so that PYTHONPATH alone picks the package. ROUNDS of them (2); TESTS_S=0 leaves the tier out.
# Logs under $OUT.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
here=$PWD
trees=new; [ -d .oldzd/zyx_dist ] && trees="old new"
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
if [ "${TESTS_S:-200}" != 0 ]; then
  ZYX_DIST_GPU_SUITE=0 timeout -s ABRT ${TESTS_S:-200} python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup \
    -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
  echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
fi
for round in $(seq 1 ${ROUNDS:-2}); do
  for tree in $trees; do
    path=$here; [ $tree = old ] && path=$here/.oldzd
    cd /tmp
    PYTHONPATH=$path:$PYTHONPATH timeout -s ABRT 150 python3 $here/benchmarks/realize_split.py --device cuda:0 \
      > $OUT/split-$tree-$round.txt 2>&1
    echo "== $tree round $round rc=$?"; grep -E "^\S|wall|confirms|guess|lookup|launch_graph|synchronize" $OUT/split-$tree-$round.txt
    PYTHONPATH=$path:$PYTHONPATH timeout -s ABRT 150 python3 $here/benchmarks/ray_step_split.py --device cuda:0 \
      --case tiny --steps 2000 > $OUT/ray-split-$tree-$round.txt 2>&1
    echo "== ray split $tree round $round rc=$?"; grep -v -E "WARNING|INFO" $OUT/ray-split-$tree-$round.txt | tail -8
    PYTHONPATH=$path:$PYTHONPATH timeout -s ABRT 120 python3 $here/benchmarks/realize_split.py --device cuda:0 --ray \
      --rounds 2000 tiny > $OUT/split-ray-$tree-$round.txt 2>&1
    echo "== ray steps $tree round $round rc=$?"; grep -E "wall" $OUT/split-ray-$tree-$round.txt
    cd $here
  done
done
