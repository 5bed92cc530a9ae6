#!/usr/bin/env bash
# Fuzzes every trace parser with libFuzzer (clang -fsanitize=fuzzer,address) for a bounded time each,
# starting from the seed corpus in traces/fuzz/seeds/, and fails on any crash, sanitizer report or leak.
# Skips (exit 0, printing SKIP) where clang or its fuzzer runtime is missing.
# Argument: the generated trace.pb.cc. FUZZ_SECONDS: seconds per parser.
set -u
pb_cc="$1"
seconds="${FUZZ_SECONDS:-5}"  # per parser
tmp="${TEST_TMPDIR:-$(mktemp -d)}"

if ! command -v clang++ >/dev/null 2>&1; then
  echo "SKIP: clang++ not installed (Debian packages clang, libclang-rt-14-dev)"
  exit 0
fi
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$tmp/probe.cc"
if ! clang++ -fsanitize=fuzzer "$tmp/probe.cc" -o "$tmp/probe" 2>/dev/null; then
  echo "SKIP: clang++ has no libFuzzer runtime (Debian package libclang-rt-14-dev)"
  exit 0
fi

# One unity build of the parsers (everything they need from traces/ and util/), instrumented: a single
# translation unit parses the large simdjson and Abseil headers once, which keeps the build short.
pb_dir="$(dirname "$pb_cc")"
{
  echo "#include \"$pb_cc\""
  for f in util/check.cc util/file.cc util/json_text.cc util/stream_sketch.cc traces/request.cc traces/fuzz/trace_fuzzer.cc; do echo "#include \"$f\""; done
  for f in text/line_reader text/parse_util text/csv_reader text/text_detect trace_format text/import_reader \
           text/jsonl_source text/csv_source importers/mooncake_reader importers/bailian_reader \
           importers/hashed_reader importers/azure_reader importers/burstgpt_reader importers/vidur_reader \
           importers/chunk_hash_reader importers/jsonl_reader native_format jsonl_export trace_io trace_stats \
           trace_convert peer_export; do
    echo "#include \"traces/$f.cc\""
  done
} >"$tmp/unity.cc"
libs="$(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format absl_flat_hash_map \
        absl_hash absl_synchronization protobuf simdjson libzstd)"
start=$SECONDS
if ! clang++ -std=c++17 -O1 -g0 -fsanitize=fuzzer,address -I. -I"$pb_dir/.." "$tmp/unity.cc" $libs \
     -o "$tmp/trace_fuzzer" 2>"$tmp/build.log"; then
  cat "$tmp/build.log"
  echo "FAIL: the fuzzer does not build"
  exit 1
fi
echo "built the fuzzer in $((SECONDS - start)) s"

# Native seeds, made from the Mooncake seed by the fuzzer binary itself.
mkdir -p "$tmp/native_seeds"
KVSIM_FUZZ_MAKE_NATIVE="traces/fuzz/seeds/mooncake.jsonl $tmp/native_seeds/mooncake" "$tmp/trace_fuzzer" ||
  { echo "FAIL: cannot make the native seeds"; exit 1; }

failures=0
for format in mooncake bailian hashed chunk_hash azure burstgpt vidur jsonl native; do
  corpus="$tmp/corpus_$format"
  mkdir -p "$corpus"
  if [ "$format" = native ]; then
    cp "$tmp"/native_seeds/* "$corpus/"
  else
    cp traces/fuzz/seeds/"$format".* "$corpus/"
  fi
  # Inputs up to 64 KiB: a native trace's header alone is padded to 4096 bytes, so a smaller cap never
  # reached its frames.
  max_len=4096
  [ "$format" = native ] && max_len=65536
  # -seed fixes the mutation sequence: the same inputs on every run.
  if KVSIM_FUZZ_FORMAT="$format" "$tmp/trace_fuzzer" "$corpus" -seed=1 -max_total_time="$seconds" \
       -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$tmp/crash_$format." \
       >"$tmp/fuzz_$format.log" 2>&1; then
    echo "$format: $(grep -o 'Done [0-9]* runs' "$tmp/fuzz_$format.log" | tail -1), no crash"
  else
    echo "FAIL: $format: the fuzzer found a crash"
    tail -n 40 "$tmp/fuzz_$format.log"
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] || exit 1
echo "fuzzing found nothing"
