#!/usr/bin/env bash
# End-to-end checks of `kvsim cache`, `kvsim mrc` and `kvsim sweep` on the bundled Mooncake trace:
# cross-checks between the commands' independent code paths, determinism across thread counts and
# shards, resumption, and one-line errors with exit code 2.
set -u
kvsim="$1"
trace="$2"
source tests/cli_test_lib.sh

# The LRU hit ratio of a cache replay equals the one-pass curve's at the same size.
expect 0 "$kvsim" cache --trace="$trace" --policy=lru --capacity_blocks=1000,4000 --json
replay=$(grep -o '"hit_ratio": [0-9.e-]*' "$tmp/out" | cut -d' ' -f2 | tr '\n' ' ')
expect 0 "$kvsim" mrc --trace="$trace" --sizes=1000,4000
curve=$(tail -n +2 "$tmp/out" | cut -d, -f3 | tr '\n' ' ')
[ -n "$replay" ] && [ "$replay" = "$curve" ] || fail "cache replay '$replay' != mrc '$curve'"

# Writing results: CSV and JSON in --out.
expect 0 "$kvsim" cache --trace="$trace" --policy=belady,s3fifo+leaf_first --capacity_blocks=512 --out="$tmp/c"
[ "$(wc -l <"$tmp/c/cache.csv")" -eq 3 ] || fail "cache.csv should have a header and 2 rows"
grep -q '"policy": "s3fifo+leaf_first"' "$tmp/c/cache.json" || fail "cache.json lacks the wrapped policy"

# Sweeps: identical results for 1 and 2 threads, and for 2 shards merged; a rerun skips finished points.
grid="policy=lru,sieve,belady capacity_blocks=256:1024:x2 workload.max_requests=500"
expect 0 "$kvsim" sweep --trace="$trace" --grid="$grid" --threads=1 --out="$tmp/s1"
expect 0 "$kvsim" sweep --trace="$trace" --grid="$grid" --threads=2 --out="$tmp/s2"
cmp -s "$tmp/s1/results.csv" "$tmp/s2/results.csv" || fail "sweep results differ between 1 and 2 threads"
[ "$(wc -l <"$tmp/s1/results.csv")" -eq 10 ] || fail "sweep should have 9 rows: $(cat "$tmp/s1/results.csv")"
expect 0 "$kvsim" sweep --trace="$trace" --grid="$grid" --shard=0/2 --out="$tmp/a"
expect 0 "$kvsim" sweep --trace="$trace" --grid="$grid" --shard=1/2 --out="$tmp/b"
expect 0 "$kvsim" sweep merge "$tmp/a" "$tmp/b" --out="$tmp/m"
cmp -s "$tmp/s1/results.csv" "$tmp/m/results.csv" || fail "merged shards differ from the single run"
expect 0 "$kvsim" sweep --trace="$trace" --grid="$grid" --shard=1/2 --out="$tmp/b"
grep -q "(0 run, 4 already done)" "$tmp/out" || fail "rerun did not skip: $(cat "$tmp/out")"

# Errors: one line, exit 2, naming what is wrong.
expect 2 "$kvsim" cache --trace="$trace" --policy=nope --capacity_blocks=4
grep -q "unknown eviction policy 'nope'; known: 2q, arc" "$tmp/err" || fail "unknown policy: $(cat "$tmp/err")"
expect 2 "$kvsim" cache --trace="$trace" --capacity_blocks=4 --threads=5000
grep -q "threads=5000: must be in \[0, 1024\]" "$tmp/err" || fail "threads: $(cat "$tmp/err")"
expect 2 "$kvsim" sweep --trace="$trace" --grid="$grid" --threads=-1 --out="$tmp/t"
grep -q "threads=-1: must be in \[0, 1024\]" "$tmp/err" || fail "sweep threads: $(cat "$tmp/err")"
expect 2 "$kvsim" mrc --trace="$trace" --prefix --sample_rate=0.1
grep -q "prefix" "$tmp/err" || fail "prefix with sampling: $(cat "$tmp/err")"
expect 2 "$kvsim" sweep --trace="$trace" --grid="cache.nope=1 capacity_blocks=4" --out="$tmp/e"
grep -q "no field 'nope'" "$tmp/err" || fail "bad grid field: $(cat "$tmp/err")"
expect 2 "$kvsim" sweep --trace="$trace" --grid="mode=simulate capacity_blocks=4" --out="$tmp/r"
grep -q "mode 'simulate' is not available; available: cache, replay" "$tmp/err" || fail "unknown mode: $(cat "$tmp/err")"

# A replay point runs the serving simulator: its row has the serving summary.
expect 0 "$kvsim" sweep --trace="$trace" --grid="mode=replay capacity_blocks=600 workload.max_requests=200" \
  --out="$tmp/replay"
head -1 "$tmp/replay/results.csv" | grep -q "finished_requests" || fail "replay sweep columns: $(head -1 "$tmp/replay/results.csv")"
grep -q ",200," "$tmp/replay/results.csv" || fail "replay sweep row: $(tail -1 "$tmp/replay/results.csv")"
# Preset axes take effect: each point is resolved after the grid is applied (the defaults' model and device
# fields filled in first made every row the same). H100 (80 GB) and H200 (141 GB) hold different KV capacities.
expect 0 "$kvsim" sweep --trace="$trace" --mode=replay --grid="device_preset=h100-sxm,h200 model_preset=llama-3.1-8b,qwen2.5-7b workload.max_requests=20" \
  --out="$tmp/presets"
python3 - "$tmp/presets/results.csv" <<'PY' || fail "preset sweep capacities: $(cat "$tmp/presets/results.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
caps = {(r["axis.device_preset"], r["axis.model_preset"]): int(r["gpu_capacity_blocks"]) for r in rows}
assert len(caps) == 4 and len(set(caps.values())) == 4, caps
assert caps[("h200", "llama-3.1-8b")] > caps[("h100-sxm", "llama-3.1-8b")], caps
PY

# Every sweep table loads with unique column names (pandas would rename a repeat `policy.1`) and its JSON
# holds every column once, missing numbers as null.
for d in "$tmp/replay" "$tmp/m" "$tmp/presets"; do
  python3 - "$d/results.csv" "$d/results.json" <<'PY' || fail "sweep table $d: unique columns and JSON fields"
import csv, json, sys
header = next(csv.reader(open(sys.argv[1])))
assert len(header) == len(set(header)), [c for c in header if header.count(c) > 1]
rows = json.load(open(sys.argv[2]))
assert all(list(r) == header for r in rows), "JSON keys differ from the CSV header"
assert all(v != "" for r in rows for k, v in r.items() if not k.startswith("axis.") and k not in ("mode", "policy")), rows[0]
PY
done

finish
