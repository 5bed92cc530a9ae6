#!/usr/bin/env bash
# The published end-to-end vLLM reference points (cost_models/data/published/points.csv), replayed with
# the fitted cost model: every point is printed next to its published figure, and the decode-time points
# (TPOT) land within the 10% goal. The concurrency-8 throughput point misses it (see the README there);
# it is checked to be printed, not to pass.
set -u
kvsim="$1"
script="$2"
source tests/cli_test_lib.sh

"$script" "$kvsim" >"$tmp/stdout" 2>"$tmp/stderr" || fail "published_points.sh failed: $(cat "$tmp/stderr")"
cat "$tmp/stdout"
[ "$(grep -c '_conc' "$tmp/stdout")" -eq 4 ] || fail "expected 4 reference points: $(cat "$tmp/stdout")"
for point in a100-40gb_conc1 h100_conc1 h100_conc4; do
  grep -E "^$point +tpot_p50_ms .* yes$" "$tmp/stdout" >/dev/null ||
    fail "$point: fitted TPOT not within 10% of the published figure: $(grep "^$point" "$tmp/stdout")"
done
grep -E "^a100-40gb_conc8 +closed_loop_output_tok_s +495.00 +[0-9]" "$tmp/stdout" >/dev/null ||
  fail "concurrency-8 throughput not printed: $(cat "$tmp/stdout")"
finish
