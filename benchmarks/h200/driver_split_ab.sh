#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle", ".oldzd"]; .oldzd holds an older package,
# unpacked with `git archive <commit> zyx_dist | tar -x -C .oldzd`): the GPU test tier, then realize_split.py
# in-process (tiny, layer_norm, bf16 attention core, each beside torch) and through one Ray worker (tiny), this
# tree and the older one alternating, run from /tmp so that PYTHONPATH alone picks the package. Logs under $OUT.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
here=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
if [ "${TESTS_S:-200}" != 0 ]; then  # TESTS_S=0: no GPU tier
  ZYX_DIST_GPU_SUITE=0 timeout -s ABRT ${TESTS_S:-200} python3 -m pytest -q -m gpu tests/gpu -n 8 --dist loadgroup \
    -p no:cacheprovider > $OUT/gpu-tier.log 2>&1
  echo "gpu tier rc=$? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/gpu-tier.log
fi
for round in $(seq 1 ${ROUNDS:-2}); do
  for tree in old new; do
    path=$here; [ $tree = old ] && path=$here/.oldzd
    cd /tmp
    PYTHONPATH=$path:$PYTHONPATH timeout -s ABRT 150 python3 $here/benchmarks/realize_split.py --device cuda:0 \
      > $OUT/split-$tree-$round.txt 2>&1
    echo "== $tree round $round rc=$?"; grep -E "^\S|wall|confirms|guess|lookup|launch_graph|synchronize" $OUT/split-$tree-$round.txt
    PYTHONPATH=$path:$PYTHONPATH timeout -s ABRT 120 python3 $here/benchmarks/realize_split.py --device cuda:0 --ray \
      --rounds 2000 tiny > $OUT/split-ray-$tree-$round.txt 2>&1
    echo "== ray $tree round $round rc=$?"; grep -E "wall" $OUT/split-ray-$tree-$round.txt
    cd $here
  done
done
