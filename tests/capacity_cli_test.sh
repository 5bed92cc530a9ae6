#!/usr/bin/env bash
# End-to-end checks of `kvsim capacity`: the search prints its path and answer, writes CSV and JSON, gives
# byte-identical results for any thread count and any number of shards, resumes a killed search; the grid
# mode names the cheapest point; bad SLOs exit 2.
set -u
kvsim="$1"
source tests/cli_test_lib.sh

printf 'workload { max_requests: 200 }\n' >"$tmp/c.textproto"
trace=traces/data/azure_code_2023.csv
expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="ttft_ms:P99<=2000,tpot_ms:P99<=100" \
  --out="$tmp/a" --threads=1
has "highest rate meeting the SLOs: " out
has "^bracket " out
has "^bisect " out
[ -s "$tmp/a/capacity_path.csv" ] || fail "no capacity_path.csv"
grep -q '"max_rate_per_s": ' "$tmp/a/capacity.json" || fail "capacity.json: $(head -c 300 "$tmp/a/capacity.json")"
cp "$tmp/out" "$tmp/out1"
expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="ttft_ms:P99<=2000,tpot_ms:P99<=100" \
  --out="$tmp/b" --threads=2
sed "s|$tmp/a|X|" "$tmp/out1" >"$tmp/o1"
sed "s|$tmp/b|X|" "$tmp/out" >"$tmp/o2"
cmp -s "$tmp/o1" "$tmp/o2" || fail "stdout differs between 1 and 2 threads"
cmp -s "$tmp/a/capacity.json" "$tmp/b/capacity.json" || fail "capacity.json differs between 1 and 2 threads"

# Sharded like sweep: two shards take turns in one directory, each stopping where the other's rates are
# missing, until one completes the search; the answer is the unsharded one, byte for byte.
slo="ttft_ms:P99<=2000,tpot_ms:P99<=100"
for turn in $(seq 0 40); do
  expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="$slo" --out="$tmp/s" \
    --shard=$((turn % 2))/2
  grep -q "highest rate meeting the SLOs: " "$tmp/out" && break
  has "the next round needs rates of other shards not yet in $tmp/s/points" out
  [ ! -e "$tmp/s/capacity.json" ] || fail "an incomplete shard wrote capacity.json"
done
[ "$turn" -ge 2 ] || fail "the sharded search finished after $turn turns; every round needs both shards"
cmp -s "$tmp/a/capacity.json" "$tmp/s/capacity.json" || fail "capacity.json differs between 1 and 2 shards"
cmp -s "$tmp/a/capacity_path.csv" "$tmp/s/capacity_path.csv" || fail "capacity_path.csv differs with 2 shards"
# Resumable: a rerun replays nothing and gives the same answer; so does one shard with every rate present.
expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="$slo" --out="$tmp/s" --shard=1/2
has "shard 1/2: 0 rates replayed, " out
expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="$slo" --out="$tmp/s"
has "shard 0/1: 0 rates replayed, " out
cmp -s "$tmp/a/capacity.json" "$tmp/s/capacity.json" || fail "capacity.json differs after resuming"
# A search killed part-way resumes where it stopped: with three stored outcomes removed, a rerun replays
# exactly those three.
ls "$tmp/s/points" | tail -n 3 | while read -r f; do rm "$tmp/s/points/$f"; done
expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="$slo" --out="$tmp/s"
has "shard 0/1: 3 rates replayed, " out
cmp -s "$tmp/a/capacity.json" "$tmp/s/capacity.json" || fail "capacity.json differs after a partial rerun"
# Another SLO list in the same directory replays (its stored outcomes are of another search).
expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="ttft_ms:P99<=1000" --out="$tmp/s"
has "rates replayed, 0 read" out
# Concurrent shards wait for each other with --shard_wait_s.
for i in 0 1 2; do
  "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="$slo" --out="$tmp/w" --shard=$i/3 \
    --shard_wait_s=120 --threads=1 >"$tmp/w$i.out" 2>"$tmp/w$i.err" &
done
wait
for i in 0 1 2; do
  grep -q "highest rate meeting the SLOs: " "$tmp/w$i.out" || fail "waiting shard $i: $(cat "$tmp/w$i.out" "$tmp/w$i.err")"
done
cmp -s "$tmp/a/capacity.json" "$tmp/w/capacity.json" || fail "capacity.json differs with 3 concurrent shards"
expect 2 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="$slo" --shard=0/2
has "a sharded search needs a shared output directory (--out)" err
expect 2 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="$slo" --shard=2/2 --out="$tmp/x"
has "shard" err

expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="ttft_ms:P99<=2000" \
  --grid="cluster.num_replicas=1,2" --target_rate=2 --out="$tmp/g"
has "cheapest meeting the SLOs: point " out
[ -s "$tmp/g/capacity_grid.csv" ] || fail "no capacity_grid.csv"
expect 0 "$kvsim" capacity --config="$tmp/c.textproto" --trace="$trace" --slo="ttft_ms:P99<=2000" \
  --grid="cluster.num_replicas=1,2" --target_rate=2 --out="$tmp/g"
has "(0 run, 2 already done)" out

expect 2 "$kvsim" capacity --trace="$trace" --slo="ttft_ms:P98<=5"
has "--slo: 'ttft_ms:P98<=5': expected METRIC:STAT<=LIMIT" err
finish
