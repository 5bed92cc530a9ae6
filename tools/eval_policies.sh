#!/usr/bin/env bash
# The closed-loop comparison of the token policies on one model, by one command: builds kvsim, makes the
# byte-level tasks with tools/make_tasks.py (deterministic with its seed) and runs `kvsim eval` over every
# policy that can run closed-loop at a few budgets, on every core.
#
#   tools/eval_policies.sh MODEL_DIR [OUT_DIR] [LENGTHS] [NUM]
#     MODEL_DIR  a Hugging Face folder of a byte-level model (vocab 259, see sim/eval/testdata/)
#     OUT_DIR    default out/eval; tasks.jsonl and kvsim eval's files land there
#     LENGTHS    context lengths of the tasks, default 512,1024; NUM instances per (family, length), default 10
# Prints the summary table; accuracy vs budget per family is in OUT_DIR/accuracy.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: tools/eval_policies.sh MODEL_DIR [OUT_DIR] [LENGTHS] [NUM]}
out=${2:-out/eval}
lengths=${3:-512,1024}
num=${4:-10}
policies=full,random,knorm,streaming_llm,h2o,tova,scissorhands,snapkv,pyramidkv,expected_attention,quest,rocketkv
policies=$policies,oracle_select,adakv+snapkv,kivi4,kivi2+snapkv
mkdir -p "$out"
bazel build //tools:kvsim >/dev/null
python3 tools/make_tasks.py --out="$out/tasks.jsonl" \
  --tasks=niah_single,niah_multikey,niah_multivalue,variable_tracking,common_words,dialogue_recall,perplexity \
  --lengths="$lengths" --num="$num" --seed=1
bazel-bin/tools/kvsim eval --model="$model" --tasks="$out/tasks.jsonl" --policies="$policies" \
  --budgets=32,64,128,256 --threads=0 --out="$out"
