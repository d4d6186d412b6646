#!/usr/bin/env bash
# One call on the GPU machine (`device` tool, carry [".devbundle"], `bash benchmarks/h200/grad_products_timed.sh`):
# the attention GPU tests of the backward's products (TESTS=0 leaves them out), then the bf16 training step at GPT-2
# widths (step_profile.py: device time per step, its largest kernels) with the attention backward's products as stored
# T x T GEMMs (the default) and then recomputing their weights (codegen/attention_grad.py, ZYX_DIST_ATTENTION_GRAD=1,
# the tuner's trials of their forms printed), each with fresh caches; $OUT/step-profile.txt.
source benchmarks/h200/call_steps.sh
[ "${TESTS:-1}" = 0 ] || gpu_tests attention-grad-tests.log 240 tests/gpu/test_attention_gpu.py -k backward
for form in stored recomputed; do
  mkdir -p $OUT/p
  ZYX_DIST_DEBUG=$([ $form = recomputed ] && echo 32 || echo 0) \
    ZYX_DIST_ATTENTION_GRAD=$([ $form = recomputed ] && echo 1 || echo 0) in_package new \
    timeout -k 5 -s ABRT 200 python3 benchmarks/h200/step_profile.py $OUT/p/trace.json 8 1024 768 12 bfloat16 \
    2> $OUT/autotune-$form.log | grep -vi warn | tail -14 | sed "s/^/$form: /" | tee -a $OUT/step-profile.txt
  rm -rf $OUT/p
done
# every two-form tuning (the products' kernels: wgmma's form, w1, and mma.sync's, w0) as the tuner measured it
python3 - $OUT/autotune-recomputed.log <<'PY'
import re, sys
trials, winners = {}, []
for line in open(sys.argv[1]):
    m = re.search(r"autotune (kc_[0-9a-f]+) on \S+: (\S+) (.*)", line)
    if m:
        trials.setdefault(m.group(1), []).append(f"{m.group(2)[-2:]} {m.group(3).strip()}")
    elif "autotune winner" in line:
        winners.append(line.strip())
for name, rows in trials.items():
    if len(rows) == 2:
        print(name, " | ".join(rows))
print(*[w for w in winners if " of 2 " in w], sep="\n")
PY
