#!/usr/bin/env bash
# Progress lines (util/progress.h; kvsim eval and sweep here) go to stderr only when it is a terminal: a run with stderr in a file
# leaves it empty; under a pseudo-terminal (util-linux `script`, where present) the line is drawn, and
# --quiet turns it off.
set -u
kvsim="$1"
model="$2"
tasks="$3"
trace="$4"
source "$(dirname "$0")/cli_test_lib.sh"

run=(eval --model="$model" --tasks="$tasks" --policies=full --budgets=32 --max_tasks=3 --threads=1)
expect 0 "$kvsim" "${run[@]}"
[ -s "$tmp/err" ] && fail "stderr not clean without a terminal: $(head -c 300 "$tmp/err")"
expect 0 "$kvsim" "${run[@]}" --quiet
[ -s "$tmp/err" ] && fail "stderr not clean with --quiet: $(head -c 300 "$tmp/err")"

sweep=(sweep --trace="$trace" --grid="policy=lru,fifo capacity_blocks=1000,2000" --threads=1)
expect 0 "$kvsim" "${sweep[@]}" --out="$tmp/sweep1"
[ -s "$tmp/err" ] && fail "sweep stderr not clean without a terminal: $(head -c 300 "$tmp/err")"

if command -v script >/dev/null 2>&1; then
  script -qec "$(printf '%q ' "$kvsim" "${sweep[@]}" --out="$tmp/sweep2")" /dev/null >"$tmp/tty" 2>&1 || fail "sweep under a terminal failed"
  tr '\r' '\n' <"$tmp/tty" | grep -q "^sweep \[####################\] 100% .* points/s ETA 0:00" ||
    fail "no final sweep progress line on a terminal: $(head -c 400 "$tmp/tty")"
  script -qec "$kvsim ${run[*]}" /dev/null >"$tmp/tty" 2>&1 || fail "eval under a terminal failed: $(cat "$tmp/tty")"
  tr '\r' '\n' <"$tmp/tty" | grep -q "^eval \[####################\] 100% .* tasks/s ETA 0:00" ||
    fail "no final progress line on a terminal: $(head -c 400 "$tmp/tty")"
  script -qec "$kvsim ${run[*]} --quiet" /dev/null >"$tmp/tty" 2>&1 || fail "eval --quiet under a terminal failed"
  grep -q "eval \[" "$tmp/tty" && fail "--quiet still drew progress on a terminal"
else
  echo "SKIP: terminal part (no util-linux script to make a pseudo-terminal)"
fi
finish
