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

# Miss ratios beside hit ratios: misses / accesses, counted from the row's own hits and accesses; the console
# table rounds ratios to 4 significant digits, the JSON keeps every digit.
expect 0 "$kvsim" cache --trace="$trace" --policy=lru,fifo --capacity=1000 --json
python3 - "$tmp/out" <<'PY' || fail "miss ratios: $(cat "$tmp/out")"
import json, sys
rows = json.load(open(sys.argv[1]))
for r in rows:
    assert abs(r["miss_ratio"] - (r["accesses"] - r["hits"]) / r["accesses"]) < 1e-12, r
    assert abs(r["token_miss_ratio"] - (r["tokens"] - r["hit_tokens"]) / r["tokens"]) < 1e-12, r
    assert 0 < r["miss_ratio"] < 1, r
PY
json_rows="$tmp/miss.json"; cp "$tmp/out" "$json_rows"
expect 0 "$kvsim" cache --trace="$trace" --policy=lru,fifo --capacity=1000
python3 - "$tmp/out" "$json_rows" <<'PY' || fail "table precision: $(cat "$tmp/out")"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
header = lines[0].split()
rows = json.load(open(sys.argv[2]))
for line, r in zip(lines[1:], rows):
    cells = dict(zip(header, line.split()))
    for col in ("hit_ratio", "miss_ratio", "token_hit_ratio", "token_miss_ratio"):
        assert cells[col] == "%.4g" % r[col], (col, cells[col], r[col])
    assert cells["hits"] == str(r["hits"]), cells
PY
expect 0 "$kvsim" mrc --trace="$trace" --sizes=1000
python3 - "$tmp/out" <<'PY' || fail "mrc miss ratios: $(cat "$tmp/out")"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    assert abs(float(r["miss_ratio"]) + float(r["hit_ratio"]) - 1) < 1e-12, r
    assert abs(float(r["token_miss_ratio"]) + float(r["token_hit_ratio"]) - 1) < 1e-12, r
PY

# Capacities as users think of them. The default config's Llama-3.1-8B holds 131,072 KV bytes per token at
# bf16, so a 512-token Mooncake block is 64 MiB: 640MiB is 10 blocks, 1GB (10^9 bytes) 14.9 -> 14.
expect 0 "$kvsim" cache --trace="$trace" --policy=lru --capacity=640MiB,1GB,10 --json
python3 - "$tmp/out" <<'PY' || fail "byte capacities: $(cat "$tmp/out")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["capacity_blocks"] for r in rows] == [10, 14, 10], rows
assert rows[0]["hit_ratio"] == rows[2]["hit_ratio"], rows
PY
# 10% of the trace's distinct blocks, counted here from its hash_ids, rounded down.
expected=$(python3 -c 'import json, sys; print(len({h for l in open(sys.argv[1]) for h in json.loads(l)["hash_ids"]}) // 10)' "$trace")
expect 0 "$kvsim" cache --trace="$trace" --policy=LRU --capacity=10% --json
grep -q "\"capacity_blocks\": $expected," "$tmp/out" || fail "10% should be $expected blocks: $(cat "$tmp/out")"
grep -q '"policy": "lru"' "$tmp/out" || fail "LRU should read as lru: $(cat "$tmp/out")"
expect 0 "$kvsim" mrc --trace="$trace" --sizes=1GiB,10%
[ "$(cut -d, -f2 "$tmp/out" | tr '\n' ' ')" = "capacity_blocks 16 $expected " ] || fail "mrc sizes: $(cat "$tmp/out")"
# A sweep's capacity axis takes the same forms, resolved to blocks before the points run: the same counts
# as above and, at 640MiB = 10 blocks, the same hit ratio as 10 blocks.
expect 0 "$kvsim" sweep --trace="$trace" --grid="policy=lru capacity_blocks=640MiB,10%,10" --out="$tmp/units"
python3 - "$tmp/units/results.csv" "$expected" <<'PY' || fail "sweep capacities: $(cat "$tmp/units/results.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["axis.capacity_blocks"] for r in rows] == ["10", sys.argv[2], "10"], rows
assert [int(r["capacity_blocks"]) for r in rows] == [10, int(sys.argv[2]), 10], rows
assert rows[0]["hit_ratio"] == rows[2]["hit_ratio"], rows
PY
expect 2 "$kvsim" sweep --trace="$trace" --grid="capacity_blocks=40GiB model_preset=llama-3.1-8b,qwen2.5-7b" \
  --out="$tmp/units2"
grep -q "grid axis 'capacity_blocks': bytes or a share of the trace's blocks depend on 'model_preset'" "$tmp/err" ||
  fail "sweep bytes with a model axis: $(cat "$tmp/err")"
