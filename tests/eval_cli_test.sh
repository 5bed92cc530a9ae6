#!/usr/bin/env bash
# `kvsim eval` and `kvsim record` on a tiny random-weight model (sim/eval/testdata/tiny-llama3): the full cache reproduces
# the generations it scored (tasks whose answers are full's own greedy tokens score 1.0, a wrong answer
# 0), the output files exist and are identical for any thread count, and bad input is refused with exit
# code 2 and a message naming the file, line or policy, without writing results.
set -u
kvsim=$1
model=$2
source "$(dirname "$0")/cli_test_lib.sh"

prompt() {  # n seed: BOS then n-1 byte ids
  local n=$1 s=$2 ids="256" i
  for ((i = 1; i < n; i++)); do ids="$ids, $(((i * 37 + s * 101 + i * i) % 256))"; done
  echo "$ids"
}
task() {  # id family n seed answer
  echo "{\"id\": \"$1\", \"task\": \"$2\", \"context_tokens\": $3, \"prompt_ids\": [$(prompt "$3" "$4")], \"answer_ids\": [$5], \"max_new_tokens\": 6, \"answer_position\": 5}"
}
{
  task a niah_single 40 1 "1, 2, 3"
  task b niah_single 48 2 "1, 2, 3"
  task c variable_tracking 56 3 "1, 2, 3"
  echo "{\"id\": \"p\", \"task\": \"perplexity\", \"context_tokens\": 20, \"prompt_ids\": [$(prompt 20 9)], \"answer_ids\": [104, 101, 108, 108, 111]}"
} >"$tmp/probe.jsonl"
policies=full,streaming_llm,h2o,snapkv,tova,kivi4
expect 0 "$kvsim" eval --model="$model" --tasks="$tmp/probe.jsonl" --policies=full --budgets=8 --out="$tmp/probe"
# Full's own generations as the answers (tasks.csv: id, ..., generated ids last), c's first token changed.
gen() { grep "^$1,.*,full," "$tmp/probe/tasks.csv" | awk -F, '{print $NF}' | sed 's/ /, /g'; }
ga=$(gen a) gb=$(gen b) gc=$(gen c)
wrong_first=$(( ($(echo "$gc" | cut -d, -f1) + 1) % 256 ))
gc_wrong="$wrong_first, $(echo "$gc" | cut -d, -f2-)"
{
  task a niah_single 40 1 "$ga"
  task b niah_single 48 2 "$gb"
  task c variable_tracking 56 3 "$gc_wrong"
  sed -n 4p "$tmp/probe.jsonl"
} >"$tmp/tasks.jsonl"
expect 0 "$kvsim" eval --model="$model" --tasks="$tmp/tasks.jsonl" --policies=$policies --budgets=8,64,0.5 \
  --threads=1 --out="$tmp/t1"
has "closed-loop evaluation of" out
[ -s "$tmp/err" ] && fail "stderr is not a TTY here, so no progress line: $(cat "$tmp/err")"
for f in results.csv tasks.csv results.json accuracy.svg timing.csv; do [ -s "$tmp/t1/$f" ] || fail "missing $f"; done
grep -q "^full,full,8,niah_single,40,1,1,1.000000," "$tmp/t1/results.csv" || fail "full does not reproduce task a"
grep -q "^full,full,8,variable_tracking,56,1,0,0.000000," "$tmp/t1/results.csv" || fail "a wrong answer scored"
grep -q "^full,full,8,all,0,3,2,0.666667," "$tmp/t1/results.csv" || fail "full: 2 of 3 expected"
grep -q "^streaming_llm,evict,64,all,0,3,2,0.666667," "$tmp/t1/results.csv" ||
  fail "streaming_llm with a budget above every sequence must equal full"
grep -q "^full,full,8,perplexity,20,1,0,,0,0,5," "$tmp/t1/results.csv" || fail "perplexity row"
expect 0 "$kvsim" eval --model="$model" --tasks="$tmp/tasks.jsonl" --policies=$policies --budgets=8,64,0.5 \
  --threads=3 --out="$tmp/t3"
