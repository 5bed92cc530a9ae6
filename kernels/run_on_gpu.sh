#!/usr/bin/env bash
# The whole GPU check of the kernels in ONE call on a machine with an NVIDIA GPU, from the repository root,
# with gpu_bundle/ carried from kernels/make_gpu_bundle.sh (nothing is built here):
#   GPU tests (kernels vs the float64 reference, cuBLASLt GEMM, copy kernel), compute-sanitizer memcheck and
#   racecheck on small shapes (when the tool works), the benchmarks of issue 7, the coarse calibration, and the
#   attention recorder's test (torch and transformers are there).
# Writes RESULTS.md, calibration.csv and gpu_run.tar.gz (all logs, benchmark.json) under $OUT and prints a
# summary last. Fits in 8 minutes: each step has a time limit, the calibration a budget from what is left of 300 s.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=gpu_bundle
# Steps write into a work folder; $OUT gets three files at the end (the device tool returns at most 8):
# RESULTS.md, calibration.csv and gpu_run.tar.gz with every log.
final=${OUT:-/tmp/kvsim_gpu_out}
OUT=/tmp/kvsim_gpu_work
rm -rf "$OUT"
mkdir -p "$OUT" "$final"
export LD_LIBRARY_PATH=$PWD/$bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ ! -e /usr/local/cuda/lib64/libcublasLt.so.13 ]; then  # fall back to pip's nvidia-cublas
  lib=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$lib" ] && export LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH
fi
start=$(date +%s)
: > "$OUT/steps.txt"
cp "$bundle/REVISION" "$OUT/REVISION" 2>/dev/null
step() {  # step NAME LIMIT_S COMMAND...: runs with a time limit, logs to $OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc at $(( $(date +%s) - start )) s" | tee -a "$OUT/steps.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$OUT/gpu.csv" 2>&1
cat "$OUT/gpu.csv"
step device_test 30 "$bundle/device_test"
step attention_kernels_test 90 "$bundle/attention_kernels_test" --gtest_output="xml:$OUT/attention_kernels_test.xml"
step blaslt_gemm_test 30 "$bundle/blaslt_gemm_test"
step benchmark 120 "$bundle/attention_benchmark" --benchmark_out="$OUT/benchmark.json" --benchmark_out_format=json
# The calibration gets what is left of 300 s less ~110 s for the checks after it; its own budget makes it
# write an even subset of the grid rather than be killed.
budget=$(( 300 - 110 - ($(date +%s) - start) ))
[ "$budget" -lt 60 ] && budget=60
calibrate=("$bundle/kvsim" calibrate --out="$OUT/calibration" --seed=1
           --revision="$(cat "$bundle/REVISION" 2>/dev/null || echo unknown)")
step calibrate $(( budget + 45 )) "${calibrate[@]}" --budget_s="$budget"
if [ ! -s "$OUT/calibration/calibration.csv" ] && grep -q "reference" "$OUT/calibrate.log"; then
  # A kernel disagreed with the reference (see calibrate.log and the tests): time anyway, marked as such.
  mv "$OUT/calibrate.log" "$OUT/calibrate_validation_failed.log"
  step calibrate 100 "${calibrate[@]}" --budget_s=60 --validate=false
fi
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ]; then
  small='DecodeKernelEdgeTest.*:Formats/DecodeKernelTest.MatchesReferenceSplitAndUnsplit/0:Formats/DecodeKernelTest.MatchesReferenceSplitAndUnsplit/6:Gqa/PrefillKernelTest.MatchesCausalReference/1'
  step memcheck 45 "$sanitizer" --tool memcheck --error-exitcode 9 "$bundle/attention_kernels_test" --gtest_filter="$small"
  step racecheck 45 "$sanitizer" --tool racecheck --error-exitcode 9 "$bundle/attention_kernels_test" \
    --gtest_filter='DecodeKernelEdgeTest.*:Gqa/PrefillKernelTest.MatchesCausalReference/1'
else
  echo "compute-sanitizer not found" | tee -a "$OUT/steps.txt"
fi
# The recorder's test needs torch and transformers, which this machine has (the build machine does not).
export KVSIM_ATTENTION_TRACE_DUMP=$bundle/attention_trace_dump
step record_attention_test 60 python3 tools/record_attention_test.py
# Hardware counters of the headline bf16 decode (one launch), where ncu works (clocks left as they are).
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
if [ -n "$ncu" ]; then
  step ncu_decode 45 "$ncu" --clock-control none --kernel-name regex:Decode --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    "$bundle/attention_benchmark" --benchmark_filter='BM_Decode/bf16_page16/'
  # Where int4 decode's time goes (stall reasons, issue slots): it is far from its byte floor.
  step ncu_int4 45 "$ncu" --clock-control none --kernel-name regex:Decode --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    "$bundle/attention_benchmark" --benchmark_filter='BM_Decode/int4_g128_page128/'
fi
python3 kernels/gpu_summary.py "$OUT" > "$OUT/RESULTS.md" 2> "$OUT/summary_errors.log"
cp "$OUT/RESULTS.md" "$final/"
cp "$OUT/calibration/calibration.csv" "$final/" 2>/dev/null
tar -C "$OUT" -czf "$final/gpu_run.tar.gz" .
cat "$OUT/RESULTS.md"
