#!/usr/bin/env bash
# End-to-end checks of hash-per-chunk traces (LMBench trace-replayer layout) through import, inspect,
# cache and replay; zero-token prompts refused at their line; the sampled MRC's error_bound column.
set -u
kvsim="$1"
lmbench="$2"
mooncake="$3"
source tests/cli_test_lib.sh

# Detected, chained by default; inspect reports tokens per id and that the raw ids are not chained.
expect 0 "$kvsim" inspect "$lmbench"
has "(chunk_hash)" out
has "^requests  *6$" out
has "^block size  *34 tokens$" out
has "^tokens per id  *mean 34.12  min 31  max 39$" out
has "^ids prefix-chained  *yes" out
expect 0 "$kvsim" inspect "$lmbench" --chain_hashes=false --json
json_is out 'j["tokens_per_id"]["min"] == 31 and j["tokens_per_id"]["max"] == 39'
json_is out 'abs(j["tokens_per_id"]["mean"] - 580 / 17) < 1e-9'  # 580 prompt tokens in 17 ids
json_is out 'j["ids_look_chained"] is False'
json_is out 'j["ids_with_other_predecessor"] == 1 and j["ids_repeated_in_request"] == 2'
has "kept as content hashes" out
expect 0 "$kvsim" inspect "$mooncake"
has "^ids prefix-chained  *yes" out
has "^tokens per id  *mean " out

# Round trip: native and kvsim JSONL keep each chunk's tokens.
expect 0 "$kvsim" import "$lmbench" "$tmp/l.kvt"
has "imported 6 requests" out
has "chunk_hash, 34-token blocks" out
expect 0 "$kvsim" import "$tmp/l.kvt" "$tmp/l.jsonl"
python3 - "$tmp/l.jsonl" <<'PY' || fail "no record with block_token_counts [33, 33, 34]: $(head -c 600 "$tmp/l.jsonl")"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])][1:]  # after the header
sys.exit(0 if any(r.get("block_token_counts") == [33, 33, 34] for r in records) else 1)
PY
expect 0 "$kvsim" import "$tmp/l.jsonl" "$tmp/l2.kvt"
same_facts "$tmp/l.kvt" "$tmp/l2.kvt"  # native -> jsonl -> native keeps every fact
expect 0 "$kvsim" inspect "$tmp/l2.kvt"
has "^tokens per id  *mean 34.12  min 31  max 39$" out

# Cache replay counts blocks (unbounded: 8 of 17 hit), tokens by each chunk's own size (276 of 580).
expect 0 "$kvsim" cache --trace="$lmbench" --policy=lru --capacity_blocks=100 --json
has '"hits": 8' out
has '"hit_tokens": 276' out
# --chain_hashes=false reaches cache replay too: content ids hit where their predecessor differs.
expect 0 "$kvsim" cache --trace="$lmbench" --policy=lru --capacity_blocks=100 --json --chain_hashes=false
hits=$(grep -o '"hits": [0-9]*' "$tmp/out" | head -1 | grep -o '[0-9]*$')
[ "${hits:-0}" -gt 8 ] || fail "unchained cache replay: hits ${hits:-none}, want more than the chained 8"
# Serving replay runs it.
expect 0 "$kvsim" replay --trace="$lmbench" --json
has '"finished_requests": 6' out

# A zero-token prompt is refused by import at its line (and no output is left), as replay would refuse it.
printf '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []}\n' >"$tmp/zero.jsonl"
expect 2 "$kvsim" import "$tmp/zero.jsonl" "$tmp/zero.kvt"
has "zero.jsonl:2: input_length: expected an integer in \[1, " err
[ ! -e "$tmp/zero.kvt" ] || fail "a failed import left $tmp/zero.kvt"
expect 2 "$kvsim" inspect "$tmp/zero.jsonl"
has "zero.jsonl:2: input_length" err
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,5,1\n2023-11-16 18:17:04.0,0,1\n' >"$tmp/zero.csv"
expect 2 "$kvsim" import "$tmp/zero.csv" "$tmp/zero.kvt"
has "zero.csv:3: ContextTokens" err
expect 2 "$kvsim" inspect "$lmbench" --trace_timestamp_unit=days
has "expected ns, us, ms or s" err

# Sampled MRC: an error_bound column beside the curve; exact curves have none.
expect 0 "$kvsim" mrc --trace="$mooncake" --sample_rate=0.1 --sizes=1000,8000
has "^policy,capacity_blocks,hit_ratio,token_hit_ratio,miss_ratio,token_miss_ratio,error_bound$" out
expect 0 "$kvsim" mrc --trace="$mooncake" --sizes=1000
has "^policy,capacity_blocks,hit_ratio,token_hit_ratio,miss_ratio,token_miss_ratio$" out
finish
