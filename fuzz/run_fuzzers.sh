#!/usr/bin/env bash
# Builds kvsim's libFuzzer binary (fuzz/fuzzer.cc; clang++, ASan + UBSan; fuzz/build_fuzzer.sh) and runs
# each named target for SECONDS from its seed corpus and dictionary, printing one line per target:
#   TARGET: N execs in S s, cov: C ft: F, corpus: K inputs, crashes: X
# Findings (crash-*, leak-*, timeout-*, oom-* inputs), each target's log and its grown corpus are kept under
# OUTDIR/TARGET/. Exit status 1 if any target found something or the build failed; 0 with a SKIP line where
# clang++ or its fuzzer runtime (Debian packages clang, libclang-rt-14-dev) is missing.
#
# Usage: run_fuzzers.sh SECONDS OUTDIR [TARGET...]   (none: every target the built fuzzer lists,
# fuzz/fuzzer.h's FuzzTargetNames)
# Run from the workspace root or a test's runfiles. Environment: KVSIM_FUZZER_LIST, the source listing of
# //fuzz:fuzzer_sources (fuzz/sources.bzl); KVSIM_FUZZ_GEN_DIR, where generated files live (default .;
# bazel-bin outside runfiles); FUZZ_OPT and FUZZ_BUILD_JOBS as fuzz/build_fuzzer.sh; KVSIM_FUZZER_BINARY, a
# fuzzer built before (then nothing is built).
# -seed=1 fixes libFuzzer's mutation sequence: runs of equal length try the same inputs.
set -u
seconds="$1"
out="$2"
shift 2
gen_dir="${KVSIM_FUZZ_GEN_DIR:-.}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if ! command -v clang++ >/dev/null 2>&1; then
  echo "SKIP: clang++ not installed (Debian packages clang, libclang-rt-14-dev)"
  exit 0
fi
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$out/probe.cc"
if ! clang++ -fsanitize=fuzzer,address,undefined "$out/probe.cc" -o "$out/probe" 2>/dev/null; then
  echo "SKIP: clang++ has no libFuzzer runtime (Debian package libclang-rt-14-dev)"
  exit 0
fi
rm -f "$out/probe" "$out/probe.cc"

start=$SECONDS
fuzzer="${KVSIM_FUZZER_BINARY:-}"
if [ -z "$fuzzer" ]; then
  fuzzer="$out/fuzzer"
  if ! bash "$here/build_fuzzer.sh" "$fuzzer" "$KVSIM_FUZZER_LIST" fuzz/fuzzer.cc "$gen_dir" >"$out/build.log" 2>&1; then
    cat "$out/build.log"
    echo "FAIL: the fuzzer does not build"
    exit 1
  fi
  echo "built the fuzzer (${FUZZ_OPT:--O1}) in $((SECONDS - start)) s"
fi

# Seeds that kvsim's writers make: native traces of the Mooncake seed, .kvat files and an outcome table.
seeds="$out/made_seeds"
mkdir -p "$seeds"
KVSIM_FUZZ_MAKE_SEEDS="$seeds fuzz/seeds/traces/mooncake.jsonl" "$fuzzer" ||
  { echo "FAIL: cannot make the seeds"; exit 1; }

# seed_corpus TARGET DIR: copies the target's seeds (from the bundled files) into DIR.
seed_corpus() {
  case "$1" in
    trace:native) cp "$seeds"/mooncake.*.kvt "$2/" ;;
    trace:*) cp fuzz/seeds/traces/"${1#trace:}".* "$2/" ;;
    config | engine) cp fuzz/seeds/config/*.textproto presets/experiments/*.textproto "$2/" ;;
    workload) cp presets/workloads/*.textproto "$2/" ;;
    kvat) cp "$seeds"/*.kvat "$2/" ;;
    outcomes) cp "$seeds"/synthetic.csv "$2/" ;;
    calibration)
      head -n 40 cost_models/tables/h200_llama-3.1-8b.csv >"$2/h200.csv"
      head -n 40 cost_models/tables/a100-80gb_llama-3-8b_vidur.csv >"$2/a100_vidur.csv"
      ;;
    vidur)
      local i=0
      for f in $(find cost_models/data/vidur -name '*.csv' | sort); do
        i=$((i + 1))
        head -n 3 "$f" | head -c 4000 >"$2/$i-$(basename "$f")"
      done
      ;;
  esac
}

dict_for() {
  case "$1" in
    trace:mooncake | trace:bailian | trace:hashed | trace:chunk_hash | trace:jsonl) echo "fuzz/dicts/json.dict" ;;
    trace:azure | trace:burstgpt | trace:vidur | calibration | vidur | outcomes) echo "fuzz/dicts/csv.dict" ;;
    config | engine)
      bash "$here/textproto_dict.sh" proto/config.proto proto/spec.proto >"$out/config.dict"
      echo "$out/config.dict"
      ;;
    workload)
      bash "$here/textproto_dict.sh" proto/workload.proto >"$out/workload.dict"
      echo "$out/workload.dict"
      ;;
  esac
}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(KVSIM_FUZZ_LIST_TARGETS=1 "$fuzzer") && [ ${#targets[@]} -gt 0 ] ||
    { echo "FAIL: the fuzzer does not list its targets"; exit 1; }
fi

failures=0
for t in "${targets[@]}"; do
  dir="$out/${t/:/_}"
  mkdir -p "$dir/corpus"
  seed_corpus "$t" "$dir/corpus"
  env=(KVSIM_FUZZ_TARGET="$t")
  [ "$t" = engine ] && env+=(KVSIM_FUZZ_TRACE=traces/testdata/mooncake_head500_v1_zstd.kvt)
  # Inputs up to 4 KiB, 64 KiB for the binary formats (a native trace's header alone is 4096 bytes).
  max_len=4096
  case "$t" in trace:native | kvat) max_len=65536 ;; esac
  dict="$(dict_for "$t")"
  flags=(-seed=1 -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10
         -print_final_stats=1 -artifact_prefix="$dir/")
  [ -n "$dict" ] && flags+=(-dict="$dict")
  env TEST_TMPDIR="$dir" "${env[@]}" "$fuzzer" "$dir/corpus" "${flags[@]}" >"$dir/fuzz.log" 2>&1
  rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -1)"
  cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$dir/fuzz.log" | tail -1)"
  time="$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$dir/fuzz.log" | grep -oE '[0-9]+ second' | grep -oE '[0-9]+')"
  crashes="$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)"
  echo "$t: ${execs:-0} execs in ${time:-?} s, ${cov:-cov: ? ft: ?}, corpus: $(ls "$dir/corpus" | wc -l) inputs, crashes: $crashes"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    echo "FAIL: $t: the fuzzer found a problem (exit $rc); input(s) and log in $dir"
    grep -E -A30 '^==[0-9]+==|runtime error|fuzzer:|Test unit written' "$dir/fuzz.log" | head -n 60
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] || exit 1
echo "fuzzing found nothing"
