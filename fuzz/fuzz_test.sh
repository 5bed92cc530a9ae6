#!/usr/bin/env bash
# A short run (FUZZ_SECONDS each, default 3) of every fuzz target of fuzz/fuzzer.cc under ASan and UBSan,
# built at -O0 (half the build time of -O1; the campaign uses -O1); fails on any crash, sanitizer report,
# leak or hang. Skips where clang or libFuzzer is missing.
export KVSIM_FUZZER_LIST=fuzz/fuzzer_sources.list
export FUZZ_OPT="${FUZZ_OPT:--O0}"
exec bash fuzz/run_fuzzers.sh "${FUZZ_SECONDS:-3}" "${TEST_TMPDIR:-$(mktemp -d)}/fuzz" \
  trace:mooncake trace:bailian trace:hashed trace:chunk_hash trace:azure trace:burstgpt trace:vidur trace:jsonl \
  trace:native config engine workload kvat calibration vidur outcomes
