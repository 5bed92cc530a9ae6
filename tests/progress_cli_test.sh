#!/usr/bin/env bash
# Progress lines (util/progress.h) go to stderr only when it is a terminal: a run with stderr in a file
# leaves it empty; under a pseudo-terminal (util-linux `script`, where present) the line is drawn, and
# --quiet turns it off. For gen, replay, cache, mrc (both paths) and quality, the files written with the
# progress line drawn are byte-identical to those written without it.
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
fi

# progress_case NAME LINE_PATTERN OUT_A OUT_B ARGS...: kvsim ARGS (with {OUT} standing for the output path)
# with stderr in a file writes nothing there; under a terminal its last progress line matches
# LINE_PATTERN (a redraw may end in spaces that erase a longer line) and with --quiet no NAME line is drawn; the outputs of the runs (OUT_A piped, OUT_B on the
# terminal) are byte-identical files or directories.
progress_case() {
  local name=$1 pattern=$2 out_a=$3 out_b=$4
  shift 4
  local args=("$@") piped=() tty=()
  for a in "${args[@]}"; do
    piped+=("${a//\{OUT\}/$out_a}")
    tty+=("${a//\{OUT\}/$out_b}")
  done
  expect 0 "$kvsim" "${piped[@]}"
  [ -s "$tmp/err" ] && fail "$name: stderr not clean without a terminal: $(head -c 300 "$tmp/err")"
  command -v script >/dev/null 2>&1 || return 0
  script -qec "$(printf '%q ' "$kvsim" "${tty[@]}")" /dev/null >"$tmp/tty" 2>&1 || fail "$name under a terminal failed: $(head -c 400 "$tmp/tty")"
  tr '\r' '\n' <"$tmp/tty" | grep -a "^$name [[0-9]" | tail -n 1 | grep -q -- "$pattern" ||
    fail "$name: no final progress line like '$pattern' on a terminal: $(tr '\r' '\n' <"$tmp/tty" | head -c 400)"
  diff -r "$out_a" "$out_b" >/dev/null || fail "$name: output differs with the progress line drawn"
  script -qec "$(printf '%q ' "$kvsim" "${tty[@]}" --quiet)" /dev/null >"$tmp/tty" 2>&1 || fail "$name --quiet failed"
  tr '\r' '\n' <"$tmp/tty" | grep -aq "^$name [[0-9]" && fail "$name: --quiet still drew progress on a terminal"
  return 0
}

bar='\[####################\] 100% .* ETA 0:00 *$'
cat >"$tmp/spec.textproto" <<'SPEC'
seed: 3
num_requests: 400
arrivals { poisson {} rate_per_s: 20 }
classes { single_turn { input_tokens { fixed { value: 64 } } output_tokens { fixed { value: 8 } } } }
SPEC
progress_case gen "^gen $bar" "$tmp/gen_a.jsonl" "$tmp/gen_b.jsonl" gen --spec="$tmp/spec.textproto" --out={OUT}
printf 'workload { max_requests: 300 }\n' >"$tmp/replay.textproto"
progress_case replay "^replay $bar" "$tmp/replay_a" "$tmp/replay_b" replay --trace="$trace" --config="$tmp/replay.textproto" --out={OUT}
progress_case replay "^replay [0-9]* req .* req/s *$" "$tmp/replay_c" "$tmp/replay_d" replay --trace="$tmp/gen_a.jsonl" --out={OUT}
# Streaming (count and rate), and a compiled trace for Belady (requests x runs, with an ETA).
progress_case cache "^cache [0-9]* req .* req/s *$" "$tmp/cache_a" "$tmp/cache_b" cache --trace="$trace" --policy=lru,fifo --capacity_blocks=1000,5000 --out={OUT}
progress_case cache "^cache $bar" "$tmp/cache_c" "$tmp/cache_d" cache --trace="$trace" --policy=lru,belady --capacity_blocks=1000,5000 --out={OUT}
# One-pass LRU (exact, and sampled with its hot-block pre-pass), and one replay per size.
progress_case mrc "^mrc [0-9]* req .* req/s *$" "$tmp/mrc_a.csv" "$tmp/mrc_b.csv" mrc --trace="$trace" --out={OUT}
progress_case mrc "^mrc [0-9]* req .* req/s *$" "$tmp/mrc_c.csv" "$tmp/mrc_d.csv" mrc --trace="$trace" --sample_rate=0.5 --out={OUT}
# Other policies stream the trace (memory-bounded passes), so their progress counts requests read, no bar.
progress_case mrc "^mrc [0-9]* req .* req/s *$" "$tmp/mrc_e.csv" "$tmp/mrc_f.csv" mrc --trace="$trace" --policy=lru,fifo --sizes=1000,5000 --out={OUT}
expect 0 "$kvsim" synth_attention --out="$tmp/t.kvat" --synth_prompt_len=300 --synth_decode_steps=8 --seed=5
progress_case quality "^quality $bar" "$tmp/quality_a" "$tmp/quality_b" quality --trace="$tmp/t.kvat" --policies=full,h2o --budgets=32 --out={OUT}

command -v script >/dev/null 2>&1 || echo "SKIP: terminal part (no util-linux script to make a pseudo-terminal)"
finish
