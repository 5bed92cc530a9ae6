#!/usr/bin/env bash
# A fuzzing campaign over every input format: each libFuzzer target of fuzz/fuzzer.cc (each trace format,
# configs, the config-to-engine path, workload specs, attention traces, calibration CSVs, Vidur profiles,
# outcome tables) runs for SECONDS_PER_TARGET under ASan and UBSan (built at -O1), one after the other,
# from the bundled seeds.
# Prints per target the executions, the coverage reached (libFuzzer's cov: edges and ft: features) and
# the crashes; findings, logs and the grown corpora stay under OUTDIR/TARGET/. Exit status 1 on a finding.
# Usage: tools/fuzz_campaign.sh SECONDS_PER_TARGET OUTDIR [TARGET...]   (default: every target of the
# harness, fuzz/fuzzer.h's FuzzTargetNames)
# Needs clang and libclang-rt-14-dev (tools/install_deps.sh); builds the source listings with Bazel.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: tools/fuzz_campaign.sh SECONDS_PER_TARGET OUTDIR [TARGET...]" >&2
  exit 2
fi
seconds="$1"
out="$2"
shift 2
case "$seconds" in '' | *[!0-9]*) echo "SECONDS_PER_TARGET must be a positive integer, got '$seconds'" >&2; exit 2 ;; esac
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
bazel build --jobs=2 //fuzz:fuzzer_sources
bin="$(bazel info bazel-bin 2>/dev/null)"
export KVSIM_FUZZ_GEN_DIR="$bin"
export KVSIM_FUZZER_LIST="$bin/fuzz/fuzzer_sources.list"
exec bash fuzz/run_fuzzers.sh "$seconds" "$out" "$@"  # no TARGET: every target the fuzzer lists
