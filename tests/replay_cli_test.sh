#!/usr/bin/env bash
# `kvsim replay` end to end: the bundled Mooncake trace with the default config (Llama-3.1-8B on H200,
# prefix reuse, LRU, the fitted cost model), its files, and its errors (exit code 2, one line naming the problem).
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
# The default cost model on H200 (a fitted preset) is the fitted one: its line gives the held-out error of the
# kinds this run used, weighted by their time.
grep -q "cost model *fitted (H200-SXM" "$tmp/stdout" || fail "default cost model is not the fitted one: $(cat "$tmp/stdout")"
grep -q "cost model error .*held-out median [0-9.]*%, p95 [0-9.]*% weighted by this run's kernel time (gemm" \
  "$tmp/stdout" || fail "fitted accuracy line: $(cat "$tmp/stdout")"
grep -q '"cost_model": "fitted' "$tmp/out/summary.json" || fail "summary.json does not name the fitted model"
# The roofline, asked for, is not calibrated and cites its own error against this GPU's measurements.
printf 'cost_model { kind: COST_MODEL_KIND_ROOFLINE }\n' > "$tmp/roofline.textproto"
"$kvsim" replay --config="$tmp/roofline.textproto" --trace="$trace" --out="$tmp/roofline_out" >"$tmp/roofline_stdout" 2>&1
[ $? -eq 0 ] || fail "roofline replay: $(cat "$tmp/roofline_stdout")"
grep -q "not calibrated (analytic roofline); its held-out error against this GPU's measurements, median/p95: gemm" \
  "$tmp/roofline_stdout" || fail "roofline accuracy line lacks its measured error: $(cat "$tmp/roofline_stdout")"
# A datasheet-only GPU (L40S) keeps the roofline by default and says that no measurements of it are bundled.
printf 'device_preset: "l40s"\n' > "$tmp/l40s.textproto"
"$kvsim" replay --config="$tmp/l40s.textproto" --trace="$trace" --out="$tmp/l40s_out" >"$tmp/l40s_stdout" 2>&1
[ $? -eq 0 ] || fail "L40S replay: $(cat "$tmp/l40s_stdout")"
grep -q "cost model *roofline" "$tmp/l40s_stdout" || fail "L40S default cost model: $(cat "$tmp/l40s_stdout")"
grep -q "cost model error *not calibrated (analytic roofline: no measurements of this GPU are bundled" \
  "$tmp/l40s_stdout" || fail "L40S accuracy line: $(cat "$tmp/l40s_stdout")"
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
# --vllm_json changes no other file but results.pb, which then also holds every token gap
# (tests/replay_trace_test.cc compares results.pb written as the run goes and from the results in memory).
"$kvsim" replay --trace="$trace" --out="$tmp/in_memory" --vllm_json="$tmp/in_memory.json" >/dev/null 2>&1 ||
  fail "replay --vllm_json --out failed"
for f in summary.json requests.csv timeseries.csv; do
  cmp -s "$tmp/again/$f" "$tmp/in_memory/$f" || fail "$f streamed differs from $f written from memory"
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
# refuse it the same way (exit 2, naming the field and its line), instead of failing a check mid-run.
printf 'eviction { name: "belady" }\n' > "$tmp/belady.textproto"
for cmd in "replay --trace=$trace" config; do
  "$kvsim" $cmd --config="$tmp/belady.textproto" >/dev/null 2>"$tmp/belady_err"
  [ $? -eq 2 ] || fail "$cmd with belady should exit 2: $(cat "$tmp/belady_err")"
  grep -q "belady.textproto:1:12: field eviction.name: 'belady' needs each block's next access" "$tmp/belady_err" || \
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


# timeline.json is JSON; its counter tracks change value at every event (written on change only); the
# uncapped run reports nothing dropped.
python3 - "$tmp/out" <<'PY' || fail "timeline.json of the full run"
import json, sys
events = json.load(open(sys.argv[1] + "/timeline.json"))["traceEvents"]
run = json.load(open(sys.argv[1] + "/summary.json"))["run"]
assert run["timeline_dropped_events"] == 0 and run["timeline_truncated_at_ns"] is None, run
last = {}
counters = [e for e in events if e["ph"] == "C"]
assert {e["name"] for e in counters} == {"GPU KV blocks used", "requests waiting", "batch size"}, counters[:3]
for e in counters:
    (value,) = e["args"].values()
    assert last.get((e["pid"], e["name"])) != value, e
    last[(e["pid"], e["name"])] = value
PY

# The event cap: a run capped at the K-th event (K chosen at an iteration of the full run, whose engine time
# is its ts) keeps the full run's first K events and reports the rest as dropped, with that iteration's time.
cap="$(python3 - "$tmp/out/timeline.json" <<'PY'
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] != "M"]
k = next(k for k in range(1000, len(events)) if events[k]["name"] == "iteration")
print(k, len(events) - k, round(events[k]["ts"] * 1000))
PY
)" || fail "choosing the cap"
read -r cap_events want_dropped want_at_ns <<<"$cap"
"$kvsim" replay --trace="$trace" --out="$tmp/capped" --replay_timeline --replay_timeline_max_events="$cap_events" \
  >/dev/null 2>"$tmp/capped_err" || fail "capped replay: $(cat "$tmp/capped_err")"
grep -q "warning: .*timeline.json stops at simulated time [0-9.]* s: $want_dropped events over --timeline_max_events=$cap_events were dropped" \
  "$tmp/capped_err" || fail "cap warning (want $want_dropped dropped): $(cat "$tmp/capped_err")"