for f in results.csv tasks.csv results.json accuracy.svg; do
  cmp -s "$tmp/t1/$f" "$tmp/t3/$f" || fail "$f differs between 1 and 3 threads"
done
expect 0 "$kvsim" eval --model="$model" --tasks="$tmp/tasks.jsonl" --policies=full --budgets=8 --max_tasks=1 --json
has "\"num_tasks\": 1" out

# The task files of tools/make_tasks.py (every family and perplexity) are read and run.
tasks512="$(dirname "$model")/tasks_512.jsonl"
expect 0 "$kvsim" eval --model="$model" --tasks="$tasks512" --policies=full,snapkv --budgets=64 --json
has '"num_tasks": 35' out
has '"task": "dialogue_recall", "context_tokens": 512, "tasks": 5' out
has '"task": "perplexity", "context_tokens": 512, "tasks": 5' out

# kvsim record: a trace of the same forward pass that kvsim quality reads (full recalls everything).
expect 0 "$kvsim" record --model="$model" --tasks="$tmp/tasks.jsonl" --out="$tmp/t.kvat" --layers=1 --decode_steps=4 \
  --dtype=fp32
has "recorded 4 samples (1 layers x 2 KV heads, 4 decode steps)" out
expect 0 "$kvsim" quality --trace="$tmp/t.kvat" --policies=full,h2o --budgets=8 --json
has '"policy": "full"' out
python3 -c '
import json, sys
points = [p for p in json.load(open(sys.argv[1]))["points"] if p["policy"] == "full"]
sys.exit(0 if points and all(abs(p["recall"]["mean"] - 1) < 1e-9 for p in points) else 1)' "$tmp/out" ||
  fail "full must recall all attention"
# --record_dtype, the former name of --dtype, still reaches it.
expect 2 "$kvsim" record --model="$model" --tasks="$tmp/tasks.jsonl" --out="$tmp/no.kvat" --record_dtype=fp8
has "dtype=fp8: expected fp16, bf16 or fp32" err
expect 2 "$kvsim" record --model="$model" --tasks="$tmp/tasks.jsonl" --out="$tmp/no.kvat" --layers=5
has "layers must be ascending, distinct and in \[0, 2)" err
[ -e "$tmp/no.kvat" ] && fail "trace written for refused layers"

# Refusals: exit 2, a message naming what is wrong, no results written.
expect 2 "$kvsim" eval --model="$model" --tasks="$tmp/tasks.jsonl" --policies=oracle_evict --budgets=8 --out="$tmp/no1"
has "oracle_evict' cannot run closed-loop" err
[ -e "$tmp/no1" ] && fail "results written for a refused policy"
{ sed -n 1p "$tmp/tasks.jsonl"; echo '{"id": "x", "task": "niah_single"}'; } >"$tmp/bad.jsonl"
expect 2 "$kvsim" eval --model="$model" --tasks="$tmp/bad.jsonl" --policies=full --budgets=8
has "bad.jsonl:2: \"context_tokens\": missing" err
echo "{\"id\": \"v\", \"task\": \"niah_single\", \"context_tokens\": 2, \"prompt_ids\": [256, 999], \"answer_ids\": [1], \"max_new_tokens\": 2}" >"$tmp/vocab.jsonl"
expect 2 "$kvsim" eval --model="$model" --tasks="$tmp/vocab.jsonl" --policies=full --budgets=8
has "vocab.jsonl:1: task 'v': prompt_ids\[1\] = 999 is outside the model's vocabulary" err
expect 2 "$kvsim" eval --model="$tmp/nowhere" --tasks="$tmp/tasks.jsonl" --policies=full --budgets=8
has "nowhere/config.json" err
expect 2 "$kvsim" eval --model="$model" --tasks="$tmp/tasks.jsonl" --budgets=8
has "--policies is required" err
expect 2 "$kvsim" eval --model="$model" --tasks="$tmp/tasks.jsonl" --policies=full --budgets=0
has "0 tokens: must be in" err
finish