expect 2 "$kvsim" sweep --trace="$trace" --grid="capacity_blocks=10,5XB" --out="$tmp/units3"
grep -q "grid axis 'capacity_blocks': '5XB': unknown unit 'XB'" "$tmp/err" || fail "sweep unit: $(cat "$tmp/err")"
expect 2 "$kvsim" cache --trace="$trace" --capacity=10,101%
grep -q "kvsim cache: --capacity: '101%': a share must be in (0%, 100%\]" "$tmp/err" || fail "101%: $(cat "$tmp/err")"
expect 2 "$kvsim" cache --trace="$trace" --capacity=1MiB
grep -q "'1MiB' is 1048576 bytes, less than one KV block of 67108864 bytes" "$tmp/err" || fail "1MiB: $(cat "$tmp/err")"
expect 2 "$kvsim" mrc --trace="$trace" --sizes=4GiBs
grep -q "kvsim mrc: --sizes: '4GiBs': unknown unit 'GiBs'" "$tmp/err" || fail "unit: $(cat "$tmp/err")"
expect 0 "$kvsim" help cache
grep -q "^  --capacity  .*also --capacity_blocks)" "$tmp/out" || fail "help cache: $(cat "$tmp/out")"

# Bounded memory: a limit that holds one point at a time runs each point in its own pass over the trace,
# with the same CSV and JSON as one pass. The limit is the estimate of the largest point
# (sim/cache/cache_batches.h): 64 MiB for the pass + 4096 + 1200 blocks x 136 bytes = 67276160 (the trace has
# 43,924 distinct blocks, more than any capacity here); any two points need more.
points="--policy=lru,fifo,sieve,clock --capacity=1000,1100,1200"
expect 0 "$kvsim" cache --trace="$trace" $points --out="$tmp/one"
[ ! -s "$tmp/err" ] || fail "one pass should say nothing: $(cat "$tmp/err")"
expect 0 "$kvsim" cache --trace="$trace" $points --memory_limit=67276160 --out="$tmp/many"
has "12 points in 12 passes over the trace" err
cmp -s "$tmp/one/cache.csv" "$tmp/many/cache.csv" || fail "cache.csv differs with one point per pass"
cmp -s "$tmp/one/cache.json" "$tmp/many/cache.json" || fail "cache.json differs with one point per pass"
expect 2 "$kvsim" cache --trace="$trace" $points --memory_limit=67276159
has "run lru @ 1200 needs an estimated 64.2 MiB" err
has "raise --memory_limit or lower the capacity" err
expect 2 "$kvsim" cache --trace="$trace" $points --memory_limit=4GB/s
has "memory_limit: '4GB/s': expected bytes" err
# mrc of other policies batches the same way.
expect 0 "$kvsim" mrc --trace="$trace" --policy=fifo,sieve --sizes=1000,1100 --json
cp "$tmp/out" "$tmp/mrc_one.json"
expect 0 "$kvsim" mrc --trace="$trace" --policy=fifo,sieve --sizes=1000,1100 --json --memory_limit=64.2MiB
has "4 points in 4 passes over the trace" err
cmp -s "$tmp/mrc_one.json" "$tmp/out" || fail "mrc JSON differs with one point per pass"

# The one-pass LRU curve within --memory_limit: 64.9 MiB (the 64 MiB pass overhead and 2,048 tracked blocks)
# is too small for the exact curve, so a rate is chosen (said on stderr, all its digits), and the curve is that
# of a run given the same rate; a given rate or an exact curve (--sample_rate=1, --prefix) over the limit is refused.
expect 0 "$kvsim" mrc --trace="$trace" --sizes=1000,4000 --memory_limit=64.9MiB
grep -q "error_bound" "$tmp/out" || fail "chosen rate: no error_bound column: $(cat "$tmp/out")"
cp "$tmp/out" "$tmp/mrc_chosen.csv"
rate=$(sed -n 's/.*sample rate \([0-9.e-]*\) chosen.*/\1/p' "$tmp/err")
[ -n "$rate" ] || fail "no chosen rate on stderr: $(cat "$tmp/err")"
expect 0 "$kvsim" mrc --trace="$trace" --sizes=1000,4000 --sample_rate="$rate"
cmp -s "$tmp/mrc_chosen.csv" "$tmp/out" || fail "chosen rate $rate differs from --sample_rate=$rate"
expect 2 "$kvsim" mrc --trace="$trace" --sample_rate=1 --memory_limit=64.9MiB
grep -q "raise --memory_limit to at least" "$tmp/err" || fail "exact over the limit: $(cat "$tmp/err")"
expect 2 "$kvsim" mrc --trace="$trace" --prefix --memory_limit=65.5MiB  # its minimum is 65.4 MiB
grep -q "(--prefix).*raise --memory_limit" "$tmp/err" || fail "prefix over the limit: $(cat "$tmp/err")"
expect 2 "$kvsim" mrc --trace="$trace" --sample_rate=0.9 --memory_limit=64.9MiB
grep -q "sample_rate=0.9 would track.*or less" "$tmp/err" || fail "rate over the limit: $(cat "$tmp/err")"

finish
