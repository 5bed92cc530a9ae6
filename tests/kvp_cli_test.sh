#!/usr/bin/env bash
# `kvsim train` end to end: trains KVP's rankers on a tiny synthetic trace, gets the same model bytes for
# any --threads, and `kvsim quality --policies=kvp:model=...` evaluates it beside the baselines (kvp keeps
# its budget: mean kept tokens equal the budget's). A model trained for another layout, a missing model,
# and bad training flags are refused with exit code 2 and a message naming what is wrong.
# Closed loop (MODEL_DIR, a model folder): rankers trained on `kvsim record`'s trace of that model run
# under `kvsim eval`, read exactly the budget at every decode step, equal full with a budget above every
# sequence, and a model trained for another layout or on fewer layers than the model has is refused.
#
#   kvp_cli_test.sh KVSIM MODEL_DIR
set -u
kvsim=$1
model=$2
source "$(dirname "$0")/cli_test_lib.sh"

synth() { "$kvsim" synth_attention --synth_prompt_len=300 --synth_decode_steps=8 --synth_layers=1 \
  --synth_kv_heads=2 --synth_head_dim=40 "$@"; }
expect 0 synth --out="$tmp/train.kvat" --synth_samples=3 --seed=1
expect 0 synth --out="$tmp/test.kvat" --synth_samples=1 --seed=2
expect 0 synth --out="$tmp/wide.kvat" --synth_samples=1 --seed=2 --synth_head_dim=48

train=(train --traces="$tmp/train.kvat" --small_model --steps=40 --hidden=8 --holdout=0.34 --seed=3)
expect 0 "$kvsim" "${train[@]}" --threads=1 --out="$tmp/m1.kvpm"
has "wrote KVP model $tmp/m1.kvpm: 2 agents (1 layers x 2 KV heads)" out
has "trained on 2 samples (1 held out), objective reinforce, 40 steps per agent, seed 3" out
has "held out" out
has "peak RSS" out
[ -s "$tmp/err" ] && fail "stderr is not a terminal, but got: $(cat "$tmp/err")"
expect 0 "$kvsim" "${train[@]}" --threads=2 --out="$tmp/m2.kvpm"
cmp -s "$tmp/m1.kvpm" "$tmp/m2.kvpm" || fail "the model differs between --threads=1 and --threads=2"
expect 0 "$kvsim" "${train[@]}" --threads=2 --seed=4 --out="$tmp/m3.kvpm"
cmp -s "$tmp/m1.kvpm" "$tmp/m3.kvpm" && fail "another --seed gave the same model"
expect 0 "$kvsim" "${train[@]}" --objective=softsort --out="$tmp/soft.kvpm"
has "objective softsort" out

expect 0 "$kvsim" quality --trace="$tmp/test.kvat" --policies="kvp:model=$tmp/m1.kvpm,snapkv,random" \
  --budgets=32,64 --out="$tmp/q"
has "kvp:model=$tmp/m1.kvpm " out
grep -q "^synthetic,kvp:model=$tmp/m1.kvpm,evict,tokens,32,32" "$tmp/q/summary.csv" || fail "no kvp row at budget 32: $(head -3 "$tmp/q/summary.csv")"
# The mean tokens read at budget 64 is 64: every step keeps exactly the budget.
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "mean_tokens_read") c = i }
         $2 ~ /^kvp:/ && $5 == 64 { found = 1; if (c == 0 || $c + 0 != 64) bad = 1 }
         END { exit (found && !bad) ? 0 : 1 }' \
  "$tmp/q/summary.csv" || fail "kvp does not keep exactly 64 tokens: $(grep kvp: "$tmp/q/summary.csv")"

# The evaluation with kvp does not depend on the thread count either.
for threads in 1 3; do
  expect 0 "$kvsim" quality --trace="$tmp/test.kvat" --policies="kvp:model=$tmp/m1.kvpm,snapkv,random" \
    --budgets=32,64 --threads=$threads --out="$tmp/q$threads"
  cmp -s "$tmp/q/summary.csv" "$tmp/q$threads/summary.csv" || fail "summary.csv differs with --threads=$threads"
