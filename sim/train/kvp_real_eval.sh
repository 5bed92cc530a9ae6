#!/usr/bin/env bash
# KVP on traces recorded from a real model (the committed byte-level model sim/eval/models/kvsim-tiny,
# 2 layers x 4 KV heads, head_dim 16, positions <= 512), open and closed loop. Writes OUT/results.md.
#
#   sim/train/kvp_real_eval.sh [OUT]        (after `bazel build //tools:kvsim`; OUT default out/kvp_real)
#
# 1. Tasks (tools/make_tasks.py, byte tokenizer): training instances from seeds 1-5, held-out instances
#    from seeds 101-107, 111 and 112 (other keys, numbers, needle positions and haystack excerpts; the script checks
#    that no held-out prompt is a training prompt). Nothing below is chosen by looking at held-out results.
# 2. Traces (`kvsim record`, every layer and KV head, greedy decode with the full cache): 8 decode steps
#    per prompt and --future_queries=8. A needle answer is 7 digits: the first comes from the prefill, the
#    next 6 from decode steps, so 8 steps cover the answer and its end; a longer window would mostly score
#    the model's continuation after the answer. The last 64 prompt queries are stored (SnapKV's window).
# 3. Training (`kvsim train`): the small-model setting with REINFORCE and with the soft-sort baseline on
#    niah_single + niah_multikey at 496/512 bytes (the families the model solves); for the length test,
#    the small setting on niah_single at 256 bytes and on plain text (the perplexity set's contexts) at
#    128 bytes; and the paper-size setting (256 hidden, 4,000 steps) on the needle traces. For the family
#    test, the small setting also on the three families the model partly solves besides the needles
#    (niah_multivalue, variable_tracking, dialogue_recall at 496/512 bytes) and on those plus the needles.
# 4. Open loop (`kvsim quality` on held-out traces): areas under the recall and output-error curves, ratio
#    to oracle_select, at budgets of 1/32 to 1/2 of the prompt (16-256 tokens at 512): needle tasks; the
#    length test (1x, 2x, 4x); other families than trained on (both ways); the per-head picture.
# 5. Closed loop (`kvsim eval`, the model generating under each policy) on held-out niah_single and
#    niah_multikey at 496 and 512 bytes, and on niah_multivalue, variable_tracking and dialogue_recall
#    (which the model partly solves), each under agents trained on the needles, on those three families
#    and on all five; budgets 16-256 tokens per KV head.
#
# Deterministic: the same inputs give the same tables (timings aside). KVSIM_THREADS (default 1) is
# passed to every command; results do not depend on it.
set -eu
K=${KVSIM:-bazel-bin/tools/kvsim}
model=${KVP_REAL_MODEL:-sim/eval/models/kvsim-tiny}
out=${1:-out/kvp_real}
threads=${KVSIM_THREADS:-1}
mkdir -p "$out"
start=$(date +%s)
log() { echo "[$(($(date +%s) - start)) s] $*" >&2; }

tasks() {  # OUT_NAME FAMILIES LENGTHS NUM SEED
  python3 tools/make_tasks.py --tokenizer=bytes --out="$out/$1.jsonl" --tasks="$2" --lengths="$3" --num="$4" \
    --seed="$5" >/dev/null
}
record() {  # NAME: tasks NAME.jsonl -> trace NAME.kvat
  "$K" record --model="$model" --tasks="$out/$1.jsonl" --out="$out/$1.kvat" --decode_steps=8 --query_window=64 \
    --dtype=fp32 >/dev/null
}
log "tasks and traces"
tasks train_niah niah_single,niah_multikey 496,512 16 1
tasks train_single256 niah_single 256 48 2
tasks train_text128 perplexity 128 48 3
tasks train_fam niah_multivalue,variable_tracking,dialogue_recall 496,512 12 5
tasks test_niah niah_single,niah_multikey 496,512 8 101
tasks test_single512 niah_single 512 16 102
tasks test_text128 perplexity 128 16 103
tasks test_text256 perplexity 256 16 104
tasks test_text512 perplexity 512 16 105
tasks test_other variable_tracking,common_words 512 8 106
tasks test_fam niah_multivalue,variable_tracking,dialogue_recall 496,512 4 107
tasks closed_niah niah_single,niah_multikey 496,512 16 111
tasks closed_other niah_multivalue,variable_tracking,dialogue_recall 496,512 8 112
python3 - "$out" <<'EOF'
import json, sys
def prompts(name):
    return {tuple(json.loads(line)["prompt_ids"]) for line in open(f"{sys.argv[1]}/{name}.jsonl")}
