#!/usr/bin/env bash
# `kvsim replay` end to end: the bundled Mooncake trace with the default config (Llama-3.1-8B on H200,
# prefix reuse, LRU, roofline), its files, and its errors (exit code 2, one line naming the problem).
set -u
kvsim="$1"
trace="$2"
table="$3"
source tests/cli_test_lib.sh

"$kvsim" replay --trace="$trace" --out="$tmp/out" --timeline >"$tmp/stdout" 2>"$tmp/stderr"
[ $? -eq 0 ] || fail "replay exited non-zero: $(cat "$tmp/stderr")"
grep -q "requests finished *3993 of 3993 (0 rejected)" "$tmp/stdout" || fail "summary table: $(cat "$tmp/stdout")"
for f in results.pb summary.json requests.csv timeseries.csv timeline.json; do
  [ -s "$tmp/out/$f" ] || fail "missing $f"
done
grep -q "cost model error *not calibrated" "$tmp/stdout" || fail "roofline accuracy line: $(cat "$tmp/stdout")"
grep -q "not calibrated (analytic roofline); its held-out error against this GPU's measurements, median/p95: gemm" \
  "$tmp/stdout" || fail "roofline accuracy line lacks its measured error: $(cat "$tmp/stdout")"
# A table cost model reports its held-out error and this run's extrapolations next to the results.
printf 'cost_model { kind: COST_MODEL_KIND_TABLE table_path: "%s" }\n' "$table" > "$tmp/table.textproto"
"$kvsim" replay --config="$tmp/table.textproto" --trace="$trace" --out="$tmp/table_out" >"$tmp/table_stdout" 2>&1
[ $? -eq 0 ] || fail "table replay: $(cat "$tmp/table_stdout")"
grep -q "cost model error *held-out median [0-9.]*%, p95 [0-9.]*%, worst [0-9.]*% over [1-9][0-9]* synthetic" \
  "$tmp/table_stdout" || fail "table accuracy line: $(cat "$tmp/table_stdout")"
grep -q '"calibrated": true' "$tmp/table_out/summary.json" || fail "summary.json lacks the cost model accuracy"
# One CSV row per request, plus the header.
[ "$(wc -l < "$tmp/out/requests.csv")" -eq 3994 ] || fail "requests.csv rows: $(wc -l < "$tmp/out/requests.csv")"
grep -q '"finished_requests": 3993,' "$tmp/out/summary.json" || fail "summary.json: $(head -c 400 "$tmp/out/summary.json")"
ls "$tmp/out" | grep -q '\.tmp\.' && fail "temporary files left in the output directory"

# Same inputs, same bytes.
"$kvsim" replay --trace="$trace" --out="$tmp/again" >/dev/null 2>&1
for f in results.pb summary.json requests.csv timeseries.csv; do
  cmp -s "$tmp/out/$f" "$tmp/again/$f" || fail "$f differs between two runs"
done

"$kvsim" replay --out="$tmp/x" >/dev/null 2>"$tmp/stderr"
[ $? -eq 2 ] || fail "missing --trace should exit 2"
grep -q -- "--trace is required" "$tmp/stderr" || fail "missing --trace message: $(cat "$tmp/stderr")"

"$kvsim" replay --trace="$tmp/nope.jsonl" >/dev/null 2>"$tmp/stderr"
[ $? -eq 2 ] || fail "missing trace file should exit 2"
[ "$(wc -l < "$tmp/stderr")" -eq 1 ] || fail "error is not one line: $(cat "$tmp/stderr")"

printf 'scheduler { preemption: PREEMPTION_MODE_SWAP }\n' > "$tmp/swap.textproto"
"$kvsim" replay --config="$tmp/swap.textproto" --trace="$trace" >/dev/null 2>"$tmp/stderr"
[ $? -eq 2 ] || fail "swap without a host tier should exit 2"
grep -q "needs a host tier" "$tmp/stderr" || fail "swap message: $(cat "$tmp/stderr")"

# Belady needs the future accesses, which only cache replay knows: the serving replay and `kvsim config`
# refuse it the same way (exit 2, naming the field), instead of failing a check mid-run.
printf 'eviction { name: "belady" }\n' > "$tmp/belady.textproto"
for cmd in "replay --trace=$trace" config; do
  "$kvsim" $cmd --config="$tmp/belady.textproto" >/dev/null 2>"$tmp/belady_err"
  [ $? -eq 2 ] || fail "$cmd with belady should exit 2: $(cat "$tmp/belady_err")"
  grep -q "eviction.name: 'belady' needs each block's next access" "$tmp/belady_err" || \
    fail "$cmd belady message: $(cat "$tmp/belady_err")"
done

# The run records the whole policy stack, not only its base policy.
printf 'eviction { name: "lru" ttl_pin {} }\nworkload { max_requests: 50 }\n' > "$tmp/ttl.textproto"
"$kvsim" replay --config="$tmp/ttl.textproto" --trace="$trace" --out="$tmp/ttl_out" >/dev/null 2>"$tmp/ttl_err"
[ $? -eq 0 ] || fail "replay lru+ttl: $(cat "$tmp/ttl_err")"
grep -q '"eviction_policy": "lru+ttl"' "$tmp/ttl_out/summary.json" || \
  fail "run.eviction_policy: $(grep -o '"eviction_policy": "[^"]*"' "$tmp/ttl_out/summary.json")"

# vLLM benchmark_serving's key names, numbers as numbers; no SLO set: goodput null.
"$kvsim" replay --config="$tmp/ttl.textproto" --trace="$trace" --vllm_json="$tmp/vllm.json" --percentiles=50,99.9 \
  --warmup_requests=10 >/dev/null 2>"$tmp/vllm_err" || fail "replay --vllm_json: $(cat "$tmp/vllm_err")"
python3 - "$tmp/vllm.json" <<'PY' || fail "vllm.json: $(cat "$tmp/vllm.json")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["completed"] == 40 and m["warmup_excluded"] == 10, m
for k in ["duration", "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput",
          "total_token_throughput", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms",
          "p99.9_ttft_ms", "mean_tpot_ms", "p99.9_tpot_ms", "mean_itl_ms", "mean_e2el_ms", "p99.9_e2el_ms"]:
    assert isinstance(m[k], (int, float)), k
assert m["request_goodput"] is None
PY

finish
