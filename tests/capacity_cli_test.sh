#!/usr/bin/env bash
# End-to-end checks of `kvsim capacity`: the search prints its path and answer, writes CSV and JSON, gives
# byte-identical results for any thread count; the grid mode names the cheapest point; bad SLOs exit 2.
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