done
expect 2 "$kvsim" quality --trace="$tmp/wide.kvat" --policies="kvp:model=$tmp/m1.kvpm" --budgets=32
has "KVP model $tmp/m1.kvpm was trained for model 'synthetic', 1 layers, 4 query heads, 2 KV heads, head_dim 40" err
has "the trace has model 'synthetic', 1 layers, 4 query heads, 2 KV heads, head_dim 48" err
expect 2 "$kvsim" quality --trace="$tmp/test.kvat" --policies="kvp:model=$tmp/none.kvpm" --budgets=32
has "none.kvpm" err
expect 2 "$kvsim" quality --trace="$tmp/test.kvat" --policies=kvp --budgets=32
has "kvp:model=FILE" err
expect 2 "$kvsim" train --traces="$tmp/train.kvat" --out="$tmp/x.kvpm" --objective=foo
has "objective=foo" err
expect 2 "$kvsim" train --traces="$tmp/train.kvat" --out="$tmp/x.kvpm" --hidden=-3
has "hidden=-3: must be >= 0" err
expect 2 "$kvsim" train --traces="$tmp/train.kvat" --out="$tmp/x.kvpm" --samples_per_step=1
has "samples per step 1" err
expect 2 "$kvsim" train --traces="$tmp/train.kvat,$tmp/wide.kvat" --out="$tmp/x.kvpm" --small_model --steps=1
has "differs from" err
expect 2 "$kvsim" train --traces="$tmp/nothere.kvat" --out="$tmp/x.kvpm"
has "nothere.kvat" err
# Two samples of 1,000 tokens x 2 heads take 2 x 656 KB of keys, values and targets: over a 1 MiB bound.
expect 0 synth --out="$tmp/big.kvat" --synth_samples=2 --synth_prompt_len=1000 --seed=1
expect 2 "$kvsim" train --traces="$tmp/big.kvat" --out="$tmp/x.kvpm" --train_memory_mib=1 --small_model --steps=1
has "big.kvat: sample 1 would take the training data to 1.3 MiB, above the bound of 1.0 MiB" err
[ -e "$tmp/x.kvpm" ] && fail "a refused run wrote a model"

# Closed loop. Tasks: BOS then byte ids, 40 to 58 tokens; 4-token answers (3 decode steps each).
prompt() {  # n seed
  local n=$1 s=$2 ids="256" i
  for ((i = 1; i < n; i++)); do ids="$ids, $(((i * 53 + s * 97 + i * i) % 256))"; done
  echo "$ids"
}
for i in 0 1 2 3; do
  echo "{\"id\": \"c$i\", \"task\": \"niah_single\", \"context_tokens\": $((40 + 6 * i)), \"prompt_ids\": [$(prompt $((40 + 6 * i)) $i)], \"answer_ids\": [1, 2, 3, 4], \"max_new_tokens\": 4}"
done >"$tmp/closed.jsonl"
expect 0 "$kvsim" record --model="$model" --tasks="$tmp/closed.jsonl" --out="$tmp/rec.kvat" --decode_steps=6
expect 0 "$kvsim" train --traces="$tmp/rec.kvat" --small_model --steps=30 --hidden=8 --future_queries=6 --seed=2 \
  --out="$tmp/rec.kvpm"
expect 0 "$kvsim" eval --model="$model" --tasks="$tmp/closed.jsonl" --policies="full,kvp:model=$tmp/rec.kvpm" \
  --budgets=24,1000 --out="$tmp/e"
# results.csv: policy,kind,budget,task,context_tokens,tasks,...,mean_tokens_read (14th),mean_budget_tokens.
awk -F, '$1 == "kvp:model='"$tmp"'/rec.kvpm" && $3 == 24 && $4 == "all" { found = 1; if ($14 + 0 != 24) bad = 1 }
         END { exit (found && !bad) ? 0 : 1 }' "$tmp/e/results.csv" ||
  fail "closed-loop kvp does not read exactly 24 tokens per step: $(grep '^kvp' "$tmp/e/results.csv")"
# With a budget above every sequence kvp keeps everything: the same generations as full.
gens() { awk -F, -v p="$1" '$4 == p && $5 == 1000 { print $1, $NF }' "$tmp/e/tasks.csv"; }
[ "$(gens full | wc -l)" -eq 4 ] && [ "$(gens full)" = "$(gens "kvp:model=$tmp/rec.kvpm")" ] ||
  fail "kvp at budget 1000 does not generate what full does: $(grep ',1000,' "$tmp/e/tasks.csv")"
# The synthetic-trace model (1 layer, head_dim 40) and one trained on layer 0 only are refused.
expect 2 "$kvsim" eval --model="$model" --tasks="$tmp/closed.jsonl" --policies="kvp:model=$tmp/m1.kvpm" --budgets=8
has "policy 'kvp:model=$tmp/m1.kvpm' cannot run on model $model" err
has "was trained for model 'synthetic', 1 layers, 4 query heads, 2 KV heads, head_dim 40" err
has "has model '$model', 2 layers, 4 query heads, 2 KV heads, head_dim 16" err
expect 0 "$kvsim" record --model="$model" --tasks="$tmp/closed.jsonl" --out="$tmp/rec0.kvat" --layers=0
expect 0 "$kvsim" train --traces="$tmp/rec0.kvat" --small_model --steps=5 --hidden=4 --out="$tmp/rec0.kvpm"
expect 2 "$kvsim" eval --model="$model" --tasks="$tmp/closed.jsonl" --policies="full,kvp:model=$tmp/rec0.kvpm" \
  --budgets=8 --out="$tmp/e0"
has "has no agent for layer 1, KV head 0" err
[ -e "$tmp/e0" ] && fail "a refused evaluation wrote results"
finish
