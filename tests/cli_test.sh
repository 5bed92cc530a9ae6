#!/usr/bin/env bash
# End-to-end checks of the kvsim command line: dispatch, help, exit codes, one-line errors.
set -u
kvsim="$1"
source tests/cli_test_lib.sh

expect 0 "$kvsim" version
grep -q '^kvsim [0-9]' "$tmp/out" || fail "version line missing: $(cat "$tmp/out")"
expect 0 "$kvsim" --version
grep -q '^kvsim [0-9]' "$tmp/out" || fail "--version: $(cat "$tmp/out") $(cat "$tmp/err")"

expect 0 "$kvsim" help
for cmd in config version; do
  grep -q "^  $cmd " "$tmp/out" || fail "help does not list '$cmd'"
done

expect 0 "$kvsim" help config
grep -q -- '--config' "$tmp/out" || fail "help config does not list --config"
grep -q 'default: ' "$tmp/out" || fail "help config shows no defaults"

expect 2 "$kvsim" frobnicate
grep -q "unknown command 'frobnicate'" "$tmp/err" || fail "unknown command message: $(cat "$tmp/err")"

expect 2 "$kvsim" version --trace=x
grep -q "unknown flag --trace for 'kvsim version'" "$tmp/err" || fail "unknown flag message: $(cat "$tmp/err")"

expect 2 "$kvsim"

# A malformed config: one line naming file:line, exit code 2, nothing on stdout.
printf 'name: "x"\ncache {\n  block_tokens: "sixteen"\n}\n' >"$tmp/bad.textproto"
expect 2 "$kvsim" config --config="$tmp/bad.textproto"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "malformed config error is not one line: $(cat "$tmp/err")"
grep -q "bad.textproto:3:" "$tmp/err" || fail "malformed config error lacks file:line: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "malformed config printed to stdout"

# refused_config NAME CONTENTS MESSAGE: `kvsim config` on a file NAME.textproto holding CONTENTS exits 2
# with an error that names the file and continues with MESSAGE (":LINE:COLUMN: ..." where the file sets the
# refused field, ": ..." otherwise).
refused_config() {
  printf '%s\n' "$2" >"$tmp/$1.textproto"
  expect 2 "$kvsim" config --config="$tmp/$1.textproto"
  grep -qF "$1.textproto$3" "$tmp/err" || fail "config $1: $(cat "$tmp/err")"
}
# An impossible value: names the field and where the file sets it.
refused_config impossible 'model { num_kv_heads: 3 }' ":1:9: field model.num_kv_heads: 3 does not divide"
# What replay would refuse, config refuses: the eviction policy and the cost model are built too.
refused_config policy 'eviction { name: "bogus" }' ":1:1: field eviction: unknown eviction policy 'bogus'"
refused_config bits 'cost_model { kv_quant_bits: 5 }' ":1:14: field cost_model.kv_quant_bits: must be 0, 2, 3"
refused_config stack 'stack_preset: "nope"' ":1:1: field stack_preset: unknown stack preset 'nope'"
printf 'cluster { router: 17 }\n' >"$tmp/router.textproto"  # an undefined enum number: refused where it is read
expect 2 "$kvsim" config --config="$tmp/router.textproto"
has "router.textproto:1:11: field cluster.router: 17 is not a value of RouterKind" err

expect 2 "$kvsim" config --config="$tmp/missing.textproto"
grep -q "missing.textproto" "$tmp/err" || fail "missing config not named: $(cat "$tmp/err")"

# The resolved config reloads unchanged.
expect 0 "$kvsim" config
grep -v '^#' "$tmp/out" >"$tmp/resolved.textproto"
expect 0 "$kvsim" config --config="$tmp/resolved.textproto"
grep -v '^#' "$tmp/out" | grep -v '^name:' >"$tmp/again"
grep -v '^name:' "$tmp/resolved.textproto" | diff - "$tmp/again" >/dev/null || fail "resolved config changed on reload"

# kvsim calibrate: usage errors, and Unavailable (exit 2, one line) where there is no GPU.
expect 2 "$kvsim" calibrate
grep -q -- "--out (output directory) is required" "$tmp/err" || fail "calibrate without --out: $(cat "$tmp/err")"
# Former flag names (command prefixes dropped) still reach their flags: each refusal names the new flag.
expect 2 "$kvsim" replay --trace=/nonexistent --replay_sample_ms=0
grep -q "\-\-sample_ms must be > 0, got 0" "$tmp/err" || fail "replay alias: $(cat "$tmp/err")"
expect 2 "$kvsim" calibrate --out="$tmp/cal" --calibrate_repetitions=0
grep -q "\-\-repetitions must be >= 1" "$tmp/err" || fail "calibrate alias: $(cat "$tmp/err")"
expect 0 "$kvsim" help replay
grep -q "^  --timeline  .*also --replay_timeline)" "$tmp/out" || fail "help replay: $(cat "$tmp/out")"

expect 2 "$kvsim" calibrate --out="$tmp/cal" --only=decode,gemm
grep -q "unknown kind 'decode'" "$tmp/err" || fail "calibrate bad kind: $(cat "$tmp/err")"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  expect 2 "$kvsim" calibrate --out="$tmp/cal"
  grep -q "needs a CUDA GPU" "$tmp/err" || fail "calibrate without a GPU: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "calibrate error is not one line: $(cat "$tmp/err")"
fi

# Every bundled example experiment resolves.
for config in presets/experiments/*.textproto; do
  expect 0 "$kvsim" config --config="$config"
done

# A report that cannot be written is a failure (exit 1, one line on stderr), not a success.
if [ -w /dev/full ]; then
  "$kvsim" help >/dev/full 2>"$tmp/full_err"
  [ $? -eq 1 ] || fail "help > /dev/full should exit 1"
  grep -q "writing the report to standard output failed" "$tmp/full_err" || fail "/dev/full message: $(cat "$tmp/full_err")"
fi

finish
