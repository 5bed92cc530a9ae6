#!/usr/bin/env bash
# `kvsim replay` with per-request KV configurations: every request at the replica's own format gives the
# plain replay's results; the selections of `kvsim select` drive a replay; bad input is refused with exit
# code 2 naming the file, line and column (or the request).
set -u
kvsim=$1
source "$(dirname "$0")/cli_test_lib.sh"

# Six requests (Azure CSV; request ids 0..5 in file order), no shared blocks.
trace="$tmp/t.csv"
echo "TIMESTAMP,ContextTokens,GeneratedTokens" >"$trace"
for i in 0 1 2 3 4 5; do
  echo "2023-11-16 18:00:0$i.0000000,$((1000 + 500 * i)),20" >>"$trace"
done

# Per-request KV formats are priced by the roofline, which is these runs' cost model where the config sets
# none (the plain replay's default on H200 is the fitted model): the plain reference names it.
echo 'cost_model { kind: COST_MODEL_KIND_ROOFLINE }' >"$tmp/roofline.textproto"
expect 0 "$kvsim" replay --trace="$trace" --json --config="$tmp/roofline.textproto"
cp "$tmp/out" "$tmp/plain.json"
# fp16 is the default model's KV format (bf16: same bytes, same kernels): the same run.
expect 0 "$kvsim" replay --trace="$trace" --json --kv_config=fp16
python3 - "$tmp/plain.json" "$tmp/out" <<'PY' || fail "--kv_config=fp16 changed the summary"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a["summary"] == b["summary"] else 1)
PY

# A selection file: a mix of formats and budgets; the 2-bit requests decode faster than at fp16.
printf 'request_id,config\n0,fp16\n1,kvquant-2b-1%%\n2,h2o-25%%\n3,rocketkv-256\n4,kvquant-4b\n5,fp16\n' >"$tmp/sel.csv"
expect 0 "$kvsim" replay --trace="$trace" --json --kv_configs="$tmp/sel.csv" --out="$tmp/mixed"
json_is out "j['summary']['finished_requests'] == 6"
# All at KVQuant 2-bit: every decode reads about a sixth of the fp16 bytes, so the mean TPOT is lower.
expect 0 "$kvsim" replay --trace="$trace" --json --kv_config=kvquant-2b-1%
python3 - "$tmp/plain.json" "$tmp/out" <<'PY' || fail "2-bit KV did not lower the mean TPOT"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if b["summary"]["tpot_ms"]["mean"] < a["summary"]["tpot_ms"]["mean"] else 1)
PY

# Refusals.
expect 2 "$kvsim" replay --trace="$trace" --kv_config=fp4
has "--kv_config: unknown configuration 'fp4'" err
printf 'request_id,config\n0,fp16\n1,fp4\n' >"$tmp/bad.csv"
expect 2 "$kvsim" replay --trace="$trace" --kv_configs="$tmp/bad.csv"
has "$tmp/bad.csv:3:2 (config): unknown configuration 'fp4'" err
printf 'request_id,config\n0,fp16\n0,fp16\n' >"$tmp/dup.csv"
expect 2 "$kvsim" replay --trace="$trace" --kv_configs="$tmp/dup.csv"
has "$tmp/dup.csv:3:1 (request_id): request 0 repeated (first at line 2)" err
printf 'request_id,config\n0,fp16\n' >"$tmp/short.csv"
expect 2 "$kvsim" replay --trace="$trace" --kv_configs="$tmp/short.csv"
has "request 1: no row for it in $tmp/short.csv" err
expect 2 "$kvsim" replay --trace="$trace" --kv_configs="$tmp/sel.csv" --kv_config=fp16
has "exclude each other" err
expect 2 "$kvsim" replay --trace="$trace" --configs="$tmp/sel.csv"
has "--configs names the candidates of --kv_configs or --kv_config" err
finish
