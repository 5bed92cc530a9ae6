#!/usr/bin/env bash
# End-to-end checks of `kvsim gen`: writes a trace, is reproducible, --seed overrides, errors name the
# spec field or the missing flag with exit code 2.
set -u
kvsim="$1"
source tests/cli_test_lib.sh

expect 0 "$kvsim" help
grep -q "^  gen " "$tmp/out" || fail "help does not list 'gen'"

# The chat example, cut to 2,000 requests to keep the test fast.
spec="$tmp/chat.textproto"
sed 's/^num_requests: 50000$/num_requests: 2000/' presets/workloads/chat.textproto >"$spec"
grep -q '^num_requests: 2000$' "$spec" || fail "could not shorten the chat example"
expect 0 "$kvsim" gen --spec="$spec" --out="$tmp/a.kvt"
grep -q "^wrote 2000 requests to $tmp/a.kvt (native, 16-token blocks, seed 1)" "$tmp/out" \
  || fail "gen summary: $(cat "$tmp/out")"
expect 0 "$kvsim" gen --spec="$spec" --out="$tmp/b.kvt"
cmp -s "$tmp/a.kvt" "$tmp/b.kvt" || fail "two runs with the same seed differ"
expect 0 "$kvsim" gen --spec="$spec" --out="$tmp/c.kvt" --seed=2
grep -q "seed 2)" "$tmp/out" || fail "--seed not applied: $(cat "$tmp/out")"
cmp -s "$tmp/a.kvt" "$tmp/c.kvt" && fail "another seed gave the same trace"

expect 0 "$kvsim" gen --spec=presets/workloads/poisson-fixed.textproto --out="$tmp/p.jsonl"
grep -q '(jsonl, ' "$tmp/out" || fail "a .jsonl path is not written as JSONL: $(cat "$tmp/out")"
[ "$(grep -c '"request_id"' "$tmp/p.jsonl")" -eq 10000 ] || fail "p.jsonl does not hold 10000 records"

printf 'num_requests: 5\narrivals { poisson {} rate_per_s: 1 }\nclasses { chat { } }\n' >"$tmp/bad.textproto"
expect 2 "$kvsim" gen --spec="$tmp/bad.textproto" --out="$tmp/x.kvt"
grep -q "classes\[0\].chat.turns: no distribution set" "$tmp/err" || fail "bad spec: $(cat "$tmp/err")"
[ ! -e "$tmp/x.kvt" ] || fail "a failed gen left a file"

expect 2 "$kvsim" gen --spec="$spec"
grep -q -- "--out is required" "$tmp/err" || fail "missing --out: $(cat "$tmp/err")"
expect 2 "$kvsim" gen --out="$tmp/y.kvt"
grep -q -- "--spec is required" "$tmp/err" || fail "missing --spec: $(cat "$tmp/err")"

finish