train = prompts("train_niah") | prompts("train_single256") | prompts("train_text128") | prompts("train_fam")
for test in ["test_niah", "test_single512", "test_text128", "test_text256", "test_text512", "test_other",
             "test_fam", "closed_niah", "closed_other"]:
    if prompts(test) & train:
        sys.exit(f"kvp_real_eval: a prompt of {test} is also a training prompt")
EOF
for t in train_niah train_single256 train_text128 train_fam test_niah test_single512 test_text128 test_text256 \
         test_text512 test_other test_fam; do
  record $t
done

log "training"
train() {  # NAME TRACE FLAGS...
  local name=$1 traces=$2
  shift 2
  "$K" train --traces="$traces" --out="$out/$name.kvpm" --future_queries=8 --holdout=0.125 --seed=1 \
    --threads="$threads" "$@" >"$out/train_$name.txt"
}
train kvp_niah "$out/train_niah.kvat" --small_model
train kvp_niah_softsort "$out/train_niah.kvat" --small_model --objective=softsort
train kvp_single256 "$out/train_single256.kvat" --small_model
train kvp_text128 "$out/train_text128.kvat" --small_model
train kvp_fam "$out/train_fam.kvat" --small_model
train kvp_all "$out/train_niah.kvat,$out/train_fam.kvat" --small_model
train kvp_niah_paper "$out/train_niah.kvat"

log "open loop"
baselines=random,streaming_llm,knorm,tova,snapkv,h2o,oracle_evict,oracle_select
quality() {  # NAME TRACE KVP_MODELS...
  local name=$1 trace=$2 kvp=""
  shift 2
  for m in "$@"; do kvp="${kvp}kvp:model=$out/$m.kvpm,"; done
  "$K" quality --trace="$out/$trace.kvat" --policies="$kvp$baselines" --budgets=0.03125,0.0625,0.125,0.25,0.5 \
    --threads="$threads" --out="$out/quality_$name" >"$out/quality_$name.txt"
}
quality niah test_niah kvp_niah kvp_niah_softsort kvp_niah_paper kvp_fam kvp_all
quality single512 test_single512 kvp_single256 kvp_niah
quality text128 test_text128 kvp_text128
quality text256 test_text256 kvp_text128
quality text512 test_text512 kvp_text128 kvp_niah
quality other test_other kvp_niah kvp_text128
quality fam test_fam kvp_niah kvp_fam kvp_all

log "closed loop"
closed_policies="full,kvp:model=$out/kvp_niah.kvpm,kvp:model=$out/kvp_niah_softsort.kvpm,kvp:model=$out/kvp_fam.kvpm"
closed_policies="$closed_policies,kvp:model=$out/kvp_all.kvpm,random,streaming_llm,knorm,tova,snapkv,h2o,oracle_select"
for set in niah other; do
  "$K" eval --model="$model" --tasks="$out/closed_$set.jsonl" --budgets=16,32,64,128,256 --threads="$threads" \
    --policies="$closed_policies" --out="$out/eval_$set" >"$out/eval_$set.txt"
done

log "tables"
python3 sim/train/kvp_real_tables.py "$out" "$model" $(($(date +%s) - start)) >"$out/results.md"
log "wrote $out/results.md"
