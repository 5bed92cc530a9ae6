#!/usr/bin/env bash
# The whole GPU check of the kernels in ONE call on a machine with an NVIDIA GPU, from the repository root,
# with gpu_bundle/ carried from kernels/make_gpu_bundle.sh (nothing is built here):
#   GPU tests (kernels vs the float64 reference, cuBLASLt GEMM, copy kernel), compute-sanitizer memcheck and
#   racecheck on small shapes (when the tool works), the benchmarks of issue 7, and the coarse calibration.
# Writes everything under $OUT (logs, benchmark.json, calibration/calibration.csv, RESULTS.md) and prints a
# summary last. Fits in 8 minutes: each step has a time limit, the calibration gets what is left of 460 s.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=gpu_bundle
OUT=${OUT:-/tmp/kvsim_gpu_out}
mkdir -p "$OUT"
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
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ]; then
  small='DecodeKernelEdgeTest.*:Formats/DecodeKernelTest.MatchesReferenceSplitAndUnsplit/0:Formats/DecodeKernelTest.MatchesReferenceSplitAndUnsplit/6:Gqa/PrefillKernelTest.MatchesCausalReference/1'
  step memcheck 60 "$sanitizer" --tool memcheck --error-exitcode 9 "$bundle/attention_kernels_test" --gtest_filter="$small"
  step racecheck 60 "$sanitizer" --tool racecheck --error-exitcode 9 "$bundle/attention_kernels_test" \
    --gtest_filter='DecodeKernelEdgeTest.*:Gqa/PrefillKernelTest.MatchesCausalReference/1'
else
  echo "compute-sanitizer not found" | tee -a "$OUT/steps.txt"
fi
step benchmark 90 "$bundle/attention_benchmark" --benchmark_out="$OUT/benchmark.json" --benchmark_out_format=json
left=$(( 460 - ($(date +%s) - start) ))
[ "$left" -lt 60 ] && left=60
step calibrate "$left" "$bundle/kvsim" calibrate --out="$OUT/calibration" --seed=1 \
  --calibrate_revision="$(cat "$bundle/REVISION" 2>/dev/null || echo unknown)"
python3 kernels/gpu_summary.py "$OUT" > "$OUT/RESULTS.md" 2> "$OUT/summary_errors.log"
cat "$OUT/RESULTS.md"
