#!/usr/bin/env bash
# One call on the GPU machine: the attention kernels of this checkout against the package in .oldzd/ (run: carry
# [".devbundle", ".oldzd"], command `bash benchmarks/h200/attention_ab.sh`). Steps:
# - each package's forms (attention_forms.py: bfloat16 and float16 at (8,16,1024,64), kernel time by CUDA events
#   beside torch's sdpa), in the order FORM_PKGS gives (default "new old new old"; a NAME other than new and old is
#   the package in .NAMEzd/, which `carry` must name too); each form's error against torch in $OUT/forms.txt;
# - each package's fp32 and bf16 attention core through `realize()` (model_bench.py's sub-op beside sdpa; CORE_PKGS,
#   default "new old");
# - this checkout's forms at a long sequence (LONG, default 4,16,4096,64);
# - with NCU set, Nsight Compute's source view of the TMA form (CSV under $OUT: ncu_source_summary.py sums it);
# - the GPU tier (TIER_S seconds, 0: none; TIER_ARGS: pytest's arguments, default tests/gpu), its log under $OUT.
source benchmarks/h200/call_steps.sh
for pkg in ${FORM_PKGS:-new old new old}; do
  in_package $pkg timeout -s ABRT 90 python3 benchmarks/h200/attention_forms.py --dtypes bfloat16,float16 2>&1 \
    | grep -v -i warn | sed "s/^/$pkg: /" | tee -a $OUT/forms.txt | grep "median"  # (each form's error: forms.txt)
done
for pkg in ${CORE_PKGS:-new old}; do
  in_package $pkg timeout -s ABRT 120 python3 benchmarks/model_bench.py --sections subops --subops "attention core" \
    --repeats 30 --out /tmp/mb-$pkg 2>&1 | grep -v -i warn | grep "attention core" | sed "s/^/$pkg: /"
done
timeout -s ABRT 90 python3 benchmarks/h200/attention_forms.py --dtypes bfloat16 --shape ${LONG:-4,16,4096,64} 2>&1 \
  | grep -v -i warn | grep "kernel\|sdpa(" | sed "s/^/new ${LONG:-4,16,4096,64}: /"
if [ -n "${NCU:-}" ]; then  # the TMA form's stall samples per SASS instruction (DEVELOPERS item 22), as CSV under $OUT
  timeout -s ABRT 150 ncu --section SourceCounters --section WarpStateStats -k regex:kc_ -c 1 -o /tmp/attn \
    python3 benchmarks/h200/attention_forms.py --ncu --dtypes bfloat16 > /tmp/ncu.log 2>&1 || tail -3 /tmp/ncu.log
  ncu -i /tmp/attn.ncu-rep --page source --csv --print-source sass > $OUT/attention-source.csv 2>/dev/null
  ncu -i /tmp/attn.ncu-rep --page details --csv > $OUT/attention-details.csv 2>/dev/null
  echo "ncu: $(wc -l < $OUT/attention-source.csv) source rows"
fi
[ "${TIER_S:-200}" != 0 ] && gpu_tests gpu-tests.log ${TIER_S:-200} ${TIER_ARGS:-tests/gpu}