python3 - "$tmp/out" "$tmp/capped" "$cap_events" "$want_dropped" "$want_at_ns" <<'PY' || fail "capped timeline"
import json, sys
full_dir, capped_dir, k, dropped, at_ns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
full = [e for e in json.load(open(full_dir + "/timeline.json"))["traceEvents"] if e["ph"] != "M"]
capped = json.load(open(capped_dir + "/timeline.json"))["traceEvents"]
assert [e for e in capped if e["ph"] != "M"] == full[:k]
run = json.load(open(capped_dir + "/summary.json"))["run"]
assert run["timeline_dropped_events"] == dropped, (run["timeline_dropped_events"], dropped)
assert run["timeline_truncated_at_ns"] == at_ns, (run["timeline_truncated_at_ns"], at_ns)
PY

# --replay_timeline_window keeps exactly the events overlapping it (brute force over the full run); a
# request slice overlapping it is kept whole.
"$kvsim" replay --trace="$trace" --out="$tmp/window" --replay_timeline --replay_timeline_window=100:200.5 \
  >/dev/null 2>"$tmp/window_err" || fail "windowed replay: $(cat "$tmp/window_err")"
python3 - "$tmp/out/timeline.json" "$tmp/window/timeline.json" <<'PY' || fail "windowed timeline"
import json, sys
full = json.load(open(sys.argv[1]))["traceEvents"]
window = json.load(open(sys.argv[2]))["traceEvents"]
lo, hi = 100e6, 200.5e6  # microseconds
def kept(events):
    return [(e["ts"], e["dur"]) for e in events if e["ph"] == "X" and e["name"] == "iteration"]
want = [(ts, dur) for ts, dur in kept(full) if ts < hi and ts + dur > lo]
assert want and kept(window) == want, (len(want), len(kept(window)))
ends = {e["id"]: e["ts"] for e in full if e["ph"] == "e"}
want_requests = sorted(e["id"] for e in full if e["ph"] == "b" and e["ts"] < hi and ends[e["id"]] >= lo)
assert sorted(e["id"] for e in window if e["ph"] == "b") == want_requests
# Instants and counters inside, or at the start of a kept iteration they belong to.
starts = {ts for ts, _ in want}
assert all(lo <= e["ts"] < hi or e["ts"] in starts for e in window if e["ph"] in ("C", "i")), "event outside"
PY
"$kvsim" replay --trace="$trace" --out="$tmp/bad_window" --replay_timeline_window=1:2 >/dev/null 2>"$tmp/bad_window_err"
[ $? -eq 2 ] || fail "--replay_timeline_window without --replay_timeline should exit 2"
grep -q -- "--timeline_window .*needs --timeline" "$tmp/bad_window_err" || \
  fail "window without timeline message: $(cat "$tmp/bad_window_err")"
for bad in abc 5 20:10 -1: 1:2:3 :x 10:10; do
  "$kvsim" replay --trace="$trace" --out="$tmp/bad_window" --replay_timeline --replay_timeline_window="$bad" \
    >/dev/null 2>"$tmp/bad_window_err"
  [ $? -eq 2 ] || fail "--replay_timeline_window=$bad should exit 2"
  grep -q -- "--timeline_window: '$bad'.*expected START:END in seconds" "$tmp/bad_window_err" || \
    fail "--replay_timeline_window=$bad message: $(cat "$tmp/bad_window_err")"
done

# Transfer events carry their bytes and direction: per direction they add up to the host tier's blocks
# loaded (reloads, swap-ins) and offloaded (demotions, swap-outs) times the block size.
cat > "$tmp/tier.textproto" <<'EOF'
cache {
  gpu_capacity_tokens: 200000
  lower_tiers { kind: TIER_KIND_HOST capacity_bytes: 20000000000 latency_ns: 10000 }
  gpu_evict_action: EVICT_ACTION_DEMOTE
  restore_rule: RESTORE_RULE_RELOAD
}
scheduler { preemption: PREEMPTION_MODE_SWAP }
workload { max_requests: 400 }
EOF
"$kvsim" replay --config="$tmp/tier.textproto" --trace="$trace" --out="$tmp/tier" --replay_timeline \
  >/dev/null 2>"$tmp/tier_err" || fail "tier replay: $(cat "$tmp/tier_err")"
python3 - "$tmp/tier" <<'PY' || fail "transfer events"
import json, sys
events = json.load(open(sys.argv[1] + "/timeline.json"))["traceEvents"]
summary = json.load(open(sys.argv[1] + "/summary.json"))
host = summary["summary"]["tiers"][1]
block = summary["run"]["block_bytes"]
transfers = [e["args"] for e in events if e["name"] == "transfer"]
load = sum(a["load_bytes"] for a in transfers)
offload = sum(a["offload_bytes"] for a in transfers)
assert load == (host["reloaded_blocks"] + host["swapped_in_blocks"]) * block > 0, (load, host)
assert offload == (host["demoted_in_blocks"] + host["swapped_out_blocks"]) * block > 0, (offload, host)
for a in transfers:
    assert a["tier"] == "host" and a["bytes"] == a["load_bytes"] + a["offload_bytes"], a
    want = "load+offload" if a["load_bytes"] and a["offload_bytes"] else ("load" if a["load_bytes"] else "offload")
    assert a["direction"] == want, a
PY
finish
