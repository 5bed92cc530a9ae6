#!/usr/bin/env bash
# End-to-end checks of `kvsim import` and `kvsim inspect` on the bundled traces and on bad input.
set -u
kvsim="$1"
data="traces/data"
source tests/cli_test_lib.sh

# The cross-check figures for the Mooncake trace, through the command line.
expect 0 "$kvsim" inspect "$data/mooncake_synthetic.jsonl"
has "^requests  *3993$" out
has "^block references  *121877$" out
has "^distinct blocks  *43924$" out
has "^unbounded-cache hit ratio  *0.640$" out
has "p25 2269  p50 6265  p75 12728" out

expect 0 "$kvsim" inspect "$data/mooncake_synthetic.jsonl" --json
json_is out 'j["requests"] == 3993'
json_is out 'j["stack_distance"] == {"p25": 2269, "p50": 6265, "p75": 12728}'

# import -> native -> inspect gives the same facts; -> jsonl -> native again.
expect 0 "$kvsim" import "$data/mooncake_synthetic.jsonl" "$tmp/m.kvt"
has "imported 3993 requests" out
expect 0 "$kvsim" inspect "$tmp/m.kvt" --json
json_is out 'j["block_references"] == 121877'
expect 0 "$kvsim" import "$tmp/m.kvt" "$tmp/m.jsonl"
expect 0 "$kvsim" import "$tmp/m.jsonl" "$tmp/m2.kvt" --zstd=false
same_facts "$tmp/m.kvt" "$tmp/m2.kvt"  # native -> jsonl -> native keeps every fact
# --import_zstd and --import_out_format, the former names of --zstd and --out_format, still work.
expect 0 "$kvsim" import "$tmp/m.jsonl" "$tmp/m3.kvt" --import_zstd=false
cmp -s "$tmp/m2.kvt" "$tmp/m3.kvt" || fail "--import_zstd=false should write what --zstd=false does"
expect 2 "$kvsim" import "$tmp/m.jsonl" "$tmp/m4.out" --import_out_format=nope
has "unknown trace writer format 'nope'" err

expect 0 "$kvsim" import "$data/azure_code_2023.csv" "$tmp/a.kvt"
has "imported 8819 requests" out
expect 0 "$kvsim" inspect "$tmp/a.kvt"
has "^requests  *8819$" out
has "no block hashes" out

# Bad input: one line on stderr naming the file and line, exit code 2, no output file left behind.
printf '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n{"timestamp": 1, "input_len' >"$tmp/bad.jsonl"
expect 2 "$kvsim" import "$tmp/bad.jsonl" "$tmp/bad.kvt"
has "bad.jsonl:2: expected one JSON object per line" err
[ ! -e "$tmp/bad.kvt" ] || fail "a failed import left $tmp/bad.kvt"
ls "$tmp" | grep -q 'bad.kvt.tmp' && fail "a failed import left a temporary file"
: >"$tmp/empty.csv"
expect 2 "$kvsim" inspect "$tmp/empty.csv"
has "the file is empty" err
expect 2 "$kvsim" inspect "$data/azure_code_2023.csv" --trace_format=nope
has "unknown trace format 'nope'" err
expect 2 "$kvsim" inspect "$tmp/missing.jsonl"
expect 2 "$kvsim" import "$data/azure_code_2023.csv"
has "expected two arguments" err

finish
