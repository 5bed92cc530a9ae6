#!/usr/bin/env bash
# kvsim compare: exit 0 on identical results, 3 on a planted 10% TTFT regression (and on lower throughput:
# direction-aware), 0 again within a wider tolerance; 95% intervals over repeated runs; markdown whose every
# row has the header's cell count; bad input exits 2.
set -u
kvsim="$1"
trace="$2"
source "$(dirname "$0")/cli_test_lib.sh"

expect 0 "$kvsim" replay --trace="$trace" --out="$tmp/base"
expect 0 "$kvsim" compare "$tmp/base" "$tmp/base"
has "no regression beyond tolerance" out

# scaled SRC DST KEY FACTOR: a copy of result folder SRC whose summary KEY (a number or a distribution) is
# multiplied by FACTOR.
scaled() {
  cp -r "$1" "$2"
  python3 - "$2/summary.json" "$3" "$4" <<'PY'
import json, sys
path, key, factor = sys.argv[1], sys.argv[2], float(sys.argv[3])
d = json.load(open(path))
s = d["summary"]
if isinstance(s[key], dict):
    s[key] = {k: v * factor for k, v in s[key].items()}
else:
    s[key] = s[key] * factor
json.dump(d, open(path, "w"), indent=1)
PY
}
scaled "$tmp/base" "$tmp/slow" ttft_ms 1.10
expect 3 "$kvsim" compare "$tmp/base" "$tmp/slow"
has "4 metric(s) regressed beyond tolerance: ttft_ms.mean, ttft_ms.p50, ttft_ms.p90, ttft_ms.p99" err
grep -qE "^ttft_ms.p99 +lower .* \+10.00% +n/a +5% +REGRESSED" "$tmp/out" || fail "ttft_ms.p99 row: $(grep p99 "$tmp/out")"
grep -qE "^tpot_ms.p99 .* ok$" "$tmp/out" || fail "tpot unchanged should be ok"
expect 0 "$kvsim" compare "$tmp/base" "$tmp/slow" --tolerance='ttft_ms.*:15'
expect 0 "$kvsim" compare "$tmp/slow" "$tmp/base"  # lower TTFT is better, not a regression
scaled "$tmp/base" "$tmp/fewer" throughput_requests_per_s 0.90
expect 3 "$kvsim" compare "$tmp/base" "$tmp/fewer"
has "regressed beyond tolerance: throughput_requests_per_s" err
expect 0 "$kvsim" compare "$tmp/fewer" "$tmp/base"  # higher throughput is better

# Markdown: a header, a separator, then rows with the header's number of cells.
expect 3 "$kvsim" compare "$tmp/base" "$tmp/slow" --format=markdown
python3 - "$tmp/out" <<'PY' || fail "markdown table malformed: $(cat "$tmp/out")"
import re, sys
rows = [l.rstrip("\n") for l in open(sys.argv[1]) if l.startswith("|")]
cells = lambda l: len(re.split(r"(?<!\\)\|", l)) - 2
assert len(rows) >= 3, rows
assert re.fullmatch(r"\|(:?-+:?\|)+", rows[1]), rows[1]
n = cells(rows[0])
assert n == 8 and all(cells(r) == n and r.endswith("|") for r in rows), [cells(r) for r in rows]
assert any("**REGRESSED**" in r for r in rows)
PY

# Repeated runs: three per side. Candidate 10% slower with 1% noise: the interval excludes 0, a regression.
# Candidate 10% slower on average but with 20% noise: the interval includes 0, not a regression.
scaled "$tmp/base" "$tmp/b2" ttft_ms 1.01
scaled "$tmp/base" "$tmp/b3" ttft_ms 0.99
scaled "$tmp/base" "$tmp/c1" ttft_ms 1.10
scaled "$tmp/base" "$tmp/c2" ttft_ms 1.11
scaled "$tmp/base" "$tmp/c3" ttft_ms 1.09
scaled "$tmp/base" "$tmp/n1" ttft_ms 0.90
scaled "$tmp/base" "$tmp/n3" ttft_ms 1.30
expect 3 "$kvsim" compare "$tmp/base,$tmp/b2,$tmp/b3" "$tmp/c1,$tmp/c2,$tmp/c3"
grep -qE "^ttft_ms.mean .*\(n=3\) .*\+10.00% +\+[0-9.]+% \.\. \+[0-9.]+% +5% +REGRESSED" "$tmp/out" ||
  fail "repeated-run row: $(grep ttft_ms.mean "$tmp/out")"
expect 0 "$kvsim" compare "$tmp/base,$tmp/b2,$tmp/b3" "$tmp/n1,$tmp/c1,$tmp/n3"
grep -qE "^ttft_ms.mean .* \+10.00% +-[0-9.]+% \.\. \+[0-9.]+% +5% +ok" "$tmp/out" ||
  fail "noisy row: $(grep ttft_ms.mean "$tmp/out")"

# Bad input: exit 2.
expect 0 "$kvsim" cache --trace="$trace" --policy=lru --capacity_blocks=1000 --out="$tmp/cache"
expect 0 "$kvsim" compare "$tmp/cache" "$tmp/cache"
has "hit_ratio\[lru@1000\]" out
expect 2 "$kvsim" compare "$tmp/base" "$tmp/cache"
has "cannot compare replay results with cache results" err
expect 2 "$kvsim" compare "$tmp/base" "$tmp/base" --tolerance=ttft
has "expected METRIC:PCT" err
expect 2 "$kvsim" compare "$tmp/base" "$tmp/base" --format=html
expect 2 "$kvsim" compare "$tmp/base"
finish
