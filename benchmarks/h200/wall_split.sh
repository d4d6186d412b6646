#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"]): where the wall of a replayed realize()
# goes, in-process (realize_split.py: tiny, layer_norm, the bf16 causal attention core) and through one Ray
# worker (ray_step_split.py and realize_split.py --ray on the tiny realize). Logs under $OUT.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout -s ABRT 200 python3 benchmarks/realize_split.py --device cuda:0 > $OUT/split-inprocess.txt 2>&1
echo "in-process rc=$?"; cat $OUT/split-inprocess.txt
timeout -s ABRT 150 python3 benchmarks/ray_step_split.py --device cuda:0 --case tiny --steps 2000 > $OUT/split-ray-tiny.txt 2>&1
echo "ray split rc=$?"; grep -v -E "WARNING|INFO" $OUT/split-ray-tiny.txt | tail -9
timeout -s ABRT 150 python3 benchmarks/realize_split.py --device cuda:0 --ray --rounds 2000 tiny > $OUT/split-ray-steps.txt 2>&1
echo "ray steps rc=$?"; grep -v -E "WARNING|INFO" $OUT/split-ray-steps.txt | tail -16
